"""`metrics` at fleet scale: granularity, the watched partitions, filters and the sample budget, on rows
built here (no Spark)."""

from __future__ import annotations

import pytest
from test_prometheus import AS_OF_MS, DAY_MS, PREFIX, _group, _group_rows, _offset, _parsed, _partition_rows

from offset_audit.errors import UserError
from offset_audit.views.metric_scope import Scope
from offset_audit.views.prometheus import exposition

HOUR_MS = 3_600_000
RUN = {
    "command": "audit",
    "snapshot_id": "20261029T070000Z-3f2a9c10",
    "started_at": None,
    "finished_at": None,
    "records_read": 1234,
}


def _fleet():
    """Three groups: `calm` (offsets expiring in 6 days), `soon` (one offset in 3 h, one in 2 days, one
    deletable that never expires), `gone` (the sweep removes it: one offset expired a day ago)."""
    partitions = _partition_rows(
        [
            _offset("calm", "orders", 0, lag=5),
            _offset("calm", "orders", 1, lag=7),
            _offset("calm", "payments", 0),
            _offset("soon", "orders", 0, time_to_expiry_ms=3 * HOUR_MS, lag=1),
            _offset("soon", "orders", 1, time_to_expiry_ms=2 * DAY_MS),
            _offset("soon", "audit-log", 0, time_to_expiry_ms=None, deletable_now=True),
            _offset("gone", "orders", 0, time_to_expiry_ms=-DAY_MS, expired=True),
        ]
    )
    groups = _group_rows(
        [
            _group(
                "calm", offset_count=3, next_expiry_at_ms=AS_OF_MS + 6 * DAY_MS, member_count=2, group_state="Stable"
            ),
            _group("soon", offset_count=3, next_expiry_at_ms=AS_OF_MS + 3 * HOUR_MS),
            _group("gone", offset_count=1, expired_offset_count=1, would_delete=True, group_expires_at_ms=AS_OF_MS),
        ]
    )
    return partitions, groups


def _partitions_in(samples) -> set[tuple[str, str, str]]:
    return {
        (s.labels["group"], s.labels["topic"], s.labels["partition"]) for s in samples[PREFIX + "partition_deletable"]
    }


def test_by_default_every_group_has_its_series_and_only_watched_offsets_their_partition_series():
    samples = _parsed(exposition(*_fleet()).text)
    assert {s.labels["group"] for s in samples[PREFIX + "group_info"]} == {"calm", "soon", "gone"}
    assert {s.labels["group"] for s in samples[PREFIX + "group_offsets"]} == {"calm", "soon", "gone"}
    # within 24 h, already expired, or deletable now
    assert _partitions_in(samples) == {("soon", "orders", "0"), ("soon", "audit-log", "0"), ("gone", "orders", "0")}
    assert not any(name.startswith(PREFIX + "group_topic_") for name in samples)


def test_the_watch_window_decides_which_offsets_get_partition_series():
    partitions, groups = _fleet()
    three_days = _parsed(exposition(partitions, groups, scope=Scope(watch_expiring_within_minutes=3 * 1440)).text)
    assert ("soon", "orders", "1") in _partitions_in(three_days)
    none_ahead = _parsed(exposition(partitions, groups, scope=Scope(watch_expiring_within_minutes=0)).text)
    assert _partitions_in(none_ahead) == {("soon", "audit-log", "0"), ("gone", "orders", "0")}


def test_topic_granularity_adds_up_each_groups_topics():
    samples = _parsed(exposition(*_fleet(), scope=Scope(granularity="topic")).text)

    def by_topic(name):
        return {(s.labels["group"], s.labels["topic"]): s.value for s in samples[PREFIX + name]}

    assert by_topic("group_topic_offsets") == {
        ("calm", "orders"): 2,
        ("calm", "payments"): 1,
        ("soon", "orders"): 2,
        ("soon", "audit-log"): 1,
        ("gone", "orders"): 1,
    }
    assert by_topic("group_topic_lag") == {("calm", "orders"): 12, ("soon", "orders"): 1}
    assert by_topic("group_topic_expired_offsets")[("gone", "orders")] == 1
    assert by_topic("group_topic_deletable_offsets")[("soon", "audit-log")] == 1
    assert by_topic("group_topic_next_expiry_seconds") == {
        ("calm", "orders"): 6 * 86400,
        ("calm", "payments"): 6 * 86400,
        ("soon", "orders"): 3 * 3600,
        ("gone", "orders"): -86400,
    }
    assert len(_partitions_in(samples)) == 3  # the watched ones still have theirs


def test_partition_granularity_writes_every_offset():
    samples = _parsed(exposition(*_fleet(), scope=Scope(granularity="partition")).text)
    assert len(_partitions_in(samples)) == 7


def test_group_and_topic_filters():
    partitions, groups = _fleet()
    only = _parsed(exposition(partitions, groups, scope=Scope(groups=("so.*",), granularity="partition")).text)
    assert {s.labels["group"] for s in only[PREFIX + "group_info"]} == {"soon"}
    anchored = _parsed(exposition(partitions, groups, scope=Scope(groups=("o",))).text)
    assert anchored == {}  # "o" matches no whole group id: nothing to write
    excluded = _parsed(exposition(partitions, groups, scope=Scope(exclude_groups=("calm|gone",))).text)
    assert {s.labels["group"] for s in excluded[PREFIX + "group_info"]} == {"soon"}
    topics = _parsed(exposition(partitions, groups, scope=Scope(topics=("orders",), granularity="partition")).text)
    assert {t for _, t, _ in _partitions_in(topics)} == {"orders"}
    # the group series still count every offset of the group
    assert {s.labels["group"]: s.value for s in topics[PREFIX + "group_offsets"]}["calm"] == 3


def test_past_the_budget_what_is_written_is_a_prefix_of_the_order_of_importance():
    """The fleet at partition granularity: the snapshot gauges and the count left out (3); the urgent
    groups, gone (7) and soon (9); the expiring offsets soonest first, gone/orders/0 (5) and
    soon/orders/0 (6); the other group, calm (9); the deletable offset that does not expire soon,
    soon/audit-log/0 (4); the other offsets (22)."""
    partitions, groups = _fleet()
    everything = exposition(partitions, groups, scope=Scope(granularity="partition", max_samples=10**6))
    assert everything.left_out is None and everything.wanted == everything.samples == 3 + 16 + 11 + 9 + 4 + 22
    assert [s.value for s in _parsed(everything.text)[PREFIX + "metrics_left_out_samples"]] == [0]
    cut = exposition(partitions, groups, scope=Scope(granularity="partition", max_samples=40))
    samples = _parsed(cut.text)
    assert {s.labels["group"] for s in samples[PREFIX + "group_info"]} == {"calm", "soon", "gone"}
    assert _partitions_in(samples) == {("gone", "orders", "0"), ("soon", "orders", "0")}
    assert cut.samples == 3 + 16 + 11 + 9 and cut.wanted == everything.wanted
    assert [s.value for s in samples[PREFIX + "metrics_left_out_samples"]] == [4 + 22]
    assert cut.left_out == (
        "left out past --max-samples 40: 1 deletable partitions' series (4 samples); "
        "4 detail series (22 samples); --max-samples 65 would write everything"
    )


def test_a_budget_below_the_groups_writes_the_urgent_groups_first_and_says_what_it_left_out():
    many = [_group(f"g{i:03}", offset_count=1, next_expiry_at_ms=AS_OF_MS + (i + 1) * DAY_MS) for i in range(40)]
    many.append(_group("doomed", offset_count=1, expired_offset_count=1, would_delete=True))
    partitions = _partition_rows([_offset(g["group_id"], "t", 0) for g in many])
    result = exposition(partitions, _group_rows(many), scope=Scope(max_samples=100))
    samples = _parsed(result.text)
    groups_written = [s.labels["group"] for s in samples[PREFIX + "group_info"]]
    # Each group unit: info, members, offsets, expired offsets, next expiry, would_delete (6 samples).
    assert result.samples <= 100 < result.wanted
    assert "doomed" in groups_written and "g000" in groups_written and "g039" not in groups_written
    kept = sorted(g for g in groups_written if g != "doomed")
    assert kept == [f"g{i:03}" for i in range(len(kept))]  # soonest next expiry first, none skipped
    for name in ("group_members", "group_offsets", "group_would_delete"):  # never half a group
        assert sorted(s.labels["group"] for s in samples[PREFIX + name]) == sorted(groups_written)
    assert result.left_out == (
        f"left out past --max-samples 100: {41 - len(groups_written)} other groups' series "
        f"({result.wanted - result.samples} samples); --max-samples {result.wanted} would write everything"
    )


def test_the_run_gauges_come_from_the_runs_row():
    from datetime import UTC, datetime

    run = dict(
        RUN,
        started_at=datetime(2026, 10, 29, 6, 0, tzinfo=UTC),
        finished_at=datetime(2026, 10, 29, 6, 2, 30, tzinfo=UTC),
    )
    samples = _parsed(exposition(*_fleet(), run).text)
    assert [s.value for s in samples[PREFIX + "last_run_duration_seconds"]] == [150.0]
    assert [s.value for s in samples[PREFIX + "last_run_records_read"]] == [1234]
    assert [s.value for s in samples[PREFIX + "last_success_timestamp_seconds"]] == [1_793_253_750.0]
    assert PREFIX + "last_success_timestamp_seconds" not in _parsed(exposition(*_fleet()).text)


@pytest.mark.parametrize(
    ("scope", "words"),
    [
        (dict(groups=("orders-(",)), "--group takes a regular expression"),
        (dict(exclude_groups=("[",)), "--exclude-group takes a regular expression"),
        (dict(topics=("*",)), "--topic takes a regular expression"),
    ],
)
def test_a_bad_scope_is_one_sentence(scope, words):
    with pytest.raises(UserError) as raised:
        Scope(**scope)
    assert words in str(raised.value) and "\n" not in str(raised.value)


def test_the_default_budget_holds_every_group_and_watched_offset_of_the_20m_audits_fleet():
    """The shape of docs/performance.md's 20-million-record audit (7,381 groups, 131,944 offsets, 62,215
    deletable now, 21,768 of them expiring within 24 h), each group with all ten of its series."""
    groups_n, offsets_n, deletable_n, expiring_n = 7_381, 131_944, 62_215, 21_768
    offsets = [
        _offset(
            f"g{i % groups_n:05}",
            "t",
            i // groups_n,
            lag=1,
            deletable_now=i < deletable_n,
            time_to_expiry_ms=(i % 86_400) * 1000 if i < expiring_n else 6 * DAY_MS,
        )
        for i in range(offsets_n)
    ]
    groups = [
        _group(
            f"g{g:05}",
            offset_count=len(range(g, offsets_n, groups_n)),
            next_expiry_at_ms=AS_OF_MS + 1000,
            group_expires_at_ms=AS_OF_MS + 7 * DAY_MS,
        )
        for g in range(groups_n)
    ]
    result = exposition(_partition_rows(offsets), _group_rows(groups))
    samples = _parsed(result.text)
    assert result.left_out is None and result.samples == 3 + 10 * groups_n + 2 * deletable_n <= 200_000
    for name in ("group_info", "group_members", "group_stale_lag", "group_expiry_seconds", "group_would_delete"):
        assert len(samples[PREFIX + name]) == groups_n, name
    watched = {(f"g{i % groups_n:05}", "t", str(i // groups_n)) for i in range(deletable_n)}
    assert _partitions_in(samples) == watched
    assert {
        (s.labels["group"], s.labels["topic"], s.labels["partition"])
        for s in samples[PREFIX + "partition_expiry_seconds"]
    } == watched
    assert [s.value for s in samples[PREFIX + "metrics_left_out_samples"]] == [0]
