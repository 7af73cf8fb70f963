"""Share-partition recovery as the early KIP-932 draft described it: a checkpoint and the deltas chained to it.

The draft (never shipped; reference 8.4) wrote SHARE_CHECKPOINT and SHARE_DELTA control records
into the user topic-partition itself. A dump from a build of that draft can only be audited by replaying
the chain the share-partition leader would have read, so this does exactly that, per (group, topic,
partition), and says where the chain cannot be trusted instead of guessing.

What is applied, in offset order:
- every readable SHARE_CHECKPOINT starts a new chain: its StartOffset, EndOffset and States become the
  state, and its offset becomes the share checkpoint offset (SCO). The result is the latest one's chain.
- a SHARE_DELTA is applied when it is readable, has the latest checkpoint's CheckpointEpoch, its
  BackOffset is the offset of the previous record (checkpoint or delta) of that epoch, and no earlier
  delta of the chain was refused. Its States overlay the state: the delta is newer, so for the offsets it
  names it wins ("applying the records in order", reference 8.4). For the worked example this gives the same
  batches as Kafka 4.1's higher-count-wins merge (state.merge_batches); they differ only if a writer
  lowered a delivery count, which this does not judge.

What is not applied, each reported as a ChainProblem with its coordinates and reason:
- an unreadable record (missing field, wrong type, LastOffset < BaseOffset, negative offset or count, a
  State other than 0/2/4, States overlapping inside the record, unknown type). An unreadable checkpoint
  is ignored as if absent, so recovery falls back to the previous readable one and its chain, which is
  also the safe cut-off for cleaning.
- a delta before any checkpoint.
- a delta of an unknown epoch: one other than the epoch of the latest readable checkpoint before it
  (whether or not a checkpoint of its own epoch exists somewhere earlier). Deltas of an older epoch
  that precede the newer checkpoint are simply superseded, not problems.
- a delta whose BackOffset does not point at the previous record of its epoch.
- once one delta of the chain is refused, every later delta of that chain: the state after a missing
  link is unknown, so the result stops at `recovered_through`. A new checkpoint starts clean.

Acquired is never recorded (reference 8.4: "an Acquired record with a delivery count of 1 is recorded as
Available with a delivery count of 0"): in-flight deliveries recover as Available with the recorded count,
and offsets fetched but never recorded are simply absent, to be delivered again.

SPSO moves the way the worked example moves it ("Acknowledge 110 -> SPSO=111", "Acknowledge 111,112 ->
SPSO=120"), which is also how Kafka's SharePartition moves its start offset: from SPSO forward over
every contiguous Acknowledged or Archived offset, stopping at the first Available one or at an offset with
no recorded state (fetched, first delivery, unrecorded). States before SPSO (a checkpoint's or a delta's) are
dropped: those offsets are done.
SPEO is exclusive (state.end_offset): the latest of the checkpoint's EndOffset, one past the last
recorded batch, and SPSO; never lowered by a delta.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from itertools import pairwise
from typing import TypeGuard, TypeVar, cast

from offset_audit.decoding.share_records import StateBatch
from offset_audit.share_coordinator.share_partition import (
    DELIVERY_STATE_NAMES,
    TERMINAL_STATES,
    as_fields,
    check_batch,
    cover_by_priority,
    end_offset,
    is_int,
    prune_before,
    state_name,
)

# The draft's control record types (5 and 6 there; in shipped Kafka 5 and 6 are KRaft records, reference 2.9).
SHARE_CHECKPOINT = "SHARE_CHECKPOINT"
SHARE_DELTA = "SHARE_DELTA"
CHECKPOINT_EPOCH_MAX = 0xFFFF  # CheckpointEpoch is a uint16 in ShareDeltaValue
DELIVERY_COUNT_MAX = 0x7FFF  # DeliveryCount is an int16
_T = TypeVar("_T")
# Ranked batches -> the sorted, non-overlapping pieces where each offset takes its highest-ranked batch.
Cover = Callable[[Iterable[tuple[tuple[int, ...], StateBatch]]], tuple[StateBatch, ...]]


@dataclass(frozen=True)
class ControlRecord:
    """One control record as read; fields that could not be read are None and `invalid` says why."""

    topic: str | None
    partition: int | None
    offset: int | None
    kind: str | None
    group_id: str | None
    checkpoint_epoch: int | None
    back_offset: int | None
    start_offset: int | None
    end_offset: int | None
    batches: tuple[StateBatch, ...]
    invalid: str | None

    @property
    def share_partition(self) -> tuple[str | None, str | None, int | None]:
        return (self.group_id, self.topic, self.partition)


@dataclass(frozen=True)
class ChainProblem:
    """A record that was not applied (or could not be placed), and why."""

    topic: str | None
    partition: int | None
    offset: int | None
    reason: str


@dataclass(frozen=True)
class ChainResult:
    """A share-partition's state as recovered from its control records.

    The state fields are None when no readable checkpoint exists. `recovered_through` is the offset of
    the last record applied: when it is below the last record of the chain, the state is as of that point.
    """

    group_id: str | None
    topic: str | None
    partition: int | None
    checkpoint_epoch: int | None
    share_checkpoint_offset: int | None
    start_offset: int | None
    end_offset: int | None
    batches: tuple[StateBatch, ...]
    recovered_through: int | None
    problems: tuple[ChainProblem, ...]


@dataclass(frozen=True)
class _Chain:
    epoch: int
    checkpoint_offset: int
    start_offset: int
    end_offset: int
    batches: tuple[StateBatch, ...]
    previous_offset: int | None
    recovered_through: int
    broken: str | None = None


def replay_chain(records: Iterable[object], cover: Cover = cover_by_priority) -> ChainResult:
    """Recover one share-partition from its control records (mappings, dataclasses or Spark Rows).

    The share-partition is the first record's that names one completely; records of another are
    reported and skipped. Records are taken in offset order whatever order they come in. `cover` is
    the overlay of ranked batches: `share_partition.cover_by_priority`, or the same over numpy arrays
    (`offset_audit.share_coordinator.cover.cover_ranked`, the `[decode] fast_path` one); tests hold both to the chain.
    """
    parsed = [parse_control_record(r) for r in records]
    share_partition = next((r.share_partition for r in parsed if None not in r.share_partition), (None, None, None))
    problems: list[ChainProblem] = []
    chain: _Chain | None = None
    reason: str | None
    for record in sorted(parsed, key=lambda r: (r.offset is None, r.offset or 0)):
        if None not in record.share_partition and record.share_partition != share_partition:
            reason = f"belongs to share-partition {record.share_partition}, not {share_partition}"
            problems.append(_problem(record, reason))
        elif record.kind == SHARE_CHECKPOINT and record.invalid is None:
            chain = _start_chain(record, cover)
        else:
            reason = _refusal(record, chain)
            if reason is None:
                # _refusal refuses every record while there is no chain.
                chain = _apply_delta(cast(_Chain, chain), record, cover)
            else:
                problems.append(_problem(record, reason))
                chain = _after_refusal(chain, record)
    return _result(share_partition, chain, problems)


# ---- the chain ----------------------------------------------------------------------------------------


def _start_chain(checkpoint: ControlRecord, cover: Cover) -> _Chain:
    # Only a readable checkpoint starts a chain, and _field_reasons let none through without these ints.
    batches = cover(((0,), b) for b in prune_before(checkpoint.batches, cast(int, checkpoint.start_offset)))
    start, batches = _advance(cast(int, checkpoint.start_offset), batches)
    return _Chain(
        epoch=cast(int, checkpoint.checkpoint_epoch),
        checkpoint_offset=cast(int, checkpoint.offset),
        start_offset=start,
        end_offset=max(cast(int, checkpoint.end_offset), end_offset(start, batches)),
        batches=batches,
        previous_offset=checkpoint.offset,
        recovered_through=cast(int, checkpoint.offset),
    )


def _apply_delta(chain: _Chain, delta: ControlRecord, cover: Cover) -> _Chain:
    # Rank 1 over rank 0: for the offsets it names, the newer record's state replaces the older one's.
    merged = cover([((0,), b) for b in chain.batches] + [((1,), b) for b in delta.batches])
    start, batches = _advance(chain.start_offset, merged)
    return replace(
        chain,
        start_offset=start,
        end_offset=max(chain.end_offset, end_offset(start, batches)),
        batches=batches,
        previous_offset=delta.offset,
        recovered_through=cast(int, delta.offset),  # a delta _refusal let through is readable: it has one
    )


def _advance(start_offset: int, batches: tuple[StateBatch, ...]) -> tuple[int, tuple[StateBatch, ...]]:
    """Move SPSO over the contiguous finished offsets at its front; drop what it passed."""
    for batch in batches:
        if batch.last_offset < start_offset:
            continue
        if batch.first_offset > start_offset or batch.state not in TERMINAL_STATES:
            break
        start_offset = batch.last_offset + 1
    return start_offset, tuple(prune_before(batches, start_offset))


def _refusal(record: ControlRecord, chain: _Chain | None) -> str | None:
    """Why a record cannot be applied to the chain, or None; checked in the order a reader would trip on them."""
    if record.invalid is not None:
        return record.invalid
    if chain is None:
        return "SHARE_DELTA before any SHARE_CHECKPOINT: there is no state to apply it to"
    if record.checkpoint_epoch != chain.epoch:
        return (
            f"unknown epoch: CheckpointEpoch {record.checkpoint_epoch} is not the epoch {chain.epoch} "
            f"of the latest SHARE_CHECKPOINT (offset {chain.checkpoint_offset})"
        )
    if chain.broken is not None:
        return f"the chain of epoch {chain.epoch} broke {chain.broken}: nothing after that is applied"
    if record.back_offset != chain.previous_offset:
        return (
            f"BackOffset {record.back_offset} does not point at the previous record of epoch {chain.epoch} "
            f"(offset {chain.previous_offset})"
        )
    return None


def _after_refusal(chain: _Chain | None, record: ControlRecord) -> _Chain | None:
    """A refused delta of the chain's epoch is still its latest link: the chain is broken from there on."""
    if chain is None or record.kind != SHARE_DELTA or record.checkpoint_epoch != chain.epoch:
        return chain
    broken = chain.broken or f"at offset {record.offset}"
    return replace(chain, previous_offset=record.offset, broken=broken)


def _result(share_partition: tuple, chain: _Chain | None, problems: list[ChainProblem]) -> ChainResult:
    group_id, topic, partition = share_partition
    if chain is None:
        return ChainResult(group_id, topic, partition, None, None, None, None, (), None, tuple(problems))
    return ChainResult(
        group_id=group_id,
        topic=topic,
        partition=partition,
        checkpoint_epoch=chain.epoch,
        share_checkpoint_offset=chain.checkpoint_offset,
        start_offset=chain.start_offset,
        end_offset=chain.end_offset,
        batches=chain.batches,
        recovered_through=chain.recovered_through,
        problems=tuple(problems),
    )


def _problem(record: ControlRecord, reason: str) -> ChainProblem:
    return ChainProblem(record.topic, record.partition, record.offset, reason)


# ---- reading one record ---------------------------------------------------------------------------------


def parse_control_record(raw: object) -> ControlRecord:
    """Read every field that can be read and collect, rather than raise on, everything that cannot."""
    values = as_fields(raw)
    if values is None:
        return ControlRecord(None, None, None, None, None, None, None, None, None, (), f"not a record: {raw!r}")
    kind = cast(str, values.get("type")) if values.get("type") in (SHARE_CHECKPOINT, SHARE_DELTA) else None
    batches, batch_reasons = _read_states(values.get("States"))
    reasons = _field_reasons(values, kind) + batch_reasons
    return ControlRecord(
        topic=_typed(values.get("topic"), str),
        partition=_integer(values.get("partition")),
        offset=_integer(values.get("offset")),
        kind=kind,
        group_id=_typed(values.get("GroupId"), str),
        checkpoint_epoch=_integer(values.get("CheckpointEpoch")),
        back_offset=_integer(values.get("BackOffset")),
        start_offset=_integer(values.get("StartOffset")),
        end_offset=_integer(values.get("EndOffset")),
        batches=batches,
        invalid="; ".join(reasons) or None,
    )


def _field_reasons(values: Mapping[str, object], kind: str | None) -> list[str]:
    reasons = []
    if kind is None:
        reasons.append(f"type {values.get('type')!r} is neither {SHARE_CHECKPOINT} nor {SHARE_DELTA}")
    for name in ("topic", "GroupId"):
        if not isinstance(values.get(name), str):
            reasons.append(f"{name} is missing or not a string")
    offsets = ["partition", "offset"]
    offsets += ["BackOffset"] if kind == SHARE_DELTA else ["StartOffset", "EndOffset"] if kind else []
    reasons += [
        f"{name} is missing or not a non-negative integer" for name in offsets if not _natural(values.get(name))
    ]
    epoch = values.get("CheckpointEpoch")
    if not (is_int(epoch) and 0 <= epoch <= CHECKPOINT_EPOCH_MAX):
        reasons.append(f"CheckpointEpoch {epoch!r} is not a uint16")
    start, end = values.get("StartOffset"), values.get("EndOffset")
    if kind == SHARE_CHECKPOINT and _natural(start) and _natural(end) and end < start:
        reasons.append(f"EndOffset {end} is before StartOffset {start}")
    return reasons


def _read_states(raw: object) -> tuple[tuple[StateBatch, ...], list[str]]:
    if not isinstance(raw, list | tuple):
        return (), [f"States is missing or not a list: {raw!r}"]
    batches: list[StateBatch] = []
    reasons: list[str] = []
    for item in raw:
        values = as_fields(item) or {}
        names = ("BaseOffset", "LastOffset", "State", "DeliveryCount")
        batch = check_batch(*(values.get(name) for name in names))
        if isinstance(batch, str):
            reasons.append(batch)
        elif batch.state not in DELIVERY_STATE_NAMES:
            reasons.append(
                f"batch {batch.first_offset}-{batch.last_offset} has State {batch.state} "
                f"({state_name(batch.state)}), never recorded"
            )
        elif batch.delivery_count > DELIVERY_COUNT_MAX:
            reasons.append(f"batch {batch.first_offset}-{batch.last_offset} DeliveryCount is not an int16")
        else:
            batches.append(batch)
    return _without_overlaps(batches, reasons)


def _without_overlaps(batches: list[StateBatch], reasons: list[str]) -> tuple[tuple[StateBatch, ...], list[str]]:
    """One record states each offset once; two states for one offset leave nothing to apply."""
    ordered = sorted(batches, key=lambda b: (b.first_offset, b.last_offset))
    for before, after in pairwise(ordered):
        if after.first_offset <= before.last_offset:
            first, second = f"{before.first_offset}-{before.last_offset}", f"{after.first_offset}-{after.last_offset}"
            reasons.append(f"States overlap: {first} and {second}")
    return tuple(ordered), reasons


def _integer(value: object) -> int | None:
    return value if is_int(value) else None


def _natural(value: object) -> TypeGuard[int]:
    return is_int(value) and value >= 0


def _typed(value: object, expected: type[_T]) -> _T | None:
    return value if isinstance(value, expected) else None
