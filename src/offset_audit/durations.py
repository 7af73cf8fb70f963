"""Durations as operators write them (30m, 24h, 7d, 2w), wherever the tool takes minutes.

A bare number stays minutes, as offsets.retention.minutes is. Whatever the unit, the result must be a
whole number of minutes: the broker's retention has no finer grain, and a what-if at 90 seconds would
silently be rounded.
"""

from __future__ import annotations

import re

from offset_audit.errors import UserError

MINUTES_PER_UNIT = {"m": 1, "min": 1, "h": 60, "d": 1440, "w": 10080}
_DURATION = re.compile(r"^\s*(\d+)\s*(m|min|h|d|w)?\s*$", re.IGNORECASE)
MINUTE_MS = 60_000


def parse_minutes(text: str | int, option: str) -> int:
    """`7d` -> 10080; `90` -> 90 (minutes); anything else is one sentence naming the option."""
    if isinstance(text, int):
        return text
    match = _DURATION.match(str(text))
    if match is None:
        raise UserError(f"{option} takes minutes or a duration like 30m, 24h, 7d or 2w, not '{text}'")
    number, unit = int(match.group(1)), (match.group(2) or "m").lower()
    return number * MINUTES_PER_UNIT[unit]


def format_minutes(minutes: int) -> str:
    """The shortest exact spelling: 10080 -> 7d, 1440 -> 1d, 90 -> 90m (the inverse of parse_minutes)."""
    for unit, size in (("w", 10080), ("d", 1440), ("h", 60)):
        if minutes and minutes % size == 0:
            if unit == "w" and minutes // size < 2:
                continue
            return f"{minutes // size}{unit}"
    return f"{minutes}m"
