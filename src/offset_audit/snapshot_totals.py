"""A snapshot's totals: what the snapshots table lists of each audit snapshot (its offsets, expired ones,
those expiring within a week, its lag), so that the report's history chart reads one row per earlier
snapshot instead of its offsets. The audit writes them and the report draws them; both take them from
here, pure functions of the snapshot's partition_verdicts columns in pyarrow.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import SupportsInt

import pyarrow as pa
import pyarrow.compute as pc

# The history chart's second line: offsets a dashboard will see vanish within a week.
SOON_DAYS = 7
DAY_MS = 86_400_000
# Sums of offsets are exact: offsets reach 2^63 - 1, and pyarrow's int64 sum wraps around past it.
EXACT = pa.decimal128(38, 0)


def as_utc(moment: datetime) -> datetime:
    """A datetime from a table or a test, as an aware UTC datetime (a naive one is UTC, as Delta's are)."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def ms_after(column: pa.ChunkedArray, moment: datetime) -> pa.ChunkedArray:
    """Milliseconds from `moment` to each timestamp of `column` (null stays null)."""
    instants = column.cast(pa.timestamp("ms", "UTC"))
    return pc.milliseconds_between(pa.scalar(as_utc(moment), pa.timestamp("ms", "UTC")), instants)


def pending_expiry(partitions: pa.Table) -> pa.Table:
    """Offsets not yet expired that will expire by time (expires_at set; null is never)."""
    not_expired = pc.invert(pc.fill_null(partitions["expired"], False))
    return partitions.filter(pc.and_(not_expired, pc.is_valid(partitions["expires_at"])))


def has_values(table: pa.Table, column: str) -> bool:
    return column in table.column_names and table[column].null_count < table.num_rows


def as_int(value: SupportsInt | None) -> int | None:  # an int or an exact sum's Decimal
    return None if value is None else int(value)


@dataclass(frozen=True)
class SnapshotTotals:
    """What the snapshots table lists, and the history chart shows, of one snapshot."""

    snapshot_id: str
    as_of: datetime
    offsets: int
    expired: int
    expiring_soon: int  # not expired, expiring within SOON_DAYS of as_of
    lag: int | None  # null without end offsets


def snapshot_totals(
    snapshot_id: str, judged_at: datetime, partitions: pa.Table, soon_days: int = SOON_DAYS
) -> SnapshotTotals:
    """Totals of one snapshot's partition_verdicts (columns expires_at, expired, lag), judged at `judged_at`."""
    expired = pc.sum(pc.cast(pc.fill_null(partitions["expired"], False), pa.int64())).as_py() or 0
    pending = pending_expiry(partitions)
    soon = pc.less(ms_after(pending["expires_at"], judged_at), soon_days * DAY_MS)
    lag = as_int(pc.sum(partitions["lag"].cast(EXACT)).as_py()) if has_values(partitions, "lag") else None
    return SnapshotTotals(
        snapshot_id,
        as_utc(judged_at),
        partitions.num_rows,
        expired,
        pc.sum(pc.cast(soon, pa.int64())).as_py() or 0,
        lag,
    )
