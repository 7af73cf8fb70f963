"""A log dump (segments, kafka-dump-log or console text) as one raw-record DataFrame: the route sessions
with delta-spark take. The Python workers read the same units the direct route reads, one Spark
partition per file (or, for segments, per partition folder, so that its copies are merged), the raw
records arriving as Arrow batches."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from offset_audit.inputs import formats, transactions
from offset_audit.inputs.log_files import LOCATION, LogFile, PartitionFiles, by_partition, read_raw
from offset_audit.inputs.parquet_files import read_units
from offset_audit.inputs.partition_folders import partition_raw

RAW_LOG_DDL = (
    "source_partition int, source_offset bigint, record_timestamp_ms bigint, key binary, value binary, "
    "source_error string, source_note string, skipped_bytes bigint, transaction string, copy_state string, "
    "producer_id bigint, "
    "source_topic string"
)


def raw_dataframe(spark: SparkSession, units: list[LogFile], markers: transactions.Markers) -> DataFrame:
    """The log dump as a raw-record DataFrame (with the optional columns of log dumps)."""
    return read_units(spark, *raw_units(units, markers), RAW_LOG_DDL)


def raw_units(
    units: list[LogFile], markers: transactions.Markers
) -> tuple[list[Any], Callable[[Any], Iterator[pa.RecordBatch]]]:
    """What a task reads of a log dump, and how, in RAW_LOG_DDL's columns: what this route and the
    dump's Spark data source (`inputs.data_sources`) share. Segments are read a partition at a time,
    as the direct route reads them, so that its copies are merged; text dumps a file at a time, labelled
    by `markers`."""
    if units and formats.named(units[0].input_format).broker_folders:
        return by_partition(units), _read_group
    return units, partial(_read_file, markers=markers)


def _labelled(topic: str | None, batch: pa.RecordBatch) -> pa.RecordBatch:
    topics = pa.array([topic] * batch.num_rows, pa.string())
    return batch.drop_columns(["other_topic", *LOCATION]).append_column("source_topic", topics)


def _read_group(group: PartitionFiles) -> Iterator[pa.RecordBatch]:
    for topic, batch in partition_raw(group, None):
        yield _labelled(topic, batch)


def _read_file(unit: LogFile, markers: transactions.Markers) -> Iterator[pa.RecordBatch]:
    for batch in read_raw(unit, markers):
        yield _labelled(unit.topic, batch)
