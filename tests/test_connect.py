"""The audit on a Spark Connect session: a server started from the venv's own Spark (its spark-connect jar,
with delta-spark and Spark's Kafka source on its classpath) by docs/cluster.md's recipe, and the API and
`offset-audit --remote` run against it. Every table equals the same run on the suite's classic session,
row for row."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from deltalake import DeltaTable
from live_services import connect_server, live
from repo_paths import ROOT
from spark_jars import spark_jars

from offset_audit import api
from offset_audit.generator.demo_dump import generate_dump
from offset_audit.generator.share_world import generate_share_state
from offset_audit.generator.writers import snapshot_to_segments

pytestmark = pytest.mark.slow

# Each run and the tables it writes (decode's decoded/ tables are its own; an audit's decoded/ tables are
# the route's: the direct route keeps only the last record of each key, Spark's route every record).
TABLES = {
    "audit": ("partition_verdicts", "group_verdicts", "deletion_candidates"),
    "whatif": ("whatif", "whatif_groups"),
    "history": ("offset_history",),
    "share": ("share_partitions", "share_state_batches", "share_cleanup", "quarantine"),
    "decode": ("offset_commits", "group_metadata", "group_members", "modern_group_records", "quarantine"),
}


def raw_digest(frame) -> list:
    from connect_api_runs import raw_digest as digest

    return digest(frame)


def table_rows(folder, name) -> list[str]:
    return sorted(map(repr, DeltaTable(f"{folder}/{name}").to_pyarrow_table().to_pylist()))


def frame_rows(frame) -> list[str]:
    return sorted(map(repr, frame.toArrow().to_pylist()))


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from live_services import Unavailable

    try:
        spark_jars()  # the recipe's --jars: make spark-jars' folder
    except Unavailable as reason:
        pytest.skip(str(reason))
    with live(connect_server(tmp_path_factory.mktemp("connect"))) as running:
        yield running


@pytest.fixture(scope="module")
def dumps(tmp_path_factory):
    root = tmp_path_factory.mktemp("dumps")
    generate_dump(str(root / "input"), 3_000, seed=7, corrupt=12, end_offsets=str(root / "ends.txt"))
    generate_share_state(str(root / "share"), 2_000, seed=3, corrupt=2)
    snapshot_to_segments(str(root / "input"), str(root / "folders"), 5, "zstd", 32 << 10)
    return root


# Dumps of other formats that read_dump reads on both sessions: broker folders, kafka-dump-log and console
# consumer text.
def other_dumps(dumps) -> list[str]:
    texts = ROOT / "tests" / "textdumps"
    return [str(dumps / "folders"), str(texts / "dump_log_3_8.txt"), str(texts / "console_json_4_x.txt")]


@pytest.fixture(scope="module")
def classic(spark, dumps):
    """The same runs on the suite's classic session: each table's rows."""
    dump = dumps / "input"
    rows = {}
    with api.audit(spark, dump, end_offsets=dumps / "ends.txt") as run:
        rows["audit"] = {name: frame_rows(run.table(name)) for name in TABLES["audit"]}
    with api.whatif(spark, dump, retention=["1d", "7d"], per_group=True) as run:
        rows["whatif"] = {name: frame_rows(run.table(name)) for name in TABLES["whatif"]}
    with api.history(spark, dump) as run:
        rows["history"] = {name: frame_rows(run.table(name)) for name in TABLES["history"]}
    with api.share(spark, dumps / "share") as run:
        rows["share"] = {name: frame_rows(run.table(name)) for name in TABLES["share"]}
    with api.decode(spark, dump) as run:
        rows["decode"] = {name: frame_rows(run.table(name)) for name in TABLES["decode"]}
    return rows


def client_environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK_GATEWAY", "SPARK_CONNECT_MODE"))}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), str(ROOT / "tests")])
    env.pop("SPARK_REMOTE", None)
    return env


def assert_same_tables(classic, out, runs=TABLES, as_run=None):
    for run, names in runs.items():
        for name in names:
            assert table_rows(out / run, name) == classic[as_run or run][name], f"{run}: {name}"


def test_the_api_on_a_connect_session_writes_the_classic_sessions_tables(server, spark, dumps, classic, tmp_path):
    done = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "connect_api_runs.py"), server.url, str(dumps / "input"),
         str(dumps / "ends.txt"), str(dumps / "share"), str(tmp_path), *other_dumps(dumps)],
        capture_output=True, text=True, env=client_environment(), timeout=2400,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    read = found.pop("read")
    assert read == {other: raw_digest(api.read_dump(spark, other)) for other in other_dumps(dumps)}
    assert found == {
        "raw_records": 3_000,
        "audit_reconciles": True,
        "partition_verdicts": len(classic["audit"]["partition_verdicts"]),
        "scenarios": 2,
        "share_quarantined": 2,
    }
    assert_same_tables(classic, tmp_path)
    assert_same_tables(classic, tmp_path, {"written": TABLES["audit"]}, as_run="audit")


def test_the_command_with_remote_runs_every_command_on_the_server(server, dumps, classic, tmp_path):
    dump = str(dumps / "input")
    audit = ["audit", "--input", dump, "--end-offsets", str(dumps / "ends.txt")]
    commands = [
        ("audit", audit),
        ("audit", audit),  # again: its snapshot's rows replaced, its snapshots row merged (MERGE INTO)
        ("whatif", ["whatif", "--input", dump, "--retention-minutes", "1d,7d", "--per-group"]),
        ("history", ["history", "--input", dump]),
        ("share", ["share", "--input", str(dumps / "share")]),
        ("decode", ["decode", "--input", dump]),
    ]
    for run, command in commands:
        env = client_environment()
        remote = ["--remote", server.url]
        if run == "history":  # SPARK_REMOTE, as pyspark's own clients take it
            env["SPARK_REMOTE"], remote = server.url, []
        done = subprocess.run(
            [str(Path(sys.executable).parent / "offset-audit"), *command, "--output", str(tmp_path / run), *remote],
            capture_output=True, text=True, env=env, timeout=600,
        )  # fmt: skip
        assert done.returncode == 0, f"{run}: {done.stderr[-3000:]}"
    assert_same_tables(classic, tmp_path)
    snapshots = DeltaTable(f"{tmp_path}/audit/snapshots").to_pyarrow_table().to_pylist()
    assert len(snapshots) == 1 and len(DeltaTable(f"{tmp_path}/audit/runs").to_pyarrow_table()) == 2


def test_a_live_topic_is_read_on_the_server_and_asked_with_the_python_client(server, spark, tmp_path):
    """--input-format kafka on a Connect session: Spark's Kafka source reads the topic on the server, and
    its partitions and the cluster's id are asked with confluent-kafka (no JVM at hand)."""
    from confluent_kafka.admin import NewTopic
    from kafka_broker import commit_offsets, group_consumer, kafka_broker, kafka_versions, version_tuple

    from offset_audit.inputs.kafka_topic import _client_topic_facts
    from offset_audit.runtime.config import load_settings

    version = max(kafka_versions(), key=version_tuple)
    with live(kafka_broker(tmp_path / "broker", version, {"offsets.retention.minutes": "10080"})) as broker:
        admin = broker.admin()  # kept: the client's futures die with it
        for future in admin.create_topics([NewTopic("orders", 3, 1)]).values():
            future.result(60)
        consumer = group_consumer(broker, "billing")
        try:
            for offset in range(1, 4):
                commit_offsets(consumer, *[("orders", p, offset * 10 + p) for p in range(3)])
        finally:
            consumer.close()
        settings = load_settings(input_format="kafka", bootstrap_servers=broker.bootstrap)
        facts = _client_topic_facts(None, settings, log_starts=True)
        segments = broker.copy_offsets_log(tmp_path / "segments")
        formatted = (broker.log_dir / "meta.properties").read_text()
        done = subprocess.run(
            [str(Path(sys.executable).parent / "offset-audit"), "decode", "--input-format", "kafka",
             "--bootstrap-server", broker.bootstrap, "--output", str(tmp_path / "remote"), "--remote", server.url,
             "--json"],
            capture_output=True, text=True, env=client_environment(), timeout=600,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert facts.partitions == sorted(int(p.name.rsplit("-", 1)[1]) for p in segments.iterdir())
    assert set(facts.log_starts) == set(facts.partitions) and set(facts.log_starts.values()) == {0}
    assert f"cluster.id={facts.cluster_id}" in formatted.splitlines() and facts.topic_id
    document = json.loads(done.stdout)
    assert document["cluster"] == facts.cluster_id
    with api.decode(spark, segments) as from_segments:
        assert document["counts"]["records_read"] == from_segments.report.records_read == 9
        for name in ("offset_commits", "group_metadata"):
            remote = DeltaTable(f"{tmp_path}/remote/{name}").to_pyarrow_table().to_pylist()
            assert without_run(remote) == without_run(from_segments.table(name).toArrow().to_pylist()), name


def without_run(rows: list[dict]) -> list[str]:
    return sorted(repr({k: v for k, v in row.items() if k != "run_id"}) for row in rows)
