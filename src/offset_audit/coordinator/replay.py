"""Typed records to the state the group coordinator would load (reference 1.1 and 2.5).

Every function is pure: decode tables in, state DataFrames out. The broker replays its partition of
`__consumer_offsets` in log order, so for every key the last record wins and a tombstone deletes; that
one rule, applied per record family, rebuilds committed offsets, classic group metadata and members,
and the KIP-848, streams and share group records.
"""

from __future__ import annotations

from functools import reduce

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from offset_audit import constants as K
from offset_audit.broker_versions import NEWEST_VERSION, BrokerVersion


def last_record_wins(records: DataFrame, key: list[str]) -> DataFrame:
    """The last record of each key in log order (by partition, then offset), tombstones removed.

    A group always lives in one __consumer_offsets partition, so ordering by partition first only
    matters for dumps taken across a change of partition count, where the newer layout wins.
    (Measured on 1M commits: a max_by aggregate or a max-position semi-join were no faster.)
    """
    window = Window.partitionBy(*key).orderBy(F.col("source_partition").desc(), F.col("source_offset").desc())
    latest = records.withColumn("_rank", F.row_number().over(window)).where(F.col("_rank") == 1).drop("_rank")
    return latest.where(~F.col("is_tombstone"))


OFFSET_KEY = ["group_id", "topic", "partition"]
# What a quarantine row keeps of a key whose value could not be read (`unreadable_records`).
UNREADABLE_COLUMNS = ["record_type", "group_id", "topic", "partition", "member_id", "regular_expression"]


def unreadable_records(quarantine: DataFrame) -> pa.Table:
    """Quarantined records whose key was read and whose value was not, brought to the driver.

    Such a record is still its key's newest record: the broker would fail to load the partition on it,
    and the log cleaner keeps it over the key's older records. So the key has no state from it on (until
    a later readable record), whichever records a run decoded: the audit, which decodes each task's
    last record of a key, and `--keep-decoded` or delta-spark runs, which decode them all, agree.

    They are few (a broken record is rare, and each is already broadcast to the replay), so one small
    scan brings them here, and each record family the replay joins them to is told apart on the driver:
    a family without one is left as it is, instead of a Spark job per family to find that out (four jobs
    of a 20M-record audit, a quarter of a warm incremental run).
    """
    return quarantine.where(F.col("group_id").isNotNull()).select(*UNREADABLE_COLUMNS, *POSITION).toArrow()


POSITION = ["source_partition", "source_offset"]


def _position(prefix: str = "") -> Column:
    """A record's place in log order, comparable as one value; a record without coordinates is the
    oldest, as `last_record_wins` (a descending sort, nulls last) treats it."""
    return F.struct(
        F.coalesce(f"{prefix}source_partition", F.lit(-(2**31))).alias("p"),
        F.coalesce(f"{prefix}source_offset", F.lit(-(2**63))).alias("o"),
    )


def _after_unreadable(live: DataFrame, unreadable: pa.Table, key: list[str]) -> DataFrame:
    """`live` (one record per key) without the keys whose newest record is an unreadable one: those
    with an unreadable record at or after their live one."""
    if unreadable.num_rows == 0:
        return live
    names = [*key, *POSITION]
    schema = StructType([live.schema[name] for name in names])
    rows = unreadable.select(names).cast(to_arrow_schema(schema))
    found = live.sparkSession.createDataFrame(rows, schema)
    found = found.select(*[F.col(c).alias(f"_u_{c}") for c in names])
    same_key = [live[c] == found[f"_u_{c}"] for c in key]
    later = _position("_u_") >= _position()
    return live.join(F.broadcast(found), reduce(lambda a, b: a & b, [*same_key, later]), "left_anti")


def _of_types(unreadable: pa.Table, types: list[int], keep: bool = True) -> pa.Table:
    """The unreadable records of these record types (`keep`), or of all other known types."""
    record_type = unreadable.column("record_type")
    chosen = pc.is_in(record_type, pa.array(types, record_type.type))
    return unreadable.filter(chosen if keep else pc.and_(pc.is_valid(record_type), pc.invert(chosen)))


def _is_pending(transaction: Column) -> Column:
    return F.coalesce(transaction == "pending", F.lit(False))


def pending_commits(offset_commits: DataFrame) -> DataFrame:
    """(group, topic, partition) of transactional commits still waiting for their marker."""
    return offset_commits.where(_is_pending(F.col("transaction"))).select(*OFFSET_KEY).distinct()


def live_offsets(
    offset_commits: DataFrame,
    pending: DataFrame | None = None,
    latest: bool = False,
    unreadable: pa.Table | None = None,
) -> DataFrame:
    """Committed offsets the coordinator holds: one per (group, topic, partition), with
    `pending_transaction` when a transactional commit of that partition awaits its marker.

    A pending commit is not the committed offset yet (the broker keeps it aside until the COMMIT
    marker, then applies it if its record is newer, which log order already gives). `pending` is
    `pending_commits(offset_commits)`, or None when the input cannot show transactions. `latest` says
    the committed records are already one per key, the last (`offset_audit.decoding.compaction.latest_commits`):
    only tombstones are left to remove. `unreadable` is `unreadable_records(quarantine)`, or None when
    nothing was quarantined.
    """
    committed_records = offset_commits.where(~_is_pending(F.col("transaction")))
    if latest:
        committed = committed_records.where(~F.col("is_tombstone"))
    else:
        committed = last_record_wins(committed_records, OFFSET_KEY)
    if unreadable is not None:
        commit_types = list(K.OFFSET_COMMIT_TYPES)
        committed = _after_unreadable(committed, _of_types(unreadable, commit_types), OFFSET_KEY)
    if pending is None:
        return committed.withColumn("pending_transaction", F.lit(False))
    flagged = pending.withColumn("pending_transaction", F.lit(True))
    return committed.join(F.broadcast(flagged), OFFSET_KEY, "left").withColumn(
        "pending_transaction", F.coalesce("pending_transaction", F.lit(False))
    )


def live_group_metadata(group_metadata: DataFrame, unreadable: pa.Table | None = None) -> DataFrame:
    """Each classic group's last metadata record; a group tombstone removes the group's metadata, and
    so does an unreadable last record (`unreadable_records`)."""
    live = last_record_wins(group_metadata, ["group_id"])
    if unreadable is None:
        return live
    return _after_unreadable(live, _of_types(unreadable, [K.GROUP_METADATA]), ["group_id"])


def _modern_key(records: DataFrame) -> DataFrame:
    return records.withColumn("_member_key", F.coalesce("member_id", F.lit(""))).withColumn(
        "_regex_key", F.coalesce("regular_expression", F.lit(""))
    )


def _modern_unreadable_key(records: pa.Table) -> pa.Table:
    """`_modern_key`'s columns, for the unreadable records on the driver."""
    empty = pa.scalar("", pa.string())
    member = pc.fill_null(records.column("member_id"), empty)
    regex = pc.fill_null(records.column("regular_expression"), empty)
    return records.append_column("_member_key", member).append_column("_regex_key", regex)


def live_modern_records(modern_group_records: DataFrame, unreadable: pa.Table | None = None) -> DataFrame:
    """KIP-848, share and streams records: last record per (type, group, member or regex), unless the
    key's last record is unreadable (`unreadable_records`)."""
    key = ["record_type", "group_id", "_member_key", "_regex_key"]
    live = last_record_wins(_modern_key(modern_group_records), key)
    if unreadable is not None:
        classic = [*K.OFFSET_COMMIT_TYPES, K.GROUP_METADATA]
        others = _modern_unreadable_key(_of_types(unreadable, classic, keep=False))
        live = _after_unreadable(live, others, key)
    return live.drop("_member_key", "_regex_key")


def _union_topics(column: Column) -> Column:
    return F.array_sort(F.array_distinct(F.flatten(F.collect_list(column))))


def classic_groups(live_metadata: DataFrame, group_members: DataFrame) -> DataFrame:
    """Classic groups as loaded: Stable with members, Empty without (GroupMetadataManager.replay).

    A group's members are those its last metadata record lists: members are summed up per metadata
    record (its partition and offset) and joined to the live record, so the live metadata is computed
    once. Subscribed topics follow ClassicGroup.computeSubscribedTopics (reference 3): unknown (null)
    unless the protocol type is "consumer"; known and empty without members; with members and a
    selected protocol, the union of what the broker parses from each member (any failure: unknown).
    """
    record = ["group_id", "source_partition", "source_offset"]
    per_record = group_members.groupBy(*record).agg(
        _union_topics(F.coalesce("broker_subscribed_topics", F.array())).alias("_topics"),
        F.max(F.col("broker_subscribed_topics").isNull().cast("int")).alias("_unparseable"),
    )
    # Null-safe: console-consumer text without --partition has no source_partition.
    on = [F.col(f"m.{c}").eqNullSafe(F.col(f"r.{c}")) for c in record]
    groups = live_metadata.alias("m").join(per_record.alias("r"), on, "left").select("m.*", "_topics", "_unparseable")
    consumer = F.col("protocol_type") == K.CONSUMER_PROTOCOL_TYPE
    subscribed = (
        F.when(~consumer | F.col("protocol_type").isNull(), F.lit(None))
        .when(F.col("member_count") == 0, F.array().cast("array<string>"))
        .when(F.col("protocol").isNull() | (F.col("_unparseable") == 1), F.lit(None))
        .otherwise(F.col("_topics"))
    )
    return groups.select(
        "group_id",
        F.lit("classic").alias("group_type"),
        "protocol_type",
        F.when(F.col("member_count") > 0, "Stable").otherwise("Empty").alias("group_state"),
        "generation",
        "current_state_timestamp",
        "current_state_timestamp_ms",
        "member_count",
        subscribed.alias("subscribed_topics"),
    )


def _modern_state(members: Column, group_epoch: Column, assignment_epoch: Column, unreconciled: Column) -> Column:
    """ConsumerGroup.maybeUpdateGroupState: Empty, Assigning, Reconciling or Stable."""
    return (
        F.when(F.coalesce(members, F.lit(0)) == 0, "Empty")
        .when(group_epoch > F.coalesce(assignment_epoch, F.lit(-1)), "Assigning")
        .when(F.coalesce(unreconciled, F.lit(0)) > 0, "Reconciling")
        .otherwise("Stable")
    )


MODERN_STABLE = 0  # MemberState.STABLE of consumer and share group members
STREAMS_NOT_READY = "NotReady"  # StreamsGroupState.NOT_READY
STREAMS_STABLE = 1  # MemberState.STABLE of streams group members


# Record types of each modern group family: (group, member, target assignment, current assignment).
_FAMILIES = {
    "consumer": (
        K.CONSUMER_GROUP_METADATA,
        K.CONSUMER_GROUP_MEMBER_METADATA,
        K.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA,
        K.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT,
    ),
    "streams": (
        K.STREAMS_GROUP_METADATA,
        K.STREAMS_GROUP_MEMBER_METADATA,
        K.STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA,
        K.STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT,
    ),
    "share": (
        K.SHARE_GROUP_METADATA,
        K.SHARE_GROUP_MEMBER_METADATA,
        K.SHARE_GROUP_TARGET_ASSIGNMENT_METADATA,
        K.SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT,
    ),
}


def _types(position: int) -> list[int]:
    return [family[position] for family in _FAMILIES.values()]


def modern_groups(live_modern: DataFrame, version: BrokerVersion = NEWEST_VERSION) -> DataFrame:
    """KIP-848 consumer, streams and share groups, one row each, from their live records, in one
    aggregation per group.

    A group exists while its group-metadata record (type 3, 17 or 11) lives. Subscribed topics:
    consumer groups, the members' subscribed topic names plus the topics their regexes resolved to
    (ModernGroup.subscribedTopicNames); streams groups, the topology's source and repartition-source
    topics, none while Empty (StreamsGroup.isSubscribedToTopic); share groups, the members' subscribed
    topic names.

    A streams group with members is NotReady while it has no topology record, or while the topology's
    epoch is not the one the broker last validated (ValidatedTopologyEpoch, 4.2+). From 4.2 that state
    changes nothing about its subscriptions. Kafka 4.1 asked its soft-state configured topology instead,
    and answered "subscribed to nothing" while it was not ready (KAFKA-19779). A 4.1 log records no
    readiness (-1), so by 4.1's rules only a validated epoch that differs from the topology's says so;
    `rules.known_issue` names the risk where the log cannot tell. `topology_description_stored` (4.4:
    a topology description plugin stored one) holds the group back from deletion (`rules.group_can_be_removed`).
    """
    record_type = F.col("record_type")
    empty = F.array().cast("array<string>")
    is_member = record_type.isin(*_types(1))
    group_type = F.coalesce(*[F.when(record_type == types[0], F.lit(name)) for name, types in _FAMILIES.items()])
    per_group = (
        live_modern.groupBy("group_id")
        .agg(
            F.max(group_type).alias("group_type"),
            F.max(F.when(record_type.isin(*_types(0)), F.col("epoch"))).alias("group_epoch"),
            F.max(F.when(record_type.isin(*_types(2)), F.col("epoch"))).alias("assignment_epoch"),
            F.sum(is_member.cast("int")).alias("member_count"),
            F.flatten(F.collect_list(F.when(is_member, F.coalesce("subscribed_topic_names", empty)))).alias(
                "_member_topics"
            ),
            F.flatten(
                F.collect_list(
                    F.when(record_type == K.CONSUMER_GROUP_REGULAR_EXPRESSION, F.coalesce("resolved_topics", empty))
                )
            ).alias("_regex_topics"),
            F.flatten(
                F.collect_list(F.when(record_type == K.STREAMS_GROUP_TOPOLOGY, F.coalesce("source_topics", empty)))
            ).alias("_source_topics"),
            F.max(F.when(record_type == K.STREAMS_GROUP_TOPOLOGY, F.col("epoch"))).alias("_topology_epoch"),
            F.max(F.when(record_type == K.STREAMS_GROUP_METADATA, F.col("validated_topology_epoch"))).alias(
                "_validated_epoch"
            ),
            F.max(F.when(record_type == K.STREAMS_GROUP_METADATA, F.col("stored_description_topology_epoch"))).alias(
                "_stored_description_epoch"
            ),
            F.collect_list(
                F.when(
                    record_type.isin(*_types(3)),
                    F.struct(F.col("member_epoch").alias("epoch"), F.col("member_state").alias("state")),
                )
            ).alias("_current"),
        )
        .where(F.col("group_type").isNotNull())
    )
    # Members not reconciled to the target assignment (ModernGroupMember.isReconciledTo). STABLE is
    # byte 0 of consumer and share groups' MemberState, but byte 1 of streams groups' own
    # (coordinator.group.streams.MemberState: STABLE 1, UNREVOKED_TASKS 2, UNRELEASED_TASKS 3).
    stable = F.when(F.col("group_type") == "streams", F.lit(STREAMS_STABLE)).otherwise(F.lit(MODERN_STABLE))
    unreconciled = F.size(
        F.filter(
            "_current",
            lambda m: (m["state"] != stable) | (m["epoch"] != F.coalesce(F.col("assignment_epoch"), F.lit(-1))),
        )
    )
    members = F.coalesce(F.col("member_count"), F.lit(0))
    # Null where a 4.1 broker wrote the group's metadata: it recorded no readiness. A 4.2+ broker loads it
    # as -1 (never validated) until the next heartbeat validates the topology.
    recorded = F.col("_validated_epoch")
    topology_epoch = F.col("_topology_epoch")
    if version.streams_subscription_needs_ready_topology:
        not_validated = recorded.isNotNull() & (topology_epoch != recorded)
    else:
        not_validated = topology_epoch != F.coalesce(recorded, F.lit(-1))
    not_ready = (F.col("group_type") == "streams") & (members > 0) & (topology_epoch.isNull() | not_validated)
    streams_topics = F.when(members == 0, empty)
    if version.streams_subscription_needs_ready_topology:
        streams_topics = streams_topics.when(not_ready, empty)
    topics = (
        F.when(F.col("group_type") == "consumer", F.concat("_member_topics", "_regex_topics"))
        .when(F.col("group_type") == "streams", streams_topics.otherwise(F.col("_source_topics")))
        .otherwise(F.col("_member_topics"))
    )
    state = F.when(not_ready, F.lit(STREAMS_NOT_READY)).otherwise(
        _modern_state(members, F.col("group_epoch"), F.col("assignment_epoch"), unreconciled)
    )
    return per_group.select(
        "group_id",
        "group_type",
        F.lit(None).cast("string").alias("protocol_type"),
        state.alias("group_state"),
        F.col("group_epoch").alias("generation"),
        F.lit(None).cast("timestamp").alias("current_state_timestamp"),
        F.lit(None).cast("long").alias("current_state_timestamp_ms"),
        members.cast("int").alias("member_count"),
        F.array_sort(F.array_distinct(topics)).alias("subscribed_topics"),
        F.coalesce(F.col("_stored_description_epoch") != -1, F.lit(False)).alias("topology_description_stored"),
    )


# A group's row as the coordinator holds it (`coordinator_groups` adds `open_transaction`).
GROUP_COLUMNS = [
    "group_id",
    "group_type",
    "protocol_type",
    "group_state",
    "generation",
    "current_state_timestamp",
    "current_state_timestamp_ms",
    "member_count",
    "subscribed_topics",
]
# What the coordinator holds of a group besides: judged by the rules, not shown in the group tables.
_HELD_COLUMNS = [*GROUP_COLUMNS, "topology_description_stored"]


def coordinator_groups(
    offsets: DataFrame,
    live_metadata: DataFrame,
    group_members: DataFrame,
    live_modern: DataFrame,
    pending: DataFrame | None = None,
    version: BrokerVersion = NEWEST_VERSION,
) -> DataFrame:
    """Every group the coordinator would hold after loading the log, one row each, with
    `open_transaction` when one of its transactional commits awaits its marker, and
    `topology_description_stored` (`modern_groups`).

    A modern group record wins over classic metadata for the same id (after an online upgrade the classic
    record is tombstoned anyway). A group that only has offsets (committed or pending), or whose
    metadata has no protocol type, is a classic "simple" group (standalone consumers): Empty, no
    protocol type, subscriptions unknown.

    The three kinds are stacked with their precedence and each id keeps its first in one aggregation,
    rather than anti-joins: those read and re-sorted every live table two or three times (each a
    Spark job of its own once broadcast), which cost more than the rest of the rebuild.
    """
    simple_row = [
        F.lit("classic").alias("group_type"),
        F.lit(None).cast("string").alias("protocol_type"),
        F.lit("Empty").alias("group_state"),
        F.lit(None).cast("int").alias("generation"),
        F.lit(None).cast("timestamp").alias("current_state_timestamp"),
        F.lit(None).cast("long").alias("current_state_timestamp_ms"),
        F.lit(0).alias("member_count"),
        F.lit(None).cast("array<string>").alias("subscribed_topics"),
    ]
    held_back = F.lit(False).alias("topology_description_stored")
    kinds = [
        (modern_groups(live_modern, version), 0, False),
        (classic_groups(live_metadata, group_members).select("*", held_back), 1, False),
        (offsets.select("group_id").distinct().select("group_id", *simple_row, held_back), 2, False),
    ]
    if pending is not None:
        kinds.append((pending.select("group_id").distinct().select("group_id", *simple_row, held_back), 2, True))
    stacked = reduce(
        DataFrame.unionByName,
        [
            frame.select(
                "group_id",
                F.struct(F.lit(precedence).alias("precedence"), *_HELD_COLUMNS[1:]).alias("_group"),
                F.lit(is_pending).alias("_pending"),
            )
            for frame, precedence, is_pending in kinds
        ],
    )
    first = stacked.groupBy("group_id").agg(
        F.min("_group").alias("_group"), F.max("_pending").alias("open_transaction")
    )
    return first.select("group_id", *[F.col(f"_group.{c}").alias(c) for c in _HELD_COLUMNS[1:]], "open_transaction")


def commits_before_group_records(offsets: DataFrame, live_modern: DataFrame, group_type: str) -> DataFrame:
    """Groups of `group_type` with a live offset commit before their first live record of that type, in
    their __consumer_offsets partition: (group_id, source_partition, commits), the commits that come
    first.

    The coordinator replays such a commit into a simple classic group; brokers before KAFKA-17306
    (consumer) and KAFKA-20254 (streams) then fail the partition's load on the group's records
    (`BrokerVersion.load_fails_on_early_commits_of`). The live records are the log as compaction leaves
    it, so this is what a compacted partition holds; older records still before the cleaner's point can
    put a group record first for now.
    """
    key = ["group_id", "source_partition"]
    first = (
        live_modern.where(F.col("group_type") == group_type)
        .groupBy(*key)
        .agg(F.min("source_offset").alias("_first_record"))
    )
    return (
        offsets.join(F.broadcast(first), key)
        .where(F.col("source_offset") < F.col("_first_record"))
        .groupBy(*key)
        .agg(F.count(F.lit(1)).alias("commits"))
    )
