"""Snapshot retention (--keep-snapshots) and table upkeep (tidy) on folders built as a year of runs leaves
them: one real audit, its snapshot written again through delta-rs' writer under earlier times."""

from __future__ import annotations

import os
import shutil
from datetime import UTC, datetime, timedelta

import pyarrow.compute as pc
import pytest
from click.testing import CliRunner
from deltalake import DeltaTable

from offset_audit.cli.main import main
from offset_audit.errors import UserError
from offset_audit.generator.snapshot_folder import repeat_snapshot
from offset_audit.outputs.delta import DELTA_RS, TableWriter
from offset_audit.runs.upkeep import tidy, to_remove
from offset_audit.settings import KeepSnapshots
from offset_audit.storage import LOCAL
from offset_audit.views import audit_folder, html_report
from offset_audit.views.audit_folder import Snapshot, snapshots
from offset_audit.views.describe import read_described, render
from offset_audit.views.prometheus import snapshot_metrics

AUDIT_TABLES = ("partition_verdicts", "group_verdicts", "deletion_candidates")
COPIES = 59  # and the audit's own: 60 snapshots
DELTA_RS_WRITER = TableWriter(DELTA_RS, LOCAL)


@pytest.fixture(scope="module")
def year(spark, tmp_path_factory):
    """An audit folder of 60 hourly snapshots: one audit of a generated dump with end offsets, and 59
    copies of it an hour apart before it."""
    from offset_audit.generator.demo_dump import generate_dump
    from offset_audit.runs.audit import run_audit
    from offset_audit.runtime.config import load_settings

    root = tmp_path_factory.mktemp("year")
    dump, output = str(root / "dump"), str(root / "audit")
    generate_dump(dump, 3_000, seed=3, end_offsets=str(root / "ends.txt"))
    run_audit(spark, [dump], output, load_settings(None), end_offsets=str(root / "ends.txt"))
    repeat_snapshot(output, COPIES)
    return output


@pytest.fixture
def folder(year, tmp_path):
    copy = str(tmp_path / "audit")
    shutil.copytree(year, copy)
    return copy


def partition_ids(folder: str, table: str) -> set[str]:
    actions = DeltaTable(f"{folder}/{table}").get_add_actions(flatten=True)
    return set(actions.column("partition.snapshot_id").to_pylist())


def read_views(folder: str) -> tuple[str, list[dict], str, list]:
    """What describe, delete-plan, metrics and report's history show of the newest snapshot."""
    described = render(read_described(folder, LOCAL, [], None, None, None))
    _, plan = audit_folder.delete_plan(folder)
    metrics = snapshot_metrics(folder).text
    history = html_report.read_audit(folder).history
    return described, plan, metrics, history


@pytest.mark.parametrize(
    ("text", "keep"),
    [("48", KeepSnapshots(count=48)), (48, KeepSnapshots(count=48)), ("30d", KeepSnapshots(minutes=43200))],
)
def test_keep_snapshots_is_a_count_or_a_duration(text, keep):
    assert KeepSnapshots.parse(text, "--keep-snapshots") == keep


@pytest.mark.parametrize("text", ["0", "0d", "abc", "-3", "2y"])
def test_a_keep_that_keeps_nothing_or_is_not_a_count_is_refused(text):
    with pytest.raises(UserError, match="--keep-snapshots takes a count of snapshots"):
        KeepSnapshots.parse(text, "--keep-snapshots")


def _listed(hours: list[int]) -> list[Snapshot]:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    return [Snapshot(f"s{h}", start + timedelta(hours=h), 10080) for h in hours]


def test_retention_keeps_the_newest_count_or_those_within_the_duration_of_the_newest():
    listed = _listed([0, 1, 2, 5, 30, 49])
    assert [s.snapshot_id for s in to_remove(listed, KeepSnapshots(count=4))] == ["s0", "s1"]
    assert to_remove(listed, KeepSnapshots(count=6)) == [] == to_remove(listed, KeepSnapshots(count=60))
    # 24 hours before the newest (49): 25 is the cutoff, 30 and 49 stay.
    assert [s.snapshot_id for s in to_remove(listed, KeepSnapshots(minutes=24 * 60))] == ["s0", "s1", "s2", "s5"]
    # The newest always stays, whatever the duration.
    assert [s.snapshot_id for s in to_remove(listed, KeepSnapshots(minutes=1))] == ["s0", "s1", "s2", "s5", "s30"]


def test_a_snapshot_that_only_names_one_has_no_time_to_judge_by():
    named = Snapshot("s", None, None, cluster="east")
    with pytest.raises(ValueError, match="snapshot 's' only names one"):
        _ = named.judged_at
    assert _listed([3])[0].judged_at == datetime(2026, 1, 1, 3, tzinfo=UTC)


def test_a_retention_of_48_leaves_exactly_the_newest_48_in_every_table_and_every_file_they_list(folder):
    before = snapshots(folder)
    assert len(before) == COPIES + 1
    newest = [s.snapshot_id for s in before[-48:]]
    views = read_views(folder)
    runs = DeltaTable(f"{folder}/runs").to_pyarrow_table().num_rows

    done = tidy(folder, DELTA_RS_WRITER, None, KeepSnapshots(count=48), deleted_file_retention_minutes=0)

    assert [s.snapshot_id for s in snapshots(folder)] == newest
    for table in AUDIT_TABLES:
        assert partition_ids(folder, table) == set(newest), table
        operations = [c["operation"] for c in DeltaTable(f"{folder}/{table}").history(3)]
        assert operations == ["VACUUM END", "VACUUM START", "DELETE"], table
    listed = DeltaTable(f"{folder}/snapshots").to_pyarrow_table()
    assert sorted(listed.column("snapshot_id").to_pylist()) == sorted(newest)
    [removed] = done.removed
    assert removed.kind == "audit" and removed.kept == 48
    assert removed.snapshot_ids == [s.snapshot_id for s in before[:12]]
    # The runs rows say what each run did: retention keeps them.
    assert DeltaTable(f"{folder}/runs").to_pyarrow_table().num_rows == runs
    # Vacuumed at 0: the files on the store are exactly those the tables list, and every one is there.
    for table in done.after:
        live = DeltaTable(f"{folder}/{table}").file_uris()
        assert all(os.path.exists(f) for f in live), table
        assert done.after[table].data_files == len(live) == done.after[table].live_files, table
    assert done.vacuumed_files > 0
    # What the read commands show of the newest snapshot has not changed; the history chart lost the 12.
    described, plan, metrics, history = read_views(folder)
    assert (described, plan, metrics) == views[:3]
    assert history == views[3][12:]


def test_a_duration_keeps_the_snapshots_judged_within_it_of_the_newest(folder):
    newest = snapshots(folder)[-1]
    tidy(folder, DELTA_RS_WRITER, None, KeepSnapshots(minutes=10 * 60), deleted_file_retention_minutes=10080)
    kept = snapshots(folder)
    assert len(kept) == 11 and kept[-1] == newest
    assert all(newest.as_of - s.as_of <= timedelta(hours=10) for s in kept)


def test_files_a_reader_of_an_older_version_needs_stay_for_the_deleted_file_retention(folder):
    version = DeltaTable(f"{folder}/partition_verdicts").version()
    tidy(folder, DELTA_RS_WRITER, None, KeepSnapshots(count=5), deleted_file_retention_minutes=10080)
    older = DeltaTable(f"{folder}/partition_verdicts", version=version)
    assert len(older.file_uris()) > len(DeltaTable(f"{folder}/partition_verdicts").file_uris())
    assert all(os.path.exists(f) for f in older.file_uris())


def test_each_run_compacts_the_runs_table_once_it_holds_eight_files(tmp_path):
    from offset_audit.decoding.report import DecodeReport
    from offset_audit.outputs.runs_table import write_run

    output = str(tmp_path)
    for run in range(1, 11):
        write_run(None, DELTA_RS_WRITER, DecodeReport.start("audit", ["in"], "parquet", ""), output)
        files = len(DeltaTable(f"{output}/runs").file_uris())
        assert files == (run if run < 8 else run - 7), run
    assert DeltaTable(f"{output}/runs").to_pyarrow_table().num_rows == 10


def test_tidy_compacts_a_table_appends_left_many_files_in_and_keeps_its_rows(folder):
    from deltalake import write_deltalake

    runs = DeltaTable(f"{folder}/runs").to_pyarrow_table()
    for row in range(12):  # as a version of this tool that never compacted left it
        write_deltalake(f"{folder}/runs", runs.slice(row, 1), mode="append")
    rows = DeltaTable(f"{folder}/runs").to_pyarrow_table().sort_by("run_id")
    done = tidy(folder, DELTA_RS_WRITER, None, None, deleted_file_retention_minutes=10080)
    assert done.compacted == ["runs"]  # one file per snapshot elsewhere: nothing to compact
    compacted = DeltaTable(f"{folder}/runs")
    assert len(compacted.file_uris()) == 1
    assert compacted.to_pyarrow_table().sort_by("run_id").equals(rows)
    assert done.removed == []


def test_report_draws_the_history_from_the_snapshots_table_not_every_snapshots_rows(folder, monkeypatch):
    read = []
    original = html_report.read_snapshot

    def counted(folder, table, snapshot_id, *args, **kwargs):
        read.append((table, snapshot_id))
        return original(folder, table, snapshot_id, *args, **kwargs)

    monkeypatch.setattr(html_report, "read_snapshot", counted)
    audit = html_report.read_audit(folder)
    assert len(audit.history) == COPIES + 1
    assert [table for table, _ in read].count("partition_verdicts") == 1
    # The listed totals are what the rows give.
    from offset_audit.snapshot_totals import snapshot_totals

    oldest = snapshots(folder)[0]
    rows = audit_folder.read_snapshot(
        folder, "partition_verdicts", oldest.snapshot_id, columns=["expires_at", "expired", "lag"]
    )
    assert audit.history[0] == snapshot_totals(oldest.snapshot_id, oldest.judged_at, rows)
    assert audit.history[0].lag is not None and audit.history[0].expired > 0


def test_a_folder_written_before_the_snapshots_table_lists_its_snapshots_from_their_rows(folder):
    listed = snapshots(folder)
    shutil.rmtree(f"{folder}/snapshots")
    found = snapshots(folder)
    assert [s.snapshot_id for s in found] == [s.snapshot_id for s in listed]
    assert [s.as_of for s in found] == [s.as_of for s in listed] and all(s.totals is None for s in found)
    assert html_report.read_audit(folder).history == html_report.read_audit(folder).history


def test_tidy_from_the_command_line_says_what_it_removed_and_never_starts_spark(folder, no_spark):
    result = CliRunner().invoke(main, ["tidy", "--audit", folder, "--keep-snapshots", "50"])
    assert result.exit_code == 0, result.output
    assert "removed 10 audit snapshots" in result.output and "50 kept" in result.output
    assert "compacted none" in result.output
    again = CliRunner().invoke(main, ["tidy", "--audit", folder, "--keep-snapshots", "50", "--json"])
    assert '"removed": []' in again.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--keep-snapshots", "0"], "--keep-snapshots"),
        (["--keep-snapshots", "forever"], "--keep-snapshots"),
        (["--deleted-file-retention", "soon"], "--deleted-file-retention"),
    ],
)
def test_tidy_refuses_a_wrong_option_in_one_sentence(folder, no_spark, args, message):
    result = CliRunner().invoke(main, ["tidy", "--audit", folder, *args])
    assert result.exit_code == 2 and message in result.output


def unrelated_table(path: str) -> None:
    """Someone else's Delta table, with a version 0 whose file version 1 no longer lists."""
    import pyarrow as pa
    from deltalake import write_deltalake

    write_deltalake(path, pa.table({"x": [1, 2]}))
    write_deltalake(path, pa.table({"x": [3]}), mode="overwrite")


def versions_readable(path: str) -> list[int]:
    return [v for v in (0, 1) if DeltaTable(path, version=v).to_pyarrow_table().num_rows]


def test_tidy_refuses_what_is_no_audit_folder_and_touches_no_table_there(folder, tmp_path, no_spark):
    """A parent of several audits, an audit's state folder, a folder that does not exist: each refused in
    one sentence, and every table under them keeps every version."""
    parent = tmp_path / "audits"
    shutil.copytree(folder, parent / "prod")
    shutil.copytree(folder, parent / "staging")
    unrelated_table(str(parent / "theirs"))
    cases = [
        (
            str(parent),
            f"'{parent}' is not an audit's output folder (it holds no runs table), and tidy touches no other",
        ),
        (f"{folder}/decoded", "is not an audit's output folder (it holds no runs table)"),
        (str(tmp_path / "nowhere"), f"'{tmp_path / 'nowhere'}' does not exist: give the --output folder of an audit"),
    ]
    for path, says in cases:
        result = CliRunner().invoke(main, ["tidy", "--audit", path, "--deleted-file-retention", "0"])
        assert result.exit_code == 2 and result.output.count("\n") == 1 and says in result.output, result.output
    assert versions_readable(str(parent / "theirs")) == [0, 1]
    for audit in ("prod", "staging"):
        assert len(DeltaTable(str(parent / audit / "group_verdicts")).history()) == COPIES + 1


def test_tidy_of_an_audit_folder_leaves_a_table_it_did_not_write_as_it_was(folder, no_spark):
    """docs/upkeep.md lists the tables upkeep works on; anything else in the folder is someone else's."""
    unrelated_table(f"{folder}/theirs")
    unrelated_table(f"{folder}/decoded/theirs")
    result = CliRunner().invoke(main, ["tidy", "--audit", folder, "--deleted-file-retention", "0", "--json"])
    assert result.exit_code == 0, result.output
    assert versions_readable(f"{folder}/theirs") == versions_readable(f"{folder}/decoded/theirs") == [0, 1]
    assert len(DeltaTable(f"{folder}/theirs").history()) == 2  # no commit of ours either


def test_a_config_keep_snapshots_is_checked_before_anything_starts(tmp_path, no_spark):
    conf = tmp_path / "c.toml"
    conf.write_text('[output]\nkeep_snapshots = "a year"\n')
    result = CliRunner().invoke(
        main, ["audit", "--input", str(tmp_path), "--output", str(tmp_path / "o"), "--conf", str(conf)]
    )
    assert result.exit_code == 2
    assert "keep_snapshots in the config takes a count of snapshots" in result.output


def test_an_audit_with_keep_snapshots_removes_the_older_ones_after_itself(spark, tmp_path):
    from offset_audit.generator.demo_dump import generate_dump
    from offset_audit.runs.audit import run_audit
    from offset_audit.runtime.config import load_settings
    from offset_audit.views.json_documents import audit_document
    from offset_audit.views.summary import audit_summary

    dump, output = str(tmp_path / "dump"), str(tmp_path / "audit")
    generate_dump(dump, 1_000, seed=5)
    results = []
    for day in (1, 2, 3):
        settings = load_settings(None, as_of=f"2026-11-0{day}T00:00:00Z", keep_snapshots=KeepSnapshots(count=2))
        results.append(run_audit(spark, [dump], output, settings))
    assert [s.snapshot_id for s in snapshots(output)] == [r.snapshot_id for r in results[1:]]
    summary = audit_summary(results[-1], output)
    assert f"removed 1 audit snapshot ({results[0].snapshot_id}), 2 kept" in summary
    upkeep = audit_document(results[-1], output)["upkeep"]
    assert upkeep["removed"][0]["snapshot_ids"] == [results[0].snapshot_id]
    assert upkeep["keep_snapshots"] == "the newest 2 snapshots"
    assert pc.sum(pc.equal(DeltaTable(f"{output}/runs").to_pyarrow_table()["command"], "audit")).as_py() == 3


@pytest.mark.delta_spark
def test_retention_through_delta_spark_leaves_the_newest_48_for_both_writers(spark, tmp_path):
    """An audit written by delta-spark, 59 earlier copies through delta-rs, then a later audit with
    --keep-snapshots 48 through delta-spark: its delete, optimize and vacuum are delta-spark's own, and
    both writers read exactly the newest 48 afterwards."""
    from offset_audit.generator.demo_dump import generate_dump
    from offset_audit.outputs.delta import has_delta
    from offset_audit.runs.audit import run_audit
    from offset_audit.runtime.config import load_settings

    assert has_delta(spark)
    dump, output = str(tmp_path / "dump"), str(tmp_path / "audit")
    generate_dump(dump, 3_000, seed=3)
    first = run_audit(spark, [dump], output, load_settings(None, as_of="2026-11-01T00:00:00Z"))
    repeat_snapshot(output, COPIES)
    keep = load_settings(None, as_of="2026-11-02T00:00:00Z", keep_snapshots=KeepSnapshots(count=48))
    later = run_audit(spark, [dump], output, keep.replaced("output", deleted_file_retention_minutes=0))

    listed = [s.snapshot_id for s in snapshots(output)]
    assert len(listed) == 48 and listed[-2:] == [first.snapshot_id, later.snapshot_id]
    upkeep = later.report.upkeep
    assert len(upkeep["removed"][0]["snapshot_ids"]) == COPIES + 2 - 48
    for table in (*AUDIT_TABLES, "snapshots"):
        read = spark.read.format("delta").load(f"{output}/{table}")
        assert {r.snapshot_id for r in read.select("snapshot_id").distinct().collect()} == set(listed), table
        if table != "snapshots":
            assert partition_ids(output, table) == set(listed), table
        assert all(os.path.exists(f) for f in DeltaTable(f"{output}/{table}").file_uris()), table
    operations = [r.operation for r in spark.sql(f"DESCRIBE HISTORY delta.`{output}/group_verdicts`").collect()]
    assert "DELETE" in operations and "VACUUM END" in operations
