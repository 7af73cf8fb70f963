"""`metrics` built a column at a time gives the text the row-by-row writer gave, byte for byte: exact
texts on hostile names and edge cases (a budget cutting inside the expiring partitions, null labels and
values at topic granularity, lags summed past a long, expiries at the ends of a long), and the value
formatting against Python's own str() and repr().

The expected lines were written by the row-by-row code this replaced (git show 76f26db:
src/offset_audit/views/prometheus.py), on the same rows."""

from __future__ import annotations

import random

import pyarrow as pa
import pytest
from test_prometheus import AS_OF_MS, DAY_MS, _group, _group_rows, _offset, _partition_rows

from offset_audit.escaping import prometheus_label
from offset_audit.views.metric_scope import Scope
from offset_audit.views.metric_text import escaped, label_text, seconds_text, seconds_until
from offset_audit.views.prometheus import HELP, PREFIX, exposition

HOUR_MS = 3_600_000
LONG = 2**63 - 1


def _text(lines: list[str]) -> str:
    """The exposition of these sample lines (names without the prefix): each family's HELP and TYPE
    before its first."""
    text, family = [], None
    for line in lines:
        name = line.split("{")[0].split(" ")[0]
        if name != family:
            family = name
            text += [f"# HELP {PREFIX}{name} {HELP[name]}", f"# TYPE {PREFIX}{name} gauge"]
        text.append(PREFIX + line)
    return "\n".join(text) + "\n"


def _hostile_fleet():
    """Quotes, a backslash and a line feed in group and topic names; `quote"g` holds an expired offset and
    one expiring in an hour, `two\\nlines` two expiring an hour (and a millisecond) on, `back\\slash` a
    deletable offset that never expires and one far off."""
    partitions = _partition_rows(
        [
            _offset('quote"g', "t\\1", 0, time_to_expiry_ms=-DAY_MS, expired=True, deletable_now=True, lag=2),
            _offset('quote"g', "t\\1", 1, time_to_expiry_ms=HOUR_MS, lag=3),
            _offset("two\nlines", "t\\1", 0, time_to_expiry_ms=2 * HOUR_MS),
            _offset("two\nlines", "t\\1", 1, time_to_expiry_ms=HOUR_MS + 1),
            _offset("back\\slash", 't"2', 0, time_to_expiry_ms=None, deletable_now=True),
            _offset("back\\slash", 't"2', 1),
        ]
    )
    groups = _group_rows(
        [
            _group("back\\slash", offset_count=2, next_expiry_at_ms=AS_OF_MS + 6 * DAY_MS, protocol_type=None),
            _group('quote"g', offset_count=2, expired_offset_count=1, next_expiry_at_ms=AS_OF_MS - DAY_MS),
            _group("two\nlines", offset_count=2, next_expiry_at_ms=AS_OF_MS + HOUR_MS + 1, group_state="Stable"),
        ]
    )
    return partitions, groups


# Budget 31 at partition granularity: the snapshot gauges and the count (3), the urgent groups quote"g
# and two\nlines (7 and 6), then the expiring offsets soonest first: quote"g's expired one and the one
# due in an hour (5 and 5) fit, two\nlines' due an hour and a millisecond on does not, and from there on
# nothing is written.
CUT_INSIDE_EXPIRING = [
    'group_deletable_offsets{group="quote\\"g"} 1',
    'group_deletable_offsets{group="two\\nlines"} 0',
    'group_expired_offsets{group="quote\\"g"} 1',
    'group_expired_offsets{group="two\\nlines"} 0',
    'group_info{group="quote\\"g",group_type="classic",group_state="Empty",protocol_type="consumer"} 1',
    'group_info{group="two\\nlines",group_type="classic",group_state="Stable",protocol_type="consumer"} 1',
    'group_lag{group="quote\\"g"} 5',
    'group_members{group="quote\\"g"} 0',
    'group_members{group="two\\nlines"} 0',
    'group_next_expiry_seconds{group="quote\\"g"} -86400.0',
    'group_next_expiry_seconds{group="two\\nlines"} 3600.001',
    'group_offsets{group="quote\\"g"} 2',
    'group_offsets{group="two\\nlines"} 2',
    'group_stale_lag{group="quote\\"g"} 0',
    'group_would_delete{group="quote\\"g"} 0',
    'group_would_delete{group="two\\nlines"} 0',
    "metrics_left_out_samples 26",
    'partition_commit_timestamp_seconds{group="quote\\"g",topic="t\\\\1",partition="0"} 1793170800.0',
    'partition_commit_timestamp_seconds{group="quote\\"g",topic="t\\\\1",partition="1"} 1793170800.0',
    'partition_committed_offset{group="quote\\"g",topic="t\\\\1",partition="0"} 100',
    'partition_committed_offset{group="quote\\"g",topic="t\\\\1",partition="1"} 100',
    'partition_deletable{group="quote\\"g",topic="t\\\\1",partition="0"} 1',
    'partition_deletable{group="quote\\"g",topic="t\\\\1",partition="1"} 0',
    'partition_expired{group="quote\\"g",topic="t\\\\1",partition="0"} 1',
    'partition_expired{group="quote\\"g",topic="t\\\\1",partition="1"} 0',
    'partition_expiry_seconds{group="quote\\"g",topic="t\\\\1",partition="0"} -86400.0',
    'partition_expiry_seconds{group="quote\\"g",topic="t\\\\1",partition="1"} 3600.0',
    'partition_lag{group="quote\\"g",topic="t\\\\1",partition="0"} 2',
    'partition_lag{group="quote\\"g",topic="t\\\\1",partition="1"} 3',
    'snapshot_info{snapshot_id="20261029T070000Z-3f2a9c10",retention_minutes="10080"} 1',
    "snapshot_timestamp_seconds 1793257200.0",
]


def test_a_budget_cutting_inside_the_expiring_partitions_writes_a_prefix_of_the_order_exactly():
    result = exposition(*_hostile_fleet(), scope=Scope(granularity="partition", max_samples=31))
    assert result.text == _text(CUT_INSIDE_EXPIRING)
    assert (result.samples, result.wanted) == (31, 57)
    assert result.left_out == (
        "left out past --max-samples 31: 2 expiring partitions' series (10 samples); 1 other groups' series "
        "(7 samples); 1 deletable partitions' series (4 samples); 1 detail series (5 samples); "
        "--max-samples 57 would write everything"
    )


def _null_fleet():
    """A simple group with no protocol type, state, member count or expired count; offsets with no lag,
    no expiry, no flags, no committed offset or commit time; a lag whose stale part is unknown."""
    partitions = _partition_rows(
        [
            _offset("app", "orders", 0, lag=4, time_to_expiry_ms=None),
            _offset("app", "orders", 1, lag=None, expired=None, deletable_now=None, time_to_expiry_ms=None),
            _offset("app", "payments", 0, time_to_expiry_ms=None, committed_offset=None, commit_timestamp_ms=None),
            _offset("app", "audit", 0, time_to_expiry_ms=2 * DAY_MS),
            _offset("simple", "orders", 0, lag=7, stale_lag=None, deletable_now=True, time_to_expiry_ms=None),
        ]
    )
    groups = _group_rows(
        [
            _group(
                "simple",
                group_type="simple",
                protocol_type=None,
                group_state=None,
                member_count=None,
                offset_count=1,
                expired_offset_count=None,
                would_delete=None,
            ),
            _group("app", offset_count=4, next_expiry_at_ms=AS_OF_MS + 2 * DAY_MS, retention_minutes=None),
        ]
    )
    return partitions, groups


NULLS_AT_TOPIC_GRANULARITY = [
    'group_deletable_offsets{group="app"} 0',
    'group_deletable_offsets{group="simple"} 1',
    'group_expired_offsets{group="app"} 0',
    'group_info{group="app",group_type="classic",group_state="Empty",protocol_type="consumer"} 1',
    'group_info{group="simple",group_type="simple"} 1',
    'group_lag{group="app"} 4',
    'group_lag{group="simple"} 7',
    'group_members{group="app"} 0',
    'group_next_expiry_seconds{group="app"} 172800.0',
    'group_offsets{group="app"} 4',
    'group_offsets{group="simple"} 1',
    'group_stale_lag{group="app"} 0',
    'group_stale_lag{group="simple"} 0',
    'group_topic_deletable_offsets{group="app",topic="audit"} 0',
    'group_topic_deletable_offsets{group="app",topic="orders"} 0',
    'group_topic_deletable_offsets{group="app",topic="payments"} 0',
    'group_topic_deletable_offsets{group="simple",topic="orders"} 1',
    'group_topic_expired_offsets{group="app",topic="audit"} 0',
    'group_topic_expired_offsets{group="app",topic="orders"} 0',
    'group_topic_expired_offsets{group="app",topic="payments"} 0',
    'group_topic_expired_offsets{group="simple",topic="orders"} 0',
    'group_topic_lag{group="app",topic="orders"} 4',
    'group_topic_lag{group="simple",topic="orders"} 7',
    'group_topic_next_expiry_seconds{group="app",topic="audit"} 172800.0',
    'group_topic_offsets{group="app",topic="audit"} 1',
    'group_topic_offsets{group="app",topic="orders"} 2',
    'group_topic_offsets{group="app",topic="payments"} 1',
    'group_topic_offsets{group="simple",topic="orders"} 1',
    'group_would_delete{group="app"} 0',
    "metrics_left_out_samples 0",
    'partition_deletable{group="simple",topic="orders",partition="0"} 1',
    'snapshot_info{snapshot_id="20261029T070000Z-3f2a9c10",retention_minutes="10080"} 1',
    "snapshot_timestamp_seconds 1793257200.0",
]


def test_topic_granularity_leaves_out_null_labels_and_null_values_exactly():
    partitions, groups = _null_fleet()
    result = exposition(partitions, groups, scope=Scope(granularity="topic", max_samples=10**6))
    assert result.text == _text(NULLS_AT_TOPIC_GRANULARITY)
    assert (result.samples, result.wanted, result.left_out) == (33, 33, None)
    filtered = exposition(partitions, groups, scope=Scope(granularity="topic", topics=("orders|audit",)))
    # The topic filter drops payments' group_topic series; the group series still count every offset.
    assert filtered.text == _text([line for line in NULLS_AT_TOPIC_GRANULARITY if 'topic="payments"' not in line])


def _huge_fleet():
    """Lags of 2**63 - 1 on two partitions of one topic, a committed offset of a long's largest value,
    expiries and commit times at a long's ends and at the last millisecond written without Python's help."""
    partitions = _partition_rows(
        [
            _offset("g", "t", 0, lag=LONG, stale_lag=LONG, committed_offset=LONG),
            _offset("g", "t", 1, lag=LONG, stale_lag=LONG, time_to_expiry_ms=LONG),
            _offset("g", "u", 0, lag=5, time_to_expiry_ms=-(2**63), commit_timestamp_ms=10**15 - 1),
        ]
    )
    groups = _group_rows([_group("g", offset_count=3, next_expiry_at_ms=-(2**63), group_expires_at_ms=LONG)])
    return partitions, groups


HUGE_AT_PARTITION_GRANULARITY = [
    'group_deletable_offsets{group="g"} 0',
    'group_expired_offsets{group="g"} 0',
    'group_expiry_seconds{group="g"} 9223370243597576.0',
    'group_info{group="g",group_type="classic",group_state="Empty",protocol_type="consumer"} 1',
    'group_lag{group="g"} 18446744073709551619',
    'group_members{group="g"} 0',
    'group_next_expiry_seconds{group="g"} -9223373830111976.0',
    'group_offsets{group="g"} 3',
    'group_stale_lag{group="g"} 18446744073709551614',
    'group_would_delete{group="g"} 0',
    "metrics_left_out_samples 0",
    'partition_commit_timestamp_seconds{group="g",topic="t",partition="0"} 1793170800.0',
    'partition_commit_timestamp_seconds{group="g",topic="t",partition="1"} 1793170800.0',
    'partition_commit_timestamp_seconds{group="g",topic="u",partition="0"} 999999999999.999',
    'partition_committed_offset{group="g",topic="t",partition="0"} 9223372036854775807',
    'partition_committed_offset{group="g",topic="t",partition="1"} 100',
    'partition_committed_offset{group="g",topic="u",partition="0"} 100',
    'partition_deletable{group="g",topic="t",partition="0"} 0',
    'partition_deletable{group="g",topic="t",partition="1"} 0',
    'partition_deletable{group="g",topic="u",partition="0"} 0',
    'partition_expired{group="g",topic="t",partition="0"} 0',
    'partition_expired{group="g",topic="t",partition="1"} 0',
    'partition_expired{group="g",topic="u",partition="0"} 0',
    'partition_expiry_seconds{group="g",topic="t",partition="0"} 518400.0',
    'partition_expiry_seconds{group="g",topic="t",partition="1"} 9223372036854776.0',
    'partition_expiry_seconds{group="g",topic="u",partition="0"} -9223372036854776.0',
    'partition_lag{group="g",topic="t",partition="0"} 9223372036854775807',
    'partition_lag{group="g",topic="t",partition="1"} 9223372036854775807',
    'partition_lag{group="g",topic="u",partition="0"} 5',
    'snapshot_info{snapshot_id="20261029T070000Z-3f2a9c10",retention_minutes="10080"} 1',
    "snapshot_timestamp_seconds 1793257200.0",
]


def test_lags_past_a_long_are_summed_exactly_and_extreme_milliseconds_written_as_python_does():
    result = exposition(*_huge_fleet(), scope=Scope(granularity="partition"))
    assert result.text == _text(HUGE_AT_PARTITION_GRANULARITY)
    topic = exposition(*_huge_fleet(), scope=Scope(granularity="topic")).text.split("\n")
    assert PREFIX + f'group_topic_lag{{group="g",topic="t"}} {2 * LONG}' in topic
    assert PREFIX + 'group_topic_lag{group="g",topic="u"} 5' in topic
    assert PREFIX + 'group_topic_next_expiry_seconds{group="g",topic="u"} -9223372036854776.0' in topic


EDGES = [0, 1, -1, 999, -999, 1000, -1000, 1001, -500, 86_400_000, AS_OF_MS, 10**15 - 1, -(10**15) + 1]
EDGES += [10**15, -(10**15), 2**53, 2**53 + 1, LONG, -(2**63), 123_456_789_012_345]


@pytest.mark.parametrize("values", [EDGES, [v for v in EDGES if abs(v) < 10**15], [None, 5, None], []])
def test_seconds_are_repr_of_the_milliseconds_divided(values):
    assert seconds_text(pa.array(values, pa.int64())).to_pylist() == [
        None if v is None else repr(v / 1000) for v in values
    ]


def test_seconds_of_random_milliseconds_are_repr_of_the_ratio():
    draw = random.Random(39)
    values = [draw.randint(-(10**15) + 1, 10**15 - 1) for _ in range(20_000)]
    values += [draw.randint(-(10**7), 10**7) for _ in range(20_000)]
    assert seconds_text(pa.array(values)).to_pylist() == [repr(v / 1000) for v in values]


def test_seconds_until_is_exact_where_the_difference_passes_a_long():
    values = [None, AS_OF_MS + 1, -(2**63), LONG, 0]
    for since in (AS_OF_MS, -AS_OF_MS):
        assert seconds_until(pa.array(values, pa.int64()), since).to_pylist() == [
            None if v is None else repr((v - since) / 1000) for v in values
        ]


HOSTILE = ['quote"inside', "back\\slash", "two\nlines", "\\n literally", "ünïcødé 😀", "cr\rtab\tnul\x00", "", "é"]


def test_names_are_escaped_as_prometheus_label_escapes_them():
    names = pa.array([*HOSTILE, None, *HOSTILE])
    assert escaped(names).to_pylist() == [None if n is None else prometheus_label(n) for n in names.to_pylist()]
    assert escaped(pa.array([0, -3, None], pa.int32())).to_pylist() == ["0", "-3", None]


def test_label_sets_leave_out_null_values_and_braces_when_none_is_left():
    group, kind = pa.array(["a", None, None, 'q"']), pa.array([None, "x", None, "y"])
    assert label_text([("group", group), ("kind", kind)]).to_pylist() == [
        '{group="a"}',
        '{kind="x"}',
        "",
        '{group="q\\"",kind="y"}',
    ]


def test_families_hand_prometheus_client_the_python_values():
    result = exposition(*_huge_fleet(), scope=Scope(granularity="partition"))
    families = {f.name: f.samples for f in result.families}
    assert families["group_lag"] == (((("group", "g"),), 2 * LONG + 5),)
    assert families["partition_committed_offset"][0] == ((("group", "g"), ("topic", "t"), ("partition", 0)), LONG)
    assert families["partition_expiry_seconds"][2][1] == -(2**63) / 1000
    assert families["snapshot_timestamp_seconds"] == (((), AS_OF_MS / 1000),)
    assert families["snapshot_info"][0][0] == (
        ("snapshot_id", "20261029T070000Z-3f2a9c10"),
        ("retention_minutes", 10080),
    )
    info = exposition(*_null_fleet()).families
    (simple,) = [s for f in info if f.name == "group_info" for s in f.samples if s[0][0] == ("group", "simple")]
    assert simple == (
        (("group", "simple"), ("group_type", "simple"), ("group_state", None), ("protocol_type", None)),
        1,
    )
    assert all(type(v) is int for f in info if f.name == "group_offsets" for _, v in f.samples)
