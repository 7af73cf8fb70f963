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

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from offset_audit.errors import UserError
from offset_audit.settings import MetricsSettings

# What [metrics] holds by default (settings.py defines each, its range checked where the settings are read).
_DEFAULTS = MetricsSettings()

SNAPSHOT, URGENT_GROUPS, EXPIRING, GROUPS, DELETABLE, DETAIL = range(6)
TIER_NAMES = {
    URGENT_GROUPS: "urgent groups' series",
    EXPIRING: "expiring partitions' series",
    GROUPS: "other groups' series",
    DELETABLE: "deletable partitions' series",
    DETAIL: "detail series",
}
_LONG = 2**63


@dataclass(frozen=True)
class Scope:
    """What to write: `granularity` of the detail series, the groups and topics (anchored regexes; a
    group must match one of `groups` when any is given and none of `exclude_groups`), the window within
    which an offset's expiry earns it its partition series, and the most samples to write.

    The masks take whole columns (a fleet has up to millions of offsets); a name is matched once however
    many rows carry it."""

    granularity: str = _DEFAULTS.granularity
    groups: tuple[str, ...] = _DEFAULTS.groups
    exclude_groups: tuple[str, ...] = _DEFAULTS.exclude_groups
    topics: tuple[str, ...] = _DEFAULTS.topics
    watch_expiring_within_minutes: int = _DEFAULTS.watch_expiring_within_minutes
    max_samples: int = _DEFAULTS.max_samples
    _compiled: dict[str, tuple[re.Pattern[str], ...]] = field(init=False, compare=False, repr=False)

    @classmethod
    def of(cls, metrics: MetricsSettings) -> Scope:
        """The scope [metrics] and metrics' flags ask for (their values checked when they were read)."""
        return cls(
            granularity=metrics.granularity,
            groups=metrics.groups,
            exclude_groups=metrics.exclude_groups,
            topics=metrics.topics,
            watch_expiring_within_minutes=metrics.watch_expiring_within_minutes,
            max_samples=metrics.max_samples,
        )

    def __post_init__(self) -> None:
        object.__setattr__(self, "_compiled", {})
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

    def kept_groups(self, group_ids: pa.Array) -> pa.Array:
        """Which rows' groups the group filters keep."""
        return _matching(group_ids, self.keeps_group)

    def kept_topics(self, topics: pa.Array) -> pa.Array:
        """Which rows' topics the topic filters keep."""
        return _matching(topics, self.keeps_topic)

    def watches(self, partitions: pa.Table) -> pa.Array:
        """Which offsets earn their partition series at any granularity: deletable now, or expiring
        within the window (an expired one, not yet swept, included)."""
        return pc.or_(pc.fill_null(partitions["deletable_now"], False), self.expires_soon(partitions))

    def expires_soon(self, partitions: pa.Table) -> pa.Array:
        return pc.fill_null(at_most(partitions["time_to_expiry_ms"], self.watch_ms), False)

    def urgent(self, groups: pa.Table, as_of_ms: int) -> pa.Array:
        """Which groups the sweep removes, hold expired offsets, or have their next offset expire within
        the window."""
        soon = pc.fill_null(at_most(groups["next_expiry_at_ms"], as_of_ms + self.watch_ms), False)
        expired = pc.fill_null(pc.not_equal(groups["expired_offset_count"], 0), False)
        return pc.or_(pc.or_(pc.fill_null(groups["would_delete"], False), expired), soon)


DEFAULT_SCOPE = Scope()


def _compiled(option: str, pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as err:
        raise UserError(f"{option} takes a regular expression; '{pattern}' is not one ({err})") from err


def _matching(values: pa.Array, keeps: Callable[[str], bool]) -> pa.Array:
    """Which rows hold a value `keeps` takes, asked once for each distinct value."""
    distinct = pc.unique(values)
    return pc.is_in(values, value_set=distinct.filter(pa.array([keeps(v) for v in distinct.to_pylist()], pa.bool_())))


def at_most(values: pa.Array, bound: int) -> pa.Array:
    """values <= bound for a column of longs and any Python int (a sum of two longs may pass a long)."""
    if bound >= _LONG - 1 or bound < -_LONG:
        return pc.if_else(pc.is_valid(values), bound >= 0, pa.scalar(None, pa.bool_()))
    return pc.less_equal(values, pa.scalar(bound, pa.int64()))


@dataclass(frozen=True)
class Ranked:
    """One tier's units (series written together or not at all), most important first: `rows` says
    which row of the tier's table each is, `sizes` how many samples it holds."""

    tier: int
    rows: np.ndarray
    sizes: np.ndarray


@dataclass(frozen=True)
class Selection:
    """The units that fit the budget, and what the others would have taken."""

    written: int  # samples of the units kept
    wanted: int  # samples of every unit: the budget that writes everything
    left_out: dict[int, tuple[int, int]]  # tier -> (units left out, samples they hold)
    kept: dict[int, tuple[np.ndarray, np.ndarray]]  # tier -> (rows kept, their places in the order)

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


def select(tiers: Sequence[Ranked], max_samples: int, reserve: int = 0) -> Selection:
    """The units in order of importance (by tier, then in each tier's order) up to the first that does
    not fit, and a count of the rest; `reserve` samples of the budget are kept for series the caller adds
    after choosing. What fits is where the running count of samples stays within the budget."""
    tiers = sorted(tiers, key=lambda t: t.tier)
    sizes = np.concatenate([np.asarray(t.sizes, dtype=np.int64) for t in tiers] or [np.zeros(0, np.int64)])
    running = np.cumsum(sizes)
    fit = int(np.searchsorted(running, max_samples - reserve, side="right"))
    kept: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    left_out: dict[int, tuple[int, int]] = {}
    start = 0
    for t in tiers:
        count = min(max(fit - start, 0), len(t.rows))
        kept[t.tier] = (np.asarray(t.rows[:count]), np.arange(start, start + count))
        if count < len(t.rows):
            left_out[t.tier] = (len(t.rows) - count, int(np.sum(t.sizes[count:], dtype=np.int64)))
        start += len(t.rows)
    written = int(running[fit - 1]) if fit else 0
    return Selection(written, reserve + int(running[-1]) if len(running) else reserve, left_out, kept)


def ranked(tier: int, keys: pa.Table, sizes: np.ndarray, rows: pa.Array | None = None) -> Ranked:
    """A tier's units in the order of `keys` (ascending, nulls last: an offset that never expires after
    every one that does), ties in row order; `rows` (a mask) picks the rows that are the tier's units."""
    index = np.arange(keys.num_rows) if rows is None else np.flatnonzero(rows.to_numpy(zero_copy_only=False))
    keys = keys.take(index).append_column("__row", pa.array(np.arange(len(index))))
    order = pc.sort_indices(keys, [(name, "ascending") for name in keys.column_names])
    order = order.to_numpy()
    return Ranked(tier, index[order], np.asarray(sizes, dtype=np.int64)[index][order])


def group_places(groups: pa.Table) -> pa.Array:
    """Each group row's place in the groups' order of importance (most urgent first: removed by the
    sweep, then holding expired offsets, then by next expiry, then by id): the place of the last row of
    its id, as a dict from id to place gives."""
    keys = pa.table(
        {
            "kept": pc.invert(pc.fill_null(groups["would_delete"], False)),
            "calm": pc.fill_null(pc.equal(groups["expired_offset_count"], 0), True),
            "next": groups["next_expiry_at_ms"],
            "id": groups["group_id"],
        }
    )
    order = pc.sort_indices(keys, [(name, "ascending") for name in keys.column_names]).to_numpy()
    last_first = pc.take(groups["group_id"], order[::-1])
    return pc.subtract(len(order) - 1, pc.index_in(groups["group_id"], value_set=last_first))


def places_of(ids: pa.Array, group_ids: pa.Array, places: pa.Array) -> pa.Array:
    """The place of each id's group (`places` of the rows of `group_ids`); after them all where absent."""
    return pc.fill_null(pc.take(places, pc.index_in(ids, value_set=group_ids)), len(group_ids))
