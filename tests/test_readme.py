"""The README stays true: every output column and every CLI command it should describe is there."""

from __future__ import annotations

from pathlib import Path

from offset_audit.cli import main
from offset_audit.tables import table_schema

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
# Every output table described in schemas/tables/ (coordinates.json is the shared column block).
TABLES = sorted(p.stem for p in (ROOT / "schemas" / "tables").glob("*.json") if p.stem != "coordinates")


def test_table_sections_are_generated_from_the_schemas():
    """Run `python -m offset_audit.docs README.md` after changing schemas/tables/."""
    from offset_audit.docs import sync

    assert sync(README) == README


def test_every_table_and_column_is_documented():
    for name in TABLES:
        assert f"### `{name}`" in README, name
        section = README.split(f"### `{name}`", 1)[1].split("\n### ", 1)[0]
        for column in table_schema(name).columns:
            assert f"`{column.name}`" in section, f"{name}.{column.name}"


def test_every_command_and_the_two_make_targets_are_documented():
    for command in main.commands:
        assert f"offset-audit {command}" in README, command
    assert "make demo" in README and "make test" in README
