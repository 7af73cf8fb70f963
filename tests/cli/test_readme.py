"""The docs stay true: every output column is in docs/tables.md, every command in the README's CLI at a
glance, every docs link resolves, and the README stays a five-minute read."""

from __future__ import annotations

import re

from repo_paths import ROOT

from offset_audit.cli.main import main
from offset_audit.layouts.tables import table_schema

README = (ROOT / "README.md").read_text()
TABLES_DOC = (ROOT / "docs" / "tables.md").read_text()
# Every output table described in schemas/tables/ (coordinates.json is the shared column block).
TABLES = sorted(p.stem for p in (ROOT / "schemas" / "tables").glob("*.json") if p.stem != "coordinates")


def test_table_sections_are_generated_from_the_schemas():
    """Run `python -m offset_audit.cli.docs tables` after changing schemas/tables/."""
    from offset_audit.views.table_docs import sync

    assert sync(TABLES_DOC) == TABLES_DOC


def test_every_table_and_column_is_documented():
    for name in TABLES:
        assert f"### `{name}`" in TABLES_DOC, name
        section = TABLES_DOC.split(f"### `{name}`", 1)[1].split("\n### ", 1)[0]
        for column in table_schema(name).columns:
            assert f"`{column.name}`" in section, f"{name}.{column.name}"


def test_every_command_and_the_two_make_targets_are_in_the_readme():
    for command in main.commands:
        assert f"offset-audit {command}" in README, command
    assert "make demo" in README and "make test" in README


def test_the_readme_is_a_five_minute_read():
    words = len(re.findall(r"\w+", README))
    assert words < 2_000, f"{words} words: move reference material to docs/"


def test_every_relative_link_resolves():
    for document in [ROOT / "README.md", *(ROOT / "docs").glob("*.md")]:
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", document.read_text()):
            assert (document.parent / target).exists(), f"{document.name} links to a missing {target}"
