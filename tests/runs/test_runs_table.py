"""The `runs` table is written last by every command and names the version of each table the run
committed, so a reader can tell a whole snapshot from one a killed run left half new."""

from __future__ import annotations

import pytest
from deltalake import DeltaTable

from offset_audit.coordinator import verdicts
from offset_audit.generator.demo_dump import generate_dump
from offset_audit.generator.share_world import generate_share_state
from offset_audit.outputs.delta import RUN_ID_KEY
from offset_audit.runs.audit import run_audit
from offset_audit.runs.decode import run_decode
from offset_audit.runs.share import run_share
from offset_audit.runs.whatif import run_whatif
from offset_audit.runtime.config import load_settings


@pytest.fixture(scope="module")
def dumps(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    generate_dump(str(root / "offsets"), 1_500, seed=11)
    generate_share_state(str(root / "state"), 800, seed=11, world_records=1_500)
    return root


def _runs(output):
    return DeltaTable(f"{output}/runs").to_pyarrow_table().to_pylist()


def _commit(output, table, version):
    (commit,) = [c for c in DeltaTable(f"{output}/{table}").history() if c["version"] == version]
    return commit


COMMANDS = {
    "decode": lambda spark, d, out: run_decode(spark, [str(d / "offsets")], out, load_settings()),
    "audit": lambda spark, d, out: run_audit(spark, [str(d / "offsets")], out, load_settings()).report,
    "whatif": lambda spark, d, out: run_whatif(
        spark, [str(d / "offsets")], out, load_settings(), [60, 10080], ["latest"], per_group=True
    )[0],
    "share": lambda spark, d, out: (
        run_share(spark, [str(d / "state")], out, load_settings(), groups_inputs=[str(d / "offsets")]).report
    ),
}


@pytest.mark.parametrize("command", list(COMMANDS))
def test_the_runs_row_names_every_table_the_run_committed_and_its_version(spark, dumps, tmp_path, command):
    output = str(tmp_path / "out")
    report = COMMANDS[command](spark, dumps, output)
    (run,) = _runs(output)
    assert run["run_id"] == report.run_id
    versions = dict(run["table_versions"])
    assert set(versions) >= {name for name in report.table_rows if name != "runs"} - {"whatif_groups"}
    for table, version in versions.items():
        commit = _commit(output, table, version)
        assert commit[RUN_ID_KEY] == report.run_id, table
    # runs is the last commit of the run: every table's commit is older than the runs row.
    runs_commit = DeltaTable(f"{output}/runs").history(limit=1)[0]
    assert runs_commit[RUN_ID_KEY] == report.run_id
    assert all(_commit(output, t, v)["timestamp"] <= runs_commit["timestamp"] for t, v in versions.items())


def test_a_later_run_leaves_the_versions_an_earlier_run_names_readable(spark, dumps, tmp_path):
    output = str(tmp_path / "out")
    settings = load_settings(as_of="2026-01-01T00:00:00Z")
    first = run_audit(spark, [str(dumps / "offsets")], output, settings, snapshot_id="s").report
    rows_first = DeltaTable(f"{output}/partition_verdicts").to_pyarrow_table().num_rows
    run_audit(spark, [str(dumps / "offsets")], output, settings.replaced("audit", retention_minutes=1), snapshot_id="s")
    named = dict(next(r for r in _runs(output) if r["run_id"] == first.run_id)["table_versions"])
    old = DeltaTable(f"{output}/partition_verdicts", version=named["partition_verdicts"]).to_pyarrow_table()
    assert old.num_rows == rows_first and set(old.column("retention_minutes").to_pylist()) == {10080}


def test_a_run_that_dies_before_its_end_leaves_no_runs_row_and_its_commits_say_whose_they_are(
    spark, dumps, tmp_path, monkeypatch
):
    output = str(tmp_path / "out")
    finished = run_audit(spark, [str(dumps / "offsets")], output, load_settings()).report

    def dies(*_args):
        raise RuntimeError("killed")

    # group_verdicts is judged after partition_verdicts (and the candidates written with it) committed.
    monkeypatch.setattr(verdicts, "group_verdicts", dies)
    with pytest.raises(RuntimeError, match="killed"):
        run_audit(spark, [str(dumps / "offsets")], output, load_settings())
    assert [r["run_id"] for r in _runs(output)] == [finished.run_id]
    # partition_verdicts was committed again by the dead run: its newest commit names a run that has no
    # runs row, and the finished run's row still names the version that is whole.
    newest = DeltaTable(f"{output}/partition_verdicts").history(limit=1)[0]
    assert newest[RUN_ID_KEY] != finished.run_id
    named = dict(_runs(output)[0]["table_versions"])
    assert named["partition_verdicts"] < newest["version"]
