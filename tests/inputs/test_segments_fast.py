"""The compiled fast path (segments/fast_walk.py) against the Python reader: the same rows, and the batches
it should take taken by it, not quietly handed back.

The Python reader's correctness is pinned by the hand-laid hex of test_segments.py (which runs on both
paths); here the writer lays out batches, and each test says which ones the Python path must see.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from offset_audit.inputs.segments import fast_walk, reader
from offset_audit.inputs.segments.crc import crc32c
from offset_audit.inputs.segments.writer import marker_batch, record_batch

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


def test_markers_go_to_the_python_path_between_compressed_batches_the_walker_takes(tmp_path, python_path_positions):
    from offset_audit.inputs.segments import native

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
    # gzip and snappy are walked, and lz4 where liblz4 is on the machine
    assert python_path_positions == [at[1]] + ([] if native.LZ4_AVAILABLE else [at[4]])


@pytest.mark.parametrize("codec", ["zstd", "gzip", "snappy", "lz4"])
def test_compressed_batches_are_inflated_and_read_by_the_walker(tmp_path, python_path_positions, codec):
    """zstd through libzstd, gzip through zlib, snappy by the walker's own decoder, lz4 through liblz4: no
    batch reaches the Python path."""
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


@pytest.mark.parametrize("codec", ["zstd", "gzip", "snappy", "lz4"])
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


@pytest.mark.parametrize("codec", ["zstd", "gzip", "snappy", "lz4"])
def test_compressed_batches_past_the_inflation_buffer_are_walked_in_several_calls(
    tmp_path, monkeypatch, python_path_positions, codec
):
    if codec == "lz4":
        _needs_liblz4()
    monkeypatch.setattr(reader, "FAST_INFLATED_BYTES", 4096)
    batches = [
        record_batch(offset * 3, [(b"key-%d" % offset, b"x" * 300, T)] * 3, compression=codec) for offset in range(40)
    ]
    rows = both(write(tmp_path, *batches), batch_rows=50)
    assert [r["source_offset"] for r in rows] == list(range(120))
    assert python_path_positions == []


def test_zstd_batches_go_to_the_python_path_without_libzstd(tmp_path, monkeypatch, python_path_positions):
    from offset_audit.inputs.segments import native

    stubs = native._zstd_stubs()
    monkeypatch.setattr(native, "ZSTD_DECOMPRESS", stubs[0])
    monkeypatch.setattr(native, "ZSTD_IS_ERROR", stubs[1])
    monkeypatch.setattr(native, "ZSTD_CONTEXT", stubs[2])
    batches = [record_batch(0, [(b"k", b"v", T)], compression="zstd"), record_batch(1, [(b"k", b"v", T)])]
    rows = both(write(tmp_path, *batches))
    assert [r["source_offset"] for r in rows] == [0, 1]
    assert python_path_positions == [0]


def test_the_table_crc_stands_in_for_libcrc32c(tmp_path, monkeypatch, python_path_positions):
    from offset_audit.inputs.segments import native

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


def _with_record_header(batch: bytes) -> bytes:
    """A one-record uncompressed batch whose record carries one header ("h" = "v"): the Python reader steps
    over headers (the output has no column for them), the walker hands such a batch to it."""
    record = batch[61:]
    body = record[1:-1] + b"\x02" + b"\x02h" + b"\x02v"  # header count 1, key "h", value "v" (zigzag lengths)
    assert record[0] < 0x80 and len(body) < 64  # one-byte length varints, before and after
    return _with_payload(batch, bytes([len(body) << 1]) + body)


def test_a_segment_the_walker_refuses_costs_one_probe_per_stretch_not_a_chunk_per_batch(
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
    batches = [_with_record_header(record_batch(offset, [(b"k", b"v", T)])) for offset in range(3000)]
    rows = both(write(tmp_path, *batches))
    assert [(r["source_offset"], r["value"], r["source_error"]) for r in rows] == [(o, b"v", None) for o in range(3000)]
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
    from offset_audit.inputs.segments import native

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
    from offset_audit.inputs.segments import native

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
    from offset_audit.inputs.segments import native

    stubs = native._lz4_stubs()
    for name, value in zip(
        ("LZ4_DECOMPRESS", "LZ4_IS_ERROR", "LZ4_RESET", "LZ4_CONTEXT", "LZ4_SIZES"), stubs, strict=True
    ):
        monkeypatch.setattr(native, name, value)
    batches = [record_batch(0, [(b"k", b"v", T)], compression="lz4"), record_batch(1, [(b"k", b"v", T)])]
    rows = both(write(tmp_path, *batches))
    assert [r["source_offset"] for r in rows] == [0, 1]
    assert python_path_positions == [0]


def _walker_snappy(payload: bytes, room: int = 1 << 16, framed: bool = False) -> bytes | None:
    """The walker's snappy decoder on `payload`, written at byte 3 of a larger buffer (as into `out` after
    earlier batches): the bytes it gives, or None where it leaves the payload to the Python reader."""
    import numpy as np

    src = np.frombuffer(payload, np.uint8)
    dst = np.full(room + 16, 0xEE, np.uint8)
    decode = fast_walk._unsnappy if framed else fast_walk._snappy_block
    size = decode(src, 0, len(src), dst, 3, room)
    if size >= 0:
        assert (dst[3 + size :] == 0xEE).all()  # nothing written past what it says it gave
    return None if size < 0 else bytes(dst[3 : 3 + size])


def _cramjam_snappy(payload: bytes, room: int = 1 << 16) -> bytes | None:
    """What the Python reader's library (cramjam, the snap crate) makes of a raw block, or None if it refuses."""
    import cramjam
    import numpy as np

    out = np.empty(room, np.uint8)
    try:
        return bytes(out[: cramjam.snappy.decompress_raw_into(payload, out)])
    except cramjam.DecompressionError:
        return None


_LETTERS_300 = bytes(range(ord("a"), ord("a") + 25)) * 12  # 300 bytes, no run a copy would shorten

# Raw snappy blocks laid out by hand from the format (snappy's format_description.txt): a little-endian
# varint of the uncompressed length, then elements whose tag's low two bits say what follows.
SNAPPY_BY_HAND = [
    ("literal", "0510" + b"hello".hex(), b"hello"),  # tag (5-1)<<2: a literal of 5
    # a literal of 1, then a 1-byte-offset copy: tag 01 | (9-4)<<2 | offset bits 8-10 (0) <<5, offset 1:
    # it overlaps what it writes, nine more "a"
    ("run", "0a00611501", b"a" * 10),
    ("copy-2", "0c0c" + b"abcd".hex() + "1e0400", b"abcd" * 3),  # tag 10 | (8-1)<<2, offset 4 (LE 16-bit)
    ("copy-4", "0c0c" + b"abcd".hex() + "1f04000000", b"abcd" * 3),  # tag 11 | (8-1)<<2, 32-bit offset
    ("literal-61", "3df03c" + (b"x" * 61).hex(), b"x" * 61),  # tag 60<<2: length-1 (60) in one byte
    # 300 is a 2-byte varint (ac 02); tag 61<<2: length-1 (299) in two bytes; then a copy of 4 at offset
    # 300 = 0x12c: tag 01 | 0<<2 | 1<<5 (offset bits 8-10), then the low byte 2c
    ("literal-300", "b002f42b01" + _LETTERS_300.hex() + "212c", _LETTERS_300 + _LETTERS_300[:4]),
    ("empty", "00", b""),
]
SNAPPY_REFUSED_BY_HAND = [
    ("offset-0", "0500610100"),  # a copy at offset 0
    ("offset-past-start", "0500610102"),  # offset 2 with one byte produced
    ("stated-longer", "0610" + b"hello".hex()),
    ("stated-shorter", "0410" + b"hello".hex()),
    ("literal-past-input", "0510" + b"hell".hex()),
    ("copy-past-stated", "0500611501"),  # nine bytes copied where four are left
    ("length-bytes-need-four-after-tag", "01f00061"),  # snap reads 4 bytes for a 1-4 byte length
    ("copy-4-cut", "050061030100"),
    ("no-header", ""),
]


@pytest.mark.parametrize(("name", "block", "expected"), SNAPPY_BY_HAND, ids=[c[0] for c in SNAPPY_BY_HAND])
def test_snappy_blocks_laid_by_hand_decode_as_the_format_says(name, block, expected):
    payload = bytes.fromhex(block)
    assert _walker_snappy(payload) == expected
    assert _cramjam_snappy(payload) == expected  # and the Python reader agrees


@pytest.mark.parametrize(("name", "block"), SNAPPY_REFUSED_BY_HAND, ids=[c[0] for c in SNAPPY_REFUSED_BY_HAND])
def test_snappy_blocks_the_format_forbids_are_left_to_the_python_reader(name, block):
    payload = bytes.fromhex(block)
    assert _walker_snappy(payload) is None
    assert _cramjam_snappy(payload) is None  # which refuses them too: the error row is its wording


def test_a_snappy_block_stating_more_than_the_room_left_is_not_written():
    assert _walker_snappy(bytes.fromhex("0510" + b"hello".hex()), room=4) is None
    assert _walker_snappy(bytes.fromhex("0510" + b"hello".hex()), room=5) == b"hello"


def test_a_snappy_length_varint_of_six_bytes_is_left_to_the_python_reader():
    """Stricter than snap, which reads a length of 0 spelled in six bytes: such a block is the Python
    reader's, so the walker never has to agree on what no encoder writes."""
    payload = bytes.fromhex("808080808000")
    assert _walker_snappy(payload) is None and _cramjam_snappy(payload) == b""


def _snappy_elements(rng) -> bytes:
    """A raw block of random elements, mostly well formed: literals of every length form, the three copy
    forms with offsets at and past the edges, and a stated length that is sometimes off by one."""
    body, produced = bytearray(), 0
    for _ in range(rng.randrange(12)):
        if produced == 0 or rng.random() < 0.35:
            size = rng.choice([1, 2, 16, 17, 60, 61, 64, 65, 256, 257, 300, 70000])
            if size <= 60:
                body.append((size - 1) << 2)
            else:
                width = min(4, ((size - 1).bit_length() + 7) // 8 + (rng.random() < 0.2))
                body.append((59 + width) << 2)
                body += (size - 1).to_bytes(width, "little")
            body += rng.randbytes(size - (rng.random() < 0.05))
            produced += size
            continue
        offset = rng.choice([0, 1, 2, 7, 8, 15, 16, produced, produced + 1, rng.randrange(1, produced + 1)])
        kind = rng.choice([1, 2, 3])
        if kind == 1 and offset < 2048:
            size = rng.randrange(4, 12)
            body += bytes([1 | (size - 4) << 2 | (offset >> 8) << 5, offset & 0xFF])
        else:
            size = rng.randrange(1, 65)
            width = 2 if kind == 2 and offset < 65536 else 4
            body += bytes([(1 if width == 2 else 2) + 1 | (size - 1) << 2]) + offset.to_bytes(width, "little")
        produced += size
    stated = max(0, produced + rng.choice([0, 0, 0, 1, -1]))
    header = bytearray()
    while stated > 0x7F:
        header.append(stated & 0x7F | 0x80)
        stated >>= 7
    return bytes(header) + bytes([stated]) + bytes(body)


def test_the_walkers_snappy_takes_only_what_the_python_reader_takes_and_gives_the_same_bytes():
    """Differential: thousands of blocks, well formed, damaged, or random elements; wherever the walker
    gives bytes, cramjam gives the same ones, and everything the encoder writes the walker takes."""
    import random

    import cramjam

    rng = random.Random(15)
    taken = refused = 0
    for case in range(6000):
        if case % 3 == 0:
            plain = bytes(
                rng.choice(b"ab\x00\xff") if rng.random() < 0.8 else rng.randrange(256)
                for _ in range(rng.randrange(3000))
            )
            payload = bytes(cramjam.snappy.compress_raw(plain))
            assert _walker_snappy(payload, room=4096) == plain
        elif case % 3 == 1:
            damaged = bytearray(cramjam.snappy.compress_raw(rng.randbytes(rng.randrange(1, 400)) * 3))
            for _ in range(rng.randrange(1, 4)):
                at = rng.randrange(len(damaged))
                damaged[at] = rng.randrange(256) if rng.random() < 0.7 else damaged[at]
                if rng.random() < 0.3 and len(damaged) > 1:
                    del damaged[rng.randrange(1, len(damaged)) :]
            payload = bytes(damaged)
        else:
            payload = _snappy_elements(rng)
        room = rng.choice([1 << 17, rng.randrange(4096)])
        walked = _walker_snappy(payload, room)
        if walked is None:
            refused += 1
        else:
            taken += 1
            assert walked == _cramjam_snappy(payload, room), payload
    assert taken > 2500 and refused > 1000  # both sides of the line were exercised


def test_snappy_java_framing_is_read_as_the_python_reader_reads_it():
    """Chunks of a big-endian int32 length and a raw block after the 16-byte stream header; a second header
    at a chunk boundary is skipped; without a header the payload is one raw block. What the walker takes it
    reads as compression._unsnappy does; a framing it does not take is left to that function."""
    import cramjam

    from offset_audit.inputs.segments import compression

    header = bytes.fromhex("82534e41505059000000000100000001")  # magic, version 1, compatible 1
    parts = [b"first part " * 3, b"second part", b"third"]
    chunks = [bytes(cramjam.snappy.compress_raw(p)) for p in parts]

    def chunk(block: bytes) -> bytes:
        return len(block).to_bytes(4, "big") + block

    joined = b"".join(parts)
    taken = [
        header + chunk(chunks[0]),
        header + b"".join(chunk(c) for c in chunks),
        header + chunk(chunks[0]) + header + chunk(chunks[1]) + chunk(chunks[2]),  # concatenated streams
        chunks[1],  # bare block
        header,  # a stream with no chunk: nothing
    ]
    assert [_walker_snappy(p, framed=True) for p in taken] == [parts[0], joined, joined, parts[1], b""]
    assert [compression._unsnappy(p, 1 << 16) for p in taken] == [parts[0], joined, joined, parts[1], b""]
    left = [
        header[:12],  # a header cut short
        header + chunk(chunks[0]) + header[:10],
        header + chunk(chunks[0]) + b"\x00\x00",  # a chunk length cut short
        header + (len(chunks[0]) + 1).to_bytes(4, "big") + chunks[0],  # a length past the payload
        header + b"\xff\xff\xff\xf0" + chunks[0],  # negative
        header + chunk(b""),  # an empty block
        header + chunk(chunks[0] + b"\x00"),  # a literal tag with no byte after it
    ]
    assert [_walker_snappy(p, framed=True) for p in left] == [None] * len(left)


def test_snappy_payloads_the_walker_does_not_take_are_the_python_paths(tmp_path, python_path_positions):
    import cramjam

    records = record_batch(0, [(b"k", b"v", T), (b"k", b"w", T)])[61:]
    block = bytes(cramjam.snappy.compress_raw(records))
    header = bytes.fromhex("82534e41505059000000000100000001")
    template = record_batch(0, [(b"k", b"v", T), (b"k", b"w", T)], compression="snappy")
    batches = [
        _with_payload(template, block),  # a bare block: walked
        _with_payload(template, header + len(block).to_bytes(4, "big") + block + b"\x00\x01"),  # trailing bytes
        _with_payload(template, header + (len(block) + 9).to_bytes(4, "big") + block),  # a length past the end
        _with_payload(template, block[:-1]),  # the block cut short
        record_batch(2, [(b"k", b"x", T)], compression="snappy"),
    ]
    rows = both(write(tmp_path, *batches))
    assert [(r["source_offset"], r["value"]) for r in rows[:2]] == [(0, b"v"), (1, b"w")]
    assert [("snappy" in (r["source_error"] or "")) for r in rows[2:5]] == [True] * 3
    assert rows[5]["value"] == b"x" and rows[5]["source_error"] is None
    assert python_path_positions == positions(*batches)[1:4]
