"""Our record layouts against the message JSON inside the newest broker's jars: the same fields, types,
versions, nullable and tagged versions, tags and defaults, read the way Kafka's generator reads them.

A default is compared as the generator sees it (generator/.../FieldSpec.java): Jackson turns a JSON null
into no default at all, which is the type's zero (an empty list, an empty struct), while the text "null"
is null. A layout copied with the wrong one decodes an absent tag differently from the broker."""

from __future__ import annotations

import json
import re
import zipfile
from typing import Any

import pytest
from kafka_broker import kafka_versions, libs, version_tuple
from live_services import Unavailable

from offset_audit.layouts.field_spec import FieldSpec, Versions
from offset_audit.layouts.spec import (
    _default_text,
    protocol_layout,
    record_layouts,
    share_state_layouts,
)

NEWEST = max(kafka_versions(), key=version_tuple)
# The jars that hold the coordinators' records and the consumer protocol.
JARS = re.compile(r"kafka-(clients|group-coordinator|share-coordinator)-[0-9.]+\.jar")
# Record type 0's layout reads every OffsetCommitValue version, as brokers before 4.1 did (its note in
# schemas/records/00); Kafka's LegacyOffsetCommitValue now describes v0 only, so it is compared with
# OffsetCommitValue. ShareGroupPartitionMetadata (9) was Kafka 4.0's and is in no later jar.
KAFKA_NAMES = {0: "OffsetCommit"}
GONE = {9}


def _kafka_messages(version: str) -> dict[str, dict[str, Any]]:
    messages = {}
    for jar in libs(version).glob("kafka-*.jar"):
        if not JARS.fullmatch(jar.name):
            continue
        with zipfile.ZipFile(jar) as archive:
            for name in archive.namelist():
                if name.startswith("common/message/") and name.endswith(".json"):
                    lines = archive.read(name).decode().splitlines()
                    text = "\n".join(line for line in lines if not line.strip().startswith("//"))
                    messages[name.rsplit("/", 1)[1][: -len(".json")]] = json.loads(text)
    return messages


def _differences(ours: tuple[FieldSpec, ...], theirs: list[dict], structs: dict[str, list], where: str) -> list[str]:
    found = []
    by_name = {f["name"]: f for f in theirs}
    mine = {spec.name: spec for spec in ours}
    for name in sorted(set(by_name) - set(mine)):
        found.append(f"{where}.{name}: only in Kafka's")
    for name in sorted(set(mine) - set(by_name)):
        found.append(f"{where}.{name}: only in ours")
    for name in sorted(set(mine) & set(by_name)):
        spec, field = mine[name], by_name[name]
        tagged = Versions.parse(field.get("taggedVersions"))
        theirs_of = {
            "type": field["type"],
            # FieldSpec: versions default to taggedVersions where only those are given.
            "versions": Versions.parse(field.get("versions", field.get("taggedVersions"))),
            "nullableVersions": Versions.parse(field.get("nullableVersions")),
            "taggedVersions": tagged,
            "tag": field.get("tag"),
            "default": _default_text(field.get("default")),
        }
        ours_of = {
            "type": spec.type,
            "versions": spec.versions,
            "nullableVersions": spec.nullable,
            "taggedVersions": spec.tagged,
            "tag": spec.tag,
            "default": spec.default,
        }
        for key, value in theirs_of.items():
            if ours_of[key] != value and not (isinstance(value, Versions) and value.empty and ours_of[key].empty):
                found.append(f"{where}.{name}: {key} is {ours_of[key]!r} here, {value!r} in Kafka's")
        nested = field.get("fields") or structs.get(field["type"].removeprefix("[]"))
        if nested or spec.fields:
            found += _differences(spec.fields, nested or [], structs, f"{where}.{name}")
    return found


def test_every_layout_is_kafkas_message_json():
    try:
        messages = _kafka_messages(NEWEST)
    except Unavailable as reason:
        pytest.skip(str(reason))
    found = []
    compared = 0
    for layouts in (record_layouts(), share_state_layouts()):
        for record_type, layout in layouts.items():
            if layouts is record_layouts() and record_type in GONE:
                assert f"{layout.name}Value" not in messages, f"{layout.name} is back in Kafka {NEWEST}"
                continue
            name = KAFKA_NAMES.get(record_type, layout.name) if layouts is record_layouts() else layout.name
            for part, fields in (("Key", layout.key_fields), ("Value", layout.values[0].fields)):
                message = messages[f"{name}{part}"]
                structs = {s["name"]: s["fields"] for s in message.get("commonStructs", [])}
                found += _differences(fields, message["fields"], structs, f"{layout.name}{part}")
                compared += 1
    for ours, kafka in (
        ("consumer_protocol_subscription", "ConsumerProtocolSubscription"),
        ("consumer_protocol_assignment", "ConsumerProtocolAssignment"),
    ):
        message = messages[kafka]
        structs = {s["name"]: s["fields"] for s in message.get("commonStructs", [])}
        found += _differences(protocol_layout(ours).fields, message["fields"], structs, kafka)
        compared += 1
    assert not found, f"layouts that are not Kafka {NEWEST}'s:\n" + "\n".join(found)
    assert compared == 2 * (len(record_layouts()) - len(GONE) + len(share_state_layouts())) + 2
