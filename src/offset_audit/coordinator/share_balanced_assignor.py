"""The share groups' SimpleAssignor of Kafka 4.2 and later: balanced, sticky, without hashing.

Kafka 4.2 replaced 4.1's hash-and-round-robin assignor (`offset_audit.coordinator.share_assignor`) with two builders
(group-coordinator, coordinator/group/assignor: SimpleHomogeneousAssignmentBuilder and
SimpleHeterogeneousAssignmentBuilder, unchanged to 4.4.0). Both balance two numbers:
- members per partition: s = ceil(members / partitions), so that with more members than partitions
  every partition is shared by s members and otherwise read by one;
- partitions per member: s * partitions spread over the members in their order, the earlier members
  taking the larger shares (x = s * P / N; the k-th member takes ceil(x * (k + 1)) - ceil(x * k)).
Starting from the previous target assignment, each member keeps what it holds, gives up partitions of
topics it no longer subscribes to, then partitions past its share, then places on partitions shared by
too many members; the partitions left short are dealt to the members still short, in rounds.
A homogeneous group (every member subscribes to the same topics) is balanced over all its partitions,
a heterogeneous one topic by topic, among that topic's subscribers.

Which partition a member gives up and which member takes a spare one follow the JVM's iteration of the
builders' HashMaps and HashSets, emulated by `offset_audit.coordinator.java_order`. The members walk in the
order of the HashMap of member ids the broker builds (`member_order`, filled in the walk of the group's
own map of members), the previous assignment as the coordinator holds it after loading its records
(Assignment.fromRecord). Partitions are keyed by topic id, as the broker keys them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

from offset_audit.coordinator.java_order import (
    JavaHashMap,
    JavaHashSet,
    copy_capacity,
    expected_size_capacity,
    hash_map_keys,
    int_hash,
    string_hash,
    topic_partition_hash,
    uuid_hash,
)
from offset_audit.coordinator.share_assignor import ShareAssignorError

TopicIdPartition = tuple[str, int]
# A member's assignment as the broker holds it: topic id -> partitions, both in the JVM's walk order.
HeldAssignment = list[tuple[str, list[int]]]


def member_order(member_ids: Iterable[str], inserted: Sequence[str] = ()) -> list[str]:
    """The walk of TargetAssignmentBuilder's `new HashMap<>()` of member ids (GroupSpec.memberIds).

    Members whose ids share a bucket walk in the order the broker put them: the walk of the group's
    TimelineHashMap of members (which replaying the log rebuilds: `java_order.TimelineKeys`), then a
    member whose join started the computation. `inserted` gives that order; members missing from it
    follow, sorted.
    """
    members = set(member_ids)
    known = [m for m in dict.fromkeys(inserted) if m in members]
    return hash_map_keys([*known, *sorted(members.difference(known))], string_hash)


def held_assignment(record_order: Sequence[tuple[str, Sequence[int]]]) -> HeldAssignment:
    """A member's assignment as Assignment.fromRecord holds it: a HashMap of topic ids (Collectors.toMap),
    each to `new HashSet<>(partitions)`, filled in the record's order."""
    partitions = dict(record_order)
    topics = hash_map_keys([topic for topic, _ in record_order], uuid_hash)
    return [(t, hash_map_keys(partitions[t], int_hash, copy_capacity(len(partitions[t])))) for t in topics]


def subscribed_topic_ids(names: Iterable[str], topic_ids: Mapping[str, str]) -> list[str]:
    """A member's subscribedTopicIds: its topic names (a HashSet<String>) resolved to ids, unknown names
    skipped, in the names' walk order."""
    return [topic_ids[name] for name in hash_map_keys(sorted(set(names)), string_hash) if name in topic_ids]


def desired_counts(sharing: int, partitions: int, members: int) -> list[int]:
    """Partitions per member position: ceil(x * (k + 1)) - ceil(x * k) with x = sharing * partitions /
    members in doubles, as the builders compute it (the int product first)."""
    x = (sharing * partitions) / members
    return [math.ceil(x * (k + 1)) - math.ceil(x * k) for k in range(members)]


def _sharing(members: int, partitions: int) -> int:
    return 0 if partitions == 0 else (members + partitions - 1) // partitions


def _targets(topic_ids: Iterable[str], partitions: Mapping[str, int], assignable) -> list[TopicIdPartition]:
    """computeTargetPartitions: each topic's assignable partitions, ascending. A subscribed topic without
    metadata makes the broker's assignor fail (PartitionAssignorException); such names never resolve
    to an id here, so they are not subscribed topics."""
    allowed = None if assignable is None else {t: set(p) for t, p in assignable.items()}
    return [
        (topic, p)
        for topic in topic_ids
        for p in range(partitions.get(topic, 0))
        if allowed is None or p in allowed.get(topic, ())
    ]


class _Assignments:
    """oldGroupAssignment and the copies newGroupAssignment makes of it on the first change."""

    def __init__(self, old: list[HeldAssignment]) -> None:
        self.old = old
        self.new: dict[int, dict[str, set[int]]] = {}

    def copy(self, index: int) -> dict[str, set[int]]:
        if index not in self.new:
            self.new[index] = {topic: set(parts) for topic, parts in self.old[index]}
        return self.new[index]

    def result(self, index: int) -> set[TopicIdPartition]:
        held = self.new[index] if index in self.new else {t: set(p) for t, p in self.old[index]}
        return {(topic, p) for topic, parts in held.items() for p in parts}


def assign_balanced(
    members: Mapping[str, Iterable[str]],
    partitions: Mapping[str, int],
    previous: Mapping[str, Sequence[tuple[str, Sequence[int]]]] | None = None,
    *,
    assignable: Mapping[str, Iterable[int]] | None = None,
    homogeneous: bool | None = None,
    inserted: Sequence[str] = (),
) -> dict[str, set[TopicIdPartition]]:
    """The target assignment, by topic id: member id -> {(topic id, partition)}, every member present.

    `members`: member id -> subscribed topic ids (already resolved; see `subscribed_topic_ids`).
    `partitions`: topic id -> partition count. `previous`: member id -> its previous target assignment
    as records hold it, [(topic id, [partitions])] in record order. `assignable`: the initialised
    partitions (None: all). `homogeneous` defaults to "every member subscribes to the same topics".
    `inserted`: what is known of the order the broker put the members in (see `member_order`).
    A group whose subscriptions are all empty gets no assignment at all: every member holds nothing.
    """
    order = member_order(members, inserted)
    if not order:
        return {}
    subscriptions = {member: list(members[member]) for member in order}
    if homogeneous is None:
        homogeneous = len({frozenset(topics) for topics in subscriptions.values()}) == 1
    previous = previous or {}
    state = _Assignments([held_assignment(previous.get(member, ())) for member in order])
    if homogeneous:
        if not subscriptions[order[0]]:
            return {member: set() for member in order}
        _Homogeneous(order, subscriptions[order[0]], partitions, assignable, state).build()
    else:
        topics = JavaHashSet(uuid_hash)
        for member in order:
            for topic in subscriptions[member]:
                topics.add(topic)
        if not len(topics):
            return {member: set() for member in order}
        subscribers: dict[str, list[int]] = {}
        for index, member in enumerate(order):
            for topic in subscriptions[member]:
                subscribers.setdefault(topic, []).append(index)
        for topic in topics:
            targets = [p for _, p in _targets([topic], partitions, assignable)]
            _TopicBuilder(topic, targets, subscribers[topic], len(order), state).build()
    return {member: state.result(index) for index, member in enumerate(order)}


class _Homogeneous:
    """SimpleHomogeneousAssignmentBuilder."""

    def __init__(self, order, topics, partitions, assignable, state: _Assignments) -> None:
        self.count = len(order)
        self.topics = set(topics)
        self.targets = _targets(topics, partitions, assignable)
        self.sharing = _sharing(self.count, len(self.targets))
        self.desired = desired_counts(self.sharing, len(self.targets), self.count)
        self.state = state
        self.by_partition = JavaHashMap(topic_partition_hash, expected_size_capacity(len(self.targets)))
        self.by_member = JavaHashMap(int_hash, expected_size_capacity(self.count))
        self.unfilled = JavaHashSet(int_hash, expected_size_capacity(self.count))
        self.overfilled = JavaHashSet(int_hash, expected_size_capacity(self.count))

    def build(self) -> None:
        self._keep_subscribed()
        self._revoke_overfilled()
        self._revoke_overshared()
        for target in self.targets:
            self.by_partition.setdefault(target, lambda: JavaHashSet(int_hash))
        _deal(self.by_partition, self.unfilled, self.sharing, self._give)

    def _keep_subscribed(self) -> None:
        for index in range(self.count):
            held = 0
            for topic, parts in self.state.old[index]:
                if topic in self.topics:
                    for p in parts:
                        held += 1
                        self.by_partition.setdefault((topic, p), lambda: JavaHashSet(int_hash)).add(index)
                        self.by_member.setdefault(index, lambda: JavaHashSet(topic_partition_hash)).add((topic, p))
                else:
                    self.state.copy(index).pop(topic, None)
            if held < self.desired[index]:
                self.unfilled.add(index)
            elif held > self.desired[index]:
                self.overfilled.add(index)

    def _revoke_overfilled(self) -> None:
        for index in self.overfilled:
            _give_up_extra(index, self.by_member.get(index), self.desired[index], self.by_partition, self.state, _same)

    def _revoke_overshared(self) -> None:
        _revoke_overshared(self.by_partition, self.sharing, self.by_member, self.state, _same, self.unfilled)

    def _give(self, index: int, target: TopicIdPartition) -> bool:
        self.state.copy(index).setdefault(target[0], set()).add(target[1])
        held = self.by_member.setdefault(index, lambda: JavaHashSet(topic_partition_hash))
        held.add(target)
        return len(held) >= self.desired[index]


class _TopicBuilder:
    """SimpleHeterogeneousAssignmentBuilder's TopicAssignmentPartialBuilder: one topic among its subscribers."""

    def __init__(self, topic: str, targets: list[int], subscribers: list[int], count: int, state) -> None:
        self.topic = topic
        self.targets = targets
        self.subscribers = subscribers
        self.state = state
        self.sharing = _sharing(len(subscribers), len(targets))
        self.desired = [0] * count
        for position, share in enumerate(desired_counts(self.sharing, len(targets), len(subscribers))):
            self.desired[subscribers[position]] = share
        self.count = count
        self.by_partition = JavaHashMap(int_hash, expected_size_capacity(len(targets)))
        self.by_member = JavaHashMap(int_hash, expected_size_capacity(len(subscribers)))

    def build(self) -> None:
        for index in range(self.count):
            parts = dict(self.state.old[index]).get(self.topic)
            for p in parts or ():
                self.by_partition.setdefault(p, lambda: JavaHashSet(int_hash)).add(index)
                self.by_member.setdefault(index, lambda: JavaHashSet(int_hash)).add(p)
        for index, held in self.by_member.items():
            _give_up_extra(index, held, self.desired[index], self.by_partition, self.state, self._of_topic)
        _revoke_overshared(self.by_partition, self.sharing, self.by_member, self.state, self._of_topic)
        capacity = expected_size_capacity(len(self.subscribers))
        for p in self.targets:
            self.by_partition.setdefault(p, lambda: JavaHashSet(int_hash, capacity))
        unfilled = JavaHashSet(int_hash, expected_size_capacity(self.count))
        for index in self.subscribers:
            held = self.by_member.get(index)
            if (0 if held is None else len(held)) < self.desired[index]:
                unfilled.add(index)
        _deal(self.by_partition, unfilled, self.sharing, self._give)

    def _of_topic(self, p: int) -> TopicIdPartition:
        return (self.topic, p)

    def _give(self, index: int, p: int) -> bool:
        self.state.copy(index).setdefault(self.topic, set()).add(p)
        held = self.by_member.setdefault(index, lambda: JavaHashSet(int_hash))
        held.add(p)
        return len(held) >= self.desired[index]


def _same(target: TopicIdPartition) -> TopicIdPartition:
    return target


def _give_up_extra(index: int, held: JavaHashSet, desired: int, by_partition: JavaHashMap, state, where) -> None:
    """revokeOverfilledMembers, for one member: it gives up its partitions in the walk of its set until it
    holds its share. The builders key partitions differently; `where(key)` is the (topic, partition)."""
    for key in held:
        if len(held) <= desired:
            break
        topic, partition = where(key)
        state.copy(index)[topic].discard(partition)
        by_partition.get(key).remove(index)
        held.remove(key)


def _revoke_overshared(by_partition: JavaHashMap, sharing: int, by_member: JavaHashMap, state, where, unfilled=None):
    """revokeOversharedPartitions: a partition held by more than `sharing` members is given up by the
    holders first in its walk until `sharing` remain; the homogeneous builder marks them `unfilled`."""
    for key, holders in by_partition.items():
        count = len(holders)
        if count <= sharing:
            continue
        topic, partition = where(key)
        for index in holders:
            parts = state.copy(index).get(topic)
            if parts is not None and partition in parts:
                parts.discard(partition)
                count -= 1
                holders.remove(index)
                by_member.get(index).remove(key)
                if unfilled is not None:
                    unfilled.add(index)
            if count <= sharing:
                break


def _deal(by_partition: JavaHashMap, unfilled: JavaHashSet, sharing: int, give) -> None:
    """assignRemainingPartitions: each partition short of `sharing` members takes the next members still
    short of their share, in rounds over them; a round that places nothing ends the partition's turn.
    `give(member, partition)` says whether the member's share is now full. The broker's loop fails where
    it would start a round over no member; so does this (ShareAssignorError)."""
    if not len(unfilled):
        return
    walk = iter(unfilled)
    placed_this_round = False
    for target, holders in by_partition.items():
        wanted = sharing - len(holders)
        while wanted > 0:
            index = next(walk, None)
            if index is None:
                if not placed_this_round:
                    break
                walk = iter(unfilled)
                placed_this_round = False
                index = next(walk, None)
                if index is None:
                    # Every member is full while this partition is short: partitions a member holds past
                    # the topic's targets (uninitialised, or past its count) counted towards its share.
                    raise ShareAssignorError(
                        "NoSuchElementException: no member short of its share is left for a partition short of members"
                    )
            if index in holders:
                continue
            wanted -= 1
            placed_this_round = True
            if give(index, target):
                unfilled.remove(index)
        if not len(unfilled):
            return
