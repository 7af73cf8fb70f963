"""The value a field holds when the bytes do not carry it, as Kafka's message generator defines it.

A layout's `default` is read the way Kafka's generator reads the `default` of its message JSON
(generator/.../FieldSpec.java, `fieldDefault`): the text "null" means null and is allowed only where
every version of the field is nullable; no default (or a JSON null) means the zero of the type, which
for an array is the empty list, for a struct the struct with every field at its own default, for a
string the empty string and for a uuid the zero uuid. So a tagged array whose JSON says `"default":
null` reads as [] when its tag is absent; only a tag that carries the null marker reads as null.

The defaults matter twice: an absent tagged field takes its default when decoding, and the encoder
leaves out a tagged field equal to its default, as Kafka's writers do.
"""

from __future__ import annotations

import base64
import binascii
import uuid
from typing import Any

from offset_audit.layouts.field_spec import FieldSpec

ZERO_UUID = "00000000-0000-0000-0000-000000000000"

# Kafka's integer types and the values each holds (the generator's and the JSON converters' range checks).
INT_RANGES = {
    "int8": (-(1 << 7), (1 << 7) - 1),
    "int16": (-(1 << 15), (1 << 15) - 1),
    "uint16": (0, (1 << 16) - 1),
    "int32": (-(1 << 31), (1 << 31) - 1),
    "int64": (-(1 << 63), (1 << 63) - 1),
}


class InvalidDefault(ValueError):
    """A layout's default that Kafka's generator would refuse."""


def _int(spec: FieldSpec, text: str) -> int:
    if not text:
        return 0
    digits, base = (text[2:], 16) if text.startswith("0x") else (text, 10)
    try:
        value = int(digits, base)
    except ValueError:
        raise InvalidDefault(f"invalid default for {spec.type} field {spec.name}: {text!r}") from None
    low, high = INT_RANGES[spec.type]
    if not low <= value <= high:
        raise InvalidDefault(f"invalid default for {spec.type} field {spec.name}: {text!r} is out of range")
    return value


def _uuid(spec: FieldSpec, text: str) -> str:
    if not text:
        return ZERO_UUID
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        raw = b""
    if len(raw) != 16:
        raise InvalidDefault(f"invalid default for uuid field {spec.name}: {text!r}")
    return str(uuid.UUID(bytes=raw))


def check(spec: FieldSpec) -> None:
    """Refuse what the generator refuses: a null default on a field not nullable in all its versions, and
    a literal default on a type that takes none (bytes, arrays, structs) or does not parse."""
    if spec.default == "null":
        if spec.is_array or spec.is_struct or spec.type in ("string", "bytes"):
            if not spec.nullable.covers(spec.versions):
                raise InvalidDefault(
                    f"null cannot be the default for field {spec.name}, because not all versions of it are nullable"
                )
            return
        raise InvalidDefault(f"invalid default for {spec.type} field {spec.name}: null")
    if spec.is_array or spec.is_struct or spec.type == "bytes":
        if spec.default:
            raise InvalidDefault(f"the only defaults of {spec.type} field {spec.name} are empty and null")
        return
    default_value(spec, spec.versions.low)


def default_value(spec: FieldSpec, version: int) -> Any:
    """The field's default in `version`, as the value the decoder gives (a fresh list or dict each call:
    callers may keep it in a decoded record)."""
    text = spec.default
    if text == "null":
        return None
    if spec.is_array:
        return []
    if spec.is_struct:
        return {f.name: default_value(f, version) for f in spec.fields if version in f.versions}
    if spec.type in INT_RANGES:
        return _int(spec, text)
    if spec.type == "bool":
        if text.lower() not in ("", "true", "false"):
            raise InvalidDefault(f"invalid default for bool field {spec.name}: {text!r}")
        return text.lower() == "true"
    if spec.type == "float64":
        try:
            return float(text) if text else 0.0
        except ValueError:
            raise InvalidDefault(f"invalid default for float64 field {spec.name}: {text!r}") from None
    if spec.type == "uuid":
        return _uuid(spec, text)
    if spec.type == "string":
        return text
    if spec.type == "bytes":
        return b""
    raise InvalidDefault(f"field {spec.name} has a type without a default: {spec.type}")


def is_mutable(value: Any) -> bool:
    return isinstance(value, list | dict)


def fresh(value: Any) -> Any:
    """A copy a decoded record can own, where the default is a list or a dict (a default holds nothing
    else that could change: numbers, strings, None, bytes)."""
    if type(value) is list:
        return [fresh(item) for item in value] if value else []
    if type(value) is dict:
        return {name: fresh(item) for name, item in value.items()}
    return value
