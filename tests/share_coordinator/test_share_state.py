"""Kafka 4.1's replay of `__share_group_state` (reference 2.10), rule by rule, plus Kafka's own merge cases."""

from __future__ import annotations

import random
from itertools import pairwise

import pytest

from offset_audit.decoding.share_records import StateBatch
from offset_audit.share_coordinator import cover
from offset_audit.share_coordinator.share_partition import (
    ShareRecord,
    cover_by_priority,
    end_offset,
    merge_batches,
    replay,
    replay_checked,
)

AVAILABLE, ACKNOWLEDGED, ARCHIVED = 0, 2, 4


def batches(*runs: tuple[int, int, int, int]) -> tuple[StateBatch, ...]:
    return tuple(StateBatch(*run) for run in runs)


def snapshot(start: int, *runs, offset: int = 0, **overrides) -> ShareRecord:
    values = dict(snapshot_epoch=1, state_epoch=3, leader_epoch=5, start_offset=start, create_timestamp=1000)
    values |= dict(write_timestamp=2000, batches=batches(*runs), partition=7, offset=offset)
    return ShareRecord(kind="snapshot", **(values | overrides))


def update(start: int, *runs, offset: int = 0, leader_epoch: int = -1, snapshot_epoch: int = 1) -> ShareRecord:
    return ShareRecord(
        kind="update",
        snapshot_epoch=snapshot_epoch,
        leader_epoch=leader_epoch,
        start_offset=start,
        batches=batches(*runs),
        partition=7,
        offset=offset,
    )


def tombstone(offset: int = 0) -> ShareRecord:
    return ShareRecord(kind="tombstone", partition=7, offset=offset)


# ---- replay rules -----------------------------------------------------------------------------------------


def test_no_records_means_no_state():
    assert replay([]) is None


def test_snapshot_replaces_the_whole_state():
    state = replay([snapshot(100, (100, 109, AVAILABLE, 1), offset=1), snapshot(50, (60, 60, ARCHIVED, 5), offset=2)])
    assert (state.start_offset, state.batches) == (50, batches((60, 60, ARCHIVED, 5)))
    assert (state.snapshot_epoch, state.state_epoch, state.leader_epoch) == (1, 3, 5)
    assert (state.create_timestamp, state.write_timestamp) == (1000, 2000)


def test_snapshot_batches_are_kept_as_written():
    # Kafka stores a snapshot's batches untouched, even ones before its start offset.
    state = replay([snapshot(105, (100, 109, AVAILABLE, 1))])
    assert state.batches == batches((100, 109, AVAILABLE, 1))
    assert state.effective_batches == batches((105, 109, AVAILABLE, 1))
    assert state.available_records == 5


def test_snapshot_from_4_0_has_no_timestamps():
    state = replay([snapshot(0, create_timestamp=None, write_timestamp=None)])
    assert (state.create_timestamp, state.write_timestamp) == (None, None)


def test_update_keeps_epochs_and_timestamps_and_takes_start_offset_and_leader_epoch():
    state = replay([snapshot(100, offset=1), update(110, leader_epoch=9, snapshot_epoch=4, offset=2)])
    assert (state.start_offset, state.leader_epoch) == (110, 9)
    assert (state.snapshot_epoch, state.state_epoch) == (1, 3)
    assert (state.create_timestamp, state.write_timestamp) == (1000, 2000)


def test_update_with_minus_one_keeps_start_offset_and_leader_epoch():
    state = replay([snapshot(100, offset=1), update(-1, (100, 104, ACKNOWLEDGED, 1), leader_epoch=-1, offset=2)])
    assert (state.start_offset, state.leader_epoch) == (100, 5)
    assert state.batches == batches((100, 104, ACKNOWLEDGED, 1))


def test_update_without_state_builds_from_the_update_alone_with_state_epoch_zero():
    lone = update(100, (105, 109, ARCHIVED, 2), (100, 104, AVAILABLE, 1), leader_epoch=4, snapshot_epoch=6)
    state = replay([lone])
    assert (state.snapshot_epoch, state.state_epoch, state.leader_epoch, state.start_offset) == (6, 0, 4, 100)
    assert (state.create_timestamp, state.write_timestamp) == (0, 0)
    # Taken as written, unsorted, like Kafka's ShareGroupOffset.fromRecord(ShareUpdateValue).
    assert state.batches == batches((105, 109, ARCHIVED, 2), (100, 104, AVAILABLE, 1))


def test_an_update_moving_the_start_offset_back_is_applied_and_reported():
    """Kafka before 4.4 persists an out-of-order state write as it comes (apache/kafka#23074): the replay
    takes the lower start offset as the broker's does, and says so with where the record is."""
    result = replay_checked(
        [
            snapshot(100, (100, 109, ACKNOWLEDGED, 1), offset=1),
            update(120, offset=2),
            update(-1, offset=3),  # leaves the start offset: not a move
            update(110, (110, 112, AVAILABLE, 1), offset=4),  # back from 120
            update(115, offset=5),  # forward again
            update(-5, offset=6),  # prunes nothing, like 0: back from 115
        ]
    )
    assert result.start_offset_moves_back == 2
    assert [(p.partition, p.offset) for p in result.problems] == [(7, 4), (7, 6)]
    assert "back from 120 to 110" in result.problems[0].reason and "records 110-119" in result.problems[0].reason
    assert "back from 115 to -5" in result.problems[1].reason and "records 0-114" in result.problems[1].reason
    assert result.state.start_offset == -5


def test_no_move_back_without_a_state_before_or_from_a_snapshot():
    assert replay_checked([update(50, offset=1), update(60, offset=2)]).start_offset_moves_back == 0
    after_tombstone = [update(50, offset=1), tombstone(offset=2), update(10, offset=3)]
    assert replay_checked(after_tombstone).start_offset_moves_back == 0
    assert replay_checked([update(50, offset=1), snapshot(10, offset=2)]).start_offset_moves_back == 0  # a reset
    assert replay_checked([snapshot(-1, offset=1), update(0, offset=2)]).start_offset_moves_back == 0


def test_tombstone_deletes_the_state():
    assert replay([snapshot(100, (100, 109, AVAILABLE, 1), offset=1), tombstone(offset=2)]) is None


def test_update_after_a_tombstone_starts_from_nothing():
    state = replay([snapshot(100, (100, 109, AVAILABLE, 1), offset=1), tombstone(offset=2), update(200, offset=3)])
    assert (state.start_offset, state.state_epoch, state.batches) == (200, 0, ())


def test_records_are_replayed_in_offset_order():
    state = replay([update(120, offset=3), snapshot(100, offset=1), update(110, offset=2)])
    assert state.start_offset == 120


def test_records_may_be_plain_dicts_in_the_decoders_shape():
    rows = [
        {"kind": "snapshot", "snapshot_epoch": 0, "state_epoch": 1, "leader_epoch": 0, "start_offset": 10, "offset": 1},
        {
            "kind": "update",
            "snapshot_epoch": 0,
            "leader_epoch": 0,
            "start_offset": -1,
            "offset": 2,
            "state_batches": [{"first_offset": 10, "last_offset": 12, "delivery_state": 2, "delivery_count": 1}],
        },
    ]
    state = replay(rows)
    assert (state.start_offset, state.batches, state.create_timestamp) == (10, batches((10, 12, 2, 1)), None)


# ---- the merge rule ---------------------------------------------------------------------------------------


def test_update_drops_batches_ending_before_the_new_start_and_cuts_the_straddling_one():
    state = replay([snapshot(100, (100, 104, AVAILABLE, 1), (105, 114, AVAILABLE, 2), offset=1), update(110, offset=2)])
    assert state.batches == batches((110, 114, AVAILABLE, 2))


def test_higher_delivery_count_wins_even_over_a_newer_record():
    state = replay([snapshot(0, (0, 9, AVAILABLE, 3), offset=1), update(-1, (5, 14, ACKNOWLEDGED, 2), offset=2)])
    assert state.batches == batches((0, 9, AVAILABLE, 3), (10, 14, ACKNOWLEDGED, 2))


def test_on_equal_delivery_counts_the_higher_state_wins():
    state = replay([snapshot(0, (0, 9, ARCHIVED, 2), offset=1), update(-1, (0, 9, ACKNOWLEDGED, 2), offset=2)])
    assert state.batches == batches((0, 9, ARCHIVED, 2))
    state = replay([snapshot(0, (0, 9, AVAILABLE, 2), offset=1), update(-1, (3, 4, ACKNOWLEDGED, 2), offset=2)])
    assert state.batches == batches((0, 2, AVAILABLE, 2), (3, 4, ACKNOWLEDGED, 2), (5, 9, AVAILABLE, 2))


def test_merged_batches_are_sorted_and_adjacent_equal_ones_joined():
    state = replay(
        [
            snapshot(0, (20, 29, AVAILABLE, 1), offset=1),
            update(-1, (10, 19, AVAILABLE, 1), (0, 4, ACKNOWLEDGED, 1), (5, 9, ACKNOWLEDGED, 1), offset=2),
        ]
    )
    assert state.batches == batches((0, 9, ACKNOWLEDGED, 1), (10, 29, AVAILABLE, 1))


def test_start_offset_minus_one_prunes_nothing():
    assert merge_batches(batches((0, 9, AVAILABLE, 1)), (), -1) == batches((0, 9, AVAILABLE, 1))


# Kafka's PersisterStateBatchCombinerTest (4.1 and master), re-expressed as data:
# (name, batches so far, new batches, start offset, expected), each batch (first, last, state, count).
# In 4.1 only one case ran (the others had shouldRun=false); "overlapping batches in newBatches, same state"
# expected no 124-130 there, which the 4.1 algorithm itself keeps. KAFKA-20690 fixed the expectation on master.
# fmt: off
KAFKA_COMBINER_CASES = [
    ("start offset midway prunes current", [(100, 130, 0, 1)], [], 120, [(120, 130, 0, 1)]),
    ("start offset midway prunes new", [], [(100, 130, 0, 1)], 120, [(120, 130, 0, 1)]),
    ("both empty", [], [], 120, []),
    ("duplicate equal batches do not fill the gap", [(100, 110, 0, 1)], [(100, 110, 0, 1), (120, 130, 2, 1)], -1,
     [(100, 110, 0, 1), (120, 130, 2, 1)]),
    ("duplicate state-2 batches do not fill the gap", [(0, 5, 2, 1)], [(0, 5, 2, 1), (11, 15, 0, 1)], -1,
     [(0, 5, 2, 1), (11, 15, 0, 1)]),
    ("duplicate state-0 batches do not fill the gap", [(0, 5, 0, 1)], [(0, 5, 0, 1), (11, 15, 0, 1)], -1,
     [(0, 5, 0, 1), (11, 15, 0, 1)]),
    ("same state, same offsets", [(100, 110, 0, 1)], [(100, 110, 0, 1)], -1, [(100, 110, 0, 1)]),
    ("same state, same first, new shorter", [(100, 110, 0, 1)], [(100, 105, 0, 1)], -1, [(100, 110, 0, 1)]),
    ("same state, same first, new longer", [(100, 110, 0, 1)], [(100, 115, 0, 1)], -1, [(100, 115, 0, 1)]),
    ("same state, new inside", [(100, 110, 0, 1)], [(105, 108, 0, 1)], -1, [(100, 110, 0, 1)]),
    ("same state, new shares last", [(100, 110, 0, 1)], [(105, 110, 0, 1)], -1, [(100, 110, 0, 1)]),
    ("same state, new overlaps past", [(100, 110, 0, 1)], [(105, 115, 0, 1)], -1, [(100, 115, 0, 1)]),
    ("same state, contiguous", [(100, 110, 0, 1)], [(111, 115, 0, 1)], -1, [(100, 115, 0, 1)]),
    ("overlapping new batches, same state", [(100, 110, 0, 1), (121, 130, 0, 1)], [(111, 119, 2, 2), (116, 123, 2, 2)],
     -1, [(100, 110, 0, 1), (111, 123, 2, 2), (124, 130, 0, 1)]),
    ("overlapping new batches, different priority", [(100, 110, 0, 1)],
     [(101, 105, 1, 2), (101, 115, 2, 2), (101, 120, 3, 2)], -1, [(100, 100, 0, 1), (101, 120, 3, 2)]),
    ("overlapping new batches, with pruning", [(100, 110, 0, 1), (121, 130, 0, 1)],
     [(111, 119, 2, 2), (116, 123, 2, 2)], 120, [(120, 123, 2, 2), (124, 130, 0, 1)]),
    ("multiple higher state updates", [(111, 120, 0, 1)], [(111, 113, 0, 2), (114, 114, 2, 1), (115, 119, 0, 2)], -1,
     [(111, 113, 0, 2), (114, 114, 2, 1), (115, 119, 0, 2), (120, 120, 0, 1)]),
    ("new higher, same offsets", [(100, 110, 0, 1)], [(100, 110, 0, 2)], -1, [(100, 110, 0, 2)]),
    ("new lower, same offsets", [(100, 110, 0, 3)], [(100, 110, 0, 1)], -1, [(100, 110, 0, 3)]),
    ("new higher, same first, shorter", [(100, 110, 0, 1)], [(100, 105, 0, 2)], -1,
     [(100, 105, 0, 2), (106, 110, 0, 1)]),
    ("new lower, same first, shorter", [(100, 110, 0, 3)], [(100, 105, 0, 1)], -1, [(100, 110, 0, 3)]),
    ("new higher, same first, longer", [(100, 110, 0, 1)], [(100, 115, 0, 2)], -1, [(100, 115, 0, 2)]),
    ("new lower, same first, longer", [(100, 110, 0, 3)], [(100, 115, 0, 1)], -1,
     [(100, 110, 0, 3), (111, 115, 0, 1)]),
    ("new higher, inside", [(100, 115, 0, 1)], [(105, 110, 1, 1)], -1,
     [(100, 104, 0, 1), (105, 110, 1, 1), (111, 115, 0, 1)]),
    ("new lower, inside", [(100, 115, 1, 1)], [(105, 110, 0, 1)], -1, [(100, 115, 1, 1)]),
    ("new higher, shares last", [(100, 110, 0, 1)], [(105, 110, 0, 2)], -1, [(100, 104, 0, 1), (105, 110, 0, 2)]),
    ("new lower, shares last", [(100, 110, 0, 2)], [(105, 110, 0, 1)], -1, [(100, 110, 0, 2)]),
    ("new higher, overlaps past", [(100, 110, 0, 1)], [(105, 115, 0, 2)], -1, [(100, 104, 0, 1), (105, 115, 0, 2)]),
    ("new lower, overlaps past", [(100, 110, 0, 2)], [(105, 115, 0, 1)], -1, [(100, 110, 0, 2), (111, 115, 0, 1)]),
]
# fmt: on


# The exact merge (state.py) and the numpy one the folded replay uses (cover.py) are held to the same cases.
MERGES = pytest.mark.parametrize("merge", [merge_batches, cover.merge_batches], ids=["exact", "vectorised"])


@MERGES
@pytest.mark.parametrize(
    ("so_far", "new", "start", "expected"),
    [case[1:] for case in KAFKA_COMBINER_CASES],
    ids=[c[0] for c in KAFKA_COMBINER_CASES],
)
def test_merge_matches_kafkas_combiner_cases(merge, so_far, new, start, expected):
    assert merge(batches(*so_far), batches(*new), start) == batches(*expected)


def test_non_sequential_updates_do_not_lose_an_unacknowledged_batch():
    # ShareCoordinatorShardTest.testNonSequentialBatchUpdates: b1 acked, start moves to 110, b3 acked; b2 stays.
    # Kafka writes snapshots there (updates per snapshot = 0); the same writes as updates merge the same way.
    records = [
        snapshot(100, (100, 109, 1, 1), (110, 119, 1, 2), (120, 129, 1, 0), offset=1, state_epoch=0, leader_epoch=0),
        update(-1, (100, 109, ACKNOWLEDGED, 1), leader_epoch=0, offset=2),
        update(110, (120, 129, ACKNOWLEDGED, 1), leader_epoch=0, offset=3),
    ]
    result = replay_checked(records)
    assert result.state.start_offset == 110
    assert result.state.batches == batches((110, 119, 1, 2), (120, 129, ACKNOWLEDGED, 1))
    assert {p.offset for p in result.problems} == {1}  # state 1 (Acquired) is reported where it was written


@MERGES
def test_merge_is_the_per_offset_rule_on_random_batches(merge):
    # The sweep must agree with the rule stated offset by offset, whatever the overlaps.
    rng = random.Random(932)
    for _ in range(300):
        runs = []
        for _ in range(rng.randint(0, 6)):
            first = rng.randint(0, 30)
            runs.append(StateBatch(first, first + rng.randint(0, 8), rng.choice((0, 2, 4)), rng.randint(0, 3)))
        start = rng.choice((-1, rng.randint(0, 30)))
        winner: dict[int, tuple[int, int]] = {}
        for run in runs:
            for offset in range(max(run.first_offset, start), run.last_offset + 1):
                winner[offset] = max(winner.get(offset, (-1, -1)), (run.delivery_count, run.state))
        merged = merge(runs[:2], runs[2:], start)
        per_offset = {o: (b.delivery_count, b.state) for b in merged for o in range(b.first_offset, b.last_offset + 1)}
        assert per_offset == winner
        assert all(a.last_offset < b.first_offset for a, b in pairwise(merged))
        joinable = [
            (a, b)
            for a, b in pairwise(merged)
            if a.last_offset + 1 == b.first_offset and (a.state, a.delivery_count) == (b.state, b.delivery_count)
        ]
        assert not joinable


# ---- figures ----------------------------------------------------------------------------------------------


def test_counts_per_state_and_delivery_figures():
    state = replay(
        [
            snapshot(
                100, (100, 101, ACKNOWLEDGED, 1), (102, 106, AVAILABLE, 2), (107, 107, ARCHIVED, 5), (110, 119, 0, 0)
            )
        ]
    )
    assert (state.available_records, state.acknowledged_records, state.archived_records) == (15, 2, 1)
    assert state.max_delivery_count == 5
    assert state.records_at_or_over(2) == 6
    assert state.records_at_or_over(5) == 1
    assert state.records_at_or_over(6) == 0


def test_no_batches_has_no_max_delivery_count():
    assert replay([snapshot(100)]).max_delivery_count is None


def test_end_offset_is_one_past_the_last_batch():
    assert replay([snapshot(100, (100, 104, ACKNOWLEDGED, 1), (110, 119, AVAILABLE, 1))]).end_offset == 120


def test_end_offset_is_the_start_offset_without_batches():
    assert replay([snapshot(100)]).end_offset == 100
    assert replay([snapshot(-1)]).end_offset == -1  # initialised, never started: Kafka writes start offset -1
    assert end_offset(-1, batches((5, 9, AVAILABLE, 1))) == 10


# ---- problems, never exceptions ---------------------------------------------------------------------------


def test_unknown_state_is_reported_and_kept():
    result = replay_checked([snapshot(0, (0, 4, AVAILABLE, 1), (5, 6, 7, 1), offset=42)])
    assert result.state.unknown_state_records == 2
    assert result.state.unknown_states == (7,)
    assert result.state.available_records == 5
    [problem] = result.problems
    assert (problem.partition, problem.offset) == (7, 42)
    assert "delivery state 7" in problem.reason


@pytest.mark.parametrize(
    ("record", "words"),
    [
        ({"kind": "snapshot", "state_epoch": 0, "leader_epoch": 0, "start_offset": 0}, "no integer snapshot_epoch"),
        ({"kind": "update", "snapshot_epoch": 0, "leader_epoch": "1", "start_offset": 0}, "no integer leader_epoch"),
        ({"kind": "update", "snapshot_epoch": True, "leader_epoch": 0, "start_offset": 0}, "snapshot_epoch"),
        ({"kind": "commit"}, "unknown record kind 'commit'"),
        (
            {"kind": "snapshot", "snapshot_epoch": 0, "state_epoch": 0, "leader_epoch": 0, "start_offset": 0}
            | {"create_timestamp": "yesterday"},
            "non-integer create_timestamp",
        ),
        (
            {"kind": "update", "snapshot_epoch": 0, "leader_epoch": 0, "start_offset": 0, "batches": "0-9"},
            "not a list",
        ),
        (
            {"kind": "update", "snapshot_epoch": 0, "leader_epoch": 0, "start_offset": 0}
            | {"batches": [{"first_offset": 9, "last_offset": 5, "state": 0, "delivery_count": 1}]},
            "ends before it begins",
        ),
        (
            {"kind": "update", "snapshot_epoch": 0, "leader_epoch": 0, "start_offset": 0}
            | {"batches": [{"first_offset": 0, "last_offset": 5, "state": 0, "delivery_count": -1}]},
            "negative delivery count",
        ),
        (
            {"kind": "update", "snapshot_epoch": 0, "leader_epoch": 0, "start_offset": 0}
            | {"batches": [{"first_offset": 0, "last_offset": 5, "state": 0}]},
            "non-integer delivery count",
        ),
        ("not a record", "not a record"),
    ],
)
def test_malformed_record_is_reported_and_skipped(record, words):
    good = {"kind": "snapshot", "snapshot_epoch": 0, "state_epoch": 0, "leader_epoch": 0, "start_offset": 10}
    result = replay_checked([good, record])
    assert result.state.start_offset == 10
    [problem] = result.problems
    assert words in problem.reason


def test_vectorised_cover_picks_the_same_batch_as_the_exact_one_on_ties():
    # The KIP draft's chain ranks by record order, so equal ranks must resolve to the same batch.
    rng = random.Random(4)
    for _ in range(300):
        ranked = []
        for _ in range(rng.randint(0, 7)):
            first = rng.randint(0, 30)
            batch = StateBatch(first, first + rng.randint(0, 9), rng.choice((0, 2, 4, 1)), rng.randint(0, 3))
            ranked.append(((rng.randint(0, 1),), batch))
        assert cover.cover_ranked(ranked) == cover_by_priority(ranked)
