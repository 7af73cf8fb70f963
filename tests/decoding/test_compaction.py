"""Each decode task's pre-reduction to its last record per key (offset_audit.decoding.compaction)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from vector_files import hex_bytes

from offset_audit.decoding.compaction import (
    LatestPerKey,
    commit_buckets,
    compactable,
    compaction_keys,
    last_per_key,
    latest_commits,
)
from offset_audit.decoding.fast_commits import key_types
from offset_audit.storage import LOCAL


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


@pytest.mark.parametrize("high", [1, 40_000])  # 40000: past 16 bits, not the radix-sorted path
def test_interleaved_partitions_each_in_offset_order_are_ordered_by_partition_then_offset(high):
    """A consumer's dump mixes the partitions; the key that moved to a higher partition wins there."""
    table = commits(
        [
            ("g", "t", 0, high, 7, False, 1),
            ("g", "t", 0, 0, 50, False, 2),  # higher offset, lower partition: older
            ("h", "t", 0, high, 8, False, 3),
            ("h", "t", 0, 0, 60, False, 4),
            ("h", "t", 0, high, 9, False, 5),  # newest of h
            ("k", "t", 0, 0, 61, False, 6),
            ("k", "t", 0, 0, 62, False, 7),
        ]
    )
    assert kept(last_per_key(table)) == {("g", "t", 0, 1), ("h", "t", 0, 5), ("k", "t", 0, 7)}
    positions = [(r["source_partition"], r["source_offset"]) for r in last_per_key(table).to_pylist()]
    assert positions == sorted(positions)


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


def test_merging_tasks_keeps_the_last_committed_record_and_every_pending_one():
    """Two tasks' outputs of the same keys, as the audit's driver merges them for a small state."""
    table = commits(
        [
            ("g", "t", 0, 1, 40, False, 400),  # task 1's last of g/t/0
            ("g", "t", 1, 1, 41, True, None),  # task 1: g/t/1 deleted
            ("g", "t", 0, 1, 90, False, 900),  # task 2: newer, wins
            ("g", "t", 1, 1, 30, False, 300),  # task 2: older than the tombstone
            ("g", "t", 0, 1, 95, False, 950),  # pending transactional commit: set aside, not a winner
            ("g", "t", 0, 1, 96, False, 960),  # and another, kept too
        ]
    ).append_column("transaction", pa.array([None, "committed", None, None, "pending", "pending"]))
    merged = latest_commits(table).to_pylist()
    winners = {
        (r["partition"], r["committed_offset"], r["is_tombstone"]) for r in merged if r["transaction"] != "pending"
    }
    assert winners == {(0, 900, False), (1, None, True)}
    assert sorted(r["committed_offset"] for r in merged if r["transaction"] == "pending") == [950, 960]
    without_pending = table.filter(pa.array([r["transaction"] != "pending" for r in table.to_pylist()]))
    assert latest_commits(without_pending).to_pylist() == last_per_key(without_pending).to_pylist()


def test_nothing_added_gives_nothing():
    assert LatestPerKey().result() is None
    assert last_per_key(commits([])).num_rows == 0


# OffsetCommitKey of ("g", "t", 0) at key version 0 and 1 (reference 2.2), and a GroupMetadataKey of "g".
KEY_V0 = hex_bytes(["0000", "0001 67", "0001 74", "00000000"])
KEY_V1 = hex_bytes(["0001", "0001 67", "0001 74", "00000000"])
KEY_P1 = hex_bytes(["0001", "0001 67", "0001 74", "00000001"])
GROUP_KEY = hex_bytes(["0002", "0001 67"])


def value_v3(offset: int) -> bytes:
    """OffsetCommitValue v3: offset, leader epoch 5, empty metadata, commit timestamp 1700000000000."""
    return hex_bytes(["0003", offset.to_bytes(8, "big").hex(), "00000005", "0000", "0000018bcfe56800"])


def test_a_version_0_offset_key_is_the_same_key_as_version_1_and_nothing_else_changes():
    keys = pa.array([KEY_V0, KEY_V1, None, GROUP_KEY, b"\x00"], pa.binary())
    assert key_types(keys).tolist() == [0, 1, -1, 2, -1]
    assert compaction_keys(keys, key_types(keys)).to_pylist() == [KEY_V1, KEY_V1, None, GROUP_KEY, b"\x00"]
    untouched = pa.array([KEY_V1, GROUP_KEY], pa.binary())
    assert compaction_keys(untouched, key_types(untouched)) is untouched


def test_only_keyed_records_of_the_topic_that_no_reader_or_marker_holds_back_are_compactable():
    batch = pa.RecordBatch.from_pydict(
        {
            "key": pa.array([KEY_V1, None, KEY_V1, KEY_V1, KEY_V1, KEY_V1, KEY_V1, KEY_V1], pa.binary()),
            "other_topic": [False, False, True, False, False, False, False, False],
            "source_error": [None, None, None, "bad CRC", None, None, None, None],
            "transaction": [None, None, None, None, "committed", "pending", "aborted", "marker"],
        }
    )
    assert compactable(batch).tolist() == [True, False, False, False, True, False, False, False]


def test_a_decode_task_decodes_only_the_last_record_of_each_key_and_counts_the_rest(spark, tmp_path):
    """Superseded records are never decoded (the second one is not even valid), yet the newest record
    timestamp still counts them: here the oldest record in the log has the newest timestamp."""
    from offset_audit.decoding.decoder import SKIPPED_SUPERSEDED
    from offset_audit.outputs.fast_write import decode_to_files

    base = 1_700_000_000_000
    rows = [
        (0, 0, base + 5_000, KEY_V0, value_v3(7)),
        (0, 1, base + 1_000, KEY_V1, value_v3(42)),
        (0, 2, base, KEY_P1, bytes.fromhex("0003 ffff")),  # truncated: would be quarantined
        (0, 3, base, KEY_P1, value_v3(2**53 + 1)),
        (0, 4, base, GROUP_KEY, None),
    ]
    frame = spark.createDataFrame(
        [(*r, "__consumer_offsets") for r in rows],
        "source_partition int, source_offset bigint, record_timestamp_ms bigint, key binary, value binary, "
        "source_topic string",
    )
    scratch = tmp_path / "scratch"
    result = decode_to_files(
        spark, frame.coalesce(1), str(tmp_path / "out"), "__consumer_offsets", True, str(scratch), storage=LOCAL
    )
    skipped = {k: n for k, n in result.counts.items() if k[0] == SKIPPED_SUPERSEDED}
    assert sum(skipped.values()) == 2
    assert sum(n for k, n in result.counts.items() if k[0] == "quarantine") == 0
    assert sum(result.counts.values()) == len(rows)
    commits = pa.concat_tables(pq.read_table(f.path) for f in result.files["offset_commits"])
    assert sorted(commits.column("committed_offset").to_pylist()) == [42, 2**53 + 1]
    assert result.newest_record == datetime.fromtimestamp(0, UTC) + timedelta(milliseconds=base + 5_000)


def test_a_group_lands_in_one_bucket_in_every_task_and_the_groups_spread_over_the_buckets():
    """The bucket is the CRC-32 of the group id's UTF-8 bytes: the same in two tasks that see the group
    in different batches and chunks, whatever else the batch holds; a null group id is bucket 0."""
    import zlib

    names = [*(f"group-{i}" for i in range(400)), "Grüße", "组"]
    one_task = commit_buckets(pa.chunked_array([names[:150], names[150:]]), 4)
    other_task = commit_buckets(pa.array([*reversed(names), None]), 4)
    assert list(one_task) == [zlib.crc32(n.encode()) % 4 for n in names]
    assert list(other_task) == [*reversed(one_task), 0]
    assert sorted(set(one_task)) == [0, 1, 2, 3] and min(list(one_task).count(b) for b in range(4)) > 60
    assert list(commit_buckets(pa.array(names), 1)) == [0] * len(names)
