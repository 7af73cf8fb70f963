"""Share groups on a real broker: the version's own console share consumer acknowledges records, so that
`__share_group_state` and the share groups' records in `__consumer_offsets` are the broker's, and `share`
must say what the version's kafka-share-groups.sh says about the same groups.

Share groups are on by default from Kafka 4.1 (the share.version feature, set when the storage is
formatted); 4.0's were a preview with other record layouts, switched on by unstable settings. So the tests
run on the versions of KAFKA_VERSIONS from 4.1 on.

Five groups read one topic of two partitions: one accepts 15 records, one releases 5, one rejects 3, one
keeps a member consuming everything while the logs are copied, and one (a consumer of the test's own,
MixedAcknowledgements.java) releases the first record of each partition and rejects or accepts the rest,
so that the records it answered stay past the start offset. A sixth group's three members join one by one
on a topic of five partitions, so its broker computes a target assignment at each join. `share` judges
the logs by the version's rules (--kafka-version). Checked:
- start offsets (and, where the tool prints it, the lag) per share-partition, as
  `kafka-share-groups.sh --describe --offsets` lists them;
- each group's state and member count, as `--describe --state` lists them;
- deliveries, as the consumers printed them (print.delivery): a released record is Available with the
  delivery count the consumer saw, a rejected one Archived, an accepted one Acknowledged, or before the
  start offset where the share-partition leader moved past it; every record of the fifth group past its
  start offset in the state it was answered with;
- no findings on any of these groups, which have all settled;
- every target assignment the broker wrote for the fifth group, as the version's SimpleAssignor computes
  it from the previous one (share/balanced_assignor.py, from 4.2).
"""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner
from kafka_broker import (
    SHORT_LIVED,
    Broker,
    compile_against,
    java,
    java_command,
    kafka_broker,
    kafka_versions,
    libs,
    version_tuple,
    wait_until,
)
from live_services import _start, _stop, live, table_rows

from offset_audit import constants as K
from offset_audit.cli.main import main

JOBS = "jobs"
RECORDS = 20  # per partition
SHARE_VERSIONS = [v for v in kafka_versions() if version_tuple(v) >= (4, 1)]
# What each group's console share consumer does: how many records it takes, and its flag.
CONSUMERS = {"share-accept": (15, None), "share-release": (5, "--release"), "share-reject": (3, "--reject")}
LIVE = "share-live"
# Releases each partition's first record, rejects odd offsets and accepts the rest, in explicit mode.
MIXED, MIXED_SOURCE = "share-mixed", Path(__file__).with_name("MixedAcknowledgements.java")
ANSWERED = {"RELEASE": "Available", "REJECT": "Archived", "ACCEPT": "Acknowledged"}
# Three members join one after another; each join is a new group epoch and target assignment.
BALANCED, TASKS, TASK_PARTITIONS, BALANCED_MEMBERS = "share-balanced", "tasks", 5, 3

pytestmark = pytest.mark.slow


@dataclass(frozen=True)
class Observed:
    version: str
    partitions: list[dict]  # share_partitions
    batches: list[dict]  # share_state_batches
    groups: dict[str, dict]  # share_groups by group id
    tool_offsets: dict[tuple[str, str, int], tuple[int | None, int | None]]  # (start offset, lag or None)
    tool_states: dict[str, tuple[str, int]]  # state, members
    delivered: dict[str, list[tuple[int, int, int]]]  # group -> (partition, offset, delivery count) printed
    answered: dict[tuple[int, int], tuple[str, int]]  # MIXED's last answer to each record, and its delivery
    findings: list[dict]  # share_findings
    balanced_records: list[dict]  # BALANCED's records of __consumer_offsets, decoded, in log order


def _share_consumer_args(broker: Broker, group: str, topic: str = JOBS) -> list[str]:
    return [
        "--bootstrap-server", broker.bootstrap, "--topic", topic, "--group", group,
        "--property", "print.partition=true", "--property", "print.offset=true",
        "--property", "print.delivery=true", "--property", "print.value=false",
    ]  # fmt: skip


def _printed(text: str) -> list[tuple[int, int, int]]:
    """(partition, offset, delivery count) of each record a console share consumer printed:
    DefaultMessageFormatter writes `Partition:P\\tOffset:O\\tDelivery:D` per record. A line without its
    newline is still being written by a running consumer (it once ended at `Delivery:`), so it is left out."""
    found = []
    for line in text.splitlines(keepends=True):
        if not line.endswith("\n"):
            continue
        fields = dict(part.split(":", 1) for part in line.split("\t") if ":" in part)
        if {"Partition", "Offset", "Delivery"} <= fields.keys():
            found.append((int(fields["Partition"]), int(fields["Offset"]), int(fields["Delivery"])))
    return found


def _from_earliest(broker: Broker, groups: list[str]) -> None:
    """share.auto.offset.reset=earliest for these groups (a share group starts at the log end otherwise)."""
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    earliest = ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)
    resources = [ConfigResource(ResourceType.GROUP, g, incremental_configs=[earliest]) for g in groups]
    admin = broker.admin()
    for future in admin.incremental_alter_configs(resources).values():
        future.result(60)


def _answer_every_record(broker: Broker, version: str) -> dict[tuple[int, int], tuple[str, int]]:
    """MIXED's consumer run over every record of JOBS: each record's last answer and delivery count."""
    classes = compile_against(version, MIXED_SOURCE)
    ran = subprocess.run(
        [java(), *SHORT_LIVED, "-cp", f"{classes}:{libs(version)}/*",
         f"-Dlog4j2.configurationFile={broker.folder / 'tools-log4j2.properties'}", MIXED_SOURCE.stem,
         broker.bootstrap, MIXED, JOBS, str(2 * RECORDS), "120"],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stdout[-2000:] + ran.stderr[-2000:]
    answered = {}
    for line in ran.stdout.splitlines():
        fields = dict(part.split(":", 1) for part in line.split("\t"))
        answered[int(fields["Partition"]), int(fields["Offset"])] = (fields["Ack"], int(fields["Delivery"]))
    assert len(answered) == 2 * RECORDS, ran.stdout
    return answered


def _table(text: str, header: str) -> list[list[str]]:
    """The rows under each `header` line of a kafka-share-groups.sh listing, split on blanks."""
    rows, inside = [], False
    for line in text.splitlines():
        if line.startswith(header):
            inside = True
        elif not line.strip():
            inside = False
        elif inside:
            rows.append(line.split())
    return rows


def _tool_offsets(broker: Broker) -> dict[tuple[str, str, int], tuple[int | None, int | None]]:
    listed = broker.tool("share-groups", "--bootstrap-server", broker.bootstrap, "--describe", "--all-groups",
                         "--offsets")  # fmt: skip
    assert listed.returncode == 0, listed.stdout + listed.stderr[-2000:]

    def number(text: str) -> int | None:
        return None if text == "-" else int(text)

    found = {}
    for row in _table(listed.stdout, "GROUP "):
        lag = number(row[4]) if len(row) > 4 else None  # the LAG column is there from Kafka 4.2
        found[row[0], row[1], int(row[2])] = (number(row[3]), lag)
    return found


def _tool_states(broker: Broker) -> dict[str, tuple[str, int]]:
    listed = broker.tool("share-groups", "--bootstrap-server", broker.bootstrap, "--describe", "--all-groups",
                         "--state")  # fmt: skip
    assert listed.returncode == 0, listed.stdout + listed.stderr[-2000:]
    # GROUP, COORDINATOR (ID) (two words), STATE, #MEMBERS
    return {row[0]: (row[-2], int(row[-1])) for row in _table(listed.stdout, "GROUP ")}


def _assigned(broker: Broker, group: str, members: int) -> bool:
    """The group has `members` members and its assignment stands: every one of TASKS' partitions is held
    (once initialised) and two listings a second apart agree. `--describe --members` prints each member's
    partitions last, as `topic:0,2;other:1`."""

    def listing() -> list[list[str]]:
        listed = broker.tool("share-groups", "--bootstrap-server", broker.bootstrap, "--describe", "--group",
                             group, "--members")  # fmt: skip
        return sorted(_table(listed.stdout, "GROUP "))

    def held(row: list[str]) -> set[tuple[str, int]]:
        if len(row) < 6:  # GROUP CONSUMER-ID HOST CLIENT-ID #PARTITIONS, and no ASSIGNMENT
            return set()
        topics = (part.partition(":") for part in row[5].split(";"))
        return {(topic, int(p)) for topic, _, ps in topics for p in ps.split(",") if p}

    first = listing()
    if len(first) != members or {tp for row in first for tp in held(row)} != {
        (TASKS, p) for p in range(TASK_PARTITIONS)
    }:
        return False
    time.sleep(1)
    return listing() == first


def _cli(*args: str) -> None:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 0, result.output + repr(result.exception)


@pytest.fixture(scope="module", params=SHARE_VERSIONS)
def observed(request, tmp_path_factory, spark) -> Observed:
    from confluent_kafka import Producer
    from confluent_kafka.admin import NewTopic

    version = request.param
    folder = tmp_path_factory.mktemp(f"kafka-share-{version}")
    with live(kafka_broker(folder / "broker", version)) as broker:
        admin = broker.admin()  # held while its futures run: a destroyed client fails them
        for future in admin.create_topics([NewTopic(JOBS, 2, 1), NewTopic(TASKS, TASK_PARTITIONS, 1)]).values():
            future.result(60)
        producer = Producer({"bootstrap.servers": broker.bootstrap})
        for partition in range(2):
            for i in range(RECORDS):
                producer.produce(JOBS, b"job %d" % i, partition=partition)
        producer.flush(30)
        _from_earliest(broker, [*CONSUMERS, LIVE, MIXED])
        delivered = {}
        for group, (count, flag) in CONSUMERS.items():
            args = [*_share_consumer_args(broker, group), "--max-messages", str(count), "--timeout-ms", "60000"]
            consumed = broker.tool("share-consumer", *args, *([flag] if flag else []))
            assert consumed.returncode == 0, consumed.stderr[-2000:]
            delivered[group] = _printed(consumed.stdout)
            assert len(delivered[group]) == count, consumed.stdout
        answered = _answer_every_record(broker, version)
        # A member that stays while the logs are copied: it takes every record, then idles.
        live_log = folder / "share-live.out"
        member = _start(
            java_command(version, "share-consumer", *_share_consumer_args(broker, LIVE),
                         log4j=broker.folder / "tools-log4j2.properties"),
            live_log,
        )  # fmt: skip
        joined = []
        try:
            for n in range(BALANCED_MEMBERS):
                joined.append(
                    _start(
                        java_command(
                            version,
                            "share-consumer",
                            *_share_consumer_args(broker, BALANCED, topic=TASKS),
                            log4j=broker.folder / "tools-log4j2.properties",
                        ),
                        folder / f"{BALANCED}-{n}.out",
                    )
                )
                wait_until(f"{BALANCED} to have {n + 1} members with their partitions",
                           lambda n=n: _assigned(broker, BALANCED, n + 1), seconds=120, pause=1)  # fmt: skip
            everything = 2 * RECORDS
            taken = lambda: len(_printed(live_log.read_text())) >= everything  # noqa: E731
            wait_until(f"{LIVE} to take all {everything} records", taken, seconds=90, pause=0.5)
            # The share-partition leader persists its state as it acknowledges; wait until it is written
            # and then still (the persisted start offset may stay behind the one in memory: the tool and
            # the log both show the persisted one).
            listings = [_tool_offsets(broker)]

            def settled() -> bool:
                time.sleep(2)
                listings.append(_tool_offsets(broker))
                return listings[-1] == listings[-2] and all(
                    listings[-1].get((LIVE, JOBS, p), (None,))[0] is not None for p in range(2)
                )

            wait_until(f"{LIVE}'s share state to settle", settled, seconds=90, pause=0.5)
            tool_offsets, tool_states = _tool_offsets(broker), _tool_states(broker)
            state_log = broker.copy_offsets_log(folder / "share-state", topic="__share_group_state")
            groups_log = broker.copy_offsets_log(folder / "offsets")
            ends = broker.tool("get-offsets", "--bootstrap-server", broker.bootstrap, "--topic", JOBS, "--time", "-1")
            assert ends.returncode == 0, ends.stderr[-2000:]
            # Nothing moved while the copies were taken.
            assert _tool_offsets(broker) == tool_offsets and _tool_states(broker) == tool_states
        finally:
            _stop(member)
            for process in joined:
                _stop(process)
    (folder / "ends.txt").write_text(ends.stdout)
    out = folder / "share"
    _cli("share", "--input", str(state_log), "--groups-input", str(groups_log), "--output", str(out),
         "--end-offsets", str(folder / "ends.txt"), "--kafka-version", version, "--quiet")  # fmt: skip
    return Observed(
        version,
        table_rows(str(out / "share_partitions")).to_pylist(),
        table_rows(str(out / "share_state_batches")).to_pylist(),
        {g["group_id"]: g for g in table_rows(str(out / "share_groups")).to_pylist()},
        tool_offsets,
        tool_states,
        delivered,
        answered,
        table_rows(str(out / "share_findings")).to_pylist(),
        sorted(
            (
                r
                for r in table_rows(str(out / "decoded" / "modern_group_records")).to_pylist()
                if r["group_id"] == BALANCED
            ),
            key=lambda r: (r["source_partition"], r["source_offset"]),
        ),
    )


def test_start_offsets_and_lag_are_what_kafka_share_groups_lists(observed):
    audited = {(p["group_id"], p["topic"], p["partition"]): p for p in observed.partitions}
    # topic names from the groups' records
    assert all(key[1] == (TASKS if key[0] == BALANCED else JOBS) for key in audited), audited.keys()
    audited = {key: p for key, p in audited.items() if key[0] != BALANCED}
    # The tool prints "-" where the state is initialised but nothing was fetched yet (stored as -1).
    listed = {key: start for key, (start, _) in observed.tool_offsets.items() if key[0] != BALANCED}
    assert {key: None if p["start_offset"] == -1 else p["start_offset"] for key, p in audited.items()} == listed
    assert {key[0] for key, start in listed.items() if start is not None} == {*CONSUMERS, LIVE, MIXED}
    for p in audited.values():  # the lag is the end offset kafka-get-offsets printed minus the start offset
        assert p["share_lag"] == (None if p["start_offset"] == -1 else RECORDS - p["start_offset"]), p
    # From Kafka 4.2 the tool prints a lag that also leaves out the records already done beyond the
    # start offset, by the broker's own count (KIP-1226's DeliveryCompleteCount): broker_lag, from the
    # count replayed out of the state records. It is that of the batches too, for these groups.
    lags = {key: lag for key, (_, lag) in observed.tool_offsets.items() if key[0] != BALANCED}
    broker_lags = {key: p["broker_lag"] for key, p in audited.items()}
    if version_tuple(observed.version) >= (4, 2):
        assert any(lag is not None for lag in lags.values()) and broker_lags == lags
        done = {key: p["acknowledged_records"] + p["archived_records"] for key, p in audited.items()}
        assert all(lag == audited[key]["share_lag"] - done[key] for key, lag in lags.items() if lag is not None)
    else:  # 4.1 writes no count, and its tool prints no lag
        assert set(lags.values()) == {None} and set(broker_lags.values()) == {None}
        assert {p["delivery_complete_count"] for p in audited.values()} == {None}


def test_every_group_has_the_state_and_members_kafka_share_groups_lists(observed):
    audited = {g: (row["group_state"], row["member_count"]) for g, row in observed.groups.items()}
    assert audited == observed.tool_states
    assert observed.tool_states[LIVE] == ("Stable", 1)
    assert observed.tool_states[BALANCED] == ("Stable", BALANCED_MEMBERS)


def _state_of(observed: Observed, group: str, partition: int, offset: int) -> tuple[str, int] | None:
    """The recovered state and delivery count of one record; None where it is before the start offset."""
    start = next(
        p["start_offset"] for p in observed.partitions if (p["group_id"], p["partition"]) == (group, partition)
    )
    if offset < start:
        return None
    for b in observed.batches:
        if (b["group_id"], b["partition"]) == (group, partition) and b["first_offset"] <= offset <= b["last_offset"]:
            return b["state"], b["delivery_count"]
    raise AssertionError(f"{group} {JOBS}-{partition} offset {offset} is at or after {start} but in no batch")


def test_released_records_are_available_with_the_delivery_count_the_consumer_saw(observed):
    released = observed.delivered["share-release"]
    states = {(p, o): _state_of(observed, "share-release", p, o) for p, o, _ in released}
    assert states == {(p, o): ("Available", delivery) for p, o, delivery in released}


def test_rejected_records_are_archived_and_accepted_ones_acknowledged_or_done(observed):
    for group, state in (("share-reject", "Archived"), ("share-accept", "Acknowledged")):
        found = {_state_of(observed, group, p, o) for p, o, _ in observed.delivered[group]}
        assert found <= {None, (state, 1)}, (group, found)


def test_records_answered_past_the_start_offset_keep_the_state_they_were_answered_with(observed):
    """MIXED released each partition's first record, so its start offset stays at 0 and every record it
    rejected or accepted after it is in the state batches: Archived or Acknowledged, delivered once."""
    states = {(p, o): _state_of(observed, MIXED, p, o) for p, o in observed.answered}
    expected = {(p, o): (ANSWERED[answer], delivery) for (p, o), (answer, delivery) in observed.answered.items()}
    assert states == expected
    assert {state for state, _ in expected.values()} == set(ANSWERED.values())


def test_the_settled_groups_have_no_findings(observed):
    """Judged by the version's own rules, none of the groups the clients left settled is a thing to look
    at: no assignment that differs from the version's assignor, no limit reached, no start offset moved
    back. But on 4.1, whose hashing assignor walks HashMaps in an order the audit cannot reproduce, a
    difference between the balanced group's stored and recomputed targets is a hint the audit says it
    cannot settle (info, "a hint only"), and whether one shows depends on the members' ids."""
    found = [f for f in observed.findings if f["group_id"] is not None]
    hints = [
        f
        for f in found
        if version_tuple(observed.version) < (4, 2)
        and (f["group_id"], f["kind"], f["severity"]) == (BALANCED, "ASSIGNMENT_DIFFERS", "info")
        and "a hint only" in f["message"]
    ]
    assert [f for f in found if f not in hints] == []


def _target_assignments(records: list[dict]):
    """The group's target assignments in log order, each with the one before it: at every
    ShareGroupTargetAssignmentMetadata (12) record, the live members (10) with their subscriptions,
    the live targets (13), the initialised partitions (15), the topic names they give, and the orders
    the broker may have put the members in: the walk of its map of members (`ShareGroup.member_walk` of
    the log so far), then the member whose join started the computation (its record comes first in the
    write but is replayed after it); or, when a join's computation was deferred to a later heartbeat,
    the walk with that member in it. The log does not show which write a computation rode on, and the
    two orders differ only when the members share a HashMap bucket."""
    from offset_audit.coordinator.share_groups import replay_share_groups

    members: dict[str, list[str]] = {}
    targets: dict[str, list[tuple[str, list[int]]]] = {}
    initialized: dict[str, list[int]] = {}
    names: dict[str, str] = {}
    previous: dict[str, list[tuple[str, list[int]]]] = {}
    joining: str | None = None
    joined_at = 0
    for at, r in enumerate(records):
        kind, member, gone = r["record_type"], r["member_id"], r["is_tombstone"]
        if kind == K.SHARE_GROUP_MEMBER_METADATA:
            # a join no computation followed is in the map by the next one
            joining, joined_at = (member, at) if not gone and member not in members else (None, 0)
            members.pop(member, None) if gone else members.__setitem__(member, list(r["subscribed_topic_names"]))
        elif kind == K.SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT and member in members:
            joining = None
        elif kind == K.SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER:
            held = [(t["topic_id"], list(t["partitions"])) for t in r["assigned_partitions"] or []]
            targets.pop(member, None) if gone else targets.__setitem__(member, held)
        elif kind == K.SHARE_GROUP_STATE_PARTITION_METADATA:
            topics = [] if gone else r["topics"]
            initialized = {t["topic_id"]: list(t["partitions"]) for t in topics}
            names.update({t["topic_id"]: t["topic_name"] for t in topics})
        elif kind == K.SHARE_GROUP_TARGET_ASSIGNMENT_METADATA and not gone:
            # the map as this write found it: the log so far without the joining member's records
            found = [
                x for i, x in enumerate(records[:at]) if joining is None or i < joined_at or x["member_id"] != joining
            ]
            before = replay_share_groups(found)
            walk = before[0].member_walk if before else ()
            orders = [[*walk, *([joining] if joining else [])]]
            if joining:
                # or the join only bumped the epoch: group.share.assignment.interval.ms (1 s by default)
                # deferred the computation to a later heartbeat, which found the joining member in the map
                joined = replay_share_groups(records[:at])
                orders.append(list(joined[0].member_walk if joined else ()))
            yield r["epoch"], dict(members), dict(initialized), dict(names), previous, dict(targets), orders
            previous, joining = dict(targets), None


def test_each_target_assignment_is_what_the_versions_assignor_computes(observed):
    """Kafka 4.2+: SimpleAssignor's balanced builders, fed the previous target, the members in the order
    of the broker's HashMap (members sharing a bucket in the order the broker put them) and the
    initialised partitions, give each target the broker wrote. 4.1's
    hashing assignor walks HashMaps in orders the audit does not reproduce: there every target gives each
    member a partition and leaves none without a member once the topic is initialised."""
    from offset_audit.coordinator.share_assignor import is_homogeneous
    from offset_audit.coordinator.share_balanced_assignor import assign_balanced, subscribed_topic_ids

    balanced = version_tuple(observed.version) >= (4, 2)
    epochs = list(_target_assignments(observed.balanced_records))
    assigned = 0
    for epoch, members, initialized, names, previous, stored, orders in epochs:
        written = {m: {(t, p) for t, ps in stored.get(m, []) for p in ps} for m in members}
        assigned += any(written.values())
        if not balanced:
            everything = {(t, p) for t, ps in initialized.items() for p in ps}
            if everything:
                assert set().union(*written.values()) == everything and all(written.values()), epoch
            continue
        ids = {name: topic_id for topic_id, name in names.items()}
        computed = [
            assign_balanced(
                {m: subscribed_topic_ids(topics, ids) for m, topics in members.items()},
                {t: max(ps) + 1 for t, ps in initialized.items() if ps},
                {m: previous[m] for m in members if m in previous},
                assignable=initialized,
                homogeneous=is_homogeneous({m: set(topics) for m, topics in members.items()}),
                inserted=inserted,
            )
            for inserted in orders
        ]
        assert written in computed, (epoch, members, previous, orders, computed)
    # the joins were assigned one after another: one member, two, three
    assert assigned >= BALANCED_MEMBERS and len(epochs[-1][1]) == BALANCED_MEMBERS
