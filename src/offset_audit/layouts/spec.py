"""Record layouts as data: the files in `schemas/` parsed into field specs.

The files follow the shape of Kafka's own message JSON (fields with `versions`, `nullableVersions`,
`taggedVersions`, `tag`, nested `fields`), so a new Kafka version is a schema edit plus byte vectors,
not a new parser (see ../shared/style.md, "Layouts as data").
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from offset_audit.layouts import defaults
from offset_audit.layouts.field_spec import FieldSpec, Versions


@dataclass(frozen=True)
class ValueLayout:
    """One era's value layout of a record type; several eras exist where Kafka broke compatibility."""

    era: str
    valid: Versions
    flexible: Versions
    fields: tuple[FieldSpec, ...]
    note: str = ""


@dataclass(frozen=True)
class RecordLayout:
    record_type: int
    name: str
    key_fields: tuple[FieldSpec, ...]
    values: tuple[ValueLayout, ...]
    source: str = ""
    about: str = ""


@dataclass(frozen=True)
class StructLayout:
    """A versioned struct that is not a coordinator record (the consumer protocol blobs)."""

    name: str
    valid: Versions
    flexible: Versions
    fields: tuple[FieldSpec, ...]


def _default_text(raw: Any) -> str:
    """A JSON default as the text Kafka's generator reads: Jackson turns a JSON null into no default,
    which is the type's zero, not null; numbers and booleans become their text."""
    if raw is None:
        return ""
    if isinstance(raw, bool):
        return "true" if raw else "false"
    return str(raw)


def _field(raw: dict[str, Any], inherited_versions: str = "0+") -> FieldSpec:
    versions = raw.get("versions", inherited_versions)
    spec = FieldSpec(
        name=raw["name"],
        type=raw["type"],
        versions=Versions.parse(versions),
        nullable=Versions.parse(raw.get("nullableVersions")),
        tagged=Versions.parse(raw.get("taggedVersions")),
        tag=raw.get("tag"),
        default=_default_text(raw.get("default")),
        fields=tuple(_field(f, versions) for f in raw.get("fields", ())),
    )
    defaults.check(spec)
    return spec


def schemas_dir() -> Traversable:
    """The schemas/ folder as package data (src/offset_audit/schemas; the repo's schemas/ links to it).

    Read through importlib.resources so it also works from the zip that spark-submit --py-files ships.
    """
    return resources.files("offset_audit") / "schemas"


def _parse_record(raw: dict[str, Any]) -> RecordLayout:
    return RecordLayout(
        record_type=raw["recordType"],
        name=raw["name"],
        key_fields=tuple(_field(f, "0") for f in raw["key"]["fields"]),
        values=tuple(
            ValueLayout(
                era=v["era"],
                valid=Versions.parse(v["validVersions"]),
                flexible=Versions.parse(v["flexibleVersions"]),
                fields=tuple(_field(f) for f in v["fields"]),
                note=v.get("note", ""),
            )
            for v in raw["value"]
        ),
        source=raw.get("source", ""),
        about=raw.get("about", ""),
    )


@cache
def record_layouts(directory: str | None = None) -> dict[int, RecordLayout]:
    """All coordinator record layouts of __consumer_offsets by record type."""
    return _layouts_in(Path(directory) if directory else schemas_dir() / "records")


@cache
def share_state_layouts() -> dict[int, RecordLayout]:
    """The record layouts of __share_group_state (ShareSnapshot 0, ShareUpdate 1): the same framing as
    __consumer_offsets (reference 2.9), but type ids of their own, so they live in a folder of their own."""
    return _layouts_in(schemas_dir() / "share_state")


def _layouts_in(base: Path | Traversable) -> dict[int, RecordLayout]:
    layouts = {}
    for path in sorted((p for p in base.iterdir() if p.name.endswith(".json")), key=lambda p: p.name):
        layout = _parse_record(json.loads(path.read_text()))
        if layout.record_type in layouts:
            raise ValueError(f"record type {layout.record_type} is described twice ({path.name})")
        layouts[layout.record_type] = layout
    return layouts


@cache
def protocol_layout(name: str) -> StructLayout:
    raw = json.loads((schemas_dir() / "protocol" / f"{name}.json").read_text())
    return StructLayout(
        name=raw["name"],
        valid=Versions.parse(raw["validVersions"]),
        flexible=Versions.parse(raw["flexibleVersions"]),
        fields=tuple(_field(f) for f in raw["fields"]),
    )
