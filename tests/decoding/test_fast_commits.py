"""The vectorised offset-commit reader against the same hand-written vectors as the generic one."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from vector_files import all_vectors, load

from offset_audit.decoding import records
from offset_audit.decoding.fast_commits import decode_offset_commits
from offset_audit.layouts.codec import RecordCodec

CODEC = RecordCodec()

# Layouts brokers write every day; the fast path must take these itself, not defer them.
MUST_BE_FAST = {
    "real Kafka 4.1 v4 value (franz-go#1105, reference 1.3)",
    "v3 value (reference 1.3)",
    "v4 value with the tagged topicId (reference 1.3, KAFKA-19141)",
    "v1 value with an explicit expire timestamp (reference 1.3)",
    "0.8.2 legacy key (type 0) with a v0 value and metadata 'abc'",
    "v2 value (2.1, IBP 2.1-IV0)",
    "offset 2^53 + 1, which a double cannot hold",
    "v4 metadata of 126 bytes: compact length 127 still fits one byte (7f)",
    "tombstone: an expired or deleted offset",
    "v4 metadata of 127 bytes: compact length 128 needs a 2-byte varint (80 01), where Burrow fails",
    "v4 metadata of 150 bytes: varint 151 = 97 01",
    "UTF-8 group name 'grüppe'",
    "v3 commitTimestamp 2^62-1 (an OffsetCommit v1 client chose it): kept exactly, no date can show it",
    "v1 commitTimestamp -2^62 with expireTimestamp Long.MAX_VALUE: both kept exactly",
}
# Layouts it must leave to the generic reader, which knows them exactly.
MUST_DEFER = {
    "v4 with an unknown tagged field (tag 5) from a newer Kafka: skipped, the record still decodes",
    "v4 metadata of 16383 bytes: varint 16384 takes three bytes (80 80 01)",
    "metadata with invalid UTF-8 bytes: replaced as Java's String(bytes, UTF_8) does",
    "key with trailing bytes: Kafka's key reader ignores them, so do we",
}


def _fast(vectors):
    keys = pa.array([v.key for v in vectors], pa.binary())
    values = pa.array([v.value for v in vectors], pa.binary())
    result = decode_offset_commits(keys, values)
    rows = pa.table(result.columns).to_pylist()
    return dict(zip(result.rows.tolist(), rows, strict=True))


def test_fast_rows_equal_the_generic_reader_on_every_vector():
    vectors = all_vectors()
    fast = _fast(vectors)
    for i, vector in enumerate(vectors):
        if i not in fast:
            continue
        generic = records.decode_record(CODEC, vector.key, vector.value)
        assert generic["record_class"] == records.OFFSET_COMMIT, vector
        expected = {name: generic["offset_commit"].get(name) for name in fast[i]}
        assert fast[i] == expected, vector


def test_fast_path_takes_the_common_layouts_and_defers_the_unusual():
    vectors = load("offset_commits")
    fast = _fast(vectors)
    taken = {vectors[i].name for i in fast}
    assert taken >= MUST_BE_FAST
    assert not (MUST_DEFER & taken)


def test_fast_path_never_takes_a_malformed_record():
    assert _fast(load("malformed")) == {}


def test_fast_path_handles_sliced_arrow_arrays():
    vectors = load("offset_commits")
    keys = pa.array([v.key for v in vectors], pa.binary()).slice(2, 5)
    values = pa.array([v.value for v in vectors], pa.binary()).slice(2, 5)
    result = decode_offset_commits(keys, values)
    for row_index, group in zip(result.rows, result.columns["group_id"].to_pylist(), strict=True):
        assert (
            group
            == records.decode_record(CODEC, vectors[2 + row_index].key, vectors[2 + row_index].value)["offset_commit"][
                "group_id"
            ]
        )


def test_fast_path_on_large_binary_columns():
    vectors = load("offset_commits")[:3]
    keys = pa.array([v.key for v in vectors], pa.large_binary())
    values = pa.array([v.value for v in vectors], pa.large_binary())
    result = decode_offset_commits(keys, values)
    assert np.array_equal(result.rows, np.arange(3))


def test_fast_path_respects_the_allowed_mask_and_null_keys():
    vectors = load("offset_commits")[:4]
    keys = pa.array([vectors[0].key, None, vectors[2].key, vectors[3].key], pa.binary())
    values = pa.array([v.value for v in vectors], pa.binary())
    result = decode_offset_commits(keys, values, allowed=np.array([True, True, False, True]))
    assert result.rows.tolist() == [0, 3]


def test_repeated_keys_decode_once_and_map_back_to_every_row():
    vector = load("offset_commits")[1]
    keys = pa.array([vector.key] * 5 + [load("offset_commits")[6].key], pa.binary())
    values = pa.array([vector.value] * 6, pa.binary())
    result = decode_offset_commits(keys, values)
    assert result.columns["group_id"].to_pylist() == ["my-group"] * 5 + ["my-group"]
    assert result.columns["partition"].to_pylist() == [0] * 5 + [3]
