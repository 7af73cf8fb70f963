"""Broker limits on share groups: read `server.properties`, check the group.share.* settings, measure groups.

Which numbers. The issue asks for the defaults and allowed ranges of KIP-932's broker configuration table
(reference 8.4), so `SHARE_LIMITS` holds those, under the KIP's names, and those are what is checked. Kafka 4.1
shipped some of them differently (ShareGroupConfig and GroupCoordinatorConfig on the 4.1 branch); each
row's `kafka_4_1` says how, in short:

- group.share.record.lock.partition.limit shipped as group.share.partition.max.record.locks, default 2000
  (200 in 4.0), range 100..10000;
- group.share.record.lock.duration.max.ms shipped as group.share.max.record.lock.duration.ms, range
  30000..3600000; group.share.record.lock.duration.ms may go up to 3600000, and a new
  group.share.min.record.lock.duration.ms (default 15000, 1000..30000) bounds it from below;
- group.share.max.groups (1..100 in 4.0, where it only sized the share-session cache as max.groups x
  max.size) is gone in 4.1; group.share.max.share.sessions (default 2000, at least group.share.max.size)
  sizes the cache instead;
- group.share.max.size allows 1..1000, not 10..1000;
- delivery count, session and heartbeat settings match the seed; the seed gives the timeouts no range, so
  their minimum of 1 is 4.1's.

A file that sets a 4.1 name gets a warning naming the seed setting this audit reads instead; the 4.1
value is not applied. The min/max pairs must also be ordered (session and heartbeat as 4.1's
GroupCoordinatorConfig requires, lock duration under its maximum), listed in `ORDERINGS`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import TYPE_CHECKING, Literal

from offset_audit.errors import UserError

if TYPE_CHECKING:
    from offset_audit.decoding.share_records import StateBatch

DELIVERY_COUNT_LIMIT = "group.share.delivery.count.limit"
RECORD_LOCK_DURATION_MS = "group.share.record.lock.duration.ms"
RECORD_LOCK_DURATION_MAX_MS = "group.share.record.lock.duration.max.ms"
RECORD_LOCK_PARTITION_LIMIT = "group.share.record.lock.partition.limit"
SESSION_TIMEOUT_MS = "group.share.session.timeout.ms"
MIN_SESSION_TIMEOUT_MS = "group.share.min.session.timeout.ms"
MAX_SESSION_TIMEOUT_MS = "group.share.max.session.timeout.ms"
HEARTBEAT_INTERVAL_MS = "group.share.heartbeat.interval.ms"
MIN_HEARTBEAT_INTERVAL_MS = "group.share.min.heartbeat.interval.ms"
MAX_HEARTBEAT_INTERVAL_MS = "group.share.max.heartbeat.interval.ms"
MAX_GROUPS = "group.share.max.groups"
MAX_SIZE = "group.share.max.size"

KIP_TABLE = "KIP-932 broker configuration (reference 8.4)"
TIMEOUT_SOURCE = "KIP-932 default (reference 8.4); minimum from Kafka 4.1, atLeast(1)"


@dataclass(frozen=True)
class Limit:
    """One integer broker setting: its default and allowed range (None: unbounded on that side)."""

    setting: str
    default: int
    minimum: int | None
    maximum: int | None
    source: str
    kafka_4_1: str = "same in Kafka 4.1"

    @property
    def allowed(self) -> str:
        if self.maximum is None:
            return f"at least {self.minimum}" if self.minimum is not None else "any int"
        return f"{self.minimum}..{self.maximum}" if self.minimum is not None else f"at most {self.maximum}"

    def admits(self, value: int) -> bool:
        return (self.minimum is None or value >= self.minimum) and (self.maximum is None or value <= self.maximum)


SHARE_LIMITS: tuple[Limit, ...] = (
    Limit(DELIVERY_COUNT_LIMIT, 5, 2, 10, KIP_TABLE),
    Limit(
        RECORD_LOCK_DURATION_MS,
        30000,
        1000,
        60000,
        KIP_TABLE,
        "4.1: default 30000, range 1000..3600000, and at least group.share.min.record.lock.duration.ms",
    ),
    Limit(
        RECORD_LOCK_DURATION_MAX_MS,
        60000,
        1000,
        3600000,
        KIP_TABLE,
        "4.1: named group.share.max.record.lock.duration.ms, default 60000, range 30000..3600000",
    ),
    Limit(
        RECORD_LOCK_PARTITION_LIMIT,
        200,
        100,
        10000,
        KIP_TABLE,
        "4.1: named group.share.partition.max.record.locks, default 2000 (200 in 4.0), range 100..10000",
    ),
    Limit(SESSION_TIMEOUT_MS, 45000, 1, None, TIMEOUT_SOURCE),
    Limit(MIN_SESSION_TIMEOUT_MS, 45000, 1, None, TIMEOUT_SOURCE),
    Limit(MAX_SESSION_TIMEOUT_MS, 60000, 1, None, TIMEOUT_SOURCE),
    Limit(HEARTBEAT_INTERVAL_MS, 5000, 1, None, TIMEOUT_SOURCE),
    Limit(MIN_HEARTBEAT_INTERVAL_MS, 5000, 1, None, TIMEOUT_SOURCE),
    Limit(MAX_HEARTBEAT_INTERVAL_MS, 15000, 1, None, TIMEOUT_SOURCE),
    Limit(MAX_GROUPS, 10, 1, 100, KIP_TABLE, "4.0: range 1..100 (a Java short); removed in 4.1"),
    Limit(MAX_SIZE, 200, 10, 1000, KIP_TABLE, "4.1: default 200, range 1..1000"),
)
LIMITS_BY_SETTING = {limit.setting: limit for limit in SHARE_LIMITS}


@dataclass(frozen=True)
class Ordering:
    """`lower` must not exceed `upper` (must stay below it when `strict`)."""

    lower: str
    upper: str
    strict: bool
    source: str


GROUP_COORDINATOR_4_1 = "Kafka 4.1 GroupCoordinatorConfig refuses to start otherwise"
ORDERINGS: tuple[Ordering, ...] = (
    Ordering(MIN_SESSION_TIMEOUT_MS, MAX_SESSION_TIMEOUT_MS, False, GROUP_COORDINATOR_4_1),
    Ordering(MIN_SESSION_TIMEOUT_MS, SESSION_TIMEOUT_MS, False, GROUP_COORDINATOR_4_1),
    Ordering(SESSION_TIMEOUT_MS, MAX_SESSION_TIMEOUT_MS, False, GROUP_COORDINATOR_4_1),
    Ordering(MIN_HEARTBEAT_INTERVAL_MS, MAX_HEARTBEAT_INTERVAL_MS, False, GROUP_COORDINATOR_4_1),
    Ordering(MIN_HEARTBEAT_INTERVAL_MS, HEARTBEAT_INTERVAL_MS, False, GROUP_COORDINATOR_4_1),
    Ordering(HEARTBEAT_INTERVAL_MS, MAX_HEARTBEAT_INTERVAL_MS, False, GROUP_COORDINATOR_4_1),
    Ordering(HEARTBEAT_INTERVAL_MS, SESSION_TIMEOUT_MS, True, GROUP_COORDINATOR_4_1),
    Ordering(
        RECORD_LOCK_DURATION_MS,
        RECORD_LOCK_DURATION_MAX_MS,
        False,
        "the KIP's maximum lock duration; Kafka 4.1 ShareGroupConfig refuses to start otherwise",
    ),
)

RENAMED_IN_KAFKA_4_1 = {
    "group.share.partition.max.record.locks": RECORD_LOCK_PARTITION_LIMIT,
    "group.share.max.record.lock.duration.ms": RECORD_LOCK_DURATION_MAX_MS,
}
"""Kafka 4.1's names for seed settings."""

OTHER_KNOWN_SETTINGS = frozenset(
    {
        "group.share.enable",
        "group.share.assignors",
        "group.share.persister.class.name",
        "group.share.min.record.lock.duration.ms",
        "group.share.max.share.sessions",
    }
)
"""group.share.* settings Kafka 4.0/4.1 knows that the seed's table does not limit: not checked, not warned."""


Severity = Literal["error", "warning"]


@dataclass(frozen=True)
class Finding:
    """One thing to act on, always measured against one setting."""

    severity: Severity
    setting: str
    message: str
    value: str | None = None
    """The configured value, or the observed count."""
    allowed: str | None = None
    group_id: str | None = None
    partition: tuple[str, int] | None = None


class InvalidBrokerConfig(UserError):
    """Settings outside the limits: there are no effective limits to audit against until they are fixed."""


# --- the settings against their limits -----------------------------------------------------------------------

_JAVA_TRIM = "".join(chr(code) for code in range(33))
_JAVA_INT = re.compile(r"[+-]?[0-9]+")


def java_int(text: str) -> int | None:
    """The int ConfigDef reads from a value (String.trim, then Integer.parseInt), None where Kafka fails."""
    trimmed = text.strip(_JAVA_TRIM)
    if not _JAVA_INT.fullmatch(trimmed):
        return None
    value = int(trimmed)
    return value if -(2**31) <= value < 2**31 else None


def check_settings(config: Mapping[str, str]) -> list[Finding]:
    """Errors for values the broker would refuse, then warnings for names this audit does not read."""
    findings = [finding for limit in SHARE_LIMITS if (finding := _check_value(limit, config))]
    values = _valid_values(config)
    findings += [finding for ordering in ORDERINGS if (finding := _check_ordering(ordering, values))]
    findings += _check_names(config)
    return findings


def _check_value(limit: Limit, config: Mapping[str, str]) -> Finding | None:
    if limit.setting not in config:
        return None
    raw = config[limit.setting]
    value = java_int(raw)
    if value is None:
        message = f"{limit.setting} = '{raw}' is not a whole number Kafka can read as an int; allowed {limit.allowed}"
    elif not limit.admits(value):
        message = f"{limit.setting} = {value} is outside {limit.allowed} ({limit.source})"
    else:
        return None
    return Finding("error", limit.setting, message, value=raw, allowed=limit.allowed)


def _valid_values(config: Mapping[str, str]) -> dict[str, int]:
    """Each setting's configured value, its default when unset, and no entry when invalid."""
    values: dict[str, int] = {}
    for limit in SHARE_LIMITS:
        value = java_int(config[limit.setting]) if limit.setting in config else limit.default
        if value is not None and limit.admits(value):
            values[limit.setting] = value
    return values


def _check_ordering(ordering: Ordering, values: Mapping[str, int]) -> Finding | None:
    if ordering.lower not in values or ordering.upper not in values:
        return None
    lower, upper = values[ordering.lower], values[ordering.upper]
    if lower < upper or (lower == upper and not ordering.strict):
        return None
    relation = "below" if ordering.strict else "at most"
    return Finding(
        "error",
        ordering.lower,
        f"{ordering.lower} = {lower} must be {relation} {ordering.upper} = {upper} ({ordering.source})",
        value=str(lower),
        allowed=f"{relation} {upper}",
    )


def _check_names(config: Mapping[str, str]) -> list[Finding]:
    findings = []
    for setting in sorted(config):
        if not setting.startswith("group.share.") or setting in LIMITS_BY_SETTING or setting in OTHER_KNOWN_SETTINGS:
            continue
        if setting in RENAMED_IN_KAFKA_4_1:
            seed_name = RENAMED_IN_KAFKA_4_1[setting]
            message = (
                f"{setting} is Kafka 4.1's name for {seed_name}; this audit follows the KIP's table and reads "
                f"{seed_name}, so set that too if the limit should apply here"
            )
        else:
            message = f"{setting} is not a share-group setting Kafka knows; is it misspelt?"
        findings.append(Finding("warning", setting, message, value=config[setting]))
    return findings


@dataclass(frozen=True)
class Limits:
    """The share-group limits a broker runs with: every setting of `SHARE_LIMITS`, defaults filled in."""

    values: Mapping[str, int]

    def __getitem__(self, setting: str) -> int:
        return self.values[setting]


def effective_limits(config: Mapping[str, str]) -> Limits:
    """The limits in force. A configuration with errors has none (a broker refuses most of them at start),
    so that raises with every reason rather than guess which value the broker ran with."""
    errors = [finding.message for finding in check_settings(config) if finding.severity == "error"]
    if errors:
        raise InvalidBrokerConfig("fix the share-group settings first: " + "; ".join(errors))
    return Limits(_valid_values(config))


def limits_despite_errors(config: Mapping[str, str]) -> Limits:
    """The limits to audit groups with when some settings are invalid (they are reported as findings):
    the valid settings as configured, the defaults for the others."""
    defaults = {limit.setting: limit.default for limit in SHARE_LIMITS}
    return Limits({**defaults, **_valid_values(config)})


# --- observed share groups against the limits ----------------------------------------------------------------


class DeliveryState(IntEnum):
    """SharePartition.RecordState ids; persisted share-partition state holds 0, 2 and 4, and from Kafka
    4.4 3 (records on their way to the dead-letter topic)."""

    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVING = 3
    ARCHIVED = 4


@dataclass(frozen=True)
class SharePartitionObservation:
    topic: str
    partition: int
    in_flight_records: int | None = None
    """Records between the share-partition start and end offsets not yet acknowledged or archived; None
    when the source gives no count."""
    state_batches: tuple[StateBatch, ...] = ()


@dataclass(frozen=True)
class ShareGroupObservation:
    group_id: str
    member_count: int
    partitions: tuple[SharePartitionObservation, ...] = ()


AT_DELIVERY_LIMIT: dict[int, str] = {
    DeliveryState.AVAILABLE: (
        "available with a delivery count at or over the limit (was the limit lowered?): "
        "its next delivery is its last, and if that is released or times out it is archived"
    ),
    DeliveryState.ACQUIRED: "on its last delivery: if released or its lock times out it is archived, not redelivered",
    DeliveryState.ARCHIVING: "being written to the dead-letter topic at the limit, then archived: not delivered again",
    DeliveryState.ARCHIVED: "archived at the limit: not delivered again (a poison record, or rejected on its last try)",
}
"""What reaching the delivery count limit means in each state (SharePartition: a record returning to
Available with deliveryCount >= group.share.delivery.count.limit is archived instead). Acknowledged
records are done and not reported."""


def check_groups(groups: Sequence[ShareGroupObservation], limits: Limits) -> list[Finding]:
    """Observed share groups against the limits: group count, group size, in-flight records, deliveries.

    `groups` should be every share group the limits cover: the whole cluster for a full
    `__consumer_offsets` dump.
    """
    findings = _check_group_count(len(groups), limits)
    for group in groups:
        findings += _check_group_size(group, limits)
        for observed in group.partitions:
            findings += _check_in_flight(group.group_id, observed, limits)
            findings += _check_deliveries(group.group_id, observed, limits)
    return findings


def _check_group_count(count: int, limits: Limits) -> list[Finding]:
    limit = limits[MAX_GROUPS]
    if count <= limit:
        return []
    message = (
        f"{count} share groups, more than {MAX_GROUPS} = {limit}; the KIP sizes the broker's share-session "
        f"cache as {MAX_GROUPS} x {MAX_SIZE}, so consumers beyond it may be refused a share session"
    )
    return [Finding("error", MAX_GROUPS, message, value=str(count), allowed=f"at most {limit}")]


def _check_group_size(group: ShareGroupObservation, limits: Limits) -> list[Finding]:
    """GroupMetadataManager.throwIfShareGroupIsFull refuses a new member once numMembers >= max.size."""
    limit = limits[MAX_SIZE]
    if group.member_count > limit:
        severity: Severity = "error"
        message = f"share group '{group.group_id}' has {group.member_count} members, more than {MAX_SIZE} = {limit}"
    elif group.member_count == limit:
        severity = "warning"
        message = f"share group '{group.group_id}' is full at {MAX_SIZE} = {limit}"
    else:
        return []
    message += "; the coordinator refuses new members (GROUP_MAX_SIZE_REACHED)"
    return [
        Finding(
            severity,
            MAX_SIZE,
            message,
            value=str(group.member_count),
            allowed=f"at most {limit}",
            group_id=group.group_id,
        )
    ]


def _check_in_flight(group_id: str, observed: SharePartitionObservation, limits: Limits) -> list[Finding]:
    """SharePartition.canAcquireRecords needs numInFlightRecords < the limit, so reaching it already stalls."""
    limit = limits[RECORD_LOCK_PARTITION_LIMIT]
    if observed.in_flight_records is None or observed.in_flight_records < limit:
        return []
    message = (
        f"{observed.topic}:{observed.partition} in share group '{group_id}' has {observed.in_flight_records} records "
        f"in flight, at or over {RECORD_LOCK_PARTITION_LIMIT} = {limit}; it acquires no more records until some "
        "are acknowledged, released or time out"
    )
    return [
        Finding(
            "warning",
            RECORD_LOCK_PARTITION_LIMIT,
            message,
            value=str(observed.in_flight_records),
            allowed=f"below {limit}",
            group_id=group_id,
            partition=(observed.topic, observed.partition),
        )
    ]


def _check_deliveries(group_id: str, observed: SharePartitionObservation, limits: Limits) -> list[Finding]:
    limit = limits[DELIVERY_COUNT_LIMIT]
    findings = []
    for batch in observed.state_batches:
        consequence = AT_DELIVERY_LIMIT.get(batch.state)  # an IntEnum key matches its plain int
        if consequence is None or batch.delivery_count < limit:
            continue
        message = (
            f"{observed.topic}:{observed.partition} offsets {batch.first_offset}-{batch.last_offset} in share group "
            f"'{group_id}' delivered {batch.delivery_count} times, {DELIVERY_COUNT_LIMIT} = {limit}: {consequence}"
        )
        findings.append(
            Finding(
                "warning",
                DELIVERY_COUNT_LIMIT,
                message,
                value=str(batch.delivery_count),
                allowed=f"below {limit}",
                group_id=group_id,
                partition=(observed.topic, observed.partition),
            )
        )
    return findings
