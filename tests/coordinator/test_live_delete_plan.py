"""`delete-plan` against a real broker: its script, run with the version's own kafka-consumer-groups.sh,
deletes exactly the offsets it planned and nothing else, as the Admin API lists them before and after.

Real clients leave, on each version of KAFKA_VERSIONS, groups of every kind the plan names: Stable groups
that dropped a topic from their subscription (classic, and KIP-848 from 4.0), groups that left, a
standalone consumer's offsets, and groups whose names are shell syntax or look like the tool's own
options. A Stable group's subscribed offsets must stay. Retention is the broker's default week here, so
that no sweep deletes anything meanwhile: every deletion is the script's. The log is audited by the
version's own rules (--kafka-version).
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from kafka_broker import (
    Broker,
    commit_offsets,
    committed_offsets,
    group_consumer,
    group_member,
    holds_assignment,
    java_command,
    kafka_broker,
    kafka_versions,
    version_tuple,
    wait_until,
)
from live_services import live

from offset_audit.cli.main import main

pytestmark = pytest.mark.slow

ORDERS, PAYMENTS = "orders", "payments"
WEEK_MINUTES = 7 * 24 * 60
# Group ids any client may pick: shell syntax, quotes, and the tool's own options.
HOSTILE = ('it\'s $(touch pwned) `touch pwned` "q"; touch pwned', "--all-groups", "--execute")


def _write_groups(broker: Broker) -> tuple[list[str], list]:
    """The groups, and the members that must stay in theirs while the script runs."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import NewTopic

    admin = broker.admin()  # held while its futures run: a destroyed client fails them
    for future in admin.create_topics([NewTopic(ORDERS, 3, 1), NewTopic(PAYMENTS, 2, 1)]).values():
        future.result(60)
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for topic, partitions in ((ORDERS, 3), (PAYMENTS, 2)):
        for partition in range(partitions):
            for i in range(10):
                producer.produce(topic, b"record %d" % i, partition=partition)
    producer.flush(30)
    groups, staying = [], []
    protocols = {"classic": {}}
    if version_tuple(broker.version) >= (4, 0):
        protocols["modern"] = {"group.protocol": "consumer"}
    for name, extra in protocols.items():
        dropped = group_member(broker, f"{name}-dropped-topic", [ORDERS, PAYMENTS], **extra)
        commit_offsets(dropped, (ORDERS, 0, 3), (ORDERS, 2, 4), (PAYMENTS, 1, 5))
        dropped.subscribe([PAYMENTS])
        wait_until("the new assignment", lambda consumer=dropped: holds_assignment(consumer, {PAYMENTS}))
        staying.append(dropped)
        stable = group_member(broker, f"{name}-stable", [ORDERS], **extra)
        commit_offsets(stable, (ORDERS, 1, 6))
        staying.append(stable)
        left = group_member(broker, f"{name}-left", [PAYMENTS], **extra)
        commit_offsets(left, (PAYMENTS, 0, 2))
        left.close()
        groups += [f"{name}-dropped-topic", f"{name}-stable", f"{name}-left"]
    for group in ("standalone", *HOSTILE):
        standalone = group_consumer(broker, group)
        commit_offsets(standalone, (ORDERS, 0, 1), (PAYMENTS, 1, 2))
        standalone.close()
        groups.append(group)
    return groups, staying


def _tool_folder(broker: Broker, folder: Path) -> Path:
    """A bin folder whose kafka-consumer-groups.sh runs the version's own ConsumerGroupCommand."""
    bin_dir = folder / "bin"
    bin_dir.mkdir()
    command = java_command(broker.version, "consumer-groups", log4j=broker.folder / "tools-log4j2.properties")
    tool = bin_dir / "kafka-consumer-groups.sh"
    tool.write_text(f'#!/bin/sh\nexec {shlex.join(command)} "$@"\n')
    tool.chmod(0o755)
    return bin_dir


@pytest.fixture(scope="module", params=kafka_versions())
def deleted(request, tmp_path_factory, spark) -> dict:
    version = request.param
    folder = tmp_path_factory.mktemp(f"kafka-delete-plan-{version}")
    extra = {"offsets.retention.minutes": str(WEEK_MINUTES)}
    with live(kafka_broker(folder / "broker", version, extra)) as broker:
        groups, staying = _write_groups(broker)
        try:
            before = set(committed_offsets(broker, groups))
            log = broker.copy_offsets_log(folder / "log")
            runner = CliRunner()
            audited = runner.invoke(main, ["audit", "--input", str(log), "--output", str(folder / "audit"),
                                           "--as-of", "now", "--kafka-version", version, "--quiet"])  # fmt: skip
            assert audited.exit_code == 0, audited.output
            script = folder / "delete.sh"
            planned = runner.invoke(main, ["delete-plan", "--audit", str(folder / "audit"), "--script", str(script),
                                           "--json"])  # fmt: skip
            assert planned.exit_code == 0, planned.output
            plan = json.loads(planned.stdout)
            environment = {**os.environ, "BOOTSTRAP_SERVER": broker.bootstrap,
                           "PATH": f"{_tool_folder(broker, folder)}:{os.environ['PATH']}"}  # fmt: skip
            ran = subprocess.run(["bash", str(script)], cwd=folder, env=environment, capture_output=True, text=True,
                                 timeout=600, check=False)  # fmt: skip
            after = set(committed_offsets(broker, groups))
        finally:
            for consumer in staying:
                consumer.close()
    candidates = {(c["group_id"], c["topic"], c["partition"]): c["reason"] for c in plan["candidates"]}
    return {
        "before": before,
        "after": after,
        "candidates": candidates,
        "ran": ran,
        "folder": folder,
        "version": version,
    }


def test_the_script_runs_with_the_versions_own_tool_and_every_partition_answers_successful(deleted):
    ran = deleted["ran"]
    assert ran.returncode == 0, ran.stdout + ran.stderr[-3000:]
    assert "Error" not in ran.stdout and "Successful" in ran.stdout, ran.stdout


def test_exactly_the_planned_offsets_are_deleted(deleted):
    planned = set(deleted["candidates"])
    assert planned and planned <= deleted["before"]
    assert deleted["after"] == deleted["before"] - planned


def test_the_plan_covers_dropped_topics_and_groups_without_members_and_spares_subscribed_offsets(deleted):
    by_reason: dict[str, set] = {}
    for (group, topic, partition), reason in deleted["candidates"].items():
        by_reason.setdefault(reason, set()).add((group, topic, partition))
    assert {(g, t) for g, t, _ in by_reason["UNSUBSCRIBED_TOPIC_OF_ACTIVE_GROUP"]} >= {
        ("classic-dropped-topic", ORDERS)
    }
    inactive = {g for g, _, _ in by_reason["INACTIVE_GROUP"]}
    assert inactive >= {"classic-left", "standalone", *HOSTILE}
    if version_tuple(deleted["version"]) >= (4, 0):
        assert ("modern-dropped-topic", ORDERS, 0) in by_reason["UNSUBSCRIBED_TOPIC_OF_ACTIVE_GROUP"]
        assert "modern-left" in inactive
    # What stays is exactly the Stable groups' subscribed offsets.
    protocols = ["classic", "modern"] if version_tuple(deleted["version"]) >= (4, 0) else ["classic"]
    subscribed = {(f"{n}-stable", ORDERS) for n in protocols} | {(f"{n}-dropped-topic", PAYMENTS) for n in protocols}
    assert {(g, t) for g, t, _ in deleted["after"]} == subscribed


def test_no_group_name_ran_anything(deleted):
    assert not list(deleted["folder"].rglob("pwned"))
