"""`share_partition.cover_by_priority` over numpy arrays: the same pieces, without a Python step per batch.

The replay of a share-partition is a chain of merges, and a merge is "each offset takes the covering
batch of highest priority" (reference 2.10). Done batch by batch in Python that costs tens of
microseconds per record; here one call covers thousands of batches at once:

1. the batches' first offsets and one-past-last offsets cut the offset line into elementary intervals;
2. each batch is a range of those intervals, and every interval takes the highest key among the
   ranges covering it: a range-max written into a sparse table (each range is two overlapping
   power-of-two blocks, max being idempotent) and pushed down level by level, O(n log n);
3. covered intervals become pieces, adjacent pieces of equal state and count are joined.

The key is the priority with the same tie-break as `cover_by_priority` (the earlier batch in
first-offset order wins an equal priority), so the winner is the same batch even where priorities tie,
which the KIP draft's chain (ranked by record order) relies on. Tests hold both to Kafka's combiner
cases and to the per-offset rule on random batches.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from offset_audit.decoding.share_records import StateBatch
from offset_audit.share_coordinator.share_partition import prune_before

# Priority of Kafka's merge (PersisterStateBatchCombiner): the delivery count, then the state number.
# A state is an int8 (-128..127), so count * 256 + state + 128 orders exactly as (count, state).
STATE_SPAN = 256
STATE_BIAS = 128


def merge_rank(state: np.ndarray, delivery_count: np.ndarray) -> np.ndarray:
    """Kafka's merge priority (higher delivery count, then higher state) as one integer per batch."""
    return delivery_count.astype(np.int64) * STATE_SPAN + state.astype(np.int64) + STATE_BIAS


def prune_arrays(first: np.ndarray, last: np.ndarray, start_offset: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`share_partition.prune_before` on arrays: (kept rows, their first offsets cut at the start, their
    last offsets)."""
    if start_offset < 0:
        kept = np.arange(len(first))
        return kept, first, last
    kept = np.flatnonzero(last >= start_offset)
    return kept, np.maximum(first[kept], start_offset), last[kept]


def cover_arrays(
    first: np.ndarray, last: np.ndarray, state: np.ndarray, delivery_count: np.ndarray, rank: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Sorted, non-overlapping, joined pieces (first, last, state, delivery_count): per offset the
    covering batch of highest `rank`, ties to the earlier batch in first-offset order."""
    n = len(first)
    if n == 0:
        empty = np.empty(0, np.int64)
        return empty, empty, empty, empty
    first = first.astype(np.int64)
    last = last.astype(np.int64)
    by_first = np.argsort(first, kind="stable")
    # The composite key: rank first, then the earlier position in first-offset order.
    position = np.empty(n, np.int64)
    position[by_first] = np.arange(n)
    key = rank.astype(np.int64) * n + (n - 1 - position)
    bounds = np.unique(np.concatenate([first, last + 1]))
    slots = len(bounds) - 1
    low = np.searchsorted(bounds, first)
    high = np.searchsorted(bounds, last + 1)
    best = _range_max(low, high, key, slots)
    covered = best >= 0
    winner = np.where(covered, (n - 1) - (best % n), 0)
    winner = by_first[winner]  # position in first-offset order -> the batch's index
    piece_state = state.astype(np.int64)[winner]
    piece_count = delivery_count.astype(np.int64)[winner]
    # A piece starts a new batch unless the interval before it is covered with the same state and count.
    starts = covered.copy()
    starts[1:] &= ~(covered[:-1] & (piece_state[1:] == piece_state[:-1]) & (piece_count[1:] == piece_count[:-1]))
    begin = np.flatnonzero(starts)
    ends = np.flatnonzero(covered & np.append(~covered[1:] | starts[1:], True))
    return bounds[begin], bounds[ends + 1] - 1, piece_state[begin], piece_count[begin]


def _range_max(low: np.ndarray, high: np.ndarray, key: np.ndarray, slots: int) -> np.ndarray:
    """For each slot 0..slots-1 the highest key among the ranges [low, high) covering it, -1 if none."""
    span = high - low
    level = np.frexp(span.astype(np.float64))[1].astype(np.int64) - 1  # floor(log2(span)), exact here
    levels = int(level.max()) + 1
    table = np.full((levels, slots), -1, np.int64)
    np.maximum.at(table, (level, low), key)
    np.maximum.at(table, (level, high - (np.int64(1) << level)), key)
    for k in range(levels - 1, 0, -1):
        half = 1 << (k - 1)
        block = table[k, : slots - half]
        np.maximum(table[k - 1, : slots - half], block, out=table[k - 1, : slots - half])
        np.maximum(table[k - 1, half:], block, out=table[k - 1, half:])
    return table[0]


def _batches(first, last, state, delivery_count) -> tuple[StateBatch, ...]:
    return tuple(
        StateBatch(*values)
        for values in zip(first.tolist(), last.tolist(), state.tolist(), delivery_count.tolist(), strict=True)
    )


def _columns(batches: list[StateBatch]) -> tuple[np.ndarray, ...]:
    return tuple(
        np.array([getattr(b, name) for b in batches], np.int64)
        for name in ("first_offset", "last_offset", "state", "delivery_count")
    )


def cover_ranked(ranked: Iterable[tuple[tuple[int, ...], StateBatch]]) -> tuple[StateBatch, ...]:
    """A drop-in for `share_partition.cover_by_priority` (priorities are tuples, compared as tuples)."""
    pairs = list(ranked)
    if not pairs:
        return ()
    priorities = sorted({p for p, _ in pairs})
    dense = {p: i for i, p in enumerate(priorities)}
    first, last, state, count = _columns([b for _, b in pairs])
    rank = np.array([dense[p] for p, _ in pairs], np.int64)
    return _batches(*cover_arrays(first, last, state, count, rank))


def merge_batches(
    current: Iterable[StateBatch], new: Iterable[StateBatch], start_offset: int
) -> tuple[StateBatch, ...]:
    """`share_partition.merge_batches` (Kafka's combine) through `cover_arrays`."""
    kept = prune_before(list(current) + list(new), start_offset)
    if not kept:
        return ()
    first, last, state, count = _columns(kept)
    return _batches(*cover_arrays(first, last, state, count, merge_rank(state, count)))
