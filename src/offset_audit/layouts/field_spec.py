"""A field of a layout: its name, type and version ranges, as Kafka's generator (FieldSpec.java,
Versions.java) holds them. Below both the parser (spec) and the defaults it checks, which read fields
and are read by it.
"""

from __future__ import annotations

from dataclasses import dataclass

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
