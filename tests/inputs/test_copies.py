"""A partition given more than once (offset_audit.inputs.copies): the same records count once, copies
that diverged keep what the broker's truncation keeps, a record a covering copy's cleaner removed stays
out, and every record left out is counted and named."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pyarrow as pa
import pytest
from click.testing import CliRunner
from deltalake import DeltaTable
from dump_records import commit, group_record
from segment_files import batch

from offset_audit.cli.main import main
from offset_audit.inputs import copies
from offset_audit.inputs.log_records import LOG_RECORD_SCHEMA
from offset_audit.inputs.segments.writer import record_batch


def rows(*records):
    """LOG_RECORD_SCHEMA rows from (offset, key, value, timestamp)."""
    return pa.Table.from_pylist(
        [
            {"source_partition": 0, "source_offset": o, "key": k, "value": v, "record_timestamp_ms": t}
            for o, k, v, t in records
        ],
        LOG_RECORD_SCHEMA,
    )


def states(table):
    offsets = table.column("source_offset").to_pylist()
    return list(zip(offsets, table.column(copies.COPY_STATE).to_pylist(), strict=True))


def test_the_same_records_in_two_copies_count_once_from_the_first_copy():
    a = rows((0, b"k0", b"v0", 1), (1, b"k1", b"v1", 2))
    b = rows((0, b"k0", b"v0", 1), (1, b"k1", b"v1", 2))
    merged = copies.merge([copies.Copy("'b1'", a), copies.Copy("'b2'", b)], "__consumer_offsets-0")
    assert states(merged) == [(0, None), (0, "duplicate"), (1, None), (1, "duplicate")]
    notes = merged.column("source_note").to_pylist()
    assert notes[1] == notes[3] == "the same record as in 'b1', counted once: left out of 'b2'"
    assert notes[0] is None and notes[2] is None


def test_a_record_one_copy_compacted_away_stays_out_and_one_outside_its_range_is_kept():
    """b1 covers offsets 0-9 (its segments' names) but its cleaner removed offset 1; b2 still holds it,
    and holds offset 12 beyond b1's log too."""
    a = rows((0, b"k0", b"v0", 1), (2, b"k1", b"v2", 3))
    b = rows((0, b"k0", b"v0", 1), (1, b"k1", b"v1", 2), (2, b"k1", b"v2", 3), (12, b"k2", b"v", 4))
    merged = copies.merge([copies.Copy("'b1'", a, covers=((0, 10),)), copies.Copy("'b2'", b)], "__consumer_offsets-0")
    assert states(merged) == [(0, None), (0, "duplicate"), (1, "compacted"), (2, None), (2, "duplicate"), (12, None)]
    assert merged.column("source_note")[2].as_py() == (
        "'b1' covers the offset but its cleaner removed the record: left out of 'b2'"
    )


def test_a_diverged_replica_loses_what_the_brokers_truncation_removes():
    """b1 led in epoch 5 and wrote offsets 2-3; b2 became leader in epoch 6 at offset 2 (an unclean
    election). Both of b1's epoch-5 records go, offset 3 too although b2 never wrote one there."""
    a = rows((0, b"k", b"v0", 1), (1, b"k", b"v1", 2), (2, b"k", b"old", 3), (3, b"k", b"old2", 4))
    b = rows((0, b"k", b"v0", 1), (1, b"k", b"v1", 2), (2, b"k", b"new", 5))
    merged = copies.merge(
        [
            copies.Copy("'b1'", a, epochs=np.array([0, 0, 5, 5])),
            copies.Copy("'b2'", b, epochs=np.array([0, 0, 6])),
        ],
        "__consumer_offsets-4",
    )
    assert states(merged) == [(0, None), (0, "duplicate"), (1, None), (1, "duplicate"), (2, "diverged"),
                              (2, None), (3, "diverged")]  # fmt: skip
    kept = merged.filter(pa.compute.is_null(merged.column(copies.COPY_STATE)))
    assert kept.column("value").to_pylist() == [b"v0", b"v1", b"new"]
    assert merged.column("source_note")[4].as_py() == (
        "__consumer_offsets-4 in 'b1' diverged from 'b2' (leader epoch 5 against 6): left out, as the broker "
        "truncates a replica"
    )


def test_copies_that_disagree_without_epochs_keep_the_copy_whose_log_reaches_further():
    a = rows((0, b"k", b"v0", 1), (1, b"k", b"x", 2))
    b = rows((0, b"k", b"v0", 1), (1, b"k", b"y", 2), (2, b"k", b"z", 3))
    merged = copies.merge([copies.Copy("'b1'", a), copies.Copy("'b2'", b)], "__consumer_offsets-0")
    assert states(merged) == [(0, None), (0, "duplicate"), (1, "diverged"), (1, None), (2, None)]


def test_error_rows_are_never_merged():
    a = rows((0, b"k", b"v", 1))
    bad = pa.Table.from_pylist(
        [{"source_partition": 0, "source_offset": 0, "source_error": "CRC mismatch"}], LOG_RECORD_SCHEMA
    )
    merged = copies.merge([copies.Copy("'b1'", a), copies.Copy("'b2'", bad)], "__consumer_offsets-0")
    assert merged.column(copies.COPY_STATE).to_pylist() == [None, None]


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture(scope="module")
def dump(tmp_path_factory):
    """A generated broker data directory, and the same partitions copied from three brokers."""
    root = tmp_path_factory.mktemp("copies")
    result = run("generate", "--output", root / "snap", "--records", 4000, "--seed", 11)
    assert result.exit_code == 0, result.output
    result = run("generate", "--output", root / "one", "--records", 4000, "--seed", 11, "--format", "segments")
    assert result.exit_code == 0, result.output
    for broker in ("broker1", "broker2", "broker3"):
        shutil.copytree(root / "one", root / "three" / broker)
    return root


def decode(tmp_path, source, name):
    result = run("audit", "--input", source, "--output", tmp_path / name, "--as-of", "2026-01-10T00:00:00Z", "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_a_partition_copied_from_three_brokers_is_replayed_once(spark, dump, tmp_path):
    one = decode(tmp_path, dump / "one", "one")
    three = decode(tmp_path, dump / "three", "three")
    read = one["counts"]["records_read"]
    assert three["counts"]["records_read"] == 3 * read
    assert three["counts"]["decoded"] + three["counts"]["skipped_by_reason"]["superseded"] == (
        one["counts"]["decoded"] + one["counts"]["skipped_by_reason"]["superseded"]
    )
    assert three["counts"]["skipped_by_reason"]["duplicate copy"] == 2 * read
    notes = three["counts"]["format_notes"]
    root = str(dump / "three")
    assert notes == {
        f"the same record as in '{root}/broker1', counted once: left out of '{root}/broker2'": read,
        f"the same record as in '{root}/broker1', counted once: left out of '{root}/broker3'": read,
    }
    for table in ("partition_verdicts", "group_verdicts"):
        a, b = (DeltaTable(str(tmp_path / name / table)).to_pyarrow_table() for name in ("one", "three"))
        same = [c for c in a.column_names if c not in ("run_id", "snapshot_id", "input")]
        assert a.num_rows > 0
        assert sorted(map(repr, a.select(same).to_pylist())) == sorted(map(repr, b.select(same).to_pylist())), table


def test_an_old_copy_does_not_bring_back_what_a_newer_one_deleted(spark, tmp_path):
    """The older dump still holds g's commit on orders-0; by the newer one the group deleted it (a
    tombstone) and the cleaner has removed both. Merged, the offset stays gone, as on the broker."""
    old = tmp_path / "old" / "__consumer_offsets-3"
    new = tmp_path / "new" / "__consumer_offsets-3"
    old.mkdir(parents=True)
    new.mkdir(parents=True)
    (old / "00000000000000000000.log").write_bytes(
        batch(0, [group_record("g", 1, members=[])]) + batch(1, [commit("g", "orders", 0, 10, 1)])
    )
    # offsets 1 (the commit) and 2 (its tombstone) cleaned away; the segment keeps its base offset
    (new / "00000000000000000000.log").write_bytes(
        batch(0, [group_record("g", 1, members=[])]) + batch(3, [commit("g", "payments", 0, 7, 2)])
    )
    result = run("decode", "--input", tmp_path / "old", "--input", tmp_path / "new", "--output", tmp_path / "out",
                 "--input-format", "segments", "--json")  # fmt: skip
    assert result.exit_code == 0, result.output
    counts = json.loads(result.stdout)["counts"]
    assert counts["records_read"] == 4
    assert counts["skipped_by_reason"] == {"duplicate copy": 1, "compacted in another copy": 1}
    commits = DeltaTable(str(tmp_path / "out" / "offset_commits")).to_pyarrow_table()
    assert commits.column("topic").to_pylist() == ["payments"]


def test_segments_that_diverged_keep_the_later_leader_epochs_batches(spark, tmp_path):
    """Real segment bytes: the epoch is read from each batch's header (bytes 12-16)."""
    old = tmp_path / "b1" / "__consumer_offsets-0"
    new = tmp_path / "b2" / "__consumer_offsets-0"
    old.mkdir(parents=True)
    new.mkdir(parents=True)
    first = batch(0, [commit("g", "orders", 0, 10, 1)])
    (old / "00000000000000000000.log").write_bytes(
        first + record_batch(1, [commit("g", "orders", 0, 11, 2)], leader_epoch=5)
    )
    (new / "00000000000000000000.log").write_bytes(
        first + record_batch(1, [commit("g", "orders", 0, 99, 3)], leader_epoch=6)
    )
    result = run("decode", "--input", tmp_path, "--output", tmp_path / "out", "--json")
    assert result.exit_code == 0, result.output
    counts = json.loads(result.stdout)["counts"]
    assert counts["skipped_by_reason"] == {"duplicate copy": 1, "diverged copy": 1}
    note = f"__consumer_offsets-0 in '{tmp_path}/b1' diverged from '{tmp_path}/b2' (leader epoch 5 against 6)"
    assert any(n.startswith(note) for n in counts["format_notes"]), counts["format_notes"]
    commits = DeltaTable(str(tmp_path / "out" / "offset_commits")).to_pyarrow_table()
    assert sorted(commits.column("committed_offset").to_pylist()) == [10, 99]


def test_snapshots_whose_offsets_overlap_are_merged_and_disjoint_ones_only_put_together(spark, dump, tmp_path):
    """The same snapshot given twice is all duplicates; the snapshot's two halves (by partition) given
    as two inputs share no offsets, and nothing is left out."""
    import pyarrow.parquet as pq

    once = decode(tmp_path, dump / "snap", "once")
    shutil.copytree(dump / "snap", tmp_path / "again")
    result = run("audit", "--input", dump / "snap", "--input", tmp_path / "again", "--output", tmp_path / "twice",
                 "--as-of", "2026-01-10T00:00:00Z", "--json")  # fmt: skip
    assert result.exit_code == 0, result.output
    twice = json.loads(result.stdout)["counts"]
    read = once["counts"]["records_read"]
    assert twice["records_read"] == 2 * read
    assert twice["skipped_by_reason"]["duplicate copy"] == read
    assert twice["format_notes"] == {
        f"the same record as in '{dump / 'snap'}', counted once: left out of '{tmp_path / 'again'}'": read
    }
    table = pq.read_table(dump / "snap")
    low = table.filter(pa.compute.less(table.column("partition"), 5))
    high = table.filter(pa.compute.greater_equal(table.column("partition"), 5))
    for name, part in (("low", low), ("high", high)):
        (tmp_path / name).mkdir()
        pq.write_table(part, tmp_path / name / "part-0.parquet")
    result = run("audit", "--input", tmp_path / "low", "--input", tmp_path / "high", "--output", tmp_path / "halves",
                 "--as-of", "2026-01-10T00:00:00Z", "--json")  # fmt: skip
    assert result.exit_code == 0, result.output
    halves = json.loads(result.stdout)["counts"]
    assert halves["records_read"] == read and "duplicate copy" not in halves["skipped_by_reason"]
    for table_name in ("partition_verdicts",):
        a, b = (DeltaTable(str(tmp_path / n / table_name)).to_pyarrow_table() for n in ("once", "halves"))
        same = [c for c in a.column_names if c not in ("run_id", "snapshot_id", "input")]
        assert sorted(map(repr, a.select(same).to_pylist())) == sorted(map(repr, b.select(same).to_pylist()))


def test_segments_and_a_snapshot_of_the_same_partitions_are_one_log(spark, dump, tmp_path):
    """--input-format auto over a broker folder and the snapshot it was written from: read as 'mixed',
    each by its own reader, and every record of the second counted once."""
    result = run("audit", "--input", dump / "one", "--input", dump / "snap", "--output", tmp_path / "mixed",
                 "--as-of", "2026-01-10T00:00:00Z", "--json")  # fmt: skip
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["input_format"] == "mixed"
    read = decode(tmp_path, dump / "snap", "snap")["counts"]["records_read"]
    assert report["counts"]["records_read"] == 2 * read
    assert report["counts"]["skipped_by_reason"]["duplicate copy"] == read
    a, b = (DeltaTable(str(tmp_path / n / "group_verdicts")).to_pyarrow_table() for n in ("snap", "mixed"))
    same = [c for c in a.column_names if c not in ("run_id", "snapshot_id", "input")]
    assert sorted(map(repr, a.select(same).to_pylist())) == sorted(map(repr, b.select(same).to_pylist()))


def test_the_leader_epoch_checkpoint_settles_what_compacted_batches_no_longer_show():
    """b2 led from offset 2 in epoch 6, but its cleaner removed offsets 2-4: its batches show epoch 6
    from offset 5 only. Its leader-epoch-checkpoint still says 6 began at 2, so b1's epoch-5 records at
    2-4 are gone, as the broker's truncation to offset 2 removed them."""
    a = rows((0, b"k", b"v0", 1), (2, b"a", b"x", 3), (3, b"b", b"y", 4), (4, b"c", b"z", 5))
    b = rows((0, b"k", b"v0", 1), (5, b"d", b"w", 6))
    made = [
        copies.Copy("'b1'", a, epochs=np.array([0, 5, 5, 5])),
        copies.Copy("'b2'", b, epochs=np.array([0, 6]), epoch_starts=((0, 0), (6, 2))),
    ]
    assert states(copies.merge(made, "__consumer_offsets-0")) == [
        (0, None), (0, "duplicate"), (2, "diverged"), (3, "diverged"), (4, "diverged"), (5, None)
    ]  # fmt: skip
    without = [made[0], copies.Copy("'b2'", b, epochs=np.array([0, 6]))]
    assert [s for _, s in states(copies.merge(without, "__consumer_offsets-0"))].count("diverged") == 0


def test_kafka_dump_log_text_of_two_brokers_counts_once_and_a_marker_in_another_input_still_labels(spark, tmp_path):
    """The same kafka-dump-log text from two brokers is one log; the text of two consecutive segments
    given as two inputs shares no offset, and the ABORT marker in the second still cancels the first's
    transactional commit."""
    from repo_paths import TEXT_DUMPS

    text = (TEXT_DUMPS / "dump_log_3_8.txt").read_text()
    once = run("decode", "--input", TEXT_DUMPS / "dump_log_3_8.txt", "--output", tmp_path / "once", "--json")
    assert once.exit_code == 0, once.output
    read, unread = (json.loads(once.stdout)["counts"][k] for k in ("records_read", "quarantined"))
    for broker in ("b1", "b2"):
        (tmp_path / broker).mkdir()
        (tmp_path / broker / "dump.txt").write_text(text)
    twice = run("decode", "--input", tmp_path / "b1" / "dump.txt", "--input", tmp_path / "b2" / "dump.txt",
                "--output", tmp_path / "twice", "--json")  # fmt: skip
    assert twice.exit_code == 0, twice.output
    counts = json.loads(twice.stdout)["counts"]
    # lines the reader could not read stay quarantined in both copies: error rows are never merged
    assert counts["records_read"] == 2 * read and counts["skipped_by_reason"]["duplicate copy"] == read - unread
    assert counts["quarantined"] == 2 * unread
    assert counts["skipped_by_reason"]["aborted transaction"] == 1  # b2's copy of it is a duplicate

    lines = text.splitlines(keepends=True)
    cut = next(i for i, line in enumerate(lines) if "isControl: true" in line)
    (tmp_path / "first.txt").write_text("".join(lines[:cut]))
    (tmp_path / "second.txt").write_text(
        "Dumping /var/lib/kafka/data/__consumer_offsets-12/00000000000000012361.log\n" + "".join(lines[cut:])
    )
    split = run("decode", "--input", tmp_path / "first.txt", "--input", tmp_path / "second.txt", "--output",
                tmp_path / "split", "--json")  # fmt: skip
    assert split.exit_code == 0, split.output
    counts = json.loads(split.stdout)["counts"]
    assert counts["records_read"] == read and "duplicate copy" not in counts["skipped_by_reason"]
    assert counts["skipped_by_reason"]["aborted transaction"] == 1


def test_share_state_segments_of_two_brokers_are_replayed_once(spark, tmp_path):
    """`share` reads __share_group_state folders through the same merge: the leader's and a follower's
    copies give the share tables of one copy, and the second copy's records are counted as duplicates."""
    from offset_audit.generator.share_world import generate_share_state
    from offset_audit.generator.writers import snapshot_to_segments
    from offset_audit.runs.share import run_share
    from offset_audit.runtime.config import load_settings

    generate_share_state(str(tmp_path / "state"), 3_000, seed=3, world_records=2_000)
    snapshot_to_segments(str(tmp_path / "state"), str(tmp_path / "one"), topic="__share_group_state")
    for broker in ("b1", "b2"):
        shutil.copytree(tmp_path / "one", tmp_path / "two" / broker)
    once = run_share(spark, [str(tmp_path / "one")], str(tmp_path / "out-one"), load_settings())
    twice = run_share(spark, [str(tmp_path / "two")], str(tmp_path / "out-two"), load_settings())
    assert twice.report.records_read == 2 * once.report.records_read
    assert twice.report.skipped_by_reason == {"duplicate copy": once.report.records_read - once.report.quarantined}
    for table in ("share_partitions", "share_state_batches"):
        a, b = (DeltaTable(str(tmp_path / n / table)).to_pyarrow_table() for n in ("out-one", "out-two"))
        same = [c for c in a.column_names if c not in ("run_id", "snapshot_id", "input")]
        assert a.num_rows > 0, table
        assert sorted(map(repr, a.select(same).to_pylist())) == sorted(map(repr, b.select(same).to_pylist())), table
