"""The broker as the oracle: real clients write `__consumer_offsets` on a real Kafka broker, the audit judges
a copy of its log, and then the broker's own expiry sweep says whether the audit was right.

On each version `make kafka` fetched (tests/kafka_broker.py), with offsets.retention.minutes=2 (the least
at which the retention `history` infers has a lower bound to prove: 1 is also the least the broker takes)
and a sweep every second:
- a standalone consumer's commit (clock: the commit), a classic group that left (Empty: the clock is when
  it became Empty), a KIP-848 group that left, a Stable classic group that dropped a topic from its
  subscription (KIP-496: that topic's offsets go, the others stay), a Stable group (never), committed and
  aborted transactional commits, one left open (never while it is), and offsets and a group deleted on
  request (OffsetDelete, and DeleteGroups through the Admin API).
- The audit runs on a copy of the log taken right after. Then the broker sweeps; a second copy of the log,
  read by `history`, holds the tombstones it wrote, each with the time the sweep wrote it.
- Every offset the audit said expires is tombstoned within [expires_at, sweep_window_end + slack]; no
  offset it said never expires is; groups go when group_expires_at says; every sweep tombstone is EXPIRED
  and every requested one DELETED_BY_REQUEST; the retention `history` infers holds the broker's; what the
  Admin API lists, before and after, is what the audit holds and said would stay; each group has the type
  its clients made it; the lag is what the clients produced and committed; and the version's own
  kafka-dump-log text and kafka-console-consumer formatter text of the log are judged as its segments
  (but for what the console text cannot show).
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner
from kafka_broker import (
    CHECK_INTERVAL_MS,
    Broker,
    commit_offsets,
    committed_offsets,
    delete_offsets,
    group_consumer,
    group_member,
    holds_assignment,
    kafka_broker,
    kafka_versions,
    main_class,
    version_tuple,
    wait_until,
)
from live_services import live, table_rows

from offset_audit.cli.main import main

pytestmark = pytest.mark.slow

RETENTION_MINUTES = 2
RETENTION_MS = RETENTION_MINUTES * 60_000
# A sweep runs every CHECK_INTERVAL_MS; this allows for a sweep that takes long on a busy 2-core machine
# and for the group coordinator's timer, which fires the sweep at the interval after the previous one ended.
SLACK_MS = 5_000
ORDERS, PAYMENTS = "orders", "payments"
RECORDS = 20  # produced to each partition of both topics


@dataclass
class Story:
    """What the clients did, and the consumers that stay in their groups until the end."""

    groups: list[str] = field(default_factory=list)
    kinds: dict[str, str] = field(default_factory=dict)  # the group type each group's clients made it
    consuming: dict[str, set[str]] = field(default_factory=dict)  # topics of the members that stay
    requested: set[tuple[str, str | None, int | None]] = field(default_factory=set)
    members: list = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)
    threads: list[threading.Thread] = field(default_factory=list)
    open_producers: list = field(default_factory=list)  # held so that their transactions stay open

    def made(self, group: str, kind: str = "classic") -> None:
        """A group the clients made: "classic" where they joined with the classic protocol or only
        committed (a simple group is a classic group without a protocol), "consumer" with KIP-848's."""
        self.groups.append(group)
        self.kinds[group] = kind

    def keep_polling(self, consumer) -> None:
        """A member stays in its group (Stable) while a thread polls for it."""

        def loop() -> None:
            while not self.stop.is_set():
                consumer.poll(0.2)

        thread = threading.Thread(target=loop, daemon=True)
        thread.start()
        self.members.append(consumer)
        self.threads.append(thread)

    def close(self) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(10)
        for consumer in self.members:
            consumer.close()


def write_history(broker: Broker) -> Story:
    from confluent_kafka import Producer, TopicPartition
    from confluent_kafka.admin import NewTopic

    admin = broker.admin()
    for future in admin.create_topics([NewTopic(ORDERS, 3, 1), NewTopic(PAYMENTS, 2, 1)]).values():
        future.result(60)
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for topic, partitions in ((ORDERS, 3), (PAYMENTS, 2)):
        for partition in range(partitions):
            for i in range(RECORDS):
                producer.produce(topic, b"record %d" % i, partition=partition)
    producer.flush(30)
    story = Story()

    # A standalone consumer: commits without joining (a simple group), clock from the commit.
    standalone = group_consumer(broker, "standalone")
    commit_offsets(standalone, (ORDERS, 0, 3), (ORDERS, 1, 4))
    standalone.close()
    story.made("standalone")

    # A classic group that consumed, committed and left: Empty, clock from when it became Empty.
    leaver = group_member(broker, "classic-left", [ORDERS])
    commit_offsets(leaver, (ORDERS, 0, 5), (ORDERS, 2, 1))
    leaver.close()
    story.made("classic-left")

    # A Stable classic group: its subscribed offsets never expire.
    stable = group_member(broker, "classic-stable", [PAYMENTS])
    commit_offsets(stable, (PAYMENTS, 0, 2))
    story.keep_polling(stable)
    story.made("classic-stable")
    story.consuming["classic-stable"] = {PAYMENTS}

    # KIP-496: a Stable group stops subscribing to a topic; that topic's offsets expire from their commit.
    dropper = group_member(broker, "classic-dropped-topic", [ORDERS, PAYMENTS])
    commit_offsets(dropper, (ORDERS, 1, 7), (PAYMENTS, 1, 3))
    dropper.subscribe([PAYMENTS])
    wait_until("classic-dropped-topic's new assignment", lambda: holds_assignment(dropper, {PAYMENTS}))
    story.keep_polling(dropper)
    story.made("classic-dropped-topic")
    story.consuming["classic-dropped-topic"] = {PAYMENTS}

    if version_tuple(broker.version) >= (4, 0):
        # A KIP-848 consumer group that consumed, committed and left.
        modern = group_member(broker, "modern-left", [ORDERS], **{"group.protocol": "consumer"})
        commit_offsets(modern, (ORDERS, 0, 9))
        modern.close()
        story.made("modern-left", "consumer")

    # Transactional commits: one committed (applied, expires from its commit), one aborted (never applied).
    for outcome in ("committed", "aborted"):
        group = f"transactional-{outcome}"
        member = group_member(broker, group, [ORDERS])
        transactional = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": f"tx-{outcome}"})
        transactional.init_transactions(60)
        transactional.begin_transaction()
        transactional.send_offsets_to_transaction([TopicPartition(ORDERS, 2, 11)], member.consumer_group_metadata(), 60)
        if outcome == "committed":
            transactional.commit_transaction(60)
        else:
            transactional.abort_transaction(60)
        member.close()
        story.made(group)

    # A transaction left open while the audit runs: its group's committed offset does not expire (the
    # broker asks hasPendingTransactionalOffsets) and the group is not removed. The producer stays open,
    # with a transaction timeout beyond the test, so that the broker does not abort it meanwhile.
    pending_member = group_member(broker, "transactional-pending", [ORDERS])
    commit_offsets(pending_member, (ORDERS, 1, 5))
    pending = Producer(
        {"bootstrap.servers": broker.bootstrap, "transactional.id": "tx-pending", "transaction.timeout.ms": 600_000}
    )
    pending.init_transactions(60)
    pending.begin_transaction()
    pending.send_offsets_to_transaction([TopicPartition(ORDERS, 1, 12)], pending_member.consumer_group_metadata(), 60)
    pending_member.close()
    story.open_producers.append(pending)
    story.made("transactional-pending")

    # Deletions on request: OffsetDelete sent at once (kafka_broker.delete_offsets), DeleteGroups with the
    # Admin API.
    offsets_deleted = group_consumer(broker, "offsets-deleted")
    commit_offsets(offsets_deleted, (PAYMENTS, 0, 1), (PAYMENTS, 1, 1))
    offsets_deleted.close()
    delete_offsets(broker, "offsets-deleted", PAYMENTS, [0])
    story.requested.add(("offsets-deleted", PAYMENTS, 0))
    story.made("offsets-deleted")
    group_deleted = group_consumer(broker, "group-deleted")
    commit_offsets(group_deleted, (ORDERS, 1, 2))
    group_deleted.close()
    admin.delete_consumer_groups(["group-deleted"])["group-deleted"].result(60)
    story.requested.add(("group-deleted", ORDERS, 1))
    story.requested.add(("group-deleted", None, None))
    return story


def _cli(*args: str) -> str:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 0, result.output + repr(result.exception)
    return result.stdout


@dataclass(frozen=True)
class Observed:
    version: str
    verdicts: list[dict]  # partition_verdicts of the audit taken right after the history
    groups: dict[str, dict]  # group_verdicts by group id
    events: list[dict]  # offset_history of the log after the sweeps
    remaining: dict[str, set[tuple[str, int]]]  # what the Admin API lists at the end
    listed_groups: set[str]  # what the version's kafka-consumer-groups --list lists at the end
    requested: set[tuple[str, str | None, int | None]]
    retention: dict  # history's consistent_retention_minutes
    committed: dict[tuple[str, str, int], int]  # what the Admin API listed when the log was copied
    described: dict[str, tuple[str, str | None, int]]  # and described: state, type, members
    from_text: list[dict]  # partition_verdicts of the same log read as kafka-dump-log --offsets-decoder text
    events_stopped: list[dict]  # offset_history of the log copied once the broker stopped
    from_console: list[dict]  # partition_verdicts of the same log as kafka-console-consumer's formatters print it
    kinds: dict[str, str]  # the group type each group's clients made it
    consuming: dict[str, set[str]]  # the topics of the members that stayed in their groups


def _described(broker: Broker, groups: list[str]) -> dict[str, tuple[str, str | None, int]]:
    """Each group as describeConsumerGroups shows it: its state, its type (None where the broker does not
    say: before KIP-848's DescribeGroups v5 answers) and its member count."""
    admin, found = broker.admin(), {}
    for group_id in groups:
        group = admin.describe_consumer_groups([group_id], request_timeout=30)[group_id].result(60)
        kind = group.type.name.lower() if group.type.name != "UNKNOWN" else None
        found[group_id] = (group.state.name.lower(), kind, len(group.members))
    return found


def _dump_log_text(broker: Broker, log: Path, target: Path) -> Path:
    """The copied segments as the version's own kafka-dump-log.sh --offsets-decoder prints them."""
    segments = sorted(str(p) for p in log.glob("__consumer_offsets-*/*.log"))
    dumped = broker.tool("dump-log", "--offsets-decoder", "--print-data-log", "--files", ",".join(segments))
    assert dumped.returncode == 0, dumped.stdout[-2000:] + dumped.stderr[-2000:]
    target.write_text(dumped.stdout)
    return target


def _data_records(log: Path) -> dict[int, int]:
    """How many data records (not transaction markers) each `__consumer_offsets-N` folder of the copy holds."""
    from offset_audit.inputs.log_files import log_files, read_log_file

    counts: dict[int, int] = {}
    for unit in log_files([str(log)], "segments"):
        for batch in read_log_file(unit):
            rows = batch.to_pydict()
            for partition, control in zip(rows["source_partition"], rows["is_control"], strict=True):
                counts[partition] = counts.get(partition, 0) + (not control)
    return counts


def _console_text(broker: Broker, log: Path, target: Path) -> Path:
    """The same records as the version's own kafka-console-consumer.sh prints them with its formatters:
    group records (GroupMetadataMessageFormatter) then offset commits (OffsetsMessageFormatter), one
    partition after the other, as an operator gathers them. Each run reads a partition from its start and
    stops after as many records as the copy holds (--max-messages), so that the text is the copy's log and
    not what the sweep wrote since. Read by assignment (--partition), no group of its own is created."""
    counts = _data_records(log)
    texts: dict[tuple[int, str], str] = {}

    def read(partition: int, formatter: str) -> None:
        printed = broker.tool(
            "console-consumer", "--bootstrap-server", broker.bootstrap, "--topic", "__consumer_offsets",
            "--partition", str(partition), "--offset", "earliest", "--max-messages", str(counts[partition]),
            "--timeout-ms", "60000", "--formatter", main_class(broker.version, formatter),
        )  # fmt: skip
        assert printed.returncode == 0 and f"Processed a total of {counts[partition]} messages" in printed.stderr, (
            printed.stderr[-2000:]
        )
        texts[partition, formatter] = printed.stdout

    runs = [(p, f) for p in sorted(counts) if counts[p] for f in ("group-formatter", "offsets-formatter")]
    threads = [threading.Thread(target=read, args=run) for run in runs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert set(texts) == set(runs), f"console consumers that failed: {set(runs) - set(texts)}"
    target.write_text("".join(texts[run] for run in runs))
    return target


def _get_offsets(broker: Broker, when: str, target: Path) -> Path:
    """What the version's own kafka-get-offsets.sh prints at --time -1 (end) or -2 (start)."""
    printed = broker.tool("get-offsets", "--bootstrap-server", broker.bootstrap, "--time", when)
    assert printed.returncode == 0 and printed.stdout.strip(), printed.stdout + printed.stderr[-2000:]
    target.write_text(printed.stdout)
    return target


def _remaining(broker: Broker, groups: list[str]) -> dict[str, set[tuple[str, int]]]:
    """Each group's partitions with a committed offset, as the Admin API lists them now."""
    found: dict[str, set[tuple[str, int]]] = {group: set() for group in groups}
    for group, topic, partition in committed_offsets(broker, groups):
        found[group].add((topic, partition))
    return found


@pytest.fixture(scope="module", params=kafka_versions())
def observed(request, tmp_path_factory, spark) -> Observed:
    version = request.param
    folder = tmp_path_factory.mktemp(f"kafka-{version}")
    conf = folder / "audit.toml"
    # Every audit judges by the rules of the broker it asks ([kafka] version, --kafka-version).
    conf.write_text(
        f"[audit]\nretention_minutes = {RETENTION_MINUTES}\ncheck_interval_ms = {CHECK_INTERVAL_MS}\n"
        f'[kafka]\nversion = "{version}"\n'
    )
    with live(
        kafka_broker(folder / "broker", version, {"offsets.retention.minutes": str(RETENTION_MINUTES)})
    ) as broker:
        story = write_history(broker)
        try:
            before = broker.copy_offsets_log(folder / "log-before")
            # The audit is as of the copy: a group already due in it (Empty, no offsets) is one the sweep
            # removes within the second, and a later `now` would put its due time after the removal.
            copied_at = datetime.now(UTC).isoformat()
            # What the Admin API says at the moment of the copy, before a sweep can change it.
            committed = committed_offsets(broker, story.groups)
            deleted_groups = {group for group, topic, _ in story.requested if topic is None}
            described = _described(broker, [g for g in story.groups if g not in deleted_groups])
            console = _console_text(broker, before, folder / "console.txt")
            _cli("audit", "--input", str(before), "--output", str(folder / "audit"), "--conf", str(conf),
                 "--as-of", copied_at, "--end-offsets", "kafka", "--bootstrap-server", broker.bootstrap,
                 "--quiet")  # fmt: skip
            ends, starts = (_get_offsets(broker, when, folder / f"offsets{when}.txt") for when in ("-1", "-2"))
            verdicts = table_rows(str(folder / "audit" / "partition_verdicts")).to_pylist()
            as_of = verdicts[0]["as_of"].isoformat()
            text = _dump_log_text(broker, before, folder / "dump-log.txt")
            _cli("audit", "--input", str(text), "--input-format", "dump-log", "--output", str(folder / "audit-text"),
                 "--conf", str(conf), "--as-of", as_of, "--end-offsets", str(ends), "--start-offsets", str(starts),
                 "--quiet")  # fmt: skip
            from_text = table_rows(str(folder / "audit-text" / "partition_verdicts")).to_pylist()
            _cli("audit", "--input", str(console), "--input-format", "console", "--output",
                 str(folder / "audit-console"), "--conf", str(conf), "--as-of", as_of, "--quiet")  # fmt: skip
            from_console = table_rows(str(folder / "audit-console" / "partition_verdicts")).to_pylist()
            groups = {g["group_id"]: g for g in table_rows(str(folder / "audit" / "group_verdicts")).to_pylist()}
            deadlines = [v["expires_at_ms"] for v in verdicts if v["expires_at_ms"] is not None]
            deadlines += [g["group_expires_at_ms"] for g in groups.values() if g["group_expires_at_ms"] is not None]
            wait_until_ms = max(deadlines, default=0) + CHECK_INTERVAL_MS + SLACK_MS
            time.sleep(max(0.0, wait_until_ms / 1000 - time.time()))
            remaining = _remaining(broker, story.groups)
            listing = broker.tool("consumer-groups", "--bootstrap-server", broker.bootstrap, "--list")
            assert listing.returncode == 0, listing.stdout + listing.stderr
            listed = set(listing.stdout.split())
            after = broker.copy_offsets_log(folder / "log-after")
        finally:
            story.close()
    stopped = broker.copy_offsets_log(folder / "log-stopped")  # the broker has stopped: its files are whole
    history = folder / "history"
    document = _cli("history", "--input", str(after), "--output", str(history), "--conf", str(conf), "--json")
    retention = json.loads(document)["consistent_retention_minutes"]
    events = table_rows(str(history / "offset_history")).to_pylist()
    _cli("history", "--input", str(stopped), "--output", str(folder / "history-stopped"), "--conf", str(conf),
         "--quiet")  # fmt: skip
    events_stopped = table_rows(str(folder / "history-stopped" / "offset_history")).to_pylist()
    return Observed(
        version,
        verdicts,
        groups,
        events,
        remaining,
        listed,
        story.requested,
        retention,
        committed,
        described,
        from_text,
        events_stopped,
        from_console,
        story.kinds,
        story.consuming,
    )


def _deletions(observed: Observed, event: str) -> dict[tuple, dict]:
    return {(e["group_id"], e["topic"], e["partition"]): e for e in observed.events if e["event"] == event}


def _judged(rows: list[dict]) -> dict[tuple, tuple]:
    return {
        (r["group_id"], r["topic"], r["partition"]): (r["committed_offset"], r["rule"], r["expires_at_ms"])
        for r in rows
    }


def test_the_audit_holds_the_offsets_the_admin_api_lists(observed):
    audited = {(v["group_id"], v["topic"], v["partition"]): v["committed_offset"] for v in observed.verdicts}
    assert audited == observed.committed


def test_every_group_has_the_state_type_and_members_the_admin_api_describes(observed):
    """State and members as the Admin API describes them, and the type the clients made each group, which
    the broker says too where its answer carries one."""
    # A group already due in the copy (Empty, no offsets) is swept within the second, which may come before
    # it is described: the audit must have said it was due by its as-of.
    swept = {g for g, (state, _, _) in observed.described.items() if state == "dead" and g in observed.groups}
    for group_id in swept:
        group = observed.groups[group_id]
        due = group["group_expires_at_ms"]
        assert due is not None and due <= int(group["as_of"].timestamp() * 1000), group
    audited = {
        g["group_id"]: (g["group_state"].lower(), g["group_type"], g["member_count"])
        for g in observed.groups.values()
        if g["group_id"] not in swept
    }
    described = {
        group_id: (state, observed.kinds[group_id], members)
        for group_id, (state, _, members) in observed.described.items()
        if state != "dead"  # the coordinator holds no such group (an Empty group without offsets is swept)
    }
    assert described == audited
    said = {group_id: kind for group_id, (_, kind, _) in observed.described.items() if kind is not None}
    assert said == {group_id: observed.kinds[group_id] for group_id in said}


def test_the_versions_own_dump_log_text_is_judged_as_its_segments(observed):
    assert _judged(observed.from_text) == _judged(observed.verdicts)


def test_the_versions_own_console_formatters_text_is_judged_as_its_segments(observed):
    """What kafka-console-consumer.sh prints with the version's formatters is judged as the segments are,
    but for what that text cannot show (docs/inputs.md): no transaction markers, so an aborted commit
    and one whose transaction is open read as applied commits; no KIP-848 records (the formatters print
    record types 0-2), so a KIP-848 group's offsets read as a simple group's, with the same clock."""
    segments, console = _judged(observed.verdicts), _judged(observed.from_console)
    transactional = ("transactional-aborted", "transactional-pending")
    # Their rule depends on where the text puts their group's records (each formatter prints its own
    # record types): only the offsets are said.
    unmarked = {key: console.pop(key)[0] for key in list(console) if key[0] in transactional}
    assert unmarked == {(transactional[0], ORDERS, 2): 11, (transactional[1], ORDERS, 1): 12}
    expected = {}
    for key, (offset, rule, expires) in segments.items():
        if key[0] not in transactional:
            modern = observed.groups[key[0]]["group_type"] != "classic"
            expected[key] = (offset, "SIMPLE_GROUP" if modern else rule, expires)
    assert console == expected


def test_end_offsets_asked_of_the_cluster_equal_what_kafka_get_offsets_prints(observed):
    """The first audit asked the broker (--end-offsets kafka); the second read the version's own
    kafka-get-offsets.sh output (--end-offsets, --start-offsets): the lag columns agree on every row,
    and are what the clients did: RECORDS produced to each partition from offset 0, the lag what a
    group's commit left of them, all of it stale where no member of the group consumes the topic."""
    columns = ("log_start_offset", "log_end_offset", "lag", "stale_lag", "offset_out_of_range")

    def lags(rows: list[dict]) -> dict[tuple, tuple]:
        return {(r["group_id"], r["topic"], r["partition"]): tuple(r[c] for c in columns) for r in rows}

    asked = lags(observed.verdicts)
    truth = {}
    for v in observed.verdicts:
        lag = RECORDS - v["committed_offset"]
        stale = 0 if v["topic"] in observed.consuming.get(v["group_id"], set()) else lag
        truth[v["group_id"], v["topic"], v["partition"]] = (0, RECORDS, lag, stale, False)
    assert asked == truth
    assert {stale for *_, stale, _ in truth.values()} > {0}, "no partition shows stale lag"
    assert lags(observed.from_text) == asked


def test_every_offset_the_audit_says_expires_is_tombstoned_by_the_sweep_in_its_window(observed):
    deleted = _deletions(observed, "OFFSET_DELETED")
    expiring = [v for v in observed.verdicts if v["expires_at_ms"] is not None]
    assert {v["rule"] for v in expiring} >= {"SIMPLE_GROUP", "EMPTY_GROUP", "UNSUBSCRIBED_TOPIC"}
    late_or_early = []
    for verdict in expiring:
        key = (verdict["group_id"], verdict["topic"], verdict["partition"])
        tombstone = deleted.get(key)
        written = None if tombstone is None else tombstone["event_time_ms"]
        window = (verdict["expires_at_ms"], verdict["expires_at_ms"] + CHECK_INTERVAL_MS + SLACK_MS)
        if written is None or not window[0] <= written <= window[1]:
            late_or_early.append((key, verdict["rule"], window, written))
    assert not late_or_early, f"Kafka {observed.version}: {late_or_early}"


def expires_pending_transactional_offsets(version: str) -> bool:
    """Kafka before 4.0 runs the Scala group coordinator, whose sweep (GroupMetadata.removeExpiredOffsets)
    skips only offsets with a commit being appended (pendingOffsetCommits), not those with an open
    transaction (pendingTransactionalOffsetCommits): it expires them by their time rule. The 4.0+
    coordinator asks hasPendingTransactionalOffsets first. The audit, told the version, judges each way."""
    return version_tuple(version) < (4, 0)


def _never(observed: Observed) -> list[dict]:
    """The offsets the audit says never expire."""
    return [v for v in observed.verdicts if v["expires_at_ms"] is None]


def test_no_offset_the_audit_says_never_expires_is_tombstoned(observed):
    deleted = _deletions(observed, "OFFSET_DELETED")
    kept = _never(observed)
    pending_rule = {v["rule"] for v in kept} & {"PENDING_TRANSACTION"}
    assert {v["rule"] for v in kept} >= {"SUBSCRIBED_TOPIC"}
    # judged by this version's rules: the pending commit holds its offset from 4.0 on only
    assert pending_rule == (
        set() if expires_pending_transactional_offsets(observed.version) else {"PENDING_TRANSACTION"}
    )
    tombstoned = [(v["group_id"], v["topic"], v["partition"]) for v in kept]
    assert [key for key in tombstoned if key in deleted] == []
    for group_id, topic, partition in tombstoned:
        assert (topic, partition) in observed.remaining[group_id], (group_id, topic, partition)


def test_the_admin_api_lists_at_the_end_exactly_what_the_audit_said_stays(observed):
    stays: dict[str, set] = {}
    for v in _never(observed):
        stays.setdefault(v["group_id"], set()).add((v["topic"], v["partition"]))
    assert {g: s for g, s in observed.remaining.items() if s} == stays


def writes_simple_group_tombstones(version: str) -> bool:
    """Kafka before 4.0 runs the Scala group coordinator, which removes a group that only stored offsets
    (generation 0) without a group tombstone ("We avoid writing the tombstone when the generationId is
    0", GroupMetadataManager.cleanupGroupMetadata and deleteGroups); the 4.0+ coordinator writes one."""
    return version_tuple(version) >= (4, 0)


def test_groups_go_when_the_audit_says(observed):
    deleted = {e["group_id"]: e for e in observed.events if e["event"] == "GROUP_DELETED"}
    for group_id, group in observed.groups.items():
        expires = group["group_expires_at_ms"]
        if expires is None:
            assert group_id in observed.listed_groups and group_id not in deleted, group
            continue
        assert group_id not in observed.listed_groups, group
        if group["protocol_type"] is None and not writes_simple_group_tombstones(observed.version):
            assert group_id not in deleted, group
            continue
        written = deleted[group_id]["event_time_ms"]
        assert expires <= written <= expires + CHECK_INTERVAL_MS + SLACK_MS, (group_id, expires, written)


def test_history_calls_every_sweep_tombstone_expired_and_every_requested_one_deleted_by_request(observed):
    causes = {}
    for e in observed.events:
        if e["event"] in ("OFFSET_DELETED", "GROUP_DELETED"):
            key = (
                (e["group_id"], e["topic"], e["partition"])
                if e["event"] == "OFFSET_DELETED"
                else (e["group_id"], None, None)
            )
            causes[key] = e["cause"]
    expected = set(observed.requested)
    if not writes_simple_group_tombstones(observed.version):
        expected.discard(("group-deleted", None, None))  # a simple group: no tombstone before 4.0
    requested = {key: causes.get(key) for key in expected}
    assert requested == dict.fromkeys(expected, "DELETED_BY_REQUEST")
    swept = {key: cause for key, cause in causes.items() if key not in observed.requested}
    if expires_pending_transactional_offsets(observed.version):
        # Judged by the version's rules, the pre-4.0 sweep's tombstone of an offset with an open
        # transaction is the sweep's own.
        assert {key for key in swept if key[0] == "transactional-pending"}
    assert swept and {key: cause for key, cause in swept.items() if cause != "EXPIRED"} == {}


def test_the_log_copied_after_the_broker_stopped_holds_every_event_of_the_running_copy(observed):
    """Segments copied under a running broker (an operator's backup) read as the same log as the whole
    files after it stopped: every event of the earlier copy, the same; later ones (the members that left
    when the test ended) only after them."""

    def key(e: dict) -> tuple:
        return (e["source_partition"], e["source_offset"], e["event"], e["group_id"], e["topic"], e["partition"])

    def seen(e: dict) -> tuple:
        return (e["event_time_ms"], e["cause"], e["committed_offset"])

    running = {key(e): seen(e) for e in observed.events}
    stopped = {key(e): seen(e) for e in observed.events_stopped}
    assert running and {k: stopped.get(k) for k in running} == running


def test_the_retention_history_infers_from_the_sweeps_holds_the_brokers(observed):
    """`history` works out which offsets.retention.minutes the tombstones it saw are consistent with."""
    bound = observed.retention
    assert bound["swept_tombstones"] > 0 and bound["consistent"], bound
    # At 2 minutes both ends say something (1 is the least the broker takes, so a low of 1 says nothing):
    # every tombstone of the sweep landed 2 minutes and at most a few seconds after its clock started.
    assert (bound["low"], bound["high"]) == (RETENTION_MINUTES, RETENTION_MINUTES), bound
