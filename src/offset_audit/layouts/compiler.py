"""Turns field specs into reader functions for one version, once, so decoding a record is a walk over
pre-built closures rather than a re-interpretation of the JSON for every record.

Encoding rules mirrored from Kafka's message generator (reference 1.2): compact lengths in flexible
versions, a tagged-field section at the end of every struct in flexible versions, nullable structs
prefixed by an int8 (-1 = null) or, when tagged, by a varint (0 = null).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from offset_audit.layouts.defaults import default_value, fresh, is_mutable
from offset_audit.layouts.field_spec import FieldSpec
from offset_audit.layouts.wire import DecodeError, WireReader

FieldReader = Callable[[WireReader], Any]

# Smallest encoded size of one array element: used to reject impossible element counts early.
_MIN_SIZE = {"bool": 1, "int8": 1, "int16": 2, "uint16": 2, "int32": 4, "int64": 8, "float64": 8, "uuid": 16}

_PRIMITIVE_READERS: dict[str, Callable[[WireReader, str], Any]] = {
    "bool": WireReader.boolean,
    "int8": WireReader.int8,
    "int16": WireReader.int16,
    "uint16": WireReader.uint16,
    "int32": WireReader.int32,
    "int64": WireReader.int64,
    "float64": WireReader.float64,
    "uuid": WireReader.uuid,
}


def _element_reader(spec: FieldSpec, version: int, flexible: bool) -> FieldReader:
    element = spec.element_type
    name = spec.name
    if element in _PRIMITIVE_READERS:
        read = _PRIMITIVE_READERS[element]
        return lambda r: read(r, name)
    if element == "string":
        return lambda r: r.string(flexible, False, name)
    if element == "bytes":
        return lambda r: r.bytes_(flexible, False, name)
    return compile_struct(spec.fields, version, flexible)


def _field_reader(spec: FieldSpec, version: int, flexible: bool, tagged: bool) -> FieldReader:
    name = spec.name
    nullable = version in spec.nullable
    if spec.is_array:
        element = _element_reader(spec, version, flexible)
        min_size = _MIN_SIZE.get(spec.element_type, 1)

        def read_array(r: WireReader) -> list[Any] | None:
            n = r.array_length(flexible, nullable, name, min_size)
            if n < 0:
                return None
            return [element(r) for _ in range(n)]

        return read_array
    if spec.type == "string":
        return lambda r: r.string(flexible, nullable, name)
    if spec.type == "bytes":
        return lambda r: r.bytes_(flexible, nullable, name)
    if spec.type in _PRIMITIVE_READERS:
        read = _PRIMITIVE_READERS[spec.type]
        return lambda r: read(r, name)
    struct = compile_struct(spec.fields, version, flexible)
    if not nullable:
        return struct
    if tagged:
        return lambda r: None if r.uvarint(name) <= 0 else struct(r)
    return lambda r: None if r.int8(name) < 0 else struct(r)


def compile_struct(fields: tuple[FieldSpec, ...], version: int, flexible: bool) -> Callable[[WireReader], dict]:
    """A reader that returns the struct as a dict of the fields present in `version`.

    Tagged fields that are absent take their default, as Kafka's generated readers do: a tagged field
    equal to its default is simply not written. The default is Kafka's (`offset_audit.layouts.defaults`):
    an absent tagged array is [], and only a tag carrying the null marker is null.
    """
    plain: list[tuple[str, FieldReader]] = []
    tagged: dict[int, tuple[str, FieldReader]] = {}
    tag_defaults: dict[str, Any] = {}  # in the layout's order, which decoded_json keeps
    tags_of_other_versions: set[int] = set()
    for spec in fields:
        if version not in spec.versions:
            if spec.tag is not None:
                tags_of_other_versions.add(spec.tag)
            continue
        if version in spec.tagged:
            if not flexible or spec.tag is None:
                raise ValueError(f"field {spec.name} is tagged in a non-flexible version {version}")
            tagged[spec.tag] = (spec.name, _field_reader(spec, version, True, tagged=True))
            tag_defaults[spec.name] = default_value(spec, version)
        else:
            plain.append((spec.name, _field_reader(spec, version, flexible, tagged=False)))

    # Lists and dicts: each record gets its own copy, as each Kafka message gets its own.
    mutable = any(is_mutable(default) for default in tag_defaults.values())

    if not flexible:

        def read_plain(r: WireReader) -> dict:
            return {name: read(r) for name, read in plain}

        return read_plain

    def read_flexible(r: WireReader) -> dict:
        out = {name: read(r) for name, read in plain}
        if mutable:
            out.update((name, fresh(default)) for name, default in tag_defaults.items())
        else:
            out.update(tag_defaults)
        count = r.uvarint("tagged field count")
        for _ in range(count):
            tag = r.uvarint("tag")
            size = r.uvarint(f"size of tag {tag}")
            known = tagged.get(tag)
            if known is None:
                if tag in tags_of_other_versions:
                    # Kafka's generated reader throws "Tag N is not valid for version V".
                    raise DecodeError(f"corrupt {r.what}: tag {tag} is not valid for version {version}")
                payload = r.raw(size, f"unknown tagged field {tag}")
                out.setdefault("_unknownTaggedFields", []).append({"tag": tag, "data": payload.hex()})
                continue
            name, read = known
            sub = WireReader(r.raw(size, f"tagged field '{name}'"), 0, r.what)
            out[name] = read(sub)
            if sub.remaining:
                raise DecodeError(
                    f"corrupt {r.what}: tagged field '{name}' declares {size} bytes but its value "
                    f"uses {size - sub.remaining}"
                )
        return out

    return read_flexible
