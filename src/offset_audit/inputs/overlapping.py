"""Several inputs that may hold the same partitions: Kafka-source snapshots whose offset ranges
overlap, kafka-dump-log text of several brokers, or inputs of different formats (segments and a snapshot
of the same partitions).

Each input is read by its own reader, then the records are merged as copies of their partitions
(`offset_audit.inputs.copies`), one copy per input: Spark brings each partition's records from every
input into one task, in offset order. Segment folders need none of this, since a partition's copies
already meet in its task (`partition_folders.copy_sets`), where each batch's leader epoch can also be read.
Snapshots and text keep no leader epoch, so copies that disagree at one offset are settled by the copy
whose log reaches further.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import reduce

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from offset_audit.escaping import stored_text
from offset_audit.inputs import copies
from offset_audit.inputs.formats import InputFormat

_RANK = "_copy_rank"
MERGED_DDL = (
    "source_topic string, source_partition int, source_offset bigint, record_timestamp_ms bigint, key binary, "
    "value binary, source_error string, source_note string, skipped_bytes bigint, transaction string, "
    "copy_state string"
)
_COLUMNS = [part.strip().split(" ")[0] for part in MERGED_DDL.split(",")]


def merges(paths: list[str], input_format: InputFormat) -> bool:
    """Whether these inputs are read through `merged_raw_records` (formats.InputFormat.copies_merged)."""
    return input_format.several_formats or (len(paths) > 1 and input_format.copies_merged)


def merged_raw_records(paths: list[tuple[str, str]], load: Callable[[str, str], DataFrame]) -> DataFrame:
    """The raw records of every (path, format), each read by `load`, merged as copies of their
    partitions (the COPY_STATE column says which records another input stands for). Where no two
    inputs hold offsets of one partition in common and all share a format, nothing needs merging and
    the records are only put together."""
    frames = [_full(load(path, fmt)).withColumn(_RANK, F.lit(rank)) for rank, (path, fmt) in enumerate(paths)]
    union = reduce(DataFrame.unionByName, frames)
    if len({fmt for _, fmt in paths}) == 1 and not _overlap(union):
        return union.drop(_RANK)
    labels = [f"'{stored_text(path)}'" for path, _ in paths]
    arranged = union.repartition("source_topic", "source_partition").sortWithinPartitions(
        "source_topic", "source_partition", "source_offset", _RANK
    )

    def task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        held: list[pa.RecordBatch] = []
        current = None
        for batch in batches:
            topics = batch.column("source_topic").to_pylist()
            partitions = batch.column("source_partition").to_pylist()
            start = 0
            for i, key in enumerate(zip(topics, partitions, strict=True)):
                if key != current:
                    if i > start:
                        held.append(batch.slice(start, i - start))
                    if held:
                        yield from _merged(held, labels)
                    held, current, start = [], key, i
            held.append(batch.slice(start))
        if held:
            yield from _merged(held, labels)

    return arranged.mapInArrow(task, MERGED_DDL)


def _merged(batches: list[pa.RecordBatch], labels: list[str]) -> Iterator[pa.RecordBatch]:
    """One partition's records from every input, merged."""
    table = pa.Table.from_batches(batches)
    ranks = table.column(_RANK).to_numpy().astype(np.int64)
    topic, partition = table.column("source_topic")[0].as_py(), table.column("source_partition")[0].as_py()
    held = [
        copies.Copy(labels[rank], table.filter(pa.array(ranks == rank)).drop_columns([_RANK]))
        for rank in sorted(set(ranks.tolist()))
    ]
    name = f"{topic or 'partition'}-{'?' if partition is None else partition}"
    merged = copies.merge(held, name).select(_COLUMNS)
    yield from merged.to_batches(max_chunksize=50_000)


def _full(raw: DataFrame) -> DataFrame:
    """A raw-record frame with every column of MERGED_DDL (those its format lacks are null)."""
    types = dict(part.strip().split(" ") for part in MERGED_DDL.split(","))
    return raw.select(*[F.col(c) if c in raw.columns else F.lit(None).cast(types[c]).alias(c) for c in _COLUMNS])


def _overlap(union: DataFrame) -> bool:
    """Whether two inputs hold offsets of one partition in common (their first to last offsets meet)."""
    ranges = (
        union.groupBy("source_topic", "source_partition", _RANK)
        .agg(F.min("source_offset").alias("first"), F.max("source_offset").alias("last"))
        .collect()
    )
    by_partition: dict[tuple, list[tuple[int, int]]] = {}
    for row in ranges:
        if row["first"] is not None:
            by_partition.setdefault((row["source_topic"], row["source_partition"]), []).append(
                (row["first"], row["last"])
            )
    for spans in by_partition.values():
        spans.sort()
        reach = None
        for first, last in spans:
            if reach is not None and first <= reach:
                return True
            reach = last if reach is None else max(reach, last)
    return False
