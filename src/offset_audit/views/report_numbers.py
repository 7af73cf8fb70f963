"""The numbers the `report` page shows, each a pure function of an audit folder's pyarrow tables: offsets
expiring per day, groups by verdict, what-if points, lag per group, every snapshot's totals, the top
candidates and the soonest expiries. `report_charts` draws them; `html_report` lays out the page.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

import pyarrow as pa
import pyarrow.compute as pc

from offset_audit.coordinator.rule_names import TIME_RULES
from offset_audit.snapshot_totals import (
    DAY_MS,
    SnapshotTotals,
    as_int,
    as_utc,
    has_values,
    ms_after,
    pending_expiry,
)
from offset_audit.views.audit_folder import Snapshot, exact, sums_per_group

DEFAULT_DAYS = 28
TOP_ROWS = 20
# The rules under which an offset expires by time, in the broker's order.
EXPIRING_RULES = TIME_RULES


@dataclass(frozen=True)
class ExpiryDays:
    """Offsets expiring per day after as_of: day k runs from as_of + k days for 24 hours."""

    starts: list[datetime]
    by_rule: dict[str, list[int]]  # rule -> offsets per day, rules that have some, in the broker's order


def expiring_per_day(partitions: pa.Table, as_of: datetime, days: int = DEFAULT_DAYS) -> ExpiryDays:
    """How many offsets not yet expired at `as_of` expire within each of the `days` days after it, by the
    rule that decides their expiry (columns rule, expires_at, expired of partition_verdicts)."""
    pending = pending_expiry(partitions)
    day = pc.floor(pc.divide(pc.cast(ms_after(pending["expires_at"], as_of), pa.float64()), DAY_MS))
    within = pc.and_(pc.greater_equal(day, 0), pc.less(day, days))
    counted = pa.table({"rule": pending["rule"], "day": pc.cast(day, pa.int64())}).filter(within)
    counts = counted.group_by(["rule", "day"], use_threads=False).aggregate([("day", "count")])
    by_rule: dict[str, list[int]] = {}
    for row in counts.to_pylist():
        by_rule.setdefault(row["rule"], [0] * days)[row["day"]] += row["day_count"]
    order = [*EXPIRING_RULES, *sorted(set(by_rule) - set(EXPIRING_RULES))]
    start = as_utc(as_of)
    return ExpiryDays(
        starts=[start + timedelta(days=k) for k in range(days)],
        by_rule={rule: by_rule[rule] for rule in order if rule in by_rule},
    )


@dataclass(frozen=True)
class GroupCount:
    group_type: str | None
    group_state: str | None
    would_delete: bool
    groups: int


def groups_by_verdict(groups: pa.Table) -> list[GroupCount]:
    """Groups by type, state and whether the next sweep removes them (group_verdicts.would_delete)."""
    keyed = pa.table(
        {
            "group_type": groups["group_type"],
            "group_state": groups["group_state"],
            "would_delete": pc.fill_null(groups["would_delete"], False),
        }
    )
    counts = keyed.group_by(["group_type", "group_state", "would_delete"], use_threads=False).aggregate(
        [([], "count_all")]
    )
    rows = [
        GroupCount(r["group_type"], r["group_state"], r["would_delete"], r["count_all"]) for r in counts.to_pylist()
    ]
    return sorted(rows, key=lambda r: (r.group_type or "", r.group_state or "", r.would_delete))


@dataclass(frozen=True)
class WhatIfPoint:
    as_of: datetime
    retention_minutes: int
    offsets_expired: int
    offsets_total: int
    groups_deleted: int
    groups_total: int


def whatif_points(whatif: pa.Table) -> list[WhatIfPoint]:
    """One what-if snapshot's scenarios, by as_of then retention."""
    rows = whatif.sort_by([("as_of", "ascending"), ("retention_minutes", "ascending")]).to_pylist()
    return [
        WhatIfPoint(
            as_utc(r["as_of"]),
            r["retention_minutes"],
            r["offsets_expired"],
            r["offsets_total"],
            r["groups_deleted"],
            r["groups_total"],
        )
        for r in rows
    ]


@dataclass(frozen=True)
class GroupLag:
    group_id: str
    lag: int
    stale_lag: int  # the part of `lag` on partitions the group does not consume


def lag_by_group(partitions: pa.Table, top: int = TOP_ROWS) -> list[GroupLag]:
    """The `top` groups by lag (the sum over their partitions), with their stale lag; empty when the
    audit had no end offsets (lag all null)."""
    if not has_values(partitions, "lag"):
        return []
    totals = sums_per_group(partitions, "lag", "stale_lag")
    ordered = totals.sort_by([("lag_sum", "descending"), ("group_id", "ascending")]).slice(0, top)
    return [GroupLag(r["group_id"], int(r["lag_sum"]), as_int(r["stale_lag_sum"]) or 0) for r in ordered.to_pylist()]


def listed_totals(snapshot: Snapshot) -> SnapshotTotals:
    """The totals of a snapshot as the snapshots table lists them (what `snapshot_totals` gave when the
    audit wrote it): the history chart reads one row per earlier snapshot, not its offsets."""
    totals = snapshot.totals or {}
    return SnapshotTotals(
        snapshot.snapshot_id,
        as_utc(snapshot.judged_at),
        totals.get("offsets") or 0,
        totals.get("expired") or 0,
        totals.get("expiring_soon") or 0,
        totals.get("lag"),
    )


def partition_ranges(partitions: list[int]) -> str:
    """`[0, 1, 2, 3, 7]` -> `0-3, 7`."""
    spans: list[list[int]] = []
    for number in sorted(set(partitions)):
        if spans and number == spans[-1][1] + 1:
            spans[-1][1] = number
        else:
            spans.append([number, number])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)


def top_candidates(candidates: pa.Table, top: int = TOP_ROWS) -> list[dict]:
    """Deletion candidates by group, topic and reason (partitions together), most useful first: by
    priority, then the most lag."""
    keys = ["priority", "reason", "group_id", "topic"]
    grouped = (
        exact(candidates, "lag").group_by(keys, use_threads=False).aggregate([("partition", "list"), ("lag", "sum")])
    )
    rows = grouped.to_pylist()
    rows.sort(key=lambda r: (r["priority"], -(r["lag_sum"] or 0), r["group_id"], r["topic"]))
    return [
        {
            "group_id": r["group_id"],
            "topic": r["topic"],
            "partitions": partition_ranges(r["partition_list"]),
            "reason": r["reason"],
            "priority": r["priority"],
            "lag": as_int(r["lag_sum"]),
        }
        for r in rows[:top]
    ]


def soonest_expiries(partitions: pa.Table, top: int = TOP_ROWS) -> list[dict]:
    """The offsets not yet expired that expire first."""
    pending = pending_expiry(partitions).select(["group_id", "topic", "partition", "rule", "expires_at"])
    order = [("expires_at", "ascending"), ("group_id", "ascending"), ("topic", "ascending"), ("partition", "ascending")]
    return pending.sort_by(order).slice(0, top).to_pylist()
