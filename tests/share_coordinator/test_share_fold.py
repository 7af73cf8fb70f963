"""The folded replay (share/fold.py) against the record-by-record one (state.replay_checked) on random
record streams, split between tasks the way Spark splits a dump."""

from __future__ import annotations

import random
from collections import defaultdict

import numpy as np
import pyarrow as pa
import pytest
from vector_files import load

from offset_audit.decoding.share_columns import ShareStateReader
from offset_audit.decoding.share_records import decode_share_state_record
from offset_audit.layouts.codec import RecordCodec
from offset_audit.layouts.encoder import encode_key, encode_value
from offset_audit.layouts.spec import share_state_layouts
from offset_audit.share_coordinator import fold
from offset_audit.share_coordinator.share_partition import replay_checked
from offset_audit.share_coordinator.state_replay import _share_record, log_order

LAYOUTS = share_state_layouts()
TOPIC_ID = "0a0b0c0d-0e0f-1011-1213-141516171819"


def _batch(rng: random.Random, near: int) -> dict:
    first = max(0, near + rng.randint(-5, 40))
    if rng.random() < 0.03:  # refused by check_batch: the record is skipped and reported
        return {"FirstOffset": first, "LastOffset": first - 1, "DeliveryState": 0, "DeliveryCount": 1}
    state = rng.choice((0, 0, 2, 2, 4)) if rng.random() > 0.03 else 1  # 1: never persisted, reported
    return {"FirstOffset": first, "LastOffset": first + rng.randint(0, 8), "DeliveryState": state,
            "DeliveryCount": rng.randint(0, 5)}  # fmt: skip


def _records(rng: random.Random, count: int, backwards: float) -> list[tuple[bytes, bytes | None]]:
    """(key, value) of one share-partition: snapshots, updates, now and then a tombstone or a 4.0 snapshot."""
    start = -1
    out = []
    for _ in range(count):
        roll = rng.random()
        kind = 0 if roll < 0.08 else 1
        key = encode_key(LAYOUTS[kind], {"GroupId": "g1", "TopicId": TOPIC_ID, "Partition": 3})
        if roll < 0.015:
            out.append((key, None))
            continue
        if rng.random() < 0.6:
            start = max(start, 0) + rng.randint(0, 20)
            if rng.random() < backwards:
                start = max(-1, start - rng.randint(1, 30))
            new_start = start
        else:
            new_start = -1
        batches = [_batch(rng, max(start, 0)) for _ in range(rng.randint(0, 3))]
        # DeliveryCompleteCount (4.2+): absent (a 4.1 writer), -1, or a count
        completed = {} if rng.random() < 0.4 else {"DeliveryCompleteCount": rng.choice((-1, 0, 3, 17))}
        if kind == 0:
            values = {"SnapshotEpoch": rng.randint(0, 9), "StateEpoch": 1, "LeaderEpoch": rng.randint(0, 3),
                      "StartOffset": start, "CreateTimestamp": 5, "WriteTimestamp": 9,
                      "StateBatches": batches}  # fmt: skip
            era = "4.0" if rng.random() < 0.1 else "4.1+"
            out.append((key, encode_value(LAYOUTS[0], 0, values | (completed if era == "4.1+" else {}), era=era)))
        else:
            values = {"SnapshotEpoch": 1, "LeaderEpoch": rng.choice((-1, 2, 3)), "StartOffset": new_start,
                      "StateBatches": batches}  # fmt: skip
            out.append((key, encode_value(LAYOUTS[1], 0, values | completed, era="4.1+")))
    return out


def _raw(records, first_offset: int) -> pa.RecordBatch:
    n = len(records)
    return pa.RecordBatch.from_pydict(
        {
            "source_partition": pa.array([4] * n, pa.int32()),
            "source_offset": pa.array(range(first_offset, first_offset + n), pa.int64()),
            "record_timestamp_ms": pa.array([0] * n, pa.int64()),
            "key": pa.array([k for k, _ in records], pa.binary()),
            "value": pa.array([v for _, v in records], pa.binary()),
            "other_topic": pa.array(np.zeros(n, bool)),
        }
    )


def _folded(records, cuts: list[int]) -> fold.Replayed | None:
    summaries = []
    for low, high in zip([0, *cuts], [*cuts, len(records)], strict=True):
        reader = ShareStateReader(RecordCodec(LAYOUTS))
        reader.add(_raw(records[low:high], low))
        summaries += fold.summarise(reader.columns())
    return fold.combine(summaries)


def _exact(records):
    codec = RecordCodec(LAYOUTS)
    rows = []
    for offset, (key, value) in enumerate(records):
        row = decode_share_state_record(codec, key, value)
        rows.append({**row, "source_offset": offset, "source_partition": 4})
    rows.sort(key=log_order)
    snapshots = [(r["source_offset"], r["source_partition"]) for r in rows if r["kind"] == "snapshot"]
    # As Spark hands them over: every column of the decoded schema, None where the record had no field.
    records_as_rows = [_share_record(defaultdict(lambda: None, r)) for r in rows]
    return replay_checked(records_as_rows), len(rows), snapshots[-1] if snapshots else None


def _view(state):
    """What the tables show of a state."""
    if state is None:
        return None
    return (state.snapshot_epoch, state.state_epoch, state.leader_epoch, state.start_offset,
            state.create_timestamp or None, state.write_timestamp or None, state.effective_batches,
            state.delivery_complete_count)  # fmt: skip


def _vector(name: str) -> tuple[bytes, bytes]:
    """A record of tests/vectors/share_state.json (written by hand), as bytes."""
    found = next(v for v in load("share_state") if v.name.startswith(name))
    return found.key, found.value


SNAPSHOT_COUNTED = "0 ShareSnapshot, 4.2: tagged DeliveryCompleteCount"
UPDATE_COUNTED = "1 ShareUpdate, 4.2: DeliveryCompleteCount 7"
UPDATE_WITHOUT = "1 ShareUpdate, 4.1: no batches, leader epoch -1"
UPDATE_MINUS_ONE = "1 ShareUpdate, 4.2: an explicit -1 DeliveryCompleteCount"


@pytest.mark.parametrize(
    "names, expected",
    [
        ([SNAPSHOT_COUNTED], 10),
        ([SNAPSHOT_COUNTED, UPDATE_COUNTED], 7),
        # an update without the tag (a 4.1 writer) replaces the count with -1: ShareCoordinatorShard.merge
        ([SNAPSHOT_COUNTED, UPDATE_COUNTED, UPDATE_WITHOUT], -1),
        ([SNAPSHOT_COUNTED, UPDATE_COUNTED, UPDATE_MINUS_ONE], -1),
        ([SNAPSHOT_COUNTED, UPDATE_MINUS_ONE, UPDATE_COUNTED], 7),
    ],
)
def test_every_update_replaces_the_delivery_complete_count_in_both_replays(names, expected):
    records = [_vector(name) for name in names]
    exact, _, _ = _exact(records)
    assert exact.state.delivery_complete_count == expected
    for cuts in ([], [1] if len(records) > 1 else []):
        assert _folded(records, cuts).replay.state.delivery_complete_count == expected


@pytest.mark.parametrize("seed", range(40))
def test_folding_gives_the_replay_of_every_record(seed):
    rng = random.Random(seed)
    records = _records(rng, rng.randint(1, 120), backwards=0.0 if seed % 2 else 0.05)
    cuts = sorted(rng.sample(range(1, len(records)), min(len(records) - 1, rng.randint(0, 3))))
    folded = _folded(records, cuts)
    exact, count, last_snapshot = _exact(records)
    assert (exact.start_offset_moves_back > 0) == _an_update_moves_the_start_back(records), seed
    # handed to the exact replay exactly where an update moved the start offset back, which it reports
    assert (folded is None) == _an_update_moves_the_start_back(records), seed
    if folded is None:
        return
    assert _view(folded.replay.state) == _view(exact.state)
    assert folded.replay.problems == exact.problems
    assert (folded.records, folded.last_snapshot) == (count, last_snapshot)


def _an_update_moves_the_start_back(records) -> bool:
    """Whether, in log order, an update sets a start offset that prunes less than the state's (a snapshot
    sets the state's own, a tombstone removes it): the one case folding leaves to the exact replay."""
    codec = RecordCodec(LAYOUTS)
    start = None
    for key, value in records:
        row = decode_share_state_record(codec, key, value)
        if row["kind"] == "snapshot":
            start = row["start_offset"]
        elif row["kind"] == "tombstone":
            start = None
        elif row["kind"] == "update" and row["start_offset"] not in (None, -1):
            if start is not None and max(row["start_offset"], 0) < max(start, 0):
                return True
            start = row["start_offset"]
    return False


def test_streams_whose_start_offset_moves_back_are_the_ones_left_to_the_exact_replay():
    """Across the seeds of the test above: both outcomes happen."""
    outcomes = []
    for seed in range(40):
        rng = random.Random(seed)
        records = _records(rng, rng.randint(1, 120), backwards=0.0 if seed % 2 else 0.05)
        cuts = sorted(rng.sample(range(1, len(records)), min(len(records) - 1, rng.randint(0, 3))))
        outcomes.append((_folded(records, cuts) is None, _an_update_moves_the_start_back(records)))
    assert 0 < sum(left for left, _ in outcomes) < 40
    assert all(back for left, back in outcomes if left)


def test_most_streams_fold_when_start_offsets_only_move_forward():
    folded = [_folded(_records(random.Random(s), 80, backwards=0.0), [30, 50]) for s in range(20)]
    assert all(f is not None for f in folded)


def test_a_start_offset_moving_backwards_is_left_to_the_exact_replay():
    key = encode_key(LAYOUTS[1], {"GroupId": "g1", "TopicId": TOPIC_ID, "Partition": 3})

    def update(start: int) -> tuple[bytes, bytes]:
        return key, encode_value(LAYOUTS[1], 0, {"SnapshotEpoch": 1, "LeaderEpoch": 1, "StartOffset": start,
                                                 "StateBatches": []}, era="4.1+")  # fmt: skip

    assert _folded([update(10), update(20)], []) is not None
    assert _folded([update(20), update(10)], []) is None  # inside one task
    assert _folded([update(20), update(10)], [1]) is None  # across two tasks
    # A later snapshot makes the move harmless to the state, but the move is still reported.
    snapshot_key = encode_key(LAYOUTS[0], {"GroupId": "g1", "TopicId": TOPIC_ID, "Partition": 3})
    values = {"SnapshotEpoch": 2, "StateEpoch": 1, "LeaderEpoch": 1, "StartOffset": 30, "CreateTimestamp": 5,
              "WriteTimestamp": 9, "StateBatches": []}  # fmt: skip
    snapshot = (snapshot_key, encode_value(LAYOUTS[0], 0, values, era="4.1+"))
    tombstone = (snapshot_key, None)
    assert _folded([update(20), update(10), snapshot], []) is None
    assert _folded([update(20), update(10), snapshot], [1]) is None  # the second task's head, before its snapshot
    assert _folded([update(20), snapshot, update(40)], [1]) is not None
    assert _folded([update(20), tombstone, update(10)], []) is not None  # nothing to move back from
    assert _folded([update(20), tombstone, update(10), update(-1), update(5)], []) is None


def test_records_of_one_share_partition_interleaved_between_tasks_are_left_to_the_exact_replay():
    records = _records(random.Random(1), 10, backwards=0.0)
    one = ShareStateReader(RecordCodec(LAYOUTS))
    one.add(_raw(records[::2], 0).set_column(1, "source_offset", pa.array(range(0, 10, 2), pa.int64())))
    two = ShareStateReader(RecordCodec(LAYOUTS))
    two.add(_raw(records[1::2], 0).set_column(1, "source_offset", pa.array(range(1, 10, 2), pa.int64())))
    assert fold.combine(fold.summarise(one.columns()) + fold.summarise(two.columns())) is None


def test_archiving_is_a_persisted_state_from_kafka_4_4_counted_and_not_a_problem():
    """Kafka 4.4 persists state 3 for records on their way to a dead-letter topic (share.version 2)."""
    records = [_vector(SNAPSHOT_COUNTED), _vector("1 ShareUpdate, 4.4: a batch Archiving")]
    exact, _, _ = _exact(records)
    for replayed in (exact, _folded(records, []).replay, _folded(records, [1]).replay):
        assert replayed.problems == ()
        state = replayed.state
        assert (state.archiving_records, state.acknowledged_records, state.delivery_complete_count) == (3, 2, 2)
