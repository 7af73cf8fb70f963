"""Arrow-side pre-reduction of the raw records, done inside each decode task for the audit.

The replay keeps the last record of each key, but a dump commits the same keys over and over (the
5M-record bench dump holds 35,808 keys). Decoding every record only to throw nearly all of them away
was most of the audit's time, so every task first keeps only its own last record of each key, by the
key's bytes, before decoding anything: the log as Kafka's log cleaner would leave it. Tombstones are
kept (a tombstone must still hide an earlier task's record). What is left is a few decoded rows per
key, one per task: the driver merges them (`latest_commits`) when the state is small, otherwise one
Spark task per bucket of group ids does (`commit_buckets`: each task writes its commits a file per
bucket, so a key's rows from every task meet in one merge). "Last" is the order the replay uses
(`offset_audit.coordinator.replay.last_record_wins`): source partition, then source offset, with a
missing coordinate the oldest.
"""

from __future__ import annotations

import zlib

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from offset_audit.inputs.copies import COPY_STATE
from offset_audit.inputs.transactions import COMMITTED, PENDING

COMMIT_KEY = ("group_id", "topic", "partition")
RAW_KEY = "_compaction_key"
_V1_OFFSET_KEY = b"\x00\x01"


def compaction_keys(keys: pa.Array, key_types: np.ndarray) -> pa.Array:
    """The bytes under which raw records replace each other: the key itself, except that an offset
    commit key of version 0 counts as version 1 (same layout, and the same key to the coordinator).
    `key_types` is `offset_audit.decoding.fast_commits.key_types(keys)`."""
    if isinstance(keys, pa.ChunkedArray):
        keys = keys.combine_chunks()
    v0 = key_types == 0
    if not v0.any():
        return keys
    mask = pa.array(v0)
    rewritten = [_V1_OFFSET_KEY + key[2:] for key in keys.filter(mask).to_pylist()]
    return pc.replace_with_mask(keys, mask, pa.array(rewritten, keys.type))


def commit_buckets(group_ids: pa.Array | pa.ChunkedArray, buckets: int) -> np.ndarray:
    """Each row's bucket, 0 to `buckets` - 1: the CRC-32 of its group id's UTF-8 bytes (null: 0), the same
    in every task and process. By group, not by key, so that one merge holds a group's every commit."""
    if buckets == 1 or len(group_ids) == 0:
        return np.zeros(len(group_ids), np.int64)
    names = pc.unique(group_ids)
    of_name = np.array([0 if n is None else zlib.crc32(n.encode()) % buckets for n in names.to_pylist()], np.int64)
    return of_name[pc.index_in(group_ids, value_set=names).to_numpy(zero_copy_only=False)]


def last_per_key(table: pa.Table, key: tuple[str, ...] = COMMIT_KEY) -> pa.Table:
    """The last row of each key in log order, kept in log order.

    Only the position columns are sorted (when the rows are not in log order already) and only the
    surviving rows are copied: the rows carry raw values, and nearly all of them are dropped.
    """
    if table.num_rows == 0:
        return table
    order = _log_order(table)
    rank = np.arange(table.num_rows, dtype=np.int64)
    if order is not None:
        rank[order] = rank.copy()
    rows = table.select(list(key)).append_column("_rank", pa.array(rank))
    grouped = rows.group_by(list(key), use_threads=False).aggregate([("_rank", "max")])
    last = np.sort(grouped.column("_rank_max").to_numpy())
    return table.take(pa.array(last if order is None else order[last]))


def latest_commits(commits: pa.Table) -> pa.Table:
    """The decode tasks' compacted commits merged across tasks: the last committed record of each
    (group, topic, partition), tombstones included, and every pending transactional record as it is
    (the replay sets those aside until their marker).

    Each task leaves one record per key, so a key appears once per task that saw it (about four times
    on two cores); merging those on the driver, for a state small enough to hold there, spares Spark a
    window over all of them in a single task: on the 5M-record bench dump 138k rows became 36k and that
    window, 1.5 s, went. The rule is `offset_audit.coordinator.replay.live_offsets`' own, last record in log order.
    """
    pending = pc.fill_null(pc.equal(commits.column("transaction"), PENDING), False)
    if not pc.any(pending).as_py():
        return last_per_key(commits)
    return pa.concat_tables([last_per_key(commits.filter(pc.invert(pending))), commits.filter(pending)])


def _log_order(table: pa.Table) -> np.ndarray | None:
    """The row indexes in log order, or None when the rows are in log order already (dumps nearly
    always are written partition by partition in offset order)."""
    partitions, offsets = table.column("source_partition"), table.column("source_offset")
    if not (partitions.null_count or offsets.null_count):
        by_partition = partitions.to_numpy().astype(np.int64)
        by_offset = offsets.to_numpy()
        dp, do = np.diff(by_partition), np.diff(by_offset)
        if np.all((dp > 0) | ((dp == 0) & (do >= 0))):
            return None
        # A consumer's dump interleaves the partitions, each in offset order (and a reduced table
        # followed by newer rows is the same): a stable sort by partition alone is then the log
        # order. Partition numbers fit 16 bits, where NumPy's stable sort is a radix sort.
        narrow = by_partition.min() >= 0 and by_partition.max() < 2**15
        order = np.argsort(by_partition.astype(np.int16) if narrow else by_partition, kind="stable")
        if np.all((np.diff(by_partition[order]) > 0) | (np.diff(by_offset[order]) >= 0)):
            return order
    # Spark's descending sort puts nulls last, i.e. a record without coordinates never wins there;
    # here the same record sorts first.
    positions = table.select(["source_partition", "source_offset"])
    order = pc.sort_indices(
        positions,
        sort_keys=[("source_partition", "ascending", "at_start"), ("source_offset", "ascending", "at_start")],
    )
    return order.to_numpy()


class LatestPerKey:
    """Accumulates one task's records batch by batch, reducing whenever the pending rows outgrow what
    is already reduced: memory stays near the number of distinct keys, not the number of records.
    `added` counts every row given, so `added - result().num_rows` were superseded."""

    def __init__(self, key: tuple[str, ...] = COMMIT_KEY, min_pending: int = 500_000) -> None:
        self.key = key
        self.min_pending = min_pending
        self.parts: list[pa.Table] = []
        self.pending = 0
        self.reduced = 0
        self.added = 0

    def add(self, table: pa.Table) -> None:
        if table.num_rows == 0:
            return
        self.parts.append(table)
        self.pending += table.num_rows
        self.added += table.num_rows
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


def compactable(batch: pa.RecordBatch) -> np.ndarray:
    """Rows that may be replaced by a later record of the same key before decoding: keyed records of the
    topic, not a reader's error row, not a record another copy of the partition stands for, and not a
    transactional record still waiting for (or cancelled by) its marker, which the decoder sets aside or
    counts on its own."""
    names = batch.schema.names
    ok = batch.column("key").is_valid().to_numpy(zero_copy_only=False).copy()
    if "other_topic" in names:
        ok &= ~batch.column("other_topic").fill_null(False).to_numpy(zero_copy_only=False)
    if "source_error" in names:
        ok &= batch.column("source_error").is_null().to_numpy(zero_copy_only=False)
    if COPY_STATE in names:
        ok &= batch.column(COPY_STATE).is_null().to_numpy(zero_copy_only=False)
    if "transaction" in names:
        state = batch.column("transaction")
        ok &= pc.fill_null(pc.equal(state, COMMITTED), True).to_numpy(zero_copy_only=False)
    return ok
