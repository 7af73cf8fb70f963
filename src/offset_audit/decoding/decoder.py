"""Raw records to typed tables.

`decode_batch` is the heart: a pure function from one Arrow batch of raw records to the rows of every
output table. Offset commits (nearly all of a dump) are read column-wise by the vectorised reader and
stay Arrow end to end; the rare records go through the layout-driven generic reader.

Two transports carry its result, chosen by the writer (see `offset_audit.outputs`):
- `decode_records` + the table functions below: a DataFrame of offset-commit columns plus a JSON
  payload for the rare records, projected into one DataFrame per table. Pure DataFrame -> DataFrame;
  used with delta-spark sessions and in tests.
- `offset_audit.outputs.fast_write`: one Spark pass in which each task decodes and writes its Parquet files
  itself, so decoded rows never travel back to the JVM (measured: `make bench`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (
    ArrayType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from offset_audit.decoding import records
from offset_audit.decoding.fast_commits import decode_offset_commits
from offset_audit.decoding.report import CountKey
from offset_audit.inputs import copies
from offset_audit.layouts.codec import RecordCodec
from offset_audit.layouts.spec import record_layouts
from offset_audit.layouts.tables import TableSchema, coordinate_columns, parse_type, table_schema
from offset_audit.timestamps import arrow_timestamps, ms_column, spark_timestamp

# Columns every raw record brings to the decode stage (see offset_audit.inputs.dump and `for_decode`).
RAW_COLUMNS = ("source_partition", "source_offset", "record_timestamp_ms", "key", "value", "other_topic")
# Where a record is in the dump, as the decoders carry it (the TIMESTAMP `record_timestamp` is shown
# from the exact milliseconds when a table is finalised).
COORDINATES = ("source_partition", "source_offset", "record_timestamp_ms")
# Columns only file dumps bring (offset_audit.inputs.log_records, after offset_audit.inputs.transactions):
# a reader's error for input it could not read, the transaction state, and what the format cannot tell;
# and an incremental audit's mark on the records its state carries (offset_audit.inputs.resumed).
OPTIONAL_RAW_COLUMNS = ("source_error", "transaction", "source_note", "skipped_bytes", copies.COPY_STATE, "carried")
# Record classes that are counted but not decoded: records of another topic, transactional commits
# whose transaction was aborted, and the transaction markers themselves.
SKIPPED = "skipped"
SKIPPED_ABORTED = "skipped_aborted"
SKIPPED_MARKER = "skipped_marker"
# The audit decodes only the last record of each key; the records it replaced are counted as this.
SKIPPED_SUPERSEDED = "skipped_superseded"
# A partition given more than once (offset_audit.inputs.copies): records another copy stands for.
SKIPPED_DUPLICATE = "skipped_duplicate"
SKIPPED_DIVERGED = "skipped_diverged"
SKIPPED_COMPACTED = "skipped_compacted"
# Records of files a broker's log loader deletes on restart (the log cleaner's leftovers).
SKIPPED_DISCARDED = "skipped_discarded"
SKIP_REASONS = {
    SKIPPED: "other topic",
    SKIPPED_ABORTED: "aborted transaction",
    SKIPPED_MARKER: "transaction marker",
    SKIPPED_SUPERSEDED: "superseded",
    SKIPPED_DUPLICATE: "duplicate copy",
    SKIPPED_DIVERGED: "diverged copy",
    SKIPPED_COMPACTED: "compacted in another copy",
    SKIPPED_DISCARDED: "cleaner leftover",
}
COPY_SKIPS = {
    copies.DUPLICATE: SKIPPED_DUPLICATE,
    copies.DIVERGED: SKIPPED_DIVERGED,
    copies.COMPACTED: SKIPPED_COMPACTED,
    copies.DISCARDED: SKIPPED_DISCARDED,
}
_TRANSACTION_SKIPS = {"aborted": SKIPPED_ABORTED, "marker": SKIPPED_MARKER}
TABLES = (
    "offset_commits",
    "group_metadata",
    "group_members",
    "modern_group_records",
    "other_records",
    "quarantine",
)
CLASS_TABLE = {
    records.OFFSET_COMMIT: "offset_commits",
    records.GROUP_METADATA: "group_metadata",
    records.MODERN: "modern_group_records",
    records.OTHER: "other_records",
    records.QUARANTINE: "quarantine",
}


@cache
def arrow_schema(table: str) -> pa.Schema:
    return to_arrow_schema(table_schema(table).struct(), timezone="UTC")


def _stage_columns(columns) -> list:
    """The columns the decoders produce: every one but the TIMESTAMPs, which are shown from their exact
    milliseconds (`<name>_ms`, see offset_audit.timestamps) when the table is finalised."""
    return [c for c in columns if not isinstance(parse_type(c.type), TimestampType)]


@cache
def _stage_arrow_schema(table: str) -> pa.Schema:
    fields = [StructField(c.name, parse_type(c.type)) for c in _stage_columns(table_schema(table).columns)]
    return to_arrow_schema(StructType(fields), timezone="UTC")


def finalize(table: str, stage: pa.Table) -> pa.Table:
    """Decode-stage columns to the table's schema: each TIMESTAMP shown from its exact milliseconds."""
    target = arrow_schema(table)
    columns = []
    for target_field in target:
        if pa.types.is_timestamp(target_field.type):
            columns.append(arrow_timestamps(stage.column(ms_column(target_field.name))))
        else:
            columns.append(stage.column(target_field.name))
    return pa.Table.from_arrays(columns, schema=target)


def rows_to_table(table: str, rows: list[dict[str, Any]]) -> pa.Table:
    return finalize(table, pa.Table.from_pylist(rows, schema=_stage_arrow_schema(table)))


def member_rows(group_rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """group_members rows: each member with its group's id and the group record's coordinates."""
    out = []
    for group in group_rows:
        coords = {k: group[k] for k in COORDINATES}
        for member in group.get("members") or []:
            out.append({**member, **coords, "group_id": group["group_id"]})
    return out


@dataclass
class DecodedBatch:
    """One raw batch, decoded: the offset commits as an Arrow table, the rare records as rows, and the
    counts by class, record type, value version, layout and tombstone that the summary reconciles."""

    offset_commits: pa.Table
    # The layout era of the generic reader's commits, which come last in `offset_commits` (the fast
    # path's, first, are of the first layout: `_commit_eras`); only the DataFrame transport needs them.
    generic_eras: list[str | None]
    rare: dict[str, list[dict[str, Any]]]
    # Each rare record that is not an offset commit: its class, its count key and its row (the DataFrame
    # route turns these into JSON payloads).
    classified: list[dict[str, Any]]
    counts: Counter = field(default_factory=Counter)

    def table(self, name: str) -> pa.Table:
        if name == "offset_commits":
            return self.offset_commits
        if name == "group_members":
            return rows_to_table(name, member_rows(self.rare["group_metadata"]))
        return rows_to_table(name, self.rare[name])


def _fast_commits(batch: pa.RecordBatch, fast, eras: dict[int, str]) -> tuple[pa.Table, Counter]:
    rows = pa.array(fast.rows)
    columns = {name: batch.column(name).take(rows) for name in COORDINATES}
    if "transaction" in batch.schema.names:
        columns["transaction"] = batch.column("transaction").take(rows)
    else:
        columns["transaction"] = pa.nulls(len(fast.rows), pa.string())
    # The fast path takes only values without unknown tagged fields.
    unknown_tags = arrow_schema("offset_commits").field("unknown_tagged_fields").type
    columns["unknown_tagged_fields"] = pa.nulls(len(fast.rows), unknown_tags)
    stage = pa.table({**columns, **fast.columns})
    counts: Counter = Counter()
    # Count by (key type, value version) with one bincount: key types are 0/1, versions -1 (tombstone) to 4.
    key_types = fast.columns["key_type"].to_numpy(zero_copy_only=False).astype(np.int64)
    versions = fast.columns["value_version"].fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
    for slot, count in enumerate(np.bincount(key_types * 6 + versions + 1, minlength=12).tolist()):
        if count:
            key_type, version = divmod(slot, 6)
            version -= 1
            tombstone = version == -1
            era = None if tombstone else eras[key_type]
            counts[CountKey(records.OFFSET_COMMIT, key_type, None if tombstone else version, era, tombstone)] += count
    return finalize("offset_commits", stage), counts


def _commit_eras(codec: RecordCodec) -> dict[int, str]:
    """The layout era of the offset commits the fast path takes, by key type: always the first layout
    (later ones, such as v4 before 4.1, only read values the fast path leaves to the generic reader)."""
    return {t: codec.layouts[t].values[0].era for t in (0, 1)}


def for_decode(raw: DataFrame, topic: str) -> DataFrame:
    """The raw records as the decode stage takes them. Whether a record belongs to another topic than
    `topic` is worked out here, in the JVM, so that topic names never travel to Python workers."""
    other = F.col("source_topic").isNotNull() & (F.col("source_topic") != F.lit(topic))
    optional = [c for c in OPTIONAL_RAW_COLUMNS if c in raw.columns]
    return raw.select(*RAW_COLUMNS[:-1], F.coalesce(other, F.lit(False)).alias("other_topic"), *optional)


def _set_aside(batch: pa.RecordBatch, pending: np.ndarray, counts: Counter) -> list[dict[str, Any]]:
    """Rows that are not decoded: a reader's error rows (quarantined with its reason) and aborted
    transactional records and transaction markers (counted as skipped). Clears them from `pending`."""
    names = batch.schema.names
    quarantined = []
    if copies.COPY_STATE in names:
        for skipped, n in claim(batch.column(copies.COPY_STATE), COPY_SKIPS, pending).items():
            counts[CountKey(skipped)] += n
    if "source_error" in names:
        errors = batch.column("source_error")
        failed = errors.is_valid().to_numpy(zero_copy_only=False) & pending
        skipped = batch.column("skipped_bytes") if "skipped_bytes" in names else pa.nulls(batch.num_rows, pa.int64())
        for i in np.flatnonzero(failed).tolist():
            quarantined.append(
                {
                    "record_type": None,
                    "value_version": None,
                    "reason": errors[i].as_py(),
                    "key": batch.column("key")[i].as_py(),
                    "value": batch.column("value")[i].as_py(),
                    "source_partition": batch.column("source_partition")[i].as_py(),
                    "source_offset": batch.column("source_offset")[i].as_py(),
                    "record_timestamp_ms": batch.column("record_timestamp_ms")[i].as_py(),
                    "skipped_bytes": skipped[i].as_py(),
                }
            )
        counts[CountKey(records.QUARANTINE)] += len(quarantined)
        pending &= ~failed
    if "transaction" in names:
        for skipped, n in claim(batch.column("transaction"), _TRANSACTION_SKIPS, pending).items():
            counts[CountKey(skipped)] += n
    return quarantined


def claim(column: pa.Array, labels: Mapping[str, str], pending: np.ndarray) -> Counter:
    """How many of the `pending` rows hold each value of `labels` in `column`, counted under its label.
    Clears them from `pending`, so that no row is counted twice across the reasons a row is set aside."""
    claimed: Counter = Counter()
    if column.null_count == len(column):
        return claimed
    for value, label in labels.items():
        matches = pc.fill_null(pc.equal(column, value), False).to_numpy(zero_copy_only=False) & pending
        if matches.any():
            claimed[label] += int(matches.sum())
            pending &= ~matches
    return claimed


def source_notes(batch: pa.RecordBatch) -> Counter:
    """How many records of the batch carry each source note (what a text dump could not tell)."""
    if "source_note" not in batch.schema.names or batch.column("source_note").null_count == batch.num_rows:
        return Counter()
    counted = pc.value_counts(batch.column("source_note").drop_null())
    return Counter({item["values"].as_py(): item["counts"].as_py() for item in counted})


def decode_batch(batch: pa.RecordBatch, codec: RecordCodec, use_fast_path: bool = True) -> DecodedBatch:
    """Decode one Arrow batch of raw records (columns RAW_COLUMNS; records of another topic are only
    counted, as skipped)."""
    n = batch.num_rows
    pending = np.ones(n, bool)
    counts: Counter = Counter()
    if "other_topic" in batch.schema.names:
        other_topic = batch.column("other_topic").fill_null(False).to_numpy(zero_copy_only=False)
        pending &= ~other_topic
        counts[CountKey(SKIPPED)] += int(other_topic.sum())
    quarantined = _set_aside(batch, pending, counts)
    keys = batch.column("key")
    values = batch.column("value")
    parts = []
    if use_fast_path and pending.any():
        fast = decode_offset_commits(keys, values, allowed=pending)
        if len(fast.rows):
            pending[fast.rows] = False
            table, fast_counts = _fast_commits(batch, fast, _commit_eras(codec))
            parts.append(table)
            counts.update(fast_counts)

    rare: dict[str, list[dict[str, Any]]] = {name: [] for name in CLASS_TABLE.values()}
    rare["quarantine"] += quarantined
    classified = [{"class": records.QUARANTINE, "key": CountKey(records.QUARANTINE), "payload": q} for q in quarantined]
    rest = pa.array(np.flatnonzero(pending))
    generic_eras: list[str | None] = []
    if len(rest):
        transactions = (
            batch.column("transaction").take(rest).to_pylist()
            if "transaction" in batch.schema.names
            else [None] * len(rest)
        )
        coords = zip(
            batch.column("source_partition").take(rest).to_pylist(),
            batch.column("source_offset").take(rest).to_pylist(),
            batch.column("record_timestamp_ms").take(rest).to_pylist(),
            keys.take(rest).to_pylist(),
            values.take(rest).to_pylist(),
            transactions,
            strict=True,
        )
        for partition, offset, stamp, key, value, transaction in coords:
            row = records.decode_record(codec, key, value)
            cls = row["record_class"]
            payload = row[cls]
            payload.update(source_partition=partition, source_offset=offset, record_timestamp_ms=stamp)
            if cls == records.OFFSET_COMMIT:
                payload["transaction"] = transaction
                generic_eras.append(row.get("layout_era"))
            rare[CLASS_TABLE[cls]].append(payload)
            summary = CountKey(
                cls,
                row.get("key_type"),
                row.get("value_version"),
                row.get("layout_era"),
                row["is_tombstone"],
            )
            if cls not in records.DECODED_CLASSES:
                summary = CountKey(cls, row.get("key_type"), None, None, row["is_tombstone"])
            counts[summary] += 1
            classified.append({"class": cls, "key": summary, "payload": payload})
    generic_commits = rare.pop("offset_commits")
    if generic_commits:
        parts.append(rows_to_table("offset_commits", generic_commits))
    commits = pa.concat_tables(parts) if parts else arrow_schema("offset_commits").empty_table()
    others = [c for c in classified if c["class"] != records.OFFSET_COMMIT]
    return DecodedBatch(commits, generic_eras, rare, others, counts)


# The DataFrame transport ---------------------------------------------------------------------------

_COORDINATE_NAMES = tuple(c.name for c in coordinate_columns())


@cache
def _payload_struct(table: str) -> StructType:
    schema: TableSchema = table_schema(table)
    fields = [StructField(c.name, parse_type(c.type)) for c in _stage_columns(schema.without_coordinates())]
    if table == "group_metadata":
        members = [
            StructField(c.name, parse_type(c.type))
            for c in _stage_columns(table_schema("group_members").without_coordinates())
            if c.name != "group_id"
        ]
        fields.append(StructField("members", ArrayType(StructType(members))))
    return StructType(fields)


@cache
def decoded_schema() -> StructType:
    """The decode stage as a DataFrame: offset-commit columns, the record's class and, for rare
    records, their row as JSON (a handful of rows; the commit columns stay flat and fast)."""
    return StructType(
        [
            *table_schema("offset_commits").struct().fields,
            StructField("record_class", StringType()),
            StructField("layout_era", StringType()),
            StructField("payload", StringType()),
        ]
    )


def _commit_era_column(decoded: DecodedBatch, eras: dict[int, str]) -> pa.Array:
    """The layout era of each offset commit: the fast path's by key type, then the generic reader's."""
    commits = decoded.offset_commits
    fast = commits.slice(0, commits.num_rows - len(decoded.generic_eras))
    by_key = pc.if_else(pc.equal(fast.column("key_type"), 0), eras[0], eras[1])
    fast_eras = pc.if_else(fast.column("is_tombstone"), pa.scalar(None, pa.string()), by_key)
    return pa.concat_arrays([*fast_eras.chunks, pa.array(decoded.generic_eras, pa.string())])


def _decoded_arrow_batches(decoded: DecodedBatch, schema: pa.Schema, eras: dict[int, str]) -> Iterator[pa.RecordBatch]:
    commits = decoded.offset_commits
    if commits.num_rows:
        extra = {
            "record_class": pa.array([records.OFFSET_COMMIT] * commits.num_rows, pa.string()),
            "layout_era": _commit_era_column(decoded, eras),
            "payload": pa.nulls(commits.num_rows, pa.string()),
        }
        arrays = [commits.column(f.name) if f.name in commits.schema.names else extra[f.name] for f in schema]
        yield from pa.Table.from_arrays(arrays, schema=schema).to_batches()
    rows = []
    for item in decoded.classified:
        cls, key_type, version, era, tombstone = item["key"]
        payload = item["payload"]
        rows.append(
            {
                "source_partition": payload["source_partition"],
                "source_offset": payload["source_offset"],
                "record_timestamp_ms": payload["record_timestamp_ms"],
                "key_type": key_type,
                "value_version": version,
                "is_tombstone": tombstone,
                "record_class": cls,
                "layout_era": era,
                "payload": records.to_json(payload),
            }
        )
    for skipped_class in SKIP_REASONS:
        rows += [{"record_class": skipped_class}] * decoded.counts.get((skipped_class, None, None, None, False), 0)
    if rows:
        table = pa.Table.from_pylist(rows, schema=schema)
        stamps = arrow_timestamps(table.column("record_timestamp_ms"))
        yield from table.set_column(
            table.schema.get_field_index("record_timestamp"), schema.field("record_timestamp"), stamps
        ).to_batches()


def decode_records(raw: DataFrame, topic: str = "__consumer_offsets", use_fast_path: bool = True) -> DataFrame:
    """Decode every raw record (see offset_audit.inputs.dump) into the decode-stage DataFrame."""
    schema = decoded_schema()
    arrow = to_arrow_schema(schema, timezone="UTC")
    layouts = record_layouts()  # read on the driver, shipped with the function

    def decode_partition(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        codec = RecordCodec(layouts)
        eras = _commit_eras(codec)
        for batch in batches:
            yield from _decoded_arrow_batches(decode_batch(batch, codec, use_fast_path), arrow, eras)

    if "source_topic" not in raw.columns:
        raw = raw.withColumn("source_topic", F.lit(None).cast("string"))
    return for_decode(raw, topic).mapInArrow(decode_partition, schema)


def _from_payload(decoded: DataFrame, record_class: str, table: str) -> DataFrame:
    parsed = decoded.where(F.col("record_class") == record_class).select(
        *_COORDINATE_NAMES,
        F.from_json("payload", _payload_struct(table)).alias("_row"),
    )
    return parsed


def _project(frame: DataFrame, table: str, source: Column) -> DataFrame:
    columns = [F.col(name) for name in _COORDINATE_NAMES]
    for column in table_schema(table).without_coordinates():
        if isinstance(parse_type(column.type), TimestampType):
            value = spark_timestamp(source[ms_column(column.name)])
        else:
            value = source[column.name]
        columns.append(value.alias(column.name))
    return frame.select(*columns)


def offset_commits(decoded: DataFrame) -> DataFrame:
    return decoded.where(F.col("record_class") == records.OFFSET_COMMIT).select(
        *table_schema("offset_commits").column_names()
    )


def group_metadata(decoded: DataFrame) -> DataFrame:
    return _project(_from_payload(decoded, records.GROUP_METADATA, "group_metadata"), "group_metadata", F.col("_row"))


def group_members(decoded: DataFrame) -> DataFrame:
    """One row per member, exploded from the group records; the coordinates are the group record's."""
    members = _from_payload(decoded, records.GROUP_METADATA, "group_metadata").select(
        *_COORDINATE_NAMES,
        F.col("_row.group_id").alias("_group_id"),
        F.explode("_row.members").alias("_member"),
    )
    return members.select(
        *_COORDINATE_NAMES,
        *[
            (F.col("_group_id") if c.name == "group_id" else F.col("_member")[c.name]).alias(c.name)
            for c in table_schema("group_members").without_coordinates()
        ],
    )


def modern_group_records(decoded: DataFrame) -> DataFrame:
    return _project(
        _from_payload(decoded, records.MODERN, "modern_group_records"), "modern_group_records", F.col("_row")
    )


def other_records(decoded: DataFrame) -> DataFrame:
    return _project(_from_payload(decoded, records.OTHER, "other_records"), "other_records", F.col("_row"))


def quarantine(decoded: DataFrame) -> DataFrame:
    return _project(_from_payload(decoded, records.QUARANTINE, "quarantine"), "quarantine", F.col("_row"))


TABLE_BUILDERS = {
    "offset_commits": offset_commits,
    "group_metadata": group_metadata,
    "group_members": group_members,
    "modern_group_records": modern_group_records,
    "other_records": other_records,
    "quarantine": quarantine,
}


def decode_counts(decoded: DataFrame) -> DataFrame:
    """How many records of each class, type, version and layout: the numbers the summary reconciles."""
    return decoded.groupBy("record_class", "key_type", "value_version", "layout_era", "is_tombstone").agg(
        F.count(F.lit(1)).alias("records")
    )
