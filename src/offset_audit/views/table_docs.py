"""docs/tables.md's table sections, generated from schemas/tables/ so they cannot drift.

`python -m offset_audit.cli.docs tables` rewrites each "### `table`" section's text and columns of the
page; a test fails when the page and the schemas disagree.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import cast

from offset_audit.layouts.spec import schemas_dir
from offset_audit.layouts.tables import coordinate_columns, table_schema


def table_names() -> list[str]:
    # Run from the source tree (the docs are generated there), where package data is a real folder: a Path.
    tables = cast(Path, schemas_dir() / "tables")
    return sorted(p.stem for p in tables.glob("*.json") if p.stem != "coordinates")


def table_section(name: str) -> str:
    """The body of the README section of one table: what it holds, then one row per column."""
    raw = json.loads((schemas_dir() / "tables" / f"{name}.json").read_text())
    schema = table_schema(name)
    lines = [schema.about, "", "| column | type | meaning |", "|---|---|---|"]
    columns = schema.columns
    if raw.get("withCoordinates", True):
        coords = coordinate_columns()
        names = ", ".join(f"`{c.name}`" for c in coords)
        lines.append(f"| {names} | {', '.join(c.type for c in coords)} | where the record is in the dump |")
        columns = schema.without_coordinates()
    lines += [f"| `{c.name}` | {c.shown or c.type} | {c.doc} |" for c in columns]
    return "\n".join(lines)


def sync(readme: str) -> str:
    """The README with every table section's body regenerated (headings and other text untouched)."""
    for name in table_names():
        pattern = re.compile(rf"(### `{re.escape(name)}`\n\n)(.*?)(\n\n(?=#)|\n*\Z)", re.S)
        body = table_section(name)

        def section(m: re.Match[str], body: str = body) -> str:
            return m.group(1) + body + m.group(3)

        readme, count = pattern.subn(section, readme, count=1)
        if not count:
            raise ValueError(f"the README has no section ### `{name}`")
    return readme
