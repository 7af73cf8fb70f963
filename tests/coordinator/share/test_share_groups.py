"""Share groups from `modern_group_records` rows: replay, the groups left behind, assignment and limit findings."""

from __future__ import annotations

import random
from typing import Any

import pyarrow as pa
from pyspark.sql.pandas.types import to_arrow_schema

from offset_audit import constants as K
from offset_audit.broker_versions import parse_version
from offset_audit.coordinator.java_order import TimelineKeys, string_hash
from offset_audit.coordinator.share_findings import (
    assignment_findings,
    broker_setting_findings,
    limit_findings,
    partition_source,
)
from offset_audit.coordinator.share_groups import (
    EMPTY,
    LEAVE_GROUP_MEMBER_EPOCH,
    STABLE,
    ShareGroup,
    replay_share_groups,
)
from offset_audit.coordinator.share_limits import (
    DELIVERY_COUNT_LIMIT,
    MAX_GROUPS,
    MAX_SIZE,
    check_settings,
    effective_limits,
)
from offset_audit.decoding.records import modern_row
from offset_audit.decoding.share_records import StateBatch
from offset_audit.layouts.codec import DecodedValue
from offset_audit.layouts.tables import table_schema
from offset_audit.share_coordinator.share_partition import ARCHIVED
from offset_audit.share_findings_rows import (
    ASSIGNMENT_DIFFERS,
    ASSIGNMENT_NOT_COMPUTED,
    BAD_BROKER_SETTING,
    DELIVERY_LIMIT_REACHED,
    GROUP_AT_MAX_SIZE,
    GROUP_OVER_MAX_SIZE,
    MEMBER_WITHOUT_PARTITIONS,
    TOO_MANY_GROUPS,
    UNASSIGNED_PARTITION,
    UNREAD_BROKER_SETTING,
)
from offset_audit.views.share_group_rows import share_group_rows

ORDERS = "11111111-1111-1111-1111-111111111111"
PAYMENTS = "22222222-2222-2222-2222-222222222222"
BOOTSTRAP = "broker-1:9092"
NAMES = {
    K.SHARE_GROUP_PARTITION_METADATA: "ShareGroupPartitionMetadata",
    K.SHARE_GROUP_MEMBER_METADATA: "ShareGroupMemberMetadata",
    K.SHARE_GROUP_METADATA: "ShareGroupMetadata",
    K.SHARE_GROUP_TARGET_ASSIGNMENT_METADATA: "ShareGroupTargetAssignmentMetadata",
    K.SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER: "ShareGroupTargetAssignmentMember",
    K.SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT: "ShareGroupCurrentMemberAssignment",
    K.SHARE_GROUP_STATE_PARTITION_METADATA: "ShareGroupStatePartitionMetadata",
}


class ShareLog:
    """`modern_group_records` rows as the decoder writes them (through `modern_row`), in log order.

    Values are given with Kafka's field names; partitions as {topic id: [partition, ...]}.
    """

    def __init__(self, era: str = "4.1+") -> None:
        self.era = era
        self.rows: list[dict[str, Any]] = []

    def _append(self, record_type: int, group_id: str, member_id: str | None, value: dict | None) -> ShareLog:
        key = {"GroupId": group_id} | ({"MemberId": member_id} if member_id is not None else {})
        decoded = None if value is None else DecodedValue(0, self.era, value)
        offset = len(self.rows)
        self.rows.append(
            modern_row(record_type, NAMES[record_type], key, decoded)
            | {"source_partition": 7, "source_offset": offset, "record_timestamp": 1_750_000_000_000 + offset}
        )
        return self

    def group(self, group_id: str, epoch: int) -> ShareLog:
        value = {"Epoch": epoch} | ({"MetadataHash": 0} if self.era == "4.1+" else {})
        return self._append(K.SHARE_GROUP_METADATA, group_id, None, value)

    def member(self, group_id: str, member_id: str, topics: list[str], client_id: str = "app") -> ShareLog:
        value = {"RackId": None, "ClientId": client_id, "ClientHost": "/10.0.0.5", "SubscribedTopicNames": topics}
        return self._append(K.SHARE_GROUP_MEMBER_METADATA, group_id, member_id, value)

    def target(self, group_id: str, member_id: str, partitions: dict[str, list[int]]) -> ShareLog:
        value = {"TopicPartitions": _topic_partitions(partitions)}
        return self._append(K.SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER, group_id, member_id, value)

    def assignment_epoch(self, group_id: str, epoch: int) -> ShareLog:
        value = {"AssignmentEpoch": epoch}
        return self._append(K.SHARE_GROUP_TARGET_ASSIGNMENT_METADATA, group_id, None, value)

    def current(self, group_id: str, member_id: str, epoch: int, partitions: dict[str, list[int]]) -> ShareLog:
        value = {
            "MemberEpoch": epoch,
            "PreviousMemberEpoch": epoch - 1,
            "State": 0,
            "AssignedPartitions": _topic_partitions(partitions),
        }
        return self._append(K.SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT, group_id, member_id, value)

    def state_metadata(
        self,
        group_id: str,
        initialized: dict[str, tuple[str, list[int]]],
        initializing: dict[str, tuple[str, list[int]]] | None = None,
        deleting: dict[str, str] | None = None,
    ) -> ShareLog:
        """Topics as {topic id: (name, partitions)}; deleting as {topic id: name}."""
        value = {
            "InitializingTopics": _topic_infos(initializing or {}),
            "InitializedTopics": _topic_infos(initialized),
            "DeletingTopics": [{"TopicId": tid, "TopicName": name} for tid, name in (deleting or {}).items()],
        }
        if self.era == "4.0":
            del value["InitializingTopics"]
        return self._append(K.SHARE_GROUP_STATE_PARTITION_METADATA, group_id, None, value)

    def partition_metadata(self, group_id: str, topics: dict[str, tuple[str, int]]) -> ShareLog:
        """Kafka 4.0's type 9: {topic id: (name, NumPartitions)}."""
        value = {
            "Topics": [
                {"TopicId": tid, "TopicName": name, "NumPartitions": count, "PartitionMetadata": []}
                for tid, (name, count) in topics.items()
            ]
        }
        return self._append(K.SHARE_GROUP_PARTITION_METADATA, group_id, None, value)

    def tombstone(self, record_type: int, group_id: str, member_id: str | None = None) -> ShareLog:
        return self._append(record_type, group_id, member_id, None)

    def leave(self, group_id: str, member_id: str) -> ShareLog:
        """What the coordinator writes when a member leaves: current, target, then member tombstones."""
        self.tombstone(K.SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT, group_id, member_id)
        self.tombstone(K.SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER, group_id, member_id)
        return self.tombstone(K.SHARE_GROUP_MEMBER_METADATA, group_id, member_id)

    def delete_group(self, group_id: str) -> ShareLog:
        """ShareGroup.createGroupTombstoneRecords for a group without members."""
        self.tombstone(K.SHARE_GROUP_TARGET_ASSIGNMENT_METADATA, group_id)
        self.tombstone(K.SHARE_GROUP_STATE_PARTITION_METADATA, group_id)
        return self.tombstone(K.SHARE_GROUP_METADATA, group_id)


def _topic_partitions(partitions: dict[str, list[int]]) -> list[dict]:
    return [{"TopicId": tid, "Partitions": parts} for tid, parts in partitions.items()]


def _topic_infos(topics: dict[str, tuple[str, list[int]]]) -> list[dict]:
    return [{"TopicId": tid, "TopicName": name, "Partitions": parts} for tid, (name, parts) in topics.items()]


def one_group(log: ShareLog) -> ShareGroup:
    (group,) = replay_share_groups(log.rows)
    return group


def kinds(findings: list[dict[str, Any]]) -> list[tuple]:
    return [(f["kind"], f["severity"], f["member_id"], f["topic"], f["partition"]) for f in findings]


def orders_group(stored: dict[str, list[int]], era: str = "4.1+") -> ShareLog:
    """Kafka 4.1 group over 'orders' (partitions 0-3 initialised), members m-1 and m-2, stored target given."""
    log = ShareLog(era).group("orders-share", 4)
    log.state_metadata("orders-share", {ORDERS: ("orders", [0, 1, 2, 3])})
    for member_id in ("m-1", "m-2"):
        log.member("orders-share", member_id, ["orders"])
    for member_id, partitions in stored.items():
        log.target("orders-share", member_id, {ORDERS: partitions} if partitions else {})
    log.assignment_epoch("orders-share", 4)
    for member_id, partitions in stored.items():
        log.current("orders-share", member_id, 4, {ORDERS: partitions} if partitions else {})
    return log


KAFKA_4_1 = parse_version("4.1")

# ---- replay ---------------------------------------------------------------------------------------------


def test_later_records_win_per_key():
    log = ShareLog().group("g", 1).member("g", "m-1", ["orders"], client_id="old")
    log.target("g", "m-1", {ORDERS: [0]}).assignment_epoch("g", 1).current("g", "m-1", 1, {ORDERS: [0]})
    log.group("g", 2).member("g", "m-1", ["orders", "payments"], client_id="new")
    log.target("g", "m-1", {ORDERS: [0, 1]}).assignment_epoch("g", 2).current("g", "m-1", 2, {ORDERS: [0, 1]})

    group = one_group(log)

    assert (group.epoch, group.assignment_epoch, group.state) == (2, 2, STABLE)
    (member,) = group.members
    assert member.client_id == "new"
    assert member.subscribed_topic_names == ("orders", "payments")
    assert member.target_partitions == member.current_partitions == {(ORDERS, 0), (ORDERS, 1)}
    assert member.member_epoch == 2


def test_member_tombstones_remove_the_member_and_the_group_becomes_empty():
    log = ShareLog().group("g", 1).member("g", "m-1", ["orders"]).member("g", "m-2", ["orders"])
    log.target("g", "m-1", {ORDERS: [0]}).target("g", "m-2", {ORDERS: [1]})
    log.group("g", 2).leave("g", "m-2")

    group = one_group(log)

    assert [m.member_id for m in group.members] == ["m-1"]
    assert set(group.target_assignment) == {"m-1"}

    log.group("g", 3).leave("g", "m-1")
    assert one_group(log).state == EMPTY


def test_current_assignment_tombstone_alone_keeps_the_member_at_the_leave_epoch():
    """Only the member-metadata tombstone removes a member (GroupMetadataManager.replay, type 14)."""
    log = ShareLog().group("g", 1).member("g", "m-1", ["orders"]).current("g", "m-1", 1, {ORDERS: [0]})
    log.tombstone(K.SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT, "g", "m-1")

    (member,) = one_group(log).members

    assert member.member_epoch == member.previous_member_epoch == LEAVE_GROUP_MEMBER_EPOCH
    assert member.current_partitions == frozenset()


def test_group_tombstone_removes_the_group_and_a_recreated_group_starts_afresh():
    log = ShareLog().group("gone", 1).state_metadata("gone", {ORDERS: ("orders", [0])}).delete_group("gone")
    log.group("kept", 1)

    assert [g.group_id for g in replay_share_groups(log.rows)] == ["kept"]

    log.group("gone", 1)
    recreated = next(g for g in replay_share_groups(log.rows) if g.group_id == "gone")
    assert recreated.initialized_topics == () and not recreated.has_state_partition_metadata


def test_rows_are_replayed_in_log_order_whatever_order_they_arrive_in():
    log = ShareLog().group("g", 1).member("g", "m-1", ["orders"]).group("g", 2).leave("g", "m-1")
    shuffled = list(log.rows)
    random.Random(7).shuffle(shuffled)

    assert replay_share_groups(shuffled) == replay_share_groups(log.rows)
    assert one_group(log).members == ()


def test_rows_of_other_group_types_are_ignored():
    consumer = {"record_type": K.CONSUMER_GROUP_METADATA, "group_type": "consumer", "group_id": "c", "epoch": 1}
    rows = [consumer, *ShareLog().group("g", 1).rows]

    assert [g.group_id for g in replay_share_groups(rows)] == ["g"]


def test_state_partition_metadata_gives_initialising_and_deleting_topics():
    log = ShareLog().group("g", 1)
    log.state_metadata(
        "g", {ORDERS: ("orders", [0, 1])}, initializing={ORDERS: ("orders", [2])}, deleting={PAYMENTS: "payments"}
    )

    group = one_group(log)

    assert [(t.topic_name, t.partitions) for t in group.initialized_topics] == [("orders", (0, 1))]
    assert [(t.topic_name, t.partitions) for t in group.initializing_topics] == [("orders", (2,))]
    assert [t.topic_name for t in group.deleting_topics] == ["payments"]


# ---- share_groups rows ----------------------------------------------------------------------------------


def test_empty_group_with_initialised_topics_is_left_behind_with_a_shell_quoted_delete_command():
    group_id = "team's orders"
    log = ShareLog().group(group_id, 3).state_metadata(group_id, {ORDERS: ("orders", [0, 1])})

    (row,) = share_group_rows(replay_share_groups(log.rows), has_state=set(), bootstrap=BOOTSTRAP)

    assert row["group_state"] == EMPTY and row["member_count"] == 0
    assert row["has_persisted_state"] and row["left_behind"]
    assert row["delete_command"] == (
        "kafka-share-groups.sh --bootstrap-server broker-1:9092 --delete --group='team'\"'\"'s orders'"
    )


def test_group_with_members_is_not_left_behind():
    log = orders_group({"m-1": [0, 1], "m-2": [2, 3]})

    (row,) = share_group_rows(replay_share_groups(log.rows), has_state={"orders-share"}, bootstrap=BOOTSTRAP)

    assert row["has_persisted_state"] and not row["left_behind"] and row["delete_command"] is None
    assert [m["target_partitions"] for m in row["members"]] == [["orders:0", "orders:1"], ["orders:2", "orders:3"]]
    assert row["subscribed_topics"] == ["orders"]


def test_empty_group_without_state_is_not_left_behind_but_state_in_share_group_state_counts():
    log = ShareLog().group("idle", 1)
    groups = replay_share_groups(log.rows)

    (without_state,) = share_group_rows(groups, has_state=set(), bootstrap=BOOTSTRAP)
    (with_state,) = share_group_rows(groups, has_state={"idle"}, bootstrap=BOOTSTRAP)

    assert not without_state["left_behind"] and without_state["delete_command"] is None
    assert with_state["left_behind"] and with_state["delete_command"].endswith("--group=idle")


def test_partitions_of_a_topic_id_without_a_name_keep_the_id():
    log = ShareLog().group("g", 1).member("g", "m-1", ["orders"]).target("g", "m-1", {PAYMENTS: [5]})

    (row,) = share_group_rows(replay_share_groups(log.rows), has_state=set(), bootstrap=BOOTSTRAP)

    assert row["members"][0]["target_partitions"] == [f"{PAYMENTS}:5"]


# ---- assignment audit -----------------------------------------------------------------------------------


def test_stored_assignment_matching_the_assignor_has_no_findings():
    # SimpleAssignor with members m-1, m-2 over orders 0-3 (java hashCode of the member ids).
    log = orders_group({"m-1": [0, 1], "m-2": [2, 3]})

    assert assignment_findings(replay_share_groups(log.rows)) == []


def test_a_partition_no_member_holds_is_reported():
    """Kafka 4.1's hashing assignor."""
    log = orders_group({"m-1": [0, 1], "m-2": [2]})

    findings = assignment_findings(replay_share_groups(log.rows), KAFKA_4_1)

    assert (UNASSIGNED_PARTITION, "warning", None, "orders", 3) in kinds(findings)
    unassigned = next(f for f in findings if f["kind"] == UNASSIGNED_PARTITION)
    assert "type 15" in unassigned["message"]
    # The assignor would give orders:3 to m-1 (one over ceil(4/2) is allowed): a hint only.
    differs = next(f for f in findings if f["kind"] == ASSIGNMENT_DIFFERS)
    assert (differs["member_id"], differs["severity"]) == ("m-1", "info")
    assert "missing orders:3" in differs["message"]


def test_a_member_without_partitions_is_reported():
    log = orders_group({"m-1": [0, 1, 2, 3], "m-2": []})

    findings = assignment_findings(replay_share_groups(log.rows), KAFKA_4_1)

    assert (MEMBER_WITHOUT_PARTITIONS, "warning", "m-2", None, None) in kinds(findings)
    assert UNASSIGNED_PARTITION not in {f["kind"] for f in findings}
    differs = [f for f in findings if f["kind"] == ASSIGNMENT_DIFFERS]
    assert {f["member_id"] for f in differs} == {"m-1", "m-2"}
    assert all("hint" in f["message"] and "order" in f["message"] for f in differs)


def test_a_state_the_assignor_cannot_assign_is_a_finding_not_the_end_of_the_run():
    """Members that still hold partitions of a subscribed topic that are no longer assignable fill up to
    their share before the round-robin: Kafka's SimpleAssignor then throws 'Inconsistent number of member
    IDs' (once, this stopped `share` halfway through writing its tables)."""
    log = ShareLog().group("g", 3).state_metadata("g", {ORDERS: ("orders", [0, 1, 2, 3, 4])})
    for member_id in ("m-1", "m-2"):
        log.member("g", member_id, ["orders"])
    log.target("g", "m-1", {ORDERS: [0, 1, 2]}).target("g", "m-2", {ORDERS: [3, 4]}).assignment_epoch("g", 3)
    log.current("g", "m-1", 3, {ORDERS: [10, 11]}).current("g", "m-2", 3, {ORDERS: [12, 13]})

    findings = assignment_findings(replay_share_groups(log.rows), KAFKA_4_1)

    assert [(f["kind"], f["severity"]) for f in findings] == [(ASSIGNMENT_NOT_COMPUTED, "warning")]
    assert "Inconsistent number of member IDs" in findings[0]["message"]


def test_when_the_assignor_cannot_assign_the_stored_assignment_is_still_read():
    log = ShareLog().group("g", 3).state_metadata("g", {ORDERS: ("orders", [0, 1, 2, 3, 4])})
    for member_id in ("m-1", "m-2"):
        log.member("g", member_id, ["orders"])
    log.target("g", "m-1", {ORDERS: [0, 1]}).target("g", "m-2", {}).assignment_epoch("g", 3)
    log.current("g", "m-1", 3, {ORDERS: [10, 11]}).current("g", "m-2", 3, {ORDERS: [12, 13]})

    found = {
        (f["kind"], f["severity"], f["member_id"], f["partition"])
        for f in assignment_findings(replay_share_groups(log.rows), KAFKA_4_1)
    }

    assert (ASSIGNMENT_NOT_COMPUTED, "warning", None, None) in found
    assert {(UNASSIGNED_PARTITION, "warning", None, p) for p in (2, 3, 4)} <= found
    assert (MEMBER_WITHOUT_PARTITIONS, "info", "m-2", None) in found


def test_kafka_4_2_balances_from_the_stored_target_and_says_what_it_will_move():
    """4.2+ (the default): the stored target is fed back, as the broker does at its next computation; m-2,
    short of its share of 2, takes orders:3. m-1 keeps its two partitions."""
    findings = assignment_findings(replay_share_groups(orders_group({"m-1": [0, 1], "m-2": [2]}).rows))

    assert (UNASSIGNED_PARTITION, "warning", None, "orders", 3) in kinds(findings)
    differs = [f for f in findings if f["kind"] == ASSIGNMENT_DIFFERS]
    assert [(f["member_id"], f["severity"]) for f in differs] == [("m-2", "info")]
    assert "missing orders:3" in differs[0]["message"] and "will move" in differs[0]["message"]


def test_kafka_4_2_finds_a_settled_balanced_group_as_stored():
    findings = assignment_findings(replay_share_groups(orders_group({"m-1": [0, 2], "m-2": [1, 3]}).rows))

    assert findings == []


def test_kafka_4_2_takes_partitions_from_a_member_over_its_share():
    findings = assignment_findings(replay_share_groups(orders_group({"m-1": [0, 1, 2, 3], "m-2": []}).rows))

    assert (MEMBER_WITHOUT_PARTITIONS, "warning", "m-2", None, None) in kinds(findings)
    differs = {f["member_id"]: f["message"] for f in findings if f["kind"] == ASSIGNMENT_DIFFERS}
    assert set(differs) == {"m-1", "m-2"}
    assert differs["m-1"].count("orders:") == 2 and "not expected" in differs["m-1"]


def test_kafka_4_2_assignor_failure_is_a_finding():
    """Three members share one initialised partition (2 of 3 members per partition); m-1 and m-2 still
    hold partitions that are not initialised, which fill their share of one: the broker's last round
    starts over no member (NoSuchElementException, as the released 4.3.1 assignor throws)."""
    log = ShareLog().group("g", 3).state_metadata("g", {ORDERS: ("orders", [0])})
    for member_id in ("m-1", "m-2", "m-3"):
        log.member("g", member_id, ["orders"])
    log.target("g", "m-1", {ORDERS: [5]}).target("g", "m-2", {ORDERS: [6]}).assignment_epoch("g", 3)

    findings = assignment_findings(replay_share_groups(log.rows))

    failed = [f for f in findings if f["kind"] == ASSIGNMENT_NOT_COMPUTED]
    assert len(failed) == 1 and "NoSuchElementException" in failed[0]["message"]
    assert (UNASSIGNED_PARTITION, "warning", None, "orders", 0) in kinds(findings)


def test_empty_groups_have_no_assignment_findings():
    log = ShareLog().group("idle", 1).state_metadata("idle", {ORDERS: ("orders", [0])})

    assert assignment_findings(replay_share_groups(log.rows)) == []


def test_kafka_4_1_assigns_only_initialised_partitions():
    log = ShareLog().group("g", 2).member("g", "m-1", ["orders"]).member("g", "m-2", ["orders"])
    log.state_metadata("g", {ORDERS: ("orders", [0, 1])}, initializing={ORDERS: ("orders", [2, 3])})
    log.target("g", "m-1", {ORDERS: [1]}).target("g", "m-2", {ORDERS: [0]}).assignment_epoch("g", 2)
    group = one_group(log)

    source = partition_source(group)

    assert source is not None and not source.kafka_4_0
    assert (source.partitions, source.assignable) == ({"orders": 2}, {"orders": (0, 1)})
    assert assignment_findings([group]) == []


def test_kafka_4_0_assigns_every_partition_of_type_9_to_every_member():
    """4.0's SimpleAssignor gives each member all partitions of its subscribed topics."""
    log = ShareLog(era="4.0").group("g", 2).partition_metadata("g", {ORDERS: ("orders", 3)})
    log.member("g", "m-1", ["orders"]).member("g", "m-2", ["orders"])
    log.target("g", "m-1", {ORDERS: [0, 1, 2]}).target("g", "m-2", {ORDERS: [0, 1]}).assignment_epoch("g", 2)
    group = one_group(log)

    source = partition_source(group)
    findings = assignment_findings([group])

    assert source is not None and source.kafka_4_0 and source.partitions == {"orders": 3}
    assert kinds(findings) == [(ASSIGNMENT_DIFFERS, "warning", "m-2", None, None)]
    assert "type 9" in findings[0]["message"] and "orders:2" in findings[0]["message"]


def test_a_4_1_group_ignores_a_type_9_left_from_kafka_4_0():
    """4.1 loaders skip ShareGroupPartitionMetadata: its partition counts do not make partitions assignable."""
    log = ShareLog().group("g", 2).partition_metadata("g", {ORDERS: ("orders", 8)})
    log.state_metadata("g", {ORDERS: ("orders", [0])})

    source = partition_source(one_group(log))

    assert source is not None and not source.kafka_4_0 and source.partitions == {"orders": 1}


# ---- limits ---------------------------------------------------------------------------------------------


def _members(log: ShareLog, group_id: str, count: int) -> None:
    log.group(group_id, 1)
    for index in range(count):
        log.member(group_id, f"{group_id}-m{index}", ["orders"])


def test_too_many_groups_and_groups_at_and_over_max_size():
    limits = effective_limits({MAX_GROUPS: "2", MAX_SIZE: "10"})
    log = ShareLog()
    _members(log, "full", 10)
    _members(log, "over", 11)
    _members(log, "small", 1)

    findings = limit_findings(replay_share_groups(log.rows), {}, limits)

    assert sorted((f["kind"], f["severity"], f["group_id"]) for f in findings) == [
        (GROUP_AT_MAX_SIZE, "warning", "full"),
        (GROUP_OVER_MAX_SIZE, "error", "over"),
        (TOO_MANY_GROUPS, "error", None),
    ]


def test_delivery_limit_from_the_share_tables_as_the_share_run_reads_them():
    """The share run's observations (runs.share._observations): in-flight records from the partition row,
    and only the batches at the delivery limit."""
    from offset_audit.runs.share import _observations

    limits = effective_limits({})
    partitions = [
        {"group_id": "g", "topic": "orders", "topic_id": "T", "partition": 0, "start_offset": 100, "end_offset": 105}
    ]
    batches = pa.table(
        {
            "group_id": ["g", "g"],
            "topic": ["orders", "orders"],
            "topic_id": ["T", "T"],
            "partition": [0, 0],
            "first_offset": [100, 103],
            "last_offset": [102, 104],
            "state": ["Acknowledged", "Archived"],
            "delivery_count": [1, 5],
        }
    )
    observations = _observations(partitions, batches, limits[DELIVERY_COUNT_LIMIT])

    findings = limit_findings(replay_share_groups(ShareLog().group("g", 1).rows), observations, limits)

    [observation] = observations["g"]
    assert observation.in_flight_records == 5
    assert observation.state_batches == (StateBatch(103, 104, ARCHIVED, 5),)
    assert kinds(findings) == [(DELIVERY_LIMIT_REACHED, "warning", None, "orders", 0)]
    assert findings[0]["group_id"] == "g"


def test_broker_setting_findings_have_no_group():
    settings = check_settings({MAX_SIZE: "5", "group.share.partition.max.record.locks": "2000"})

    findings = broker_setting_findings(settings)

    assert sorted((f["kind"], f["severity"], f["group_id"]) for f in findings) == [
        (BAD_BROKER_SETTING, "error", None),
        (UNREAD_BROKER_SETTING, "warning", None),
    ]


# ---- table schemas --------------------------------------------------------------------------------------


def test_rows_fit_the_table_schemas():
    log = orders_group({"m-1": [0, 1], "m-2": [2]})
    log.group("idle", 1).state_metadata("idle", {PAYMENTS: ("payments", [0])}, deleting={ORDERS: "orders"})
    groups = replay_share_groups(log.rows)
    findings = [
        *assignment_findings(groups),
        *limit_findings(groups, {}, effective_limits({MAX_GROUPS: "1"})),
        *broker_setting_findings(check_settings({MAX_SIZE: "5"})),
    ]
    tables = {
        "share_groups": share_group_rows(groups, has_state={"idle"}, bootstrap=BOOTSTRAP),
        "share_findings": findings,
    }

    for name, rows in tables.items():
        schema = table_schema(name)
        # Every column but the cluster, which the run sets as it writes (outputs.share_tables.with_cluster).
        columns = [c for c in schema.column_names() if c != "cluster"]
        assert all(list(row) == columns for row in rows), name
        table = pa.Table.from_pylist(rows, schema=to_arrow_schema(schema.struct()))
        assert table.num_rows == len(rows) > 0, name


def test_the_members_walk_as_the_coordinators_map_of_members_after_loading_the_log():
    """Joins, a leave and a rejoin: the walk is the TimelineHashMap's (slots of a Fibonacci hash, each from
    its last key), not the join order nor the ids' order; the assignor is fed the members in it."""
    log = ShareLog().group("g", 1)
    for member_id in ("m-q", "m-a", "m-c", "m-x", "m-b"):
        log.member("g", member_id, ["orders"])
    log.leave("g", "m-x").current("g", "m-q", 1, {ORDERS: [0]}).member("g", "m-x", ["orders"])

    # Every member record is a put (a leave's current-assignment tombstone too), a member tombstone a remove.
    expected = TimelineKeys(string_hash)
    for member_id in ("m-q", "m-a", "m-c", "m-x", "m-b", "m-x"):
        expected.add(member_id)
    expected.remove("m-x")
    for member_id in ("m-q", "m-x"):
        expected.add(member_id)
    walk = one_group(log).member_walk
    assert walk == tuple(expected) and sorted(walk) == ["m-a", "m-b", "m-c", "m-q", "m-x"]
    assert walk not in (("m-q", "m-a", "m-c", "m-b", "m-x"), tuple(sorted(walk)))
