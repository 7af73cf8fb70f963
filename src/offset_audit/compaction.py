"""Arrow-side pre-reduction of offset commits, done inside each decode task for the audit.

The replay keeps one commit per (group, topic, partition), but a dump commits the same keys over and
over (the 5M-record bench dump holds 35,808 keys). Sorting millions of wide rows in Spark to find the
last of each key was most of the audit's time, so every task first keeps only its own last commit of
each key (tombstones included: a tombstone must still hide an earlier task's commit) and the Spark
replay (`offset_audit.replay.last_record_wins`) picks among a few rows per key. "Last" is the same order
the replay uses: source partition, then source offset, with a missing coordinate the oldest.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

COMMIT_KEY = ("group_id", "topic", "partition")


def last_per_key(table: pa.Table, key: tuple[str, ...] = COMMIT_KEY) -> pa.Table:
    """The last row of each key in log order, kept in log order."""
    if table.num_rows == 0:
        return table
    ordered = table if _in_log_order(table) else _sorted_by_position(table)
    rows = ordered.select(list(key)).append_column("_row", pa.array(np.arange(ordered.num_rows, dtype=np.int64)))
    last = rows.group_by(list(key), use_threads=False).aggregate([("_row", "max")]).column("_row_max")
    return ordered.take(pa.array(np.sort(last.to_numpy())))


def _in_log_order(table: pa.Table) -> bool:
    """Dumps are nearly always written partition by partition in offset order: then no sort is needed."""
    partitions, offsets = table.column("source_partition"), table.column("source_offset")
    if partitions.null_count or offsets.null_count:
        return False
    p = partitions.to_numpy().astype(np.int64)
    o = offsets.to_numpy()
    dp, do = np.diff(p), np.diff(o)
    return bool(np.all((dp > 0) | ((dp == 0) & (do >= 0))))


def _sorted_by_position(table: pa.Table) -> pa.Table:
    # Spark's descending sort puts nulls last, i.e. a record without coordinates never wins there;
    # here the same record sorts first.
    order = pc.sort_indices(
        table,
        sort_keys=[("source_partition", "ascending", "at_start"), ("source_offset", "ascending", "at_start")],
    )
    return table.take(order)


class LatestPerKey:
    """Accumulates one task's commits batch by batch, reducing whenever the pending rows outgrow what
    is already reduced: memory stays near the number of distinct keys, not the number of records."""

    def __init__(self, key: tuple[str, ...] = COMMIT_KEY, min_pending: int = 500_000) -> None:
        self.key = key
        self.min_pending = min_pending
        self.parts: list[pa.Table] = []
        self.pending = 0
        self.reduced = 0

    def add(self, table: pa.Table) -> None:
        if table.num_rows == 0:
            return
        self.parts.append(table)
        self.pending += table.num_rows
        # Reducing costs a sort of everything held; waiting until the pending rows at least match the
        # reduced ones keeps the total work linear even when nearly every key is distinct.
        if self.pending >= max(self.min_pending, self.reduced):
            self._reduce()

    def _reduce(self) -> None:
        reduced = last_per_key(pa.concat_tables(self.parts), self.key)
        self.parts, self.pending, self.reduced = [reduced], 0, reduced.num_rows

    def result(self) -> pa.Table | None:
        if not self.parts:
            return None
        self._reduce()
        return self.parts[0]
