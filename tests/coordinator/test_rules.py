"""The scenario matrix of KIP-211 / KIP-496 and the shared reference, section 4: each case with its
hand-computed expectation, as of 2026-01-10 00:00 UTC with a 7-day retention."""

from __future__ import annotations

import pytest
from audit_frames import AS_OF, WEEK, at, frames, group, offset

from offset_audit.coordinator import rules, verdicts


def verdict_rows(spark, groups, offsets, retention=WEEK, as_of=AS_OF):
    group_frame, offset_frame = frames(spark, groups, offsets)
    judged = verdicts.judged_offsets(offset_frame, group_frame)
    partitions = verdicts.partition_verdicts(judged, as_of, retention, 600000)
    return {(r.group_id, r.topic, r.partition): r for r in partitions.collect()}, partitions, group_frame


def one(spark, g, o, **kwargs):
    rows, _, _ = verdict_rows(spark, [g], [o], **kwargs)
    return next(iter(rows.values()))


def test_empty_group_clock_starts_when_the_group_became_empty(spark):
    row = one(spark, group("g", state="Empty", cst=at(1), members=0, topics=[]), offset("g", commit=at(8)))
    assert row.rule == rules.EMPTY_GROUP
    assert row.base_timestamp == at(1).replace(tzinfo=None) or row.base_timestamp.timestamp() == at(1).timestamp()
    assert row.expires_at.timestamp() == at(8).timestamp()  # 1 Jan + 7 days, although committed on 8 Jan
    assert row.expired and row.deletable_now and row.delete_error is None


def test_empty_group_without_state_timestamp_counts_from_the_commit(spark):
    """GroupMetadataValue v0/v1 carry no currentStateTimestamp."""
    row = one(spark, group("g", state="Empty", cst=None, members=0, topics=[]), offset("g", commit=at(5)))
    assert row.rule == rules.EMPTY_GROUP
    assert row.expires_at.timestamp() == at(12).timestamp()
    assert not row.expired and row.time_to_expiry_ms == 2 * 86_400_000


@pytest.mark.parametrize(("ms_later", "expired"), [(0, True), (1, False)])
def test_expiry_boundary_is_greater_or_equal(spark, ms_later, expired):
    row = one(spark, group("g", state="Empty", cst=at(3, ms=ms_later), members=0, topics=[]), offset("g"))
    assert row.expired is expired
    assert row.time_to_expiry_ms == ms_later


def test_stable_consumer_group_never_expires_subscribed_topics(spark):
    row = one(spark, group("g", topics=["orders"]), offset("g", topic="orders", commit=at(1), expire=at(2)))
    assert (row.rule, row.expires_at, row.expired, row.subscribed) == (rules.SUBSCRIBED_TOPIC, None, False, True)
    assert not row.deletable_now and row.delete_error == rules.GROUP_SUBSCRIBED_TO_TOPIC


def test_stable_consumer_group_expires_unsubscribed_topics_from_their_commit(spark):
    row = one(spark, group("g", topics=["orders"]), offset("g", topic="payments", commit=at(2, 12)))
    assert (row.rule, row.subscribed) == (rules.UNSUBSCRIBED_TOPIC, False)
    assert row.expires_at.timestamp() == at(9, 12).timestamp() and row.expired
    assert row.deletable_now


def test_stable_consumer_group_with_unparseable_subscriptions_expires_nothing(spark):
    row = one(spark, group("g", topics=None), offset("g", topic="payments"))
    assert (row.rule, row.expires_at, row.subscribed) == (rules.UNKNOWN_SUBSCRIPTION, None, None)
    assert row.delete_error == rules.GROUP_SUBSCRIBED_TO_TOPIC


def test_standalone_consumer_offsets_expire_from_each_commit(spark):
    row = one(spark, group("s", protocol_type=None, state="Empty", members=0, topics=None), offset("s", commit=at(2)))
    assert row.rule == rules.SIMPLE_GROUP
    assert row.expires_at.timestamp() == at(9).timestamp() and row.expired and row.deletable_now


def test_connect_group_with_members_keeps_its_offsets_and_refuses_deletion(spark):
    row = one(spark, group("c", protocol_type="connect", topics=None), offset("c"))
    assert (row.rule, row.expires_at) == (rules.NON_CONSUMER_PROTOCOL, None)
    assert row.delete_error == rules.NON_EMPTY_GROUP


def test_empty_connect_group_expires_like_any_empty_group(spark):
    row = one(spark, group("c", protocol_type="connect", state="Empty", cst=at(1), members=0, topics=None), offset("c"))
    assert row.rule == rules.EMPTY_GROUP and row.expired and row.deletable_now


def test_explicit_expire_timestamp_wins_where_the_group_has_a_condition(spark):
    row = one(spark, group("g", state="Empty", cst=at(9), members=0, topics=[]), offset("g", expire=at(9, 6)))
    assert row.rule == rules.EXPLICIT_EXPIRE_TIMESTAMP
    assert row.base_timestamp is None and row.expires_at.timestamp() == at(9, 6).timestamp() and row.expired


def test_explicit_expire_timestamp_does_not_expire_a_subscribed_topic(spark):
    row = one(spark, group("g", topics=["orders"]), offset("g", expire=at(2)))
    assert row.rule == rules.SUBSCRIBED_TOPIC and not row.expired


def test_kip848_group_uses_commit_time_and_member_subscriptions(spark):
    rows, _, _ = verdict_rows(
        spark,
        [group("k", group_type="consumer", protocol_type=None, topics=["orders"])],
        [offset("k", topic="orders"), offset("k", topic="payments", commit=at(4))],
    )
    assert rows[("k", "orders", 0)].rule == rules.SUBSCRIBED_TOPIC
    payments = rows[("k", "payments", 0)]
    assert payments.rule == rules.UNSUBSCRIBED_TOPIC and payments.expires_at.timestamp() == at(11).timestamp()


def test_empty_kip848_group_has_no_empty_since_clock(spark):
    """Reference 4.3: a partition whose last commit is older than the retention expires at once, even if
    the group emptied a minute ago."""
    row = one(
        spark, group("k", group_type="consumer", protocol_type=None, state="Empty", members=0, topics=[]), offset("k")
    )
    assert row.rule == rules.UNSUBSCRIBED_TOPIC and row.expired


def test_streams_group_subscribes_to_its_topology_while_it_has_members(spark):
    row = one(spark, group("a", group_type="streams", protocol_type=None, topics=["orders"]), offset("a"))
    assert row.rule == rules.SUBSCRIBED_TOPIC
    row = one(
        spark, group("a", group_type="streams", protocol_type=None, state="Empty", members=0, topics=[]), offset("a")
    )
    assert row.rule == rules.UNSUBSCRIBED_TOPIC and row.expired


def test_shorter_retention_expires_more(spark):
    row = one(spark, group("g", topics=["orders"]), offset("g", topic="payments", commit=at(8)), retention=1440)
    assert row.expires_at.timestamp() == at(9).timestamp() and row.expired


def test_sweep_window_is_one_check_interval_and_a_sweeps_lateness_after_expiry(spark):
    """The next sweep starts an interval after the previous one ended: a live 4.1 broker wrote a tombstone
    1 ms past expires_at + interval (tests/coordinator/test_live_broker.py)."""
    row = one(spark, group("g", state="Empty", cst=at(1), members=0, topics=[]), offset("g"))
    assert (row.sweep_window_end - row.expires_at).total_seconds() == 600 + 5


def group_rows(spark, groups, offsets):
    _, partitions, group_frame = verdict_rows(spark, groups, offsets)
    return {r.group_id: r for r in verdicts.group_verdicts(partitions, group_frame, AS_OF, WEEK, 600000).collect()}


def test_group_is_removed_once_empty_and_every_offset_expired(spark):
    rows = group_rows(
        spark,
        [
            group("done", state="Empty", cst=at(1), members=0, topics=[]),
            group("waiting", protocol_type=None, state="Empty", members=0, topics=None),
            group("active", topics=["orders"]),
            group("bare", state="Empty", cst=at(9), members=0, topics=[]),
            group("console-consumer-12345", state="Empty", cst=at(1), members=0, topics=[]),
        ],
        [
            offset("done"),
            offset("waiting", commit=at(1)),
            offset("waiting", topic="payments", commit=at(5)),
            offset("active", topic="payments", commit=at(1)),
            offset("console-consumer-12345"),
        ],
    )
    assert rows["done"].would_delete and rows["done"].group_expires_at.timestamp() == at(8).timestamp()
    waiting = rows["waiting"]
    assert not waiting.would_delete and waiting.group_expires_at.timestamp() == at(12).timestamp()
    assert (waiting.offset_count, waiting.expired_offset_count) == (2, 1)
    assert waiting.next_expiry_at.timestamp() == at(12).timestamp()
    # A group with members is never removed, even when every offset expired.
    assert rows["active"].expired_offset_count == 1 and rows["active"].group_expires_at is None
    # An Empty group without offsets goes at the next sweep.
    assert rows["bare"].offset_count == 0 and rows["bare"].would_delete
    assert rows["console-consumer-12345"].console_consumer_group and not rows["done"].console_consumer_group


def test_share_groups_are_never_removed_by_the_sweep(spark):
    rows = group_rows(
        spark, [group("q", group_type="share", protocol_type=None, state="Empty", members=0, topics=[])], []
    )
    assert rows["q"].group_expires_at is None and not rows["q"].would_delete


def test_pending_transaction_blocks_an_offset_that_would_expire_by_time(spark):
    """Reference 4.3: the sweep asks about pending transactional offsets only for offsets it would
    otherwise expire; subscribed topics and groups without a condition are skipped before."""
    rows, _, _ = verdict_rows(
        spark,
        [
            group("e", state="Empty", cst=at(1), members=0, topics=[]),
            group("s", topics=["orders"]),
            group("c", protocol_type="connect", members=2, topics=None),
        ],
        [offset("e", pending=True), offset("s", pending=True), offset("c", pending=True)],
    )
    empty = rows[("e", "orders", 0)]
    assert (empty.rule, empty.expires_at, empty.expired) == (rules.PENDING_TRANSACTION, None, False)
    assert rows[("s", "orders", 0)].rule == rules.SUBSCRIBED_TOPIC
    assert rows[("c", "orders", 0)].rule == rules.NON_CONSUMER_PROTOCOL


def test_a_group_with_an_open_transaction_is_not_removed(spark):
    rows = group_rows(
        spark,
        [group("t", state="Empty", cst=at(1), members=0, topics=[], open_transaction=True)],
        [offset("t")],
    )
    assert rows["t"].expired_offset_count == 1 and rows["t"].open_transaction
    assert rows["t"].group_expires_at is None and not rows["t"].would_delete


def test_deletion_candidates_put_topics_active_groups_left_first(spark):
    _, partitions, _ = verdict_rows(
        spark,
        [group("active", topics=["orders"]), group("gone", state="Empty", cst=at(9), members=0, topics=[])],
        [offset("active", topic="payments", commit=at(9)), offset("active"), offset("gone")],
    )
    candidates = verdicts.deletion_candidates(partitions).orderBy("priority").collect()
    assert [(c.group_id, c.topic, c.priority, c.reason) for c in candidates] == [
        ("active", "payments", 1, verdicts.UNSUBSCRIBED_IN_ACTIVE_GROUP),
        ("gone", "orders", 3, verdicts.INACTIVE_GROUP),
    ]


def test_lag_and_stale_lag_with_end_offsets(spark):
    group_frame, offset_frame = frames(
        spark,
        [group("g", topics=["orders"])],
        [offset("g", topic="orders", committed=90), offset("g", topic="payments", committed=5)],
    )
    ends = spark.createDataFrame(
        [("orders", 0, 0, 100), ("payments", 0, 10, 50)],
        "topic string, partition int, log_start_offset bigint, log_end_offset bigint",
    )
    judged = verdicts.judged_offsets(offset_frame, group_frame)
    rows = {r.topic: r for r in verdicts.partition_verdicts(judged, AS_OF, WEEK, 600000, ends).collect()}
    assert (rows["orders"].lag, rows["orders"].stale_lag, rows["orders"].offset_out_of_range) == (10, 0, False)
    assert (rows["payments"].lag, rows["payments"].stale_lag, rows["payments"].offset_out_of_range) == (45, 45, True)


def test_whatif_grid_matches_single_audits(spark):
    groups = [
        group("e", state="Empty", cst=at(5), members=0, topics=[]),
        group("s", protocol_type=None, state="Empty", members=0),
    ]
    offsets = [offset("e"), offset("s", commit=at(8))]
    group_frame, offset_frame = frames(spark, groups, offsets)
    judged = verdicts.judged_offsets(offset_frame, group_frame)
    table = {
        (r.retention_minutes, r.as_of.timestamp()): r
        for r in verdicts.whatif(verdicts.whatif_groups(judged, group_frame, [1440, WEEK], [AS_OF, at(20)])).collect()
    }
    # 1 day: e expires 6 Jan, s 9 Jan -> both gone by 10 Jan; 7 days: e 12 Jan, s 15 Jan -> none yet.
    assert (table[(1440, AS_OF.timestamp())].offsets_expired, table[(1440, AS_OF.timestamp())].groups_deleted) == (2, 2)
    assert (table[(WEEK, AS_OF.timestamp())].offsets_expired, table[(WEEK, AS_OF.timestamp())].groups_deleted) == (0, 0)
    assert (table[(WEEK, at(20).timestamp())].offsets_expired, table[(WEEK, at(20).timestamp())].groups_total) == (2, 2)


def test_whatif_per_group_detail(spark):
    groups = [group("e", state="Empty", cst=at(5), members=0, topics=[]), group("a", topics=["orders"])]
    group_frame, offset_frame = frames(spark, groups, [offset("e"), offset("a")])
    judged = verdicts.judged_offsets(offset_frame, group_frame)
    rows = {
        (r.group_id, r.retention_minutes): r
        for r in verdicts.whatif_groups(judged, group_frame, [1440, WEEK], [AS_OF]).collect()
    }
    assert rows[("e", 1440)].would_delete and not rows[("e", WEEK)].would_delete
    assert (rows[("a", 1440)].offsets, rows[("a", 1440)].expired_offsets, rows[("a", 1440)].would_delete) == (
        1,
        0,
        False,
    )
