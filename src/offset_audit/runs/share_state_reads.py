"""Share-partition state read for the replay: a dump of `__share_group_state` (Kafka-source snapshot, Delta,
live Kafka, broker folders) decoded into one row per record, in Arrow batches
(`offset_audit.decoding.share_records`), and the KIP-932 draft's control records read as JSON lines
(`--input-format kip932-json`). share_coordinator.state_replay replays them per share-partition.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_schema

from offset_audit.decoding.decoder import COPY_SKIPS
from offset_audit.decoding.share_records import QUARANTINE, decode_share_state_record
from offset_audit.inputs.copies import COPY_STATE
from offset_audit.inputs.parquet_files import read_units
from offset_audit.inputs.textdumps import kip932_lines
from offset_audit.layouts.codec import RecordCodec
from offset_audit.layouts.spec import share_state_layouts
from offset_audit.layouts.tables import parse_struct
from offset_audit.storage import Storage

SHARE_STATE_TOPIC = "__share_group_state"
SKIPPED = "skipped"

# What the decode stage gives the replay: one row per __share_group_state record.
_DECODED = parse_struct(
    "struct<source_partition:int,source_offset:bigint,record_timestamp_ms:bigint,record_class:string,"
    "group_id:string,topic_id:string,partition:int,kind:string,snapshot_epoch:bigint,state_epoch:int,"
    "leader_epoch:int,start_offset:bigint,create_timestamp:bigint,write_timestamp:bigint,delivery_complete_count:int,"
    "state_batches:array<struct<first_offset:bigint,last_offset:bigint,delivery_state:tinyint,delivery_count:smallint>>,"
    "record_type:smallint,value_version:smallint,layout_era:string,is_tombstone:boolean,reason:string,key:binary,"
    "value:binary,skipped_bytes:bigint>"
)


# Decoding __share_group_state -------------------------------------------------------------------------


def decode_share_state(
    raw: DataFrame, topic: str = SHARE_STATE_TOPIC, only: frozenset[tuple[str, str, int]] | None = None
) -> DataFrame:
    """Raw records (offset_audit.inputs.dump) -> one decoded row per record; records of another topic are
    kept as `skipped` rows so that the counts reconcile.

    With `only` (share-partitions as (group id, topic id, partition)), just the share-state records of
    those share-partitions: what the folded replay hands back to this exact one."""
    layouts = share_state_layouts()
    arrow = to_arrow_schema(_DECODED, timezone="UTC")
    if "source_topic" not in raw.columns:
        raw = raw.withColumn("source_topic", F.lit(None).cast("string"))
    other = F.coalesce(F.col("source_topic").isNotNull() & (F.col("source_topic") != F.lit(topic)), F.lit(False))
    # Log segments bring a reader's error rows and transaction labels (the share coordinator writes no
    # transactions, but a marker must never be read as a state record).
    error = F.col("source_error") if "source_error" in raw.columns else F.lit(None).cast("string")
    skipped = F.col("skipped_bytes") if "skipped_bytes" in raw.columns else F.lit(None).cast("bigint")
    marker = F.col("transaction").isin("marker", "aborted") if "transaction" in raw.columns else F.lit(False)
    # Records another copy of the partition stands for (offset_audit.inputs.copies): counted, not read.
    copy_skip = F.lit(None).cast("string")
    if COPY_STATE in raw.columns:
        for state, reason in COPY_SKIPS.items():
            copy_skip = F.when(F.col(COPY_STATE) == state, F.lit(reason)).otherwise(copy_skip)
    frame = raw.select(
        "source_partition",
        "source_offset",
        "record_timestamp_ms",
        "key",
        "value",
        (other | F.coalesce(marker, F.lit(False))).alias("other"),
        error.alias("source_error"),
        skipped.alias("skipped_bytes"),
        copy_skip.alias("copy_skip"),
    )

    def decode(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        codec = RecordCodec(layouts)
        keys: dict = {}  # decoded keys: a share-partition's key repeats in every one of its records
        for batch in batches:
            rows = []
            for item in batch.to_pylist():
                coords = {k: item[k] for k in ("source_partition", "source_offset", "record_timestamp_ms")}
                if item["copy_skip"] is not None and not item["other"]:
                    if only is None:
                        rows.append({**coords, "record_class": item["copy_skip"]})
                    continue
                if item["other"] and only is None:
                    rows.append({**coords, "record_class": SKIPPED})
                    continue
                if item["other"] or (item["source_error"] is not None and only is not None):
                    continue
                if item["source_error"] is not None:
                    unread = {"reason": item["source_error"], "key": item["key"], "value": item["value"]}
                    unread["skipped_bytes"] = item["skipped_bytes"]
                    rows.append({**coords, "record_class": QUARANTINE, **unread})
                    continue
                row = decode_share_state_record(codec, item["key"], item["value"], keys)
                if only is not None and (row.get("group_id"), row.get("topic_id"), row.get("partition")) not in only:
                    continue
                rows.append({**coords, **row})
            if len(keys) > 100_000:
                keys.clear()
            yield pa.RecordBatch.from_pylist(rows, schema=arrow)

    return frame.mapInArrow(decode, _DECODED)


# The KIP-932 draft's control records as JSON lines ----------------------------------------------------

_KIP932_LINES = parse_struct(kip932_lines.KIP932_LINES_TYPE)


def read_kip932_lines(spark: SparkSession, files: list[str], storage: Storage) -> DataFrame:
    """One row per non-blank line of the draft's JSON (`inputs.textdumps.kip932_lines`), a file a task."""

    def read(path: str) -> Iterator[pa.RecordBatch]:
        yield kip932_lines.kip932_batch(path, storage)

    return read_units(spark, files, read, _KIP932_LINES)
