"""Each decode task's pre-reduction to its last commit per key (offset_audit.compaction)."""

from __future__ import annotations

import pyarrow as pa

from offset_audit.compaction import LatestPerKey, last_per_key


def commits(rows: list[tuple]) -> pa.Table:
    """(group, topic, partition, source_partition, source_offset, is_tombstone, committed_offset)."""
    names = ["group_id", "topic", "partition", "source_partition", "source_offset", "is_tombstone", "committed_offset"]
    types = [pa.string(), pa.string(), pa.int32(), pa.int32(), pa.int64(), pa.bool_(), pa.int64()]
    columns = list(zip(*rows, strict=True)) if rows else [[] for _ in names]
    return pa.table([pa.array(c, t) for c, t in zip(columns, types, strict=True)], names=names)


def kept(table: pa.Table) -> set[tuple]:
    return {(r["group_id"], r["topic"], r["partition"], r["committed_offset"]) for r in table.to_pylist()}


def test_the_last_record_of_each_key_wins_by_partition_then_offset_not_by_input_order():
    table = commits(
        [
            ("g", "t", 0, 3, 20, False, 200),
            ("g", "t", 0, 3, 10, False, 100),  # earlier in the log, later in the input
            ("g", "t", 1, 3, 5, False, 50),
            ("h", "t", 0, 2, 99, False, 1),
            ("h", "t", 0, 3, 1, False, 2),  # a higher partition is newer (the replay's order)
        ]
    )
    assert kept(last_per_key(table)) == {("g", "t", 0, 200), ("g", "t", 1, 50), ("h", "t", 0, 2)}


def test_tombstones_are_kept_so_they_still_hide_other_tasks_commits():
    table = commits([("g", "t", 0, 0, 1, False, 10), ("g", "t", 0, 0, 2, True, None)])
    out = last_per_key(table).to_pylist()
    assert len(out) == 1 and out[0]["is_tombstone"]


def test_a_record_without_coordinates_never_wins_like_in_the_spark_replay():
    table = commits([("g", "t", 0, None, None, False, 1), ("g", "t", 0, 0, 0, False, 2)])
    assert kept(last_per_key(table)) == {("g", "t", 0, 2)}


def test_output_stays_in_log_order_and_offsets_above_2_53_are_exact():
    big = 2**53 + 1
    table = commits([("b", "t", 0, 0, big, False, big), ("a", "t", 0, 0, big - 1, False, 7)])
    out = last_per_key(table).to_pylist()
    assert [r["source_offset"] for r in out] == [big - 1, big] and out[1]["committed_offset"] == big


def test_accumulating_batch_by_batch_equals_one_reduction_and_stays_small():
    rows = [(f"g{i % 7}", "t", i % 3, i % 2, i, i % 11 == 0, i) for i in range(5000)]
    latest = LatestPerKey(min_pending=100)
    for start in range(0, len(rows), 250):
        latest.add(commits(rows[start : start + 250]))
        assert latest.pending + latest.reduced <= 100 + 250 + 21
    assert latest.result().to_pylist() == last_per_key(commits(rows)).to_pylist()


def test_nothing_added_gives_nothing():
    assert LatestPerKey().result() is None
    assert last_per_key(commits([])).num_rows == 0
