"""Reading back Delta tables this project wrote (the audit reads the decode tables, delete-plan the
deletion candidates)."""

from __future__ import annotations

from functools import reduce
from pathlib import Path

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from offset_audit.session import has_delta
from offset_audit.tables import table_schema


def read_table(spark: SparkSession, folder: str, name: str) -> DataFrame:
    """The current version of a Delta table as a DataFrame, without Delta jars when need be: delta-rs
    lists the live files and their partition values, Spark reads the Parquet."""
    path = str(Path(folder) / name)
    schema = table_schema(name).struct()
    if has_delta(spark):
        return spark.read.format("delta").load(path)
    from deltalake import DeltaTable

    table = DeltaTable(path)
    partitions = table.metadata().partition_columns
    actions = pa.table(table.get_add_actions(flatten=True)).to_pylist()
    if not actions:
        return spark.createDataFrame([], schema)
    root = Path(path).resolve()
    groups: dict[tuple, list[str]] = {}
    for action in actions:
        values = tuple(action.get(f"partition.{c}") for c in partitions)
        groups.setdefault(values, []).append(str(root / action["path"]))
    data_schema = type(schema)([f for f in schema.fields if f.name not in partitions])
    frames = []
    for values, files in groups.items():
        frame = spark.read.schema(data_schema).parquet(*files)
        for column, value in zip(partitions, values, strict=True):
            frame = frame.withColumn(column, F.lit(value).cast(schema[column].dataType))
        frames.append(frame.select(*schema.names))
    return reduce(DataFrame.unionByName, frames)
