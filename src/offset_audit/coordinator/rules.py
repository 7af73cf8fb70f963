"""The broker's offset-expiration and OffsetDelete rules, one named rule each.

Read with the shared reference, section 4 (expiration) and 5 (OffsetDelete): `expiry_rule` is one
`when` chain in the order the Java coordinator decides (GroupCoordinatorShard.cleanupGroupMetadata,
OffsetMetadataManager.cleanupExpiredOffsets, ClassicGroup.offsetExpirationCondition), and
`delete_error` mirrors OffsetMetadataManager.deleteOffsets.

Every function takes Columns of the joined offset + group row and returns a Column.
"""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

from offset_audit import constants as K
from offset_audit.broker_versions import NEWEST_VERSION, BrokerVersion
from offset_audit.coordinator.rule_names import (
    COMMIT_EXPIRY,
    EMPTY_GROUP,
    EXPLICIT_EXPIRE_TIMESTAMP,
    GROUP_HAS_MEMBERS,
    GROUP_ID_NOT_FOUND,
    GROUP_SUBSCRIBED_TO_TOPIC,
    NON_CONSUMER_PROTOCOL,
    NON_EMPTY_GROUP,
    PENDING_TRANSACTION,
    SIMPLE_GROUP,
    SUBSCRIBED_TOPIC,
    TIME_RULES,
    UNKNOWN_SUBSCRIPTION,
    UNSUBSCRIBED_TOPIC,
    UNSUPPORTED_VERSION,
)

KAFKA_8069 = (
    "KAFKA-8069: this broker version (2.1.0, 2.1.1) reads the value's expire timestamp -1 as a time, so "
    "it expires the offset at the first sweep after the partition is loaded"
)
KAFKA_13636 = (
    "KAFKA-13636: on this broker version, if a member rejoins the group, the offset goes during the "
    "rebalance, since it was committed more than the retention ago"
)
EARLY_COMMIT_LOAD_FAILURES = {
    "consumer": (
        "KAFKA-17306: the new group coordinator of Kafka 3.7 to 3.9 fails to load the __consumer_offsets "
        "partition of a group whose offset commit comes before its consumer group records, as compaction "
        "leaves them (fixed in 4.0): {groups}"
    ),
    "streams": (
        "KAFKA-20254: Kafka 4.1.0 to 4.2.0 fail to load the __consumer_offsets partition of a group whose "
        "offset commit comes before its streams group records, as compaction leaves them (fixed in 4.2.1): "
        "{groups}"
    ),
}


def early_commit_note(group_type: str, groups: list[tuple[str, int]], commits: int) -> dict[str, int]:
    """The summary's one note for the groups `commits_before_group_records` found: their names (the first
    three, then how many more) and partitions, counted in the commits that come first."""
    if not groups:
        return {}
    shown = ", ".join(f"'{group}' (partition {partition})" for group, partition in groups[:3])
    if len(groups) > 3:
        shown += f" and {len(groups) - 3} more"
    return {EARLY_COMMIT_LOAD_FAILURES[group_type].format(groups=shown): commits}


KAFKA_19779_KEPT = (
    "KAFKA-19779: this broker version keeps a streams group's offsets only while its topology is ready (its "
    "source and internal topics exist as configured), which the log does not record; while it is not, the "
    "offsets expire from their commits"
)
KAFKA_19779_EXPIRES = (
    "KAFKA-19779: this broker version counts a streams group whose topology is not ready as subscribed to "
    "no topic, so its offsets expire from their commits; from 4.2 they are kept"
)

# The sweep is a fixed-delay timer: each starts offsets.retention.check.interval.ms after the previous one
# ended, so its tombstones can land later than expires_at + interval by the previous sweep's own run
# time and the timer's latency (1 ms seen on a live 4.1 broker sweeping every second, a few offsets).
# This allows for a busy broker's sweep of many offsets.
SWEEP_LATENESS_MS = 5_000


def sweep_reach_ms(check_interval_ms: int) -> int:
    """How long after an offset expires its sweep tombstone can land: one interval, and a sweep's lateness."""
    return check_interval_ms + SWEEP_LATENESS_MS


def is_classic(group_type: Column) -> Column:
    return group_type == "classic"


def is_simple(group_type: Column, protocol_type: Column) -> Column:
    return is_classic(group_type) & protocol_type.isNull()


def is_empty_classic(group_type: Column, protocol_type: Column, group_state: Column) -> Column:
    return is_classic(group_type) & protocol_type.isNotNull() & (group_state == "Empty")


def uses_consumer_protocol(protocol_type: Column) -> Column:
    return F.coalesce(protocol_type == K.CONSUMER_PROTOCOL_TYPE, F.lit(False))


def subscription_known(subscribed_topics: Column) -> Column:
    return subscribed_topics.isNotNull()


def is_subscribed_to_topic(
    group_type: Column, protocol_type: Column, subscribed_topics: Column, topic: Column
) -> Column:
    """Group.isSubscribedToTopic: with known subscriptions, membership; classic groups whose
    subscriptions are unknown count as subscribed when they use the consumer protocol (Java
    ClassicGroup; the Scala coordinator said true for any unknown)."""
    return F.when(subscription_known(subscribed_topics), F.array_contains(subscribed_topics, topic)).otherwise(
        is_classic(group_type) & uses_consumer_protocol(protocol_type)
    )


def has_explicit_expiry(expire_timestamp_ms: Column) -> Column:
    # Sentinel -1 is already null in offset_commits.
    return expire_timestamp_ms.isNotNull()


def expiry_rule(
    group_type: Column,
    protocol_type: Column,
    group_state: Column,
    subscribed_topics: Column,
    topic: Column,
    expire_timestamp_ms: Column,
    pending_transaction: Column,
    version: BrokerVersion = NEWEST_VERSION,
) -> Column:
    """Which rule decides an offset's expiry, in the broker's order, for that broker version."""
    if version.expires_each_offset_from_its_commit:
        return F.lit(COMMIT_EXPIRY)

    def explicit_or(rule: str) -> Column:
        # An explicit expireTimestamp replaces the base clock wherever a condition exists (reference 4.2).
        return F.when(has_explicit_expiry(expire_timestamp_ms), F.lit(EXPLICIT_EXPIRE_TIMESTAMP)).otherwise(F.lit(rule))

    subscribed = is_subscribed_to_topic(group_type, protocol_type, subscribed_topics, topic)
    by_group = (
        # ClassicGroup.offsetExpirationCondition, reference 4.3
        F.when(is_simple(group_type, protocol_type), explicit_or(SIMPLE_GROUP))
        .when(is_empty_classic(group_type, protocol_type, group_state), explicit_or(EMPTY_GROUP))
        .when(F.lit(not version.expires_unsubscribed_topics) & is_classic(group_type), F.lit(GROUP_HAS_MEMBERS))
        .when(is_classic(group_type) & ~uses_consumer_protocol(protocol_type), F.lit(NON_CONSUMER_PROTOCOL))
        .when(is_classic(group_type) & ~subscription_known(subscribed_topics), F.lit(UNKNOWN_SUBSCRIPTION))
        # Share groups keep no offsets; should one appear, the broker has no condition for it.
        .when(group_type == "share", F.lit(NON_CONSUMER_PROTOCOL))
        # Classic Stable consumer groups with known subscriptions, KIP-848 and streams groups.
        .when(subscribed, F.lit(SUBSCRIBED_TOPIC))
        .otherwise(explicit_or(UNSUBSCRIBED_TOPIC))
    )
    # The sweep only asks about a pending transaction for an offset that would otherwise expire by
    # time: a group without a condition, or a subscribed topic, is skipped before (reference 4.3).
    if not version.holds_offsets_for_pending_transactions:
        return by_group
    return F.when(
        F.coalesce(pending_transaction, F.lit(False)) & by_group.isin(*TIME_RULES), F.lit(PENDING_TRANSACTION)
    ).otherwise(by_group)


def retention_ms(retention_minutes: Column) -> Column:
    """offsetsRetentionMs = offsets.retention.minutes * 60 * 1000, in long arithmetic: the setting is an
    int (at most 2^31 - 1 minutes), so the product always fits (GroupCoordinatorConfig, reference 4.1)."""
    return retention_minutes.cast("long") * F.lit(60_000)


def base_timestamp_ms(rule: Column, commit_timestamp_ms: Column, current_state_timestamp_ms: Column) -> Column:
    """Which clock starts retention (reference 4.3), in Kafka's epoch milliseconds; null where the rule
    has none."""
    return (
        F.when(rule == EMPTY_GROUP, F.coalesce(current_state_timestamp_ms, commit_timestamp_ms))
        .when(rule.isin(SIMPLE_GROUP, UNSUBSCRIBED_TOPIC, COMMIT_EXPIRY), commit_timestamp_ms)
        .otherwise(F.lit(None).cast("long"))
    )


def expires_at_ms(rule: Column, base_ms: Column, expire_timestamp_ms: Column, retention_minutes: Column) -> Column:
    """When the offset becomes eligible: base + retention, or the explicit timestamp; null = never.

    Where base + retention passes Long.MAX_VALUE the broker's `now - base >= retention` can never hold
    (no clock reaches that far), so null (never) is exact, not a lost value.
    """
    explicit = (rule == EXPLICIT_EXPIRE_TIMESTAMP) | (
        (rule == COMMIT_EXPIRY) & has_explicit_expiry(expire_timestamp_ms)
    )
    return F.when(explicit, expire_timestamp_ms).otherwise(F.try_add(base_ms, retention_ms(retention_minutes)))


def java_long_difference(later_ms: Column, earlier_ms: Column) -> Column:
    """`later - earlier` as Java computes it on longs: exact where it fits, wrapped around 2^64 where it
    does not (Spark's ANSI arithmetic would fail there, and try_subtract gives null).

    Only operands of opposite signs overflow. later >= 0 > earlier passes Long.MAX_VALUE and wraps to
    (later - 2^63) + (-earlier - 2^63); later < 0 <= earlier passes Long.MIN_VALUE and wraps to
    (later + 2^63) + (2^63 - earlier). Each term fits a long, and so does their sum, the wrapped value.
    """
    exact = F.try_subtract(later_ms, earlier_ms)
    largest, smallest = F.lit(2**63 - 1), F.lit(-(2**63))
    wrapped_down = (later_ms - largest - 1) + (-(earlier_ms + 1) - largest)
    wrapped_up = (later_ms - smallest) + (largest - earlier_ms) + 1
    return (
        F.when(exact.isNotNull() | later_ms.isNull() | earlier_ms.isNull(), exact)
        .when(later_ms >= 0, wrapped_down)
        .otherwise(wrapped_up)
    )


def is_expired(
    rule: Column, base_ms: Column, expire_timestamp_ms: Column, as_of_ms: Column, retention_minutes: Column
) -> Column:
    """The broker's two tests, both `>=` (reference 4.2), on the milliseconds in Java long arithmetic:
    explicit expiry `now >= expireTimestamp`, otherwise `now - base >= retention`.

    A base so far from now that the subtraction wraps gets the broker's answer too: a commit timestamp
    near Long.MIN_VALUE wraps to a negative age, below any retention, and is kept.
    """
    explicit = as_of_ms >= expire_timestamp_ms
    by_age = java_long_difference(as_of_ms, base_ms) >= retention_ms(retention_minutes)
    # Before 2.1 the expire timestamp, explicit or commit + retention, is passed strictly.
    before_kip_211 = as_of_ms > expires_at_ms(rule, base_ms, expire_timestamp_ms, retention_minutes)
    return F.coalesce(
        F.when(rule == EXPLICIT_EXPIRE_TIMESTAMP, explicit)
        .when(rule == COMMIT_EXPIRY, before_kip_211)
        .otherwise(by_age),
        F.lit(False),
    )


def delete_error(
    group_type: Column,
    protocol_type: Column,
    group_state: Column,
    subscribed_topics: Column,
    topic: Column,
    version: BrokerVersion = NEWEST_VERSION,
) -> Column:
    """What OffsetDelete (KIP-496, kafka-consumer-groups --delete-offsets) answers today; null = success.

    OffsetMetadataManager.deleteOffsets: share groups are not consumer groups (GROUP_ID_NOT_FOUND);
    a classic non-empty group of another protocol refuses as a whole (NON_EMPTY_GROUP); otherwise a
    subscribed topic (unknown subscriptions of a consumer group count as subscribed) is refused.
    """
    if not version.expires_unsubscribed_topics:  # KIP-496 brought OffsetDelete with 2.4
        return F.lit(UNSUPPORTED_VERSION)
    return (
        F.when(group_type.isNull() | (group_type == "share"), F.lit(GROUP_ID_NOT_FOUND))
        .when(
            is_classic(group_type)
            & (group_state != "Empty")
            & protocol_type.isNotNull()
            & ~uses_consumer_protocol(protocol_type),
            F.lit(NON_EMPTY_GROUP),
        )
        .when(
            is_subscribed_to_topic(group_type, protocol_type, subscribed_topics, topic),
            F.lit(GROUP_SUBSCRIBED_TO_TOPIC),
        )
        .otherwise(F.lit(None).cast("string"))
    )


def group_can_be_removed(
    group_type: Column,
    group_state: Column,
    open_transaction: Column,
    version: BrokerVersion = NEWEST_VERSION,
    description_stored: Column | None = None,
) -> Column:
    """Group.isEmpty and shouldExpire, and no open transaction: Empty groups (simple ones included);
    never share groups, which the sweep retains since 4.1 (reference 4.3, 4.4), though 4.0 removed them.
    From 4.4, not a streams group whose topology description a plugin stored (`description_stored`):
    that it is stored shows the plugin was configured, and the broker waits for its cleanup."""
    shared = F.lit(version.removes_empty_share_groups) | (group_type != "share")
    removable = (group_state == "Empty") & shared & ~F.coalesce(open_transaction, F.lit(False))
    if version.streams_deletion_waits_for_stored_description and description_stored is not None:
        removable = removable & ~((group_type == "streams") & F.coalesce(description_stored, F.lit(False)))
    return removable


def known_issue(
    rule: Column,
    group_type: Column,
    group_state: Column,
    protocol_type: Column,
    value_version: Column,
    expire_timestamp_ms: Column,
    commit_timestamp_ms: Column,
    as_of_ms: Column,
    retention_minutes: Column,
    version: BrokerVersion = NEWEST_VERSION,
) -> Column:
    """A known expiry bug of the broker version that decides this offset's fate otherwise; null = none."""
    issue = F.lit(None).cast("string")
    if version.kafka_8069:
        written_minus_one = (value_version == 1) & ~has_explicit_expiry(expire_timestamp_ms)
        issue = F.when(rule.isin(EMPTY_GROUP, SIMPLE_GROUP) & written_minus_one, F.lit(KAFKA_8069)).otherwise(issue)
    if version.kafka_13636:
        old = java_long_difference(as_of_ms, commit_timestamp_ms) >= retention_ms(retention_minutes)
        issue = F.when(
            (rule == EMPTY_GROUP) & uses_consumer_protocol(protocol_type) & old, F.lit(KAFKA_13636)
        ).otherwise(issue)
    if version.streams_subscription_needs_ready_topology:
        streams = group_type == "streams"
        issue = (
            F.when(streams & (rule == SUBSCRIBED_TOPIC), F.lit(KAFKA_19779_KEPT))
            .when(streams & (rule == UNSUBSCRIBED_TOPIC) & (group_state == "NotReady"), F.lit(KAFKA_19779_EXPIRES))
            .otherwise(issue)
        )
    return issue


def is_console_consumer_group(group_id: Column) -> Column:
    """kafka-console-consumer.sh names its groups console-consumer-NNNNN; KIP-211 notes they are almost
    never reused, so their offsets only wait for expiry."""
    return group_id.rlike(r"^console-consumer-[0-9]+$")
