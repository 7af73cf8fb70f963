"""The output tables' schemas as data: one type name, the same column in Spark and in Arrow."""

from __future__ import annotations

import pyarrow as pa
import pytest
from pyspark.sql.pandas.types import to_arrow_schema
from repo_paths import ROOT

from offset_audit.layouts.tables import arrow_type, parse_struct, parse_type, table_schema

TABLES = sorted(p.stem for p in (ROOT / "schemas" / "tables").glob("*.json") if p.stem != "coordinates")


@pytest.mark.parametrize("name", TABLES)
def test_arrow_schema_is_what_pyspark_makes_of_the_spark_schema(name):
    """The read commands build Arrow types without pyspark; the writers go through Spark's types."""
    schema = table_schema(name)
    assert schema.arrow_schema() == to_arrow_schema(schema.struct(), timezone="UTC")


def test_nested_types_parse_alike_in_both_type_systems():
    text = "map<string,array<struct<a:int,b:map<string,bigint>>>>"
    from pyspark.sql.pandas.types import to_arrow_type

    assert arrow_type(text) == to_arrow_type(parse_type(text), timezone="UTC")
    assert arrow_type("struct<x:timestamp>") == pa.struct([("x", pa.timestamp("us", tz="UTC"))])


def test_a_struct_type_name_parses_to_its_struct_and_no_other_name_does():
    from pyspark.sql.types import BinaryType, StructField, StructType

    assert parse_struct("struct<result:binary>") == StructType([StructField("result", BinaryType())])
    with pytest.raises(ValueError, match="not a struct type: array<int>"):
        parse_struct("array<int>")


def test_an_unknown_type_name_is_refused_by_both():
    for parse in (arrow_type, parse_type):
        with pytest.raises(ValueError, match="unsupported column type 'decimal'"):
            parse("array<decimal>")
