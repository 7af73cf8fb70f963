"""The README stays true: every output column and every CLI command it should describe is there."""

from __future__ import annotations

from pathlib import Path

from offset_audit.cli import main
from offset_audit.decode import TABLES as DECODE_TABLES
from offset_audit.tables import table_schema

README = (Path(__file__).resolve().parent.parent / "README.md").read_text()
TABLES = (*DECODE_TABLES, "runs")


def test_every_table_and_column_is_documented():
    for name in TABLES:
        assert f"### `{name}`" in README, name
        for column in table_schema(name).columns:
            assert f"`{column.name}`" in README, f"{name}.{column.name}"


def test_every_command_and_the_two_make_targets_are_documented():
    for command in main.commands:
        assert f"offset-audit {command}" in README, command
    assert "make demo" in README and "make test" in README
