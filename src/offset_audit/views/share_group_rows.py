"""The `share_groups` table: one row per share group as the coordinator holds it, with its members and
topics, whether it is left behind (no members, state kept), and the command that deletes it then.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from offset_audit.coordinator.share_groups import ShareGroup, ShareGroupMember, TopicPartitions, partition_labels
from offset_audit.escaping import NotAShellArgument
from offset_audit.views.kafka_commands import delete_share_group


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
        "target_partitions": partition_labels(group.named(member.target_partitions)),
        "current_partitions": partition_labels(group.named(member.current_partitions)),
        "member_epoch": member.member_epoch,
    }


def _topic_row(topic: TopicPartitions) -> dict[str, Any]:
    return {"topic_id": topic.topic_id, "topic_name": topic.topic_name, "partitions": list(topic.partitions)}
