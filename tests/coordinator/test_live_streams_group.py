"""A streams group (KIP-1071) on a real broker: a Kafka Streams application the test compiles
(streams/CountWords.java: word counts through a repartition topic) joins with group.protocol=streams, and
the audit must judge its offsets as the broker does.

Streams groups are production-ready from Kafka 4.2; in 4.1 they are early access, behind unstable
feature versions that a production broker does not turn on. So the tests run on the versions of
KAFKA_VERSIONS from 4.2 on. Retention is 1 minute and the sweep runs every second (tests/kafka_broker.py).

- While the application runs, the audit holds the offsets the Admin API lists (its input and its
  repartition topic), the group is a Stable streams group of one member as kafka-streams-groups.sh
  describes it, and every offset is SUBSCRIBED_TOPIC: never expires. The broker agrees: past every
  commit's retention, the offsets are all still there.
- Once the application closes (its member leaves, the group is Empty), the broker's sweep deletes the
  offsets and then the group; `history` on its log calls every one of those tombstones EXPIRED.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner
from kafka_broker import (
    CHECK_INTERVAL_MS,
    RETENTION_MINUTES,
    Broker,
    java,
    kafka_broker,
    kafka_versions,
    libs,
    version_tuple,
    wait_until,
)
from live_services import Unavailable, _stop, live, table_rows

from offset_audit.cli.main import main

pytestmark = pytest.mark.slow

APPLICATION = "word-count"
LINES, COUNTS = "lines", "counts"
# The topic the application writes its words through, between its two subtopologies.
REPARTITION = f"{APPLICATION}-KSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition"
PER_PARTITION = 10
STREAMS_VERSIONS = [v for v in kafka_versions() if version_tuple(v) >= (4, 2)]
SOURCE = Path(__file__).parent / "streams" / "CountWords.java"
SLACK_MS = 5_000  # as in test_live_broker: the sweep's own lateness on a busy machine


@dataclass(frozen=True)
class Observed:
    version: str
    verdicts: list[dict]  # partition_verdicts of the streams group while it ran
    group: dict  # its group_verdicts row
    committed: dict[tuple[str, int], int]  # what the Admin API listed when the log was copied
    described: tuple[str, int]  # state and members, as kafka-streams-groups.sh --describe --state says
    still_listed: dict[tuple[str, int], int]  # what it listed past every commit's retention, still running
    listed_after: dict[tuple[str, int], int]  # what it listed once the application had left and the sweep ran
    events: list[dict]  # offset_history of the log at the end


def _compiled(version: str, folder: Path) -> Path:
    javac = shutil.which("javac")
    if javac is None:
        raise Unavailable("javac is not on PATH: the streams test compiles its application (install a JDK)")
    folder.mkdir(parents=True, exist_ok=True)
    built = subprocess.run([javac, "-cp", f"{libs(version)}/*", "-d", str(folder), str(SOURCE)],
                           capture_output=True, text=True, timeout=300, check=False)  # fmt: skip
    assert built.returncode == 0, built.stdout + built.stderr
    return folder


def _committed(broker: Broker) -> dict[tuple[str, int], int]:
    from confluent_kafka import ConsumerGroupTopicPartitions

    admin = broker.admin()
    listed = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(APPLICATION)])[APPLICATION].result(60)
    return {(tp.topic, tp.partition): tp.offset for tp in listed.topic_partitions if tp.offset >= 0}


def _log_end(broker: Broker, topic: str, partition: int) -> int:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "log-ends"})
    try:
        return consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)[1]
    finally:
        consumer.close()


def _described(broker: Broker) -> tuple[str, int]:
    """kafka-streams-groups.sh --describe --state: GROUP, COORDINATOR (ID) (two words), STATE, #MEMBERS."""
    printed = broker.tool("streams-groups", "--bootstrap-server", broker.bootstrap, "--describe", "--group",
                          APPLICATION, "--state")  # fmt: skip
    assert printed.returncode == 0, printed.stdout + printed.stderr[-2000:]
    row = next(line.split() for line in printed.stdout.splitlines() if line.startswith(APPLICATION))
    return row[-2], int(row[-1])


def _cli(*args: str) -> None:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 0, result.output + repr(result.exception)


@pytest.fixture(scope="module", params=STREAMS_VERSIONS)
def observed(request, tmp_path_factory, spark) -> Observed:
    from confluent_kafka import Producer
    from confluent_kafka.admin import NewTopic

    version = request.param
    folder = tmp_path_factory.mktemp(f"kafka-streams-{version}")
    conf = folder / "audit.toml"
    conf.write_text(f"[audit]\nretention_minutes = {RETENTION_MINUTES}\ncheck_interval_ms = {CHECK_INTERVAL_MS}\n")
    with live(kafka_broker(folder / "broker", version)) as broker:
        classes = _compiled(version, folder / "classes")
        admin = broker.admin()  # held while its futures run: a destroyed client fails them
        for future in admin.create_topics([NewTopic(LINES, 2, 1), NewTopic(COUNTS, 2, 1)]).values():
            future.result(60)
        producer = Producer({"bootstrap.servers": broker.bootstrap})
        for partition in range(2):
            for i in range(PER_PARTITION):
                producer.produce(LINES, b"the quick brown fox %d" % (i % 3), partition=partition)
        producer.flush(30)
        printed = folder / "application.out"
        with open(printed, "wb") as out:
            application = subprocess.Popen(
                [java(), "-Xmx256m", "-cp", f"{libs(version)}/*:{classes}",
                 f"-Dlog4j2.configurationFile={broker.folder / 'tools-log4j2.properties'}", "CountWords",
                 broker.bootstrap, APPLICATION, LINES, COUNTS, str(folder / "state")],
                stdin=subprocess.PIPE, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        try:
            wait_until("the application to run", lambda: "\n" in printed.read_text(), seconds=120, pause=1)
            assert printed.read_text().split()[0] == "RUNNING", printed.read_text()[-2000:]
            listings = [_committed(broker)]

            def settled() -> bool:
                """Every line consumed, every record of the repartition topic too (its committed offsets
                at its log end: once, a copy was taken while the second subtopology had not yet committed
                one of its partitions), and nothing committed since the last look."""
                listings.append(_committed(broker))
                lines = {k: v for k, v in listings[-1].items() if k[0] == LINES}
                ends = {(REPARTITION, p): _log_end(broker, REPARTITION, p) for p in range(2)}
                repartitioned = {k: v for k, v in listings[-1].items() if k[0] == REPARTITION}
                return (
                    listings[-1] == listings[-2]
                    and lines == {(LINES, p): PER_PARTITION for p in range(2)}
                    and repartitioned == ends
                )

            wait_until("the application to commit every line", settled, seconds=120, pause=1)
            log = broker.copy_offsets_log(folder / "log-running")
            committed, described = _committed(broker), _described(broker)
            _cli("audit", "--input", str(log), "--output", str(folder / "audit"), "--conf", str(conf),
                 "--as-of", "now", "--quiet")  # fmt: skip
            verdicts = [
                v for v in table_rows(str(folder / "audit" / "partition_verdicts")).to_pylist()
                if v["group_id"] == APPLICATION
            ]  # fmt: skip
            group = next(
                g for g in table_rows(str(folder / "audit" / "group_verdicts")).to_pylist()
                if g["group_id"] == APPLICATION
            )  # fmt: skip
            # Past every commit's retention (and a sweep), the running group's offsets are all still there.
            newest = max(v["commit_timestamp_ms"] for v in verdicts)
            time.sleep(
                max(0.0, (newest + RETENTION_MINUTES * 60_000 + CHECK_INTERVAL_MS + SLACK_MS) / 1000 - time.time())
            )
            still_listed = _committed(broker)
            application.stdin.close()  # the application closes and its member leaves the group
            assert application.wait(120) == 0, printed.read_text()[-2000:]
            wait_until(
                "the sweep to delete the group's offsets", lambda: _committed(broker) == {}, seconds=120, pause=1
            )
            time.sleep((CHECK_INTERVAL_MS + SLACK_MS) / 1000)  # and, at a later sweep, the group
            listed_after = _committed(broker)
        finally:
            _stop(application)
    after = broker.copy_offsets_log(folder / "log-after")
    _cli("history", "--input", str(after), "--output", str(folder / "history"), "--conf", str(conf), "--quiet")
    events = [
        e for e in table_rows(str(folder / "history" / "offset_history")).to_pylist() if e["group_id"] == APPLICATION
    ]
    return Observed(version, verdicts, group, committed, described, still_listed, listed_after, events)


def test_the_audit_holds_the_offsets_the_admin_api_lists_on_the_input_and_repartition_topics(observed):
    audited = {(v["topic"], v["partition"]): v["committed_offset"] for v in observed.verdicts}
    assert audited == observed.committed
    assert {topic for topic, _ in audited} == {LINES, REPARTITION}


def test_the_group_is_the_streams_group_kafka_streams_groups_describes(observed):
    assert observed.described == ("Stable", 1)
    group = observed.group
    assert (group["group_type"], group["group_state"], group["member_count"]) == ("streams", *observed.described)
    assert group["group_expires_at_ms"] is None


def test_a_running_streams_groups_offsets_never_expire_and_the_broker_keeps_them(observed):
    assert {(v["rule"], v["expires_at_ms"]) for v in observed.verdicts} == {("SUBSCRIBED_TOPIC", None)}
    assert observed.still_listed == observed.committed


def test_once_the_application_left_history_calls_every_tombstone_of_the_sweep_expired(observed):
    assert observed.listed_after == {}
    deleted = {(e["topic"], e["partition"]): e["cause"] for e in observed.events if e["event"] == "OFFSET_DELETED"}
    assert deleted == dict.fromkeys(observed.committed, "EXPIRED")
    assert [e["cause"] for e in observed.events if e["event"] == "GROUP_DELETED"] == ["EXPIRED"]
