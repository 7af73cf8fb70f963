"""Kafka 4.1's replay (`offset_audit.share_coordinator.share_partition`) folded over columns: a task's records of each
share-partition become one small summary, and the summaries of all tasks combine on the driver.

Why folding is exact. Every merge takes, per offset, the covering batch of highest (delivery count,
state) after pruning below the start offset (reference 2.10). Maximum is associative, so a run of
updates merges the same way one at a time or all at once, provided no pruning ever removes an offset
that a later batch brings back: that only happens when the start offset moves backwards. So, from the
latest snapshot (or tombstone) on:

- the start offset and leader epoch are the last ones a record set (not -1), the delivery complete
  count the last record's (-1 included);
- the batches are the cover of every batch since, pruned once at the final start offset;

as long as the start offsets a run sets never decrease (a negative start prunes nothing, like 0).
Only the per-offset view (`ShareState.effective_batches`) reaches the tables, so a snapshot's batches
may be held in that view from the start. Everything before the latest snapshot or tombstone counts
only for the figures kept besides the state: records, problems, the last snapshot's coordinates.

Where the premise fails (a start offset moving backwards, one share-partition's records interleaved
between tasks), the summary says so and the caller replays that share-partition's records exactly with
`share_partition.replay_checked`. A move back anywhere (also before a later snapshot, where the state would still
fold) goes there too: `replay_checked` reports each one, and they are rare (brokers before 4.4, on
out-of-order state writes). Other problems are found per record exactly as `replay_checked` words them.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise

import numpy as np

from offset_audit.decoding.share_columns import SNAPSHOT, TOMBSTONE, UNKNOWN, UPDATE, ShareColumns
from offset_audit.decoding.share_records import StateBatch
from offset_audit.share_coordinator import cover
from offset_audit.share_coordinator.share_partition import (
    DELIVERY_STATE_NAMES,
    NO_TIMESTAMP,
    NOT_UPDATED,
    UNINITIALIZED_EPOCH,
    ReplayProblem,
    ShareReplay,
    ShareState,
    check_batch,
    merge_update,
    unknown_state_problem,
)

# Batches covered at once when a run is long: bounds the sparse table (see `cover`) to a few MiB;
# the cover so far is carried into the next window (max is associative).
WINDOW_BATCHES = 65_536
_KNOWN_STATES = np.array(sorted(DELIVERY_STATE_NAMES), np.int64)

Coordinates = tuple[int, int]  # (source offset, source partition): the order records are replayed in


@dataclass(frozen=True)
class FoldedUpdates:
    """A run of ShareUpdates as one: what applying them in order does to any state before them."""

    snapshot_epoch: int  # the first update's: the state's epoch if there was no state
    leader_epoch: int  # the last one set, else -1
    start_offset: int  # the last one set, else -1
    batches: tuple[StateBatch, ...]  # their cover, pruned at start_offset
    delivery_complete_count: int  # the last update's, -1 included: each replaces the state's


@dataclass(frozen=True)
class Summary:
    """One task's records of one share-partition.

    With `reset` (the task saw a snapshot or tombstone), `state` is the state after its records,
    whatever came before; otherwise `updates` (None if no record was valid) apply to the state before.
    `exact` says an update of the task moved the start offset back: replay this share-partition record
    by record, which reports each such update (even one a later snapshot makes harmless to the state).
    `head_start` is the first start offset the task's updates set before any snapshot or tombstone: it
    must not be below the start offset of the state the earlier tasks leave.
    """

    share_partition: tuple[str, str, int]
    first: Coordinates
    last: Coordinates
    records: int
    last_snapshot: Coordinates | None
    problems: tuple[ReplayProblem, ...]
    exact: bool
    reset: bool
    head_start: int | None
    state: ShareState | None
    updates: FoldedUpdates | None


@dataclass(frozen=True)
class Replayed:
    """A share-partition after all its records: what `share_partition.replay_checked` gives, plus the figures
    the share_partitions row shows besides the state."""

    share_partition: tuple[str, str, int]
    replay: ShareReplay
    records: int
    last_snapshot: Coordinates | None


# ---- one task ----------------------------------------------------------------------------------------


def summarise(columns: ShareColumns) -> list[Summary]:
    """Fold a task's records, per share-partition, in (source offset, source partition) order."""
    records = columns.records
    if not len(columns):
        return []
    order = np.lexsort((records["source_partition"], records["source_offset"], records["share_partition"]))
    owner = records["share_partition"][order]
    cuts = np.flatnonzero(np.diff(owner)) + 1
    bad_reason, unknown = _record_checks(columns)
    return [_summarise_one(columns, rows, bad_reason, unknown) for rows in np.split(order, cuts)]


def _record_checks(columns: ShareColumns) -> tuple[dict[int, str], np.ndarray]:
    """Records `replay_checked` skips (with its reason: the first batch `check_batch` refuses), and the
    records holding a batch in a state Kafka never persists."""
    batches = columns.batches
    first, last, count = batches["first_offset"], batches["last_offset"], batches["delivery_count"]
    owner = np.repeat(np.arange(len(columns)), np.diff(columns.batch_start))
    refused = (first < 0) | (last < first) | (count < 0)
    bad_reason: dict[int, str] = {}
    for b in np.flatnonzero(refused).tolist():
        record = int(owner[b])
        if record not in bad_reason:
            values = (int(first[b]), int(last[b]), int(batches["delivery_state"][b]), int(count[b]))
            bad_reason[record] = str(check_batch(*values))
    unknown = np.zeros(len(columns), bool)
    unknown[owner[~np.isin(batches["delivery_state"], _KNOWN_STATES)]] = True
    return bad_reason, unknown


def _batch_rows(columns: ShareColumns, rows: np.ndarray) -> np.ndarray:
    """Indexes into the batch columns of the given records' batches, in record order."""
    start, end = columns.batch_start[rows], columns.batch_start[rows + 1]
    counts = end - start
    total = int(counts.sum())
    if total == 0:
        return np.empty(0, np.int64)
    before = np.cumsum(counts) - counts
    return np.repeat(start - before, counts) + np.arange(total)


def _cover(columns: ShareColumns, rows: np.ndarray, start_offset: int) -> tuple[StateBatch, ...]:
    """The merge of every batch of these records, pruned at the start offset, as `cover` computes it."""
    batches = columns.batches
    picked = _batch_rows(columns, rows)
    pieces: tuple[np.ndarray, ...] = tuple(np.empty(0, np.int64) for _ in range(4))
    for window in range(0, len(picked), WINDOW_BATCHES):
        chosen = picked[window : window + WINDOW_BATCHES]
        kept, first, last = cover.prune_arrays(
            batches["first_offset"][chosen], batches["last_offset"][chosen], start_offset
        )
        state = batches["delivery_state"][chosen][kept]
        count = batches["delivery_count"][chosen][kept]
        first, last, state, count = (
            np.concatenate(pair) for pair in zip(pieces, (first, last, state, count), strict=True)
        )
        pieces = cover.cover_arrays(first, last, state, count, cover.merge_rank(state, count))
    return tuple(StateBatch(*values) for values in zip(*(p.tolist() for p in pieces), strict=True))


def _coordinates(columns: ShareColumns, row: int) -> Coordinates:
    return (int(columns.records["source_offset"][row]), int(columns.records["source_partition"][row]))


def _problems(columns: ShareColumns, rows: np.ndarray, bad_reason: dict[int, str], unknown: np.ndarray):
    """The problems of these records, in record order, worded as `replay_checked` words them."""
    problems: list[ReplayProblem] = []
    for row in rows[unknown[rows] | np.isin(rows, list(bad_reason))].tolist():
        offset, partition = _coordinates(columns, row)
        where = (None if partition == UNKNOWN else partition, None if offset == UNKNOWN else offset)
        if row in bad_reason:
            problems.append(ReplayProblem(*where, bad_reason[row]))
            continue
        for b in _batch_rows(columns, np.array([row])).tolist():
            batch = StateBatch(*(int(columns.batches[name][b]) for name in columns.batches))
            if batch.state not in DELIVERY_STATE_NAMES:
                problems.append(unknown_state_problem(*where, batch))
    return tuple(problems)


def _start_offsets_only_move_forward(records, valid: np.ndarray) -> tuple[bool, int | None]:
    """Whether no update among these (valid, log-ordered) records sets a start offset pruning less than
    the one before it, and the first start offset set before any snapshot or tombstone.

    Between two resets the start offset is the last one set: the snapshot's, then each update's that is
    not -1 (after a tombstone the first update builds the state; its -1 prunes like 0, so it is never
    above what follows). A move back is a drop between neighbours of one such stretch."""
    kind = records["kind"][valid]
    starts = records["start_offset"][valid]
    is_reset = kind != UPDATE
    sets = is_reset | (starts != NOT_UPDATED)
    stretch = np.cumsum(is_reset)[sets]
    pruned = np.maximum(starts[sets], 0)  # a negative start prunes nothing, like 0
    is_update = ~is_reset[sets]
    head = np.flatnonzero(is_update & (stretch == 0))
    head_start = int(starts[sets][head[0]]) if len(head) else None
    same_stretch = stretch[1:] == stretch[:-1]
    after_state = (kind[sets] != TOMBSTONE)[:-1]  # a tombstone holds no start offset to move back from
    dropped = (pruned[1:] < pruned[:-1]) & same_stretch & is_update[1:] & after_state
    return not bool(np.any(dropped)), head_start


def _summarise_one(columns: ShareColumns, rows: np.ndarray, bad_reason: dict[int, str], unknown: np.ndarray) -> Summary:
    records = columns.records
    kind = records["kind"][rows]
    snapshots = rows[kind == SNAPSHOT]
    valid = rows[~np.isin(rows, list(bad_reason))] if bad_reason else rows
    valid_kind = records["kind"][valid]
    resets = np.flatnonzero(valid_kind != UPDATE)  # snapshots and tombstones
    reset = len(resets) > 0
    run = valid[resets[-1] + 1 :] if reset else valid
    base = int(valid[resets[-1]]) if reset else None

    starts = records["start_offset"][run]
    set_starts = starts[starts != NOT_UPDATED]
    monotone, head_start = _start_offsets_only_move_forward(records, valid)
    leaders = records["leader_epoch"][run]
    set_leaders = leaders[leaders != NOT_UPDATED]
    start = int(set_starts[-1]) if len(set_starts) else NOT_UPDATED
    leader = int(set_leaders[-1]) if len(set_leaders) else NOT_UPDATED
    completed = records["delivery_complete_count"]

    state: ShareState | None = None
    updates: FoldedUpdates | None = None
    if base is not None and records["kind"][base] == SNAPSHOT:
        snapshot_start = int(records["start_offset"][base])
        start = start if len(set_starts) else snapshot_start
        state = ShareState(
            snapshot_epoch=int(records["snapshot_epoch"][base]),
            state_epoch=int(records["state_epoch"][base]),
            leader_epoch=leader if len(set_leaders) else int(records["leader_epoch"][base]),
            start_offset=start,
            create_timestamp=int(records["create_timestamp"][base]),
            write_timestamp=int(records["write_timestamp"][base]),
            batches=_cover(columns, np.concatenate([[base], run]), start) if monotone else (),
            delivery_complete_count=int(completed[run[-1]] if len(run) else completed[base]),
        )
    elif len(run):
        folded = _cover(columns, run, start) if monotone else ()
        if base is not None:  # after a tombstone: the first update builds the state (state.replay's _apply)
            state = ShareState(
                snapshot_epoch=int(records["snapshot_epoch"][run[0]]),
                state_epoch=UNINITIALIZED_EPOCH,
                leader_epoch=leader,
                start_offset=start,
                create_timestamp=NO_TIMESTAMP,
                write_timestamp=NO_TIMESTAMP,
                batches=folded,
                delivery_complete_count=int(completed[run[-1]]),
            )
        else:
            updates = FoldedUpdates(
                snapshot_epoch=int(records["snapshot_epoch"][run[0]]),
                leader_epoch=leader,
                start_offset=start,
                batches=folded,
                delivery_complete_count=int(completed[run[-1]]),
            )
    names = columns.share_partitions
    return Summary(
        share_partition=names[int(records["share_partition"][rows[0]])],
        first=_coordinates(columns, int(rows[0])),
        last=_coordinates(columns, int(rows[-1])),
        records=len(rows),
        last_snapshot=_coordinates(columns, int(snapshots[-1])) if len(snapshots) else None,
        problems=_problems(columns, rows, bad_reason, unknown),
        exact=not monotone,
        reset=reset,
        head_start=head_start,
        state=state,
        updates=updates,
    )


# ---- all tasks ---------------------------------------------------------------------------------------


def _apply(state: ShareState | None, updates: FoldedUpdates) -> ShareState | None:
    """Folded updates on the state before them: share_partition.py's merge, once for the whole run."""
    return merge_update(state, updates)


def _moves_back(state: ShareState, start_offset: int) -> bool:
    """Would this start offset prune less than the state's (negative ones prune nothing, like 0)?"""
    return max(start_offset, 0) < max(state.start_offset, 0)


def combine(summaries: list[Summary]) -> Replayed | None:
    """One share-partition's summaries from every task -> its replay; None when it must be replayed
    record by record (a start offset moved backwards, or tasks' records interleave)."""
    ordered = sorted(summaries, key=lambda s: s.first)
    if any(s.exact for s in ordered) or any(a.last >= b.first for a, b in pairwise(ordered)):
        return None
    state: ShareState | None = None
    for summary in ordered:
        if state is not None and summary.head_start is not None and _moves_back(state, summary.head_start):
            return None  # the start offset moves backwards across tasks
        if summary.reset:
            state = summary.state
            continue
        updates = summary.updates
        if updates is None:
            continue
        state = _apply(state, updates)
    snapshots = [s.last_snapshot for s in ordered if s.last_snapshot is not None]
    return Replayed(
        share_partition=ordered[0].share_partition,
        replay=ShareReplay(state, tuple(p for s in ordered for p in s.problems)),
        records=sum(s.records for s in ordered),
        last_snapshot=snapshots[-1] if snapshots else None,
    )
