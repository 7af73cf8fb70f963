"""KIP-848 consumer groups' records (types 3-8 and 16): the group, its regular expression, its
target assignment, and each member's metadata, target and current assignment."""

from __future__ import annotations

from offset_audit import constants as K
from offset_audit.generator.world import Event, Group, GroupRecords, World


def consumer_group_records(world: World, group: Group, ts: int) -> list[Event]:
    rng = world.rng
    gid = group.group_id
    records = GroupRecords(world, group, ts)
    add = records.add
    epoch = rng.randint(1, 40)

    add(K.CONSUMER_GROUP_METADATA, {}, {"Epoch": epoch, "MetadataHash": rng.getrandbits(62)})
    if group.options.get("partition_metadata", rng.random() < 0.3):
        add(
            K.CONSUMER_GROUP_PARTITION_METADATA,
            {},
            world.topic_metadata(group),
        )
    regex = None
    if group.options.get("regex", rng.random() < 0.3):
        regex = f"^{group.subscribed[0][:3]}.*"
        add(
            K.CONSUMER_GROUP_REGULAR_EXPRESSION,
            {"RegularExpression": regex},
            {"Topics": [group.subscribed[0]], "Version": 3, "Timestamp": ts},
        )
    add(K.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA, {}, {"AssignmentEpoch": epoch})
    members = 0 if rng.random() < 0.3 else group.members
    for m in range(members):
        member = {"MemberId": f"{gid}-m{m}"}
        add(
            K.CONSUMER_GROUP_MEMBER_METADATA,
            member,
            {
                "InstanceId": None,
                "RackId": None,
                "ClientId": f"client-{m}",
                "ClientHost": f"/10.1.0.{m}",
                "SubscribedTopicNames": [] if regex else group.subscribed,
                "SubscribedTopicRegex": regex,
                "RebalanceTimeoutMs": 300000,
                "ServerAssignor": "uniform",
            },
        )
        add(
            K.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER,
            member,
            {"TopicPartitions": world.assignment_by_id(group)},
        )
        add(
            K.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT,
            member,
            {
                "MemberEpoch": epoch,
                "PreviousMemberEpoch": epoch - 1,
                "State": 0,
                "AssignedPartitions": world.assignment_by_id(group),
                "PartitionsPendingRevocation": [],
            },
        )
    return records.events
