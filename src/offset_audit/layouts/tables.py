"""Output table schemas, read from `schemas/tables/*.json` so that code, docs and tests share one list."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from offset_audit.layouts.spec import schemas_dir

if TYPE_CHECKING:
    from pyspark.sql.types import DataType, StructType

# The Spark SQL type names the table files use, as Arrow types: what pyspark's to_arrow_type gives for
# them (tests/layouts/test_tables.py holds the two to each other), without importing pyspark, so that
# the read commands (views/) never load it.
_ARROW: dict[str, pa.DataType] = {
    "tinyint": pa.int8(),
    "smallint": pa.int16(),
    "int": pa.int32(),
    "bigint": pa.int64(),
    "boolean": pa.bool_(),
    "double": pa.float64(),
    "string": pa.string(),
    "binary": pa.binary(),
    "timestamp": pa.timestamp("us", tz="UTC"),
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


def _parse(text: str, simple: Mapping[str, Any], array: Callable, map_: Callable, struct: Callable) -> Any:
    """One walk over a type name for both type systems: `simple` holds the primitives by name, the other
    three build a container from its parsed parts."""
    text = text.strip()
    if text.startswith("array<") and text.endswith(">"):
        return array(_parse(text[6:-1], simple, array, map_, struct))
    if text.startswith("map<") and text.endswith(">"):
        key, value = _split_top_level(text[4:-1])
        return map_(_parse(key, simple, array, map_, struct), _parse(value, simple, array, map_, struct))
    if text.startswith("struct<") and text.endswith(">"):
        fields = []
        for part in _split_top_level(text[7:-1]):
            name, _, kind = part.partition(":")
            fields.append((name.strip(), _parse(kind, simple, array, map_, struct)))
        return struct(fields)
    if text not in simple:
        raise ValueError(f"unsupported column type '{text}'")
    return simple[text]


def parse_type(text: str) -> DataType:
    """The Spark SQL type names the table files use, parsed without a JVM: Python workers have none."""
    from pyspark.sql import types as T

    simple = {
        "tinyint": T.ByteType(),
        "smallint": T.ShortType(),
        "int": T.IntegerType(),
        "bigint": T.LongType(),
        "boolean": T.BooleanType(),
        "double": T.DoubleType(),
        "string": T.StringType(),
        "binary": T.BinaryType(),
        "timestamp": T.TimestampType(),
    }
    return _parse(
        text,
        simple,
        T.ArrayType,
        T.MapType,
        lambda fields: T.StructType([T.StructField(name, kind) for name, kind in fields]),
    )


def parse_struct(text: str) -> StructType:
    """A `struct<...>` type name parsed (parse_type), as the StructType a DataFrame's schema or
    mapInArrow's result takes."""
    from pyspark.sql import types as T

    parsed = parse_type(text)
    if not isinstance(parsed, T.StructType):
        raise ValueError(f"not a struct type: {text[:60]}")
    return parsed


def arrow_type(text: str) -> pa.DataType:
    """The Arrow type of a table file's type name, as pyspark's to_arrow_type makes it (UTC timestamps)."""
    return _parse(
        text,
        _ARROW,
        pa.list_,
        pa.map_,
        lambda fields: pa.struct([pa.field(name, kind) for name, kind in fields]),
    )


@dataclass(frozen=True)
class Column:
    name: str
    type: str  # Spark SQL type
    doc: str
    # How the docs name the type, where it is another table's row: "group_metadata row".
    shown: str | None = None


@dataclass(frozen=True)
class TableSchema:
    name: str
    about: str
    columns: tuple[Column, ...]

    def struct(self) -> StructType:
        from pyspark.sql.types import StructField, StructType

        return StructType([StructField(c.name, parse_type(c.type), True) for c in self.columns])

    def arrow_schema(self) -> pa.Schema:
        return pa.schema([pa.field(c.name, arrow_type(c.type)) for c in self.columns])

    def column_names(self) -> list[str]:
        return [c.name for c in self.columns]

    def without_coordinates(self) -> tuple[Column, ...]:
        coords = {c.name for c in coordinate_columns()}
        return tuple(c for c in self.columns if c.name not in coords)


@cache
def coordinate_columns() -> tuple[Column, ...]:
    raw = json.loads((schemas_dir() / "tables" / "coordinates.json").read_text())
    return tuple(Column(**c) for c in raw["columns"])


def _column(raw: dict) -> Column:
    """A column of a table file. `"rowOf": TABLE` (with `"many": true`, a list of them) holds rows of
    another table, in its columns: its type is built from that table's file, never written twice."""
    if "rowOf" not in raw:
        return Column(**raw)
    of = table_schema(raw["rowOf"])
    row = "struct<" + ",".join(f"{c.name}:{c.type}" for c in of.columns) + ">"
    many = raw.get("many", False)
    return Column(
        raw["name"],
        f"array<{row}>" if many else row,
        raw["doc"],
        f"array of `{of.name}` rows" if many else f"`{of.name}` row",
    )


@cache
def table_schema(name: str) -> TableSchema:
    raw = json.loads((schemas_dir() / "tables" / f"{name}.json").read_text())
    columns = tuple(_column(c) for c in raw["columns"])
    if raw.get("withCoordinates", True):
        columns = coordinate_columns() + columns
    return TableSchema(raw["name"], raw["about"], columns)
