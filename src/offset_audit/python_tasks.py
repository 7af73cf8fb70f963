"""Work the Python workers do on items the driver names (files to read, buckets to merge), one Spark task
per slice of items, the tasks' results collected to the driver.

A classic session hands the slices to `parallelize`; a Spark Connect session has no RDD, so there each
slice is one row of a range of as many rows as partitions, and `mapInArrow` runs the task on it and sends
its results back pickled. The slices travel inside the task's closure either way: they are paths and
sizes, small beside the records the tasks read.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

import pyarrow as pa
from pyspark.sql import SparkSession

from offset_audit.session_kind import connect_route

T = TypeVar("T")

_RESULTS = pa.schema([("slice", pa.int64()), ("result", pa.binary())])


def cut(items: Sequence[T], count: int) -> list[list[T]]:
    """`items` in `count` runs of consecutive items (as Spark's parallelize cuts a list)."""
    count = max(1, min(len(items), count))
    return [list(items[i * len(items) // count : (i + 1) * len(items) // count]) for i in range(count)]


def _on_connect(
    spark: SparkSession, slices: list[list[Any]], task: Callable[[Iterator[Any]], Iterator[Any]]
) -> list[Any]:
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for index in batch.column(0).to_pylist():
                results = [pickle.dumps(r, protocol=pickle.HIGHEST_PROTOCOL) for r in task(iter(slices[index]))]
                yield pa.RecordBatch.from_arrays(
                    [pa.array([index] * len(results), pa.int64()), results], schema=_RESULTS
                )

    count = len(slices)
    if not count:
        return []
    rows = spark.range(0, count, 1, count).mapInArrow(run, "slice long, result binary").toArrow()
    order = sorted(range(rows.num_rows), key=rows.column("slice").to_pylist().__getitem__)
    results = rows.column("result").to_pylist()
    return [pickle.loads(results[i]) for i in order]  # our own tasks' results


@connect_route(_on_connect)
def run_tasks(
    spark: SparkSession, slices: list[list[Any]], task: Callable[[Iterator[Any]], Iterator[Any]]
) -> list[Any]:
    """`task` over the items of each slice, in a Spark task of its own; every result, in slice order."""
    if not slices:
        return []
    return (
        spark.sparkContext.parallelize(slices, len(slices))
        .mapPartitions(lambda groups: task(item for group in groups for item in group))
        .collect()
    )
