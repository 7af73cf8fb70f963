"""Every hand-written vector through the generic, layout-driven reader."""

from __future__ import annotations

import pytest
from vector_files import all_vectors, check_fields

from offset_audit.decoding import records
from offset_audit.layouts.codec import RecordCodec

CODEC = RecordCodec()


@pytest.mark.parametrize("vector", all_vectors(), ids=str)
def test_vector_decodes_as_written(vector):
    row = records.decode_record(CODEC, vector.key, vector.value)
    assert row["record_class"] == vector.record_class, row
    if vector.record_class == records.QUARANTINE:
        assert vector.reason in row["quarantine"]["reason"], row["quarantine"]["reason"]
        assert row["quarantine"]["key"] == vector.key and row["quarantine"]["value"] == vector.value
        return
    if vector.record_class == records.OTHER:
        assert row["other"]["record_type"] == vector.record_type
        assert row["other"]["key"] == vector.key and row["other"]["value"] == vector.value
        return
    payload = row[vector.record_class]
    check_fields(payload, vector.expect, str(vector))
    if vector.members is not None:
        members = payload["members"]
        assert len(members) == len(vector.members)
        for actual, expected in zip(members, vector.members, strict=True):
            check_fields(actual, expected, f"{vector} member")


def test_every_record_type_and_value_version_has_a_vector():
    """Each layout's every (era, version) is pinned by at least one hand-written vector."""
    seen = set()
    for vector in all_vectors():
        row = records.decode_record(CODEC, vector.key, vector.value)
        if (
            row["record_class"] in (records.OFFSET_COMMIT, records.GROUP_METADATA, records.MODERN)
            and not row["is_tombstone"]
        ):
            seen.add((row["key_type"], row["layout_era"], row["value_version"]))
    wanted = {
        (t, era.era, version)
        for t, layout in CODEC.layouts.items()
        for era in layout.values
        for version in range(era.valid.low, era.valid.high + 1)
    }
    # Type 0 keys are read with every OffsetCommitValue version, but 0.8.2 only ever wrote v0.
    wanted -= {(0, "0.8.2+", v) for v in (1, 2, 3, 4)} | {(0, "3.5-4.0", 4)}
    assert wanted - seen == set()


def test_quarantine_keeps_the_raw_bytes_and_readable_versions():
    row = records.decode_record(CODEC, b"\x00\x01\x00\x01g\x00\x01t\x00\x00\x00\x00", b"\x00\x07\x01")
    assert row["quarantine"]["record_type"] == 1
    assert row["quarantine"]["value_version"] == 7


def test_v4_tag_0_that_is_no_topic_id_falls_back_to_the_pre_4_1_layout():
    """A 3.x broker reads any tag 0 as unknown; only a value no era reads is quarantined."""
    key = bytes.fromhex("00010001 670001 7400000000".replace(" ", ""))
    head = bytes.fromhex("0004000000000000002a00000005010000018bcfe56800")
    topic_id = records.decode_record(CODEC, key, head + bytes.fromhex("01 00 10".replace(" ", "")) + bytes(range(16)))
    assert topic_id["layout_era"] == "0.9.0+" and topic_id["offset_commit"]["topic_id"] is not None
    empty_tag = records.decode_record(CODEC, key, head + bytes.fromhex("010000"))
    assert empty_tag["layout_era"] == "3.5-4.0"
    assert empty_tag["offset_commit"]["unknown_tagged_fields"] == [{"tag": 0, "data": b""}]
