"""KIP-848, share and streams groups' states as the coordinator derives them from their live records
(replay.modern_groups): the bytes of MemberState differ between families, and a streams group's
readiness and subscriptions follow the broker version (StreamsGroup.maybeUpdateGroupState and
isSubscribedToTopic: 4.1.2 against 4.2.1)."""

from __future__ import annotations

import pytest
from pyspark.sql import types as T

from offset_audit import constants as K
from offset_audit.broker_versions import parse_version
from offset_audit.coordinator.replay import modern_groups

SCHEMA = T.StructType(
    [
        T.StructField("record_type", T.IntegerType()),
        T.StructField("group_id", T.StringType()),
        T.StructField("epoch", T.IntegerType()),
        T.StructField("subscribed_topic_names", T.ArrayType(T.StringType())),
        T.StructField("resolved_topics", T.ArrayType(T.StringType())),
        T.StructField("source_topics", T.ArrayType(T.StringType())),
        T.StructField("member_epoch", T.IntegerType()),
        T.StructField("member_state", T.IntegerType()),
        T.StructField("validated_topology_epoch", T.IntegerType()),
        T.StructField("stored_description_topology_epoch", T.IntegerType()),
    ]
)

FAMILIES = {
    "consumer": (K.CONSUMER_GROUP_METADATA, K.CONSUMER_GROUP_MEMBER_METADATA,
                 K.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA, K.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT),
    "streams": (K.STREAMS_GROUP_METADATA, K.STREAMS_GROUP_MEMBER_METADATA,
                K.STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA, K.STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT),
}  # fmt: skip


def _records(
    family: str, member_state: int, member_epoch: int = 3, validated: int | None = 0, topology: int | None = 0
):
    """A group of one member; a streams group's metadata says which topology epoch was validated, and
    its topology record (none when `topology` is None) reads topic t."""
    group, member, target, current = FAMILIES[family]
    streams = family == "streams"
    rows = [
        (group, "g", 3, None, None, None, None, None, validated if streams else None, -1 if streams else None),
        (member, "g", None, ["t"], None, None, None, None, None, None),
        (target, "g", 3, None, None, None, None, None, None, None),
        (current, "g", None, None, None, None, member_epoch, member_state, None, None),
    ]
    if streams and topology is not None:
        rows.append((K.STREAMS_GROUP_TOPOLOGY, "g", topology, None, None, ["t"], None, None, None, None))
    return rows


def _group(spark, rows, version: str = "4.4"):
    return modern_groups(spark.createDataFrame(rows, SCHEMA), parse_version(version)).collect()[0]


def _state(spark, family: str, member_state: int, member_epoch: int = 3) -> str:
    return _group(spark, _records(family, member_state, member_epoch))["group_state"]


@pytest.mark.parametrize(
    ("family", "member_state", "expected"),
    [
        # coordinator.group.modern.MemberState: STABLE 0, UNREVOKED_PARTITIONS 1, UNRELEASED_PARTITIONS 2.
        ("consumer", 0, "Stable"),
        ("consumer", 1, "Reconciling"),
        ("consumer", 2, "Reconciling"),
        # coordinator.group.streams.MemberState: STABLE 1, UNREVOKED_TASKS 2, UNRELEASED_TASKS 3 (a live
        # 4.3 broker's reconciled streams member is stored with 1, and the broker describes it Stable).
        ("streams", 1, "Stable"),
        ("streams", 0, "Reconciling"),
        ("streams", 2, "Reconciling"),
        ("streams", 3, "Reconciling"),
    ],
)
def test_a_member_is_reconciled_when_its_familys_stable_byte_and_the_assignment_epoch_say_so(
    spark, family, member_state, expected
):
    assert _state(spark, family, member_state) == expected


def test_a_stable_member_behind_the_target_assignment_epoch_is_reconciling(spark):
    assert _state(spark, "streams", 1, member_epoch=2) == "Reconciling"


@pytest.mark.parametrize(
    ("validated", "topology", "version", "state", "topics"),
    [
        # 4.2+: NotReady unless the topology's epoch is the validated one; a topology record still subscribes.
        (0, 0, "4.2", "Stable", ["t"]),
        (1, 2, "4.2", "NotReady", ["t"]),
        (-1, 0, "4.4", "NotReady", ["t"]),  # not validated (a 4.2+ writer)
        (None, 0, "4.4", "NotReady", ["t"]),  # written by 4.1: loaded as -1 until a heartbeat validates it
        (0, None, "4.3", "NotReady", []),  # no topology record: nothing subscribed
        # 4.1: the configured topology is soft state; not ready means subscribed to nothing.
        (1, 2, "4.1", "NotReady", []),
        (0, None, "4.1", "NotReady", []),
        # A 4.2+ writer recorded that the topology is not ready (a live 4.4 broker, a source topic deleted).
        (-1, 0, "4.1", "NotReady", []),
        # A 4.1 log records no readiness (null): the members' heartbeats configure it, as far as the log tells.
        (None, 0, "4.1", "Stable", ["t"]),
    ],
)
def test_a_streams_groups_readiness_and_subscriptions_follow_the_broker_version(
    spark, validated, topology, version, state, topics
):
    group = _group(spark, _records("streams", 1, validated=validated, topology=topology), version)
    assert (group["group_state"], group["subscribed_topics"]) == (state, topics)


def test_an_empty_streams_group_is_empty_and_subscribed_to_nothing_whatever_its_topology(spark):
    rows = [r for r in _records("streams", 1, validated=1, topology=2) if r[0] == K.STREAMS_GROUP_METADATA]
    rows.append((K.STREAMS_GROUP_TOPOLOGY, "g", 2, None, None, ["t"], None, None, None, None))
    for version in ("4.1", "4.4"):
        group = _group(spark, rows, version)
        assert (group["group_state"], group["subscribed_topics"]) == ("Empty", [])


@pytest.mark.parametrize(("stored", "held"), [(-1, False), (3, True)])
def test_a_stored_topology_description_is_carried_to_the_rules(spark, stored, held):
    rows = _records("streams", 1)
    rows[0] = (*rows[0][:-1], stored)
    assert _group(spark, rows)["topology_description_stored"] is held
