"""Share groups (KIP-932): their records in __consumer_offsets (types 9-15, in Kafka 4.0's preview
layouts and 4.1's), and their share-partitions' state in __share_group_state."""

from __future__ import annotations

import random
from typing import Any

from offset_audit import constants as K
from offset_audit.coordinator.partitioner import java_string_hash
from offset_audit.generator.world import END_MS, SPAN_MS, Event, Group, GroupRecords, World
from offset_audit.generator.writers import new_snapshot_folder, write_snapshot_file
from offset_audit.layouts.encoder import encode_key, encode_value
from offset_audit.layouts.spec import share_state_layouts


def share_group_records(world: World, group: Group, ts: int) -> list[Event]:
    gid = group.group_id
    records = GroupRecords(world, group, ts)
    add = records.add
    era_40 = group.options.get("era_40", world.rng.random() < 0.2)  # Kafka 4.0's preview layouts

    if era_40:
        add(K.SHARE_GROUP_METADATA, {}, {"Epoch": 2}, era="4.0")
        add(
            K.SHARE_GROUP_PARTITION_METADATA,
            {},
            world.topic_metadata(group),
        )
    else:
        add(K.SHARE_GROUP_METADATA, {}, {"Epoch": 2, "MetadataHash": 99})
    add(K.SHARE_GROUP_TARGET_ASSIGNMENT_METADATA, {}, {"AssignmentEpoch": 2})
    initialized = [
        {"TopicId": world.topic_ids[t], "TopicName": t, "Partitions": list(range(world.topics[t]))}
        for t in group.subscribed
    ]
    if era_40:
        add(
            K.SHARE_GROUP_STATE_PARTITION_METADATA,
            {},
            {"InitializedTopics": initialized, "DeletingTopics": []},
            era="4.0",
        )
    else:
        add(
            K.SHARE_GROUP_STATE_PARTITION_METADATA,
            {},
            {"InitializingTopics": [], "InitializedTopics": initialized, "DeletingTopics": []},
        )
    members = 0 if world.rng.random() < 0.3 else group.members
    for m in range(members):
        member = {"MemberId": f"{gid}-m{m}"}
        add(
            K.SHARE_GROUP_MEMBER_METADATA,
            member,
            {
                "RackId": None,
                "ClientId": f"share-{m}",
                "ClientHost": f"/10.3.0.{m}",
                "SubscribedTopicNames": group.subscribed,
            },
        )
        add(K.SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER, member, {"TopicPartitions": world.assignment_by_id(group)})
        add(
            K.SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT,
            member,
            {
                "MemberEpoch": 2,
                "PreviousMemberEpoch": 1,
                "State": 0,
                "AssignedPartitions": world.assignment_by_id(group),
            },
        )
    return records.events


SHARE_STATE_TOPIC = "__share_group_state"
SHARE_STATE_SNAPSHOT_EVERY = 25  # updates between snapshots (the broker's default is 500; smaller shows more)


def generate_share_state(
    output: str, records: int, seed: int = 1, world_records: int = 100_000, partitions: int = 10, corrupt: int = 0
) -> dict[str, int]:
    """A Kafka-source snapshot of __share_group_state for the share groups of the dump that
    `generate_dump(..., world_records, seed, partitions=partitions)` writes (same group ids, topic ids
    and partitions), so the two dumps audit together.

    Each share-partition starts with the snapshot Kafka writes when a group initialises it (start -1,
    leader epoch 0), then consumption moves it on: updates acknowledge records at the start (moving
    SPSO), release some (Available, one more delivery) and archive some at the delivery limit; every
    SHARE_STATE_SNAPSHOT_EVERY updates a snapshot restates the whole state. Records are spread over
    `partitions` __share_group_state partitions by their key's hash.
    """
    world = World(world_records, seed, partitions)
    layouts = share_state_layouts()
    rng = random.Random(seed * 7919 + 1)
    keys = [
        (g.group_id, world.topic_ids[t], p)
        for g in world.groups
        if g.kind == "share"
        for t in g.subscribed
        for p in range(world.topics[t])
    ]
    if not keys:
        raise ValueError("the generated cluster has no share groups")
    start = END_MS - SPAN_MS
    states: dict[tuple[str, str, int], dict[str, Any]] = {
        k: {"start": 0, "batches": [], "epoch": 0, "updates": 0, "created": start} for k in keys
    }
    events: list[tuple[int, tuple[str, str, int], bytes, bytes | None]] = []

    def key_bytes(kind: int, k: tuple[str, str, int]) -> bytes:
        return encode_key(layouts[kind], {"GroupId": k[0], "TopicId": k[1], "Partition": k[2]})

    def snapshot(k, s, ts, start_offset):
        s["epoch"] += 1
        value = {
            "SnapshotEpoch": s["epoch"],
            "StateEpoch": 1,
            "LeaderEpoch": 1 if start_offset >= 0 else 0,
            "StartOffset": start_offset,
            "CreateTimestamp": s["created"],
            "WriteTimestamp": ts,
            "StateBatches": s["batches"],
        }
        return encode_value(layouts[0], 0, value, era="4.1+")

    for k in keys:
        events.append((start, k, key_bytes(0, k), snapshot(k, states[k], start, -1)))
    for i in range(max(0, records - len(keys))):
        k = keys[rng.randrange(len(keys))]
        s = states[k]
        ts = start + SPAN_MS * (i + 1) // max(1, records)
        s["updates"] += 1
        if s["updates"] % SHARE_STATE_SNAPSHOT_EVERY == 0:
            events.append((ts, k, key_bytes(0, k), snapshot(k, s, ts, s["start"])))
            continue
        roll = rng.random()
        first = s["start"]
        if roll < 0.6:  # the oldest records acknowledged: SPSO moves on
            n = rng.randint(1, 50)
            batch = {"FirstOffset": first, "LastOffset": first + n - 1, "DeliveryState": 2, "DeliveryCount": 1}
            s["start"] = first + n
            update: dict[str, Any] = {"StartOffset": s["start"], "StateBatches": [batch]}
        elif roll < 0.9:  # released or lock timed out: available again, one delivery more
            lo = first + rng.randint(0, 40)
            last, count = lo + rng.randint(0, 5), rng.randint(1, 4)
            batch = {"FirstOffset": lo, "LastOffset": last, "DeliveryState": 0, "DeliveryCount": count}
            update = {"StartOffset": -1, "StateBatches": [batch]}
        else:  # delivered too often: archived
            lo = first + rng.randint(0, 40)
            batch = {"FirstOffset": lo, "LastOffset": lo, "DeliveryState": 4, "DeliveryCount": 5}
            update = {"StartOffset": -1, "StateBatches": [batch]}
        s["batches"] = [b for b in s["batches"] if b["LastOffset"] >= s["start"]][-4:] + [
            b for b in update["StateBatches"] if b["LastOffset"] >= s["start"]
        ]
        value = {"SnapshotEpoch": s["epoch"], "LeaderEpoch": 1, **update}
        events.append((ts, k, key_bytes(1, k), encode_value(layouts[1], 0, value, era="4.1+")))
    for i in range(corrupt):  # values cut short: quarantined, never replayed
        k = keys[i % len(keys)]
        events.append((END_MS, k, key_bytes(0, k), b"\x00\x00\x00\x01"))
    events.sort(key=lambda e: e[0])

    next_offset = [0] * partitions
    offsets, stored_in = [], []
    for _, k, _, _ in events:
        partition = abs(java_string_hash(f"{k[0]}:{k[1]}:{k[2]}")) % partitions
        stored_in.append(partition)
        offsets.append(next_offset[partition])
        next_offset[partition] += 1
    out = new_snapshot_folder(output)
    write_snapshot_file(
        out / "part-00000.parquet",
        SHARE_STATE_TOPIC,
        keys=[e[2] for e in events],
        values=[e[3] for e in events],
        partitions=stored_in,
        offsets=offsets,
        timestamps_ms=[e[0] for e in events],
    )
    return {"records": len(events), "share_partitions": len(keys), "partitions": partitions}
