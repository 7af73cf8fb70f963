"""KIP-932 share groups as the group coordinator loads them from `__consumer_offsets`, and what to act on.

Share groups are few (the broker caps them), so this is plain driver-side Python over the share rows of the
`modern_group_records` table (record types 9-15, reference 2.7), in log order:

    replay_share_groups   rows -> ShareGroup, as GroupMetadataManager.replay rebuilds them (Kafka 4.1)

What is made of them lives beside: `group_table` (the `share_groups` rows, with the groups left
behind) and `group_findings` (the stored assignment against the SimpleAssignor, and the groups against
the broker limits: `share_findings` rows).

Replay follows the coordinator rather than a plain "last record per key": a ShareGroupCurrentMemberAssignment
tombstone leaves the member in the group with epoch -1 and nothing assigned, only a ShareGroupMemberMetadata
tombstone removes it, and a ShareGroupMetadata tombstone removes the group with everything it held
(`removeGroup`). ShareGroupStatePartitionMetadata lives in a map of its own keyed by group id, so it outlives
a group tombstone unless tombstoned itself. For logs Kafka writes (it tombstones every key of a group before
the ShareGroupMetadata one, `ShareGroup.createGroupTombstoneRecords`) this is the same as last-record-wins.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from offset_audit import constants as K
from offset_audit.coordinator.java_order import TimelineKeys, string_hash
from offset_audit.coordinator.share_assignor import (
    TopicPartition,
)
from offset_audit.decoding.row_fields import as_fields, is_int

# ShareGroup.ShareGroupState names (Kafka 4.1): a loaded group is Empty without members, else Stable.
EMPTY = "Empty"
STABLE = "Stable"

# ConsumerGroupHeartbeatRequest.LEAVE_GROUP_MEMBER_EPOCH: what a current-assignment tombstone leaves behind.
LEAVE_GROUP_MEMBER_EPOCH = -1

# Layout eras of the ShareGroupMetadata value (schemas/records/11_share_group_metadata.json).
KAFKA_4_1_ERA = "4.1+"


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


def partition_labels(partitions: Iterable[TopicPartition]) -> list[str]:
    return [f"{topic}:{partition}" for topic, partition in sorted(partitions)]


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
    # The member records' keys hold their MemberId, a string that cannot be null: their rows always have one.
    if record_type == K.SHARE_GROUP_METADATA:
        del groups[group_id]
    elif record_type == K.SHARE_GROUP_MEMBER_METADATA:
        group.members.pop(cast(str, member_id), None)
        group.member_walk.remove(member_id)
    elif record_type == K.SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT:
        member = group.members.get(cast(str, member_id))
        if member is not None:
            group.member_walk.add(member_id)  # updateMember: a put, which may grow the table
            member.member_epoch = member.previous_member_epoch = LEAVE_GROUP_MEMBER_EPOCH
            member.current_partitions = frozenset()
    elif record_type == K.SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER:
        group.target_assignment.pop(cast(str, member_id), None)
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
