"""A log dump (segments, kafka-dump-log or console text) as one raw-record DataFrame: the route sessions
with delta-spark take. The Python workers read the same units the direct route reads, one Spark
partition per file (or, for segments, per partition folder, so that its copies are merged), the raw
records arriving as Arrow batches."""

from __future__ import annotations

from collections.abc import Iterator

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
    """The log dump as a raw-record DataFrame (with the optional columns of log dumps). Segments are
    read a partition at a time, as the direct route reads them, so that its copies are merged."""

    def labelled(topic: str | None, batch: pa.RecordBatch) -> pa.RecordBatch:
        topics = pa.array([topic] * batch.num_rows, pa.string())
        return batch.drop_columns(["other_topic", *LOCATION]).append_column("source_topic", topics)

    if units and formats.named(units[0].input_format).broker_folders:

        def read_group(group: PartitionFiles) -> Iterator[pa.RecordBatch]:
            for topic, batch in partition_raw(group, None):
                yield labelled(topic, batch)

        return read_units(spark, by_partition(units), read_group, RAW_LOG_DDL)

    def read(unit: LogFile) -> Iterator[pa.RecordBatch]:
        for batch in read_raw(unit, markers):
            yield labelled(unit.topic, batch)

    return read_units(spark, units, read, RAW_LOG_DDL)
