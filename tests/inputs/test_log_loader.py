"""A partition folder copied while the log cleaner ran, read as the broker's LogLoader recovers it:
.deleted and .cleaned files left out, a complete .swap file read in place of the segments it replaces
(and alone where they are already gone), a .swap past a .cleaned one (an unfinished split) left out.
Every record of a file left out is still counted, as skipped, with a note. The same cases, built from
a real broker's cleaning and checked against its own recovery, are in tests/coordinator/test_live_cleaner.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from deltalake import DeltaTable
from dump_records import commit
from segment_files import batch

from offset_audit.cli.main import main
from offset_audit.inputs import log_loader

OLD = {
    "00000000000000000000.log": [(0, ("orders", 10)), (1, ("orders", 11)), (2, ("orders", 12))],
    "00000000000000000003.log": [(3, ("orders", 13)), (4, ("payments", 5))],
}
ACTIVE = {"00000000000000000005.log": [(5, ("clicks", 7))]}
# What the cleaner makes of [0, 5): the last record of each key, in a segment named by the first base offset.
CLEANED = [(3, ("orders", 13)), (4, ("payments", 5))]
RECOVERED = {("clicks", 7), ("orders", 13), ("payments", 5)}


def segment(records) -> bytes:
    return b"".join(batch(offset, [commit("g", topic, 0, value, 1)]) for offset, (topic, value) in records)


def folder(root: Path, files: dict[str, bytes]) -> Path:
    partition = root / "__consumer_offsets-0"
    partition.mkdir(parents=True)
    for name, data in files.items():
        (partition / name).write_bytes(data)
    return root


def decoded(root: Path, out: Path) -> tuple[dict, set]:
    result = CliRunner().invoke(main, ["decode", "--input", str(root), "--output", str(out), "--json"])
    assert result.exit_code == 0, result.output
    commits = DeltaTable(str(out / "offset_commits")).to_pyarrow_table().to_pylist()
    return json.loads(result.stdout)["counts"], {(c["topic"], c["committed_offset"]) for c in commits}


def old_segments(suffix: str = "") -> dict[str, bytes]:
    return {name + suffix: segment(records) for name, records in OLD.items()}


BESIDE = {
    # files a data directory holds beside the segments, none of them records
    "00000000000000000000.index": b"\x00" * 8,
    "00000000000000000000.timeindex": b"\x00" * 12,
    "00000000000000000000.txnindex": b"",
    "00000000000000000005.snapshot": b"\x00\x01",
    "leader-epoch-checkpoint": b"0\n1\n0 0\n",
    "partition.metadata": b"version: 0\ntopic_id: 3qcjv0FQQ8ukXoBNd4hhZw\n",
}


@pytest.mark.parametrize(
    ("case", "files", "left_out"),
    [
        ("swap beside the segments it replaces", {**old_segments(), "00000000000000000000.log.swap": segment(CLEANED)},
         {log_loader.NOTE_REPLACED: 5}),
        ("swap beside segments renamed .deleted", {**old_segments(".deleted"), "00000000000000000000.log.swap":
         segment(CLEANED)}, {log_loader.NOTE_DELETED: 5}),
        ("swap alone: the only copy of its records", {"00000000000000000000.log.swap": segment(CLEANED)}, {}),
    ],
)  # fmt: skip
def test_a_complete_swap_file_is_the_log_and_what_it_replaces_is_counted_and_left_out(
    spark, tmp_path, case, files, left_out
):
    root = folder(tmp_path / "dump", {**files, **{n: segment(r) for n, r in ACTIVE.items()}, **BESIDE})
    counts, commits = decoded(root, tmp_path / "out")
    assert commits == RECOVERED, case
    assert counts["records_read"] == 3 + sum(left_out.values())
    assert counts["skipped_by_reason"] == ({"cleaner leftover": 5} if left_out else {})
    assert counts["format_notes"] == left_out
    assert counts["quarantined"] == 0


def test_an_unfinished_cleaned_file_is_left_out_even_where_it_is_cut_short(spark, tmp_path):
    cut = segment(CLEANED)[:-7]
    root = folder(tmp_path / "dump", {**old_segments(), "00000000000000000000.log.cleaned": cut,
                                      **{n: segment(r) for n, r in ACTIVE.items()}})  # fmt: skip
    counts, commits = decoded(root, tmp_path / "out")
    assert commits == {("orders", 10), ("orders", 11), ("orders", 12), ("orders", 13), ("payments", 5), ("clicks", 7)}
    assert counts["quarantined"] == 0  # the cut batch is the cleaner's, not the log's
    assert counts["skipped_by_reason"] == {"cleaner leftover": 2}  # one record, and the cut batch's error row
    assert counts["format_notes"] == {log_loader.NOTE_CLEANED: 2}


def test_a_swap_file_past_a_cleaned_one_is_an_unfinished_split_and_left_out(spark, tmp_path):
    root = folder(
        tmp_path / "dump",
        {**old_segments(), "00000000000000000000.log.cleaned": segment(CLEANED[:1]),
         "00000000000000000003.log.swap": segment(CLEANED[1:]), **{n: segment(r) for n, r in ACTIVE.items()}},
    )  # fmt: skip
    counts, commits = decoded(root, tmp_path / "out")
    assert ("orders", 10) in commits and ("payments", 5) in commits
    assert counts["format_notes"] == {log_loader.NOTE_CLEANED: 1, log_loader.NOTE_SPLIT: 1}


def test_the_loader_plan_names_what_it_keeps_and_why_it_leaves_the_rest():
    class F:
        def __init__(self, path):
            self.path = path

        def __repr__(self):
            return self.path

    files = [F(f"p/{n}") for n in ("00000000000000000000.log", "00000000000000000003.log",
                                    "00000000000000000000.log.swap", "00000000000000000005.log",
                                    "00000000000000000009.log.deleted")]  # fmt: skip
    plan = log_loader.plan(files, lambda f: 5)
    assert [f.path for f in plan.log] == ["p/00000000000000000000.log.swap", "p/00000000000000000005.log"]
    assert {(f.path, note) for f, note in plan.discarded} == {
        ("p/00000000000000000000.log", log_loader.NOTE_REPLACED),
        ("p/00000000000000000003.log", log_loader.NOTE_REPLACED),
        ("p/00000000000000000009.log.deleted", log_loader.NOTE_DELETED),
    }
    assert log_loader.plan(files[:2], lambda f: 0).discarded == []


def test_the_leader_epoch_checkpoint_and_partition_metadata_read_as_the_broker_writes_them(tmp_path):
    from offset_audit.storage import LOCAL

    (tmp_path / "leader-epoch-checkpoint").write_text("0\n2\n0 0\n3 1723\n")
    (tmp_path / "partition.metadata").write_text("version: 0\ntopic_id: 3qcjv0FQQ8ukXoBNd4hhZw\n")
    assert log_loader.epoch_starts(str(tmp_path), LOCAL) == ((0, 0), (3, 1723))
    assert log_loader.topic_id(str(tmp_path), LOCAL) == "3qcjv0FQQ8ukXoBNd4hhZw"
    (tmp_path / "leader-epoch-checkpoint").write_text("0\n3\n0 0\n")  # says 3 entries, holds 1
    assert log_loader.epoch_starts(str(tmp_path), LOCAL) is None
    assert log_loader.epoch_starts(str(tmp_path / "none"), LOCAL) is None


def test_folders_of_one_partition_from_two_clusters_are_refused_before_spark(no_spark, tmp_path):
    for broker, topic_id in (("b1", "3qcjv0FQQ8ukXoBNd4hhZw"), ("b2", "QbvyvJ5bSjOITcC4MTBHTg")):
        files = {n: segment(r) for n, r in ACTIVE.items()}
        files["partition.metadata"] = f"version: 0\ntopic_id: {topic_id}\n".encode()
        folder(tmp_path / broker, files)
    result = CliRunner().invoke(main, ["decode", "--input", str(tmp_path), "--output", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    assert result.output.count("\n") == 1
    assert "different ids (3qcjv0FQQ8ukXoBNd4hhZw and QbvyvJ5bSjOITcC4MTBHTg)" in result.output
