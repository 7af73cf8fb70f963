"""One raw record to the typed row it becomes: the generic, layout-driven path.

`decode_record` never raises: a record is an offset commit, a group metadata record, a modern group
record, an unknown type kept as `other`, or a `quarantine` row with its reason. The Spark stage
(`offset_audit.decoding.decoder`) runs it inside Arrow batches; tests call it directly on byte vectors.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from offset_audit import constants as K
from offset_audit.layouts.codec import (
    DecodedValue,
    RecordCodec,
    UnknownRecordType,
    broker_subscribed_topics,
    decode_consumer_protocol,
    record_type_of,
)
from offset_audit.layouts.wire import DecodeError

OFFSET_COMMIT = "offset_commit"
GROUP_METADATA = "group_metadata"
MODERN = "modern"
OTHER = "other"
QUARANTINE = "quarantine"
# __share_group_state records (offset_audit.decoding.share_records), counted by the share command.
SHARE_STATE = "share_state"
RECORD_CLASSES = (OFFSET_COMMIT, GROUP_METADATA, MODERN, OTHER, QUARANTINE)
# Classes whose records were decoded into a typed table (the others are kept raw).
DECODED_CLASSES = (OFFSET_COMMIT, GROUP_METADATA, MODERN, SHARE_STATE)


def _none_if(value: Any, sentinel: Any) -> Any:
    return None if value == sentinel else value


def _topic_id(value: str | None) -> str | None:
    # Kafka writes no topicId when it is ZERO_UUID; either way it means "unknown".
    return None if value in (None, "00000000-0000-0000-0000-000000000000") else value


def offset_commit_row(key: dict[str, Any], decoded: DecodedValue | None) -> dict[str, Any]:
    row = {"group_id": key["group"], "topic": key["topic"], "partition": key["partition"]}
    if decoded is None:
        return row | {"is_tombstone": True}
    f = decoded.fields
    return row | {
        "is_tombstone": False,
        "value_version": decoded.version,
        "committed_offset": f["offset"],
        "leader_epoch": _none_if(f.get("leaderEpoch", -1), -1),
        "metadata": f["metadata"],
        # Milliseconds exactly as stored; -1 means "no expiry" (KAFKA-8069), but a commit time is kept whatever it is.
        "commit_timestamp_ms": f["commitTimestamp"],
        "expire_timestamp_ms": _none_if(f.get("expireTimestamp", -1), -1),
        "topic_id": _topic_id(f.get("topicId")),
        "unknown_tagged_fields": unknown_tagged_fields(f),
    }


def unknown_tagged_fields(fields: dict[str, Any]) -> list[dict[str, Any]] | None:
    """Tagged fields the layout does not name, kept as Kafka's readers keep them (tag and raw bytes)."""
    unknown = fields.get("_unknownTaggedFields")
    if not unknown:
        return None
    return [{"tag": item["tag"], "data": bytes.fromhex(item["data"])} for item in unknown]


def _topic_partitions(items: list[dict] | None, topic_field: str = "Topic") -> list[dict] | None:
    if items is None:
        return None
    return [{"topic": tp[topic_field], "partitions": list(tp["Partitions"])} for tp in items]


def member_row(index: int, member: dict[str, Any], protocol_type: str | None) -> dict[str, Any]:
    rebalance = member.get("rebalanceTimeout", -1)
    row: dict[str, Any] = {
        "member_index": index,
        "protocol_type": protocol_type,
        "member_id": member["memberId"],
        "group_instance_id": member.get("groupInstanceId"),
        "client_id": member["clientId"],
        "client_host": member["clientHost"],
        # GroupMetadataManager loads rebalanceTimeout -1 (or absent, v0) as the session timeout.
        "rebalance_timeout_ms": member["sessionTimeout"] if rebalance == -1 else rebalance,
        "session_timeout_ms": member["sessionTimeout"],
    }
    if protocol_type != K.CONSUMER_PROTOCOL_TYPE:
        return row | {"subscription": member["subscription"], "assignment": member["assignment"]}
    row["broker_subscribed_topics"] = broker_subscribed_topics(member["subscription"])
    try:
        version, sub = decode_consumer_protocol("consumer_protocol_subscription", member["subscription"])
        row |= {
            "subscription_version": version,
            "subscribed_topics": list(sub["Topics"]),
            "user_data": sub["UserData"],
            "owned_partitions": _topic_partitions(sub.get("OwnedPartitions")),
            "generation_id": _none_if(sub.get("GenerationId", -1), -1),
            "rack_id": sub.get("RackId"),
        }
    except DecodeError as err:
        row["subscription_error"] = str(err)
        row["subscription"] = member["subscription"]
    try:
        version, assignment = decode_consumer_protocol("consumer_protocol_assignment", member["assignment"])
        row |= {
            "assignment_version": version,
            "assigned_partitions": _topic_partitions(assignment["AssignedPartitions"]),
            "assignment_user_data": assignment["UserData"],
        }
    except DecodeError as err:
        # An empty assignment is normal for a member that joined after the last sync.
        if member["assignment"]:
            row["assignment_error"] = str(err)
            row["assignment"] = member["assignment"]
    return row


def group_metadata_row(key: dict[str, Any], decoded: DecodedValue | None) -> dict[str, Any]:
    if decoded is None:
        return {"group_id": key["group"], "is_tombstone": True, "members": []}
    f = decoded.fields
    protocol_type = f["protocolType"] or None  # "" means no protocol type (reference 2.5)
    members = f["members"] or []
    return {
        "group_id": key["group"],
        "is_tombstone": False,
        "value_version": decoded.version,
        "protocol_type": protocol_type,
        "generation": f["generation"],
        "protocol": f["protocol"],
        "leader": f["leader"],
        "current_state_timestamp_ms": _none_if(f.get("currentStateTimestamp", -1), -1),
        "member_count": len(members),
        "members": [member_row(i, m, protocol_type) for i, m in enumerate(members)],
    }


def _group_type(record_type: int) -> str:
    if record_type in K.SHARE_GROUP_TYPES:
        return "share"
    if record_type in K.STREAMS_GROUP_TYPES:
        return "streams"
    return "consumer"


def _assignment(items: list[dict] | None) -> list[dict] | None:
    if items is None:
        return None
    return [{"topic_id": tp["TopicId"], "partitions": list(tp["Partitions"])} for tp in items]


def _json_default(value: Any) -> Any:
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(value).decode("ascii")
    raise TypeError(type(value))


def to_json(fields: dict[str, Any]) -> str:
    """A decoded struct as compact JSON; bytes as base64, as Kafka's JSON converters write them."""
    return json.dumps(fields, default=_json_default, separators=(",", ":"))


def _topology_topics(subtopologies: list[dict] | None, field: str) -> list[str]:
    topics: list[str] = []
    for sub in subtopologies or []:
        for item in sub.get(field) or []:
            name = item["Name"] if isinstance(item, dict) else item
            if name not in topics:
                topics.append(name)
    return topics


def modern_row(record_type: int, name: str, key: dict[str, Any], decoded: DecodedValue | None) -> dict[str, Any]:
    row: dict[str, Any] = {
        "record_type": record_type,
        "record_name": name,
        "group_type": _group_type(record_type),
        "group_id": key["GroupId"],
        "member_id": key.get("MemberId"),
        "regular_expression": key.get("RegularExpression"),
        "is_tombstone": decoded is None,
    }
    if decoded is None:
        return row
    f = decoded.fields
    row |= {
        "value_version": decoded.version,
        "layout_era": decoded.era,
        "metadata_hash": f.get("MetadataHash"),
        "member_epoch": f.get("MemberEpoch"),
        "previous_member_epoch": f.get("PreviousMemberEpoch"),
        "member_state": f.get("State"),
        "instance_id": f.get("InstanceId"),
        "rack_id": f.get("RackId"),
        "client_id": f.get("ClientId"),
        "client_host": f.get("ClientHost"),
        "rebalance_timeout_ms": f.get("RebalanceTimeoutMs"),
        "server_assignor": f.get("ServerAssignor"),
        "subscribed_topic_names": f.get("SubscribedTopicNames"),
        "subscribed_topic_regex": f.get("SubscribedTopicRegex"),
        "topology_epoch": f.get("TopologyEpoch"),
        "process_id": f.get("ProcessId"),
        "epoch": f.get("Epoch", f.get("AssignmentEpoch")),
        "decoded_json": to_json(f),
    }
    if record_type == K.CONSUMER_GROUP_REGULAR_EXPRESSION:
        row["resolved_topics"] = f["Topics"]
    elif "TopicPartitions" in f:
        row["assigned_partitions"] = _assignment(f["TopicPartitions"])
    elif "AssignedPartitions" in f:
        row["assigned_partitions"] = _assignment(f["AssignedPartitions"])
        row["pending_revocation_partitions"] = _assignment(f.get("PartitionsPendingRevocation"))
    if record_type == K.STREAMS_GROUP_METADATA:
        # Tags written by 4.2+ (validated) and 4.4+ (stored description); absent means their default -1.
        # 4.2+ writes a non-empty LastAssignmentConfigs (tag 1) in every one of these records, so without it
        # (absent reads as its default, []) the writer was 4.1, which recorded no readiness: null, not a -1
        # that says "not validated".
        written_by_4_2 = f.get("ValidatedTopologyEpoch", -1) != -1 or bool(f.get("LastAssignmentConfigs"))
        row["validated_topology_epoch"] = f.get("ValidatedTopologyEpoch", -1) if written_by_4_2 else None
        row["stored_description_topology_epoch"] = f.get("StoredDescriptionTopologyEpoch", -1)
    if record_type == K.STREAMS_GROUP_TOPOLOGY:
        # StreamsTopology.sourceTopicMap: source plus repartition-source topics (reference 4.3).
        subs = f["Subtopologies"]
        sources = _topology_topics(subs, "SourceTopics")
        row["source_topics"] = sources + [
            t for t in _topology_topics(subs, "RepartitionSourceTopics") if t not in sources
        ]
        row["source_topic_regex"] = _topology_topics(subs, "SourceTopicRegex")
    if record_type in (K.CONSUMER_GROUP_PARTITION_METADATA, K.SHARE_GROUP_PARTITION_METADATA):
        row["topics"] = [
            {
                "topic_id": t["TopicId"],
                "topic_name": t["TopicName"],
                "partitions": list(range(t["NumPartitions"])),
            }
            for t in f["Topics"]
        ]
    elif record_type == K.SHARE_GROUP_STATE_PARTITION_METADATA:
        row["topics"] = [
            {"topic_id": t["TopicId"], "topic_name": t["TopicName"], "partitions": list(t["Partitions"])}
            for t in f["InitializedTopics"]
        ]
    return row


def quarantined_key(key_fields: dict[str, Any]) -> dict[str, Any]:
    """The key's fields a quarantine row keeps when only the value was unreadable: with them the replay
    can tell which key the unreadable record was the last of (`offset_audit.coordinator.replay`)."""
    if not key_fields:
        return {}
    return {
        "group_id": key_fields.get("group", key_fields.get("GroupId")),
        "topic": key_fields.get("topic"),
        "partition": key_fields.get("partition"),
        "member_id": key_fields.get("MemberId"),
        "regular_expression": key_fields.get("RegularExpression"),
    }


def decode_record(codec: RecordCodec, key: bytes | None, value: bytes | None) -> dict[str, Any]:
    """Classify and decode one record; the result holds `record_class` and that class's struct."""
    record_type: int | None = None
    value_version: int | None = None
    key_fields: dict[str, Any] = {}
    try:
        record_type = record_type_of(key)
        if value is not None and len(value) >= 2:
            value_version = int.from_bytes(value[:2], "big", signed=True)
        record_type, key_fields = codec.decode_key(key)
        decoded = None if value is None else codec.decode_value(record_type, value)
    except UnknownRecordType:
        return {
            "record_class": OTHER,
            "key_type": record_type,
            "is_tombstone": value is None,
            "other": {"record_type": record_type, "is_tombstone": value is None, "key": key, "value": value},
        }
    except DecodeError as err:
        return {
            "record_class": QUARANTINE,
            "key_type": record_type,
            "value_version": value_version,
            "is_tombstone": value is None,
            "quarantine": {
                "record_type": record_type,
                "value_version": value_version,
                "reason": str(err),
                **quarantined_key(key_fields),
                "key": key,
                "value": value,
            },
        }
    common = {
        "key_type": record_type,
        "value_version": None if decoded is None else decoded.version,
        "layout_era": None if decoded is None else decoded.era,
        "is_tombstone": decoded is None,
    }
    if record_type in K.OFFSET_COMMIT_TYPES:
        row = offset_commit_row(key_fields, decoded) | {"key_type": record_type}
        return common | {"record_class": OFFSET_COMMIT, "offset_commit": row}
    if record_type == K.GROUP_METADATA:
        return common | {
            "record_class": GROUP_METADATA,
            "group_metadata": group_metadata_row(key_fields, decoded),
        }
    name = codec.name_of(record_type) or str(record_type)
    return common | {"record_class": MODERN, "modern": modern_row(record_type, name, key_fields, decoded)}
