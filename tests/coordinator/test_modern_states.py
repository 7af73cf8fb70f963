"""KIP-848, share and streams groups' states as the coordinator derives them from their live records
(replay.modern_groups): the bytes of MemberState differ between families."""

from __future__ import annotations

import pytest
from pyspark.sql import types as T

from offset_audit import constants as K
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
    ]
)

FAMILIES = {
    "consumer": (K.CONSUMER_GROUP_METADATA, K.CONSUMER_GROUP_MEMBER_METADATA,
                 K.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA, K.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT),
    "streams": (K.STREAMS_GROUP_METADATA, K.STREAMS_GROUP_MEMBER_METADATA,
                K.STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA, K.STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT),
}  # fmt: skip


def _state(spark, family: str, member_state: int, member_epoch: int = 3) -> str:
    group, member, target, current = FAMILIES[family]
    rows = [
        (group, "g", 3, None, None, None, None, None),
        (member, "g", None, ["t"], None, None, None, None),
        (target, "g", 3, None, None, None, None, None),
        (current, "g", None, None, None, None, member_epoch, member_state),
    ]
    return modern_groups(spark.createDataFrame(rows, SCHEMA)).collect()[0]["group_state"]


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
