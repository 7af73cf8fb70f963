"""KIP-932 share groups as the group coordinator loads them from `__consumer_offsets`, and what to act on.

Share groups are few (the broker caps them), so this is plain driver-side Python over the share rows of the
`modern_group_records` table (record types 9-15, reference 2.7), in log order:

    replay_share_groups   rows -> ShareGroup, as GroupMetadataManager.replay rebuilds them (Kafka 4.1)
    share_group_rows      ShareGroup -> `share_groups` table rows, with the groups left behind
    assignment_findings   stored target assignment against the SimpleAssignor -> `share_findings` rows
    limit_findings        groups and share-partition state against the broker limits -> `share_findings` rows

Replay follows the coordinator rather than a plain "last record per key": a ShareGroupCurrentMemberAssignment
tombstone leaves the member in the group with epoch -1 and nothing assigned, only a ShareGroupMemberMetadata
tombstone removes it, and a ShareGroupMetadata tombstone removes the group with everything it held
(`removeGroup`). ShareGroupStatePartitionMetadata lives in a map of its own keyed by group id, so it outlives
a group tombstone unless tombstoned itself. For logs Kafka writes (it tombstones every key of a group before
the ShareGroupMetadata one, `ShareGroup.createGroupTombstoneRecords`) this is the same as last-record-wins.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from offset_audit import constants as K
from offset_audit.coordinator.versions import NEWEST_VERSION, BrokerVersion
from offset_audit.escaping import NotAShellArgument
from offset_audit.share.assignor import (
    MemberDifference,
    ShareAssignorError,
    TopicPartition,
    assign,
    compare,
    is_homogeneous,
    subscribed_partitions,
)
from offset_audit.share.balanced_assignor import assign_balanced, subscribed_topic_ids
from offset_audit.share.java_order import TimelineKeys, string_hash
from offset_audit.share.limits import (
    DELIVERY_COUNT_LIMIT,
    MAX_GROUPS,
    MAX_SIZE,
    RECORD_LOCK_PARTITION_LIMIT,
    Finding,
    Limits,
    ShareGroupObservation,
    SharePartitionObservation,
    check_groups,
)
from offset_audit.share.state import as_fields, is_int
from offset_audit.views.kafka_commands import delete_share_group

# ShareGroup.ShareGroupState names (Kafka 4.1): a loaded group is Empty without members, else Stable.
EMPTY = "Empty"
STABLE = "Stable"

# ConsumerGroupHeartbeatRequest.LEAVE_GROUP_MEMBER_EPOCH: what a current-assignment tombstone leaves behind.
LEAVE_GROUP_MEMBER_EPOCH = -1

# Layout eras of the ShareGroupMetadata value (schemas/records/11_share_group_metadata.json).
KAFKA_4_1_ERA = "4.1+"

# `share_findings.kind`: assignment audit.
UNASSIGNED_PARTITION = "UNASSIGNED_PARTITION"
MEMBER_WITHOUT_PARTITIONS = "MEMBER_WITHOUT_PARTITIONS"
ASSIGNMENT_DIFFERS = "ASSIGNMENT_DIFFERS"
ASSIGNMENT_NOT_CHECKED = "ASSIGNMENT_NOT_CHECKED"
ASSIGNMENT_NOT_COMPUTED = "ASSIGNMENT_NOT_COMPUTED"
"""The broker's assignor, run on the group's state, raises instead of assigning: a finding, never the end of
the run."""
# `share_findings.kind`: limits (share/limits.py), one per check it runs.
TOO_MANY_GROUPS = "TOO_MANY_GROUPS"
GROUP_AT_MAX_SIZE = "GROUP_AT_MAX_SIZE"
GROUP_OVER_MAX_SIZE = "GROUP_OVER_MAX_SIZE"
RECORD_LOCK_LIMIT = "RECORD_LOCK_LIMIT"
DELIVERY_LIMIT_REACHED = "DELIVERY_LIMIT_REACHED"
SHARE_LIMIT = "SHARE_LIMIT"
"""A limits finding of a check this module does not name yet."""
BAD_BROKER_SETTING = "BAD_BROKER_SETTING"
UNREAD_BROKER_SETTING = "UNREAD_BROKER_SETTING"
"""check_settings warnings: a group.share.* name the audit does not read (Kafka 4.1's renames, typos)."""

Severity = Literal["error", "warning", "info"]


@dataclass(frozen=True)
class TopicPartitions:
    """A topic of a ShareGroupStatePartitionMetadata (15) or ShareGroupPartitionMetadata (9) value."""

    topic_id: str
    topic_name: str | None
    partitions: tuple[int, ...] = ()
    """Partition ids; empty for DeletingTopics, which name topics only."""


@dataclass(frozen=True)
class ShareGroupMember:
    """A member as ShareGroupMember holds it: metadata from type 10, epochs and current partitions from 14.

    A member known from one of the two records only has the other's fields at None / empty. Partitions are
    (topic id, partition), as the records carry them.
    """

    member_id: str
    client_id: str | None = None
    client_host: str | None = None
    rack_id: str | None = None
    subscribed_topic_names: tuple[str, ...] = ()
    target_partitions: frozenset[TopicPartition] = frozenset()
    """The group's target assignment for this member (type 13)."""
    current_partitions: frozenset[TopicPartition] = frozenset()
    member_epoch: int | None = None
    previous_member_epoch: int | None = None
    state: int | None = None
    """MemberState id of type 14 (share members are always 0, STABLE, in 4.1)."""


@dataclass(frozen=True)
class ShareGroup:
    """A share group after loading the log."""

    group_id: str
    epoch: int | None
    """ShareGroupMetadata Epoch; None when no such record is in the dump (the coordinator would start at 0)."""
    assignment_epoch: int | None
    """ShareGroupTargetAssignmentMetadata AssignmentEpoch; None when absent or tombstoned (Kafka's -1)."""
    members: tuple[ShareGroupMember, ...]
    target_assignment: Mapping[str, frozenset[TopicPartition]]
    """Member id -> (topic id, partition): every live type 13, members or not, as the coordinator keeps it."""
    initialized_topics: tuple[TopicPartitions, ...] = ()
    initializing_topics: tuple[TopicPartitions, ...] = ()
    deleting_topics: tuple[TopicPartitions, ...] = ()
    has_state_partition_metadata: bool = False
    """A live ShareGroupStatePartitionMetadata (15) record: Kafka 4.1 assigns only its initialised partitions."""
    partition_metadata: tuple[TopicPartitions, ...] | None = None
    """Kafka 4.0's ShareGroupPartitionMetadata (9), partitions 0..NumPartitions-1; None when absent."""
    metadata_era: str | None = None
    """Layout era of the ShareGroupMetadata (11) value, "4.0" or "4.1+": the two are not wire-compatible."""
    state_metadata_era: str | None = None
    """Layout era of the ShareGroupStatePartitionMetadata (15) value, likewise."""
    member_walk: tuple[str, ...] = ()
    """The member ids in the order the coordinator's map of members walks them after loading the log: the
    order its target assignment builder puts them in (`balanced_assignor.member_order`)."""

    @property
    def writer_era(self) -> str | None:
        """Which broker wrote the group, from the layouts its values decoded with; None when none tells."""
        return self.metadata_era or self.state_metadata_era

    @property
    def state(self) -> str:
        """ShareGroup.maybeUpdateGroupState: a share group has no rebalance states, only members or none."""
        return STABLE if self.members else EMPTY

    @property
    def subscribed_topic_names(self) -> tuple[str, ...]:
        """ModernGroup.subscribedTopicNames: the union of the members' subscriptions."""
        return tuple(sorted({topic for member in self.members for topic in member.subscribed_topic_names}))

    @property
    def topic_names(self) -> dict[str, str]:
        """Topic id -> name from everything the dump tells for this group (records 15 and 9)."""
        known = [*self.initialized_topics, *self.initializing_topics, *self.deleting_topics]
        known += self.partition_metadata or ()
        return {topic.topic_id: topic.topic_name for topic in known if topic.topic_name}

    def named(self, partitions: Iterable[TopicPartition]) -> set[TopicPartition]:
        """(topic id, p) -> (topic name, p); an id the dump gives no name for stays the id."""
        names = self.topic_names
        return {(names.get(topic_id, topic_id), partition) for topic_id, partition in partitions}


# ---- replay ---------------------------------------------------------------------------------------------


@dataclass
class _Member:
    member_id: str
    client_id: str | None = None
    client_host: str | None = None
    rack_id: str | None = None
    subscribed_topic_names: tuple[str, ...] = ()
    current_partitions: frozenset[TopicPartition] = frozenset()
    member_epoch: int | None = None
    previous_member_epoch: int | None = None
    state: int | None = None


@dataclass
class _Group:
    """What GroupMetadataManager keeps in the ShareGroup object: dropped whole by a group tombstone."""

    epoch: int | None = None
    metadata_era: str | None = None
    assignment_epoch: int | None = None
    members: dict[str, _Member] = field(default_factory=dict)
    # The coordinator's TimelineHashMap of members: its walk is the order its assignor is fed the members.
    member_walk: TimelineKeys = field(default_factory=lambda: TimelineKeys(string_hash))
    target_assignment: dict[str, frozenset[TopicPartition]] = field(default_factory=dict)
    partition_metadata: tuple[TopicPartitions, ...] | None = None


@dataclass(frozen=True)
class _StatePartitionMetadata:
    initialized: tuple[TopicPartitions, ...]
    initializing: tuple[TopicPartitions, ...]
    deleting: tuple[TopicPartitions, ...]
    era: str | None


def replay_share_groups(rows: Iterable[Any]) -> list[ShareGroup]:
    """The share groups a Kafka 4.1 coordinator holds after loading these rows, sorted by group id.

    `rows` are `modern_group_records` rows (dicts or Spark Rows); rows of other group types are skipped.
    They are replayed in (source_partition, source_offset) order when every row has both, because a Spark
    collect loses log order; otherwise in the order given. Any value record of types 9-15 creates its group,
    as `getOrMaybeCreatePersistedShareGroup(groupId, true)` does, so a group whose ShareGroupMetadata lies
    before a partial dump still shows (with epoch None). Where Kafka would refuse to load (a member tombstone
    before its assignment tombstone, a group tombstone while members remain) this applies the tombstone
    anyway: the dump is what it is, and an auditor wants the state rather than a failed load.
    """
    groups: dict[str, _Group] = {}
    state_metadata: dict[str, _StatePartitionMetadata] = {}
    for row in _in_log_order([fields for raw in rows if (fields := as_fields(raw)) is not None]):
        record_type = row.get("record_type")
        if record_type not in K.SHARE_GROUP_TYPES:
            continue
        group_id = row["group_id"]
        if row.get("is_tombstone"):
            _apply_tombstone(groups, state_metadata, record_type, group_id, row.get("member_id"))
        elif record_type == K.SHARE_GROUP_STATE_PARTITION_METADATA:
            groups.setdefault(group_id, _Group())
            state_metadata[group_id] = _state_partition_metadata(row)
        else:
            _apply_value(groups.setdefault(group_id, _Group()), record_type, row)
    return [_freeze(group_id, groups[group_id], state_metadata.get(group_id)) for group_id in sorted(groups)]


def _in_log_order(rows: list[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    if rows and all(is_int(r.get("source_partition")) and is_int(r.get("source_offset")) for r in rows):
        return sorted(rows, key=lambda r: (r["source_partition"], r["source_offset"]))
    return rows


def _apply_tombstone(
    groups: dict[str, _Group],
    state_metadata: dict[str, _StatePartitionMetadata],
    record_type: int,
    group_id: str,
    member_id: str | None,
) -> None:
    """Tombstones never create a group or member (getOrMaybeCreate...(id, false) is caught and ignored)."""
    if record_type == K.SHARE_GROUP_STATE_PARTITION_METADATA:
        state_metadata.pop(group_id, None)
        return
    group = groups.get(group_id)
    if group is None:
        return
    if record_type == K.SHARE_GROUP_METADATA:
        del groups[group_id]
    elif record_type == K.SHARE_GROUP_MEMBER_METADATA:
        group.members.pop(member_id, None)
        group.member_walk.remove(member_id)
    elif record_type == K.SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT:
        member = group.members.get(member_id)
        if member is not None:
            group.member_walk.add(member_id)  # updateMember: a put, which may grow the table
            member.member_epoch = member.previous_member_epoch = LEAVE_GROUP_MEMBER_EPOCH
            member.current_partitions = frozenset()
    elif record_type == K.SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER:
        group.target_assignment.pop(member_id, None)
    elif record_type == K.SHARE_GROUP_TARGET_ASSIGNMENT_METADATA:
        group.assignment_epoch = None
    elif record_type == K.SHARE_GROUP_PARTITION_METADATA:
        group.partition_metadata = None


def _apply_value(group: _Group, record_type: int, row: Mapping[str, Any]) -> None:
    if record_type == K.SHARE_GROUP_METADATA:
        group.epoch = row.get("epoch")
        group.metadata_era = row.get("layout_era")
    elif record_type == K.SHARE_GROUP_TARGET_ASSIGNMENT_METADATA:
        group.assignment_epoch = row.get("epoch")
    elif record_type == K.SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER:
        group.target_assignment[row["member_id"]] = _partitions(row, "TopicPartitions")
    elif record_type == K.SHARE_GROUP_MEMBER_METADATA:
        member = group.members.setdefault(row["member_id"], _Member(row["member_id"]))
        group.member_walk.add(row["member_id"])
        decoded = _decoded(row)
        member.client_id = _column_or(row, "client_id", decoded, "ClientId")
        member.client_host = _column_or(row, "client_host", decoded, "ClientHost")
        member.rack_id = _column_or(row, "rack_id", decoded, "RackId")
        member.subscribed_topic_names = tuple(
            _column_or(row, "subscribed_topic_names", decoded, "SubscribedTopicNames") or ()
        )
    elif record_type == K.SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT:
        member = group.members.setdefault(row["member_id"], _Member(row["member_id"]))
        group.member_walk.add(row["member_id"])
        decoded = _decoded(row)
        member.member_epoch = _column_or(row, "member_epoch", decoded, "MemberEpoch")
        member.previous_member_epoch = _column_or(row, "previous_member_epoch", decoded, "PreviousMemberEpoch")
        member.state = _column_or(row, "member_state", decoded, "State")
        member.current_partitions = _partitions(row, "AssignedPartitions")
    elif record_type == K.SHARE_GROUP_PARTITION_METADATA:
        group.partition_metadata = _partition_metadata(row)


def _decoded(row: Mapping[str, Any]) -> dict[str, Any]:
    text = row.get("decoded_json")
    return json.loads(text) if text else {}


def _column_or(row: Mapping[str, Any], column: str, decoded: Mapping[str, Any], kafka_field: str) -> Any:
    """The typed column, else the field from decoded_json: hand-built or older rows may carry only one."""
    value = row.get(column)
    return decoded.get(kafka_field) if value is None else value


def _partitions(row: Mapping[str, Any], kafka_field: str) -> frozenset[TopicPartition]:
    assigned = row.get("assigned_partitions")
    if assigned is None:
        assigned = [
            {"topic_id": t["TopicId"], "partitions": t["Partitions"]} for t in _decoded(row).get(kafka_field) or ()
        ]
    return frozenset((t["topic_id"], partition) for t in assigned for partition in t["partitions"] or ())


def _state_partition_metadata(row: Mapping[str, Any]) -> _StatePartitionMetadata:
    """InitializingTopics and DeletingTopics are only in decoded_json; InitializedTopics is also `topics`."""
    decoded = _decoded(row)
    if "InitializedTopics" in decoded:
        initialized = _topics(decoded["InitializedTopics"])
    else:
        initialized = tuple(
            TopicPartitions(t["topic_id"], t.get("topic_name"), tuple(t.get("partitions") or ()))
            for t in row.get("topics") or ()
        )
    return _StatePartitionMetadata(
        initialized=initialized,
        initializing=_topics(decoded.get("InitializingTopics") or ()),
        deleting=_topics(decoded.get("DeletingTopics") or ()),
        era=row.get("layout_era"),
    )


def _topics(items: Iterable[Mapping[str, Any]]) -> tuple[TopicPartitions, ...]:
    return tuple(
        TopicPartitions(t["TopicId"], t.get("TopicName"), tuple(sorted(t.get("Partitions") or ()))) for t in items
    )


def _partition_metadata(row: Mapping[str, Any]) -> tuple[TopicPartitions, ...]:
    if row.get("topics") is not None:
        return tuple(
            TopicPartitions(t["topic_id"], t.get("topic_name"), tuple(t.get("partitions") or ())) for t in row["topics"]
        )
    return tuple(
        TopicPartitions(t["TopicId"], t.get("TopicName"), tuple(range(t["NumPartitions"])))
        for t in _decoded(row).get("Topics") or ()
    )


def _freeze(group_id: str, group: _Group, state_metadata: _StatePartitionMetadata | None) -> ShareGroup:
    members = tuple(
        ShareGroupMember(
            member_id=member.member_id,
            client_id=member.client_id,
            client_host=member.client_host,
            rack_id=member.rack_id,
            subscribed_topic_names=member.subscribed_topic_names,
            target_partitions=group.target_assignment.get(member.member_id, frozenset()),
            current_partitions=member.current_partitions,
            member_epoch=member.member_epoch,
            previous_member_epoch=member.previous_member_epoch,
            state=member.state,
        )
        for member in sorted(group.members.values(), key=lambda m: m.member_id)
    )
    return ShareGroup(
        group_id=group_id,
        epoch=group.epoch,
        assignment_epoch=group.assignment_epoch,
        members=members,
        target_assignment=dict(group.target_assignment),
        initialized_topics=state_metadata.initialized if state_metadata else (),
        initializing_topics=state_metadata.initializing if state_metadata else (),
        deleting_topics=state_metadata.deleting if state_metadata else (),
        has_state_partition_metadata=state_metadata is not None,
        partition_metadata=group.partition_metadata,
        metadata_era=group.metadata_era,
        state_metadata_era=state_metadata.era if state_metadata else None,
        member_walk=tuple(m for m in group.member_walk if m in group.members),
    )


# ---- the share_groups table -----------------------------------------------------------------------------


def share_group_rows(groups: Sequence[ShareGroup], has_state: set[str], bootstrap: str) -> list[dict[str, Any]]:
    """One `share_groups` row per group.

    `has_state` holds the group ids with share-partition state in `__share_group_state`. A group without
    members whose state persists is left behind: from Kafka 4.1 the expiry sweep never deletes a share group
    (ShareGroup.shouldExpire is false, reference 4.4), so only an explicit delete frees its state, and the
    row carries the command for it.
    """
    rows = []
    for group in groups:
        has_persisted_state = group.group_id in has_state or bool(group.initialized_topics)
        left_behind = not group.members and has_persisted_state
        rows.append(
            {
                "group_id": group.group_id,
                "group_epoch": group.epoch,
                "assignment_epoch": group.assignment_epoch,
                "group_state": group.state,
                "member_count": len(group.members),
                "members": [_member_row(group, member) for member in group.members],
                "subscribed_topics": list(group.subscribed_topic_names),
                "initialized_topics": [_topic_row(topic) for topic in group.initialized_topics],
                "initializing_topics": [_topic_row(topic) for topic in group.initializing_topics],
                "deleting_topics": [topic.topic_name or topic.topic_id for topic in group.deleting_topics],
                "has_persisted_state": has_persisted_state,
                "left_behind": left_behind,
                "delete_command": delete_command(group.group_id, bootstrap) if left_behind else None,
            }
        )
    return rows


def delete_command(group_id: str, bootstrap: str) -> str | None:
    """The kafka-share-groups.sh call that deletes the group, its name one inert shell word
    (offset_audit.views.kafka_commands); None for a name no command line can carry."""
    try:
        return delete_share_group(group_id, bootstrap)
    except NotAShellArgument:
        return None


def _member_row(group: ShareGroup, member: ShareGroupMember) -> dict[str, Any]:
    return {
        "member_id": member.member_id,
        "client_id": member.client_id,
        "client_host": member.client_host,
        "rack_id": member.rack_id,
        "subscribed_topics": list(member.subscribed_topic_names),
        "target_partitions": _labels(group.named(member.target_partitions)),
        "current_partitions": _labels(group.named(member.current_partitions)),
        "member_epoch": member.member_epoch,
    }


def _topic_row(topic: TopicPartitions) -> dict[str, Any]:
    return {"topic_id": topic.topic_id, "topic_name": topic.topic_name, "partitions": list(topic.partitions)}


def _labels(partitions: Iterable[TopicPartition]) -> list[str]:
    return [f"{topic}:{partition}" for topic, partition in sorted(partitions)]


# ---- the assignment audit -------------------------------------------------------------------------------


@dataclass(frozen=True)
class PartitionSource:
    """What the dump tells about the partitions a group's assignor could hand out, and from which record."""

    description: str
    partitions: dict[str, int]
    """Topic name -> partition count (for 4.1: one past the highest initialised partition)."""
    assignable: dict[str, tuple[int, ...]] | None
    """4.1's topicPartitionAllowedMap (initialised partitions); None: every partition (4.0)."""
    kafka_4_0: bool


def partition_source(group: ShareGroup) -> PartitionSource | None:
    """Which record gives the assignable partitions, following the broker that wrote the group.

    Kafka 4.0 assigned from ShareGroupPartitionMetadata (type 9, NumPartitions). Kafka 4.1 dropped type 9
    (its loader skips it) and assigns only partitions whose share state is initialised, read from
    ShareGroupStatePartitionMetadata (type 15); a 4.1 group without one has nothing assignable
    (GroupMetadataManager.updateTargetAssignment passes an empty map). Kafka 4.0 defined type 15 but did not
    assign from it, so a 4.0 group without type 9 has no source: None.
    """
    writer = group.writer_era
    if group.partition_metadata is not None and writer != KAFKA_4_1_ERA:
        return PartitionSource(
            "ShareGroupPartitionMetadata (type 9, Kafka 4.0: NumPartitions, every partition assignable)",
            {t.topic_name or t.topic_id: len(t.partitions) for t in group.partition_metadata},
            None,
            kafka_4_0=True,
        )
    if writer == KAFKA_4_1_ERA or (writer is None and group.has_state_partition_metadata):
        initialized = {t.topic_name or t.topic_id: t.partitions for t in group.initialized_topics if t.partitions}
        return PartitionSource(
            "ShareGroupStatePartitionMetadata (type 15, Kafka 4.1: initialised partitions only)",
            {topic: max(partitions) + 1 for topic, partitions in initialized.items()},
            initialized,
            kafka_4_0=False,
        )
    return None


AssignorEra = Literal["4.0", "4.1", "4.2"]


def assignor_era(source: PartitionSource, version: BrokerVersion = NEWEST_VERSION) -> AssignorEra:
    """Which SimpleAssignor computed the group's target: 4.0's (every member all its subscribed partitions)
    where the dump shows a 4.0 writer, else the version's: 4.1's hashing, or 4.2's balanced builders."""
    if source.kafka_4_0:
        return "4.0"
    return "4.2" if version.share_assignor_balances else "4.1"


def expected_assignment(
    group: ShareGroup, source: PartitionSource, version: BrokerVersion = NEWEST_VERSION
) -> dict[str, set[TopicPartition]]:
    """The target assignment the group's broker computes, by topic name, every member present.

    Kafka 4.0's SimpleAssignor gave every member all partitions of its subscribed topics, so that is
    computed here directly: the later algorithms would flag every 4.0 member.
    Kafka 4.1: `assignor.assign`, with the members' current (type 14) partitions standing in for the previous
    target assignment the broker feeds its assignor, which the log no longer holds once type 13 is rewritten.
    Kafka 4.2+: `balanced_assignor.assign_balanced` on topic ids, fed the stored target assignment (type 13)
    as the previous one, as the broker feeds it at its next computation. A settled group's stored
    assignment is then its own answer; where it is not, the broker will move those partitions.
    """
    subscriptions = {member.member_id: set(member.subscribed_topic_names) for member in group.members}
    era = assignor_era(source, version)
    if era == "4.0":
        return {
            member_id: set(subscribed_partitions(topics, source.partitions))
            for member_id, topics in subscriptions.items()
        }
    if era == "4.1":
        current = {member.member_id: group.named(member.current_partitions) for member in group.members}
        return assign(subscriptions, source.partitions, current, assignable=source.assignable)
    ids = {name: topic_id for topic_id, name in group.topic_names.items()}
    initialized = [topic for topic in group.initialized_topics if topic.partitions]
    previous = {
        member_id: [(topic, sorted(p for t, p in held if t == topic)) for topic in sorted({t for t, _ in held})]
        for member_id, held in group.target_assignment.items()
        if member_id in subscriptions
    }
    balanced = assign_balanced(
        {member_id: subscribed_topic_ids(topics, ids) for member_id, topics in subscriptions.items()},
        {topic.topic_id: max(topic.partitions) + 1 for topic in initialized},
        previous,
        assignable={topic.topic_id: topic.partitions for topic in initialized},
        homogeneous=is_homogeneous(subscriptions),
        inserted=group.member_walk,
    )
    return {member_id: group.named(held) for member_id, held in balanced.items()}


def assignment_findings(groups: Sequence[ShareGroup], version: BrokerVersion = NEWEST_VERSION) -> list[dict[str, Any]]:
    """`share_findings` rows for each group's stored target assignment (type 13).

    Partitions nobody holds and members holding nothing are read off the stored assignment and are real
    problems; a member whose stored partitions differ from the recomputed ones is only a hint (see
    `_difference_rows`). Groups without members have nothing to assign and are skipped.
    """
    rows: list[dict[str, Any]] = []
    for group in groups:
        if group.members:
            rows += _group_assignment_findings(group, version)
    return rows


def _group_assignment_findings(group: ShareGroup, version: BrokerVersion) -> list[dict[str, Any]]:
    stored = {member_id: group.named(held) for member_id, held in group.target_assignment.items()}
    epoch = "none" if group.assignment_epoch is None else str(group.assignment_epoch)
    source = partition_source(group)
    if source is None:
        rows = [
            finding_row(
                group.group_id,
                ASSIGNMENT_NOT_CHECKED,
                "info",
                f"the partitions share group '{group.group_id}' could assign are unknown: the dump holds no "
                "ShareGroupPartitionMetadata (type 9) that Kafka 4.0 assigned from, and nothing shows a Kafka 4.1 "
                "writer, which assigns the initialised partitions of ShareGroupStatePartitionMetadata (type 15)",
            )
        ]
        rows += [
            finding_row(
                group.group_id,
                MEMBER_WITHOUT_PARTITIONS,
                "info",
                f"member '{member.member_id}' holds no partition in the stored target assignment (epoch {epoch}); "
                "whether it should cannot be told without partition metadata",
                member_id=member.member_id,
            )
            for member in group.members
            if not stored.get(member.member_id)
        ]
        return rows

    try:
        expected: dict[str, set[TopicPartition]] | None = expected_assignment(group, source, version)
    except ShareAssignorError as err:
        expected = None
        failure = err
    subscribed = {
        target
        for member in group.members
        for target in subscribed_partitions(member.subscribed_topic_names, source.partitions, source.assignable)
    }
    # Without a recomputed assignment, what is read off the stored one alone still holds.
    report = compare(stored if expected is None else expected, stored, subscribed)
    rows = [
        finding_row(
            group.group_id,
            UNASSIGNED_PARTITION,
            "warning",
            f"{topic}:{partition} is subscribed by share group '{group.group_id}' but no member holds it in the "
            f"stored target assignment (epoch {epoch}), so nobody consumes it; partitions from {source.description}",
            topic=topic,
            partition=partition,
        )
        for topic, partition in report.unassigned_partitions
    ]
    member_ids = {member.member_id for member in group.members}
    if expected is None:
        rows.append(
            finding_row(
                group.group_id,
                ASSIGNMENT_NOT_COMPUTED,
                "warning",
                _not_computed(group, source, version, failure)
                + f"; the stored target assignment (epoch {epoch}) was checked for unassigned partitions only; "
                f"partitions from {source.description}",
            )
        )
        rows += [
            finding_row(
                group.group_id,
                MEMBER_WITHOUT_PARTITIONS,
                "info",
                f"member '{member_id}' holds no partition in the stored target assignment (epoch {epoch}); whether it "
                "should cannot be told without a recomputed assignment",
                member_id=member_id,
            )
            for member_id in report.members_without_partitions
            if member_id in member_ids
        ]
        return rows
    for member_id in report.members_without_partitions:
        if member_id not in member_ids:
            continue
        if expected.get(member_id):
            severity: Severity = "warning"
            why = f"the assignor gives every member at least one of its subscribed partitions ({source.description})"
        else:
            severity = "info"
            why = f"its subscription has no assignable partition ({source.description})"
        rows.append(
            finding_row(
                group.group_id,
                MEMBER_WITHOUT_PARTITIONS,
                severity,
                f"member '{member_id}' holds no partition in the stored target assignment (epoch {epoch}): {why}",
                member_id=member_id,
            )
        )
    rows += _difference_rows(group, source, report.differences, member_ids, assignor_era(source, version))
    return rows


def _not_computed(group: ShareGroup, source: PartitionSource, version: BrokerVersion, failure: Exception) -> str:
    if assignor_era(source, version) == "4.1":
        return (
            f"Kafka 4.1's SimpleAssignor stops on share group '{group.group_id}' with PartitionAssignorException "
            f"'{failure}' (members holding more partitions than their share leave the round-robin no member); "
            "the recomputation starts from the members' current partitions where the broker starts from its "
            "previous target assignment, so the broker may compute one"
        )
    return (
        f"Kafka {version.label}'s SimpleAssignor fails on share group '{group.group_id}' with '{failure}': members "
        "hold partitions past the initialised ones that count towards their share, so no target assignment is "
        "computed for the group until its members or partitions change"
    )


def _difference_rows(
    group: ShareGroup,
    source: PartitionSource,
    differences: Iterable[MemberDifference],
    member_ids: set[str],
    era: AssignorEra,
) -> list[dict[str, Any]]:
    """4.1 differences are info: the recomputation visits members and topics sorted, while the broker walks
    a HashMap whose order is unknown here, and it started from the previous target assignment, which type 14
    only approximates. Kafka 4.0's rule depends on neither, so there a difference is a warning. 4.2+
    differences are what the broker will move at its next computation: info, as nothing is wrong yet."""
    rows = []
    for difference in differences:
        parts = []
        if difference.missing:
            parts.append(f"missing {', '.join(_labels(difference.missing))}")
        if difference.unexpected:
            parts.append(f"not expected {', '.join(_labels(difference.unexpected))}")
        who = "member" if difference.member_id in member_ids else "non-member"
        message = (
            f"stored target of {who} '{difference.member_id}' differs from the recomputed assignment: "
            f"{'; '.join(parts)}; partitions from {source.description}"
        )
        if era == "4.0":
            severity: Severity = "warning"
            message += "; Kafka 4.0's assignor gives each member every subscribed partition, whatever the order"
        elif era == "4.2":
            severity = "info"
            message += (
                "; Kafka 4.2+'s assignor, given this target back, balances it so: it will move these partitions "
                "at its next computation (when the group's members or subscriptions change)"
            )
        else:
            severity = "info"
            message += (
                "; a hint only: the broker's HashMap iteration order is unknown (members and topics were taken "
                "sorted) and its previous target assignment is approximated by the current one"
            )
        rows.append(finding_row(group.group_id, ASSIGNMENT_DIFFERS, severity, message, member_id=difference.member_id))
    return rows


# ---- limits ---------------------------------------------------------------------------------------------


def limit_findings(
    groups: Sequence[ShareGroup],
    partition_observations: Mapping[str, Sequence[SharePartitionObservation]],
    limits: Limits,
) -> list[dict[str, Any]]:
    """`share_findings` rows for the groups and their share-partitions against the broker limits.

    `groups` should be every share group of the dump: the group count is checked against
    group.share.max.groups. `partition_observations` maps group id -> its share-partitions (see
    `observation_from_state`); observations of group ids not in `groups` (state a deleted group left) are
    not counted as groups and are ignored here.
    """
    observed = [
        ShareGroupObservation(group.group_id, len(group.members), tuple(partition_observations.get(group.group_id, ())))
        for group in groups
    ]
    return [_finding_row(finding, _limit_kind(finding)) for finding in check_groups(observed, limits)]


def broker_setting_findings(findings: Iterable[Finding]) -> list[dict[str, Any]]:
    """`share_findings` rows (group_id null) for `limits.check_settings` results.

    A separate function from `limit_findings` because a setting's own finding and an observed count share
    the setting name (group.share.max.groups is both a bad value and too many groups).
    """
    return [
        _finding_row(finding, BAD_BROKER_SETTING if finding.severity == "error" else UNREAD_BROKER_SETTING)
        for finding in findings
    ]


_KIND_BY_SETTING = {
    MAX_GROUPS: TOO_MANY_GROUPS,
    RECORD_LOCK_PARTITION_LIMIT: RECORD_LOCK_LIMIT,
    DELIVERY_COUNT_LIMIT: DELIVERY_LIMIT_REACHED,
}


def _limit_kind(finding: Finding) -> str:
    if finding.setting == MAX_SIZE:
        return GROUP_OVER_MAX_SIZE if finding.severity == "error" else GROUP_AT_MAX_SIZE
    return _KIND_BY_SETTING.get(finding.setting, SHARE_LIMIT)


def _finding_row(finding: Finding, kind: str) -> dict[str, Any]:
    topic, partition = finding.partition if finding.partition is not None else (None, None)
    return finding_row(finding.group_id, kind, finding.severity, finding.message, topic=topic, partition=partition)


def finding_row(
    group_id: str | None,
    kind: str,
    severity: Severity,
    message: str,
    *,
    member_id: str | None = None,
    topic: str | None = None,
    partition: int | None = None,
) -> dict[str, Any]:
    return {
        "group_id": group_id,
        "member_id": member_id,
        "topic": topic,
        "partition": partition,
        "kind": kind,
        "severity": severity,
        "message": message,
    }
