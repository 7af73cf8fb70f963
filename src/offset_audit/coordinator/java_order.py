"""The iteration order of java.util.HashMap and HashSet, for the assignors that depend on it.

Kafka 4.2's SimpleAssignor builders decide which partitions a member gives up, and which member takes
a spare one, by walking HashMaps and HashSets of member ids, member indices, partition ids and
TopicIdPartitions. To recompute their answer, the walk must be the one the JVM makes: buckets in
ascending index (the key's spread hash masked by the table length), and within one bucket the order
keys arrived in: last for put, first for computeIfAbsent. A table doubles when it holds more than three
quarters of its length (put checks after adding a key, computeIfAbsent before), and each bucket splits
in two keeping that relative order. (Java also turns a bucket of eight or more keys into a tree in
tables of 64 or more; keys that collide that much do not occur in an assignment.)
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable, Hashable, Iterable, Iterator

from offset_audit.coordinator.partitioner import java_string_hash

_INT = 0xFFFFFFFF


def _int32(value: int) -> int:
    value &= _INT
    return value - (1 << 32) if value & 0x80000000 else value


def uuid_hash(topic_id: str) -> int:
    """org.apache.kafka.common.Uuid.hashCode: the high and low ints of mostSignificantBits ^ leastSignificantBits."""
    bits = uuid.UUID(topic_id).int
    x = (bits >> 64) ^ (bits & ((1 << 64) - 1))
    return _int32((x >> 32) ^ x)


def topic_partition_hash(key: tuple[str, int]) -> int:
    """server.common.TopicIdPartition, a record: 31 * topicId.hashCode() + partitionId."""
    topic_id, partition = key
    return _int32(31 * uuid_hash(topic_id) + partition)


def int_hash(key: int) -> int:
    """Integer.hashCode: the value."""
    return _int32(key)


def string_hash(key: str) -> int:
    return java_string_hash(key)


def table_size_for(capacity: int) -> int:
    """HashMap.tableSizeFor: the smallest power of two at least `capacity` (at least 1)."""
    size = 1
    while size < capacity:
        size <<= 1
    return size


def expected_size_capacity(count: int) -> int:
    """AssignorHelpers.newHashMap / newHashSet: (int) ((count + 1) / 0.75f + 1)."""
    return int((count + 1) / 0.75 + 1)


def copy_capacity(count: int) -> int:
    """new HashSet<>(collection): Math.max((int) (size / .75f) + 1, 16)."""
    return max(int(count / 0.75) + 1, 16)


class JavaHashSet:
    """A java.util.HashSet (a HashMap's key set): `add`, `remove` and iteration as the JVM does them.

    `capacity` is the constructor's initial capacity; None is `new HashSet<>()` (16).
    """

    def __init__(self, hash_of: Callable, capacity: int | None = None, items: Iterable[Hashable] = ()) -> None:
        self._hash_of = hash_of
        self._length = 16 if capacity is None else table_size_for(capacity)
        self._buckets: list[list[Hashable]] = [[] for _ in range(self._length)]
        self._members: set[Hashable] = set()
        for item in items:
            self.add(item)

    def _bucket(self, item: Hashable, length: int) -> int:
        h = self._hash_of(item) & _INT
        return (h ^ (h >> 16)) & (length - 1)

    def add(self, item: Hashable) -> bool:
        """put: a new key goes last in its bucket, and the table doubles once it holds too many."""
        if item in self._members:
            return False
        self._members.add(item)
        self._buckets[self._bucket(item, self._length)].append(item)
        if self._over_threshold():
            self._resize()
        return True

    def add_if_absent(self, item: Hashable) -> bool:
        """computeIfAbsent: the table doubles first if it already holds too many (whether or not the key is
        new), and a new key goes first in its bucket (newNode(hash, key, value, first))."""
        if self._over_threshold():
            self._resize()
        if item in self._members:
            return False
        self._members.add(item)
        self._buckets[self._bucket(item, self._length)].insert(0, item)
        return True

    def _over_threshold(self) -> bool:
        return len(self._members) > int(self._length * 0.75)

    def _resize(self) -> None:
        length = self._length * 2
        buckets: list[list[Hashable]] = [[] for _ in range(length)]
        for bucket in self._buckets:
            for item in bucket:
                buckets[self._bucket(item, length)].append(item)
        self._length, self._buckets = length, buckets

    def remove(self, item: Hashable) -> bool:
        if item not in self._members:
            return False
        self._members.remove(item)
        self._buckets[self._bucket(item, self._length)].remove(item)
        return True

    def __contains__(self, item: object) -> bool:
        return item in self._members

    def __len__(self) -> int:
        return len(self._members)

    def __iter__(self) -> Iterator:
        """A snapshot: removing the current item, as Iterator.remove does, changes nothing ahead."""
        return iter([item for bucket in self._buckets for item in bucket])


class JavaHashMap:
    """A java.util.HashMap: its keys walk as a JavaHashSet's, each with its value."""

    def __init__(self, hash_of: Callable, capacity: int | None = None) -> None:
        self._keys = JavaHashSet(hash_of, capacity)
        self._values: dict = {}

    def get(self, key, default=None):
        return self._values.get(key, default)

    def setdefault(self, key, factory: Callable):
        """computeIfAbsent, which links a new key first in its bucket (HashMap.computeIfAbsent: newNode(hash,
        key, value, first)), where put links it last."""
        if self._keys.add_if_absent(key):
            self._values[key] = factory()
        return self._values[key]

    def __contains__(self, key: object) -> bool:
        return key in self._values

    def items(self) -> list[tuple]:
        return [(key, self._values[key]) for key in self._keys]


def hash_map_keys(keys: Iterable[Hashable], hash_of: Callable, capacity: int | None = None) -> list:
    """The order a HashMap (or HashSet) filled with `keys`, in that order, walks them."""
    return list(JavaHashSet(hash_of, capacity, keys))


_FIBONACCI = -7046029254386353131  # BaseHashTable.findSlot's multiplier (Knuth's multiplicative hashing)
_LONG = (1 << 64) - 1


class TimelineKeys:
    """The keys of an org.apache.kafka.timeline.TimelineHashMap, walked as the coordinator walks its group's
    members (the latest epoch: BaseHashTable's slots in ascending order, each slot's keys from the last
    that came to the first, removals keeping the others' order).

    A slot is the top bits of the key's hashCode times a Fibonacci constant, not HashMap's low bits, so two
    members sharing a HashMap bucket walk here in the order of their slots, not of their arrival. The table
    starts at `expected_size`'s capacity (TimelineHashMap(registry, 0): 2) and doubles before a put that
    would take it past three quarters full, re-slotting the keys slot by slot, each slot's in the order
    they came.
    """

    def __init__(self, hash_of: Callable, expected_size: int = 0) -> None:
        self._hash_of = hash_of
        wanted = math.ceil(expected_size / 0.75)
        self._slots: list[list[Hashable]] = [[] for _ in range(max(2, table_size_for(wanted) if wanted else 0))]
        self._keys: set[Hashable] = set()

    def _slot(self, key: Hashable, length: int) -> int:
        shift = 65 - length.bit_length()
        return ((_int32(self._hash_of(key)) * _FIBONACCI) & _LONG) >> shift

    def add(self, key: Hashable) -> None:
        """baseAddOrReplace: a key already there keeps its place, a new one goes last in its slot; either
        way the table first doubles if one more key would fill it past three quarters."""
        if (len(self._keys) + 1) * 0.75 > len(self._slots):
            slots: list[list[Hashable]] = [[] for _ in range(len(self._slots) * 2)]
            for old in (k for slot in self._slots for k in slot):  # rehash: unpackSlot's order
                slots[self._slot(old, len(slots))].append(old)
            self._slots = slots
        if key in self._keys:
            return
        self._keys.add(key)
        self._slots[self._slot(key, len(self._slots))].append(key)

    def remove(self, key: Hashable) -> None:
        if key in self._keys:
            self._keys.remove(key)
            self._slots[self._slot(key, len(self._slots))].remove(key)

    def __iter__(self) -> Iterator:
        """CurrentIterator: unpacks a slot, then hands out its keys from the last."""
        return iter([key for slot in self._slots for key in reversed(slot)])
