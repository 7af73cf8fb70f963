"""A realistic, deterministic `__consumer_offsets` dump in the Kafka-source snapshot layout.

It models the groups an operator actually finds on a cluster that has lived through several Kafka
versions: classic consumer groups (Stable and Empty, old and new value versions), standalone
consumers, Connect workers, console consumers, KIP-848 consumer groups, share groups and streams
groups, each in the `__consumer_offsets` partition Kafka's group hash puts it in, with repeated
commits, expired and deleted offsets, deleted groups and, on request, corrupt records.

The bulk of a dump (offset commits) is produced in time-ordered chunks so memory stays bounded for
tens of millions of records; every structural record goes through the same layouts the decoder reads.
"""

from __future__ import annotations

import random
import struct
import uuid
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from offset_audit import constants as K
from offset_audit.coordinator.partitioner import partition_for
from offset_audit.layouts.encoder import encode_consumer_protocol, encode_key, encode_value, uvarint
from offset_audit.layouts.spec import record_layouts

DAY_MS = 86_400_000
END_MS = 1_793_000_000_000  # 2026-10-26: fixed so a seed always gives the same bytes
SPAN_MS = 30 * DAY_MS
RETENTION_MS = 7 * DAY_MS
CHUNK = 500_000

SNAPSHOT_SCHEMA = pa.schema(
    [
        ("key", pa.binary()),
        ("value", pa.binary()),
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("timestamp", pa.timestamp("us", tz="UTC")),
        ("timestampType", pa.int32()),
    ]
)

KINDS = {
    # kind: share of groups
    "classic_stable": 0.28,
    "classic_empty": 0.14,
    "classic_legacy": 0.08,
    "simple": 0.10,
    "connect": 0.05,
    "console": 0.05,
    "consumer_848": 0.12,
    "streams": 0.05,
    "share": 0.05,
    "deleted": 0.08,
}
# The first groups of every dump, so even a small one holds every record type and version.
FIRST_GROUPS = (
    ("classic_legacy", {"commit_version": 0, "metadata_version": 0}),
    ("classic_legacy", {"commit_version": 1, "metadata_version": 1}),
    ("classic_legacy", {"commit_version": 2, "metadata_version": 2}),
    ("consumer_848", {"regex": True, "partition_metadata": True}),
    ("share", {"era_40": True}),
    ("share", {"era_40": False}),
)
TOPIC_WORDS = (
    "orders",
    "payments",
    "clicks",
    "shipments",
    "inventory",
    "audit",
    "users",
    "metrics",
    "invoices",
    "sessions",
    "alerts",
    "ledger",
    "events",
    "profiles",
    "carts",
    "refunds",
)


def _topic_name(index: int) -> str:
    word = TOPIC_WORDS[index % len(TOPIC_WORDS)]
    return word if index < len(TOPIC_WORDS) else f"{word}-{index // len(TOPIC_WORDS)}"


@dataclass
class Group:
    group_id: str
    kind: str
    partition: int
    topics: dict[str, int]  # committed topic -> partition count
    subscribed: list[str] = field(default_factory=list)
    commit_version: int = 3
    members: int = 0
    options: dict = field(default_factory=dict)


@dataclass
class Event:
    ts: int
    partition: int
    key: bytes
    value: bytes | None


class World:
    """The groups and topics of one generated cluster."""

    def __init__(self, records: int, seed: int, partitions: int) -> None:
        self.rng = random.Random(seed)
        self.np_rng = np.random.default_rng(seed)
        self.partitions = partitions
        self.layouts = record_layouts()
        n_groups = max(len(KINDS) + len(FIRST_GROUPS), records // 2500)
        n_topics = max(8, n_groups // 6)
        self.topics = {_topic_name(i): self.rng.choice((1, 3, 6, 12, 24)) for i in range(n_topics)}
        self.topic_ids = {t: str(uuid.UUID(int=self.rng.getrandbits(128))) for t in self.topics}
        kinds = list(KINDS)
        weights = [KINDS[k] for k in kinds]
        self.groups: list[Group] = []
        for i in range(n_groups):
            options: dict = {}
            if i < len(FIRST_GROUPS):
                kind, options = FIRST_GROUPS[i]
            elif i < len(FIRST_GROUPS) + len(kinds):
                kind = kinds[i - len(FIRST_GROUPS)]
            else:
                kind = self.rng.choices(kinds, weights)[0]
            group = self._group(i, kind)
            group.options = dict(options)
            group.commit_version = options.get("commit_version", group.commit_version)
            self.groups.append(group)

    def _group(self, index: int, kind: str) -> Group:
        rng = self.rng
        if kind == "console":
            group_id = f"console-consumer-{rng.randint(10000, 99999)}"
        elif kind == "connect":
            group_id = f"connect-sink-{index}"
        else:
            group_id = f"{kind.replace('_', '-')}-{index:05d}"
        names = rng.sample(sorted(self.topics), k=min(len(self.topics), rng.randint(1, 3)))
        topics = {t: self.topics[t] for t in names}
        group = Group(group_id, kind, partition_for(group_id, self.partitions), topics)
        group.subscribed = list(names)
        if kind in ("classic_stable", "connect", "consumer_848", "streams", "share"):
            group.members = rng.randint(1, 4)
            if rng.random() < 0.3 and len(names) > 1:
                group.subscribed = names[:-1]  # still has offsets of a topic it stopped reading
        group.commit_version = {
            "classic_legacy": rng.choice((0, 1, 1, 2)),
            "simple": rng.choice((1, 3, 3, 4)),
            "consumer_848": rng.choice((3, 4)),
            "streams": 4,
        }.get(kind, rng.choice((3, 3, 4)))
        return group

    # Keys and values --------------------------------------------------------------------------

    def commit_key(self, group: Group, topic: str, partition: int) -> bytes:
        key_type = K.LEGACY_OFFSET_COMMIT if group.commit_version == 0 else K.OFFSET_COMMIT
        return encode_key(self.layouts[key_type], {"group": group.group_id, "topic": topic, "partition": partition})

    def commit_value(self, group: Group, topic: str, offset: int, ts: int, metadata: str = "") -> bytes:
        version = group.commit_version
        meta = metadata.encode()
        if version == 0 or version == 2:
            return struct.pack(">hqh", version, offset, len(meta)) + meta + struct.pack(">q", ts)
        if version == 1:
            # 0.9-2.0 brokers wrote commit + retention; a few clients asked for their own retention.
            expire = ts + (RETENTION_MS if (offset % 7) else DAY_MS)
            if offset % 11 == 0:
                expire = -1  # written by 2.1 brokers at an old IBP (KAFKA-8069)
            return struct.pack(">hqh", 1, offset, len(meta)) + meta + struct.pack(">qq", ts, expire)
        epoch = 5 + (offset % 3)
        if version == 3:
            return struct.pack(">hqih", 3, offset, epoch, len(meta)) + meta + struct.pack(">q", ts)
        body = struct.pack(">hqi", 4, offset, epoch) + uvarint(len(meta) + 1) + meta + struct.pack(">q", ts)
        if offset % 2:
            return body + b"\x01\x00\x10" + uuid.UUID(self.topic_ids[topic]).bytes  # tagged topicId
        return body + b"\x00"

    def record(
        self, record_type: int, key: dict, value: dict | None, version: int = 0, era: str | None = None
    ) -> tuple[bytes, bytes | None]:
        layout = self.layouts[record_type]
        encoded = None if value is None else encode_value(layout, version, value, era=era)
        return encode_key(layout, key), encoded

    # Structural records -----------------------------------------------------------------------

    def subscription(self, group: Group, version: int) -> bytes:
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

    def assignment(self, group: Group) -> bytes:
        return encode_consumer_protocol(
            "consumer_protocol_assignment",
            0,
            {
                "AssignedPartitions": [
                    {"Topic": t, "Partitions": list(range(self.topics[t]))} for t in group.subscribed
                ],
                "UserData": None,
            },
        )

    def group_metadata(
        self, group: Group, ts: int, members: int, version: int, protocol_type: str
    ) -> tuple[bytes, bytes]:
        rng = self.rng
        member_list = []
        for m in range(members):
            if protocol_type == K.CONSUMER_PROTOCOL_TYPE:
                subscription = self.subscription(group, rng.choice((0, 1, 2, 3)))
                if group.group_id.endswith("7") and m == 0:
                    subscription = b"\x00\x01\xff\xff\xff"  # the broker cannot parse this one
                assignment = self.assignment(group)
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
        return self.record(K.GROUP_METADATA, {"group": group.group_id}, value, version)

    def structural(self, group: Group) -> list[Event]:
        """Metadata records of a group at a few points in time; the last one is the state it loads in."""
        rng = self.rng
        events: list[Event] = []
        times = sorted(END_MS - rng.randint(0, SPAN_MS) for _ in range(rng.randint(1, 3)))

        def add(key_value: tuple[bytes, bytes | None], ts: int) -> None:
            events.append(Event(ts, group.partition, key_value[0], key_value[1]))

        kind = group.kind
        if kind in ("classic_stable", "classic_empty", "console", "deleted"):
            version = rng.choice((3, 3, 3, 2, 4))
            for i, ts in enumerate(times):
                last = i == len(times) - 1
                members = rng.randint(1, 3) if not last or kind == "classic_stable" else 0
                add(self.group_metadata(group, ts, members, version, "consumer"), ts)
        elif kind == "classic_legacy":
            version = group.options.get("metadata_version", rng.choice((0, 1, 2)))
            add(self.group_metadata(group, times[-1], rng.choice((0, 2)), version, "consumer"), times[-1])
        elif kind == "connect":
            add(self.group_metadata(group, times[-1], group.members, 3, "connect"), times[-1])
        elif kind == "simple" and rng.random() < 0.4:
            # A new group whose first join produced nothing else (newEmptyGroupMetadataRecord).
            add(
                self.record(
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
        elif kind == "consumer_848":
            events += self.modern_consumer(group, times[-1])
        elif kind == "streams":
            events += self.streams(group, times[-1])
        elif kind == "share":
            events += self.share(group, times[-1])
        return events

    def _assignment(self, group: Group) -> list[dict]:
        return [{"TopicId": self.topic_ids[t], "Partitions": list(range(self.topics[t]))} for t in group.subscribed]

    def _topic_metadata(self, group: Group) -> dict:
        """ConsumerGroupPartitionMetadata / ShareGroupPartitionMetadata value for the subscribed topics."""
        return {
            "Topics": [
                {"TopicId": self.topic_ids[t], "TopicName": t, "NumPartitions": self.topics[t], "PartitionMetadata": []}
                for t in group.subscribed
            ]
        }

    def modern_consumer(self, group: Group, ts: int) -> list[Event]:
        rng = self.rng
        gid = group.group_id
        out = []
        epoch = rng.randint(1, 40)

        def add(record_type: int, key: dict, value: dict | None, era: str | None = None) -> None:
            k, v = self.record(record_type, {"GroupId": gid, **key}, value, 0, era)
            out.append(Event(ts, group.partition, k, v))

        add(K.CONSUMER_GROUP_METADATA, {}, {"Epoch": epoch, "MetadataHash": rng.getrandbits(62)})
        if group.options.get("partition_metadata", rng.random() < 0.3):
            add(
                K.CONSUMER_GROUP_PARTITION_METADATA,
                {},
                self._topic_metadata(group),
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
                {"TopicPartitions": self._assignment(group)},
            )
            add(
                K.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT,
                member,
                {
                    "MemberEpoch": epoch,
                    "PreviousMemberEpoch": epoch - 1,
                    "State": 0,
                    "AssignedPartitions": self._assignment(group),
                    "PartitionsPendingRevocation": [],
                },
            )
        return out

    def streams(self, group: Group, ts: int) -> list[Event]:
        gid = group.group_id
        out = []

        def add(record_type: int, key: dict, value: dict | None) -> None:
            k, v = self.record(record_type, {"GroupId": gid, **key}, value)
            out.append(Event(ts, group.partition, k, v))

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
                    "State": 0,
                    "ActiveTasks": tasks,
                    "StandbyTasks": [],
                    "WarmupTasks": [],
                    "ActiveTasksPendingRevocation": [],
                    "StandbyTasksPendingRevocation": [],
                    "WarmupTasksPendingRevocation": [],
                },
            )
        return out

    def share(self, group: Group, ts: int) -> list[Event]:
        gid = group.group_id
        out = []
        era_40 = group.options.get("era_40", self.rng.random() < 0.2)  # Kafka 4.0's preview layouts

        def add(record_type: int, key: dict, value: dict | None, era: str | None = None) -> None:
            k, v = self.record(record_type, {"GroupId": gid, **key}, value, 0, era)
            out.append(Event(ts, group.partition, k, v))

        if era_40:
            add(K.SHARE_GROUP_METADATA, {}, {"Epoch": 2}, era="4.0")
            add(
                K.SHARE_GROUP_PARTITION_METADATA,
                {},
                self._topic_metadata(group),
            )
        else:
            add(K.SHARE_GROUP_METADATA, {}, {"Epoch": 2, "MetadataHash": 99})
        add(K.SHARE_GROUP_TARGET_ASSIGNMENT_METADATA, {}, {"AssignmentEpoch": 2})
        initialized = [
            {"TopicId": self.topic_ids[t], "TopicName": t, "Partitions": list(range(self.topics[t]))}
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
        members = 0 if self.rng.random() < 0.3 else group.members
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
            add(K.SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER, member, {"TopicPartitions": self._assignment(group)})
            add(
                K.SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT,
                member,
                {
                    "MemberEpoch": 2,
                    "PreviousMemberEpoch": 1,
                    "State": 0,
                    "AssignedPartitions": self._assignment(group),
                },
            )
        return out

    def deletions(self, group: Group) -> list[Event]:
        """A deleted group (kafka-consumer-groups --delete after the dump's last commit): offset
        tombstones for every partition, then the group tombstone."""
        ts = END_MS + self.rng.randint(1, 60_000)
        out = [
            Event(ts, group.partition, self.commit_key(group, t, p), None)
            for t, n in group.topics.items()
            for p in range(n)
        ]
        out.append(
            Event(
                ts + 1,
                group.partition,
                encode_key(self.layouts[K.GROUP_METADATA], {"group": group.group_id}),
                None,
            )
        )
        return out

    def corrupt(self, count: int) -> list[Event]:
        """Records a broken producer, disk or copy could leave: each one must be quarantined or kept."""
        rng = self.rng
        g = self.groups[0]
        key = self.commit_key(g, next(iter(g.topics)), 0)
        good = self.commit_value(
            Group(g.group_id, g.kind, g.partition, g.topics, commit_version=3),
            next(iter(g.topics)),
            42,
            END_MS,
        )
        samples = [
            (key, good[:9]),  # truncated value
            (key, b"\x00\x09" + good[2:]),  # unknown value version
            (key[:5], good),  # truncated key
            (b"\x00", good),  # key shorter than its type
            (b"\x00\x01\x7f\xff" + key[4:], good),  # impossible group length
            (
                encode_key(self.layouts[K.GROUP_METADATA], {"group": g.group_id}),
                b"\x00\x03\x00\x08consumer\xff",
            ),
            (
                struct.pack(">h", 999) + b"\x00\x03abc",
                b"\x00\x00future",
            ),  # unknown type: kept in other_records
            (struct.pack(">h", 18) + b"\x00\x03abc", None),  # type 18 only existed on trunk
        ]
        return [Event(END_MS - rng.randint(0, SPAN_MS), g.partition, *samples[i % len(samples)]) for i in range(count)]


def _commit_chunks(
    world: World, total: int, tips: dict[tuple[str, int], list[int]] | None = None
) -> Iterator[list[Event]]:
    """Offset commits in time order, chunk by chunk, with offsets that only grow per partition. Once
    the last chunk is out, `tips` holds every committed topic partition's last offset of each key."""
    rng = world.np_rng
    committing = [g for g in world.groups if g.kind not in ("share",)]
    keys: list[tuple[Group, str, int]] = [(g, t, p) for g in committing for t, n in g.topics.items() for p in range(n)]
    # Most commit traffic comes from a minority of busy groups.
    weights = rng.pareto(1.5, len(keys)) + 0.05
    weights /= weights.sum()
    encoded_keys = [world.commit_key(g, t, p) for g, t, p in keys]
    offsets = rng.integers(0, 1 << 20, len(keys)).astype(np.int64)
    # A few partitions carry offsets beyond 2^53, where a double would lose digits.
    offsets[:: max(1, len(keys) // 5)] += 1 << 54
    start = END_MS - SPAN_MS
    done = 0
    committed_keys = np.zeros(len(keys), bool)
    while done < total:
        m = min(CHUNK, total - done)
        lo = start + (END_MS - start) * done // total
        hi = start + (END_MS - start) * (done + m) // total
        ts = np.sort(rng.integers(lo, max(hi, lo + 1), m))
        which = rng.choice(len(keys), m, p=weights)
        increments = rng.integers(1, 2000, m)
        order = np.lexsort((ts, which))
        sorted_which = which[order]
        cumulative = np.cumsum(increments[order])
        group_start = np.r_[0, np.flatnonzero(np.diff(sorted_which)) + 1]
        base = np.repeat(cumulative[group_start] - increments[order][group_start], np.diff(np.r_[group_start, m]))
        committed = np.empty(m, np.int64)
        committed[order] = offsets[sorted_which] + cumulative - base
        np.maximum.at(offsets, which, committed)
        committed_keys[which] = True
        events = []
        for i in range(m):
            group, topic, _ = keys[which[i]]
            metadata = "x" * 150 if which[i] % 97 == 0 else ("ckpt" if which[i] % 13 == 0 else "")
            events.append(
                Event(
                    int(ts[i]),
                    group.partition,
                    encoded_keys[which[i]],
                    world.commit_value(group, topic, int(committed[i]), int(ts[i]), metadata),
                )
            )
        done += m
        yield events
    if tips is not None:
        for k in np.flatnonzero(committed_keys):
            _, topic, partition = keys[k]
            tips.setdefault((topic, partition), []).append(int(offsets[k]))


def generate_dump(
    output: str,
    records: int,
    seed: int = 1,
    corrupt: int = 0,
    partitions: int = 10,
    end_offsets: str | None = None,
    start_offsets: str | None = None,
) -> dict[str, int]:
    """Write `records` records as Parquet files under `output`; returns counts of what was written.

    `end_offsets` and `start_offsets` name files to write what kafka-get-offsets.sh would print for the
    same cluster (`--time -1` and `--time -2`): see log_offsets."""
    world = World(records, seed, partitions)
    structural: list[Event] = []
    for group in world.groups:
        structural += world.structural(group)
    for group in world.groups:
        if group.kind == "deleted":
            structural += world.deletions(group)
    structural += world.corrupt(corrupt)
    structural = structural[:records]
    structural.sort(key=lambda e: e.ts)
    commits = max(0, records - len(structural))

    out = Path(output)
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("part-*.parquet"):
        old.unlink()
    next_offset = [0] * partitions
    written = 0
    s = 0
    file_index = 0

    def flush(events: list[Event]) -> None:
        nonlocal file_index, written
        events.sort(key=lambda e: e.ts)
        offsets = []
        for e in events:
            offsets.append(next_offset[e.partition])
            next_offset[e.partition] += 1
        table = pa.table(
            {
                "key": pa.array([e.key for e in events], pa.binary()),
                "value": pa.array([e.value for e in events], pa.binary()),
                "topic": pa.array([K.OFFSETS_TOPIC] * len(events), pa.string()),
                "partition": pa.array([e.partition for e in events], pa.int32()),
                "offset": pa.array(offsets, pa.int64()),
                "timestamp": pa.array([e.ts * 1000 for e in events], pa.timestamp("us", tz="UTC")),
                "timestampType": pa.array([0] * len(events), pa.int32()),
            },
            schema=SNAPSHOT_SCHEMA,
        )
        pq.write_table(table, out / f"part-{file_index:05d}.parquet", row_group_size=128_000)
        file_index += 1
        written += len(events)

    tips: dict[tuple[str, int], list[int]] = {}
    chunks = _commit_chunks(world, commits, tips) if commits else iter(())
    for chunk in chunks:
        horizon = chunk[-1].ts
        while s < len(structural) and structural[s].ts <= horizon:
            chunk.append(structural[s])
            s += 1
        flush(chunk)
    if s < len(structural):
        flush(structural[s:])
    counts = {"records": written, "groups": len(world.groups), "files": file_index, "partitions": partitions}
    ends = log_offsets(tips, seed)
    for path, column in ((end_offsets, 3), (start_offsets, 2)):
        if path:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            Path(path).write_text("".join(f"{row[0]}:{row[1]}:{row[column]}\n" for row in ends))
            counts["offset_partitions"] = len(ends)
    return counts


def log_offsets(tips: dict[tuple[str, int], list[int]], seed: int) -> list[tuple[str, int, int, int]]:
    """(topic, partition, log start offset, log end offset) of every topic partition with committed
    offsets, by topic and partition: the log end at or past the newest commit, a quarter of the
    partitions caught up (lag 0), the others up to 4,999 records behind; the log start 0, except on about
    one partition in nine whose retention deleted records a group had not read yet (offset_out_of_range).
    Deterministic: from the seed and the partition's name, never the generator's random stream, so the
    dump's bytes are those of a run without these files."""
    rows = []
    for (topic, partition), committed in sorted(tips.items()):
        mix = zlib.crc32(f"{seed}:{topic}:{partition}".encode())
        lag = 0 if mix % 4 == 0 else 1 + (mix >> 4) % 4999
        # The few commits past 2^54 (there to test exact integers) would otherwise make every other
        # group of their partition 10^16 records behind; the log ends past the ordinary ones.
        ordinary = [c for c in committed if c < 1 << 53] or committed
        log_end = max(ordinary) + lag
        log_start = 0
        if mix % 9 == 1:
            log_start = min(ordinary) + 1
            log_end = max(log_end, log_start)
        rows.append((topic, partition, log_start, log_end))
    return rows


def snapshot_to_segments(
    snapshot: str,
    output: str,
    batch_records: int = 1,
    compression: str = "none",
    segment_bytes: int | None = None,
    topic: str = K.OFFSETS_TOPIC,
) -> dict[str, int]:
    """Rewrite a Kafka-source snapshot as a broker's data directory: `<topic>-N/*.log` (the snapshot's
    records of one internal topic: __consumer_offsets, or __share_group_state).

    The coordinator appends most records one batch each, so `batch_records` defaults to 1; larger
    batches (and compression) show how the reader copes with other producers' shapes."""
    from offset_audit.inputs.segments.writer import SEGMENT_BYTES, write_partition

    files = sorted(Path(snapshot).glob("part-*.parquet"))
    partitions = sorted(
        {p for f in files for p in pq.read_table(f, columns=["partition"]).column("partition").unique().to_pylist()}
    )

    def records_of(partition: int) -> Iterator[tuple[int, bytes | None, bytes | None, int]]:
        for file in files:
            table = pq.read_table(file, columns=["key", "value", "partition", "offset", "timestamp"])
            table = table.filter(pc.equal(table.column("partition"), partition))
            stamps = table.column("timestamp").cast(pa.int64()).to_numpy() // 1000
            yield from zip(
                table.column("offset").to_pylist(),
                table.column("key").to_pylist(),
                table.column("value").to_pylist(),
                stamps.tolist(),
                strict=True,
            )

    segments = 0
    for partition in partitions:
        folder = Path(output) / f"{topic}-{partition}"
        segments += len(
            write_partition(folder, records_of(partition), batch_records, compression, segment_bytes or SEGMENT_BYTES)
        )
    return {"partitions": len(partitions), "segments": segments}


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
    from offset_audit.coordinator.partitioner import java_string_hash
    from offset_audit.layouts.spec import share_state_layouts

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
    states = {k: {"start": 0, "batches": [], "epoch": 0, "updates": 0, "created": start} for k in keys}
    events: list[tuple[int, int, bytes, bytes | None]] = []

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
            update = {"StartOffset": s["start"], "StateBatches": [batch]}
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
    rows = {"key": [], "value": [], "partition": [], "offset": [], "timestamp": []}
    for ts, k, key, value in events:
        partition = abs(java_string_hash(f"{k[0]}:{k[1]}:{k[2]}")) % partitions
        rows["key"].append(key)
        rows["value"].append(value)
        rows["partition"].append(partition)
        rows["offset"].append(next_offset[partition])
        rows["timestamp"].append(ts * 1000)
        next_offset[partition] += 1
    out = Path(output)
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("part-*.parquet"):
        old.unlink()
    table = pa.table(
        {
            "key": pa.array(rows["key"], pa.binary()),
            "value": pa.array(rows["value"], pa.binary()),
            "topic": pa.array(["__share_group_state"] * len(events), pa.string()),
            "partition": pa.array(rows["partition"], pa.int32()),
            "offset": pa.array(rows["offset"], pa.int64()),
            "timestamp": pa.array(rows["timestamp"], pa.timestamp("us", tz="UTC")),
            "timestampType": pa.array([0] * len(events), pa.int32()),
        },
        schema=SNAPSHOT_SCHEMA,
    )
    pq.write_table(table, out / "part-00000.parquet", row_group_size=128_000)
    return {"records": len(events), "share_partitions": len(keys), "partitions": partitions}
