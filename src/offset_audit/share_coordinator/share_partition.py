"""A share-partition's state as Kafka 4.1's share coordinator rebuilds it from `__share_group_state`.

The audit must see the state the broker would load, not a plausible reading of the log, so this follows
`ShareCoordinatorShard.replay` and `PersisterStateBatchCombiner` (reference 2.9 and 2.10) rule for rule:

- ShareSnapshot: the state becomes exactly the record (epochs, start offset, timestamps, batches as written).
- ShareUpdate on existing state: snapshot epoch, state epoch and timestamps stay; start offset and leader
  epoch take the record's values unless -1; batches = merge(current, update's, new start offset).
- ShareUpdate without state: the state is the update alone (its batches as written), state epoch 0,
  timestamps 0 (`ShareGroupOffset.fromRecord(ShareUpdateValue)`).
- Tombstone (null ShareSnapshot value): the state is gone.
- An update may set a start offset below the state's: replayed as it comes (the broker's replay takes
  it too), and reported: a leader that loads this state delivers the records between again. Brokers
  before 4.4 write such an update when two state writes arrive out of order; 4.4 writes the higher
  start offset (apache/kafka#23074). The replay is the same in 4.0 to 4.4; only what is written changed.
- Merge: batches ending before the start offset are dropped and one straddling it is cut (not when the
  start offset is -1, as in Kafka); then each offset takes the batch with the higher delivery count, on
  equal counts the higher state number. Kafka 4.1 sometimes leaves adjacent equal batches apart; this
  always joins them, as Kafka's later sweep-line combiner (KAFKA-20691) does, so compare per offset.

Everything here is plain Python over one share-partition's records: the caller runs it inside Spark tasks.
Bad input is reported as a problem with its source coordinates, never raised.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import pairwise
from typing import cast

from offset_audit.decoding.row_fields import as_fields, is_int
from offset_audit.decoding.share_records import NO_DELIVERY_COMPLETE_COUNT, SNAPSHOT, TOMBSTONE, UPDATE, StateBatch

# DeliveryState values a share coordinator persists (ShareSnapshotValue.StateBatches, reference 2.9).
# Archiving (3) only from Kafka 4.4, with share.version 2 and an errors dead-letter topic for the group:
# a record rejected or delivered too often, on its way to that topic; the broker archives it (4) once
# written there, and sends it again after a restart (SharePartition, RecordState).
AVAILABLE = 0
ACKNOWLEDGED = 2
ARCHIVING = 3
ARCHIVED = 4
DELIVERY_STATE_NAMES = {
    AVAILABLE: "Available",
    ACKNOWLEDGED: "Acknowledged",
    ARCHIVING: "Archiving",
    ARCHIVED: "Archived",
}
# The one state the broker knows but never persists (Acquired recovers as Available): named in problems.
UNPERSISTED_STATE_NAMES = {1: "Acquired"}
# Acknowledged or archived: the record is done and never delivered again (SharePartition.isRecordStateAcknowledged).
TERMINAL_STATES = frozenset({ACKNOWLEDGED, ARCHIVED})

# ShareUpdateValue StartOffset / LeaderEpoch meaning "not updated" (ShareCoordinatorShard.merge).
NOT_UPDATED = -1
# What an update without earlier state gets (ShareGroupOffset.UNINITIALIZED_EPOCH, NO_TIMESTAMP).
UNINITIALIZED_EPOCH = 0
NO_TIMESTAMP = 0

_REQUIRED_INTS = {
    SNAPSHOT: ("snapshot_epoch", "state_epoch", "leader_epoch", "start_offset"),
    UPDATE: ("snapshot_epoch", "leader_epoch", "start_offset"),
    TOMBSTONE: (),
}
# The decoded rows (decoding/share_records.py) spell two names as the tables do; the dataclasses here as Kafka's
# PersisterStateBatch does. Both are read.
_ALIASES = {"batches": "state_batches", "state": "delivery_state"}


@dataclass(frozen=True)
class ShareRecord:
    """One `__share_group_state` record of a share-partition, as decoded.

    `partition` and `offset` say where the record was read (for problems only). Timestamps are None
    when the layout had none (4.0 snapshots); state_epoch exists on snapshots only.
    """

    kind: str
    snapshot_epoch: int | None = None
    state_epoch: int | None = None
    leader_epoch: int | None = None
    start_offset: int | None = None
    create_timestamp: int | None = None
    write_timestamp: int | None = None
    batches: Sequence[StateBatch] = ()
    partition: int | None = None
    offset: int | None = None
    delivery_complete_count: int = NO_DELIVERY_COMPLETE_COUNT


@dataclass(frozen=True)
class ReplayProblem:
    """Why a record was skipped or is suspect, with where it was read."""

    partition: int | None
    offset: int | None
    reason: str


@dataclass(frozen=True)
class ShareState:
    """What the share coordinator holds for a share-partition after replay.

    `batches` are exactly as Kafka holds them (a snapshot's as written); the figures are computed on
    `effective_batches`, the per-offset view at the start offset, so a snapshot written with overlaps
    or stale batches is not counted twice. For anything Kafka writes the two are the same.
    """

    snapshot_epoch: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    create_timestamp: int | None
    write_timestamp: int | None
    batches: tuple[StateBatch, ...]
    # The records done at or past the start offset as the writing broker counted them (KIP-1226);
    # -1 where the state was written by Kafka 4.1, or the last update carried none.
    delivery_complete_count: int = NO_DELIVERY_COMPLETE_COUNT

    @cached_property
    def effective_batches(self) -> tuple[StateBatch, ...]:
        return merge_batches(self.batches, (), self.start_offset)

    @property
    def end_offset(self) -> int:
        """SPEO, exclusive: see `end_offset`."""
        return end_offset(self.start_offset, self.effective_batches)

    @property
    def available_records(self) -> int:
        return records_in_state(self.effective_batches, AVAILABLE)

    @property
    def acknowledged_records(self) -> int:
        return records_in_state(self.effective_batches, ACKNOWLEDGED)

    @property
    def archived_records(self) -> int:
        return records_in_state(self.effective_batches, ARCHIVED)

    @property
    def archiving_records(self) -> int:
        return records_in_state(self.effective_batches, ARCHIVING)

    @property
    def unknown_state_records(self) -> int:
        """Records in a state Kafka never persists: a writer bug or a layout this code misreads."""
        return sum(b.record_count for b in self.effective_batches if b.state not in DELIVERY_STATE_NAMES)

    @property
    def unknown_states(self) -> tuple[int, ...]:
        return tuple(sorted({b.state for b in self.effective_batches if b.state not in DELIVERY_STATE_NAMES}))

    @property
    def max_delivery_count(self) -> int | None:
        return max_delivery_count(self.effective_batches)

    def records_at_or_over(self, delivery_count_limit: int) -> int:
        return records_at_or_over(self.effective_batches, delivery_count_limit)


@dataclass(frozen=True)
class ShareReplay:
    """The state (None: never initialised, or deleted by a tombstone) and every problem met on the way."""

    state: ShareState | None
    problems: tuple[ReplayProblem, ...]
    start_offset_moves_back: int = 0
    """ShareUpdates that set a start offset pruning less than the state's (also among `problems`)."""


def replay(records: Iterable[object]) -> ShareState | None:
    """The state Kafka 4.1 would hold after these records; problems are dropped (see `replay_checked`)."""
    return replay_checked(records).state


def replay_checked(records: Iterable[object]) -> ShareReplay:
    """Replay one share-partition's records and keep the problems.

    Records are ShareRecord, mappings with its field names (or the decoder's `state_batches` /
    `delivery_state`), or Spark Rows. They are replayed in `offset` order when every record has one,
    because a Spark group loses log order; otherwise in the order given. A malformed record is skipped
    and reported; a batch in an unknown state is kept (Kafka keeps it) and reported.
    """
    state: ShareState | None = None
    problems: list[ReplayProblem] = []
    moves_back = 0
    for raw in in_log_order([as_fields(r) for r in records]):
        checked = _check_record(raw)
        if isinstance(checked, ReplayProblem):
            problems.append(checked)
            continue
        problems.extend(_unknown_state_problems(checked))
        if state is not None and moves_start_back(state.start_offset, checked):
            moves_back += 1
            problems.append(_moved_back_problem(checked, state.start_offset))
        state = _apply(state, checked)
    return ShareReplay(state, tuple(problems), moves_back)


def moves_start_back(current_start: int, record: ShareRecord) -> bool:
    """Whether this record is a ShareUpdate whose start offset prunes less than `current_start` (a
    negative start offset prunes nothing, like 0; -1 leaves the start offset as it is)."""
    # An update's start offset is an int: _check_record lets none through without one.
    return (
        record.kind == UPDATE
        and record.start_offset != NOT_UPDATED
        and max(cast(int, record.start_offset), 0) < max(current_start, 0)
    )


def _moved_back_problem(record: ShareRecord, current_start: int) -> ReplayProblem:
    start_offset = cast(int, record.start_offset)  # an update's, which _check_record required
    return ReplayProblem(
        record.partition,
        record.offset,
        f"update moves the start offset back from {current_start} to {record.start_offset}; applied as the "
        f"broker applies it: a leader loading it delivers records {max(start_offset, 0)}-{current_start - 1} "
        "not in its batches again (brokers before 4.4 persist an out-of-order state write as it comes; 4.4 keeps the "
        "higher start offset)",
    )


def _apply(state: ShareState | None, record: ShareRecord) -> ShareState | None:
    if record.kind == TOMBSTONE:
        return None
    if record.kind == SNAPSHOT:
        # A snapshot has all four as ints: _check_record lets none through without them.
        return ShareState(
            snapshot_epoch=cast(int, record.snapshot_epoch),
            state_epoch=cast(int, record.state_epoch),
            leader_epoch=cast(int, record.leader_epoch),
            start_offset=cast(int, record.start_offset),
            create_timestamp=record.create_timestamp,
            write_timestamp=record.write_timestamp,
            batches=tuple(record.batches),
            delivery_complete_count=record.delivery_complete_count,
        )
    return merge_update(state, record)


def merge_update(state: ShareState | None, update) -> ShareState:
    """A ShareUpdate (or anything with its start offset, leader epoch, snapshot epoch, delivery complete
    count and batches: the folded updates of `fold`) on the state before it; without state, the update
    alone. The update's DeliveryCompleteCount replaces the state's, -1 included (ShareCoordinatorShard
    merge, Kafka 4.2 to 4.4)."""
    if state is None:
        return ShareState(
            snapshot_epoch=update.snapshot_epoch,
            state_epoch=UNINITIALIZED_EPOCH,
            leader_epoch=update.leader_epoch,
            start_offset=update.start_offset,
            create_timestamp=NO_TIMESTAMP,
            write_timestamp=NO_TIMESTAMP,
            batches=tuple(update.batches),
            delivery_complete_count=update.delivery_complete_count,
        )
    # The merge prunes at the *new* start offset, so an update that moves it also drops what it passed.
    start = state.start_offset if update.start_offset == NOT_UPDATED else update.start_offset
    leader_epoch = state.leader_epoch if update.leader_epoch == NOT_UPDATED else update.leader_epoch
    return ShareState(
        snapshot_epoch=state.snapshot_epoch,
        state_epoch=state.state_epoch,
        leader_epoch=leader_epoch,
        start_offset=start,
        create_timestamp=state.create_timestamp,
        write_timestamp=state.write_timestamp,
        batches=merge_batches(state.batches, update.batches, start),
        delivery_complete_count=update.delivery_complete_count,
    )


# ---- the merge ---------------------------------------------------------------------------------------


def merge_batches(
    current: Iterable[StateBatch], new: Iterable[StateBatch], start_offset: int
) -> tuple[StateBatch, ...]:
    """Kafka's combine: prune at the start offset, then per offset the higher (delivery count, state) wins.

    Not "newest wins": a late write carrying an older view of an offset must not undo a later delivery.
    """
    kept = prune_before(list(current) + list(new), start_offset)
    return cover_by_priority(((b.delivery_count, b.state), b) for b in kept)


def prune_before(batches: Iterable[StateBatch], start_offset: int) -> list[StateBatch]:
    """Drop what ends before the start offset and cut what straddles it; -1 (uninitialised) prunes nothing."""
    if start_offset < 0:
        return list(batches)
    kept = []
    for batch in batches:
        if batch.last_offset < start_offset:
            continue
        if batch.first_offset < start_offset:
            batch = StateBatch(start_offset, batch.last_offset, batch.state, batch.delivery_count)
        kept.append(batch)
    return kept


def cover_by_priority(ranked: Iterable[tuple[tuple[int, ...], StateBatch]]) -> tuple[StateBatch, ...]:
    """Each offset takes the covering batch of highest priority; sorted, non-overlapping, equal neighbours joined.

    A sweep over batch boundaries rather than per offset, because a batch can span millions of offsets.
    The priority is a parameter so the KIP draft's chain (draft_chain.py) can rank by record order instead.
    """
    by_first = sorted(ranked, key=lambda pair: pair[1].first_offset)
    bounds = sorted({b.first_offset for _, b in by_first} | {b.last_offset + 1 for _, b in by_first})
    covering: list[tuple[tuple[int, ...], int, StateBatch]] = []
    joined: list[StateBatch] = []
    taken = 0
    for low, high in pairwise(bounds):
        while taken < len(by_first) and by_first[taken][1].first_offset <= low:
            priority, batch = by_first[taken]
            heapq.heappush(covering, (tuple(-p for p in priority), taken, batch))
            taken += 1
        while covering and covering[0][2].last_offset < low:
            heapq.heappop(covering)
        if covering:
            winner = covering[0][2]
            _append_joined(joined, StateBatch(low, high - 1, winner.state, winner.delivery_count))
    return tuple(joined)


def _append_joined(joined: list[StateBatch], piece: StateBatch) -> None:
    last = joined[-1] if joined else None
    if (
        last is not None
        and last.last_offset + 1 == piece.first_offset
        and (last.state, last.delivery_count) == (piece.state, piece.delivery_count)
    ):
        joined[-1] = StateBatch(last.first_offset, piece.last_offset, last.state, last.delivery_count)
    else:
        joined.append(piece)


# ---- figures over sorted, non-overlapping batches ------------------------------------------------------


def end_offset(start_offset: int, batches: Sequence[StateBatch]) -> int:
    """SPEO as the next offset not yet in flight: one past the last recorded batch, else the start offset.

    Exclusive, like a log end offset and like the KIP-932 worked example (SPEO=110 once 100-109 are
    fetched), so that SPSO == SPEO means nothing is in flight. Kafka's SharePartition keeps an inclusive
    endOffset (last in-flight offset) once it has batches, and the start offset when it has none; the
    exclusive form avoids that switch. Offsets fetched but never recorded are invisible here, so this is a
    lower bound on the broker's live SPEO.
    """
    if not batches:
        return start_offset
    return max(start_offset, max(b.last_offset for b in batches) + 1)


def records_in_state(batches: Iterable[StateBatch], state: int) -> int:
    return sum(b.record_count for b in batches if b.state == state)


def max_delivery_count(batches: Iterable[StateBatch]) -> int | None:
    """None when nothing is in flight: a count of 0 is a real value (acquired once, never recorded as delivered)."""
    return max((b.delivery_count for b in batches), default=None)


def records_at_or_over(batches: Iterable[StateBatch], delivery_count_limit: int) -> int:
    """Records of any state whose delivery count reached the group's limit (group.share.delivery.count.limit).

    Any state, because both matter to an audit: Archived ones are the poison records the limit stopped,
    Available ones will be archived instead of delivered when next acquired.
    """
    return sum(b.record_count for b in batches if b.delivery_count >= delivery_count_limit)


# ---- input checking --------------------------------------------------------------------------------------


def in_log_order(records: list[Mapping[str, object] | None]) -> list[Mapping[str, object] | None]:
    """Sorted by `offset` when every record has an integer one; otherwise as given (sorting half is worse)."""
    if records and all(r is not None and is_int(r.get("offset")) for r in records):
        return sorted(records, key=lambda r: cast("Mapping[str, int]", r)["offset"])  # all checked just above
    return records


def check_batch(first_offset: object, last_offset: object, state: object, delivery_count: object) -> StateBatch | str:
    """A StateBatch, or why these values cannot be one. The state's value is not judged here."""
    values = {"first": first_offset, "last": last_offset, "state": state, "delivery count": delivery_count}
    not_ints = [name for name, value in values.items() if not is_int(value)]
    if not_ints:
        return f"batch {values} has non-integer {', '.join(not_ints)}"
    # All four are ints now, which the checker cannot follow through `values`.
    first_offset, last_offset = cast(int, first_offset), cast(int, last_offset)
    state, delivery_count = cast(int, state), cast(int, delivery_count)
    if first_offset < 0:
        return f"batch {first_offset}-{last_offset} has a negative first offset"
    if last_offset < first_offset:
        return f"batch {first_offset}-{last_offset} ends before it begins"
    if delivery_count < 0:
        return f"batch {first_offset}-{last_offset} has a negative delivery count {delivery_count}"
    return StateBatch(first_offset, last_offset, state, delivery_count)


def state_name(state: int) -> str:
    return DELIVERY_STATE_NAMES.get(state) or UNPERSISTED_STATE_NAMES.get(state) or "unknown"


def _field(raw: Mapping[str, object], name: str) -> object:
    if name in raw:
        return raw[name]
    return raw.get(_ALIASES.get(name, name))


def _check_record(raw: Mapping[str, object] | None) -> ShareRecord | ReplayProblem:
    if raw is None:
        return ReplayProblem(None, None, "not a record (expected a mapping, dataclass or Row)")
    partition = cast(int, raw.get("partition")) if is_int(raw.get("partition")) else None
    offset = cast(int, raw.get("offset")) if is_int(raw.get("offset")) else None
    reason = _record_reason(raw)
    if reason is not None:
        return ReplayProblem(partition, offset, reason)
    batches = _check_batches(_field(raw, "batches")) if raw["kind"] != TOMBSTONE else ()
    if isinstance(batches, str):
        return ReplayProblem(partition, offset, batches)
    # _record_reason checked the kind and the ints it needs; the decoder's rows (and the tables') hold an int
    # or None in each of these.
    return ShareRecord(
        kind=cast(str, raw["kind"]),
        snapshot_epoch=cast("int | None", raw.get("snapshot_epoch")),
        state_epoch=cast("int | None", raw.get("state_epoch")),
        leader_epoch=cast("int | None", raw.get("leader_epoch")),
        start_offset=cast("int | None", raw.get("start_offset")),
        create_timestamp=cast("int | None", raw.get("create_timestamp")),
        write_timestamp=cast("int | None", raw.get("write_timestamp")),
        batches=batches,
        partition=partition,
        offset=offset,
        delivery_complete_count=_delivery_complete_count(raw.get("delivery_complete_count")),
    )


def _delivery_complete_count(value: object) -> int:
    """The record's count; absent (a 4.1 writer, or a reader that does not carry it) is the tag's default."""
    return value if is_int(value) else NO_DELIVERY_COMPLETE_COUNT


def _record_reason(raw: Mapping[str, object]) -> str | None:
    kind = raw.get("kind")
    if kind not in _REQUIRED_INTS:
        return f"unknown record kind {kind!r} (expected snapshot, update or tombstone)"
    missing = [name for name in _REQUIRED_INTS[kind] if not is_int(raw.get(name))]
    if missing:
        return f"{kind} has no integer {', '.join(missing)}"
    bad_times = [n for n in ("create_timestamp", "write_timestamp") if raw.get(n) is not None and not is_int(raw[n])]
    if bad_times:
        return f"{kind} has non-integer {', '.join(bad_times)}"
    return None


def _check_batches(raw: object) -> tuple[StateBatch, ...] | str:
    if raw is None:
        return ()
    if isinstance(raw, (str, bytes, Mapping)) or not isinstance(raw, Iterable):
        return f"batches is not a list: {raw!r}"
    checked = []
    for item in raw:
        values = as_fields(item)
        if values is None:
            return f"batch {item!r} is not a mapping"
        names = ("first_offset", "last_offset", "state", "delivery_count")
        batch = check_batch(*(_field(values, name) for name in names))
        if isinstance(batch, str):
            return batch
        checked.append(batch)
    return tuple(checked)


def unknown_state_problem(partition: int | None, offset: int | None, batch: StateBatch) -> ReplayProblem:
    """A batch in a state Kafka never persists, read at (partition, offset): kept, and reported."""
    return ReplayProblem(
        partition,
        offset,
        f"batch {batch.first_offset}-{batch.last_offset} has delivery state {batch.state} "
        f"({state_name(batch.state)}), which Kafka never persists; kept as Kafka would keep it",
    )


def _unknown_state_problems(record: ShareRecord) -> list[ReplayProblem]:
    return [
        unknown_state_problem(record.partition, record.offset, b)
        for b in record.batches
        if b.state not in DELIVERY_STATE_NAMES
    ]
