"""Loads the hand-written byte vectors in tests/vectors/*.json.

Hex is given as a list of field-sized segments (spaces ignored) so each vector reads like the layout
it comes from. `repeat:HH:N` stands for byte HH repeated N times; in expectations `repeat:c:N` is
the character c repeated N times, `hex:...` is bytes, and `contains:...` checks a substring.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

VECTOR_DIR = Path(__file__).parent / "vectors"


def hex_bytes(segments: list[str] | None) -> bytes | None:
    if segments is None:
        return None
    out = bytearray()
    for segment in segments:
        if segment.startswith("repeat:"):
            _, byte, count = segment.split(":")
            out += bytes([int(byte, 16)]) * int(count)
        else:
            out += bytes.fromhex(segment.replace(" ", ""))
    return bytes(out)


@dataclass(frozen=True)
class Vector:
    file: str
    name: str
    key: bytes | None
    value: bytes | None
    record_class: str
    expect: dict[str, Any]
    members: list[dict[str, Any]] | None
    reason: str | None
    record_type: int | None
    # the key's and value's `data` as Kafka's JSON formatters print them, where the vector gives it
    json: dict[str, Any] | None = None

    def __str__(self) -> str:
        return f"{self.file}: {self.name}"


def load(name: str) -> list[Vector]:
    raw = json.loads((VECTOR_DIR / f"{name}.json").read_text())
    return [
        Vector(
            file=name,
            name=v["name"],
            key=hex_bytes(v["key"]),
            value=hex_bytes(v["value"]),
            record_class=v["class"],
            expect=v.get("expect", {}),
            members=v.get("members"),
            reason=v.get("reason"),
            record_type=v.get("record_type"),
            json=v.get("json"),
        )
        for v in raw["vectors"]
    ]


def all_vectors() -> list[Vector]:
    files = ("offset_commits", "group_metadata", "modern_groups", "tagged_defaults", "malformed")
    return [v for name in files for v in load(name)]


def expected_value(spec: Any) -> Any:
    if isinstance(spec, list):
        return [expected_value(item) for item in spec]
    if isinstance(spec, dict):
        return {name: expected_value(item) for name, item in spec.items()}
    if isinstance(spec, str) and spec.startswith("repeat:"):
        _, char, count = spec.split(":")
        return char * int(count)
    if isinstance(spec, str) and spec.startswith("hex:"):
        return bytes.fromhex(spec[4:])
    return spec


def check_fields(actual: dict[str, Any], expect: dict[str, Any], where: str) -> None:
    for name, spec in expect.items():
        value = actual.get(name)
        if isinstance(spec, str) and spec.startswith("contains:"):
            assert value is not None and spec[len("contains:") :] in value, f"{where}: {name}={value!r}"
            continue
        assert value == expected_value(spec), f"{where}: {name} is {value!r}, expected {expected_value(spec)!r}"
