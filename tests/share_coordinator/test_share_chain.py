"""The KIP-932 draft's checkpoint/delta chain (reference 8.4), replayed as the share-partition leader would."""

from __future__ import annotations

import sys
from functools import partial

import pytest
from draft_chain_records import (
    ACKNOWLEDGED,
    ARCHIVED,
    AVAILABLE,
    NEW_CHECKPOINT_137,
    WORKED_EXAMPLE,
    checkpoint,
    delta,
    state,
)

from offset_audit.decoding.share_records import StateBatch
from offset_audit.share_coordinator import cover, draft_chain
from offset_audit.share_coordinator.draft_chain import (
    ChainResult,
    parse_control_record,
    replay_chain,
)
from offset_audit.share_coordinator.share_partition import cover_by_priority, merge_batches


@pytest.fixture(autouse=True, params=[cover_by_priority, cover.cover_ranked], ids=["exact", "vectorised"])
def both_covers(request, monkeypatch):
    """Every chain test runs with the exact overlay and with the numpy one (`[decode] fast_path`)."""
    module = sys.modules[__name__]
    monkeypatch.setattr(module, "replay_chain", partial(draft_chain.replay_chain, cover=request.param))


def recovered(result: ChainResult) -> tuple[int, int, list[tuple[int, int, int, int]]]:
    batches = [(b.first_offset, b.last_offset, b.state, b.delivery_count) for b in result.batches]
    return result.start_offset, result.end_offset, batches


# After each record: (SPSO, SPEO, batches) as far as the records say. Acquired and never recorded is absent;
# recorded Acquired is Available with its recorded count; SPEO is one past what is recorded.
# fmt: off
EXPECTED_AFTER = {
    # seed: "SPSO=100, SPEO=100" -- but the checkpoint it shows says StartOffset 110, EndOffset 110 (seed's own slip)
    130: (110, 110, []),
    # seed: "SPSO=110, SPEO=110" (100-109 are before SPSO 110 already: nothing to apply)
    131: (110, 110, []),
    # seed: "SPSO=110, SPEO=120, record 110 (available, delivery count 1), records 111-119 (acquired, delivery count 1)"
    #       and "the SPEO in the control records is 111 at this point"
    132: (110, 111, [(110, 110, AVAILABLE, 1)]),
    # seed: "SPSO=110, SPEO=120, record 110 (available, delivery count 1), records 111-118 (acquired, delivery
    #       count 1), record 119 acknowledged" -- 111-118 recorded as Available, count 0
    133: (110, 120, [(110, 110, AVAILABLE, 1), (111, 118, AVAILABLE, 0), (119, 119, ACKNOWLEDGED, 1)]),
    # seed: "SPSO=110, SPEO=121, record 110 (acquired, delivery count 2), records 111-112 (available, delivery
    #       count 1), records 113-118 (acquired, delivery count 1), record 119 acknowledged, record 120 (acquired,
    #       delivery count 1)" -- 110 and 120 fetched unrecorded: 110 stays Available 1, 120 absent
    134: (110, 120, [(110, 112, AVAILABLE, 1), (113, 118, AVAILABLE, 0), (119, 119, ACKNOWLEDGED, 1)]),
    # seed: "SPSO=110, SPEO=121, record 110 (acquired, delivery count 2), records 111-112 (available, delivery
    #       count 1), records 113-119 acknowledged, record 120 (acquired, delivery count 1)"
    135: (110, 120, [(110, 112, AVAILABLE, 1), (113, 119, ACKNOWLEDGED, 1)]),
    # seed: "SPSO=111, SPEO=121, record 111-112 (acquired, delivery count 2), records 113-119 acknowledged,
    #       record 120 (acquired, delivery count 1)" -- the fetch of 111-112 is unrecorded: Available 1
    136: (111, 120, [(111, 112, AVAILABLE, 1), (113, 119, ACKNOWLEDGED, 1)]),
    # seed: "SPSO=120, SPEO=121, record 120 (acquired, delivery count 1)" -- 120 unrecorded
    137: (120, 120, []),
}
# fmt: on


@pytest.mark.parametrize("through", range(len(WORKED_EXAMPLE)), ids=lambda i: f"after {WORKED_EXAMPLE[i]['offset']}")
def test_worked_example_step_by_step(through):
    result = replay_chain(WORKED_EXAMPLE[: through + 1])
    offset = WORKED_EXAMPLE[through]["offset"]
    assert recovered(result) == EXPECTED_AFTER[offset]
    assert (result.checkpoint_epoch, result.share_checkpoint_offset, result.recovered_through) == (1, 130, offset)
    assert result.problems == ()


def test_worked_example_ending_in_a_new_checkpoint():
    # seed: "SHARE_CHECKPOINT offset 137: CheckpointEpoch 2, StartOffset 120, EndOffset 120, States []"
    result = replay_chain([*WORKED_EXAMPLE[:-1], NEW_CHECKPOINT_137])
    assert recovered(result) == (120, 120, [])
    assert (result.checkpoint_epoch, result.share_checkpoint_offset, result.recovered_through) == (2, 137, 137)
    assert result.problems == ()  # the epoch-1 deltas before it are superseded, not unknown


def test_both_endings_recover_the_same_state():
    by_delta = replay_chain(WORKED_EXAMPLE)
    by_checkpoint = replay_chain([*WORKED_EXAMPLE[:-1], NEW_CHECKPOINT_137])
    assert recovered(by_delta) == recovered(by_checkpoint)


def test_worked_example_gives_the_same_batches_under_kafkas_merge_rule():
    # Reference 2.10: the draft's example gives the same states under Kafka 4.1's higher-count-wins merge.
    for through in range(1, len(WORKED_EXAMPLE)):
        before = replay_chain(WORKED_EXAMPLE[:through])
        after = replay_chain(WORKED_EXAMPLE[: through + 1])
        delta_batches = parse_control_record(WORKED_EXAMPLE[through]).batches
        assert merge_batches(before.batches, delta_batches, after.start_offset) == after.batches


def test_records_in_any_order_are_replayed_in_offset_order():
    assert recovered(replay_chain(list(reversed(WORKED_EXAMPLE)))) == EXPECTED_AFTER[137]


# ---- how SPSO moves -------------------------------------------------------------------------------------


def test_acknowledging_the_start_offset_moves_spso_past_the_acknowledged_run():
    # The seed's table starts at SPSO=100: acknowledging 100-109 moves SPSO to 110.
    result = replay_chain([checkpoint(130, 1, 100, 100), delta(131, 1, 130, state(100, 109, ACKNOWLEDGED, 1))])
    assert recovered(result) == (110, 110, [])


def test_archived_records_also_let_spso_pass():
    result = replay_chain(
        [
            checkpoint(10, 1, 0, 10, state(0, 4, AVAILABLE, 5), state(5, 9, ACKNOWLEDGED, 1)),
            delta(11, 1, 10, state(0, 4, ARCHIVED, 5)),
        ]
    )
    assert recovered(result) == (10, 10, [])


def test_spso_stops_at_an_unrecorded_offset():
    # 3-4 were fetched for the first time and never recorded: they will be delivered again, so SPSO waits.
    result = replay_chain([checkpoint(10, 1, 0, 0), delta(11, 1, 10, state(0, 2, ACKNOWLEDGED, 1), state(5, 6, 2, 1))])
    assert recovered(result) == (3, 7, [(5, 6, ACKNOWLEDGED, 1)])


def test_acknowledging_away_from_the_start_leaves_spso():
    result = replay_chain([checkpoint(10, 1, 0, 5, state(0, 4, AVAILABLE, 1)), delta(11, 1, 10, state(3, 4, 2, 1))])
    assert recovered(result) == (0, 5, [(0, 2, AVAILABLE, 1), (3, 4, ACKNOWLEDGED, 1)])


def test_checkpoint_drops_states_before_its_start_offset():
    result = replay_chain([checkpoint(10, 1, 5, 8, state(0, 7, AVAILABLE, 1))])
    assert recovered(result) == (5, 8, [(5, 7, AVAILABLE, 1)])


# ---- SCO and ESO -----------------------------------------------------------------------------------------


def test_share_checkpoint_offset_is_the_latest_checkpoint():
    result = replay_chain([checkpoint(5, 1, 0, 0), checkpoint(9, 2, 0, 0), delta(12, 2, 9, state(0, 0, 2, 1))])
    assert (result.share_checkpoint_offset, result.checkpoint_epoch, result.start_offset) == (9, 2, 1)


# ---- broken chains ----------------------------------------------------------------------------------------


def test_delta_with_a_wrong_back_offset_is_refused_and_so_is_the_rest_of_its_chain():
    records = [*WORKED_EXAMPLE[:3], delta(133, 1, 131, state(119, 119, ACKNOWLEDGED, 1)), *WORKED_EXAMPLE[4:]]
    result = replay_chain(records)
    assert recovered(result) == EXPECTED_AFTER[132]
    assert result.recovered_through == 132
    assert [p.offset for p in result.problems] == [133, 134, 135, 136, 137]
    assert "BackOffset 131 does not point at the previous record of epoch 1 (offset 132)" in result.problems[0].reason
    assert "broke at offset 133" in result.problems[1].reason


def test_a_new_checkpoint_repairs_a_broken_chain():
    records = [checkpoint(10, 1, 0, 0), delta(11, 1, 3), checkpoint(12, 2, 0, 0), delta(13, 2, 12, state(0, 0, 2, 1))]
    result = replay_chain(records)
    assert (result.start_offset, result.recovered_through) == (1, 13)
    assert [p.offset for p in result.problems] == [11]


def test_delta_before_any_checkpoint_is_refused():
    result = replay_chain([delta(9, 1, 8, state(0, 4, 2, 1)), checkpoint(10, 1, 0, 0)])
    assert recovered(result) == (0, 0, [])
    [problem] = result.problems
    assert (problem.topic, problem.partition, problem.offset) == ("T", 0, 9)
    assert "before any SHARE_CHECKPOINT" in problem.reason


def test_delta_of_an_epoch_without_a_checkpoint_is_refused():
    result = replay_chain([checkpoint(10, 1, 0, 0), delta(11, 5, 10, state(0, 4, 2, 1))])
    assert recovered(result) == (0, 0, [])
    assert "unknown epoch: CheckpointEpoch 5 is not the epoch 1" in result.problems[0].reason


def test_delta_of_an_older_epoch_after_a_new_checkpoint_is_refused():
    result = replay_chain([*WORKED_EXAMPLE[:-1], NEW_CHECKPOINT_137, delta(138, 1, 136, state(120, 125, 2, 1))])
    assert recovered(result) == (120, 120, [])
    [problem] = result.problems
    assert problem.offset == 138
    assert "unknown epoch: CheckpointEpoch 1 is not the epoch 2 of the latest SHARE_CHECKPOINT (offset 137)" in (
        problem.reason
    )


def test_refused_delta_of_another_epoch_does_not_break_the_current_chain():
    records = [checkpoint(10, 2, 0, 0), delta(11, 1, 10), delta(12, 2, 10, state(0, 0, ACKNOWLEDGED, 1))]
    result = replay_chain(records)
    assert (result.start_offset, result.recovered_through, len(result.problems)) == (1, 12, 1)


def test_overlapping_states_inside_one_record_are_refused():
    records = [checkpoint(10, 1, 0, 0), delta(11, 1, 10, state(0, 5, 2, 1), state(5, 9, 0, 1))]
    result = replay_chain(records)
    assert recovered(result) == (0, 0, [])
    assert "States overlap: 0-5 and 5-9" in result.problems[0].reason


def test_unreadable_checkpoint_is_skipped_and_the_previous_chain_still_counts():
    records = [
        checkpoint(10, 1, 0, 0),
        checkpoint(11, 2, 5, 3),  # EndOffset before StartOffset
        delta(12, 2, 11, state(0, 0, 2, 1)),
        delta(13, 1, 10, state(0, 1, 2, 1)),
    ]
    result = replay_chain(records)
    assert (result.share_checkpoint_offset, result.checkpoint_epoch, result.start_offset) == (10, 1, 2)
    assert [p.offset for p in result.problems] == [11, 12]
    assert "EndOffset 3 is before StartOffset 5" in result.problems[0].reason


def test_record_of_another_share_partition_is_reported_not_mixed_in():
    result = replay_chain([*WORKED_EXAMPLE, delta(138, 1, 137, state(120, 120, 2, 1), group="G2")])
    assert recovered(result) == EXPECTED_AFTER[137]
    assert "belongs to share-partition ('G2', 'T', 0)" in result.problems[0].reason


def test_no_records_recover_nothing():
    assert replay_chain([]) == ChainResult(None, None, None, None, None, None, None, (), None, ())


# ---- malformed records: problems, never exceptions --------------------------------------------------------


@pytest.mark.parametrize(
    ("broken", "words"),
    [
        (delta(11, 1, 10, state(0, 4, 2, 1), type="SHARE_SNAPSHOT"), "type 'SHARE_SNAPSHOT' is neither"),
        (delta(11, 1, 10, state(0, 4, 2, 1), BackOffset=None), "BackOffset is missing"),
        (delta(11, 1, 10, state(0, 4, 2, 1), BackOffset="10"), "BackOffset is missing or not a non-negative integer"),
        (delta(11, 1, 10, state(0, 4, 2, 1), GroupId=7), "GroupId is missing or not a string"),
        (delta(11, 1, 10, state(0, 4, 2, 1), CheckpointEpoch=70000), "CheckpointEpoch 70000 is not a uint16"),
        (delta(11, 1, 10, state(0, 4, 2, 1), CheckpointEpoch=True), "CheckpointEpoch True is not a uint16"),
        (delta(11, 1, 10, States={"BaseOffset": 0}), "States is missing or not a list"),
        (delta(11, 1, 10, state(4, 0, 2, 1)), "batch 4-0 ends before it begins"),
        (delta(11, 1, 10, state(0, 4, 2, -1)), "negative delivery count -1"),
        (delta(11, 1, 10, state(0, 4, 2, 40000)), "DeliveryCount is not an int16"),
        (delta(11, 1, 10, state(-3, 4, 2, 1)), "negative first offset"),
        (delta(11, 1, 10, state(0, 4, 1, 1)), "State 1 (Acquired), never recorded"),
        (delta(11, 1, 10, state(0, 4, 9, 1)), "State 9 (unknown), never recorded"),
        (delta(11, 1, 10, {"BaseOffset": 0, "LastOffset": "4", "State": 2, "DeliveryCount": 1}), "non-integer last"),
        (delta(11, 1, 10, "0-4"), "non-integer first, last, state, delivery count"),
    ],
)
def test_malformed_delta_is_refused_and_breaks_its_chain(broken, words):
    after = delta(12, 1, 11, state(0, 9, ACKNOWLEDGED, 1))
    result = replay_chain([checkpoint(10, 1, 0, 0), broken, after])
    assert recovered(result) == (0, 0, [])
    assert result.recovered_through == 10
    assert words in result.problems[0].reason
    assert [p.offset for p in result.problems] == [11, 12]


@pytest.mark.parametrize(
    ("broken", "words"),
    [
        ({k: v for k, v in checkpoint(10, 1, 0, 0).items() if k != "StartOffset"}, "StartOffset is missing"),
        (checkpoint(10, 1, 0, 0) | {"offset": None}, "offset is missing"),
        (checkpoint(10, 1, 0, 0, partition="0"), "partition is missing or not a non-negative integer"),
        (checkpoint(10, 1, 0, 0, EndOffset=-1), "EndOffset is missing or not a non-negative integer"),
        (checkpoint(10, 1, 0, 0, States=None), "States is missing or not a list"),
        (["SHARE_CHECKPOINT", 10], "not a record"),
    ],
)
def test_malformed_checkpoint_is_reported_and_recovers_nothing(broken, words):
    result = replay_chain([broken])
    assert (result.start_offset, result.share_checkpoint_offset) == (None, None)
    [problem] = result.problems
    assert words in problem.reason


def test_parsed_batches_are_state_batches_in_offset_order():
    record = parse_control_record(delta(11, 1, 10, state(5, 6, 2, 1), state(0, 1, 0, 2)))
    assert record.invalid is None
    assert record.batches == (StateBatch(0, 1, 0, 2), StateBatch(5, 6, 2, 1))
