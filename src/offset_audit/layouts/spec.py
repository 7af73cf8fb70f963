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

PRIMITIVES = ("bool", "int8", "int16", "uint16", "int32", "int64", "float64", "uuid", "string", "bytes")


@dataclass(frozen=True)
class Versions:
    """An inclusive version range such as "0+", "1", "0-4" or "none"."""

    low: int
    high: int  # inclusive; a large number for open ranges

    @staticmethod
    def parse(text: str | None) -> Versions:
        if text is None or text == "none":
            return NO_VERSIONS
        text = str(text).strip()
        if text.endswith("+"):
            return Versions(int(text[:-1]), 1 << 15)
        if "-" in text:
            low, high = text.split("-", 1)
            return Versions(int(low), int(high))
        return Versions(int(text), int(text))

    def __contains__(self, version: int) -> bool:
        return self.low <= version <= self.high

    @property
    def empty(self) -> bool:
        return self.low > self.high

    def covers(self, other: Versions) -> bool:
        """Every version of `other` is in this range (Kafka's Versions.contains(Versions))."""
        return other.empty or (self.low <= other.low and other.high <= self.high)


NO_VERSIONS = Versions(0, -1)


@dataclass(frozen=True)
class FieldSpec:
    name: str
    type: str  # primitive, "[]primitive", "[]StructName" or "StructName"
    versions: Versions
    nullable: Versions = NO_VERSIONS
    tagged: Versions = NO_VERSIONS
    tag: int | None = None
    # Kafka's `default` as text: "" when none is given (the type's zero), "null", or a literal such as
    # "-1" (offset_audit.layouts.defaults gives the value it stands for in a version).
    default: str = ""
    fields: tuple[FieldSpec, ...] = ()

    @property
    def is_array(self) -> bool:
        return self.type.startswith("[]")

    @property
    def element_type(self) -> str:
        return self.type[2:] if self.is_array else self.type

    @property
    def is_struct(self) -> bool:
        return self.element_type not in PRIMITIVES


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
