"""Small, readable DataFrames of coordinator state for the rule and replay tests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from offset_audit.timestamps import datetime_of, millis_of

AS_OF = datetime(2026, 1, 10, tzinfo=UTC)
WEEK = 10080  # minutes, the broker default

GROUPS_SCHEMA = (
    "group_id string, group_type string, protocol_type string, group_state string, generation int, "
    "current_state_timestamp timestamp, current_state_timestamp_ms bigint, member_count int, "
    "subscribed_topics array<string>, open_transaction boolean, topology_description_stored boolean"
)
OFFSETS_SCHEMA = (
    "group_id string, topic string, partition int, committed_offset bigint, leader_epoch int, metadata string, "
    "commit_timestamp timestamp, commit_timestamp_ms bigint, expire_timestamp timestamp, expire_timestamp_ms bigint, "
    "source_partition int, source_offset bigint, pending_transaction boolean, value_version smallint"
)


def at(day: int, hour: int = 0, ms: int = 0) -> datetime:
    return datetime(2026, 1, day, hour, tzinfo=UTC) + timedelta(milliseconds=ms)


def group(
    group_id,
    group_type="classic",
    protocol_type="consumer",
    state="Stable",
    cst=None,
    members=1,
    topics=None,
    open_transaction=False,
    description_stored=False,
):
    return (
        group_id, group_type, protocol_type, state, 3, *_both(cst), members, topics, open_transaction,
        description_stored,
    )  # fmt: skip


def offset(
    group_id,
    topic="orders",
    partition=0,
    committed=100,
    commit=None,
    expire=None,
    source_offset=0,
    pending=False,
    value_version=None,
):
    """An offset; its value version is 1 with an explicit expire timestamp, else 3, unless given."""
    commit = at(1) if commit is None else commit
    version = value_version if value_version is not None else (1 if expire is not None else 3)
    return (
        group_id, topic, partition, committed, None, "", *_both(commit), *_both(expire), 0, source_offset, pending,
        version,
    )  # fmt: skip


def _both(moment):
    """A time as the decode tables carry it: TIMESTAMP and exact epoch milliseconds. An int is
    milliseconds that no date may be able to show."""
    if moment is None:
        return (None, None)
    if isinstance(moment, int):
        return (datetime_of(moment), moment)
    return (moment, millis_of(moment))


def frames(spark, groups, offsets):
    return spark.createDataFrame(groups, GROUPS_SCHEMA), spark.createDataFrame(offsets, OFFSETS_SCHEMA)
