"""Writes records in Kafka's wire format from the same layouts the decoder reads.

Used by the dump generator and by tests that need many records; the decoder's own correctness is
pinned by hand-written byte vectors, never only by round trips through this encoder.
"""

from __future__ import annotations

import struct
import uuid as uuidlib
from typing import Any, cast

from offset_audit.layouts.defaults import default_value
from offset_audit.layouts.field_spec import FieldSpec
from offset_audit.layouts.spec import RecordLayout, ValueLayout, protocol_layout

_FIXED = {
    "bool": ">b",
    "int8": ">b",
    "int16": ">h",
    "uint16": ">H",
    "int32": ">i",
    "int64": ">q",
    "float64": ">d",
}


def uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _length(n: int, flexible: bool, wide: bool) -> bytes:
    if flexible:
        return uvarint(n + 1)
    return struct.pack(">i" if wide else ">h", n)


def _encode_element(type_: str, value: Any, spec: FieldSpec, version: int, flexible: bool) -> bytes:
    if type_ in _FIXED:
        return struct.pack(_FIXED[type_], int(value))
    if type_ == "uuid":
        return uuidlib.UUID(value).bytes if value is not None else bytes(16)
    if type_ == "string":
        if value is None:
            return _length(-1, flexible, False)
        raw = value.encode("utf-8")
        return _length(len(raw), flexible, False) + raw
    if type_ == "bytes":
        if value is None:
            return _length(-1, flexible, True)
        return _length(len(value), flexible, True) + bytes(value)
    return encode_struct(spec.fields, version, flexible, value)


def _encode_field(spec: FieldSpec, value: Any, version: int, flexible: bool, tagged: bool) -> bytes:
    if spec.is_array:
        if value is None:
            return _length(-1, flexible, True)
        body = b"".join(_encode_element(spec.element_type, v, spec, version, flexible) for v in value)
        return _length(len(value), flexible, True) + body
    if spec.is_struct and version in spec.nullable:
        if value is None:
            return uvarint(0) if tagged else struct.pack(">b", -1)
        return (uvarint(1) if tagged else struct.pack(">b", 1)) + encode_struct(spec.fields, version, flexible, value)
    return _encode_element(spec.type, value, spec, version, flexible)


def encode_struct(
    fields: tuple[FieldSpec, ...],
    version: int,
    flexible: bool,
    values: dict[str, Any],
    extra_tags: list[tuple[int, bytes]] | None = None,
) -> bytes:
    """Encode `values` (missing fields take their default, `offset_audit.layouts.defaults`). `extra_tags`
    adds unknown tagged fields, which is how tests make records from a future Kafka."""
    out = bytearray()
    tags: list[tuple[int, bytes]] = list(extra_tags or [])
    for spec in fields:
        if version not in spec.versions:
            continue
        default = default_value(spec, version)
        value = values.get(spec.name, default)
        if version in spec.tagged:
            payload = _encode_field(spec, value, version, True, tagged=True)
            same_kind = (value is None) == (default is None)
            if same_kind and payload == _encode_field(spec, default, version, True, tagged=True):
                continue  # Kafka does not write a tagged field equal to its default.
            # A field tagged in a version has a tag in every layout (compile_struct refuses one without).
            tags.append((cast(int, spec.tag), payload))
            continue
        out += _encode_field(spec, value, version, flexible, tagged=False)
    if flexible:
        tags.sort()
        out += uvarint(len(tags))
        for tag, payload in tags:
            out += uvarint(tag) + uvarint(len(payload)) + payload
    return bytes(out)


def encode_key(layout: RecordLayout, values: dict[str, Any]) -> bytes:
    return struct.pack(">h", layout.record_type) + encode_struct(layout.key_fields, 0, False, values)


def encode_value(
    layout: RecordLayout,
    version: int,
    values: dict[str, Any],
    era: str | None = None,
    extra_tags: list[tuple[int, bytes]] | None = None,
) -> bytes:
    value_layout: ValueLayout = next(v for v in layout.values if version in v.valid and (era is None or v.era == era))
    return struct.pack(">h", version) + encode_struct(
        value_layout.fields, version, version in value_layout.flexible, values, extra_tags
    )


def encode_consumer_protocol(name: str, version: int, values: dict[str, Any]) -> bytes:
    layout = protocol_layout(name)
    return struct.pack(">h", version) + encode_struct(layout.fields, min(version, layout.valid.high), False, values)
