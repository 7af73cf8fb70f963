"""A snapshot's as_of as text that a user can give back: `--as-of` given it judges at the very same moment.

ISO 8601 in UTC with a Z, to the second, with the fraction only when there is one: milliseconds (a
record's timestamp, which `--as-of latest` takes) or microseconds (`--as-of now`). Shown to the second,
an as_of of 07:33:47.593 given back judged 593 ms earlier: every row's as_of changed, and offsets
expiring in between changed their verdict.
"""

from __future__ import annotations

from datetime import UTC, datetime


def exact_utc(moment: datetime) -> str:
    """`moment` (a naive one is UTC, as Delta's are) as ISO 8601 UTC, no digit lost and none added."""
    moment = moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    if moment.microsecond == 0:
        digits = "seconds"
    elif moment.microsecond % 1000 == 0:
        digits = "milliseconds"
    else:
        digits = "microseconds"
    return moment.replace(tzinfo=None).isoformat(timespec=digits) + "Z"
