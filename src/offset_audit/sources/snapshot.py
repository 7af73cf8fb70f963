"""Kafka-source snapshots: Parquet or Delta with the columns Spark's Kafka source produces."""

from __future__ import annotations

import glob
import os

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import BinaryType, StringType

from offset_audit.errors import InputNotFound, UserError

REQUIRED = ("key", "value", "partition", "offset")
_GLOB_CHARS = set("*?[{")


def _is_delta(path: str) -> bool:
    return os.path.isdir(os.path.join(path, "_delta_log"))


def _expand(inputs: list[str]) -> list[str]:
    if not inputs:
        raise UserError("no input given; pass --input PATH (a file, folder or glob; repeatable)")
    paths = []
    for item in inputs:
        if "://" in item and not item.startswith("file://"):
            paths.append(item)  # object stores: let Spark resolve and report
            continue
        if _GLOB_CHARS & set(item):
            matches = sorted(glob.glob(item))
            if not matches:
                raise InputNotFound(f"the input pattern '{item}' matches no file")
            paths.extend(matches)
        elif not os.path.exists(item):
            raise InputNotFound(f"the input '{item}' does not exist")
        else:
            paths.append(item)
    return paths


def _delta_files(path: str) -> list[str]:
    """The data files of a Delta table's current version, read through delta-rs, so a Delta snapshot
    needs no Delta jars in Spark."""
    from deltalake import DeltaTable

    table = DeltaTable(path)
    features = set(table.protocol().reader_features or [])
    if "deletionVectors" in features and len(table.deletion_vectors().to_pylist() or []):
        raise UserError(
            f"the Delta table {path} has deletion vectors; read it with a delta-spark session or OPTIMIZE it first"
        )
    return table.file_uris()


def read_snapshot(spark: SparkSession, inputs: list[str], input_format: str) -> DataFrame:
    paths = _expand(inputs)
    files: list[str] = []
    for path in paths:
        if input_format == "delta" or _is_delta(path):
            if not _is_delta(path):
                raise UserError(f"'{path}' is not a Delta table (it has no _delta_log folder)")
            files.extend(_delta_files(path))
        else:
            files.append(path)
    if not files:
        raise InputNotFound(f"the input {', '.join(inputs)} holds no data files")
    frame = spark.read.option("recursiveFileLookup", "false").parquet(*files)
    missing = [c for c in REQUIRED if c not in frame.columns]
    if missing:
        raise UserError(
            f"the input has no column {', '.join(missing)}; a Kafka-source snapshot has key, value, topic, "
            f"partition, offset and timestamp (found: {', '.join(frame.columns)})"
        )
    return frame


def to_raw_records(frame: DataFrame) -> DataFrame:
    """Normalise a Kafka-source frame to the raw-record columns (see offset_audit.sources)."""
    columns = set(frame.columns)

    def binary(name: str):
        column = F.col(name)
        kind = frame.schema[name].dataType
        if isinstance(kind, BinaryType):
            return column
        if isinstance(kind, StringType):
            return F.unhex(column)  # a dump that stored bytes as hex strings
        raise UserError(f"column '{name}' must be binary, found {kind.simpleString()}")

    topic = F.col("topic").cast("string") if "topic" in columns else F.lit(None).cast("string")
    if "timestamp" in columns:
        stamp = F.unix_micros(F.col("timestamp").cast("timestamp"))
    else:
        stamp = F.lit(None).cast("long")
    return frame.select(
        topic.alias("source_topic"),
        F.col("partition").cast("int").alias("source_partition"),
        F.col("offset").cast("long").alias("source_offset"),
        stamp.alias("record_ts_us"),
        binary("key").alias("key"),
        binary("value").alias("value"),
    )
