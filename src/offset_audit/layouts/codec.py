"""Decodes one coordinator record's key and value with the layouts in `schemas/records/`.

This is the generic path: every record type and version, with exact errors. The vectorised reader in
`offset_audit.decoding.fast_commits` handles the common offset commits faster and defers to this one for anything
unusual, and both are tested against the same byte vectors.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

from offset_audit.layouts.compiler import compile_struct
from offset_audit.layouts.spec import RecordLayout, StructLayout, ValueLayout, protocol_layout, record_layouts
from offset_audit.layouts.wire import DecodeError, WireReader


@dataclass(frozen=True)
class DecodedValue:
    version: int
    era: str
    fields: dict[str, Any]
    trailing_bytes: int = 0


class UnknownRecordType(Exception):
    """A key whose int16 type no layout describes; the broker logs and skips these (reference 1.1)."""

    def __init__(self, record_type: int) -> None:
        super().__init__(f"unknown record type {record_type}")
        self.record_type = record_type


def record_type_of(key: bytes | None) -> int:
    if key is None:
        raise DecodeError("null key: every __consumer_offsets record has a key")
    if len(key) < 2:
        raise DecodeError(f"truncated key: {len(key)} bytes, the int16 record type needs 2")
    return int.from_bytes(key[:2], "big", signed=True)


class RecordCodec:
    """Key and value readers for every record type, compiled lazily per (type, era, version)."""

    def __init__(self, layouts: dict[int, RecordLayout] | None = None) -> None:
        self.layouts = layouts if layouts is not None else record_layouts()
        self._key_readers = {t: compile_struct(layout.key_fields, 0, False) for t, layout in self.layouts.items()}
        self._value_readers: dict[tuple[int, str, int], Callable[[WireReader], dict]] = {}

    def name_of(self, record_type: int) -> str | None:
        layout = self.layouts.get(record_type)
        return layout.name if layout else None

    def decode_key(self, key: bytes | None) -> tuple[int, dict[str, Any]]:
        record_type = record_type_of(key)
        reader = self._key_readers.get(record_type)
        if reader is None:
            raise UnknownRecordType(record_type)
        name = self.layouts[record_type].name
        assert key is not None  # record_type_of raised on a null key
        # Kafka's readers accept trailing bytes in a key, so we do too.
        return record_type, reader(WireReader(key, 2, f"key of {name}"))

    def _value_reader(self, record_type: int, layout: ValueLayout, version: int) -> Callable:
        slot = (record_type, layout.era, version)
        reader = self._value_readers.get(slot)
        if reader is None:
            reader = compile_struct(layout.fields, version, version in layout.flexible)
            self._value_readers[slot] = reader
        return reader

    def decode_value(self, record_type: int, value: bytes) -> DecodedValue:
        """Decode a non-null value.

        Where Kafka changed a layout without a new version number (3.7 vs 3.8 KIP-848 records, 4.0 vs
        4.1 share records) each era is tried, newest first, and the one that reads the bytes exactly
        wins. If none does, a layout that leaves trailing bytes is accepted as the broker's reader
        would; if none reads at all the record is quarantined with every era's reason.
        """
        record = self.layouts[record_type]
        if len(value) < 2:
            raise DecodeError(f"truncated value of {record.name}: {len(value)} bytes, the int16 version needs 2")
        version = int.from_bytes(value[:2], "big", signed=True)
        candidates = [v for v in record.values if version in v.valid]
        if not candidates:
            known = ", ".join(f"{v.valid.low}-{v.valid.high}" for v in record.values)
            raise DecodeError(f"unknown value version {version} of {record.name} (known: {known})")
        failures: list[str] = []
        loose: DecodedValue | None = None
        for layout in candidates:
            reader = self._value_reader(record_type, layout, version)
            r = WireReader(value, 2, f"value of {record.name} v{version}")
            try:
                fields = reader(r)
            except DecodeError as err:
                failures.append(f"{layout.era}: {err}" if len(candidates) > 1 else str(err))
                continue
            if r.remaining == 0:
                return DecodedValue(version, layout.era, fields)
            if loose is None:
                loose = DecodedValue(version, layout.era, fields, trailing_bytes=r.remaining)
            failures.append(f"{layout.era}: {r.remaining} trailing bytes")
        if loose is not None:
            return loose
        if len(candidates) == 1:
            raise DecodeError(failures[0])
        notes = " ".join(v.note for v in candidates if v.note)
        raise DecodeError(
            f"value of {record.name} v{version} fits none of its layouts ({'; '.join(failures)}). {notes}".strip()
        )


# The consumer protocol blobs inside classic 'consumer' groups (reference 3).


@cache
def _protocol_reader(name: str, version: int) -> Callable[[WireReader], dict]:
    layout: StructLayout = protocol_layout(name)
    return compile_struct(layout.fields, version, version in layout.flexible)


def decode_consumer_protocol(name: str, blob: bytes | None) -> tuple[int, dict[str, Any]]:
    """Full decode as the Java client does it: a version above the highest known is read as the highest
    (newer versions may only append fields) and trailing bytes are ignored."""
    what = "subscription" if name.endswith("subscription") else "assignment"
    if blob is None:
        raise DecodeError(f"null {what}")
    r = WireReader(blob, 0, what)
    version = r.int16("version")
    if version < 0:
        raise DecodeError(f"corrupt {what}: negative version {version}")
    highest = protocol_layout(name).valid.high
    return version, _protocol_reader(name, min(version, highest))(r)


def broker_subscribed_topics(blob: bytes | None) -> list[str] | None:
    """The topics the broker itself derives from one member's subscription (KIP-496).

    The broker reads and ignores the int16 version, parses the rest as v0 (topics and user data) and
    ignores anything after it; when that fails it does not know the group's subscription (None).
    Source: ClassicGroup.computeSubscribedTopics, reference section 3.
    """
    if blob is None:
        return None
    r = WireReader(blob, 0, "subscription")
    try:
        r.int16("version")
        return list(_protocol_reader("consumer_protocol_subscription", 0)(r)["Topics"])
    except DecodeError:
        return None
