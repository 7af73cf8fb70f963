"""The offsets.retention.minutes values a log agrees with: each tombstone the expiry sweep wrote bounds the
retention the broker ran with (history's summary prints the range).

Pure Python over the swept tombstones' rows, so the rule sits with the others: rules.sweep_reach_ms says
how late a sweep can write one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from offset_audit.coordinator.rule_names import EXPLICIT_EXPIRE_TIMESTAMP, TIME_RULES
from offset_audit.coordinator.rules import sweep_reach_ms
from offset_audit.durations import MINUTE_MS


@dataclass
class RetentionBound:
    """offsets.retention.minutes values consistent with every tombstone the sweep wrote (`low` to
    `high`), and the tombstones that set each end; None ends when no swept tombstone bounds them."""

    low: int | None = None
    high: int | None = None
    low_by: dict | None = None
    high_by: dict | None = None
    tombstones: int = 0

    @property
    def consistent(self) -> bool:
        return self.low is None or self.high is None or self.low <= self.high


def retention_bound(swept: list[dict], check_interval_ms: int) -> RetentionBound:
    """A sweep at retention R writes a time-rule tombstone at T only if T - base >= R and T <= base + R +
    reach (the interval and a sweep's lateness, rules.sweep_reach_ms): so R lies in [(T - base - reach),
    (T - base)], in whole minutes. Explicit expiry timestamps do not depend on R and bound nothing. Where
    the sweep window reaches past expires_at + reach, the group changed later (a member left) and the
    sweep acted on that change: such a tombstone bounds R from above only."""
    bound = RetentionBound()
    reach = sweep_reach_ms(check_interval_ms)
    for row in swept:
        if (
            row["rule"] not in TIME_RULES
            or row["rule"] == EXPLICIT_EXPIRE_TIMESTAMP
            or row["base_timestamp_ms"] is None
        ):
            continue
        age = row["event_time_ms"] - row["base_timestamp_ms"]
        after_a_change = row["sweep_window_end_ms"] - reach > row["expires_at_ms"]
        low = 1 if after_a_change else max(1, math.ceil((age - reach) / MINUTE_MS))
        high = age // MINUTE_MS
        bound.tombstones += 1
        if bound.low is None or low > bound.low:
            bound.low, bound.low_by = low, row
        if bound.high is None or high < bound.high:
            bound.high, bound.high_by = high, row
    return bound
