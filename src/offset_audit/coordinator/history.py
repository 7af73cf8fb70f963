"""A group's history from the log: every commit, every state change, and why each deletion happened.

The audit judges the state at the end of the log; this replays it forward. Each tombstone the
coordinator wrote is judged against the state the coordinator held just before it, with the audit's
own code: the records of the group before the tombstone (its log prefix) go through the same replay
(`replay.coordinator_groups`, last record wins) and the same rules (`verdicts.judged_offsets`,
`rules.expires_at_ms`, `rules.is_expired`) at the tombstone's time. One implementation of the rules;
history only chooses the moments. (runs/history.py, named after the command, runs this one.)

A prefix is per judged moment: every such moment gets its own copy of the group's earlier records,
under a synthetic group id (`<position>\\0<group id>`), so that the unchanged replay functions rebuild
one state per moment side by side. Only what the moment needs is copied: for an offset tombstone, the
commits of that partition; for a group tombstone, the group's commits; and the group's metadata,
members and KIP-848/streams/share records, which are few.

Causes (reference 4.1-4.4):
- EXPIRED: the expiry sweep would have written the tombstone then. For an offset: expired at the
  tombstone's time under the rule that held, and no later than one `offsets.retention.check.interval.ms`
  (the sweep's period, and its own lateness) after it expired, or after the group's last change where
  that came later (a group that kept its offsets while it ran, until a member left). For a group:
  removable (Empty, not a share group, no open transaction), no offsets left, and every offset
  tombstone of its batch (same time) itself EXPIRED;
  a group with none in its batch was removed within one interval of its last change.
- TOPIC_DELETED: not EXPIRED, and the dump shows the topic was deleted then: the coordinator
  tombstones every group's offsets of a deleted topic at once, so tombstones of the topic from two or
  more groups written at once (one time, one partition, side by side) with no group tombstone beside
  them; or the topic's id changes across the tombstone (an id last committed no later than it,
  another first committed no earlier). From 4.3 the deletion only takes offsets stored with the
  deleted id or none, so by 4.3+ rules an offset stored with another id is not taken by it
  (`BrokerVersion.topic_deletion_matches_topic_ids`).
- DELETED_BY_REQUEST: anything else (OffsetDelete, DeleteGroups, an admin tool).
- UNKNOWN: the commit an offset tombstone deletes is not in the dump (compacted away or never there).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from offset_audit import constants as K
from offset_audit.broker_versions import NEWEST_VERSION, BrokerVersion
from offset_audit.coordinator import replay, rules, verdicts
from offset_audit.coordinator.events import (
    COMMITTED,
    DELETED_BY_REQUEST,
    EXPIRED,
    GROUP_DELETED,
    GROUP_EMPTY,
    GROUP_STABLE,
    OFFSET_DELETED,
    TOPIC_DELETED,
    UNKNOWN,
)
from offset_audit.timestamps import spark_timestamp

SEP = "\u0000"
OFFSET_KEY = ["group_id", "topic", "partition"]
GROUP_RECORD_TYPES = (K.CONSUMER_GROUP_METADATA, K.STREAMS_GROUP_METADATA, K.SHARE_GROUP_METADATA)
MODERN_TYPE_NAMES = {K.CONSUMER_GROUP_METADATA: "consumer", K.STREAMS_GROUP_METADATA: "streams"}
MODERN_TYPE_NAMES[K.SHARE_GROUP_METADATA] = "share"
COLUMNS = [
    "group_id",
    "topic",
    "partition",
    "event_time",
    "event_time_ms",
    "source_partition",
    "source_offset",
    "event",
    "cause",
    "committed_offset",
    "commit_timestamp",
    "commit_timestamp_ms",
    "transaction",
    "group_type",
    "protocol_type",
    "group_state",
    "generation",
    "member_count",
    "rule",
    "base_timestamp",
    "base_timestamp_ms",
    "expires_at",
    "expires_at_ms",
    "sweep_window_end_ms",
]


@dataclass(frozen=True)
class DecodedLog:
    """The decode tables, every record of them (tombstones included), as history reads them."""

    commits: DataFrame
    metadata: DataFrame
    members: DataFrame
    modern: DataFrame
    # The topic ids each topic was committed with (`topic_incarnations`): from `commits` unless given, as
    # `judged_part` gives them, from every commit of the log it keeps only some commits of.
    incarnations: DataFrame | None = None

    def only(self, groups: list[str] | None, topic: str | None) -> DecodedLog:
        """The records of these groups, and with a topic, of the groups that committed to it. All of a
        kept group's records stay: its state and its other offsets decide its deletions' causes
        (`offset_history(..., topic=...)` leaves the other topics' events out of the result)."""
        commits, metadata, members, modern = self.commits, self.metadata, self.members, self.modern
        if topic is not None:
            ids = F.broadcast(commits.where(F.col("topic") == topic).select("group_id").distinct())
            commits, metadata, members, modern = (
                f.join(ids, "group_id", "left_semi") for f in (commits, metadata, members, modern)
            )
        if groups:
            keep = F.col("group_id").isin(*groups)
            commits, metadata, members, modern = (f.where(keep) for f in (commits, metadata, members, modern))
        return DecodedLog(commits, metadata, members, modern)

    def judged_part(self) -> DecodedLog:
        """What judging the tombstones reads of the log (`offset_deletions`, `group_deletions`): the
        commits of each partition an offset tombstone deletes and of each group a group tombstone
        deletes, the tombstones, the group records, and the topics' incarnations from every commit.
        Judging reads the commits many times over, and most commits are of none of them: nearly all of
        a log's records are commits of offsets that are never deleted."""
        commits = self.commits
        partitions = (
            commits.where(F.col("is_tombstone"))
            .select(*OFFSET_KEY)
            .distinct()
            .withColumn("_offset_deleted", F.lit(True))
        )
        classic, modern = _group_tombstones(self)
        groups = (
            classic.select("group_id")
            .unionByName(modern.select("group_id"))
            .distinct()
            .withColumn("_group_deleted", F.lit(True))
        )
        judged = (
            commits.join(partitions, OFFSET_KEY, "left")
            .join(groups, "group_id", "left")
            .where(F.col("is_tombstone") | F.col("_offset_deleted") | F.col("_group_deleted"))
            .select(*commits.columns)
        )
        incarnations = self.incarnations if self.incarnations is not None else topic_incarnations(commits)
        return DecodedLog(judged, self.metadata, self.members, self.modern, incarnations)


def topic_incarnations(commits: DataFrame) -> DataFrame:
    """Each topic id each topic name was committed with, and when first and last: a topic deleted and
    created again has a new id (`_topic_deletions`)."""
    return (
        commits.where(~F.col("is_tombstone") & F.col("topic_id").isNotNull())
        .groupBy("topic", "topic_id")
        .agg(F.min("record_timestamp_ms").alias("_first_ms"), F.max("record_timestamp_ms").alias("_last_ms"))
    )


def _group_tombstones(log: DecodedLog) -> tuple[DataFrame, DataFrame]:
    """The group tombstones: classic metadata ones, and the KIP-848/streams/share group records' ones."""
    classic = log.metadata.where(F.col("is_tombstone"))
    modern = log.modern.where(F.col("is_tombstone") & F.col("record_type").isin(*GROUP_RECORD_TYPES))
    return classic, modern


def _before(record: str, point: str, inclusive: bool = False) -> Column:
    """Whether `record`'s log position comes before `point`'s (a group lives in one partition; across
    a change of partition count, the newer layout comes later)."""
    same = F.col(f"{record}.source_partition") == F.col(f"{point}.source_partition")
    earlier = (
        F.col(f"{record}.source_offset") <= F.col(f"{point}.source_offset")
        if inclusive
        else (F.col(f"{record}.source_offset") < F.col(f"{point}.source_offset"))
    )
    return (F.col(f"{record}.source_partition") < F.col(f"{point}.source_partition")) | (same & earlier)


def _point_id(frame: str = "") -> Column:
    prefix = f"{frame}." if frame else ""
    return F.concat_ws(
        ":", F.col(f"{prefix}source_partition").cast("string"), F.col(f"{prefix}source_offset").cast("string")
    )


def _synthetic(point: Column, group: Column) -> Column:
    return F.concat(point, F.lit(SEP), group)


def _prefix(records: DataFrame, points: DataFrame, on: list[str], inclusive: bool = False) -> DataFrame:
    """Each point's copy of the records before it (same `on` keys), under the synthetic group id."""
    joined = records.alias("r").join(points.alias("p"), [F.col(f"r.{k}") == F.col(f"p.{k}") for k in on])
    copied = joined.where(_before("r", "p", inclusive)).select(
        "r.*", _synthetic(F.col("p.point_id"), F.col("r.group_id")).alias("_synthetic")
    )
    return copied.drop("group_id").withColumnRenamed("_synthetic", "group_id")


def _original(column: str) -> Column:
    """The real group id of a synthetic one: everything after the first separator (a point id has
    none, so a group id holding the separator itself still comes back whole)."""
    return F.expr(f"substring({column}, instr({column}, chr(0)) + 1)")


def _members_of(metadata_prefix: DataFrame, members: DataFrame) -> DataFrame:
    """The members of every metadata record copied into a prefix, under the same synthetic id."""
    record = ["source_partition", "source_offset"]
    keyed = metadata_prefix.select(
        F.col("group_id").alias("_synthetic"), _original("group_id").alias("group_id"), *record
    )
    # Null-safe: console-consumer text without --partition has no source_partition.
    on = [F.col(f"m.{c}").eqNullSafe(F.col(f"k.{c}")) for c in ["group_id", *record]]
    joined = members.alias("m").join(keyed.alias("k"), on).select("m.*", "k._synthetic")
    return joined.drop("group_id").withColumnRenamed("_synthetic", "group_id")


def _split(frame: DataFrame) -> DataFrame:
    """Back from the synthetic id: the point it was judged at and the real group id."""
    return frame.withColumn("point_id", F.substring_index("group_id", SEP, 1)).withColumn(
        "group_id", _original("group_id")
    )


def _as_it_is(frame: DataFrame) -> DataFrame:
    return frame


@dataclass(frozen=True)
class Moments:
    """The moments the tombstones are judged at, and what the coordinator held just before each: its
    offsets, judged by the broker version's rules (rule and clock), and its groups, by `point_id` and
    the real group id."""

    offset_tombstones: DataFrame
    group_tombstones: DataFrame
    judged: DataFrame
    groups: DataFrame


def moments(
    log: DecodedLog, version: BrokerVersion = NEWEST_VERSION, hold: Callable[[DataFrame], DataFrame] = _as_it_is
) -> Moments:
    """Every tombstone's moment and the state just before it, through the audit's own replay: one replay
    for both kinds of tombstone, the prefix of each its own. An offset tombstone's moment sees the
    commits of its partition; a group tombstone's, all the group's. Both see the group's records.
    `hold` keeps what the replay's later steps read twice (see `offset_history`)."""
    offset_points = _points(log.commits.where(F.col("is_tombstone")), OFFSET_KEY)
    classic, modern = _group_tombstones(log)
    group_points = (
        _points(classic.withColumn("_type", F.lit("classic")), ["group_id", "_type"])
        .unionByName(_points(modern.withColumn("_type", F.col("group_type")), ["group_id", "_type"]))
        .dropDuplicates(["group_id", "point_id"])
    )
    position = ["group_id", "source_partition", "source_offset", "point_id"]
    points = offset_points.select(*position).unionByName(group_points.select(*position))
    commits = _prefix(log.commits, offset_points, OFFSET_KEY).unionByName(
        _prefix(log.commits, group_points, ["group_id"])
    )
    metadata = _prefix(log.metadata, points, ["group_id"])
    members = _members_of(metadata, log.members)
    modern_records = _prefix(log.modern, points, ["group_id"])
    pending = replay.pending_commits(commits)
    offsets = hold(replay.live_offsets(commits, pending))
    groups = replay.coordinator_groups(
        offsets,
        replay.live_group_metadata(metadata),
        members,
        replay.live_modern_records(modern_records),
        pending,
        version,
    )
    groups = hold(groups)
    judged = verdicts.judged_offsets(offsets, groups, version)
    return Moments(offset_points, group_points, hold(_split(judged)), hold(_split(groups)))


def _points(records: DataFrame, key: list[str]) -> DataFrame:
    return records.select(*key, "source_partition", "source_offset", "record_timestamp_ms").withColumn(
        "point_id", _point_id()
    )


def _group_changes(log: DecodedLog) -> DataFrame:
    """Every metadata record of every group (classic, KIP-848, streams, share): where and when it changed."""
    columns = ["group_id", "source_partition", "source_offset", "record_timestamp_ms"]
    return log.metadata.select(*columns).unionByName(log.modern.select(*columns))


def _last_change(changes: DataFrame, points: DataFrame) -> DataFrame:
    """Per point (point_id, group_id): the time of the group's last change before it, _last_change_ms."""
    return (
        changes.alias("c")
        .join(points.alias("t"), "group_id")
        .where(_before("c", "t"))
        .groupBy(F.col("t.point_id").alias("point_id"), F.col("group_id"))
        .agg(F.max("c.record_timestamp_ms").alias("_last_change_ms"))
    )


def offset_deletions(
    log: DecodedLog,
    judged_at: Moments,
    retention_minutes: int,
    check_interval_ms: int,
    version: BrokerVersion = NEWEST_VERSION,
) -> DataFrame:
    """OFFSET_DELETED: every offset tombstone with the rule and clock that held just before it, and
    whether the sweep would have written it then."""
    tombstones, judged = judged_at.offset_tombstones, judged_at.judged
    retention = F.lit(retention_minutes)
    found = tombstones.alias("t").join(
        judged.alias("j"),
        (F.col("t.point_id") == F.col("j.point_id"))
        & (F.col("t.group_id") == F.col("j.group_id"))
        & (F.col("t.topic") == F.col("j.topic"))
        & (F.col("t.partition") == F.col("j.partition")),
        "left",
    )
    # The group's last change before the tombstone (a member leaving, a rebalance): an offset already past
    # its time becomes deletable only then (a running group's subscribed offsets), so the sweep that takes
    # it comes within one reach of that change, not of expires_at. Seen on a live 4.3 broker: a streams
    # application that ran past its commits' retention lost its offsets at the first sweep after it left.
    last_change = _last_change(_group_changes(log), tombstones).select(
        F.col("point_id").alias("_point"), F.col("group_id").alias("_group"), "_last_change_ms"
    )
    found = found.join(
        last_change, (F.col("t.point_id") == F.col("_point")) & (F.col("t.group_id") == F.col("_group")), "left"
    )
    rule, base, explicit = F.col("j.rule"), F.col("j.base_timestamp_ms"), F.col("j.expire_timestamp_ms")
    at = F.col("t.record_timestamp_ms")
    expires = rules.expires_at_ms(rule, base, explicit, retention)
    reach = F.lit(rules.sweep_reach_ms(check_interval_ms)).cast("long")
    window_end = F.try_add(F.greatest(expires, F.coalesce(F.col("_last_change_ms"), expires)), reach)
    expired = rules.is_expired(rule, base, explicit, at, retention)
    found = found.join(_topic_deletions(log, tombstones), F.col("t.point_id") == F.col("_deletion_point"), "left")
    stored_id = F.col("j.topic_id")
    by_id = F.size(F.coalesce(F.col("_deleted_ids"), F.array())) > 0
    if version.topic_deletion_matches_topic_ids:
        by_id = by_id & (stored_id.isNull() | F.array_contains(F.col("_deleted_ids"), stored_id))
    topic_deleted = F.coalesce(F.col("_deletion_batch"), F.lit(False)) | by_id
    cause = (
        F.when(F.col("j.group_id").isNull(), F.lit(UNKNOWN))
        .when(expired & (at <= window_end), F.lit(EXPIRED))
        .when(topic_deleted, F.lit(TOPIC_DELETED))
        .otherwise(F.lit(DELETED_BY_REQUEST))
    )
    return found.select(
        F.col("t.group_id").alias("group_id"),
        F.col("t.topic").alias("topic"),
        F.col("t.partition").alias("partition"),
        at.alias("event_time_ms"),
        F.col("t.source_partition").alias("source_partition"),
        F.col("t.source_offset").alias("source_offset"),
        F.lit(OFFSET_DELETED).alias("event"),
        cause.alias("cause"),
        F.col("j.committed_offset").alias("committed_offset"),
        F.col("j.commit_timestamp_ms").alias("commit_timestamp_ms"),
        F.col("j.transaction").alias("transaction"),
        F.col("j.group_type").alias("group_type"),
        F.col("j.protocol_type").alias("protocol_type"),
        F.col("j.group_state").alias("group_state"),
        F.col("j.generation").alias("generation"),
        F.col("j.member_count").alias("member_count"),
        rule.alias("rule"),
        base.alias("base_timestamp_ms"),
        expires.alias("expires_at_ms"),
        window_end.alias("sweep_window_end_ms"),
    )


def _topic_deletions(log: DecodedLog, tombstones: DataFrame) -> DataFrame:
    """Per offset tombstone (`_deletion_point`), what the dump shows of a deletion of its topic then.

    `_deletion_batch`: the topic's tombstones of two or more groups written at once (at that time in that
    partition, side by side in the log) with no group tombstone beside them. `_deleted_ids`: the topic
    ids last committed no later than the tombstone while another id of the name is first committed no
    earlier (the topic deleted and created again).
    """
    at = ["source_partition", "record_timestamp_ms"]
    groups_gone = (
        log.metadata.where(F.col("is_tombstone"))
        .select(*at)
        .unionByName(
            log.modern.where(F.col("is_tombstone") & F.col("record_type").isin(*GROUP_RECORD_TYPES)).select(*at)
        )
        .distinct()
        .withColumn("_group_gone", F.lit(True))
    )
    # One write: the offset tombstones of that time in that partition lie side by side in the log.
    one_write = (
        tombstones.groupBy(*at)
        .agg(F.count(F.lit(1)).alias("_n"), F.min("source_offset").alias("_lo"), F.max("source_offset").alias("_hi"))
        .where(F.col("_hi") - F.col("_lo") + 1 == F.col("_n"))
        .select(*at)
    )
    batches = (
        tombstones.groupBy("topic", *at)
        .agg(F.count_distinct("group_id").alias("_groups"))
        .join(one_write, at)
        .join(groups_gone, at, "left")
        .where((F.col("_groups") >= 2) & F.col("_group_gone").isNull())
        .select("topic", *at, F.lit(True).alias("_deletion_batch"))
    )
    incarnations = log.incarnations if log.incarnations is not None else topic_incarnations(log.commits)
    old, new = incarnations.alias("old"), incarnations.alias("new")
    points = tombstones.select("point_id", "topic", *at).alias("t")
    recreated = (
        points.join(
            old, (F.col("old.topic") == F.col("t.topic")) & (F.col("old._last_ms") <= F.col("t.record_timestamp_ms"))
        )
        .join(
            new,
            (F.col("new.topic") == F.col("t.topic"))
            & (F.col("new._first_ms") >= F.col("t.record_timestamp_ms"))
            & (F.col("new.topic_id") != F.col("old.topic_id")),
        )
        .groupBy(F.col("t.point_id").alias("point_id"))
        .agg(F.array_distinct(F.collect_list("old.topic_id")).alias("_deleted_ids"))
    )
    return (
        tombstones.select("point_id", "topic", *at)
        .join(batches, ["topic", *at], "left")
        .join(recreated, "point_id", "left")
        .select(F.col("point_id").alias("_deletion_point"), "_deletion_batch", "_deleted_ids")
    )


def group_deletions(
    log: DecodedLog,
    judged_at: Moments,
    offset_deleted: DataFrame,
    check_interval_ms: int,
    version: BrokerVersion = NEWEST_VERSION,
) -> DataFrame:
    """GROUP_DELETED: every group tombstone (classic metadata, or a KIP-848/streams/share group record),
    with the group's state just before it and whether the sweep would have removed the group then."""
    tombstones, judged, groups = judged_at.group_tombstones, judged_at.judged, judged_at.groups
    live_offsets = judged.groupBy("point_id", "group_id").agg(F.count(F.lit(1)).alias("_live_offsets"))
    # The offset tombstones written with the group's (one sweep, or one DeleteGroups): the group's
    # offset tombstones since its last other record and within one sweep interval before it.
    others = log.commits.where(~F.col("is_tombstone")).select("group_id", "source_partition", "source_offset")
    others = others.unionByName(log.metadata.select("group_id", "source_partition", "source_offset"))
    others = others.unionByName(log.modern.select("group_id", "source_partition", "source_offset"))
    last_other = (
        others.alias("x")
        .join(tombstones.alias("t"), "group_id")
        .where(_before("x", "t"))
        .groupBy(F.col("t.point_id").alias("point_id"), F.col("group_id"))
        .agg(F.max(F.struct(F.col("x.source_partition"), F.col("x.source_offset"))).alias("_other"))
    )
    window_start = F.col("t.record_timestamp_ms") - F.lit(rules.sweep_reach_ms(check_interval_ms))
    after_other = F.col("_other").isNull() | (
        F.struct(F.col("o.source_partition"), F.col("o.source_offset")) > F.col("_other")
    )
    batch = (
        tombstones.alias("t")
        .join(last_other, ["point_id", "group_id"], "left")
        .join(offset_deleted.alias("o"), "group_id")
        .where(_before("o", "t") & (F.col("o.event_time_ms") >= window_start) & after_other)
        .groupBy(F.col("t.point_id").alias("point_id"), F.col("group_id"))
        .agg(
            F.count(F.lit(1)).alias("_batch"),
            F.min((F.col("o.cause") == EXPIRED).cast("int")).alias("_batch_expired"),
        )
    )
    # The last change before the tombstone: a metadata record, or an offset tombstone of the group.
    deletions = offset_deleted.select(
        "group_id", "source_partition", "source_offset", F.col("event_time_ms").alias("record_timestamp_ms")
    )
    last_change = _last_change(_group_changes(log).unionByName(deletions), tombstones)
    frame = (
        tombstones.join(groups, ["point_id", "group_id"], "left")
        .join(live_offsets, ["point_id", "group_id"], "left")
        .join(batch, ["point_id", "group_id"], "left")
        .join(last_change, ["point_id", "group_id"], "left")
        .join(last_other, ["point_id", "group_id"], "left")
    )
    # A group the log shows records of, but no state just before its tombstone, is a simple group whose
    # offsets were all deleted first (DeleteGroups tombstones the offsets, then the group): the
    # coordinator still holds it, Empty, until the group tombstone. Only a group the log shows nothing of
    # before its tombstone is UNKNOWN.
    emptied_simple = F.col("group_state").isNull() & F.col("_other").isNotNull()
    group_type = F.when(emptied_simple, F.lit("classic")).otherwise(F.col("group_type"))
    group_state = F.when(emptied_simple, F.lit("Empty")).otherwise(F.col("group_state"))
    at = F.col("record_timestamp_ms")
    since = F.greatest(F.col("current_state_timestamp_ms"), F.col("_last_change_ms"))
    removable = rules.group_can_be_removed(
        group_type, group_state, F.col("open_transaction"), version, F.col("topology_description_stored")
    )
    swept_with_offsets = F.coalesce(F.col("_batch"), F.lit(0)) > 0
    reach = F.lit(rules.sweep_reach_ms(check_interval_ms)).cast("long")
    by_itself = F.coalesce(at <= F.try_add(since, reach), F.lit(False))
    cause = (
        F.when(group_state.isNull(), F.lit(UNKNOWN))
        .when(
            removable
            & (F.coalesce(F.col("_live_offsets"), F.lit(0)) == 0)
            & F.when(swept_with_offsets, F.col("_batch_expired") == 1).otherwise(by_itself),
            F.lit(EXPIRED),
        )
        .otherwise(F.lit(DELETED_BY_REQUEST))
    )
    return frame.select(
        "group_id",
        F.lit(None).cast("string").alias("topic"),
        F.lit(None).cast("int").alias("partition"),
        at.alias("event_time_ms"),
        "source_partition",
        "source_offset",
        F.lit(GROUP_DELETED).alias("event"),
        cause.alias("cause"),
        F.lit(None).cast("long").alias("committed_offset"),
        F.lit(None).cast("long").alias("commit_timestamp_ms"),
        F.lit(None).cast("string").alias("transaction"),
        F.coalesce(group_type, F.col("_type")).alias("group_type"),
        "protocol_type",
        group_state.alias("group_state"),
        "generation",
        F.when(emptied_simple, F.lit(0)).otherwise(F.col("member_count")).alias("member_count"),
        F.lit(None).cast("string").alias("rule"),
        since.alias("base_timestamp_ms"),
        F.lit(None).cast("long").alias("expires_at_ms"),
        F.lit(None).cast("long").alias("sweep_window_end_ms"),
    )


def commits(log: DecodedLog) -> DataFrame:
    """COMMITTED: every offset commit record, transactional or not (`transaction`)."""
    return log.commits.where(~F.col("is_tombstone")).select(
        "group_id",
        "topic",
        "partition",
        F.col("record_timestamp_ms").alias("event_time_ms"),
        "source_partition",
        "source_offset",
        F.lit(COMMITTED).alias("event"),
        F.lit(None).cast("string").alias("cause"),
        "committed_offset",
        "commit_timestamp_ms",
        "transaction",
        *[F.lit(None).cast(t).alias(c) for c, t in _GROUP_NULLS],
        F.lit(None).cast("string").alias("rule"),
        F.lit(None).cast("long").alias("base_timestamp_ms"),
        F.lit(None).cast("long").alias("expires_at_ms"),
        F.lit(None).cast("long").alias("sweep_window_end_ms"),
    )


_GROUP_NULLS = [
    ("group_type", "string"),
    ("protocol_type", "string"),
    ("group_state", "string"),
    ("generation", "int"),
    ("member_count", "int"),
]


def _state_event(state: Column) -> Column:
    return F.when(state == "Empty", F.lit(GROUP_EMPTY)).otherwise(F.lit(GROUP_STABLE))


def group_states(log: DecodedLog) -> DataFrame:
    """GROUP_STABLE / GROUP_EMPTY: each classic metadata record, as the coordinator loads it (members:
    Stable, none: Empty); and each KIP-848/streams/share group record (an epoch), with the group's state
    from its records up to and including it."""
    metadata = log.metadata.where(~F.col("is_tombstone"))
    points = _points(metadata, ["group_id"])
    keyed = metadata.withColumn("_synthetic", _synthetic(_point_id(), F.col("group_id")))
    members = _members_of(keyed.drop("group_id").withColumnRenamed("_synthetic", "group_id"), log.members)
    classic = _split(replay.classic_groups(keyed.drop("group_id").withColumnRenamed("_synthetic", "group_id"), members))
    classic_events = classic.join(points, ["point_id", "group_id"]).select(
        "group_id",
        "record_timestamp_ms",
        "source_partition",
        "source_offset",
        "group_type",
        "protocol_type",
        "group_state",
        "generation",
        "member_count",
    )
    records = log.modern.where(~F.col("is_tombstone") & F.col("record_type").isin(*GROUP_RECORD_TYPES))
    modern_points = _points(records, ["group_id"])
    prefix = _prefix(log.modern, modern_points, ["group_id"], inclusive=True)
    modern = _split(replay.modern_groups(replay.live_modern_records(prefix)))
    modern_events = modern.join(modern_points, ["point_id", "group_id"]).select(
        "group_id",
        "record_timestamp_ms",
        "source_partition",
        "source_offset",
        "group_type",
        F.lit(None).cast("string").alias("protocol_type"),
        "group_state",
        F.col("generation").cast("int").alias("generation"),
        F.col("member_count").cast("int").alias("member_count"),
    )
    both = classic_events.unionByName(modern_events)
    return both.select(
        "group_id",
        F.lit(None).cast("string").alias("topic"),
        F.lit(None).cast("int").alias("partition"),
        F.col("record_timestamp_ms").alias("event_time_ms"),
        "source_partition",
        "source_offset",
        _state_event(F.col("group_state")).alias("event"),
        F.lit(None).cast("string").alias("cause"),
        F.lit(None).cast("long").alias("committed_offset"),
        F.lit(None).cast("long").alias("commit_timestamp_ms"),
        F.lit(None).cast("string").alias("transaction"),
        "group_type",
        "protocol_type",
        "group_state",
        F.col("generation").cast("int").alias("generation"),
        F.col("member_count").cast("int").alias("member_count"),
        F.lit(None).cast("string").alias("rule"),
        F.lit(None).cast("long").alias("base_timestamp_ms"),
        F.lit(None).cast("long").alias("expires_at_ms"),
        F.lit(None).cast("long").alias("sweep_window_end_ms"),
    )


def offset_history(
    log: DecodedLog,
    retention_minutes: int,
    check_interval_ms: int,
    topic: str | None = None,
    version: BrokerVersion = NEWEST_VERSION,
    judged: DecodedLog | None = None,
    hold: Callable[[DataFrame], DataFrame] = _as_it_is,
) -> DataFrame:
    """Every event of the log, one row each, with the TIMESTAMP columns shown from the milliseconds;
    with `topic`, that topic's offset events and the group events. Causes are judged by the rules of
    that broker version, on `judged` (`log.judged_part()` unless given).

    `hold` is how the caller keeps a frame computed once, for the events are built of parts read more
    than once: the offset deletions (the group deletions read them twice) and the group events. By
    default nothing is kept and one query computes the offset deletions three times over."""
    judged = log.judged_part() if judged is None else judged
    judged_at = moments(judged, version, hold)
    deleted = hold(offset_deletions(judged, judged_at, retention_minutes, check_interval_ms, version))
    events = (
        commits(log)
        .unionByName(hold(group_states(log)))
        .unionByName(deleted)
        .unionByName(hold(group_deletions(judged, judged_at, deleted, check_interval_ms, version)))
    )
    if topic is not None:
        events = events.where(F.col("topic").isNull() | (F.col("topic") == topic))
    return events.select(
        *[
            spark_timestamp(F.col(f"{c}_ms")).alias(c)
            if c in ("event_time", "commit_timestamp", "base_timestamp", "expires_at")
            else F.col(c)
            for c in COLUMNS
        ]
    )
