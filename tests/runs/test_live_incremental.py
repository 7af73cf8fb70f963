"""audit --incremental against a live broker: its clients act between the runs, and the last run's tables
must equal a full read of the same log at the same as_of. Through both routes users schedule:

- copies of the broker's folders, copied again over the last copy before each run (as rsync does), with the
  data directory's meta.properties and each partition's partition.metadata; after the last run the broker's
  own expiry sweep is waited for, and one more incremental run must no longer hold what it said expired;
- Spark's Kafka source (`--input-format kafka`), in the session with the Spark jars.
"""

from __future__ import annotations

import shutil
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import pytest
from click.testing import CliRunner
from deltalake import DeltaTable
from kafka_broker import (
    CHECK_INTERVAL_MS,
    Broker,
    commit_offsets,
    group_consumer,
    group_member,
    kafka_broker,
    kafka_versions,
    version_tuple,
)
from live_services import live

from offset_audit.cli.main import main

pytestmark = pytest.mark.slow

TABLES = ("partition_verdicts", "group_verdicts", "deletion_candidates")
RETENTION_MINUTES = 1
SLACK_MS = 5_000


def cli(*args: str) -> None:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 0, result.output + "".join(__import__("traceback").format_exception(*result.exc_info))


def rows(output: Path, name: str, snapshot: str) -> list[dict]:
    table = DeltaTable(str(output / name)).to_pyarrow_table().to_pylist()
    return sorted((r for r in table if r["snapshot_id"] == snapshot), key=repr)


def last_state(output: Path) -> str:
    """How the newest run used its state (runs.state)."""
    runs = DeltaTable(str(output / "runs")).to_pyarrow_table().to_pylist()
    return max(runs, key=lambda r: r["started_at"])["state"]


def newest_rows(output: Path, name: str) -> list[dict]:
    """The rows of the newest snapshot (the one with the latest as_of)."""
    table = DeltaTable(str(output / name)).to_pyarrow_table().to_pylist()
    newest = max(r["as_of"] for r in table)
    return [r for r in table if r["as_of"] == newest]


def copy_folders(broker: Broker, target: Path) -> Path:
    """The broker's __consumer_offsets folders copied over the last copy, as `rsync -a` would: segment
    files and partition.metadata, and the data directory's meta.properties."""
    target.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(broker.log_dir / "meta.properties", target / "meta.properties")
    for partition in sorted(broker.log_dir.glob("__consumer_offsets-*")):
        (target / partition.name).mkdir(exist_ok=True)
        for file in [*partition.glob("*.log"), partition / "partition.metadata"]:
            if file.exists():
                shutil.copyfile(file, target / partition.name / file.name)
    return target


@contextmanager
def polling():
    """Members that stay in their groups (Stable) while a thread polls for each, until the block ends."""
    stop, threads, members = threading.Event(), [], []

    def keep(consumer) -> None:
        def loop() -> None:
            while not stop.is_set():
                consumer.poll(0.2)

        thread = threading.Thread(target=loop, daemon=True)
        thread.start()
        threads.append(thread)
        members.append(consumer)

    try:
        yield keep
    finally:
        stop.set()
        for thread in threads:
            thread.join(10)
        for consumer in members:
            consumer.close()


def acts(broker: Broker, keep):
    """Ten things clients do, one at a time: commits, groups that come and go, a transaction, deletions;
    `keep` holds a member in its group."""
    from confluent_kafka import Producer, TopicPartition
    from confluent_kafka.admin import NewTopic

    admin = broker.admin()
    for future in admin.create_topics([NewTopic("orders", 3, 1)]).values():
        future.result(60)

    def standalone(group: str, *offsets) -> None:
        consumer = group_consumer(broker, group)
        commit_offsets(consumer, *offsets)
        consumer.close()

    yield standalone("standalone-a", ("orders", 0, 3))
    yield standalone("standalone-a", ("orders", 0, 5), ("orders", 1, 2))
    leaver = group_member(broker, "classic-left", ["orders"])
    commit_offsets(leaver, ("orders", 2, 4))
    yield leaver.close()
    stable = group_member(broker, "classic-stable", ["orders"])
    commit_offsets(stable, ("orders", 1, 6))
    keep(stable)
    yield None
    time.sleep(1)
    yield None
    if version_tuple(broker.version) >= (4, 0):
        modern = group_member(broker, "modern-left", ["orders"], **{"group.protocol": "consumer"})
        commit_offsets(modern, ("orders", 0, 9))
        modern.close()
    yield None
    member = group_member(broker, "transactional", ["orders"])
    producer = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "tx-incremental"})
    producer.init_transactions(60)
    producer.begin_transaction()
    producer.send_offsets_to_transaction([TopicPartition("orders", 2, 11)], member.consumer_group_metadata(), 60)
    yield None  # a run while the transaction is open
    producer.commit_transaction(60)
    member.close()
    yield None
    standalone("deleted", ("orders", 0, 1))
    admin.delete_consumer_groups(["deleted"])["deleted"].result(60)
    yield None
    standalone("standalone-b", ("orders", 2, 7))
    yield None


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    version = max(kafka_versions(), key=version_tuple)
    folder = tmp_path_factory.mktemp("kafka-incremental")
    with live(kafka_broker(folder / "broker", version, {"offsets.retention.minutes": str(RETENTION_MINUTES)})) as b:
        yield b


def test_incremental_audits_of_copied_folders_equal_a_full_read_and_the_sweep(spark, broker, tmp_path):
    conf = tmp_path / "audit.toml"
    conf.write_text(
        f"[audit]\nretention_minutes = {RETENTION_MINUTES}\ncheck_interval_ms = {CHECK_INTERVAL_MS}\n"
        f'[kafka]\nversion = "{broker.version}"\n'
    )
    copy, out = tmp_path / "copy", tmp_path / "incremental"
    states = []
    with polling() as keep:
        for _ in acts(broker, keep):
            copy_folders(broker, copy)
            cli("audit", "--input", str(copy), "--output", str(out), "--conf", str(conf), "--incremental",
                "--as-of", "now", "--quiet")  # fmt: skip
            states.append(last_state(out))
        assert len(states) >= 10 and states[0] == "first" and set(states[1:]) == {"resumed"}, states
        verdicts = newest_rows(out, "partition_verdicts")
        as_of = verdicts[0]["as_of"].isoformat()
        # Once more on the same copy at that as_of, beside a full read of it.
        cli("audit", "--input", str(copy), "--output", str(out), "--conf", str(conf), "--incremental", "--as-of",
            as_of, "--snapshot-id", "s", "--quiet")  # fmt: skip
        cli("audit", "--input", str(copy), "--output", str(tmp_path / "full"), "--conf", str(conf), "--as-of", as_of,
            "--snapshot-id", "s", "--quiet")  # fmt: skip
        for name in TABLES:
            assert rows(out, name, "s") == rows(tmp_path / "full", name, "s"), name
        # The broker's sweep: what the incremental state said expires is gone from its next run, and what
        # it said stays is there.
        expiring = {(v["group_id"], v["topic"], v["partition"]) for v in verdicts if v["expires_at_ms"] is not None}
        staying = {(v["group_id"], v["topic"], v["partition"]) for v in verdicts if v["expires_at_ms"] is None}
        assert expiring and staying
        deadline = max(v["expires_at_ms"] for v in verdicts if v["expires_at_ms"] is not None)
        time.sleep(max(0.0, (deadline + CHECK_INTERVAL_MS + SLACK_MS) / 1000 - time.time()))
        copy_folders(broker, copy)
        cli("audit", "--input", str(copy), "--output", str(out), "--conf", str(conf), "--incremental", "--as-of",
            "now", "--quiet")  # fmt: skip
        after = {(v["group_id"], v["topic"], v["partition"]) for v in newest_rows(out, "partition_verdicts")}
    assert not expiring & after, expiring & after
    assert staying <= after, staying - after
    # What the runs kept explains each of the sweep's tombstones, and the DeleteGroups of the acts.
    cli("history", "--audit", str(out), "--conf", str(conf), "--quiet")
    events = DeltaTable(str(out / "history" / "offset_history")).to_pyarrow_table().to_pylist()
    swept = {
        (e["group_id"], e["topic"], e["partition"])
        for e in events
        if e["event"] == "OFFSET_DELETED" and e["cause"] == "EXPIRED"
    }
    assert expiring <= swept, expiring - swept
    assert {(e["event"], e["cause"]) for e in events if e["group_id"] == "deleted"} >= {
        ("COMMITTED", None),
        ("GROUP_DELETED", "DELETED_BY_REQUEST"),
    }


@pytest.mark.delta_spark
def test_incremental_audits_through_the_kafka_source_equal_a_full_read(spark, tmp_path):
    version = max(kafka_versions(), key=version_tuple)
    with live(kafka_broker(tmp_path / "broker", version, {"offsets.retention.minutes": "10080"})) as live_broker:
        source = ["--input-format", "kafka", "--bootstrap-server", live_broker.bootstrap, "--writer", "delta-rs"]
        out = tmp_path / "incremental"
        states = []
        with polling() as keep:
            for _ in acts(live_broker, keep):
                cli("audit", *source, "--output", str(out), "--incremental", "--as-of", "now", "--quiet")
                states.append(last_state(out))
            as_of = newest_rows(out, "partition_verdicts")[0]["as_of"].isoformat()
            cli("audit", *source, "--output", str(out), "--incremental", "--as-of", as_of, "--snapshot-id", "s",
                "--quiet")  # fmt: skip
            cli("audit", *source, "--output", str(tmp_path / "full"), "--as-of", as_of, "--snapshot-id", "s",
                "--quiet")  # fmt: skip
            # What the runs kept, against the topic itself (its cleaner has not run: nothing is gone yet),
            # each written by this session's delta-spark.
            live_topic = ["--input-format", "kafka", "--bootstrap-server", live_broker.bootstrap]
            cli("history", "--audit", str(out), "--snapshot-id", "s", "--quiet")
            cli("history", *live_topic, "--output", str(tmp_path / "history"), "--snapshot-id", "s", "--quiet")
    assert len(states) >= 10 and states[0] == "first" and set(states[1:]) == {"resumed"}, states
    for name in TABLES:
        assert rows(out, name, "s") == rows(tmp_path / "full", name, "s"), name
    # (as_of left out: a delta-spark session's history judges at the clock's time)
    kept, whole = (
        [{**e, "as_of": None} for e in rows(d, "offset_history", "s")] for d in (out / "history", tmp_path / "history")
    )
    assert kept == whole and any(e["event"] == "GROUP_DELETED" for e in kept)
