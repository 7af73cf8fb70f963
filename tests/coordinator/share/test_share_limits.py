"""Share-group broker limits: server.properties as Java reads it, the seed's ranges, observed groups."""

from __future__ import annotations

from pathlib import Path

import pytest

from offset_audit.coordinator.share_limits import (
    DELIVERY_COUNT_LIMIT,
    HEARTBEAT_INTERVAL_MS,
    MAX_GROUPS,
    MAX_SIZE,
    MIN_SESSION_TIMEOUT_MS,
    RECORD_LOCK_DURATION_MAX_MS,
    RECORD_LOCK_DURATION_MS,
    RECORD_LOCK_PARTITION_LIMIT,
    SESSION_TIMEOUT_MS,
    SHARE_LIMITS,
    DeliveryState,
    InvalidBrokerConfig,
    Limits,
    ShareGroupObservation,
    SharePartitionObservation,
    check_groups,
    check_settings,
    effective_limits,
    java_int,
)
from offset_audit.decoding.share_records import StateBatch
from offset_audit.errors import InputNotFound
from offset_audit.inputs.broker_properties import MalformedProperties, load_broker_config, parse_properties

BROKER_PROPERTIES = r"""# Broker for the share-group audit
! a comment in the other style
   # an indented comment
node.id=1
group.share.delivery.count.limit=7
group.share.max.size : 300
group.share.max.groups   20
group.share.record.lock.duration.ms = \
        45000
key\ with\ spaces = a\tb
empty.value=
only.key
continued.value = first \
   # not a comment here \
   end
unicode.value = caf\u00e9
# a comment ending in a backslash does not continue \
after.comment = yes
windows.dir = C:\\kafka\\
next.after.even.backslashes = 1
"""


def write_properties(tmp_path: Path, text: str, newline: str = "\n") -> Path:
    path = tmp_path / "server.properties"
    path.write_bytes(text.replace("\n", newline).encode("latin-1"))
    return path


# --- reading server.properties -------------------------------------------------------------------------------


def test_properties_file_reads_as_java_properties_load(tmp_path: Path) -> None:
    config = load_broker_config(write_properties(tmp_path, BROKER_PROPERTIES))

    assert config == {
        "node.id": "1",
        DELIVERY_COUNT_LIMIT: "7",
        MAX_SIZE: "300",
        MAX_GROUPS: "20",
        RECORD_LOCK_DURATION_MS: "45000",
        "key with spaces": "a\tb",
        "empty.value": "",
        "only.key": "",
        "continued.value": "first # not a comment here end",
        "unicode.value": "café",
        "after.comment": "yes",
        "windows.dir": "C:\\kafka\\",
        "next.after.even.backslashes": "1",
    }


@pytest.mark.parametrize("newline", ["\r\n", "\r"], ids=["crlf", "cr"])
def test_properties_file_with_other_line_endings_reads_the_same(tmp_path: Path, newline: str) -> None:
    config = load_broker_config(write_properties(tmp_path, BROKER_PROPERTIES, newline))

    assert config == load_broker_config(write_properties(tmp_path, BROKER_PROPERTIES))


def test_value_keeps_trailing_whitespace_and_a_later_duplicate_wins() -> None:
    assert parse_properties("a = 1\na = 2  \nb=x\\\n") == {"a": "2  ", "b": "x"}


def test_continuation_ends_at_a_blank_line() -> None:
    assert parse_properties("a = 1\\\n\nb = 2\n") == {"a": "1", "b": "2"}


def test_separator_may_be_escaped_into_the_key() -> None:
    assert parse_properties("a\\=b\\:c = d\nx = = y\n") == {"a=b:c": "d", "x": "= y"}


def test_malformed_unicode_escape_is_a_user_error() -> None:
    with pytest.raises(MalformedProperties, match="hex digits"):
        parse_properties("a = \\u00zz\n")


def test_missing_properties_file_says_which_path(tmp_path: Path) -> None:
    with pytest.raises(InputNotFound, match=r"server\.properties"):
        load_broker_config(tmp_path / "server.properties")


# --- settings against the seed's ranges ------------------------------------------------------------------------


def test_seed_defaults_sit_inside_their_own_ranges_and_obey_the_orderings() -> None:
    assert all(limit.admits(limit.default) for limit in SHARE_LIMITS)
    assert check_settings({}) == []


def test_table_notes_where_kafka_4_1_shipped_otherwise() -> None:
    notes = {limit.setting: limit.kafka_4_1 for limit in SHARE_LIMITS}

    assert "group.share.partition.max.record.locks" in notes[RECORD_LOCK_PARTITION_LIMIT]
    assert "group.share.max.record.lock.duration.ms" in notes[RECORD_LOCK_DURATION_MAX_MS]
    assert "removed in 4.1" in notes[MAX_GROUPS]
    assert notes[DELIVERY_COUNT_LIMIT] == "same in Kafka 4.1"


def test_settings_within_range_pass(tmp_path: Path) -> None:
    assert check_settings(load_broker_config(write_properties(tmp_path, BROKER_PROPERTIES))) == []


def test_value_that_is_not_a_java_int_is_an_error() -> None:
    findings = check_settings({MAX_SIZE: "lots", DELIVERY_COUNT_LIMIT: "3000000000"})

    assert [(f.severity, f.setting, f.value, f.allowed) for f in findings] == [
        ("error", DELIVERY_COUNT_LIMIT, "3000000000", "2..10"),
        ("error", MAX_SIZE, "lots", "10..1000"),
    ]


def test_value_outside_the_seed_range_is_an_error_even_where_kafka_4_1_allows_it() -> None:
    """4.1 allows group.share.max.size down to 1 and lock durations up to an hour; the seed does not."""
    findings = check_settings(
        {
            DELIVERY_COUNT_LIMIT: "11",
            MAX_SIZE: "5",
            RECORD_LOCK_DURATION_MS: "120000",
            RECORD_LOCK_DURATION_MAX_MS: "3600000",
            RECORD_LOCK_PARTITION_LIMIT: "99",
            MAX_GROUPS: "0",
        }
    )

    assert [(f.setting, f.value, f.allowed) for f in findings] == [
        (DELIVERY_COUNT_LIMIT, "11", "2..10"),
        (RECORD_LOCK_DURATION_MS, "120000", "1000..60000"),
        (RECORD_LOCK_PARTITION_LIMIT, "99", "100..10000"),
        (MAX_GROUPS, "0", "1..100"),
        (MAX_SIZE, "5", "10..1000"),
    ]
    assert all(f.severity == "error" for f in findings)


def test_java_int_trims_like_java_and_refuses_what_parse_int_refuses() -> None:
    assert [java_int(text) for text in (" 7\t", "+7", "-7", "007")] == [7, 7, -7, 7]
    assert [java_int(text) for text in ("", "7.0", "1e3", "7 0", "2147483648")] == [None] * 5
    assert java_int("-2147483648") == -(2**31)


def test_heartbeat_must_stay_below_the_session_timeout() -> None:
    findings = check_settings(
        {HEARTBEAT_INTERVAL_MS: "15000", SESSION_TIMEOUT_MS: "15000", MIN_SESSION_TIMEOUT_MS: "1"}
    )

    assert [(f.severity, f.setting, f.allowed) for f in findings] == [("error", HEARTBEAT_INTERVAL_MS, "below 15000")]


def test_session_timeout_below_the_default_minimum_breaks_the_ordering() -> None:
    findings = check_settings({SESSION_TIMEOUT_MS: "30000"})

    assert [(f.setting, f.value, f.allowed) for f in findings] == [(MIN_SESSION_TIMEOUT_MS, "45000", "at most 30000")]


def test_lock_duration_above_its_configured_maximum_is_an_error() -> None:
    findings = check_settings({RECORD_LOCK_DURATION_MS: "50000", RECORD_LOCK_DURATION_MAX_MS: "40000"})

    assert [(f.setting, f.allowed) for f in findings] == [(RECORD_LOCK_DURATION_MS, "at most 40000")]


def test_kafka_4_1_names_warn_and_are_not_applied() -> None:
    config = {"group.share.partition.max.record.locks": "2000", "group.share.max.share.sessions": "2000"}

    findings = check_settings(config)

    assert [(f.severity, f.setting) for f in findings] == [("warning", "group.share.partition.max.record.locks")]
    assert RECORD_LOCK_PARTITION_LIMIT in findings[0].message
    assert effective_limits(config)[RECORD_LOCK_PARTITION_LIMIT] == 200


def test_unknown_share_setting_warns_as_a_likely_typo() -> None:
    findings = check_settings({"group.share.max.sise": "300", "group.consumer.max.size": "300"})

    assert [(f.severity, f.setting, f.value) for f in findings] == [("warning", "group.share.max.sise", "300")]


def test_missing_settings_take_the_seed_defaults(tmp_path: Path) -> None:
    limits = effective_limits(load_broker_config(write_properties(tmp_path, BROKER_PROPERTIES)))

    assert limits.values == {
        DELIVERY_COUNT_LIMIT: 7,
        RECORD_LOCK_DURATION_MS: 45000,
        RECORD_LOCK_DURATION_MAX_MS: 60000,
        RECORD_LOCK_PARTITION_LIMIT: 200,
        SESSION_TIMEOUT_MS: 45000,
        MIN_SESSION_TIMEOUT_MS: 45000,
        "group.share.max.session.timeout.ms": 60000,
        HEARTBEAT_INTERVAL_MS: 5000,
        "group.share.min.heartbeat.interval.ms": 5000,
        "group.share.max.heartbeat.interval.ms": 15000,
        MAX_GROUPS: 20,
        MAX_SIZE: 300,
    }


def test_effective_limits_refuse_a_configuration_the_broker_would_refuse() -> None:
    with pytest.raises(InvalidBrokerConfig) as refused:
        effective_limits({DELIVERY_COUNT_LIMIT: "1", MAX_SIZE: "many"})

    assert DELIVERY_COUNT_LIMIT in str(refused.value)
    assert MAX_SIZE in str(refused.value)


# --- observed groups against the limits ------------------------------------------------------------------------

DEFAULTS = effective_limits({})


def test_groups_within_every_limit_raise_nothing() -> None:
    group = ShareGroupObservation(
        "orders",
        3,
        (SharePartitionObservation("T1", 0, 199, (StateBatch(100, 109, DeliveryState.AVAILABLE, 4),)),),
    )

    assert check_groups([group], DEFAULTS) == []


def test_more_share_groups_than_max_groups_is_an_error() -> None:
    groups = [ShareGroupObservation(f"g{n}", 1) for n in range(11)]

    findings = check_groups(groups, DEFAULTS)

    assert [(f.severity, f.setting, f.value, f.allowed) for f in findings] == [
        ("error", MAX_GROUPS, "11", "at most 10")
    ]
    assert check_groups(groups[:10], DEFAULTS) == []


def test_group_over_max_size_is_an_error_and_a_full_group_a_warning() -> None:
    limits = Limits({**DEFAULTS.values, MAX_SIZE: 10})
    groups = [ShareGroupObservation("over", 11), ShareGroupObservation("full", 10), ShareGroupObservation("room", 9)]

    findings = check_groups(groups, limits)

    assert [(f.severity, f.group_id, f.value) for f in findings] == [("error", "over", "11"), ("warning", "full", "10")]
    assert all("refuses new members" in f.message for f in findings)


def test_in_flight_records_at_or_over_the_partition_limit_stall_acquisition() -> None:
    partitions = (
        SharePartitionObservation("T1", 0, 200),
        SharePartitionObservation("T1", 1, 250),
        SharePartitionObservation("T1", 2, 199),
        SharePartitionObservation("T1", 3, None),
    )

    findings = check_groups([ShareGroupObservation("orders", 1, partitions)], DEFAULTS)

    assert [(f.setting, f.partition, f.value) for f in findings] == [
        (RECORD_LOCK_PARTITION_LIMIT, ("T1", 0), "200"),
        (RECORD_LOCK_PARTITION_LIMIT, ("T1", 1), "250"),
    ]


def test_records_at_or_over_the_delivery_limit_are_flagged_unless_acknowledged() -> None:
    batches = (
        StateBatch(110, 112, DeliveryState.ACQUIRED, 5),
        StateBatch(113, 119, DeliveryState.ACKNOWLEDGED, 5),
        StateBatch(120, 120, DeliveryState.ARCHIVED, 5),
        StateBatch(121, 121, DeliveryState.AVAILABLE, 6),
        StateBatch(122, 130, DeliveryState.AVAILABLE, 4),
        StateBatch(131, 131, DeliveryState.ARCHIVED, 1),
    )

    findings = check_groups(
        [ShareGroupObservation("G1", 1, (SharePartitionObservation("T1", 0, None, batches),))], DEFAULTS
    )

    assert [(f.severity, f.value, f.group_id, f.partition) for f in findings] == [
        ("warning", "5", "G1", ("T1", 0)),
        ("warning", "5", "G1", ("T1", 0)),
        ("warning", "6", "G1", ("T1", 0)),
    ]
    for finding, offsets in zip(findings, ["110-112", "120-120", "121-121"], strict=True):
        assert f"offsets {offsets} " in finding.message


def test_persisted_state_codes_count_as_plain_ints() -> None:
    """Rows decoded from share-group state carry the state as an int (0, 2 or 4)."""
    batch = StateBatch(0, 9, 4, 5)

    findings = check_groups(
        [ShareGroupObservation("G1", 1, (SharePartitionObservation("T1", 0, None, (batch,)),))], DEFAULTS
    )

    assert len(findings) == 1
    assert "archived at the limit" in findings[0].message
