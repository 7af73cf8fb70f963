"""Per-offset and per-group verdicts, deletion candidates and what-if results.

Pure functions: coordinator state (offsets + groups from `offset_audit.coordinator.replay`) in, verdict tables
out. `as_of` and the retention are plain values so one state can be judged at many points.
"""

from __future__ import annotations

from datetime import datetime

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from offset_audit.broker_versions import NEWEST_VERSION, BrokerVersion
from offset_audit.coordinator import rules
from offset_audit.coordinator.replay import GROUP_COLUMNS
from offset_audit.timestamps import millis_of, spark_timestamp


def _scenario(as_of: datetime, retention_minutes: int) -> list[Column]:
    """The as_of and retention every verdict row carries."""
    return [F.lit(as_of).cast("timestamp").alias("as_of"), F.lit(retention_minutes).alias("retention_minutes")]


def judged_offsets(offsets: DataFrame, groups: DataFrame, version: BrokerVersion = NEWEST_VERSION) -> DataFrame:
    """Each live offset with its group and the rule that decides its expiry (retention-independent), by
    the rules of that broker version."""
    # Groups are few next to offsets: broadcast them rather than shuffle every offset.
    joined = offsets.join(F.broadcast(groups), "group_id", "left")
    rule = rules.expiry_rule(
        F.col("group_type"),
        F.col("protocol_type"),
        F.col("group_state"),
        F.col("subscribed_topics"),
        F.col("topic"),
        F.col("expire_timestamp_ms"),
        F.col("pending_transaction"),
        version,
    )
    subscribed = F.when(
        rules.subscription_known(F.col("subscribed_topics")), F.array_contains("subscribed_topics", F.col("topic"))
    )
    return joined.select(
        "*",
        rule.alias("rule"),
        subscribed.alias("subscribed"),
        rules.delete_error(
            F.col("group_type"),
            F.col("protocol_type"),
            F.col("group_state"),
            F.col("subscribed_topics"),
            F.col("topic"),
            version,
        ).alias("delete_error"),
    ).withColumn(
        "base_timestamp_ms",
        rules.base_timestamp_ms(F.col("rule"), F.col("commit_timestamp_ms"), F.col("current_state_timestamp_ms")),
    )


def partition_verdicts(
    judged: DataFrame,
    as_of: datetime,
    retention_minutes: int,
    check_interval_ms: int,
    end_offsets: DataFrame | None = None,
    version: BrokerVersion = NEWEST_VERSION,
) -> DataFrame:
    """One row per committed offset: rule, clocks, expiry, OffsetDelete answer and, with end offsets, lag.

    Every time is judged on Kafka's milliseconds; the TIMESTAMP columns only show them (null where no
    date can, see offset_audit.timestamps).
    """
    as_of_ms = F.lit(millis_of(as_of))
    retention = F.lit(retention_minutes)
    expiry = rules.expires_at_ms(F.col("rule"), F.col("base_timestamp_ms"), F.col("expire_timestamp_ms"), retention)
    expired = rules.is_expired(
        F.col("rule"), F.col("base_timestamp_ms"), F.col("expire_timestamp_ms"), as_of_ms, retention
    )
    issue = rules.known_issue(
        F.col("rule"),
        F.col("group_type"),
        F.col("group_state"),
        F.col("protocol_type"),
        F.col("value_version"),
        F.col("expire_timestamp_ms"),
        F.col("commit_timestamp_ms"),
        as_of_ms,
        retention,
        version,
    )
    frame = judged.withColumn("expires_at_ms", expiry).withColumn("expired", expired)
    if end_offsets is not None:
        frame = frame.join(
            end_offsets.select("topic", "partition", "log_start_offset", "log_end_offset"),
            ["topic", "partition"],
            "left",
        )
    else:
        frame = frame.withColumn("log_start_offset", F.lit(None).cast("bigint")).withColumn(
            "log_end_offset", F.lit(None).cast("bigint")
        )
    # greatest() skips nulls, so keep lag null when the partition has no end offset.
    lag = F.when(
        F.col("log_end_offset").isNotNull(), F.greatest(F.col("log_end_offset") - F.col("committed_offset"), F.lit(0))
    )
    # Lag of a partition the group does not consume (no members, or a topic it left) only grows.
    stale = (F.coalesce(F.col("member_count"), F.lit(0)) == 0) | (F.col("subscribed") == F.lit(False))
    return frame.select(
        *_scenario(as_of, retention_minutes),
        "group_id",
        "topic",
        "partition",
        "committed_offset",
        "leader_epoch",
        "metadata",
        "commit_timestamp",
        "commit_timestamp_ms",
        F.col("expire_timestamp").alias("explicit_expire_timestamp"),
        F.col("expire_timestamp_ms").alias("explicit_expire_timestamp_ms"),
        "group_type",
        "protocol_type",
        "group_state",
        "subscribed",
        "rule",
        spark_timestamp(F.col("base_timestamp_ms")).alias("base_timestamp"),
        "base_timestamp_ms",
        spark_timestamp(F.col("expires_at_ms")).alias("expires_at"),
        "expires_at_ms",
        "expired",
        issue.alias("known_issue"),
        F.try_subtract(F.col("expires_at_ms"), as_of_ms).alias("time_to_expiry_ms"),
        # The sweep runs every offsets.retention.check.interval.ms: the tombstone appears at the first
        # run at or after expires_at (reference 4.1).
        _sweep_window_end(F.col("expires_at_ms"), check_interval_ms).alias("sweep_window_end"),
        F.col("delete_error").isNull().alias("deletable_now"),
        "delete_error",
        "log_start_offset",
        "log_end_offset",
        lag.alias("lag"),
        F.when(F.col("log_end_offset").isNotNull(), F.when(stale, lag).otherwise(F.lit(0)))
        .cast("bigint")
        .alias("stale_lag"),
        (F.col("committed_offset") < F.col("log_start_offset")).alias("offset_out_of_range"),
        F.col("source_partition").alias("offsets_partition"),
        F.col("source_offset").alias("offsets_record_offset"),
    )


def group_verdicts(
    partitions: DataFrame,
    groups: DataFrame,
    as_of: datetime,
    retention_minutes: int,
    check_interval_ms: int,
    version: BrokerVersion = NEWEST_VERSION,
) -> DataFrame:
    """One row per group: its state and when, if nothing changes, the sweep removes it."""
    per_group = partitions.groupBy("group_id").agg(
        F.count(F.lit(1)).alias("offset_count"),
        F.sum(F.col("expired").cast("int")).alias("expired_offset_count"),
        F.min(F.when(~F.col("expired"), F.col("expires_at_ms"))).alias("next_expiry_at_ms"),
        F.max("expires_at_ms").alias("_last_expiry_ms"),
        F.max(F.col("expires_at_ms").isNull().cast("int")).alias("_never"),
        # sum() skips the partitions without a known lag and is null when none has one; try_sum is
        # null, not an error, past the largest long.
        F.try_sum("lag").alias("lag_total"),
        F.try_sum("stale_lag").alias("stale_lag_total"),
        F.count_if(F.col("lag") > 0).alias("_lagging"),
        F.count("lag").alias("_lag_known"),
    )
    frame = groups.join(per_group, "group_id", "left")
    offsets = F.coalesce(F.col("offset_count"), F.lit(0))
    expired = F.coalesce(F.col("expired_offset_count"), F.lit(0))
    removable = rules.group_can_be_removed(
        F.col("group_type"),
        F.col("group_state"),
        F.col("open_transaction"),
        version,
        F.col("topology_description_stored"),
    )
    # An Empty group without offsets goes at the next sweep; with offsets, after its last one expires.
    group_expires_at_ms = (
        F.when(~removable, F.lit(None).cast("long"))
        .when(offsets == 0, F.lit(millis_of(as_of)))
        .when(F.col("_never") == 1, F.lit(None).cast("long"))
        .otherwise(F.col("_last_expiry_ms"))
    )
    return frame.select(
        *_scenario(as_of, retention_minutes),
        *GROUP_COLUMNS,  # the group as the coordinator holds it
        "open_transaction",
        offsets.cast("bigint").alias("offset_count"),
        expired.cast("bigint").alias("expired_offset_count"),
        spark_timestamp(F.col("next_expiry_at_ms")).alias("next_expiry_at"),
        "next_expiry_at_ms",
        spark_timestamp(group_expires_at_ms).alias("group_expires_at"),
        group_expires_at_ms.alias("group_expires_at_ms"),
        _sweep_window_end(group_expires_at_ms, check_interval_ms).alias("group_sweep_window_end"),
        # The sweep deletes the group when it can go and every offset it holds has expired (allExpired).
        (removable & (expired == offsets)).alias("would_delete"),
        rules.is_console_consumer_group(F.col("group_id")).alias("console_consumer_group"),
        F.col("lag_total").cast("bigint").alias("lag_total"),
        F.col("stale_lag_total").cast("bigint").alias("stale_lag_total"),
        F.when(F.col("_lag_known") > 0, F.col("_lagging")).cast("bigint").alias("partitions_with_lag"),
    )


def _sweep_window_end(expires_at_ms: Column, check_interval_ms: int) -> Column:
    """expires_at + offsets.retention.check.interval.ms + a sweep's lateness (rules.sweep_reach_ms),
    shown as a TIMESTAMP."""
    return spark_timestamp(F.try_add(expires_at_ms, F.lit(rules.sweep_reach_ms(check_interval_ms)).cast("long")))


# Why an offset is worth deleting, most urgent first.
UNSUBSCRIBED_IN_ACTIVE_GROUP = "UNSUBSCRIBED_TOPIC_OF_ACTIVE_GROUP"
EXPIRED_AWAITING_SWEEP = "EXPIRED_AWAITING_SWEEP"
INACTIVE_GROUP = "INACTIVE_GROUP"


def deletion_candidates(partitions: DataFrame) -> DataFrame:
    """Offsets the broker would delete today (OffsetDelete answers NONE), with why they are worth it.

    First the topics an active group no longer reads: their lag grows forever on dashboards until the
    offset expires. Then offsets already expired that wait for the sweep, then offsets of groups
    without members.
    """
    rows, columns = candidate_rows_and_columns()
    named = [
        F.col(column).alias(name) if isinstance(column, str) else column.alias(name) for name, column in columns.items()
    ]
    return partitions.where(rows).select(*named)


def candidate_rows_and_columns() -> tuple[Column, dict[str, Column | str]]:
    """`deletion_candidates` as the condition on a partition verdict and the columns it becomes (a name:
    the verdict's column as it is), so that the audit writes the candidates in the pass that writes the
    verdicts."""
    active = F.coalesce(F.col("group_state") != "Empty", F.lit(False))
    reason = (
        F.when(active & (F.col("rule") == rules.UNSUBSCRIBED_TOPIC), F.lit(UNSUBSCRIBED_IN_ACTIVE_GROUP))
        .when(F.col("expired"), F.lit(EXPIRED_AWAITING_SWEEP))
        .when(~active, F.lit(INACTIVE_GROUP))
    )
    priority = F.when(reason == UNSUBSCRIBED_IN_ACTIVE_GROUP, 1).when(reason == EXPIRED_AWAITING_SWEEP, 2).otherwise(3)
    rows = F.coalesce(F.col("deletable_now") & reason.isNotNull(), F.lit(False))
    columns: dict[str, Column | str] = {"as_of": "as_of", "retention_minutes": "retention_minutes"}
    columns |= {"priority": priority, "reason": reason}
    for name in ("group_id", "topic", "partition", "group_type", "group_state", "rule"):
        columns[name] = name
    for name in ("expires_at", "expires_at_ms", "lag"):
        columns[name] = name
    columns["expected_answer"] = F.lit("NONE")
    return rows, columns


def whatif_groups(
    judged: DataFrame,
    groups: DataFrame,
    retentions: list[int],
    as_of_points: list[datetime],
    version: BrokerVersion = NEWEST_VERSION,
) -> DataFrame:
    """Per group and scenario (retention, as_of): its offsets, how many expired, and whether the sweep
    would have removed it. One pass over the offsets.

    The rule of an offset does not depend on the retention; only expires_at does, so each offset is
    judged once and crossed with the small grid of scenarios.
    """
    spark = judged.sparkSession
    grid = spark.createDataFrame(
        [(r, t) for r in retentions for t in as_of_points], "retention_minutes int, as_of timestamp"
    )
    scenarios = judged.select("group_id", "rule", "base_timestamp_ms", "expire_timestamp_ms").crossJoin(
        F.broadcast(grid)
    )
    scenarios = scenarios.withColumn(
        "expired",
        rules.is_expired(
            F.col("rule"),
            F.col("base_timestamp_ms"),
            F.col("expire_timestamp_ms"),
            F.unix_millis(F.col("as_of")),
            F.col("retention_minutes"),
        ),
    )
    per_group = scenarios.groupBy("retention_minutes", "as_of", "group_id").agg(
        F.count(F.lit(1)).alias("offsets"),
        F.sum(F.col("expired").cast("int")).alias("expired_offsets"),
    )
    all_groups = groups.select(
        "group_id", "group_type", "group_state", "open_transaction", "topology_description_stored"
    ).crossJoin(F.broadcast(grid))
    per_group = all_groups.join(per_group, ["group_id", "retention_minutes", "as_of"], "left")
    offsets = F.coalesce("offsets", F.lit(0)).cast("bigint")
    expired = F.coalesce("expired_offsets", F.lit(0)).cast("bigint")
    removable = rules.group_can_be_removed(
        F.col("group_type"),
        F.col("group_state"),
        F.col("open_transaction"),
        version,
        F.col("topology_description_stored"),
    )
    return per_group.select(
        "retention_minutes",
        "as_of",
        "group_id",
        "group_type",
        "group_state",
        offsets.alias("offsets"),
        expired.alias("expired_offsets"),
        (removable & (offsets == expired)).alias("would_delete"),
    )


def whatif(per_group: DataFrame) -> DataFrame:
    """Offsets expired and groups removed for every (retention, as_of) pair, from `whatif_groups`."""
    return (
        per_group.groupBy("retention_minutes", "as_of")
        .agg(
            F.sum("offsets").cast("bigint").alias("offsets_total"),
            F.sum("expired_offsets").cast("bigint").alias("offsets_expired"),
            F.count(F.lit(1)).cast("bigint").alias("groups_total"),
            F.sum(F.col("would_delete").cast("int")).cast("bigint").alias("groups_deleted"),
        )
        .orderBy("as_of", "retention_minutes")
    )
