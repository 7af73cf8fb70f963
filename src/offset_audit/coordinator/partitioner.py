"""Which __consumer_offsets partition holds a group (reference 1.1)."""

from __future__ import annotations


def java_string_hash(text: str) -> int:
    """java.lang.String.hashCode: 31*h + c over UTF-16 code units, wrapping at 32 bits."""
    h = 0
    encoded = text.encode("utf-16-be")
    for i in range(0, len(encoded), 2):
        h = (31 * h + ((encoded[i] << 8) | encoded[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for(group_id: str, partitions: int = 50) -> int:
    """Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions; Utils.abs maps MIN_VALUE to 0."""
    h = java_string_hash(group_id)
    return (0 if h == -(1 << 31) else abs(h)) % partitions
