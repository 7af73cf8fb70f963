"""The generated dump: deterministic, placed by Kafka's group hash, covering every record type."""

from __future__ import annotations

import pyarrow.parquet as pq

from offset_audit.coordinator.partitioner import java_string_hash, partition_for
from offset_audit.decoding import records
from offset_audit.generator.dump import generate_dump
from offset_audit.layouts.codec import RecordCodec


def test_java_string_hash_matches_java():
    assert java_string_hash("") == 0
    assert java_string_hash("a") == 97
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("polygenelubricants") == -(2**31)  # Integer.MIN_VALUE: Utils.abs maps it to 0
    assert partition_for("polygenelubricants", 50) == 0


def test_same_seed_same_bytes_other_seed_other_bytes(tmp_path):
    generate_dump(str(tmp_path / "a"), 2000, seed=11)
    generate_dump(str(tmp_path / "b"), 2000, seed=11)
    generate_dump(str(tmp_path / "c"), 2000, seed=12)
    a, b, c = (pq.read_table(tmp_path / x) for x in "abc")
    assert a.equals(b)
    assert not a.equals(c)


def test_every_group_sits_in_its_hash_partition_with_growing_offsets(tmp_path):
    generate_dump(str(tmp_path), 3000, seed=1, partitions=7)
    codec = RecordCodec()
    table = pq.read_table(tmp_path).to_pylist()
    last = {}
    for row in table:
        decoded = records.decode_record(codec, row["key"], row["value"])
        payload = decoded.get(decoded["record_class"], {})
        group = payload.get("group_id")
        if group is not None:
            assert row["partition"] == partition_for(group, 7), group
        assert row["offset"] > last.get(row["partition"], -1)
        last[row["partition"]] = row["offset"]


def test_dump_covers_every_kind_of_record(tmp_path):
    generate_dump(str(tmp_path), 6000, seed=1, corrupt=8)
    codec = RecordCodec()
    seen_types, classes, versions = set(), set(), set()
    for row in pq.read_table(tmp_path).to_pylist():
        decoded = records.decode_record(codec, row["key"], row["value"])
        classes.add(decoded["record_class"])
        seen_types.add(decoded.get("key_type"))
        if decoded["record_class"] in (records.OFFSET_COMMIT, records.GROUP_METADATA):
            versions.add((decoded["key_type"], decoded["value_version"]))
    assert classes == set(records.RECORD_CLASSES)
    assert set(codec.layouts) <= seen_types
    assert {
        (0, 0),
        (1, 1),
        (1, 2),
        (1, 3),
        (1, 4),
        (2, 0),
        (2, 1),
        (2, 2),
        (2, 3),
        (2, 4),
        (1, None),
        (2, None),
    } <= versions
