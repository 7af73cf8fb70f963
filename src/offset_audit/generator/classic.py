"""Classic groups' records: consumer groups (Stable, Empty, of every GroupMetadata version), Connect
workers, console consumers, standalone consumers' first joins, and deleted groups' tombstones."""

from __future__ import annotations

import uuid

from offset_audit import constants as K
from offset_audit.generator.world import END_MS, Event, Group, World
from offset_audit.layouts.encoder import encode_consumer_protocol

# The group kinds whose state is a GroupMetadata record (type 2).
CLASSIC_KINDS = ("classic_stable", "classic_empty", "classic_legacy", "connect", "console", "simple", "deleted")


def subscription_bytes(world: World, group: Group, version: int) -> bytes:
    return encode_consumer_protocol(
        "consumer_protocol_subscription",
        version,
        {
            "Topics": group.subscribed,
            "UserData": b"\x00\x01" if version >= 1 else None,
            "OwnedPartitions": [{"Topic": t, "Partitions": [0]} for t in group.subscribed[:1]],
            "GenerationId": 3,
            "RackId": "rack-a" if version >= 3 else None,
        },
    )


def assignment_bytes(world: World, group: Group) -> bytes:
    return encode_consumer_protocol(
        "consumer_protocol_assignment",
        0,
        {
            "AssignedPartitions": [{"Topic": t, "Partitions": list(range(world.topics[t]))} for t in group.subscribed],
            "UserData": None,
        },
    )


def group_metadata(
    world: World, group: Group, ts: int, members: int, version: int, protocol_type: str
) -> tuple[bytes, bytes | None]:
    rng = world.rng
    member_list = []
    for m in range(members):
        if protocol_type == K.CONSUMER_PROTOCOL_TYPE:
            subscription = subscription_bytes(world, group, rng.choice((0, 1, 2, 3)))
            if group.group_id.endswith("7") and m == 0:
                subscription = b"\x00\x01\xff\xff\xff"  # the broker cannot parse this one
            assignment = assignment_bytes(world, group)
        else:
            subscription = b"\x00\x01connect-protocol-" + str(m).encode()
            assignment = b"\x00\x01assignment"
        member_list.append(
            {
                "memberId": f"{group.group_id}-member-{m}-{uuid.UUID(int=rng.getrandbits(128))}",
                "groupInstanceId": f"instance-{m}" if version >= 3 and m % 2 else None,
                "clientId": f"client-{m}",
                "clientHost": f"/10.0.{m}.{rng.randint(1, 254)}",
                "rebalanceTimeout": 300000,
                "sessionTimeout": 45000,
                "subscription": subscription,
                "assignment": assignment,
            }
        )
    value = {
        "protocolType": protocol_type,
        "generation": rng.randint(1, 50),
        "protocol": ("range" if protocol_type == "consumer" else "sessioned") if members else None,
        "leader": member_list[0]["memberId"] if member_list else None,
        "currentStateTimestamp": ts,
        "members": member_list,
    }
    return world.record(K.GROUP_METADATA, {"group": group.group_id}, value, version)


def classic_group_records(world: World, group: Group, times: list[int]) -> list[Event]:
    """A classic group's GroupMetadata records at `times`; the last one is the state it loads in."""
    rng = world.rng
    events: list[Event] = []

    def add(key_value: tuple[bytes, bytes | None], ts: int) -> None:
        events.append(Event(ts, group.partition, key_value[0], key_value[1]))

    kind = group.kind
    if kind in ("classic_stable", "classic_empty", "console", "deleted"):
        version = rng.choice((3, 3, 3, 2, 4))
        for i, ts in enumerate(times):
            last = i == len(times) - 1
            members = rng.randint(1, 3) if not last or kind == "classic_stable" else 0
            add(group_metadata(world, group, ts, members, version, "consumer"), ts)
    elif kind == "classic_legacy":
        version = group.options.get("metadata_version", rng.choice((0, 1, 2)))
        add(group_metadata(world, group, times[-1], rng.choice((0, 2)), version, "consumer"), times[-1])
    elif kind == "connect":
        add(group_metadata(world, group, times[-1], group.members, 3, "connect"), times[-1])
    elif kind == "simple" and rng.random() < 0.4:
        # A new group whose first join produced nothing else (newEmptyGroupMetadataRecord).
        add(
            world.record(
                K.GROUP_METADATA,
                {"group": group.group_id},
                {
                    "protocolType": "",
                    "generation": 0,
                    "protocol": None,
                    "leader": None,
                    "currentStateTimestamp": times[0],
                    "members": [],
                },
                3,
            ),
            times[0],
        )
    return events


def deletion_records(world: World, group: Group) -> list[Event]:
    """A deleted group (kafka-consumer-groups --delete after the dump's last commit): offset
    tombstones for every partition, then the group tombstone."""
    ts = END_MS + world.rng.randint(1, 60_000)
    out = [
        Event(ts, group.partition, world.commit_key(group, t, p), None)
        for t, n in group.topics.items()
        for p in range(n)
    ]
    out.append(Event(ts + 1, group.partition, world.record_key(K.GROUP_METADATA, {"group": group.group_id}), None))
    return out
