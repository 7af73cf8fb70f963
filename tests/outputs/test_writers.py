"""The two Delta writers side by side: delta-rs (the embedded default) and delta-spark (format("delta") on a
session with Delta configured), chosen with --writer.

The tests marked delta_spark need a session that has delta-spark's jars, which the suite's own session
cannot have beside it (one JVM, one SparkContext): tests/test_spark_jars.py runs them in a pytest of their
own (tests/spark_jars.py) and requires every one of them to pass. There:
- the same dump gives the same rows through either writer (every table with --keep-decoded, the
  verdicts with default flags);
- each writer appends to the tables the other wrote, and each reads the other's checkpoints;
- tables delta-spark creates keep deletion vectors off whatever the cluster's defaults;
- a rerun of a snapshot replaces its rows in one commit;
- two delta-spark runs into one folder at the same moment both land.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from deltalake import DeltaTable

from offset_audit.cli.main import main


@pytest.fixture(scope="module")
def dump(spark, tmp_path_factory) -> str:
    """A generated dump; asks for the session first, so every command of this module runs in it."""
    from offset_audit.generator.demo_dump import generate_dump

    path = tmp_path_factory.mktemp("writers") / "dump"
    generate_dump(str(path), 4000, seed=11, corrupt=2)
    return str(path)


def audit(dump: str, output: Path, writer: str, *flags: str) -> dict:
    result = CliRunner().invoke(
        main, ["audit", "--input", dump, "--output", str(output), "--writer", writer, "--quiet", "--json", *flags]
    )
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def tables(output: Path) -> list[str]:
    """The Delta tables under an output folder, as paths relative to it."""
    return sorted(str(log.parent.relative_to(output)) for log in output.rglob("_delta_log"))


def rows(path: Path, drop: tuple[str, ...] = ()) -> list[tuple]:
    """A table's rows in a stable order, read by delta-rs, without the columns in `drop`."""
    table = DeltaTable(str(path)).to_pyarrow_table()
    kept = [c for c in table.column_names if c not in drop]
    return sorted(tuple(repr(row[c]) for c in kept) for row in table.select(kept).to_pylist())


def commit_info(table: Path, version: int) -> dict:
    for line in (table / "_delta_log" / f"{version:020d}.json").read_text().splitlines():
        action = json.loads(line)
        if "commitInfo" in action:
            return action["commitInfo"]
    return {}


def written_by(table: Path, version: int) -> str:
    """Which writer made a commit: delta-spark names Spark in engineInfo, delta-rs does not."""
    return "delta-spark" if "Apache-Spark" in commit_info(table, version).get("engineInfo", "") else "delta-rs"


def plain_protocol(table: Path) -> bool:
    """Readers and writers of the protocol's first versions: no column mapping, no deletion vectors."""
    protocol = DeltaTable(str(table)).protocol()
    return (protocol.min_reader_version, protocol.min_writer_version) == (1, 2) and not protocol.reader_features


@pytest.mark.delta_spark
def test_the_same_dump_gives_the_same_rows_through_either_writer(dump, tmp_path):
    """With --keep-decoded, every table: a delta-spark session always decodes every record (docs/cluster.md)."""
    by_rs, by_spark = tmp_path / "rs", tmp_path / "spark"
    first = audit(dump, by_rs, "delta-rs", "--keep-decoded", "--snapshot-id", "s")
    second = audit(dump, by_spark, "delta-spark", "--keep-decoded", "--snapshot-id", "s")
    assert tables(by_rs) == tables(by_spark) and len(tables(by_rs)) >= 10
    for table in tables(by_rs):
        assert written_by(by_rs / table, 0) == "delta-rs" and written_by(by_spark / table, 0) == "delta-spark", table
        assert plain_protocol(by_rs / table) and plain_protocol(by_spark / table), table
        if table != "runs":
            # the snapshots table's written_at is when each run wrote it
            assert rows(by_rs / table, ("written_at",)) == rows(by_spark / table, ("written_at",)), table
    assert first["counts"] == second["counts"]
    assert first["offsets"] == second["offsets"] and first["groups"] == second["groups"]
    # the runs row of each: the same rows written to each table, whichever writer wrote them
    runs = [DeltaTable(str(out / "runs")).to_pyarrow_table().to_pylist()[0] for out in (by_rs, by_spark)]
    assert dict(runs[0]["table_rows"]) == dict(runs[1]["table_rows"])
    assert sum(dict(runs[0]["table_rows"]).values()) > 0


@pytest.mark.delta_spark
def test_with_default_flags_either_writer_gives_the_same_verdicts_even_where_a_last_record_is_unreadable(
    spark, tmp_path
):
    """delta-rs runs decode each task's last record of a key, delta-spark runs decode every record: the
    verdicts must not depend on it, also for a key whose newest record is damaged, which only the
    delta-rs run leaves undecoded before it."""
    from offset_audit.generator.demo_dump import generate_dump

    dump = tmp_path / "dump"
    generate_dump(str(dump), 4000, seed=7, corrupt=12)
    by_rs, by_spark = tmp_path / "rs", tmp_path / "spark"
    first = audit(str(dump), by_rs, "delta-rs", "--snapshot-id", "s")
    second = audit(str(dump), by_spark, "delta-spark", "--snapshot-id", "s")
    verdicts = [t for t in tables(by_rs) if t not in ("runs", "snapshots") and not t.startswith("decoded")]
    assert len(verdicts) == 3 and tables(by_rs) == tables(by_spark)
    for table in verdicts:
        assert rows(by_rs / table) == rows(by_spark / table), table
    assert first["offsets"] == second["offsets"] and first["groups"] == second["groups"]
    # The case is there: a commit key whose last record is quarantined has older readable commits
    # (delta-spark kept them all in decoded/offset_commits), and no verdict.
    judged = {(r["group_id"], r["topic"], r["partition"]) for r in table_dicts(by_rs / "partition_verdicts")}
    committed = {(r["group_id"], r["topic"], r["partition"]) for r in table_dicts(by_spark / "decoded/offset_commits")}
    damaged = {
        (q["group_id"], q["topic"], q["partition"])
        for q in table_dicts(by_rs / "decoded/quarantine")
        if q["topic"] is not None
    }
    assert damaged & committed - judged, (damaged, judged & damaged)


def table_dicts(path: Path) -> list[dict]:
    return DeltaTable(str(path)).to_pyarrow_table().to_pylist()


@pytest.mark.delta_spark
def test_a_session_with_delta_reads_local_decode_tables_through_delta_rs_listing(spark, dump, tmp_path):
    """docs/cluster.md: the rows delta-spark reads, without the two Spark jobs its snapshot of each table
    costs. (Tables delta-spark wrote are read this way by every audit this session runs, whose verdicts
    the tests above compare with a delta-rs run's.)"""
    from offset_audit.decoding.decoder import TABLES
    from offset_audit.outputs.read_back import read_table

    audit(dump, tmp_path, "delta-rs", "--keep-decoded")
    tracker = spark.sparkContext.statusTracker()
    for name in TABLES:
        jobs = len(tracker.getJobIdsForGroup(None))
        frame = read_table(spark, str(tmp_path / "decoded"), name)
        assert len(tracker.getJobIdsForGroup(None)) == jobs, name
        expected = spark.read.format("delta").load(str(tmp_path / "decoded" / name)).select(*frame.columns)
        got = sorted(map(repr, frame.collect()))
        assert got == sorted(map(repr, expected.collect())), name
        assert got or name in ("quarantine", "other_records", "modern_group_records"), name


@pytest.mark.delta_spark
def test_each_writer_appends_to_the_tables_the_other_wrote(spark, dump, tmp_path):
    out = tmp_path / "mixed"
    writers = {"one": "delta-rs", "two": "delta-spark", "three": "delta-rs", "four": "delta-spark"}
    for snapshot, writer in writers.items():
        audit(dump, out, writer, "--snapshot-id", snapshot)
    verdicts = out / "partition_verdicts"
    assert [written_by(verdicts, v) for v in range(4)] == list(writers.values())
    assert all(plain_protocol(out / table) for table in tables(out))
    by_snapshot = {}
    table = DeltaTable(str(verdicts)).to_pyarrow_table()
    for snapshot in writers:
        picked = table.filter(table.column("snapshot_id").to_numpy(zero_copy_only=False) == snapshot)
        by_snapshot[snapshot] = sorted(repr(r) for r in picked.drop_columns(["snapshot_id"]).to_pylist())
    assert by_snapshot["one"] and all(r == by_snapshot["one"] for r in by_snapshot.values())
    # delta-spark reads the same table, each snapshot whole
    counts = spark.read.format("delta").load(str(verdicts)).groupBy("snapshot_id").count().collect()
    assert {r.snapshot_id: r["count"] for r in counts} == {s: len(by_snapshot["one"]) for s in writers}
    runs = DeltaTable(str(out / "runs")).to_pyarrow_table().to_pylist()
    assert sorted(r["snapshot_id"] for r in runs) == sorted(writers)
    assert sorted(dict(r["table_versions"])["partition_verdicts"] for r in runs) == [0, 1, 2, 3]
    # the read commands read what both wrote
    described = CliRunner().invoke(main, ["describe", "--audit", str(out), "--json"])
    assert described.exit_code == 0, described.output


@pytest.mark.delta_spark
@pytest.mark.parametrize("checkpointer", ["delta-rs", "delta-spark"])
def test_each_writer_reads_and_appends_past_the_others_checkpoint(spark, tmp_path, checkpointer):
    """Commits alternate between the writers until one writes a checkpoint (delta.checkpointInterval =
    10: delta-rs writes it with version 9, the tenth commit; delta-spark with version 10). With the JSON
    commits before it removed, as log cleanup does, both must read the table from that checkpoint and
    append after it."""
    from offset_audit.outputs.delta import TableWriter, write_delta
    from offset_audit.storage import LOCAL

    path = tmp_path / "t"
    at = 9 if checkpointer == "delta-rs" else 10
    for version in range(at + 1):
        writer = checkpointer if version == at else ["delta-rs", "delta-spark"][version % 2]
        frame = spark.createDataFrame([(version, f"v{version}")], "n bigint, s string")
        write_delta(frame, str(path), TableWriter(writer, LOCAL), mode="append")
    log = path / "_delta_log"
    assert sorted(p.name for p in log.glob("*.checkpoint.parquet")) == [f"{at:020d}.checkpoint.parquet"]
    assert written_by(path, at) == checkpointer
    for version in range(at):
        (log / f"{version:020d}.json").unlink()
    for extra, writer in enumerate(["delta-rs", "delta-spark"], start=at + 1):
        frame = spark.createDataFrame([(extra, "x")], "n bigint, s string")
        write_delta(frame, str(path), TableWriter(writer, LOCAL), mode="append")
    expected = list(range(at + 3))
    assert sorted(DeltaTable(str(path)).to_pyarrow_table().column("n").to_pylist()) == expected
    assert sorted(r.n for r in spark.read.format("delta").load(str(path)).collect()) == expected


@pytest.mark.delta_spark
def test_tables_delta_spark_creates_keep_deletion_vectors_off_whatever_the_cluster_defaults(spark, tmp_path):
    from offset_audit.errors import UserError
    from offset_audit.inputs.kafka_source import check_plain_files
    from offset_audit.outputs.delta import TableWriter, write_delta
    from offset_audit.storage import LOCAL

    default = "spark.databricks.delta.properties.defaults.enableDeletionVectors"
    spark.conf.set(default, "true")
    try:
        ours = tmp_path / "ours"
        write_delta(spark.createDataFrame([(1,), (2,)], "n int"), str(ours), TableWriter("delta-spark", LOCAL))
        theirs = tmp_path / "theirs"
        spark.createDataFrame([(1,), (2,)], "n int").write.format("delta").save(str(theirs))
    finally:
        spark.conf.unset(default)
    assert plain_protocol(ours)
    check_plain_files(DeltaTable(str(ours)), str(ours))
    # a table with them, one row deleted: its data files alone would bring the row back
    spark.sql(f"DELETE FROM delta.`{theirs}` WHERE n = 1")
    with pytest.raises(UserError, match="deletion vectors"):
        check_plain_files(DeltaTable(str(theirs)), str(theirs))


@pytest.mark.delta_spark
def test_a_rerun_of_a_snapshot_replaces_its_rows_in_one_commit(dump, tmp_path):
    out = tmp_path / "rerun"
    audit(dump, out, "delta-spark", "--snapshot-id", "again")
    verdicts = out / "partition_verdicts"
    before = rows(verdicts)
    log = verdicts / "_delta_log"
    first = [json.loads(line) for line in (log / f"{0:020d}.json").read_text().splitlines()]
    audit(dump, out, "delta-spark", "--snapshot-id", "again")
    assert DeltaTable(str(verdicts)).version() == 1 and rows(verdicts) == before
    actions = [json.loads(line) for line in (log / f"{1:020d}.json").read_text().splitlines()]
    removed = {a["remove"]["path"] for a in actions if "remove" in a}
    assert removed == {a["add"]["path"] for a in first if "add" in a} and any("add" in a for a in actions)
    runs = DeltaTable(str(out / "runs")).to_pyarrow_table().to_pylist()
    assert sorted(dict(r["table_versions"])["partition_verdicts"] for r in runs) == [0, 1]


# Both runs meet before each table's write, so each reads the table at the same version and the second
# to commit meets the first's commit (sitecustomize, loaded by both processes).
MEET = """
import os, pathlib, time
import offset_audit.outputs.delta as delta

_write = delta._write_with_spark
_meeting = pathlib.Path(os.environ["MEET_DIR"])


def _meet_then_write(df, path, *args, **kwargs):
    name = path.replace("/", "_")
    (_meeting / f"{name}-{os.getpid()}").touch()
    deadline = time.monotonic() + 120
    while len(list(_meeting.glob(f"{name}-*"))) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    return _write(df, path, *args, **kwargs)


delta._write_with_spark = _meet_then_write
"""


@pytest.mark.delta_spark
def test_two_delta_spark_runs_into_one_folder_at_once_both_land(dump, tmp_path):
    from live_services import SHORT_LIVED_JVM, run_at_once
    from spark_jars import spark_jar_settings

    out, hooks, meeting = tmp_path / "together", tmp_path / "hooks", tmp_path / "meeting"
    hooks.mkdir()
    meeting.mkdir()
    (hooks / "sitecustomize.py").write_text(MEET)
    settings = {
        **spark_jar_settings(),
        "spark.master": "local[1]",
        "spark.driver.memory": "1g",
        "spark.sql.shuffle.partitions": "1",
        "spark.databricks.delta.snapshotPartitions": "1",
    }
    conf = tmp_path / "conf.toml"
    conf.write_text("[spark]\n" + "".join(f"{json.dumps(k)} = {json.dumps(v)}\n" for k, v in settings.items()))
    # SPARK_SUBMIT_OPTS: JVM flags for each run's own short-lived session (tests/live_services.SHORT_LIVED)
    environment = {
        **os.environ,
        "PYTHONPATH": str(hooks),
        "MEET_DIR": str(meeting),
        "SPARK_SUBMIT_OPTS": SHORT_LIVED_JVM,
    }
    environment.pop("OFFSET_AUDIT_TEST_SESSION", None)
    command = [sys.executable, "-m", "offset_audit.cli.main", "audit", "--input", dump, "--output", str(out)]
    flags = ["--writer", "delta-spark", "--conf", str(conf), "--json"]
    audits = run_at_once([[*command, "--snapshot-id", name, *flags] for name in ("first", "second")], environment,
                       tmp_path, timeout=900)  # fmt: skip
    assert [r.returncode for r in audits] == [0, 0], [r.stderr[-4000:] for r in audits]
    assert any("made again on its commit" in r.stderr for r in audits), [r.stderr[-2000:] for r in audits]
    documents = [json.loads(r.stdout) for r in audits]
    verdicts = DeltaTable(str(out / "partition_verdicts")).to_pyarrow_table()
    snapshots = verdicts.column("snapshot_id").to_pylist()
    assert snapshots.count("first") == snapshots.count("second") > 0
    rows = DeltaTable(str(out / "runs")).to_pyarrow_table().to_pylist()
    assert sorted(r["snapshot_id"] for r in rows) == ["first", "second"]
    # the decode tables were replaced whole by one run or the other, never merged or halved
    assert documents[0]["counts"] == documents[1]["counts"]
    quarantine = DeltaTable(str(out / "decoded" / "quarantine")).count()
    assert quarantine == dict(rows[0]["table_rows"])["decoded/quarantine"]


@pytest.mark.delta_spark
def test_delta_spark_replaces_merges_and_removes_one_clusters_snapshot_of_an_id_two_share(spark, tmp_path):
    """delta-spark's replaceWhere, merge and delete each take one cluster's rows of a snapshot id (a fleet
    whose schedules name their snapshots alike): the other cluster's rows of that id stay."""
    from datetime import UTC, datetime

    from offset_audit.decoding.report import DecodeReport
    from offset_audit.layouts.tables import table_schema
    from offset_audit.outputs.delta import DELTA_SPARK, TableWriter
    from offset_audit.outputs.snapshot_tables import record_snapshot, write_snapshot
    from offset_audit.outputs.table_upkeep import delete_snapshots
    from offset_audit.storage import LOCAL

    writer, output = TableWriter(DELTA_SPARK, LOCAL), str(tmp_path)
    schema = table_schema("whatif").struct()

    def judged(cluster: str, retentions: list[int]) -> None:
        report = DecodeReport.start("whatif", [], "parquet", None)
        report.cluster = cluster
        at = datetime(2026, 11, 1, tzinfo=UTC)
        rows = [("x", minutes, at, 10, 1, 2, 0, "x") for minutes in retentions]
        write_snapshot(spark.createDataFrame(rows, schema), output, "whatif", "s1", report, writer)
        record_snapshot(spark, output, {"kind": "whatif", "snapshot_id": "s1", "as_of": at}, report, writer)

    def held(table: str) -> list[tuple]:
        found = spark.read.format("delta").load(f"{output}/{table}").collect()
        return sorted((r.cluster, r.snapshot_id, getattr(r, "retention_minutes", None)) for r in found)

    judged("eu", [60, 120])
    judged("us", [30])
    judged("eu", [90])  # eu again under the id: its rows replaced, us's kept
    assert held("whatif") == [("eu", "s1", 90), ("us", "s1", 30)]
    assert held("snapshots") == [("eu", "s1", None), ("us", "s1", None)]
    for table, kind in (("whatif", None), ("snapshots", "whatif")):
        delete_snapshots(f"{output}/{table}", {"eu": ["s1"]}, writer, spark, None, kind)
    assert held("whatif") == [("us", "s1", 30)] and held("snapshots") == [("us", "s1", None)]
