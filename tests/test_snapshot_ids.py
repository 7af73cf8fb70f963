"""Snapshot ids have one form, and only ids of that form reach a partition folder or the delta-spark
replaceWhere condition (SQL text, where a backslash or a quote would end the literal early)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from offset_audit.errors import UserError
from offset_audit.outputs.delta import replace_condition
from offset_audit.snapshot_ids import check_snapshot_id, is_snapshot_id

HOSTILE = [
    "x\\' OR true --",  # a backslash that would escape the closing quote in Spark SQL
    "x' OR snapshot_id <> '",
    "",
    ".hidden",
    "-x",
    "../other",
    "a/b",
    "a b",
    "caf\u00e9",
    "a\nb",
    "x" * 101,
]


@pytest.mark.parametrize("value", HOSTILE)
def test_anything_outside_the_form_is_refused_by_name(value):
    assert not is_snapshot_id(value)
    with pytest.raises(UserError, match=r"^--snapshot-id takes a letter or digit"):
        check_snapshot_id(value)
    with pytest.raises(UserError):
        replace_condition({"snapshot_id": value})


@pytest.mark.parametrize("value", ["zero", "20261026T073415Z-eeede4f2", "prod.daily_2026-11-25", "7", "x" * 100])
def test_the_form_takes_what_people_and_the_tool_write(value):
    assert check_snapshot_id(value) == value
    assert replace_condition({"snapshot_id": value}) == f"`snapshot_id` = '{value}'"


def test_the_ids_the_tool_makes_have_the_form():
    from offset_audit.decoding.report import DecodeReport
    from offset_audit.runs.snapshots import snapshot_id_for

    report = DecodeReport.start("audit", ["dump"], "parquet", "")
    for newest in (None, datetime(2026, 11, 25, 10, 0, 1, 123000, tzinfo=UTC)):
        made = snapshot_id_for(report, newest, datetime(2026, 11, 25, 12, tzinfo=UTC), None)
        assert is_snapshot_id(made), made
    with pytest.raises(UserError):
        snapshot_id_for(report, None, datetime(2026, 11, 25, tzinfo=UTC), "x\\'")
