"""`share_findings` rows about share groups: the stored target assignment against the SimpleAssignor of
the judging version (4.1's, or 4.2+'s balanced builders), and the groups and their share-partitions
against the broker's group.share.* limits.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from offset_audit.broker_versions import NEWEST_VERSION, BrokerVersion
from offset_audit.coordinator.share_assignor import (
    MemberDifference,
    ShareAssignorError,
    TopicPartition,
    assign,
    compare,
    is_homogeneous,
    subscribed_partitions,
)
from offset_audit.coordinator.share_balanced_assignor import assign_balanced, subscribed_topic_ids
from offset_audit.coordinator.share_groups import KAFKA_4_1_ERA, ShareGroup, partition_labels
from offset_audit.coordinator.share_limits import (
    DELIVERY_COUNT_LIMIT,
    MAX_GROUPS,
    MAX_SIZE,
    RECORD_LOCK_PARTITION_LIMIT,
    Finding,
    Limits,
    ShareGroupObservation,
    SharePartitionObservation,
    check_groups,
)
from offset_audit.share_findings_rows import (
    ASSIGNMENT_DIFFERS,
    ASSIGNMENT_NOT_CHECKED,
    ASSIGNMENT_NOT_COMPUTED,
    BAD_BROKER_SETTING,
    DELIVERY_LIMIT_REACHED,
    GROUP_AT_MAX_SIZE,
    GROUP_OVER_MAX_SIZE,
    MEMBER_WITHOUT_PARTITIONS,
    RECORD_LOCK_LIMIT,
    SHARE_LIMIT,
    TOO_MANY_GROUPS,
    UNASSIGNED_PARTITION,
    UNREAD_BROKER_SETTING,
    Severity,
    finding_row,
)


@dataclass(frozen=True)
class PartitionSource:
    """What the dump tells about the partitions a group's assignor could hand out, and from which record."""

    description: str
    partitions: dict[str, int]
    """Topic name -> partition count (for 4.1: one past the highest initialised partition)."""
    assignable: dict[str, tuple[int, ...]] | None
    """4.1's topicPartitionAllowedMap (initialised partitions); None: every partition (4.0)."""
    kafka_4_0: bool


def partition_source(group: ShareGroup) -> PartitionSource | None:
    """Which record gives the assignable partitions, following the broker that wrote the group.

    Kafka 4.0 assigned from ShareGroupPartitionMetadata (type 9, NumPartitions). Kafka 4.1 dropped type 9
    (its loader skips it) and assigns only partitions whose share state is initialised, read from
    ShareGroupStatePartitionMetadata (type 15); a 4.1 group without one has nothing assignable
    (GroupMetadataManager.updateTargetAssignment passes an empty map). Kafka 4.0 defined type 15 but did not
    assign from it, so a 4.0 group without type 9 has no source: None.
    """
    writer = group.writer_era
    if group.partition_metadata is not None and writer != KAFKA_4_1_ERA:
        return PartitionSource(
            "ShareGroupPartitionMetadata (type 9, Kafka 4.0: NumPartitions, every partition assignable)",
            {t.topic_name or t.topic_id: len(t.partitions) for t in group.partition_metadata},
            None,
            kafka_4_0=True,
        )
    if writer == KAFKA_4_1_ERA or (writer is None and group.has_state_partition_metadata):
        initialized = {t.topic_name or t.topic_id: t.partitions for t in group.initialized_topics if t.partitions}
        return PartitionSource(
            "ShareGroupStatePartitionMetadata (type 15, Kafka 4.1: initialised partitions only)",
            {topic: max(partitions) + 1 for topic, partitions in initialized.items()},
            initialized,
            kafka_4_0=False,
        )
    return None


AssignorEra = Literal["4.0", "4.1", "4.2"]


def assignor_era(source: PartitionSource, version: BrokerVersion = NEWEST_VERSION) -> AssignorEra:
    """Which SimpleAssignor computed the group's target: 4.0's (every member all its subscribed partitions)
    where the dump shows a 4.0 writer, else the version's: 4.1's hashing, or 4.2's balanced builders."""
    if source.kafka_4_0:
        return "4.0"
    return "4.2" if version.share_assignor_balances else "4.1"


def expected_assignment(
    group: ShareGroup, source: PartitionSource, version: BrokerVersion = NEWEST_VERSION
) -> dict[str, set[TopicPartition]]:
    """The target assignment the group's broker computes, by topic name, every member present.

    Kafka 4.0's SimpleAssignor gave every member all partitions of its subscribed topics, so that is
    computed here directly: the later algorithms would flag every 4.0 member.
    Kafka 4.1: `assignor.assign`, with the members' current (type 14) partitions standing in for the previous
    target assignment the broker feeds its assignor, which the log no longer holds once type 13 is rewritten.
    Kafka 4.2+: `balanced_assignor.assign_balanced` on topic ids, fed the stored target assignment (type 13)
    as the previous one, as the broker feeds it at its next computation. A settled group's stored
    assignment is then its own answer; where it is not, the broker will move those partitions.
    """
    subscriptions = {member.member_id: set(member.subscribed_topic_names) for member in group.members}
    era = assignor_era(source, version)
    if era == "4.0":
        return {
            member_id: set(subscribed_partitions(topics, source.partitions))
            for member_id, topics in subscriptions.items()
        }
    if era == "4.1":
        current = {member.member_id: group.named(member.current_partitions) for member in group.members}
        return assign(subscriptions, source.partitions, current, assignable=source.assignable)
    ids = {name: topic_id for topic_id, name in group.topic_names.items()}
    initialized = [topic for topic in group.initialized_topics if topic.partitions]
    previous = {
        member_id: [(topic, sorted(p for t, p in held if t == topic)) for topic in sorted({t for t, _ in held})]
        for member_id, held in group.target_assignment.items()
        if member_id in subscriptions
    }
    balanced = assign_balanced(
        {member_id: subscribed_topic_ids(topics, ids) for member_id, topics in subscriptions.items()},
        {topic.topic_id: max(topic.partitions) + 1 for topic in initialized},
        previous,
        assignable={topic.topic_id: topic.partitions for topic in initialized},
        homogeneous=is_homogeneous(subscriptions),
        inserted=group.member_walk,
    )
    return {member_id: group.named(held) for member_id, held in balanced.items()}


def assignment_findings(groups: Sequence[ShareGroup], version: BrokerVersion = NEWEST_VERSION) -> list[dict[str, Any]]:
    """`share_findings` rows for each group's stored target assignment (type 13).

    Partitions nobody holds and members holding nothing are read off the stored assignment and are real
    problems; a member whose stored partitions differ from the recomputed ones is only a hint (see
    `_difference_rows`). Groups without members have nothing to assign and are skipped.
    """
    rows: list[dict[str, Any]] = []
    for group in groups:
        if group.members:
            rows += _group_assignment_findings(group, version)
    return rows


def _group_assignment_findings(group: ShareGroup, version: BrokerVersion) -> list[dict[str, Any]]:
    stored = {member_id: group.named(held) for member_id, held in group.target_assignment.items()}
    epoch = "none" if group.assignment_epoch is None else str(group.assignment_epoch)
    source = partition_source(group)
    if source is None:
        rows = [
            finding_row(
                group.group_id,
                ASSIGNMENT_NOT_CHECKED,
                "info",
                f"the partitions share group '{group.group_id}' could assign are unknown: the dump holds no "
                "ShareGroupPartitionMetadata (type 9) that Kafka 4.0 assigned from, and nothing shows a Kafka 4.1 "
                "writer, which assigns the initialised partitions of ShareGroupStatePartitionMetadata (type 15)",
            )
        ]
        rows += [
            finding_row(
                group.group_id,
                MEMBER_WITHOUT_PARTITIONS,
                "info",
                f"member '{member.member_id}' holds no partition in the stored target assignment (epoch {epoch}); "
                "whether it should cannot be told without partition metadata",
                member_id=member.member_id,
            )
            for member in group.members
            if not stored.get(member.member_id)
        ]
        return rows

    try:
        expected: dict[str, set[TopicPartition]] | None = expected_assignment(group, source, version)
    except ShareAssignorError as err:
        expected = None
        failure = err
    subscribed = {
        target
        for member in group.members
        for target in subscribed_partitions(member.subscribed_topic_names, source.partitions, source.assignable)
    }
    # Without a recomputed assignment, what is read off the stored one alone still holds.
    report = compare(stored if expected is None else expected, stored, subscribed)
    rows = [
        finding_row(
            group.group_id,
            UNASSIGNED_PARTITION,
            "warning",
            f"{topic}:{partition} is subscribed by share group '{group.group_id}' but no member holds it in the "
            f"stored target assignment (epoch {epoch}), so nobody consumes it; partitions from {source.description}",
            topic=topic,
            partition=partition,
        )
        for topic, partition in report.unassigned_partitions
    ]
    member_ids = {member.member_id for member in group.members}
    if expected is None:
        rows.append(
            finding_row(
                group.group_id,
                ASSIGNMENT_NOT_COMPUTED,
                "warning",
                _not_computed(group, source, version, failure)
                + f"; the stored target assignment (epoch {epoch}) was checked for unassigned partitions only; "
                f"partitions from {source.description}",
            )
        )
        rows += [
            finding_row(
                group.group_id,
                MEMBER_WITHOUT_PARTITIONS,
                "info",
                f"member '{member_id}' holds no partition in the stored target assignment (epoch {epoch}); whether it "
                "should cannot be told without a recomputed assignment",
                member_id=member_id,
            )
            for member_id in report.members_without_partitions
            if member_id in member_ids
        ]
        return rows
    for member_id in report.members_without_partitions:
        if member_id not in member_ids:
            continue
        if expected.get(member_id):
            severity: Severity = "warning"
            why = f"the assignor gives every member at least one of its subscribed partitions ({source.description})"
        else:
            severity = "info"
            why = f"its subscription has no assignable partition ({source.description})"
        rows.append(
            finding_row(
                group.group_id,
                MEMBER_WITHOUT_PARTITIONS,
                severity,
                f"member '{member_id}' holds no partition in the stored target assignment (epoch {epoch}): {why}",
                member_id=member_id,
            )
        )
    rows += _difference_rows(group, source, report.differences, member_ids, assignor_era(source, version))
    return rows


def _not_computed(group: ShareGroup, source: PartitionSource, version: BrokerVersion, failure: Exception) -> str:
    if assignor_era(source, version) == "4.1":
        return (
            f"Kafka 4.1's SimpleAssignor stops on share group '{group.group_id}' with PartitionAssignorException "
            f"'{failure}' (members holding more partitions than their share leave the round-robin no member); "
            "the recomputation starts from the members' current partitions where the broker starts from its "
            "previous target assignment, so the broker may compute one"
        )
    return (
        f"Kafka {version.label}'s SimpleAssignor fails on share group '{group.group_id}' with '{failure}': members "
        "hold partitions past the initialised ones that count towards their share, so no target assignment is "
        "computed for the group until its members or partitions change"
    )


def _difference_rows(
    group: ShareGroup,
    source: PartitionSource,
    differences: Iterable[MemberDifference],
    member_ids: set[str],
    era: AssignorEra,
) -> list[dict[str, Any]]:
    """4.1 differences are info: the recomputation visits members and topics sorted, while the broker walks
    a HashMap whose order is unknown here, and it started from the previous target assignment, which type 14
    only approximates. Kafka 4.0's rule depends on neither, so there a difference is a warning. 4.2+
    differences are what the broker will move at its next computation: info, as nothing is wrong yet."""
    rows = []
    for difference in differences:
        parts = []
        if difference.missing:
            parts.append(f"missing {', '.join(partition_labels(difference.missing))}")
        if difference.unexpected:
            parts.append(f"not expected {', '.join(partition_labels(difference.unexpected))}")
        who = "member" if difference.member_id in member_ids else "non-member"
        message = (
            f"stored target of {who} '{difference.member_id}' differs from the recomputed assignment: "
            f"{'; '.join(parts)}; partitions from {source.description}"
        )
        if era == "4.0":
            severity: Severity = "warning"
            message += "; Kafka 4.0's assignor gives each member every subscribed partition, whatever the order"
        elif era == "4.2":
            severity = "info"
            message += (
                "; Kafka 4.2+'s assignor, given this target back, balances it so: it will move these partitions "
                "at its next computation (when the group's members or subscriptions change)"
            )
        else:
            severity = "info"
            message += (
                "; a hint only: the broker's HashMap iteration order is unknown (members and topics were taken "
                "sorted) and its previous target assignment is approximated by the current one"
            )
        rows.append(finding_row(group.group_id, ASSIGNMENT_DIFFERS, severity, message, member_id=difference.member_id))
    return rows


# ---- limits ---------------------------------------------------------------------------------------------


def limit_findings(
    groups: Sequence[ShareGroup],
    partition_observations: Mapping[str, Sequence[SharePartitionObservation]],
    limits: Limits,
) -> list[dict[str, Any]]:
    """`share_findings` rows for the groups and their share-partitions against the broker limits.

    `groups` should be every share group of the dump: the group count is checked against
    group.share.max.groups. `partition_observations` maps group id -> its share-partitions (see
    `observation_from_state`); observations of group ids not in `groups` (state a deleted group left) are
    not counted as groups and are ignored here.
    """
    observed = [
        ShareGroupObservation(group.group_id, len(group.members), tuple(partition_observations.get(group.group_id, ())))
        for group in groups
    ]
    return [_finding_row(finding, _limit_kind(finding)) for finding in check_groups(observed, limits)]


def broker_setting_findings(findings: Iterable[Finding]) -> list[dict[str, Any]]:
    """`share_findings` rows (group_id null) for `limits.check_settings` results.

    A separate function from `limit_findings` because a setting's own finding and an observed count share
    the setting name (group.share.max.groups is both a bad value and too many groups).
    """
    return [
        _finding_row(finding, BAD_BROKER_SETTING if finding.severity == "error" else UNREAD_BROKER_SETTING)
        for finding in findings
    ]


_KIND_BY_SETTING = {
    MAX_GROUPS: TOO_MANY_GROUPS,
    RECORD_LOCK_PARTITION_LIMIT: RECORD_LOCK_LIMIT,
    DELIVERY_COUNT_LIMIT: DELIVERY_LIMIT_REACHED,
}


def _limit_kind(finding: Finding) -> str:
    if finding.setting == MAX_SIZE:
        return GROUP_OVER_MAX_SIZE if finding.severity == "error" else GROUP_AT_MAX_SIZE
    return _KIND_BY_SETTING.get(finding.setting, SHARE_LIMIT)


def _finding_row(finding: Finding, kind: str) -> dict[str, Any]:
    topic, partition = finding.partition if finding.partition is not None else (None, None)
    return finding_row(finding.group_id, kind, finding.severity, finding.message, topic=topic, partition=partition)
