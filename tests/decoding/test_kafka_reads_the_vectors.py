"""Every hand-written record vector read by the newest broker of the matrix with its own generated classes
(RecordOracle.java), field for field against our generic decoder: an absent tag's default, a null marker,
a uuid or a byte string that reads differently from Kafka shows here.

Only values of each layout's newest era are compared (older eras, such as 3.7's early-access layouts, are
what the newest broker no longer reads), and only the fields of the value's version: Kafka's object also
holds the other versions' fields, at their defaults, which its readers never show."""

from __future__ import annotations

import base64
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest
from kafka_broker import SHORT_LIVED, compile_against, java, kafka_versions, libs, version_tuple
from live_services import Unavailable
from vector_files import Vector, all_vectors, load

from offset_audit.decoding import records
from offset_audit.layouts.codec import RecordCodec
from offset_audit.layouts.field_spec import FieldSpec
from offset_audit.layouts.spec import record_layouts, share_state_layouts
from offset_audit.layouts.wire import DecodeError

NEWEST = max(kafka_versions(), key=version_tuple)
RECORDS = RecordCodec()
SHARE_STATE = RecordCodec(share_state_layouts())
# Our type-0 layout reads every OffsetCommitValue version, as brokers before 4.1 did (schemas/records/00);
# the newest broker's LegacyOffsetCommitValue reads v0 only.
UNSUPPORTED_ALLOWED = {(0, version) for version in range(1, 5)}
# ShareGroupPartitionMetadata: Kafka 4.0's share groups wrote it, later brokers have no class for it.
REMOVED = {9}


def _lower_first(name: str) -> str:
    return name[:1].lower() + name[1:]


def _kafka_uuid(text: str) -> str:
    return base64.urlsafe_b64encode(uuid.UUID(text).bytes).decode().rstrip("=")


def _as_kafka(value: Any, spec: FieldSpec) -> Any:
    """One of our decoded values as RecordOracle prints Kafka's."""
    if value is None:
        return None
    if spec.is_array:
        return [_element(item, spec) for item in value]
    return _element(value, spec)


def _element(value: Any, spec: FieldSpec) -> Any:
    if spec.is_struct:
        return _struct(value, spec.fields)
    if spec.element_type == "uuid":
        return _kafka_uuid(value)
    if spec.element_type == "bytes":
        return base64.b64encode(value).decode()
    return value


def _struct(fields: dict[str, Any], specs: tuple[FieldSpec, ...]) -> dict[str, Any]:
    by_name = {spec.name: spec for spec in specs}
    return {_lower_first(name): _as_kafka(value, by_name[name]) for name, value in fields.items() if name in by_name}


def _restricted(theirs: Any, ours: Any, where: str) -> Any:
    """Kafka's object cut to the fields our decoding of the version has (recursively)."""
    if isinstance(ours, dict) and isinstance(theirs, dict):
        missing = sorted(set(ours) - set(theirs))
        assert not missing, f"{where}: Kafka's class has no field {missing}"
        return {name: _restricted(theirs[name], ours[name], f"{where}.{name}") for name in ours}
    if isinstance(ours, list) and isinstance(theirs, list) and len(ours) == len(theirs):
        return [_restricted(t, o, f"{where}[{i}]") for i, (t, o) in enumerate(zip(theirs, ours, strict=True))]
    return theirs


def _differences(kafka: Any, ours: Any, where: str) -> list[str]:
    """Where Kafka's view and ours part, each value cut short (a metadata string can be 16 KB)."""
    if isinstance(kafka, dict) and isinstance(ours, dict):
        return [d for name in ours for d in _differences(kafka[name], ours[name], f"{where}.{name}")]
    if isinstance(kafka, list) and isinstance(ours, list) and len(kafka) == len(ours):
        pairs = enumerate(zip(kafka, ours, strict=True))
        return [d for i, (k, o) in pairs for d in _differences(k, o, f"{where}[{i}]")]
    if kafka == ours:
        return []
    return [f"{where or 'value'}: Kafka {NEWEST} {repr(kafka)[:80]}, ours {repr(ours)[:80]}"]


def _compared(vector: Vector, codec: RecordCodec) -> tuple[int, int, str, dict[str, Any]] | None:
    """(record type, version, Kafka class, our fields as Kafka names them) of a vector to compare."""
    if vector.value is None or vector.record_class in (records.QUARANTINE, records.OTHER):
        return None
    record_type, _ = codec.decode_key(vector.key)
    if codec is RECORDS and record_type in REMOVED:
        return None
    try:
        decoded = codec.decode_value(record_type, vector.value)
    except DecodeError:
        return None
    layout = codec.layouts[record_type]
    newest = layout.values[0]
    if decoded.era != newest.era:
        return None
    return record_type, decoded.version, f"{layout.name}Value", _struct(decoded.fields, newest.fields)


def _oracle(version: str, values: list[tuple[str, str, bytes]]) -> dict[str, str]:
    classes = compile_against(version, Path(__file__).with_name("RecordOracle.java"))
    lines = "".join(f"{name} {cls} {value.hex()}\n" for name, cls, value in values)
    run = subprocess.run(
        [java(), *SHORT_LIVED, "-cp", f"{classes}:{libs(version)}/*", "RecordOracle"],
        input=lines, capture_output=True, text=True, check=True, timeout=300,
    )  # fmt: skip
    return dict(line.split(" ", 1) for line in run.stdout.splitlines())


@pytest.mark.heavy
def test_the_newest_broker_reads_every_vector_as_we_do():
    import json

    candidates = [(v, RECORDS) for v in all_vectors()] + [(v, SHARE_STATE) for v in load("share_state")]
    compared = {}
    for index, (vector, codec) in enumerate(candidates):
        found = _compared(vector, codec)
        if found is not None:
            compared[f"v{index}"] = (vector, *found)
    try:
        theirs = _oracle(NEWEST, [(name, c[3], c[0].value) for name, c in compared.items()])
    except Unavailable as reason:
        pytest.skip(str(reason))
    differing = []
    read = 0
    for name, (vector, record_type, version, _, ours) in compared.items():
        answer = theirs[name]
        if answer == "UNSUPPORTED":
            assert (record_type, version) in UNSUPPORTED_ALLOWED, f"{vector}: Kafka {NEWEST} has no v{version}"
            continue
        assert not answer.startswith("ERROR"), f"{vector}: Kafka {NEWEST} cannot read it: {answer}"
        kafka = _restricted(json.loads(answer), ours, str(vector))
        read += 1
        if kafka != ours:
            differing.append(f"{vector}: " + "; ".join(_differences(kafka, ours, "")))
    assert not differing, "\n".join(differing)
    # Every layout's newest era met Kafka: a vector that stopped decoding in it would shrink this.
    assert read >= 70, read
    covered = {c[1] for c in compared.values()}
    assert covered >= set(record_layouts()) - REMOVED, sorted(set(record_layouts()) - covered)
