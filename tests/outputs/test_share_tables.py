"""The share tables shaped in Arrow from the replay's wide rows (offset_audit.outputs.share_tables)."""

from __future__ import annotations

import pyarrow as pa

from offset_audit.outputs import share_tables
from offset_audit.share_coordinator import state_replay
from offset_audit.timestamps import MAX_MS


def _replayed(rows: list[dict]) -> pa.Table:
    return pa.Table.from_pylist(rows, state_replay.replay_arrow_schema())


def _partition(group: str, topic_id: str, partition: int, **values) -> dict:
    return {"row_kind": "partition", "group_id": group, "topic_id": topic_id, "partition": partition, **values}


def test_split_gives_each_table_its_own_rows_columns_and_timestamps():
    replayed = _replayed(
        [
            _partition("g", "id-a", 0, start_offset=5, create_timestamp_ms=1_700_000_000_000),
            _partition("g", "id-a", 1, start_offset=9, create_timestamp_ms=MAX_MS + 1, write_timestamp_ms=-1),
            {"row_kind": "batch", "group_id": "g", "topic_id": "id-a", "partition": 0, "first_offset": 5,
             "last_offset": 7, "state": "AVAILABLE", "delivery_count": 2},
            {"row_kind": "problem", "group_id": "g", "topic_id": "id-a", "partition": 1, "log_partition": 3,
             "log_offset": 11, "reason": "why"},
        ]
    )  # fmt: skip
    tables = share_tables.split_replay(replayed)
    assert {n: t.num_rows for n, t in tables.items()} == {
        "share_partitions": 2,
        "share_state_batches": 1,
        "share_problems": 1,
    }
    parts = tables["share_partitions"].to_pylist()
    assert [p["start_offset"] for p in parts] == [5, 9]
    assert parts[0]["create_timestamp"].isoformat() == "2023-11-14T22:13:20+00:00"
    # Out of the range a TIMESTAMP shows: null, the milliseconds kept exactly.
    assert parts[1]["create_timestamp"] is None and parts[1]["create_timestamp_ms"] == MAX_MS + 1
    assert parts[1]["write_timestamp"].year == 1969 and parts[1]["write_timestamp_ms"] == -1
    assert tables["share_problems"].to_pylist()[0]["reason"] == "why"
    assert tables["share_state_batches"].schema.field("delivery_count").type == pa.int32()


def test_topic_names_fill_only_missing_topics_and_never_double_a_row():
    replayed = _replayed(
        [
            _partition("g", "id-a", 0),
            _partition("g", "id-b", 0),
            _partition("g", "id-c", 0),
            {"row_kind": "partition", "group_id": "h", "topic": "kept", "topic_id": "id-a", "partition": 2},
        ]
    )
    names = [("id-a", "orders"), ("id-b", "zeta"), ("id-b", "alpha"), ("id-a", "orders")]
    tables = share_tables.with_topic_names(share_tables.split_replay(replayed), names)
    topics = tables["share_partitions"].column("topic").to_pylist()
    # id-b is named twice (a damaged dump): its first name in sorted order, one row as before.
    assert topics == ["orders", "alpha", None, "kept"]
    assert share_tables.with_topic_names({"x": pa.table({})}, []) == {"x": pa.table({})}


def test_share_lag_where_the_end_offsets_know_the_partition_in_the_rows_order():
    replayed = _replayed(
        [
            {**_partition("g", "id", 0, start_offset=40), "topic": "t"},
            {**_partition("g", "id", 1, start_offset=90), "topic": "t"},
            {**_partition("g", "id", 2, start_offset=10), "topic": "t"},
            {**_partition("h", "id", 0, start_offset=5), "topic": "t"},
            {**_partition("i", "id", 0, start_offset=-1), "topic": "t"},
        ]
    )
    partitions = share_tables.split_replay(replayed)["share_partitions"]
    ends = pa.table(
        {"topic": ["t", "t", "u"], "partition": pa.array([0, 1, 2], pa.int32()), "log_end_offset": [100, 50, 9]}
    )
    lagged = share_tables.with_share_lag(partitions, ends)
    # 100-40, end below SPSO (a stale end offsets file): 0, partition 2 of t unknown, 100-5, and no start
    # offset yet (-1: initialised, never fetched; kafka-share-groups prints "-"): unknown.
    assert lagged.column("share_lag").to_pylist() == [60, 0, None, 95, None]
    assert lagged.column("partition").to_pylist() == [0, 1, 2, 0, 0]
    assert share_tables.with_share_lag(partitions, None) is partitions


def test_cleanup_cutoffs_are_the_lowest_checkpoint_per_log_partition():
    replayed = _replayed(
        [
            {**_partition("g", "id", 0, checkpoint_offset=70, checkpoint_log_partition=4), "topic": "t"},
            {**_partition("h", "id", 0, checkpoint_offset=30, checkpoint_log_partition=4), "topic": "t"},
            {**_partition("g", "id", 1, checkpoint_offset=12, checkpoint_log_partition=0), "topic": "u"},
            {**_partition("g", "id", 2), "topic": "u"},  # no snapshot yet: holds nothing back
        ]
    )
    partitions = share_tables.split_replay(replayed)["share_partitions"]
    # The cluster is the run's, set as it writes (share_tables.with_cluster).
    assert share_tables.cleanup_cutoffs(partitions, "__share_group_state").to_pylist() == [
        {
            "log": "__share_group_state",
            "partition": 0,
            "earliest_share_offset": 12,
            "share_partitions": 1,
            "cluster": None,
        },
        {
            "log": "__share_group_state",
            "partition": 4,
            "earliest_share_offset": 30,
            "share_partitions": 2,
            "cluster": None,
        },
    ]
    # The draft's records: each share-partition's state sits in its own topic's log.
    assert [(r["log"], r["partition"]) for r in share_tables.cleanup_cutoffs(partitions, None).to_pylist()] == [
        ("t", 4),
        ("u", 0),
    ]
