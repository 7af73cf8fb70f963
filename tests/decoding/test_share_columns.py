"""The columnar __share_group_state reader against the generic one, on the same hand-written vectors."""

from __future__ import annotations

import pyarrow as pa
from vector_files import load

from offset_audit.decoding.records import QUARANTINE, SHARE_STATE
from offset_audit.decoding.report import CountKey
from offset_audit.decoding.share_columns import KIND_CODES, ShareStateReader
from offset_audit.decoding.share_records import decode_share_state_record
from offset_audit.layouts.codec import RecordCodec
from offset_audit.layouts.spec import share_state_layouts

VECTORS = load("share_state")
# Layouts a 4.1+ broker writes; the columnar reader must take these itself.
MUST_BE_FAST = {
    "0 ShareSnapshot, 4.1 layout: int32 epoch, timestamps, one state batch",
    "0 ShareSnapshot, 4.2: tagged DeliveryCompleteCount (tag 0, 4 bytes) after the batches",
    "1 ShareUpdate, 4.1: start offset -1 (unchanged), an offset above 2^53",
    "0 ShareSnapshot tombstone: the group or topic was deleted",
    "1 ShareUpdate, 4.1: start offset moves to 110, two batches, one in state 1 (Acquired, never persisted)",
    "1 ShareUpdate, 4.1: no batches, leader epoch -1 (not updated)",
    "0 ShareSnapshot, 4.1: 127 batches need a two-byte compact length (80 01)",
}
# Layouts it must leave to the generic reader, which knows them exactly.
MUST_DEFER = {
    "0 ShareSnapshot, 4.0 preview layout: uint16 epoch 65535, no timestamps",
    "1 ShareUpdate with an unknown tagged field (tag 7): skipped",
    "0 ShareSnapshot, 4.1: a state batch with an unknown tagged field of its own (tag 3), skipped",
    "1 ShareUpdate, 4.1 bytes and one more: trailing bytes, read as the broker would",
}


def _raw(vectors) -> pa.RecordBatch:
    n = len(vectors)
    return pa.RecordBatch.from_pydict(
        {
            "source_partition": pa.array([7] * n, pa.int32()),
            "source_offset": pa.array(range(n), pa.int64()),
            "record_timestamp_ms": pa.array([1_000] * n, pa.int64()),
            "key": pa.array([v.key for v in vectors], pa.binary()),
            "value": pa.array([v.value for v in vectors], pa.binary()),
            "other_topic": pa.array([False] * n),
        }
    )


def _read(vectors, use_fast_path: bool = True):
    reader = ShareStateReader(RecordCodec(share_state_layouts()), use_fast_path)
    reader.add(_raw(vectors))
    return reader


def _records(reader) -> dict[int, dict]:
    """Each decoded record, by its position in the input, in the generic reader's field names."""
    columns = reader.columns()
    out = {}
    for i in range(len(columns)):
        values = {name: int(array[i]) for name, array in columns.records.items()}
        rows = range(columns.batch_start[i], columns.batch_start[i + 1])
        values["state_batches"] = [{name: int(columns.batches[name][b]) for name in columns.batches} for b in rows]
        values["group_id"], values["topic_id"], values["partition"] = columns.share_partitions[
            values["share_partition"]
        ]
        out[values["source_offset"]] = values
    return out


def _expected(vector) -> dict:
    row = decode_share_state_record(RecordCodec(share_state_layouts()), vector.key, vector.value)
    row["kind"] = KIND_CODES[row["kind"]]
    row["state_batches"] = row.get("state_batches") or []
    for name in ("snapshot_epoch", "state_epoch", "leader_epoch", "start_offset", "create_timestamp"):
        row[name] = row.get(name) or 0
    row["write_timestamp"] = row.get("write_timestamp") or 0
    return row


def test_both_readers_give_the_same_records_and_quarantine_on_every_vector():
    fast, generic = _read(VECTORS), _read(VECTORS, use_fast_path=False)
    assert _records(fast) == _records(generic)
    assert fast.quarantine == generic.quarantine
    assert fast.counts == generic.counts
    tombstones = sum(n for key, n in fast.counts.items() if key[0] == SHARE_STATE and key[4])
    assert tombstones == sum(v.record_class == SHARE_STATE and v.value is None for v in VECTORS) > 0
    assert sum(fast.counts.values()) == len(VECTORS)
    for i, vector in enumerate(VECTORS):
        if vector.record_class == QUARANTINE:
            assert i not in _records(fast)
            continue
        expected = _expected(vector)
        assert {k: _records(fast)[i][k] for k in expected if k in _records(fast)[i]} == {
            k: expected[k] for k in expected if k in _records(fast)[i]
        }, vector.name


def test_the_columnar_reader_takes_what_brokers_write_and_defers_the_rest(monkeypatch):
    deferred: list[int] = []
    original = ShareStateReader._read_generic

    def spy(self, batch, rows):
        deferred.extend(rows.tolist())
        return original(self, batch, rows)

    monkeypatch.setattr(ShareStateReader, "_read_generic", spy)
    _read(VECTORS)
    names = {VECTORS[i].name for i in deferred}
    assert not (MUST_BE_FAST & names)
    assert names >= MUST_DEFER


def test_other_topics_markers_and_reader_errors_are_not_decoded():
    batch = _raw(VECTORS[:3])
    batch = pa.RecordBatch.from_pydict(
        {
            **{name: batch.column(name) for name in batch.schema.names if name != "other_topic"},
            "other_topic": pa.array([True, False, False]),
            "transaction": pa.array([None, "marker", None]),
            "source_error": pa.array([None, None, "batch CRC mismatch"]),
            "skipped_bytes": pa.array([None, None, 61], pa.int64()),
        }
    )
    reader = ShareStateReader(RecordCodec(share_state_layouts()))
    reader.add(batch)
    assert reader.counts == {CountKey("skipped"): 2, CountKey(QUARANTINE): 1}
    [row] = reader.quarantine
    assert (row["reason"], row["skipped_bytes"], row["source_offset"]) == ("batch CRC mismatch", 61, 2)
    assert len(reader.columns()) == 0


def test_sliced_and_large_binary_columns_read_the_same():
    batch = _raw(VECTORS)
    sliced = batch.slice(2, 6)
    large = sliced.cast(sliced.schema.set(sliced.schema.get_field_index("value"), pa.field("value", pa.large_binary())))
    for variant in (sliced, large):
        reader = ShareStateReader(RecordCodec(share_state_layouts()))
        reader.add(variant)
        expected = ShareStateReader(RecordCodec(share_state_layouts()), use_fast_path=False)
        expected.add(variant)
        assert _records(reader) == _records(expected)
