"""Kafka's defaults by field type (offset_audit.layouts.defaults), the generator's refusals, and the
encoder leaving out a tagged field exactly when it equals its default."""

from __future__ import annotations

import pytest

from offset_audit.layouts.compiler import compile_struct
from offset_audit.layouts.defaults import ZERO_UUID, InvalidDefault, default_value
from offset_audit.layouts.encoder import encode_struct
from offset_audit.layouts.spec import _field
from offset_audit.layouts.wire import WireReader

# A struct's default holds its fields of the version at their own defaults (C is not in version 0).
STRUCT_FIELDS = [
    {"name": "A", "type": "int32", "versions": "0+", "default": 7},
    {"name": "B", "type": "[]string", "versions": "0+"},
    {"name": "C", "type": "string", "versions": "1+"},
]


def spec(**raw):
    return _field({"name": "F", "versions": "0+", **raw})


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ({"type": "int32"}, 0),
        ({"type": "int32", "default": -1}, -1),
        ({"type": "int32", "default": "-1"}, -1),
        ({"type": "int16", "default": "0x7fff"}, 0x7FFF),
        ({"type": "int64", "default": None}, 0),
        ({"type": "bool"}, False),
        ({"type": "bool", "default": "true"}, True),
        ({"type": "float64", "default": "1.5"}, 1.5),
        ({"type": "uuid"}, ZERO_UUID),
        ({"type": "uuid", "default": "CgsMDQ4PEBESExQVFhcYGQ"}, "0a0b0c0d-0e0f-1011-1213-141516171819"),
        ({"type": "string"}, ""),
        ({"type": "string", "default": "abc"}, "abc"),
        ({"type": "string", "nullableVersions": "0+", "default": None}, ""),
        ({"type": "string", "nullableVersions": "0+", "default": "null"}, None),
        ({"type": "bytes"}, b""),
        ({"type": "[]int32", "nullableVersions": "0+", "default": None}, []),
        ({"type": "[]int32", "nullableVersions": "0+", "default": "null"}, None),
        ({"type": "S", "nullableVersions": "0+", "fields": STRUCT_FIELDS}, {"A": 7, "B": []}),
    ],
)
def test_a_default_is_the_generators(raw, expected):
    assert default_value(spec(**raw), 0) == expected


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        ({"type": "int32", "default": "null"}, "invalid default"),
        ({"type": "[]int32", "nullableVersions": "1+", "default": "null"}, "not all versions"),
        ({"type": "string", "default": "null"}, "not all versions"),
        ({"type": "[]int32", "default": "x"}, "empty and null"),
        ({"type": "bytes", "default": "AA=="}, "empty and null"),
        ({"type": "int8", "default": 128}, "out of range"),
        ({"type": "int32", "default": "ten"}, "invalid default"),
        ({"type": "uuid", "default": "short"}, "invalid default"),
        ({"type": "bool", "default": "yes"}, "invalid default"),
    ],
)
def test_a_default_the_generator_refuses_is_refused_when_the_layout_loads(raw, why):
    with pytest.raises(InvalidDefault, match=why):
        spec(**raw)


def test_each_record_owns_its_default_list():
    fields = (spec(type="[]int32", nullableVersions="0+", taggedVersions="0+", tag=0),)
    read = compile_struct(fields, 0, True)
    first, second = read(WireReader(b"\x00", 0, "test")), read(WireReader(b"\x00", 0, "test"))
    first["F"].append(1)
    assert second["F"] == []


@pytest.mark.parametrize(
    ("value", "written"),
    [
        ([], b"\x00"),  # equal to the default: left out
        (None, b"\x01\x00\x01\x00"),  # the null marker is not the default
        ([5], b"\x01\x00\x05\x02\x00\x00\x00\x05"),
    ],
)
def test_a_tagged_list_is_written_only_when_it_is_not_its_default(value, written):
    fields = (spec(type="[]int32", nullableVersions="0+", taggedVersions="0+", tag=0),)
    assert encode_struct(fields, 0, True, {"F": value}) == written
    assert compile_struct(fields, 0, True)(WireReader(written, 0, "test")) == {"F": value}


def test_a_tagged_struct_equal_to_its_default_struct_is_left_out():
    fields = (
        spec(type="S", nullableVersions="0+", taggedVersions="0+", tag=0,
             fields=[{"name": "A", "type": "int32", "versions": "0+"}]),
    )  # fmt: skip
    assert encode_struct(fields, 0, True, {"F": {"A": 0}}) == b"\x00"
    assert encode_struct(fields, 0, True, {"F": None}) == b"\x01\x00\x01\x00"
    assert encode_struct(fields, 0, True, {"F": {"A": 1}}) == b"\x01\x00\x06\x01\x00\x00\x00\x01\x00"
