"""Reading back Delta tables this project wrote (the audit reads the decode tables, share the group
records)."""

from __future__ import annotations

from functools import reduce

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from offset_audit.inputs.kafka_source import check_plain_files
from offset_audit.inputs.parquet_files import read_parquet_files
from offset_audit.layouts.tables import table_schema
from offset_audit.outputs.delta import has_delta
from offset_audit.session_kind import is_remote as is_connect
from offset_audit.storage import LOCAL, Storage, is_local, join, spark_path


def read_table(spark: SparkSession, folder: str, name: str, storage: Storage = LOCAL) -> DataFrame:
    """The current version of a Delta table as a DataFrame: delta-rs lists the live files and their
    partition values, and their Parquet is read (see parquet_files).

    A session with Delta reads with delta-spark a table elsewhere (an object store through its s3a
    settings, a scheme only its connectors reach) and any table of a Spark Connect session, whose
    server may not share this machine's files. A classic session lists a local table with delta-rs
    too, which reads the log without a Spark job: delta-spark's snapshot of each table took two, and
    the four decode tables 2-3 s of a warm 7 s incremental audit of a live topic."""
    path = join(folder, name)
    schema = table_schema(name).struct()
    if has_delta(spark) and (is_connect(spark) or not is_local(path)):
        return spark.read.format("delta").load(spark_path(path))
    from deltalake import DeltaTable

    table = DeltaTable(path, storage_options=storage.delta_options)
    check_plain_files(table, path)
    partitions = table.metadata().partition_columns
    actions = pa.table(table.get_add_actions(flatten=True)).to_pylist()
    if not actions:
        return spark.createDataFrame([], schema)
    groups: dict[tuple, list[str]] = {}
    for action in actions:
        values = tuple(action.get(f"partition.{c}") for c in partitions)
        groups.setdefault(values, []).append(join(path, action["path"]))
    data_schema = type(schema)([f for f in schema.fields if f.name not in partitions])
    frames = []
    for values, files in groups.items():
        frame = read_parquet_files(spark, files, data_schema, storage)
        for column, value in zip(partitions, values, strict=True):
            frame = frame.withColumn(column, F.lit(value).cast(schema[column].dataType))
        frames.append(frame.select(*schema.names))
    return reduce(DataFrame.unionByName, frames)


def bytes_skipped(quarantine_files: list, storage: Storage) -> int:
    """The bytes the quarantine rows of these files stand for (log segment stretches holding no batch)."""
    total = 0
    for file in quarantine_files:
        column = pq.read_table(storage.parquet_source(file.path), columns=["skipped_bytes"]).column(0)
        total += int(pc.sum(column).as_py() or 0)
    return total
