"""Kafka's epoch milliseconds, and the TIMESTAMP columns that show them.

Kafka keeps every time as a Java long of milliseconds, and a client of OffsetCommit v1 could write any
long as its commit timestamp. A TIMESTAMP column cannot hold all of them: Spark counts microseconds
(ms * 1000 overflows beyond ±292,000 years), and Python's datetime, pandas and most readers stop at the
years 1 to 9999. So every time read from a dump is kept twice: exactly, as `<name>_ms` (bigint), and as
`<name>` (TIMESTAMP) only where it lies in 0001-01-01 .. 9999-12-31 UTC, null elsewhere. The broker's
rules are judged on the milliseconds (`offset_audit.coordinator.rules`), never on the TIMESTAMP, so a value that no
date can show still gets the broker's verdict.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TypeGuard

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column
from pyspark.sql import functions as F

# 0001-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z: the range a TIMESTAMP column shows.
MIN_MS = -62_135_596_800_000
MAX_MS = 253_402_300_799_999
ARROW_TIMESTAMP = pa.timestamp("us", tz="UTC")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def ms_column(name: str) -> str:
    """The exact-milliseconds column beside the TIMESTAMP column `name`."""
    return f"{name}_ms"


def in_range(millis: int | None) -> TypeGuard[int]:
    return millis is not None and MIN_MS <= millis <= MAX_MS


def arrow_timestamps(millis: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """int64 milliseconds as TIMESTAMP(us, UTC); null where the value is null or out of range."""
    millis = millis.cast(pa.int64())
    shown = pc.and_(pc.greater_equal(millis, MIN_MS), pc.less_equal(millis, MAX_MS))
    # In range, * 1000 cannot overflow; out-of-range values are replaced before the multiplication.
    safe = pc.if_else(shown, millis, pa.scalar(None, pa.int64()))
    return pc.multiply(safe, 1000).cast(ARROW_TIMESTAMP)


def spark_timestamp(millis: Column) -> Column:
    """The Spark twin of `arrow_timestamps`."""
    return F.when(millis.between(F.lit(MIN_MS), F.lit(MAX_MS)), F.timestamp_millis(millis))


def datetime_of(millis: int | None) -> datetime | None:
    """A UTC datetime, or None where no date can show the value."""
    return _EPOCH + timedelta(milliseconds=millis) if in_range(millis) else None


def millis_of(moment: datetime) -> int:
    """Epoch milliseconds of a datetime (naive ones are UTC), exactly: no float on the way."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    delta = moment - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000


def millis_from_arrow(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    """A timestamp column of any unit (or int64 already in ms) as int64 milliseconds, floored: Kafka's
    own unit. Seconds that would overflow as milliseconds become null."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if not pa.types.is_timestamp(values.type):
        return values.cast(pa.int64())
    raw = values.cast(pa.int64())
    unit = values.type.unit
    if unit == "ms":
        return raw
    numbers = raw.to_numpy(zero_copy_only=False)
    valid = raw.is_valid().to_numpy(zero_copy_only=False)
    numbers = np.where(valid, numbers, 0).astype(np.int64)
    if unit == "s":
        fits = np.abs(numbers) <= np.iinfo(np.int64).max // 1000
        return pa.array(np.where(fits, numbers, 0) * 1000, pa.int64(), mask=~(valid & fits))
    per_ms = 1000 if unit == "us" else 1_000_000
    return pa.array(np.floor_divide(numbers, per_ms), pa.int64(), mask=~valid)
