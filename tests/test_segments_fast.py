"""The compiled fast path (segments/fast_walk.py) against the Python reader: the same rows, and the batches
it should take taken by it, not quietly handed back.

The Python reader's correctness is pinned by the hand-laid hex of test_segments.py (which runs on both
paths); here the writer lays out batches, and each test says which ones the Python path must see.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from offset_audit.segments import fast_walk, reader
from offset_audit.segments.crc import crc32c
from offset_audit.segments.writer import marker_batch, record_batch

T = 1_700_000_000_000
_HANDED: list[int] = []


def write(tmp_path: Path, *batches: bytes) -> Path:
    folder = tmp_path / "__consumer_offsets-3"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "00000000000000000000.log"
    path.write_bytes(b"".join(batches))
    return path


@pytest.fixture
def python_path_positions(monkeypatch) -> list[int]:
    """The byte positions of the frames the fast path hands to the Python path, in order."""
    handed = _HANDED
    handed.clear()
    add_item = reader._add_item

    def counting(rows, item, only_control, max_batch_bytes):
        handed.append(item.position if hasattr(item, "position") else item.start)
        add_item(rows, item, only_control, max_batch_bytes)

    monkeypatch.setattr(reader, "_add_item", counting)
    return handed


def both(path: Path, **kwargs) -> list[dict]:
    """The rows of the fast path, checked equal to the Python path's (read first, so that what
    python_path_positions holds afterwards is the fast path's hand-overs)."""
    python = pa.Table.from_batches(list(reader.read_segment(str(path), fast=False, **kwargs))).to_pylist()
    _HANDED.clear()
    fast = pa.Table.from_batches(list(reader.read_segment(str(path), fast=True, **kwargs))).to_pylist()
    assert fast == python
    return fast


def _with_payload(batch: bytes, payload: bytes) -> bytes:
    """`batch` with its records (or their compressed form) replaced by `payload`, length and CRC made to fit."""
    head = bytearray(batch[:61] + payload)
    head[8:12] = (len(head) - 12).to_bytes(4, "big")
    head[17:21] = crc32c(bytes(head[21:])).to_bytes(4, "big")
    return bytes(head)


def positions(*batches: bytes) -> list[int]:
    starts, at = [], 0
    for batch in batches:
        starts.append(at)
        at += len(batch)
    return starts


def test_crc32c_of_the_walker_matches_the_library_on_every_length():
    import numpy as np

    data = bytes(range(256)) * 3
    for end in range(0, 40):
        buf = np.frombuffer(data, np.uint8)
        assert fast_walk.crc32c(buf, 5, 5 + end, fast_walk.CRC32C_TABLES) == crc32c(data[5 : 5 + end])


def test_one_record_batches_are_all_taken_by_the_fast_path(tmp_path, python_path_positions):
    batches = [record_batch(offset, [(b"k%d" % offset, b"v%d" % offset, T + offset)]) for offset in range(50)]
    rows = both(write(tmp_path, *batches))
    assert [r["source_offset"] for r in rows] == list(range(50))
    assert [r["source_position"] for r in rows] == positions(*batches)
    assert python_path_positions == []


def test_multi_record_batches_keep_their_offsets_timestamps_and_batch_position(tmp_path, python_path_positions):
    first = record_batch(10, [(b"a", b"1", T), (b"b", b"2", T + 5), (b"c", b"3", T - 7)], producer_id=42)
    second = record_batch(13, [(b"d", b"4", T + 1000)] * 4, attributes=0x10, producer_id=43)
    rows = both(write(tmp_path, first, second))
    assert [(r["source_offset"], r["record_timestamp_ms"], r["source_position"]) for r in rows] == [
        (10, T, 0),
        (11, T + 5, 0),
        (12, T - 7, 0),
        *[(13 + i, T + 1000, len(first)) for i in range(4)],
    ]
    assert [(r["producer_id"], r["is_transactional"]) for r in rows] == [(42, False)] * 3 + [(43, True)] * 4
    assert python_path_positions == []


def test_a_corrupt_batch_in_the_middle_is_the_python_paths_and_the_rest_stays_fast(tmp_path, python_path_positions):
    before = [record_batch(offset, [(b"k", b"v", T)]) for offset in range(3)]
    bad = bytearray(record_batch(3, [(b"k", b"damaged", T)]))
    bad[-3] ^= 0xFF  # inside the value: the CRC fails, the length still holds
    after = [record_batch(offset, [(b"k", b"v", T)]) for offset in range(4, 7)]
    rows = both(write(tmp_path, *before, bytes(bad), *after))
    assert [r["source_offset"] for r in rows] == list(range(7))
    (error,) = [r for r in rows if r["source_error"]]
    assert error["source_offset"] == 3 and "corrupt" in error["source_error"]
    assert python_path_positions == [positions(*before, bytes(bad))[3]]


def test_a_key_length_needing_a_two_byte_varint_is_read(tmp_path, python_path_positions):
    key, value = b"k" * 200, b"v" * 70  # zigzag 400 = 90 03, zigzag 140 = 8c 01
    rows = both(write(tmp_path, record_batch(0, [(key, value, T)])))
    assert (rows[0]["key"], rows[0]["value"]) == (key, value)
    assert python_path_positions == []


def test_offsets_above_2_to_the_53_are_kept_exactly(tmp_path, python_path_positions):
    rows = both(write(tmp_path, record_batch(2**53 + 5, [(b"a", b"1", T), (b"b", b"2", T)])))
    assert [r["source_offset"] for r in rows] == [2**53 + 5, 2**53 + 6]
    assert python_path_positions == []


def test_offsets_at_the_int64_limit_go_to_the_python_path(tmp_path, python_path_positions):
    batch = record_batch(2**63 - 2, [(b"a", b"1", T), (b"b", b"2", T)])
    rows = both(write(tmp_path, batch))
    assert [r["source_offset"] for r in rows] == [2**63 - 2, 2**63 - 1]
    assert python_path_positions == [0]


def test_null_value_is_a_tombstone_and_empty_value_is_not(tmp_path, python_path_positions):
    rows = both(write(tmp_path, record_batch(0, [(b"gone", None, T), (b"empty", b"", T), (None, b"v", T)])))
    assert [(r["key"], r["value"]) for r in rows] == [(b"gone", None), (b"empty", b""), (None, b"v")]
    assert python_path_positions == []


def test_markers_and_snappy_batches_go_to_the_python_path_between_fast_ones(tmp_path, python_path_positions):
    from offset_audit.segments import native

    batches = [
        record_batch(0, [(b"k", b"v", T)], producer_id=7, attributes=0x10),
        marker_batch(1, producer_id=7, commit=True, timestamp=T),
        record_batch(2, [(b"k", b"z", T)] * 3, compression="gzip"),
        record_batch(5, [(b"k", b"s", T)] * 2, compression="snappy"),
        record_batch(7, [(b"k", b"l", T)] * 2, compression="lz4"),
        record_batch(9, [(b"k", b"v", T)]),
    ]
    rows = both(write(tmp_path, *batches))
    assert [r["control_type"] for r in rows] == [None, "COMMIT"] + [None] * 8
    at = positions(*batches)
    # the gzip batch (at[2]) is walked, and the lz4 one (at[4]) where liblz4 is on the machine
    assert python_path_positions == [at[1], at[3]] + ([] if native.LZ4_AVAILABLE else [at[4]])


@pytest.mark.parametrize("codec", ["zstd", "gzip", "lz4"])
def test_compressed_batches_are_inflated_and_read_by_the_walker(tmp_path, python_path_positions, codec):
    """zstd through libzstd, gzip through zlib, lz4 through liblz4: no batch reaches the Python path."""
    if codec == "lz4":
        _needs_liblz4()
    batches = [
        record_batch(0, [(b"k%d" % i, b"value %d" % i, T + i) for i in range(5)], compression=codec),
        record_batch(5, [(b"plain", b"v", T)]),
        record_batch(6, [(b"gone", None, T)], compression=codec, attributes=0x10, producer_id=9),
    ]
    rows = both(write(tmp_path, *batches))
    assert [(r["source_offset"], r["key"], r["value"]) for r in rows] == [
        *[(i, b"k%d" % i, b"value %d" % i) for i in range(5)],
        (5, b"plain", b"v"),
        (6, b"gone", None),
    ]
    assert [r["source_position"] for r in rows] == [0] * 5 + positions(*batches)[1:]
    assert python_path_positions == []


@pytest.mark.parametrize("codec", ["zstd", "gzip", "lz4"])
def test_a_batch_inflating_past_the_bound_is_the_python_paths_error_row(tmp_path, python_path_positions, codec):
    if codec == "lz4":
        _needs_liblz4()
    batches = [record_batch(0, [(b"k", b"v" * 5000, T)], compression=codec), record_batch(1, [(b"k", b"v", T)])]
    rows = both(write(tmp_path, *batches), max_batch_bytes=1000)
    assert "more than 1,000 bytes" in rows[0]["source_error"]
    assert rows[1]["value"] == b"v" and python_path_positions == [0]


def test_a_zstd_payload_libzstd_refuses_is_the_python_paths_error_row(tmp_path, python_path_positions):
    good = record_batch(0, [(b"k", b"v", T)], compression="zstd")
    # A payload that is no zstd frame, under a CRC that verifies: the error must be cramjam's wording.
    bad = _with_payload(record_batch(1, [(b"k", b"v", T)], compression="zstd"), b"not a zstd frame at all")
    rows = both(write(tmp_path, good, bad, record_batch(2, [(b"k", b"v", T)], compression="zstd")))
    assert [r["source_error"] is None for r in rows] == [True, False, True]
    assert "zstd payload of 23 bytes cannot be decompressed" in rows[1]["source_error"]
    assert python_path_positions == [len(good)]


def test_zstd_batches_past_the_inflation_buffer_are_walked_in_several_calls(
    tmp_path, monkeypatch, python_path_positions
):
    monkeypatch.setattr(reader, "FAST_INFLATED_BYTES", 4096)
    batches = [
        record_batch(offset * 3, [(b"key-%d" % offset, b"x" * 300, T)] * 3, compression="zstd") for offset in range(40)
    ]
    rows = both(write(tmp_path, *batches), batch_rows=50)
    assert [r["source_offset"] for r in rows] == list(range(120))
    assert python_path_positions == []


def test_zstd_batches_go_to_the_python_path_without_libzstd(tmp_path, monkeypatch, python_path_positions):
    from offset_audit.segments import native

    stubs = native._zstd_stubs()
    monkeypatch.setattr(native, "ZSTD_DECOMPRESS", stubs[0])
    monkeypatch.setattr(native, "ZSTD_IS_ERROR", stubs[1])
    monkeypatch.setattr(native, "ZSTD_CONTEXT", stubs[2])
    batches = [record_batch(0, [(b"k", b"v", T)], compression="zstd"), record_batch(1, [(b"k", b"v", T)])]
    rows = both(write(tmp_path, *batches))
    assert [r["source_offset"] for r in rows] == [0, 1]
    assert python_path_positions == [0]


def test_the_table_crc_stands_in_for_libcrc32c(tmp_path, monkeypatch, python_path_positions):
    from offset_audit.segments import native

    monkeypatch.setattr(native, "CRC32C_AVAILABLE", False)
    bad = bytearray(record_batch(1, [(b"k", b"damaged", T)]))
    bad[-3] ^= 0xFF
    batches = [record_batch(0, [(b"k", b"v", T)]), bytes(bad), record_batch(2, [(b"k", b"v", T)])]
    rows = both(write(tmp_path, *batches))
    assert [r["source_error"] is None for r in rows] == [True, False, True]
    assert python_path_positions == [positions(*batches)[1]]


def test_the_transaction_pass_reads_only_the_markers_and_frames_as_the_python_path(tmp_path, python_path_positions):
    damaged = bytearray(record_batch(4, [(b"k", b"v", T)]))
    damaged[8:12] = (10**6).to_bytes(4, "big")  # a length that cannot hold: a skipped stretch
    batches = [
        record_batch(0, [(b"k", b"v", T)], producer_id=7, attributes=0x10),
        marker_batch(1, producer_id=7, commit=True, timestamp=T),
        record_batch(2, [(b"k", b"v", T)], compression="zstd", producer_id=8, attributes=0x10),
        marker_batch(3, producer_id=8, commit=False, timestamp=T),
        bytes(damaged),
        record_batch(5, [(b"k", b"v", T)]),
        marker_batch(6, producer_id=9, commit=True, timestamp=T),
    ]
    rows = both(write(tmp_path, *batches), only_control=True)
    at = positions(*batches)
    assert [(r["source_position"], r["control_type"]) for r in rows if r["source_error"] is None] == [
        (at[1], "COMMIT"),
        (at[3], "ABORT"),
        (at[6], "COMMIT"),
    ]
    assert [r["source_position"] for r in rows if r["source_error"]] == [at[4]]
    assert python_path_positions == [at[1], at[3], at[4], at[6]]


def test_a_snappy_segment_costs_one_probe_per_stretch_not_a_chunk_per_batch(
    tmp_path, monkeypatch, python_path_positions
):
    reads: list[int] = []
    read_segment = reader._read_fast

    class Counting:
        def __init__(self, handle):
            self.handle = handle

        def readinto(self, view):
            reads.append(len(view))
            return self.handle.readinto(view)

        def __getattr__(self, name):
            return getattr(self.handle, name)

    monkeypatch.setattr(reader, "_read_fast", lambda f, *a: read_segment(Counting(f), *a))
    batches = [record_batch(offset, [(b"k", b"v", T)], compression="snappy") for offset in range(3000)]
    rows = both(write(tmp_path, *batches))
    assert len(rows) == 3000
    assert len(python_path_positions) == 3000
    assert max(reads[1:]) <= 64 << 10 and len(reads) < 20  # the first is a whole chunk (the file)


def test_a_file_larger_than_a_chunk_with_batches_straddling_chunk_ends(tmp_path, monkeypatch, python_path_positions):
    monkeypatch.setattr(reader, "FAST_CHUNK_BYTES", 1000)
    batches = [record_batch(offset, [(b"key-%d" % offset, b"v" * (offset % 50), T)]) for offset in range(200)]
    big = record_batch(200, [(b"big", b"x" * 1500, T)])  # larger than a chunk: the Python path reads it
    path = write(tmp_path, *batches, big, record_batch(201, [(b"k", b"v", T)]))
    rows = both(path, batch_rows=64)
    assert [r["source_offset"] for r in rows] == list(range(202))
    assert python_path_positions == [positions(*batches, big)[-1]]


def test_a_truncated_last_batch_is_the_python_paths_error_row(tmp_path, python_path_positions):
    good = record_batch(0, [(b"k", b"v", T)])
    cut = record_batch(1, [(b"k", b"v", T)])[:-4]
    rows = both(write(tmp_path, good, cut))
    assert [r["source_error"] is None for r in rows] == [True, False]
    assert python_path_positions == [len(good)]


def test_gzip_payloads_the_walker_does_not_take_are_the_python_paths(tmp_path, python_path_positions):
    """Only one gzip member ending with the payload is walked. Java's GZIPInputStream, and so the Python
    path, reads concatenated members and stops quietly at trailing bytes that start no member; a payload
    zlib refuses keeps the Python path's error wording."""
    import gzip

    records = record_batch(0, [(b"k", b"v", T), (b"k", b"w", T)])[61:]  # two plain records
    first, second = records[: len(records) // 2], records[len(records) // 2 :]
    template = record_batch(0, [(b"k", b"v", T), (b"k", b"w", T)], compression="gzip")
    batches = [
        _with_payload(template, gzip.compress(first) + gzip.compress(second)),  # two members
        _with_payload(template, gzip.compress(records) + b"trailing"),  # bytes after the member
        _with_payload(template, b"\x1f\x8b not gzip after all"),  # refused by zlib
        record_batch(2, [(b"k", b"x", T)], compression="gzip"),
    ]
    rows = both(write(tmp_path, *batches))
    assert [(r["source_offset"], r["value"]) for r in rows[:4]] == [(0, b"v"), (1, b"w"), (0, b"v"), (1, b"w")]
    assert "gzip" in rows[4]["source_error"] and rows[5]["value"] == b"x"
    assert python_path_positions == positions(*batches)[:3]


def test_gzip_batches_go_to_the_python_path_without_zlib(tmp_path, monkeypatch, python_path_positions):
    from offset_audit.segments import native

    reset, inflate, words, words32, fields = native._zlib_stubs()
    for name, value in [("INFLATE_RESET", reset), ("INFLATE", inflate), ("GZIP_STREAM", words)]:
        monkeypatch.setattr(native, name, value)
    monkeypatch.setattr(native, "GZIP_STREAM_WORDS32", words32)
    monkeypatch.setattr(native, "GZIP_FIELDS", fields)
    batches = [record_batch(0, [(b"k", b"v", T)], compression="gzip"), record_batch(1, [(b"k", b"v", T)])]
    rows = both(write(tmp_path, *batches))
    assert [r["source_offset"] for r in rows] == [0, 1]
    assert python_path_positions == [0]


def _needs_liblz4():
    from offset_audit.segments import native

    if not native.LZ4_AVAILABLE:
        pytest.skip("liblz4 is not on this machine (ctypes.util.find_library('lz4')): lz4 goes to the Python reader")


def test_lz4_payloads_the_walker_does_not_take_are_the_python_paths(tmp_path, python_path_positions):
    """Only one frame that starts with the frame magic and ends with the payload is walked; anything
    else, and anything liblz4 refuses, keeps the Python path's rows and wording."""
    import cramjam

    _needs_liblz4()
    records = record_batch(0, [(b"k", b"v", T), (b"k", b"w", T)])[61:]
    template = record_batch(0, [(b"k", b"v", T), (b"k", b"w", T)], compression="lz4")
    frame = bytes(cramjam.lz4.compress(records))
    damaged = bytearray(frame)
    damaged[-6] ^= 0xFF  # inside the last block or the end mark
    batches = [
        _with_payload(template, frame + b"trailing"),
        _with_payload(template, b"no lz4 frame at all"),
        _with_payload(template, bytes(damaged)),
        record_batch(2, [(b"k", b"x", T)], compression="lz4"),
    ]
    rows = both(write(tmp_path, *batches))
    assert [r["source_error"] is None for r in rows][-1] and rows[-1]["value"] == b"x"
    assert python_path_positions == positions(*batches)[:3]


def test_lz4_batches_go_to_the_python_path_without_liblz4(tmp_path, monkeypatch, python_path_positions):
    from offset_audit.segments import native

    stubs = native._lz4_stubs()
    for name, value in zip(
        ("LZ4_DECOMPRESS", "LZ4_IS_ERROR", "LZ4_RESET", "LZ4_CONTEXT", "LZ4_SIZES"), stubs, strict=True
    ):
        monkeypatch.setattr(native, name, value)
    batches = [record_batch(0, [(b"k", b"v", T)], compression="lz4"), record_batch(1, [(b"k", b"v", T)])]
    rows = both(write(tmp_path, *batches))
    assert [r["source_offset"] for r in rows] == [0, 1]
    assert python_path_positions == [0]
