"""Output table schemas, read from `schemas/tables/*.json` so that code, docs and tests share one list."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DoubleType,
    IntegerType,
    LongType,
    MapType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from offset_audit.layouts.spec import schemas_dir

_SIMPLE: dict[str, DataType] = {
    "tinyint": ByteType(),
    "smallint": ShortType(),
    "int": IntegerType(),
    "bigint": LongType(),
    "boolean": BooleanType(),
    "double": DoubleType(),
    "string": StringType(),
    "binary": BinaryType(),
    "timestamp": TimestampType(),
}


def _split_top_level(text: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, char in enumerate(text):
        if char == "<":
            depth += 1
        elif char == ">":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts]


def parse_type(text: str) -> DataType:
    """The Spark SQL type names the table files use, parsed without a JVM: Python workers have none."""
    text = text.strip()
    if text in _SIMPLE:
        return _SIMPLE[text]
    if text.startswith("array<") and text.endswith(">"):
        return ArrayType(parse_type(text[6:-1]))
    if text.startswith("map<") and text.endswith(">"):
        key, value = _split_top_level(text[4:-1])
        return MapType(parse_type(key), parse_type(value))
    if text.startswith("struct<") and text.endswith(">"):
        fields = []
        for part in _split_top_level(text[7:-1]):
            name, _, kind = part.partition(":")
            fields.append(StructField(name.strip(), parse_type(kind)))
        return StructType(fields)
    raise ValueError(f"unsupported column type '{text}'")


@dataclass(frozen=True)
class Column:
    name: str
    type: str  # Spark SQL type
    doc: str


@dataclass(frozen=True)
class TableSchema:
    name: str
    about: str
    columns: tuple[Column, ...]

    def struct(self) -> StructType:
        return StructType([StructField(c.name, parse_type(c.type), True) for c in self.columns])

    def column_names(self) -> list[str]:
        return [c.name for c in self.columns]

    def without_coordinates(self) -> tuple[Column, ...]:
        coords = {c.name for c in coordinate_columns()}
        return tuple(c for c in self.columns if c.name not in coords)


@cache
def coordinate_columns() -> tuple[Column, ...]:
    raw = json.loads((schemas_dir() / "tables" / "coordinates.json").read_text())
    return tuple(Column(**c) for c in raw["columns"])


@cache
def table_schema(name: str) -> TableSchema:
    raw = json.loads((schemas_dir() / "tables" / f"{name}.json").read_text())
    columns = tuple(Column(**c) for c in raw["columns"])
    if raw.get("withCoordinates", True):
        columns = coordinate_columns() + columns
    return TableSchema(raw["name"], raw["about"], columns)
