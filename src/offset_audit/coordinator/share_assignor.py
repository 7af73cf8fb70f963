"""The target assignment a share group's coordinator computes, and how a stored one measures up (KIP-932).

`assign` follows Kafka 4.1's SimpleAssignor (group-coordinator, coordinator/group/assignor) step by step,
so an audit can recompute what the coordinator should have written to `__consumer_offsets` and `compare`
it with the ShareGroupTargetAssignmentMember records it did write. Share groups let several members read
one partition, so the assignor's aim is that every subscribed partition has at least one member, not that
each partition has exactly one.

Homogeneous group (every member subscribes to the same topics), in the broker's order:
  1. each member's id is hashed onto the list of subscribed partitions: index = Math.abs(hashCode % n);
  2. a member keeps a partition from its current assignment while it holds fewer than
     ceil(partitions / members) and no member hashed onto that partition;
  3. partitions still without a member go round-robin, a member taking at most one over that count.
Heterogeneous group: each member is hashed onto its own subscribed partitions; partitions that neither the
hashing nor the current assignment covers go round-robin among that topic's subscribers; then every
member keeps its current partitions of topics it still subscribes to, unless hashing or round-robin gave
the partition out. There is no count bound in this case.

Order. Kafka iterates `groupSpec.memberIds()`, the key set of a java.util.HashMap, and each member's
topics in the order of a java.util.HashSet of topic names: bucket order of String.hashCode, stable within
one broker but not a natural order. The steps that depend on it are the round-robin (who gets the first
spare partition), the count bound of step 2 (who keeps a partition first) and, for a member subscribed
to several topics, where hashing lands (the list it indexes is topics in that order, partitions
ascending). This module takes one explicit `order` for member ids and topic names, `sorted` by default:
a replayed group arrives from Spark rows in no stable order, so insertion order would make the expected
assignment change from run to run, while sorting makes it a function of the group's state alone. A caller
who knows the broker's order can pass it. Current partitions are visited sorted by (topic, partition)
where Kafka walks a HashMap.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from offset_audit.coordinator.partitioner import java_string_hash

TopicPartition = tuple[str, int]
Assignment = dict[str, set[TopicPartition]]
Order = Callable[[Iterable[str]], list[str]]


class ShareAssignorError(RuntimeError):
    """Kafka's PartitionAssignorException: the round-robin ran out of members with room (a bug, not input)."""


def member_hash_index(
    member_id: str, partition_count: int, member_hash: Callable[[str], int] = java_string_hash
) -> int:
    """Math.abs(memberId.hashCode() % n): Java's % keeps the dividend's sign, so this is |hash| mod n.

    Taking abs after the remainder, as Java does, also keeps Integer.MIN_VALUE in range.
    """
    return abs(member_hash(member_id)) % partition_count


def subscribed_partitions(
    topics: Iterable[str],
    partitions: Mapping[str, int],
    assignable: Mapping[str, Iterable[int]] | None = None,
    order: Order = sorted,
) -> list[TopicPartition]:
    """The partitions a subscription covers, in the list order hashing indexes (computeTargetPartitions).

    Topics missing from `partitions` are skipped: the broker resolves subscribed names to topic ids through
    its metadata, and names it cannot resolve never reach the assignor. `assignable` mirrors 4.1's
    topicPartitionAllowedMap: only partitions whose share-group state is initialised may be assigned;
    None means every partition may (the broker's Optional.empty()).
    """
    allowed = None if assignable is None else {topic: set(ids) for topic, ids in assignable.items()}
    return [
        (topic, partition)
        for topic in order(set(topics))
        if topic in partitions
        for partition in range(partitions[topic])
        if allowed is None or partition in allowed.get(topic, ())
    ]


def hash_members(
    member_ids: Iterable[str],
    targets: list[TopicPartition],
    by_partition: dict[TopicPartition, list[str]],
    member_hash: Callable[[str], int] = java_string_hash,
) -> None:
    """Step 1: one partition per member by hash; two members may land on the same partition."""
    if not targets:
        return
    for member_id in member_ids:
        target = targets[member_hash_index(member_id, len(targets), member_hash)]
        by_partition.setdefault(target, []).append(member_id)


def round_robin(
    member_ids: list[str], targets: list[TopicPartition], by_partition: dict[TopicPartition, list[str]]
) -> None:
    """Heterogeneous round-robin: no bound, and each call starts again at the first member."""
    for position, target in enumerate(targets):
        by_partition.setdefault(target, []).append(member_ids[position % len(member_ids)])


def round_robin_with_count(
    member_ids: list[str], targets: list[TopicPartition], by_member: Assignment, desired_count: int
) -> None:
    """Homogeneous round-robin: a member may go one over `desired_count`; past that it leaves the rotation.

    The partition a full member declined goes to the next member in the rotation, as Kafka's
    iterator.remove() followed by listIterator.previous() does.
    """
    rotation = list(member_ids)
    position = 0
    pending = list(targets)
    while pending:
        if position >= len(rotation):
            if not rotation:
                raise ShareAssignorError("Inconsistent number of member IDs")
            position = 0
        member_id = rotation[position]
        held = by_member.setdefault(member_id, set())
        if len(held) <= desired_count:
            held.add(pending.pop(0))
            position += 1
        else:
            del rotation[position]


def assign(
    members: Mapping[str, set[str]],
    partitions: Mapping[str, int],
    current: Mapping[str, set[TopicPartition]] | None = None,
    member_hash: Callable[[str], int] = java_string_hash,
    *,
    assignable: Mapping[str, Iterable[int]] | None = None,
    order: Order = sorted,
) -> Assignment:
    """The target assignment SimpleAssignor computes: member id -> (topic, partition) set, every member present.

    `members` maps member id -> subscribed topic names, `partitions` topic -> partition count, `current`
    the previous target assignment. Entries of `current` for members no longer in the group are ignored,
    as the broker builds the current assignment from the group's members only. Kafka returns no entry for
    a member given nothing; the coordinator reads that as empty, so the empty set is returned here.
    """
    member_ids = list(order(members))
    if not member_ids:
        return {}
    spec = _GroupSpec(
        member_ids, members, partitions, _current_holders(current or {}, member_ids), member_hash, assignable, order
    )
    by_member = _assign_homogeneous(spec) if is_homogeneous(members) else _assign_heterogeneous(spec)
    return {member_id: by_member.get(member_id, set()) for member_id in member_ids}


@dataclass(frozen=True)
class _GroupSpec:
    """What the broker hands its assignor (GroupSpec and SubscribedTopicDescriber), with names for topic ids."""

    member_ids: list[str]
    subscriptions: Mapping[str, set[str]]
    partitions: Mapping[str, int]
    current_holders: dict[TopicPartition, list[str]]
    member_hash: Callable[[str], int]
    assignable: Mapping[str, Iterable[int]] | None
    order: Order

    def targets(self, topics: Iterable[str]) -> list[TopicPartition]:
        return subscribed_partitions(topics, self.partitions, self.assignable, self.order)


def is_homogeneous(members: Mapping[str, set[str]]) -> bool:
    """ModernGroup.subscriptionType: homogeneous when every subscribed name is subscribed by every member.

    Decided on names, before they are resolved to topics, as the broker does.
    """
    subscriptions = [frozenset(topics) for topics in members.values()]
    return all(subscription == subscriptions[0] for subscription in subscriptions)


def _current_holders(
    current: Mapping[str, set[TopicPartition]], member_ids: list[str]
) -> dict[TopicPartition, list[str]]:
    """Partition -> members holding it now, group members only, holders in member order."""
    holders: dict[TopicPartition, list[str]] = {}
    for member_id in member_ids:
        for held in current.get(member_id, ()):
            holders.setdefault(held, []).append(member_id)
    return {held: holders[held] for held in sorted(holders)}


def _assign_homogeneous(spec: _GroupSpec) -> Assignment:
    # Names the broker cannot resolve (deleted topics) drop out, so their partitions are not kept either.
    topics = {topic for topic in spec.subscriptions[spec.member_ids[0]] if topic in spec.partitions}
    targets = spec.targets(topics)
    desired_count = -(-len(targets) // len(spec.member_ids))
    hashed: dict[TopicPartition, list[str]] = {}
    hash_members(spec.member_ids, targets, hashed, spec.member_hash)

    by_member: Assignment = {member_id: set() for member_id in spec.member_ids}
    covered: set[TopicPartition] = set(hashed)
    for target, hashed_members in hashed.items():
        for member_id in hashed_members:
            by_member[member_id].add(target)
    # Kafka checks only that the topic is still subscribed, not that the partition is still a target.
    for held, holders in spec.current_holders.items():
        if held[0] not in topics or held in hashed:
            continue
        for member_id in holders:
            if len(by_member[member_id]) < desired_count:
                by_member[member_id].add(held)
                covered.add(held)

    spare = [target for target in targets if target not in covered]
    round_robin_with_count(spec.member_ids, spare, by_member, desired_count)
    return by_member


def _assign_heterogeneous(spec: _GroupSpec) -> Assignment:
    targets_by_member = {
        member_id: spec.targets(spec.subscriptions[member_id])
        for member_id in spec.member_ids
        if spec.subscriptions[member_id]
    }
    # A member counts as a topic's subscriber only through assignable partitions it was given to hash onto.
    subscribers: dict[str, dict[str, None]] = {}
    for member_id, targets in targets_by_member.items():
        for topic, _ in targets:
            subscribers.setdefault(topic, {})[member_id] = None

    given: dict[TopicPartition, list[str]] = {}
    for member_id, targets in targets_by_member.items():
        hash_members([member_id], targets, given, spec.member_hash)

    # A partition someone holds now is left out of the round-robin even if its holder no longer subscribes
    # to the topic; the keep step below then drops it, so it goes unassigned this round (Kafka 4.1 as shipped).
    spare_by_topic: dict[str, list[TopicPartition]] = {}
    for target in dict.fromkeys(target for targets in targets_by_member.values() for target in targets):
        if target not in given and target not in spec.current_holders:
            spare_by_topic.setdefault(target[0], []).append(target)
    for topic, spare in spare_by_topic.items():
        round_robin(list(subscribers[topic]), spare, given)

    by_member: Assignment = {member_id: set() for member_id in spec.member_ids}
    for target, given_members in given.items():
        for member_id in given_members:
            by_member[member_id].add(target)
    for held, holders in spec.current_holders.items():
        if held in given:
            continue
        for member_id in holders:
            if member_id in subscribers.get(held[0], {}):
                by_member[member_id].add(held)
    return by_member


@dataclass(frozen=True)
class MemberDifference:
    """Where a stored member assignment departs from the recomputed one."""

    member_id: str
    missing: frozenset[TopicPartition]
    """Expected for the member but not stored."""
    unexpected: frozenset[TopicPartition]
    """Stored for the member but not expected."""


@dataclass(frozen=True)
class AssignmentReport:
    """A stored target assignment measured against what the assignor computes.

    `unassigned_partitions` and `members_without_partitions` describe the stored assignment alone and are
    problems in their own right: nobody consumes those partitions, or those members idle. `differences`
    only say where to look: a broker whose member or topic order differs from the one `assign` used (see
    the module notes) can legitimately store a different assignment.
    """

    unassigned_partitions: tuple[TopicPartition, ...]
    members_without_partitions: tuple[str, ...]
    differences: tuple[MemberDifference, ...]

    @property
    def matches(self) -> bool:
        return not self.differences


def compare(
    expected: Mapping[str, set[TopicPartition]],
    stored: Mapping[str, set[TopicPartition]],
    subscribed: Iterable[TopicPartition] | None = None,
) -> AssignmentReport:
    """Measure a stored target assignment against the expected one.

    `subscribed` is every partition the group subscribes to (see `subscribed_partitions`); without it the
    partitions of `expected` stand in, which misses a partition the expected assignment also leaves out.
    A member present on one side only counts as holding nothing on the other.
    """
    wanted = set(subscribed) if subscribed is not None else {tp for held in expected.values() for tp in held}
    stored_partitions = {tp for held in stored.values() for tp in held}
    member_ids = sorted(set(expected) | set(stored))
    return AssignmentReport(
        unassigned_partitions=tuple(sorted(wanted - stored_partitions)),
        members_without_partitions=tuple(member_id for member_id in member_ids if not stored.get(member_id)),
        differences=tuple(
            difference
            for member_id in member_ids
            if (difference := _difference(member_id, expected.get(member_id, set()), stored.get(member_id, set())))
        ),
    )


def _difference(member_id: str, want: set[TopicPartition], have: set[TopicPartition]) -> MemberDifference | None:
    if want == have:
        return None
    return MemberDifference(member_id, frozenset(want - have), frozenset(have - want))
