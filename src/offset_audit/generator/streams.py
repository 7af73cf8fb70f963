"""Streams groups' records (KIP-1071, types 17 and 19-23): the group, its topology, and each member's
metadata, target and current tasks."""

from __future__ import annotations

from offset_audit import constants as K
from offset_audit.generator.world import Event, Group, GroupRecords, World


def streams_group_records(world: World, group: Group, ts: int) -> list[Event]:
    gid = group.group_id
    records = GroupRecords(world, group, ts)
    add = records.add

    add(K.STREAMS_GROUP_METADATA, {}, {"Epoch": 4, "MetadataHash": 77, "ValidatedTopologyEpoch": 1})
    add(
        K.STREAMS_GROUP_TOPOLOGY,
        {},
        {
            "Epoch": 1,
            "Subtopologies": [
                {
                    "SubtopologyId": "0",
                    "SourceTopics": group.subscribed,
                    "SourceTopicRegex": [],
                    "StateChangelogTopics": [
                        {
                            "Name": f"{gid}-store-changelog",
                            "Partitions": 3,
                            "ReplicationFactor": 3,
                            "TopicConfigs": [],
                        }
                    ],
                    "RepartitionSinkTopics": [],
                    "RepartitionSourceTopics": [],
                    "CopartitionGroups": [],
                }
            ],
        },
    )
    add(K.STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA, {}, {"AssignmentEpoch": 4})
    tasks = [{"SubtopologyId": "0", "Partitions": [0, 1]}]
    for m in range(group.members):
        member = {"MemberId": f"{gid}-m{m}"}
        add(
            K.STREAMS_GROUP_MEMBER_METADATA,
            member,
            {
                "InstanceId": None,
                "RackId": None,
                "ClientId": f"app-{m}",
                "ClientHost": f"/10.2.0.{m}",
                "RebalanceTimeoutMs": 300000,
                "TopologyEpoch": 1,
                "ProcessId": f"proc-{m}",
                "UserEndpoint": {"Host": f"app-{m}.local", "Port": 8080},
                "ClientTags": [{"Key": "zone", "Value": "a"}],
            },
        )
        add(
            K.STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER,
            member,
            {"ActiveTasks": tasks, "StandbyTasks": [], "WarmupTasks": []},
        )
        add(
            K.STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT,
            member,
            {
                "MemberEpoch": 4,
                "PreviousMemberEpoch": 3,
                "State": 1,  # STABLE: byte 1 of streams groups' MemberState (0 in consumer groups)
                "ActiveTasks": tasks,
                "StandbyTasks": [],
                "WarmupTasks": [],
                "ActiveTasksPendingRevocation": [],
                "StandbyTasksPendingRevocation": [],
                "WarmupTasksPendingRevocation": [],
            },
        )
    return records.events
