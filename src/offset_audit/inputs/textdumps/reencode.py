"""Record bytes rebuilt from what a text dump shows.

The text readers hand the rest of the pipeline the same key and value bytes Kafka stored, so that a
text dump goes through exactly the decoder, replay and rules a segment or a Kafka topic goes through.
Those bytes are written with the project's own encoder and layouts (`layouts/encoder.py`,
`schemas/records/`), never with a second description of the formats; the one exception is a fast
path for offset commits (nearly every line of a dump), which `tests/inputs/test_dump_log.py` pins against
both the generic encoder and bytes written out by hand.

Kafka's JSON converters name fields after the schema in lower camel case (`GroupId` -> `groupId`),
write uuids as url-safe base64 without padding (`Uuid.toString`), bytes as standard base64, tagged
fields only when they differ from their default and every other field of the version always
(generator/.../JsonConverterGenerator.java). `fields_from_json` inverts exactly that.
"""

from __future__ import annotations

import base64
import binascii
import struct
import uuid
from collections.abc import Callable
from functools import cache, lru_cache
from typing import Any

from offset_audit import constants as K
from offset_audit.layouts.defaults import INT_RANGES, ZERO_UUID
from offset_audit.layouts.encoder import encode_consumer_protocol, encode_key, encode_struct, uvarint
from offset_audit.layouts.spec import FieldSpec, RecordLayout, ValueLayout, protocol_layout, record_layouts

# ControlRecordType ids of the transaction markers (clients/.../ControlRecordType.java).
CONTROL_ABORT = 0
CONTROL_COMMIT = 1
CONTROL_TYPES = {"ABORT": CONTROL_ABORT, "COMMIT": CONTROL_COMMIT}

# The versions the offset-commit fast path writes (OffsetCommitValue, reference 2.3).
OFFSET_COMMIT_VERSIONS = range(0, 5)


NOTE_DROPPED_FIELDS = "fields this project's layouts do not know were printed and dropped"
"""A JSON dump printed a field no layout of ours holds (a newer Kafka); the rebuilt bytes lack it."""


class ReencodeError(ValueError):
    """What the text says does not fit any layout; the message becomes the row's source_error."""


def json_number(value: Any, what: str) -> int:
    """A record type or version: kafka-dump-log 3.8+ prints them as JSON strings, the console
    formatters as numbers."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lstrip("-").isdigit():
        return int(value)
    raise ReencodeError(f"{what} {value!r} is not a number")


# Offset commits: the fast path --------------------------------------------------------------------


def _short_string(text: str, what: str) -> bytes:
    raw = text.encode("utf-8")
    if len(raw) > 0x7FFF:
        raise ReencodeError(f"{what} is {len(raw)} bytes, longer than an int16 length allows")
    return struct.pack(">h", len(raw)) + raw


@lru_cache(maxsize=1 << 16)
def offset_commit_key(group: str, topic: str, partition: int, record_type: int = K.OFFSET_COMMIT) -> bytes:
    """OffsetCommitKey (type 0 or 1): int16 type, then group, topic and partition, never flexible.

    Cached: a dump repeats the same few thousand keys (one per group and partition) over and over."""
    try:
        return (
            struct.pack(">h", record_type)
            + _short_string(group, "group")
            + _short_string(topic, "topic")
            + struct.pack(">i", partition)
        )
    except struct.error as err:
        raise ReencodeError(f"offset commit key field out of range: {err}") from err


def group_metadata_key(group: str) -> bytes:
    return struct.pack(">h", K.GROUP_METADATA) + _short_string(group, "group")


def offset_commit_value(
    version: int,
    offset: int,
    metadata: str,
    commit_timestamp: int,
    leader_epoch: int = -1,
    expire_timestamp: int = -1,
    topic_id: str | None = None,
) -> bytes:
    """OffsetCommitValue v0-v4 (reference 2.3) without walking the layout: this runs once per commit.

    Fields a version does not hold are dropped, as Kafka's serializer drops them.
    """
    try:
        if version in (0, 2):
            return (
                struct.pack(">hq", version, offset)
                + _short_string(metadata, "metadata")
                + struct.pack(">q", commit_timestamp)
            )
        if version == 1:
            return (
                struct.pack(">hq", 1, offset)
                + _short_string(metadata, "metadata")
                + struct.pack(">qq", commit_timestamp, expire_timestamp)
            )
        if version == 3:
            return (
                struct.pack(">hqi", 3, offset, leader_epoch)
                + _short_string(metadata, "metadata")
                + struct.pack(">q", commit_timestamp)
            )
        if version == 4:
            raw = metadata.encode("utf-8")
            body = struct.pack(">hqi", 4, offset, leader_epoch) + uvarint(len(raw) + 1) + raw
            body += struct.pack(">q", commit_timestamp)
            if topic_id is None or topic_id == ZERO_UUID:
                return body + b"\x00"  # no tagged fields: a ZERO_UUID topicId is not written
            return body + b"\x01\x00\x10" + uuid.UUID(topic_id).bytes  # one tag: 0, 16 bytes
    except struct.error as err:
        raise ReencodeError(f"offset commit field out of range: {err}") from err
    raise ReencodeError(f"unknown OffsetCommitValue version {version}")


# Control records ----------------------------------------------------------------------------------


def control_record_key(control_type_id: int) -> bytes:
    """ControlRecordType key: int16 version 0, int16 type."""
    return struct.pack(">hh", 0, control_type_id)


def end_txn_marker_value(coordinator_epoch: int) -> bytes:
    """EndTransactionMarker value: int16 version 0, int32 coordinatorEpoch."""
    return struct.pack(">hi", 0, coordinator_epoch)


# Any record from Kafka's JSON ---------------------------------------------------------------------


def json_name(spec: FieldSpec) -> str:
    """FieldSpec.camelCaseName in Kafka's generator: the schema name with its first letter lowered."""
    return spec.name[:1].lower() + spec.name[1:]


def _uuid_from_json(text: str) -> str:
    if len(text) == 36 and text.count("-") == 4:
        return str(uuid.UUID(text))
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError) as err:
        raise ReencodeError(f"uuid {text!r} is not Kafka's base64 form") from err
    if len(raw) != 16:
        raise ReencodeError(f"uuid {text!r} decodes to {len(raw)} bytes, not 16")
    return str(uuid.UUID(bytes=raw))


# A reader per (struct, version), built once from the layout: decoding a record's JSON is then a walk
# over prepared closures, not a re-reading of the field specs for every line of a dump.
FieldReader = Callable[[Any, str, str, "list[str] | None"], Any]
StructReader = Callable[[Any, str, "list[str] | None"], dict[str, Any]]
_STRUCT_READERS: dict[tuple[int, int], tuple[tuple[FieldSpec, ...], StructReader]] = {}


def _primitive_reader(type_: str) -> Callable[[Any, str], Any]:
    """Checks one JSON scalar against a Kafka type and returns the encoder's value; `where` names it in
    errors."""
    if type_ in INT_RANGES:
        low, high = INT_RANGES[type_]

        def read_int(value: Any, where: str) -> int:
            # type() and not isinstance(): JSON true must not pass as the integer 1.
            if type(value) is not int or not low <= value <= high:
                raise ReencodeError(f"{where}: expected an {type_}, found {value!r}")
            return value

        return read_int
    if type_ == "bool":

        def read_bool(value: Any, where: str) -> bool:
            if type(value) is not bool:
                raise ReencodeError(f"{where}: expected true or false, found {value!r}")
            return value

        return read_bool
    if type_ == "float64":

        def read_float(value: Any, where: str) -> float:
            if type(value) not in (int, float):
                raise ReencodeError(f"{where}: expected a number, found {value!r}")
            return float(value)

        return read_float
    if type_ == "string":

        def read_string(value: Any, where: str) -> str:
            if type(value) is not str:
                raise ReencodeError(f"{where}: expected a string, found {value!r}")
            return value

        return read_string
    if type_ == "bytes":

        def read_bytes(value: Any, where: str) -> bytes:
            if type(value) is bytes:  # already rebuilt, e.g. a decoded consumer protocol blob
                return value
            if type(value) is not str:
                raise ReencodeError(f"{where}: expected base64 bytes, found {value!r}")
            try:
                return base64.b64decode(value, validate=True)
            except (binascii.Error, ValueError) as err:
                raise ReencodeError(f"{where}: {value[:40]!r} is not base64") from err

        return read_bytes
    if type_ == "uuid":

        def read_uuid(value: Any, where: str) -> str:
            if type(value) is not str:
                raise ReencodeError(f"{where}: expected a uuid string, found {value!r}")
            return _uuid_from_json(value)

        return read_uuid
    raise ValueError(f"no JSON reading for type {type_}")


def _field_reader(spec: FieldSpec, version: int) -> FieldReader:
    nullable = version in spec.nullable
    is_array = spec.is_array
    if spec.is_struct:
        struct_reader = _struct_reader(spec.fields, version)

        def element(value: Any, where: str, unknown: list[str] | None) -> Any:
            return struct_reader(value, where, unknown)

    else:
        primitive = _primitive_reader(spec.element_type)

        def element(value: Any, where: str, unknown: list[str] | None) -> Any:
            return primitive(value, where)

    def read_field(value: Any, where: str, name: str, unknown: list[str] | None) -> Any:
        if value is None:
            if not nullable:
                raise ReencodeError(f"{where}.{name}: null in a non-nullable field")
            return None
        if not is_array:
            return element(value, f"{where}.{name}", unknown)
        if type(value) is not list:
            raise ReencodeError(f"{where}.{name}: expected an array, found {str(value)[:60]!r}")
        return [element(item, f"{where}.{name}[]", unknown) for item in value]

    return read_field


def _struct_reader(fields: tuple[FieldSpec, ...], version: int) -> StructReader:
    cached = _STRUCT_READERS.get((id(fields), version))
    if cached is not None and cached[0] is fields:
        return cached[1]
    entries = [
        (spec.name, json_name(spec), version in spec.tagged, _field_reader(spec, version))
        for spec in fields
        if version in spec.versions
    ]
    known = frozenset(json for _, json, _, _ in entries)

    def read_struct(obj: Any, where: str, unknown: list[str] | None) -> dict[str, Any]:
        if type(obj) is not dict:
            raise ReencodeError(f"{where}: expected an object, found {str(obj)[:60]!r}")
        values: dict[str, Any] = {}
        for name, json_key, tagged, read in entries:
            if json_key in obj:
                values[name] = read(obj[json_key], where, json_key, unknown)
            elif not tagged:
                raise ReencodeError(f"{where}: field '{json_key}' of version {version} is missing")
        if len(obj) > len(values) and not known.issuperset(obj):
            extra = sorted(name for name in obj if name not in known)
            if unknown is None:
                raise ReencodeError(f"{where}: fields {extra} are not in version {version}")
            unknown.extend(f"{where}.{name}" for name in extra)
        return values

    _STRUCT_READERS[(id(fields), version)] = (fields, read_struct)
    return read_struct


def fields_from_json(
    fields: tuple[FieldSpec, ...], version: int, obj: Any, where: str = "data", unknown: list[str] | None = None
) -> dict[str, Any]:
    """A struct as Kafka's JsonConverter writes it, back to the encoder's field values.

    Every non-tagged field of the version must be there (the converter always writes them); a tagged
    field that is absent takes its default. Names no field of the version has are listed in `unknown`
    when a list is given (they cannot be encoded, so the caller decides what that means), else they
    are an error.
    """
    return _struct_reader(fields, version)(obj, where, unknown)


def _layout(record_type: int) -> RecordLayout:
    layout = record_layouts().get(record_type)
    if layout is None:
        raise ReencodeError(f"record type {record_type} has no layout")
    return layout


# Offset commits from JSON, the fast path: plain dict look-ups for the one shape nearly every line of a
# JSON dump has. Anything unexpected returns None and goes through the generic readers above, which
# also give the precise error.


@cache
def _commit_json_fields(record_type: int, version: int) -> tuple[frozenset[str], frozenset[str]]:
    """(every field name, the non-tagged ones) of an OffsetCommitValue version, from the layout."""
    specs = [spec for spec in _layout(record_type).values[0].fields if version in spec.versions]
    return (
        frozenset(json_name(spec) for spec in specs),
        frozenset(json_name(spec) for spec in specs if version not in spec.tagged),
    )


def _commit_key_fast(record_type: int, data: Any) -> bytes | None:
    if type(data) is not dict or len(data) != 3:
        return None
    group, topic, partition = data.get("group"), data.get("topic"), data.get("partition")
    if type(group) is not str or type(topic) is not str or type(partition) is not int:
        return None
    try:
        return offset_commit_key(group, topic, partition, record_type)
    except ReencodeError:
        return None


def _commit_value_fast(record_type: int, version: int, data: Any) -> bytes | None:
    if type(data) is not dict:
        return None
    every, required = _commit_json_fields(record_type, version)
    if not every.issuperset(data) or not required.issubset(data):
        return None
    offset, metadata, commit = data["offset"], data["metadata"], data["commitTimestamp"]
    epoch, expire = data.get("leaderEpoch", -1), data.get("expireTimestamp", -1)
    topic_id = data.get("topicId")
    if type(offset) is not int or type(metadata) is not str or type(commit) is not int:
        return None
    if type(epoch) is not int or type(expire) is not int or not (topic_id is None or type(topic_id) is str):
        return None
    try:
        topic_uuid = _uuid_from_json(topic_id) if topic_id is not None else None
        return offset_commit_value(version, offset, metadata, commit, epoch, expire, topic_uuid)
    except ReencodeError:
        return None


def key_from_json(record_type: int, data: Any) -> bytes:
    """A key's `data` object back to bytes; keys are one fixed, non-flexible struct per type."""
    if record_type in K.OFFSET_COMMIT_TYPES:
        fast = _commit_key_fast(record_type, data)
        if fast is not None:
            return fast
    layout = _layout(record_type)
    fields = fields_from_json(layout.key_fields, 0, data, "key")
    if record_type in K.OFFSET_COMMIT_TYPES:
        return offset_commit_key(fields["group"], fields["topic"], fields["partition"], record_type)
    try:
        return encode_key(layout, fields)
    except (struct.error, ValueError, TypeError) as err:
        raise ReencodeError(f"cannot encode key of {layout.name}: {err}") from err


def value_from_json(record_type: int, version: int, data: Any) -> tuple[bytes, list[str]]:
    """A value's `data` object back to bytes, at the version the text gives.

    Where Kafka changed a layout without a new version number (layout eras), the era whose fields the
    object has is the one the tool that printed it knew. Returns the bytes and the names of fields no
    layout of ours holds (dropped from the bytes; the caller notes them).
    """
    if record_type in K.OFFSET_COMMIT_TYPES and version in OFFSET_COMMIT_VERSIONS:
        fast = _commit_value_fast(record_type, version, data)
        if fast is not None:
            return fast, []
    layout = _layout(record_type)
    if record_type in K.OFFSET_COMMIT_TYPES and version in OFFSET_COMMIT_VERSIONS:
        unknown: list[str] = []
        fields = fields_from_json(layout.values[0].fields, version, data, "value", unknown)
        value = offset_commit_value(
            version,
            fields["offset"],
            fields["metadata"],
            fields["commitTimestamp"],
            fields.get("leaderEpoch", -1),
            fields.get("expireTimestamp", -1),
            fields.get("topicId"),
        )
        return value, unknown
    candidates = [v for v in layout.values if version in v.valid]
    if not candidates:
        known = ", ".join(f"{v.valid.low}-{v.valid.high}" for v in layout.values)
        raise ReencodeError(f"{layout.name} has no value version {version} (known: {known})")
    failures: list[str] = []
    loose: tuple[ValueLayout, dict[str, Any], list[str]] | None = None
    for candidate in candidates:
        unknown = []
        try:
            fields = fields_from_json(candidate.fields, version, data, "value", unknown)
        except ReencodeError as err:
            failures.append(f"{candidate.era}: {err}" if len(candidates) > 1 else str(err))
            continue
        if not unknown:
            return _encode_value(candidate, version, fields), []
        if loose is None:
            loose = (candidate, fields, unknown)
    if loose is not None:
        candidate, fields, unknown = loose
        return _encode_value(candidate, version, fields), unknown
    raise ReencodeError(f"{layout.name} v{version}: {'; '.join(failures)}")


def _encode_value(layout: ValueLayout, version: int, fields: dict[str, Any]) -> bytes:
    try:
        return struct.pack(">h", version) + encode_struct(layout.fields, version, version in layout.flexible, fields)
    except (struct.error, ValueError, TypeError) as err:
        raise ReencodeError(f"cannot encode value v{version}: {err}") from err


def encode_value_fields(record_type: int, version: int, fields: dict[str, Any]) -> bytes:
    """A value from field values already in the layout's names (the text parsers' own rebuilds)."""
    candidates = [v for v in _layout(record_type).values if version in v.valid]
    if not candidates:
        raise ReencodeError(f"record type {record_type} has no value version {version}")
    return _encode_value(candidates[0], version, fields)


# The consumer protocol blobs (reference 3) --------------------------------------------------------

SUBSCRIPTION = "consumer_protocol_subscription"
ASSIGNMENT = "consumer_protocol_assignment"


def _protocol_fields_by_version(name: str) -> list[tuple[int, frozenset[str]]]:
    layout = protocol_layout(name)
    return [
        (version, frozenset(json_name(spec) for spec in layout.fields if version in spec.versions))
        for version in range(layout.valid.low, layout.valid.high + 1)
    ]


def consumer_protocol_from_json(name: str, obj: dict[str, Any]) -> tuple[bytes, int]:
    """A decoded subscription or assignment (as kafka-dump-log 3.8+ prints it) back to its blob.

    The tool prints the struct but not its int16 version. Each version adds fields, and the converter
    writes every field of its version, so the lowest version with exactly the printed fields is the
    one the client wrote (the assignment has the same fields in every version: v0 is chosen).
    """
    names = frozenset(obj)
    for version, fields in _protocol_fields_by_version(name):
        if names == fields:
            values = fields_from_json(protocol_layout(name).fields, version, obj, name)
            return encode_consumer_protocol(name, version, values), version
    raise ReencodeError(f"{name}: fields {sorted(names)} match no version")


def assignment_blob(assigned: list[tuple[str, int]], user_data: bytes | None) -> bytes:
    """ConsumerProtocolAssignment v0 from (topic, partition) pairs, grouped by topic in order of first
    appearance, as ConsumerProtocol.serializeAssignment groups them."""
    by_topic: dict[str, list[int]] = {}
    for topic, partition in assigned:
        by_topic.setdefault(topic, []).append(partition)
    return encode_consumer_protocol(
        ASSIGNMENT,
        0,
        {"AssignedPartitions": [{"Topic": t, "Partitions": p} for t, p in by_topic.items()], "UserData": user_data},
    )


def rebuild_consumer_protocol(data: Any) -> bool:
    """Turn a consumer group's decoded subscription/assignment objects (kafka-dump-log 3.8+ prints them
    so) back into their blobs, in place; base64 strings are the bytes already and stay. True if any
    blob was rebuilt."""
    if not isinstance(data, dict) or data.get("protocolType") != K.CONSUMER_PROTOCOL_TYPE:
        return False
    rebuilt = False
    for member in data.get("members") or []:
        for field, name in (("subscription", SUBSCRIPTION), ("assignment", ASSIGNMENT)):
            if isinstance(member, dict) and isinstance(member.get(field), dict):
                member[field], _ = consumer_protocol_from_json(name, member[field])
                rebuilt = True
    return rebuilt
