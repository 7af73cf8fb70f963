"""Which series `offset-audit metrics` writes: granularity, filters and a sample budget.

A lag exporter writes a series per committed offset; on a cluster of tens of thousands of groups that
is millions of series, a scrape that takes seconds and a `sample_limit` that drops the whole target
(node metrics included). So, as kminion's granularity and kafka-lag-exporter's allow and deny lists do,
the command writes per-group series by default and per-partition ones only where an operator acts on a
single partition: offsets about to expire, and offsets that `--delete-offsets` would remove now.

The series come in units that are written whole or not at all (a group's series, a partition's, a
group-and-topic's), in this order of importance:

1. the snapshot's and the audit run's own gauges, and the count of samples left out;
2. the series of the urgent groups: those the sweep removes, with expired offsets, or whose next
   offset expires within the watch window; the most urgent first (removed, then expired, then by the
   soonest next expiry);
3. the partitions expiring within the window (expired ones included), the soonest first;
4. the series of the other groups, by their next expiry, then id;
5. the partitions deletable now that do not expire within the window;
6. at `topic` granularity each group-and-topic's series, at `partition` every other partition's, in
   the groups' order.

A watched partition (3 and 5) has the two series that say why it is watched, its expiry and whether it
is deletable; at `partition` granularity, all six. Past the budget, the units from the first one that
does not fit on are left out and counted, so what is written is always a prefix of that order, and
the caller says what was left out.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from offset_audit.errors import UserError

GRANULARITIES = ("group", "topic", "partition")
DEFAULT_MAX_SAMPLES = 200_000
DEFAULT_WATCH_MINUTES = 24 * 60
# The snapshot and run gauges take up to five samples, the count of what was left out one, and a group
# up to ten: less could not hold one.
MIN_SAMPLES = 16

SNAPSHOT, URGENT_GROUPS, EXPIRING, GROUPS, DELETABLE, DETAIL = range(6)
TIER_NAMES = {
    URGENT_GROUPS: "urgent groups' series",
    EXPIRING: "expiring partitions' series",
    GROUPS: "other groups' series",
    DELETABLE: "deletable partitions' series",
    DETAIL: "detail series",
}

Labels = tuple[tuple[str, object], ...]
Sample = tuple[str, Labels, int | float]  # metric name (without the prefix), labels, value


@dataclass(frozen=True)
class Scope:
    """What to write: `granularity` of the detail series, the groups and topics (anchored regexes; a
    group must match one of `groups` when any is given and none of `exclude_groups`), the window within
    which an offset's expiry earns it its partition series, and the most samples to write."""

    granularity: str = "group"
    groups: tuple[str, ...] = ()
    exclude_groups: tuple[str, ...] = ()
    topics: tuple[str, ...] = ()
    watch_expiring_within_minutes: int = DEFAULT_WATCH_MINUTES
    max_samples: int = DEFAULT_MAX_SAMPLES
    _compiled: dict[str, tuple[re.Pattern[str], ...]] = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_compiled", {})
        if self.granularity not in GRANULARITIES:
            raise UserError(f"granularity takes {', '.join(GRANULARITIES)}, not '{self.granularity}'")
        if not self.max_samples >= MIN_SAMPLES:
            raise UserError(f"max samples takes {MIN_SAMPLES} or more, not {self.max_samples}")
        if self.watch_expiring_within_minutes < 0:
            raise UserError(
                f"watch expiring within takes a duration of 0 or more, not {self.watch_expiring_within_minutes}"
            )
        for option, patterns in (
            ("--group", self.groups),
            ("--exclude-group", self.exclude_groups),
            ("--topic", self.topics),
        ):
            self._compiled[option] = tuple(_compiled(option, p) for p in patterns)

    @property
    def watch_ms(self) -> int:
        return self.watch_expiring_within_minutes * 60_000

    def keeps_group(self, group_id: str) -> bool:
        wanted = self._compiled["--group"]
        if wanted and not any(p.fullmatch(group_id) for p in wanted):
            return False
        return not any(p.fullmatch(group_id) for p in self._compiled["--exclude-group"])

    def keeps_topic(self, topic: str) -> bool:
        wanted = self._compiled["--topic"]
        return not wanted or any(p.fullmatch(topic) for p in wanted)

    def watches(self, partition: dict) -> bool:
        """Whether an offset earns its partition series at any granularity: deletable now, or expiring
        within the window (an expired one, not yet swept, included)."""
        return bool(partition["deletable_now"]) or self.expires_soon(partition)

    def expires_soon(self, partition: dict) -> bool:
        expiry = partition["time_to_expiry_ms"]
        return expiry is not None and expiry <= self.watch_ms

    def is_urgent(self, group: dict, as_of_ms: int) -> bool:
        """A group the sweep removes, with expired offsets, or whose next offset expires within the window."""
        next_expiry = group["next_expiry_at_ms"]
        soon = next_expiry is not None and next_expiry - as_of_ms <= self.watch_ms
        return bool(group["would_delete"]) or bool(group["expired_offset_count"]) or soon


DEFAULT_SCOPE = Scope()


def _compiled(option: str, pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as err:
        raise UserError(f"{option} takes a regular expression; '{pattern}' is not one ({err})") from err


@dataclass(frozen=True)
class Unit:
    """Series written together or not at all: `tier` (SNAPSHOT to DETAIL), then `rank` within it."""

    tier: int
    rank: tuple
    samples: tuple[Sample, ...]


@dataclass(frozen=True)
class Selection:
    """The units that fit the budget, and what the others would have taken."""

    samples: tuple[Sample, ...]
    wanted: int  # samples of every unit: the budget that writes everything
    left_out: dict[int, tuple[int, int]]  # tier -> (units left out, samples they hold)

    def left_out_text(self, max_samples: int) -> str | None:
        """One sentence for stderr, or None when everything fits."""
        if not self.left_out:
            return None
        parts = [
            f"{units:,} {TIER_NAMES[tier]} ({samples:,} samples)"
            for tier, (units, samples) in sorted(self.left_out.items())
        ]
        return (
            f"left out past --max-samples {max_samples:,}: {'; '.join(parts)}; "
            f"--max-samples {self.wanted:,} would write everything"
        )


def select(units: Iterable[Unit], max_samples: int, reserve: int = 0) -> Selection:
    """The units in order of importance up to the first that does not fit, and a count of the rest;
    `reserve` samples of the budget are kept for series the caller adds after choosing."""
    ordered = sorted(units, key=lambda u: (u.tier, u.rank))
    kept: list[Sample] = []
    left_out: dict[int, list[int]] = {}
    wanted = reserve
    max_samples -= reserve
    full = False
    for unit in ordered:
        size = len(unit.samples)
        wanted += size
        if not full and len(kept) + size <= max_samples:
            kept.extend(unit.samples)
            continue
        full = True
        counts = left_out.setdefault(unit.tier, [0, 0])
        counts[0] += 1
        counts[1] += size
    return Selection(tuple(kept), wanted, {tier: (n, s) for tier, (n, s) in left_out.items()})


def group_rank(group: dict) -> tuple:
    """Most urgent first: removed by the sweep, then holding expired offsets, then by next expiry."""
    next_expiry = group["next_expiry_at_ms"]
    return (
        not group["would_delete"],
        not (group["expired_offset_count"] or 0),
        math.inf if next_expiry is None else next_expiry,
        group["group_id"],
    )


def watched_rank(partition: dict, group_order: dict[str, int]) -> tuple:
    """Soonest expiry first (never-expiring deletable offsets last), then in the groups' order."""
    expiry = partition["time_to_expiry_ms"]
    return (math.inf if expiry is None else expiry, *detail_rank(partition, group_order))


def detail_rank(row: dict, group_order: dict[str, int]) -> tuple:
    """In the groups' order, then by topic (and partition)."""
    return (group_order.get(row["group_id"], len(group_order)), row["topic"], row.get("partition", -1))


def ordered_groups(groups: Sequence[dict]) -> dict[str, int]:
    """Group id -> its place in the order of importance."""
    return {g["group_id"]: i for i, g in enumerate(sorted(groups, key=group_rank))}
