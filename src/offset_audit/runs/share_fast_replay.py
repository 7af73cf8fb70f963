"""`__share_group_state` replayed in one Spark pass: read, decode and fold in the tasks, combine on the driver.

The record-by-record route (`share_state_reads.decode_share_state`, then share_coordinator.state_replay) turns
every record into a Python dict, then into a Spark row, shuffles it to its share-partition's group and turns
it back into a dict: about 20 s per million records, nearly all of it per-record Python. Here each task reads
its records as columns (`offset_audit.decoding.share_columns`) and folds them per share-partition into one
summary (`offset_audit.share_coordinator.fold`); only the summaries, the quarantined records and the counts
come back to the driver, which combines a few summaries per share-partition. Local snapshot files are read by
the Python workers themselves, as the decode command's fast route reads them.

Where the fold cannot be exact for a share-partition (see share_coordinator/fold.py), its records are decoded and
replayed again by the record-by-record route, restricted to those share-partitions.
"""

from __future__ import annotations

import pickle
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from offset_audit.decoding.decoder import for_decode
from offset_audit.decoding.share_columns import ShareStateReader
from offset_audit.inputs.dump import FileUnits
from offset_audit.layouts.codec import RecordCodec
from offset_audit.layouts.spec import share_state_layouts
from offset_audit.layouts.tables import parse_struct
from offset_audit.runs import share_state_reads
from offset_audit.share_coordinator import fold, state_replay

_TASK_RESULT = parse_struct("struct<result:binary>")
QUARANTINE_SCHEMA = pa.schema(
    [
        ("source_partition", pa.int32()),
        ("source_offset", pa.int64()),
        ("record_timestamp_ms", pa.int64()),
        ("record_type", pa.int16()),
        ("value_version", pa.int16()),
        ("reason", pa.string()),
        ("key", pa.binary()),
        ("value", pa.binary()),
        ("skipped_bytes", pa.int64()),
    ]
)


@dataclass
class TaskResult:
    """What one task sends back: its summaries, its quarantined records (QUARANTINE_SCHEMA: Arrow, so a
    dump of mostly damaged records reaches the driver as its bytes, not as a Python dict per record),
    its record counts."""

    summaries: list[fold.Summary]
    quarantine: pa.Table
    counts: Counter


@dataclass
class ShareStateReplay:
    """The replay of a whole dump: the wide replay rows (state_replay.replay_arrow_schema), the quarantined
    records, the record counts by class, and the share-partitions replayed record by record."""

    replayed: pa.Table
    quarantine: pa.Table
    counts: Counter
    replayed_exactly: int


def _read_task(batches: Iterator[pa.RecordBatch], use_fast_path: bool) -> TaskResult:
    reader = ShareStateReader(RecordCodec(share_state_layouts()), use_fast_path)
    for batch in batches:
        reader.add(batch)
    quarantine = pa.Table.from_pylist(reader.quarantine, QUARANTINE_SCHEMA)
    return TaskResult(fold.summarise(reader.columns()), quarantine, reader.counts)


def read_and_fold(spark: SparkSession, source: DataFrame | FileUnits, topic: str, use_fast_path: bool):
    """Every task's TaskResult: local files read by the workers, anything else through Spark."""
    if isinstance(source, FileUnits):
        read = source.read

        def unit_task(units: Iterator) -> Iterator[TaskResult]:
            yield _read_task((batch for unit in units for batch in read(unit)), use_fast_path)

        # Stretches of the input, not a deal by weight: summaries of records that interleave across tasks
        # cannot be combined (fold.combine) and are replayed record by record.
        return source.run(spark, unit_task, keep_order=True)

    def arrow_task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        result = pickle.dumps(_read_task(batches, use_fast_path), protocol=pickle.HIGHEST_PROTOCOL)
        yield pa.RecordBatch.from_pylist([{"result": result}])

    rows = for_decode(source, topic).mapInArrow(arrow_task, _TASK_RESULT).collect()
    return [pickle.loads(row.result) for row in rows]  # our own tasks' results


def replay_dump(
    spark: SparkSession,
    source: DataFrame | FileUnits,
    raw: Callable[[], DataFrame],
    delivery_count_limit: int,
    topic: str = share_state_reads.SHARE_STATE_TOPIC,
    use_fast_path: bool = True,
) -> ShareStateReplay:
    """Replay every share-partition of the dump. `raw` gives the raw-record DataFrame of the same input;
    it is built and read only for share-partitions the fold hands to the exact replay."""
    results = read_and_fold(spark, source, topic, use_fast_path)
    counts: Counter = Counter()
    by_share_partition: dict[tuple[str, str, int], list[fold.Summary]] = {}
    quarantine: list[pa.Table] = [QUARANTINE_SCHEMA.empty_table()]
    for result in results:
        counts.update(result.counts)
        quarantine.append(result.quarantine)
        for summary in result.summaries:
            by_share_partition.setdefault(summary.share_partition, []).append(summary)
    rows: list[dict[str, Any]] = []
    exact: set[tuple[str, str, int]] = set()
    for share_partition in sorted(by_share_partition):
        replayed = fold.combine(by_share_partition[share_partition])
        if replayed is None:
            exact.add(share_partition)
            continue
        group_id, topic_id, partition = share_partition
        key = {"group_id": group_id, "topic_id": topic_id, "partition": partition}
        last: tuple[int | None, ...] | None = replayed.last_snapshot
        if last is not None:
            last = tuple(None if c == -1 else c for c in last)
        rows += state_replay.share_partition_rows(key, replayed.replay, replayed.records, last, delivery_count_limit)
    tables = [pa.Table.from_pylist(rows, state_replay.replay_arrow_schema())]
    if exact:
        decoded = share_state_reads.decode_share_state(raw(), topic, only=frozenset(exact))
        tables.append(state_replay.replay_share_state(decoded, delivery_count_limit).toArrow().cast(tables[0].schema))
    return ShareStateReplay(
        replayed=pa.concat_tables(tables),
        quarantine=pa.concat_tables(quarantine),
        counts=counts,
        replayed_exactly=len(exact),
    )
