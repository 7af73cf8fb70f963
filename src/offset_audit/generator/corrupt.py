"""Records a broken producer, disk or copy could leave (`generate --corrupt N`)."""

from __future__ import annotations

import struct

from offset_audit import constants as K
from offset_audit.generator.world import END_MS, SPAN_MS, Event, Group, World


def corrupt_records(world: World, count: int) -> list[Event]:
    """Records a broken producer, disk or copy could leave: each one must be quarantined or kept."""
    rng = world.rng
    g = world.groups[0]
    key = world.commit_key(g, next(iter(g.topics)), 0)
    good = world.commit_value(
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
            world.record_key(K.GROUP_METADATA, {"group": g.group_id}),
            b"\x00\x03\x00\x08consumer\xff",
        ),
        (
            struct.pack(">h", 999) + b"\x00\x03abc",
            b"\x00\x00future",
        ),  # unknown type: kept in other_records
        (struct.pack(">h", 18) + b"\x00\x03abc", None),  # type 18 only existed on trunk
    ]
    return [Event(END_MS - rng.randint(0, SPAN_MS), g.partition, *samples[i % len(samples)]) for i in range(count)]
