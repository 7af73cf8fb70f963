"""Raw records to typed tables: the Spark stage around the byte readers.

`decode_records` runs once over the raw records (inside Arrow batches, vectorised for offset commits,
layout-driven for everything else) and yields one wide row per record: its class and the struct of the
table it belongs to. The table functions below are pure projections of that DataFrame, so one decode
pass feeds every table, and a test can build their input from a handful of byte vectors.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache

import numpy as np
import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampType,
    _parse_datatype_string,
)

from offset_audit import records
from offset_audit.fastpath import BinaryColumn, decode_offset_commits
from offset_audit.layouts.codec import RecordCodec
from offset_audit.layouts.spec import RecordLayout, record_layouts
from offset_audit.tables import TableSchema, as_epoch_millis, table_schema

# Columns every raw record carries into the decode stage (see offset_audit.sources).
RAW_COLUMNS = ("source_partition", "source_offset", "record_ts_us", "key", "value")

_CLASS_TABLES = {
    records.OFFSET_COMMIT: "offset_commits",
    records.GROUP_METADATA: "group_metadata",
    records.MODERN: "modern_group_records",
    records.OTHER: "other_records",
    records.QUARANTINE: "quarantine",
}


def _decode_struct(table: TableSchema, extra: list[StructField] | None = None) -> StructType:
    fields = [
        StructField(c.name, as_epoch_millis(_parse_datatype_string(c.type)), True) for c in table.without_coordinates()
    ]
    return StructType(fields + (extra or []))


@cache
def decoded_schema() -> StructType:
    """The wide row of the decode stage: coordinates, classification and one struct per table."""
    member = _decode_struct(table_schema("group_members"), [StructField("group_id", StringType())])
    member = StructType([f for f in member.fields if f.name != "group_id"])
    structs = {
        records.OFFSET_COMMIT: _decode_struct(table_schema("offset_commits")),
        records.GROUP_METADATA: _decode_struct(
            table_schema("group_metadata"), [StructField("members", ArrayType(member))]
        ),
        records.MODERN: _decode_struct(table_schema("modern_group_records")),
        records.OTHER: _decode_struct(table_schema("other_records")),
        records.QUARANTINE: _decode_struct(table_schema("quarantine")),
    }
    return StructType(
        [
            StructField("source_partition", IntegerType()),
            StructField("source_offset", LongType()),
            StructField("record_ts_us", LongType()),
            StructField("record_class", StringType()),
            StructField("key_type", ShortType()),
            StructField("value_version", ShortType()),
            StructField("layout_era", StringType()),
            StructField("is_tombstone", BooleanType()),
        ]
        + [StructField(name, struct) for name, struct in structs.items()]
    )


def _era_of(layouts: dict[int, RecordLayout], record_type: int) -> str:
    return layouts[record_type].values[0].era


def decode_batch(
    batch: pa.RecordBatch, codec: RecordCodec, schema: pa.Schema, use_fast_path: bool = True
) -> Iterator[pa.RecordBatch]:
    """Decode one Arrow batch of raw records into decode-stage batches (fast rows, then the rest)."""
    n = batch.num_rows
    keys = batch.column("key")
    values = batch.column("value")
    coords = {name: batch.column(name) for name in ("source_partition", "source_offset", "record_ts_us")}
    handled = np.zeros(n, bool)
    if use_fast_path and n:
        fast = decode_offset_commits(BinaryColumn.of(keys), BinaryColumn.of(values))
        if len(fast.rows):
            handled[fast.rows] = True
            yield _fast_batch(fast, coords, codec, schema)
    rest = np.flatnonzero(~handled)
    if len(rest) == 0:
        return
    key_list = keys.take(pa.array(rest)).to_pylist()
    value_list = values.take(pa.array(rest)).to_pylist()
    partitions = coords["source_partition"].take(pa.array(rest)).to_pylist()
    offsets = coords["source_offset"].take(pa.array(rest)).to_pylist()
    stamps = coords["record_ts_us"].take(pa.array(rest)).to_pylist()
    rows = []
    for key, value, partition, offset, stamp in zip(key_list, value_list, partitions, offsets, stamps, strict=True):
        row = records.decode_record(codec, key, value)
        row["source_partition"] = partition
        row["source_offset"] = offset
        row["record_ts_us"] = stamp
        rows.append(row)
    yield pa.RecordBatch.from_pylist(rows, schema=schema)


def _fast_batch(fast, coords: dict[str, pa.Array], codec: RecordCodec, schema: pa.Schema) -> pa.RecordBatch:
    rows = pa.array(fast.rows)
    n = len(fast.rows)
    struct_type = schema.field(records.OFFSET_COMMIT).type
    offset_commit = pa.StructArray.from_arrays(
        [fast.columns[f.name] for f in struct_type], fields=list(struct_type)
    )
    key_type = fast.columns["key_type"]
    eras = {t: _era_of(codec.layouts, t) for t in (0, 1)}
    layout_era = pa.array(
        np.where(key_type.to_numpy(zero_copy_only=False) == 0, eras[0], eras[1]).astype(object), pa.string()
    )
    layout_era = pa.compute.if_else(fast.columns["is_tombstone"], pa.scalar(None, pa.string()), layout_era)
    columns = {
        "source_partition": coords["source_partition"].take(rows),
        "source_offset": coords["source_offset"].take(rows),
        "record_ts_us": coords["record_ts_us"].take(rows),
        "record_class": pa.array([records.OFFSET_COMMIT] * n, pa.string()),
        "key_type": key_type,
        "value_version": fast.columns["value_version"],
        "layout_era": layout_era,
        "is_tombstone": fast.columns["is_tombstone"],
        records.OFFSET_COMMIT: offset_commit,
    }
    arrays = [columns[f.name] if f.name in columns else pa.nulls(n, f.type) for f in schema]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def decode_records(raw: DataFrame, use_fast_path: bool = True) -> DataFrame:
    """Decode every raw record (columns RAW_COLUMNS) into the decode-stage row."""
    schema = decoded_schema()
    arrow_schema = to_arrow_schema(schema, timezone="UTC")
    layouts = record_layouts()  # read on the driver; shipped with the function

    def decode_partition(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        codec = RecordCodec(layouts)
        for batch in batches:
            yield from decode_batch(batch, codec, arrow_schema, use_fast_path)

    return raw.select(*RAW_COLUMNS).mapInArrow(decode_partition, schema)


# Projections to the output tables. Each is a pure function of the decode-stage DataFrame.


def _millis_to_timestamp(column: Column) -> Column:
    # Kafka writes -1 for "no timestamp" (reference 1.2, 2.3, 2.5); that is null here.
    return F.when(column == -1, F.lit(None)).otherwise(F.timestamp_millis(column))


def _coordinates() -> list[Column]:
    return [
        F.col("source_partition"),
        F.col("source_offset"),
        F.timestamp_micros("record_ts_us").alias("record_timestamp"),
    ]


def _project(decoded: DataFrame, record_class: str, table: str, source: Column | None = None) -> DataFrame:
    schema = table_schema(table)
    struct = source if source is not None else F.col(record_class)
    columns = _coordinates()
    for column in schema.without_coordinates():
        value = struct[column.name]
        if isinstance(_parse_datatype_string(column.type), TimestampType):
            value = _millis_to_timestamp(value)
        columns.append(value.alias(column.name))
    return decoded.where(F.col("record_class") == record_class).select(*columns)


def offset_commits(decoded: DataFrame) -> DataFrame:
    return _project(decoded, records.OFFSET_COMMIT, "offset_commits")


def group_metadata(decoded: DataFrame) -> DataFrame:
    return _project(decoded, records.GROUP_METADATA, "group_metadata")


def group_members(decoded: DataFrame) -> DataFrame:
    """One row per member, exploded from the group records; the coordinates are the group record's."""
    members = decoded.where(F.col("record_class") == records.GROUP_METADATA).select(
        "source_partition",
        "source_offset",
        "record_ts_us",
        F.col("group_metadata.group_id").alias("_group_id"),
        F.explode("group_metadata.members").alias("_member"),
    )
    # group_id lives on the group record, every other column on the member struct.
    return members.select(
        *_coordinates(),
        *[
            (F.col("_group_id") if c.name == "group_id" else F.col("_member")[c.name]).alias(c.name)
            for c in table_schema("group_members").without_coordinates()
        ],
    )


def modern_group_records(decoded: DataFrame) -> DataFrame:
    return _project(decoded, records.MODERN, "modern_group_records")


def other_records(decoded: DataFrame) -> DataFrame:
    return _project(decoded, records.OTHER, "other_records")


def quarantine(decoded: DataFrame) -> DataFrame:
    return _project(decoded, records.QUARANTINE, "quarantine")


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
    return decoded.groupBy("record_class", "key_type", "value_version", "layout_era").agg(
        F.count(F.lit(1)).alias("records"),
        F.sum(F.col("is_tombstone").cast("long")).alias("tombstones"),
    )
