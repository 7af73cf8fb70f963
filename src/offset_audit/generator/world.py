"""The groups and topics of one generated cluster, and the bytes of their keys and values.

Everything is drawn from one seeded random stream, in a fixed order, so a seed always gives the same
dump byte for byte: the modules that write each kind of group draw from `World.rng` in turn.
"""

from __future__ import annotations

import random
import struct
import uuid
from dataclasses import dataclass, field

import numpy as np

from offset_audit import constants as K
from offset_audit.coordinator.partitioner import partition_for
from offset_audit.layouts.encoder import encode_key, encode_value, uvarint
from offset_audit.layouts.spec import record_layouts

DAY_MS = 86_400_000
END_MS = 1_793_000_000_000  # 2026-10-26: fixed so a seed always gives the same bytes
SPAN_MS = 30 * DAY_MS
RETENTION_MS = 7 * DAY_MS

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

    def __init__(self, records: int, seed: int, partitions: int, topic_scale: int = 1) -> None:
        self.rng = random.Random(seed)
        self.np_rng = np.random.default_rng(seed)
        self.partitions = partitions
        self.layouts = record_layouts()
        n_groups = max(len(KINDS) + len(FIRST_GROUPS), records // 2500)
        n_topics = max(8, n_groups // 6)
        # topic_scale multiplies each topic's partitions, not the draws: the same seed gives the same
        # groups and topics, only wider (millions of live offsets at 20M records with 30)
        self.topics = {_topic_name(i): self.rng.choice((1, 3, 6, 12, 24)) * topic_scale for i in range(n_topics)}
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

    def record_key(self, record_type: int, key: dict) -> bytes:
        return encode_key(self.layouts[record_type], key)

    def record(
        self, record_type: int, key: dict, value: dict | None, version: int = 0, era: str | None = None
    ) -> tuple[bytes, bytes | None]:
        layout = self.layouts[record_type]
        encoded = None if value is None else encode_value(layout, version, value, era=era)
        return self.record_key(record_type, key), encoded

    # What KIP-848 consumer groups and share groups write about their topics -------------------------

    def assignment_by_id(self, group: Group) -> list[dict]:
        """Every partition of the subscribed topics, by topic id (a target or current assignment)."""
        return [{"TopicId": self.topic_ids[t], "Partitions": list(range(self.topics[t]))} for t in group.subscribed]

    def topic_metadata(self, group: Group) -> dict:
        """ConsumerGroupPartitionMetadata / ShareGroupPartitionMetadata value for the subscribed topics."""
        return {
            "Topics": [
                {"TopicId": self.topic_ids[t], "TopicName": t, "NumPartitions": self.topics[t], "PartitionMetadata": []}
                for t in group.subscribed
            ]
        }


@dataclass
class GroupRecords:
    """The records of one KIP-848, streams or share group written at one time, each keyed by its GroupId."""

    world: World
    group: Group
    ts: int
    events: list[Event] = field(default_factory=list)

    def add(self, record_type: int, key: dict, value: dict | None, era: str | None = None) -> None:
        k, v = self.world.record(record_type, {"GroupId": self.group.group_id, **key}, value, 0, era)
        self.events.append(Event(self.ts, self.group.partition, k, v))
