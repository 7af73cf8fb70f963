"""Where raw records come from. Every source yields the same raw-record DataFrame:

    source_topic string, source_partition int, source_offset bigint, record_ts_us bigint,
    key binary, value binary

in which a null value is a tombstone. Only this package (and `sinks/`) touches files or Kafka.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession

from offset_audit.config import Settings
from offset_audit.sources.kafka import read_kafka
from offset_audit.sources.snapshot import Piece, local_snapshot, read_snapshot, snapshot_pieces, to_raw_records


def load_raw_records(spark: SparkSession, inputs: list[str], settings: Settings) -> DataFrame:
    if settings.input_format == "kafka":
        frame = read_kafka(spark, settings)
    else:
        frame = read_snapshot(spark, inputs, settings.input_format)
    return to_raw_records(frame)


def raw_source(spark: SparkSession, inputs: list[str], settings: Settings) -> DataFrame | list[Piece]:
    """What the one-pass decoder reads: pieces of local snapshot files, which Python workers read
    directly, or else the raw-record DataFrame."""
    if settings.input_format != "kafka" and local_snapshot(inputs):
        return snapshot_pieces(inputs, settings.input_format)
    return load_raw_records(spark, inputs, settings)
