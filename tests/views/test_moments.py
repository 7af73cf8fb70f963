"""A snapshot's as_of as text that --as-of takes back to the very same moment (offset_audit.views.moments)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from offset_audit.runs.snapshots import resolve_as_of
from offset_audit.views.moments import exact_utc

MOMENTS = {
    "whole seconds": (datetime(2026, 10, 26, 7, 34, 15, tzinfo=UTC), "2026-10-26T07:34:15Z"),
    "a record's milliseconds (--as-of latest)": (
        datetime(2026, 10, 26, 7, 33, 47, 593000, tzinfo=UTC),
        "2026-10-26T07:33:47.593Z",
    ),
    "the clock's microseconds (--as-of now)": (
        datetime(2026, 10, 26, 7, 33, 47, 593021, tzinfo=UTC),
        "2026-10-26T07:33:47.593021Z",
    ),
    "naive, as Delta's are: UTC": (datetime(2026, 10, 26, 7, 33, 47, 5000), "2026-10-26T07:33:47.005Z"),
    "another zone": (
        datetime(2026, 10, 26, 9, 33, 47, 593000, tzinfo=timezone(timedelta(hours=2))),
        "2026-10-26T07:33:47.593Z",
    ),
}


@pytest.mark.parametrize("case", list(MOMENTS), ids=list(MOMENTS))
def test_as_of_is_shown_with_every_digit_it_has_and_given_back_is_the_same_moment(case):
    moment, shown = MOMENTS[case]
    assert exact_utc(moment) == shown
    assert resolve_as_of(shown, None) == (moment if moment.tzinfo else moment.replace(tzinfo=UTC))
