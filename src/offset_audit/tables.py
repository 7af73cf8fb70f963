"""Output table schemas, read from `schemas/tables/*.json` so that code, docs and tests share one list."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache

from pyspark.sql.types import DataType, StructField, StructType, TimestampType, _parse_datatype_string

from offset_audit.layouts.spec import schemas_dir


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
        return StructType([StructField(c.name, _parse_datatype_string(c.type), True) for c in self.columns])

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


def as_epoch_millis(data_type: DataType) -> DataType:
    """The decode stage carries timestamps as epoch milliseconds (Kafka's own unit, -1 included) and the
    Spark stage turns them into TIMESTAMP; this maps a table type to the decode-stage type."""
    from pyspark.sql.types import LongType

    return LongType() if isinstance(data_type, TimestampType) else data_type
