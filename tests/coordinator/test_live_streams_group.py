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
- Once the application closes (its member leaves, the group is Empty), the first sweep deletes the
  offsets, older than the retention by then, and the group: past that sweep's window the Admin API lists
  nothing, and `history` on the log calls every one of those tombstones EXPIRED, each written in that
  window.
- NotReady (rule 1 of the 4.2 change, KAFKA-19779): a second application reads two topics, and one of
  them is deleted while it runs. The group goes NotReady with its member still in it, and its log shows
  it (ValidatedTopologyEpoch -1 against topology epoch 0). Past every remaining commit's retention the
  broker still lists the offsets of the other topic and of the repartition topic, and the audit by the
  broker's rules keeps them (SUBSCRIBED_TOPIC); by 4.1's rules the same log gives UNSUBSCRIBED_TOPIC,
  expired, with the KAFKA-19779 known issue.
"""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner
from kafka_broker import (
    CHECK_INTERVAL_MS,
    RETENTION_MINUTES,
    SHORT_LIVED,
    Broker,
    compile_against,
    java,
    kafka_broker,
    kafka_versions,
    libs,
    version_tuple,
    wait_until,
)
from live_services import _stop, live, table_rows

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

NOT_READY_APPLICATION = "word-count-not-ready"
MORE_LINES = "more-lines"  # its second input (co-partitioned with the first), deleted while it runs
NOT_READY_REPARTITION = f"{NOT_READY_APPLICATION}-KSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition"
# A Kafka Streams client fails two heartbeat intervals after its group reports a missing source topic
# (StreamThread.handleMissingSourceTopicsWithTimeout, 4.3+), and then leaves the group. Heartbeats every
# 50 s keep its member in the NotReady group for 100 s, past the retention of the commits made just
# before; the session timeout is above the interval, as the broker requires.
SLOW_HEARTBEATS = {
    "group.streams.initial.rebalance.delay.ms": "0",
    "group.streams.max.heartbeat.interval.ms": "60000",
    "group.streams.heartbeat.interval.ms": "50000",
    "group.streams.max.session.timeout.ms": "180000",
    "group.streams.session.timeout.ms": "150000",
}


@dataclass(frozen=True)
class Observed:
    version: str
    verdicts: list[dict]  # partition_verdicts of the streams group while it ran
    group: dict  # its group_verdicts row
    committed: dict[tuple[str, int], int]  # what the Admin API listed when the log was copied
    described: tuple[str, int]  # state and members, as kafka-streams-groups.sh --describe --state says
    still_listed: dict[tuple[str, int], int]  # what it listed past every commit's retention, still running
    leaving: tuple[float, float]  # when the application was told to close, and when it had closed (epoch ms)
    listed_after: dict[tuple[str, int], int]  # what it listed past the window of the first sweep after that
    events: list[dict]  # offset_history of the log at the end


def _committed(broker: Broker, group: str = APPLICATION) -> dict[tuple[str, int], int]:
    from confluent_kafka import ConsumerGroupTopicPartitions

    admin = broker.admin()
    listed = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group].result(60)
    return {(tp.topic, tp.partition): tp.offset for tp in listed.topic_partitions if tp.offset >= 0}


def _log_end(broker: Broker, topic: str, partition: int) -> int:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "log-ends"})
    try:
        return consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)[1]
    finally:
        consumer.close()


def _described(broker: Broker, group: str = APPLICATION) -> tuple[str, int]:
    """kafka-streams-groups.sh --describe --state: GROUP, COORDINATOR (ID) (two words), STATE, #MEMBERS."""
    printed = broker.tool("streams-groups", "--bootstrap-server", broker.bootstrap, "--describe", "--group",
                          group, "--state")  # fmt: skip
    assert printed.returncode == 0, printed.stdout + printed.stderr[-2000:]
    row = next(line.split() for line in printed.stdout.splitlines() if line.startswith(group + " "))
    return row[-2], int(row[-1])


def _application(broker: Broker, version: str, classes: Path, folder: Path, application: str, inputs: list[str]):
    """CountWords started as `application` on `inputs`, printing into folder/application.out; running
    (it printed RUNNING) when this returns."""
    printed = folder / "application.out"
    with open(printed, "wb") as out:
        process = subprocess.Popen(
            [java(), "-Xmx256m", *SHORT_LIVED, "-cp", f"{libs(version)}/*:{classes}",
             f"-Dlog4j2.configurationFile={broker.folder / 'tools-log4j2.properties'}", "CountWords",
             broker.bootstrap, application, ",".join(inputs), COUNTS, str(folder / "state")],
            stdin=subprocess.PIPE, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    try:
        wait_until("the application to run", lambda: "\n" in printed.read_text(), seconds=180, pause=1)
        assert printed.read_text().split()[0] == "RUNNING", printed.read_text()[-2000:]
    except BaseException:
        _stop(process)
        raise
    return process


def _produce(broker: Broker, topic: str, partitions: int) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for partition in range(partitions):
        for i in range(PER_PARTITION):
            producer.produce(topic, b"the quick brown fox %d" % (i % 3), partition=partition)
    producer.flush(30)


def _settled(broker: Broker, group: str, inputs: dict[str, int], repartition: str):
    """A check: every record of `inputs` (topic -> partitions) consumed, every record of the repartition
    topic too (its committed offsets at its log end: once, a copy was taken while the second subtopology
    had not yet committed one of its partitions), and nothing committed since the last look."""
    listings = [_committed(broker, group)]

    def settled() -> bool:
        listings.append(_committed(broker, group))
        read = {k: v for k, v in listings[-1].items() if k[0] in inputs}
        ends = {(repartition, p): _log_end(broker, repartition, p) for p in range(2)}
        repartitioned = {k: v for k, v in listings[-1].items() if k[0] == repartition}
        everything = {(topic, p): PER_PARTITION for topic, n in inputs.items() for p in range(n)}
        return listings[-1] == listings[-2] and read == everything and repartitioned == ends

    return settled


def _audit_conf(folder: Path) -> Path:
    """The test broker's retention and sweep interval, for the audit to judge its log by."""
    conf = folder / "audit.toml"
    conf.write_text(f"[audit]\nretention_minutes = {RETENTION_MINUTES}\ncheck_interval_ms = {CHECK_INTERVAL_MS}\n")
    return conf


def _cli(*args: str) -> None:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 0, result.output + repr(result.exception)


@pytest.fixture(scope="module", params=STREAMS_VERSIONS)
def observed(request, tmp_path_factory, spark) -> Observed:
    from confluent_kafka.admin import NewTopic

    version = request.param
    folder = tmp_path_factory.mktemp(f"kafka-streams-{version}")
    conf = _audit_conf(folder)
    with live(kafka_broker(folder / "broker", version)) as broker:
        classes = compile_against(version, SOURCE)
        admin = broker.admin()  # held while its futures run: a destroyed client fails them
        for future in admin.create_topics([NewTopic(LINES, 2, 1), NewTopic(COUNTS, 2, 1)]).values():
            future.result(60)
        _produce(broker, LINES, 2)
        printed = folder / "application.out"
        application = _application(broker, version, classes, folder, APPLICATION, [LINES])
        try:
            settled = _settled(broker, APPLICATION, {LINES: 2}, REPARTITION)
            wait_until("the application to commit every line", settled, seconds=120, pause=1)
            log = broker.copy_offsets_log(folder / "log-running")
            committed, described = _committed(broker), _described(broker)
            verdicts, group = _verdicts(folder / "audit", conf, log, APPLICATION)
            # Past every commit's retention (and a sweep), the running group's offsets are all still there.
            newest = max(v["commit_timestamp_ms"] for v in verdicts)
            time.sleep(
                max(0.0, (newest + RETENTION_MINUTES * 60_000 + CHECK_INTERVAL_MS + SLACK_MS) / 1000 - time.time())
            )
            still_listed = _committed(broker)
            closed_at_ms = time.time() * 1000
            application.stdin.close()  # the application closes and its member leaves the group
            assert application.wait(120) == 0, printed.read_text()[-2000:]
            left_at_ms = time.time() * 1000
            # Its commits are older than the retention: the first sweep after the leave deletes them and
            # the group. Past that sweep's window (not until the broker shows what the test expects), what
            # is listed.
            time.sleep(max(0.0, (left_at_ms + CHECK_INTERVAL_MS + SLACK_MS) / 1000 - time.time()))
            listed_after = _committed(broker)
        finally:
            _stop(application)
    after = broker.copy_offsets_log(folder / "log-after")
    _cli("history", "--input", str(after), "--output", str(folder / "history"), "--conf", str(conf), "--quiet")
    events = [
        e for e in table_rows(str(folder / "history" / "offset_history")).to_pylist() if e["group_id"] == APPLICATION
    ]
    return Observed(
        version, verdicts, group, committed, described, still_listed, (closed_at_ms, left_at_ms), listed_after, events
    )


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


def test_once_the_application_left_the_next_sweep_deletes_its_offsets_and_group(observed):
    """Its commits are older than the retention: once the member has left (the group Empty), the first
    sweep deletes every offset and the group, so past that sweep's window the Admin API lists nothing;
    `history` calls every one of those tombstones EXPIRED, each written between the leave and the end of
    that window."""
    assert observed.listed_after == {}
    deleted = {(e["topic"], e["partition"]): e for e in observed.events if e["event"] == "OFFSET_DELETED"}
    assert {key: e["cause"] for key, e in deleted.items()} == dict.fromkeys(observed.committed, "EXPIRED")
    (group,) = [e for e in observed.events if e["event"] == "GROUP_DELETED"]
    assert group["cause"] == "EXPIRED"
    closed, left = observed.leaving
    for e in [*deleted.values(), group]:
        assert closed <= e["event_time_ms"] <= left + CHECK_INTERVAL_MS + SLACK_MS, (e, observed.leaving)


@dataclass(frozen=True)
class NotReady:
    version: str
    committed: dict[tuple[str, int], int]  # what the Admin API listed before the topic was deleted
    still_listed: dict[tuple[str, int], int]  # what it listed past the retention of every commit left
    described: tuple[str, int]  # state and members then, as kafka-streams-groups.sh says
    observed_at_ms: int
    by_version: tuple[list[dict], dict]  # partition and group verdicts by the broker's own rules
    by_4_1: tuple[list[dict], dict]  # the same log by Kafka 4.1's rules


def _verdicts(
    folder: Path, conf: Path, log: Path, group_id: str, kafka_version: str | None = None
) -> tuple[list[dict], dict]:
    """The log audited as of now (by `kafka_version`'s rules, else the default): the group's partition
    verdicts and its group verdict."""
    version = ["--kafka-version", kafka_version] if kafka_version else []
    _cli("audit", "--input", str(log), "--output", str(folder), "--conf", str(conf), "--as-of", "now",
         *version, "--quiet")  # fmt: skip
    verdicts = [v for v in table_rows(str(folder / "partition_verdicts")).to_pylist() if v["group_id"] == group_id]
    (group,) = [g for g in table_rows(str(folder / "group_verdicts")).to_pylist() if g["group_id"] == group_id]
    return verdicts, group


@pytest.fixture(scope="module", params=STREAMS_VERSIONS)
def not_ready(request, tmp_path_factory, spark) -> NotReady:
    from confluent_kafka.admin import NewTopic

    version = request.param
    folder = tmp_path_factory.mktemp(f"kafka-streams-not-ready-{version}")
    conf = _audit_conf(folder)
    with live(kafka_broker(folder / "broker", version, SLOW_HEARTBEATS)) as broker:
        classes = compile_against(version, SOURCE)
        admin = broker.admin()  # held while its futures run: a destroyed client fails them
        topics = [NewTopic(LINES, 2, 1), NewTopic(MORE_LINES, 2, 1), NewTopic(COUNTS, 2, 1)]
        for future in admin.create_topics(topics).values():
            future.result(60)
        _produce(broker, LINES, 2)
        _produce(broker, MORE_LINES, 2)
        application = _application(broker, version, classes, folder, NOT_READY_APPLICATION, [LINES, MORE_LINES])
        try:
            settled = _settled(broker, NOT_READY_APPLICATION, {LINES: 2, MORE_LINES: 2}, NOT_READY_REPARTITION)
            wait_until("the application to commit every line", settled, seconds=180, pause=1)
            committed = _committed(broker, NOT_READY_APPLICATION)
            for future in admin.delete_topics([MORE_LINES]).values():
                future.result(60)
            wait_until(
                "the group to go NotReady",
                lambda: _described(broker, NOT_READY_APPLICATION)[0] == "NotReady",
                seconds=120,
                pause=2,
            )
            # Past the retention of every commit left (and a sweep), with the member still in the group.
            log = broker.copy_offsets_log(folder / "log-committed")
            committed_verdicts, _ = _verdicts(folder / "audit-committed", conf, log, NOT_READY_APPLICATION, version)
            newest = max(v["commit_timestamp_ms"] for v in committed_verdicts)
            time.sleep(
                max(0.0, (newest + RETENTION_MINUTES * 60_000 + CHECK_INTERVAL_MS + SLACK_MS) / 1000 - time.time())
            )
            still_listed = _committed(broker, NOT_READY_APPLICATION)
            described = _described(broker, NOT_READY_APPLICATION)
            observed_at_ms = int(time.time() * 1000)
            log = broker.copy_offsets_log(folder / "log-not-ready")
        finally:
            _stop(application)
    by_version = _verdicts(folder / "audit", conf, log, NOT_READY_APPLICATION, version)
    by_4_1 = _verdicts(folder / "audit-4.1", conf, log, NOT_READY_APPLICATION, "4.1")
    return NotReady(version, committed, still_listed, described, observed_at_ms, by_version, by_4_1)


def test_a_group_missing_a_source_topic_goes_not_ready_with_its_member(not_ready):
    assert not_ready.described == ("NotReady", 1)
    _, group = not_ready.by_version
    assert (group["group_type"], group["group_state"], group["member_count"]) == ("streams", "NotReady", 1)
    assert group["group_expires_at_ms"] is None


def test_a_not_ready_groups_offsets_are_kept_by_the_broker_and_by_its_rules(not_ready):
    left = {k: v for k, v in not_ready.committed.items() if k[0] != MORE_LINES}
    assert {topic for topic, _ in left} == {LINES, NOT_READY_REPARTITION}
    assert not_ready.still_listed == left  # the deleted topic's went with it; nothing else expired
    verdicts, _ = not_ready.by_version
    assert {(v["topic"], v["partition"]): v["committed_offset"] for v in verdicts} == left
    assert {(v["rule"], v["expires_at_ms"], v["known_issue"]) for v in verdicts} == {("SUBSCRIBED_TOPIC", None, None)}


def test_by_4_1_rules_the_same_log_expires_them_with_the_known_issue(not_ready):
    from offset_audit.coordinator.rules import KAFKA_19779_EXPIRES

    verdicts, group = not_ready.by_4_1
    assert group["group_state"] == "NotReady"
    assert {(v["topic"], v["partition"]) for v in verdicts} == set(not_ready.still_listed)
    for v in verdicts:
        assert (v["rule"], v["known_issue"], v["expired"]) == ("UNSUBSCRIBED_TOPIC", KAFKA_19779_EXPIRES, True)
        assert v["expires_at_ms"] == v["commit_timestamp_ms"] + RETENTION_MINUTES * 60_000
        assert v["expires_at_ms"] < not_ready.observed_at_ms
