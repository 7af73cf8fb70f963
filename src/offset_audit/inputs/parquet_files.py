"""Parquet files this tool wrote (its tables' data files, the audit's scratch) read back as a DataFrame.

Local and mounted files are read by Spark itself. Files in an object store are read by the Python
workers through pyarrow.fs, because Spark's own S3 connector (hadoop-aws) comes from Maven Central,
which these machines, like many clusters, cannot reach.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, overload

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, DataFrameReader, SparkSession
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import ArrayType, DataType, MapType, StructField, StructType

from offset_audit.storage import LOCAL, Storage, is_remote


def literal_paths(reader: DataFrameReader) -> DataFrameReader:
    """A reader that takes each path as that path, never a pattern: Spark otherwise expands *, ?, [...]
    and {...} (a folder named out?x would also read its sibling out:x, and Hadoop then refuses a name
    holding ':' that it builds from a listing). __globPaths__ is DataSource's own switch for this, the
    one its streaming file source turns off."""
    return reader.option("__globPaths__", "false")


def read_parquet_files(
    spark: SparkSession, files: list[str], schema: StructType, storage: Storage = LOCAL
) -> DataFrame:
    """The rows of `files`, in the columns of `schema` (a column a file lacks is null: files written
    by an earlier version of the table), every column nullable as Spark's own file reader makes them,
    so what is built on the rows has the same schema wherever the files are."""
    if not files:
        return spark.createDataFrame([], schema)
    if not any(is_remote(f) for f in files):
        return literal_paths(spark.read).schema(schema).parquet(*files)
    schema = nullable(schema)
    target = to_arrow_schema(schema, timezone="UTC")

    def read(path: str) -> Iterator[pa.RecordBatch]:
        parquet = pq.ParquetFile(storage.parquet_source(path))
        columns = [f.name for f in target if f.name in parquet.schema_arrow.names]
        for batch in parquet.iter_batches(columns=columns):
            yield _aligned(batch, target)

    return read_units(spark, files, read, schema)


def read_units(
    spark: SparkSession, units: list[Any], read: Callable[[Any], Iterator[pa.RecordBatch]], schema: StructType | str
) -> DataFrame:
    """A DataFrame of what `read` makes of each unit (a file, a piece of one), one Spark partition per
    unit, read by the Python workers on the executors. Spark's Python data sources would do the same
    but plan on the driver in a Python process of `spark.pyspark.python`: on a cluster that is the
    executors' packed environment (./env/bin/python), which the driver does not have."""

    def task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for index in batch.column(0).to_pylist():
                yield from read(units[index])

    return spark.range(len(units), numPartitions=max(1, len(units))).mapInArrow(task, schema)


@overload
def nullable(data_type: StructType) -> StructType: ...
@overload
def nullable(data_type: DataType) -> DataType: ...


def nullable(data_type: DataType) -> DataType:
    """`data_type` with every field, element and value nullable (Spark's asNullable)."""
    if isinstance(data_type, StructType):
        return StructType([StructField(f.name, nullable(f.dataType), True, f.metadata) for f in data_type.fields])
    if isinstance(data_type, ArrayType):
        return ArrayType(nullable(data_type.elementType), True)
    if isinstance(data_type, MapType):
        return MapType(nullable(data_type.keyType), nullable(data_type.valueType), True)
    return data_type


def _aligned(batch: pa.RecordBatch, target: pa.Schema) -> pa.RecordBatch:
    columns = [
        batch.column(f.name).cast(f.type) if f.name in batch.schema.names else pa.nulls(batch.num_rows, f.type)
        for f in target
    ]
    return pa.RecordBatch.from_arrays(columns, schema=target)
