"""The pure-Python segment reader (offset_audit.inputs.segments) against byte fixtures laid out by hand.

Every fixture below is written field by field from Kafka's formats (DefaultRecordBatch/DefaultRecord for
magic 2, LegacyRecord for magic 0/1), with a comment per field. The tests fill in only what cannot be
written by hand: CRCs (a table-driven CRC-32C written here, checked against the standard test vector,
and zlib's CRC-32), and lengths of compressed payloads, which the codec libraries produce. Nothing here
encodes records, so a misreading of the format cannot hide in an encoder that shares it.
"""

from __future__ import annotations

import gzip
import os
import re
import zlib
from pathlib import Path

import cramjam
import pyarrow as pa
import pytest

from offset_audit.inputs.log_records import LOG_RECORD_SCHEMA
from offset_audit.inputs.segments.reader import partition_from_path, read_segment
from offset_audit.storage import LOCAL

# Every test here runs on both segment readers (conftest.segment_path).
pytestmark = pytest.mark.usefixtures("segment_path")

T = 1_700_000_000_000  # 0x0000018bcfe56800, the base timestamp of most fixtures


# --- helpers: an independent CRC-32C, hex with comments, sealing CRCs and lengths ---------------------


def _crc32c_table() -> list[int]:
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
        table.append(crc)
    return table


_CRC32C_TABLE = _crc32c_table()


def crc32c_reference(data: bytes) -> int:
    """Table-driven CRC-32C (Castagnoli, reflected 0x82F63B78), independent of the reader's library."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc = _CRC32C_TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def test_reference_crc32c_matches_the_standard_check_value():
    assert crc32c_reference(b"123456789") == 0xE3069283


def hex_fields(text: str) -> str:
    """Hex laid out one field per line: '#' starts a comment, whitespace is ignored."""
    return "".join("".join(re.sub(r"#.*", "", line).split()) for line in text.splitlines())


def seal_v2(text: str, payload: bytes = b"") -> bytes:
    """A magic 2 batch from hand-written hex: CCCCCCCC becomes the CRC-32C of attributes..end; LLLLLLLL (only
    where `payload` is compressed bytes) becomes the batch length. A hand-written length is checked instead."""
    fields = hex_fields(text)
    assert fields[34:42] == "CCCCCCCC", "the CRC field of a magic 2 batch is bytes 17-20"
    computed_length = fields[16:24] == "LLLLLLLL"
    raw = bytearray(bytes.fromhex(fields.replace("CCCCCCCC", "00000000").replace("LLLLLLLL", "00000000")) + payload)
    if computed_length:
        raw[8:12] = (len(raw) - 12).to_bytes(4, "big")
    else:
        assert int.from_bytes(raw[8:12], "big") == len(raw) - 12, "hand-counted batchLength is off"
    raw[17:21] = crc32c_reference(bytes(raw[21:])).to_bytes(4, "big")
    return bytes(raw)


def seal_legacy(text: str, value: bytes = b"") -> bytes:
    """A magic 0/1 message from hand-written hex: CCCCCCCC becomes the CRC-32 of magic..end; where the value
    is compressed bytes appended from outside, VVVVVVVV is its length and LLLLLLLL the message size."""
    fields = hex_fields(text)
    assert fields[24:32] == "CCCCCCCC", "the CRC field of a legacy message is bytes 12-15"
    computed_size = fields[16:24] == "LLLLLLLL"
    fields = fields.replace("VVVVVVVV", f"{len(value):08x}")
    raw = bytearray(bytes.fromhex(fields.replace("CCCCCCCC", "00000000").replace("LLLLLLLL", "00000000")) + value)
    if computed_size:
        raw[8:12] = (len(raw) - 12).to_bytes(4, "big")
    else:
        assert int.from_bytes(raw[8:12], "big") == len(raw) - 12, "hand-counted message size is off"
    raw[12:16] = zlib.crc32(bytes(raw[16:])).to_bytes(4, "big")
    return bytes(raw)


def write_segment(tmp_path: Path, *parts: bytes, folder: str = "__consumer_offsets-7") -> Path:
    log_dir = tmp_path / folder
    log_dir.mkdir(parents=True, exist_ok=True)
    path = log_dir / "00000000000000000000.log"
    path.write_bytes(b"".join(parts))
    return path


def read_rows(path: Path, **kwargs) -> list[dict]:
    batches = list(read_segment(str(path), **kwargs))
    for batch in batches:
        assert batch.schema == LOG_RECORD_SCHEMA
    return pa.Table.from_batches(batches, schema=LOG_RECORD_SCHEMA).to_pylist()


def pick(rows: list[dict], *columns: str) -> list[tuple]:
    return [tuple(row[column] for column in columns) for row in rows]


# --- fixtures ------------------------------------------------------------------------------------------

# Five records exercising every field shape: a null key, a tombstone, an empty value, a negative
# timestamp delta and a record header. Records are: length, attributes, timestampDelta, offsetDelta,
# keyLength, key, valueLength, value, headerCount, headers; all varints zigzag-encoded.
PLAIN_BATCH = seal_v2("""
    0000000000000064    # baseOffset 100
    00000066            # batchLength 102 = 49 header bytes after this field + 53 bytes of records
    00000000            # partitionLeaderEpoch 0
    02                  # magic 2
    CCCCCCCC            # crc
    0000                # attributes: no compression, CreateTime, not transactional, not control
    00000004            # lastOffsetDelta 4
    0000018bcfe56800    # baseTimestamp T
    0000018bcfe56803    # maxTimestamp T+3
    ffffffffffffffff    # producerId -1
    ffff                # producerEpoch -1
    ffffffff            # baseSequence -1
    00000005            # records count 5
    14 00 00 00 04 6b30 04 7630 00          # length 10, ts +0, offset +0, key "k0", value "v0", 0 headers
    10 00 02 02 01 04 7631 00               # length 8, ts +1, offset +1, key null (-1), value "v1"
    10 00 04 04 04 6b32 01 00               # length 8, ts +2, offset +2, key "k2", value null: tombstone
    10 00 06 06 04 6b33 00 00               # length 8, ts +3, offset +3, key "k3", value "" (length 0)
    1c 00 09 08 04 6b34 04 7634 02 02 68 02 78  # length 14, ts -5, offset +4, "k4"/"v4", 1 header "h"="x"
""")


def transactional_batch(base_offset_hex: str, key_value_hex: str) -> bytes:
    """A transactional data batch of one record from producer 4242, epoch 3."""
    return seal_v2(f"""
        {base_offset_hex}   # baseOffset
        0000003c            # batchLength 60 = 49 + 11
        00000000            # partitionLeaderEpoch
        02                  # magic 2
        CCCCCCCC            # crc
        0010                # attributes: transactional
        00000000            # lastOffsetDelta 0
        0000018bcfe56800    # baseTimestamp T
        0000018bcfe56800    # maxTimestamp T
        0000000000001092    # producerId 4242
        0003                # producerEpoch 3
        00000000            # baseSequence 0
        00000001            # records count 1
        14 00 00 00 04 {key_value_hex} 00  # length 10, ts +0, offset +0, 2-byte key, 2-byte value
    """)


def control_batch(base_offset_hex: str, control_type_hex: str) -> bytes:
    """A transaction marker from producer 4242: key = int16 version 0 + int16 type, value = int16 version 0
    + int32 coordinator epoch 5 (EndTransactionMarker)."""
    return seal_v2(f"""
        {base_offset_hex}   # baseOffset
        00000042            # batchLength 66 = 49 + 17
        00000000            # partitionLeaderEpoch
        02                  # magic 2
        CCCCCCCC            # crc
        0030                # attributes: transactional + control
        00000000            # lastOffsetDelta 0
        0000018bcfe56800    # baseTimestamp T
        0000018bcfe56800    # maxTimestamp T
        0000000000001092    # producerId 4242
        0003                # producerEpoch 3
        ffffffff            # baseSequence -1
        00000001            # records count 1
        20 00 00 00         # length 16, attributes, ts +0, offset +0
        08 0000 {control_type_hex}  # key: length 4, version 0, type
        0c 0000 00000005    # value: length 6, version 0, coordinator epoch 5
        00                  # 0 headers
    """)


def compressed_batch(codec_id: int, payload: bytes) -> bytes:
    """Two records ("ka"="va" at T, "kb"="vb" at T+1) compressed by a library; header fields by hand."""
    return seal_v2(
        f"""
        00000000000001f4    # baseOffset 500
        LLLLLLLL            # batchLength: header + compressed size
        00000000            # partitionLeaderEpoch
        02                  # magic 2
        CCCCCCCC            # crc
        000{codec_id}       # attributes: compression codec
        00000001            # lastOffsetDelta 1
        0000018bcfe56800    # baseTimestamp T
        0000018bcfe56801    # maxTimestamp T+1
        ffffffffffffffff    # producerId -1
        ffff                # producerEpoch -1
        ffffffff            # baseSequence -1
        00000002            # records count 2
    """,
        payload,
    )


TWO_RECORDS = bytes.fromhex(
    hex_fields("""
    14 00 00 00 04 6b61 04 7661 00   # length 10, ts +0, offset +0, key "ka", value "va"
    14 00 02 02 04 6b62 04 7662 00   # length 10, ts +1, offset +1, key "kb", value "vb"
""")
)
TWO_RECORDS_EXPECTED = [(500, T, b"ka", b"va"), (501, T + 1, b"kb", b"vb")]


def xerial_snappy(data: bytes) -> bytes:
    """snappy-java stream framing: magic, int32 version 1, int32 compatible version 1, then one chunk."""
    block = bytes(cramjam.snappy.compress_raw(data))
    return bytes.fromhex("82 534e41505059 00  00000001  00000001") + len(block).to_bytes(4, "big") + block


def lz4_frame_with_wrong_descriptor_checksum(data: bytes) -> bytes:
    """An lz4 frame whose header checksum (HC) byte is not the correct one, as pre-0.10 Kafka wrote for magic 0.
    cramjam writes no content size, so the descriptor is FLG, BD and HC is byte 6."""
    frame = bytearray(cramjam.lz4.compress(data))
    assert frame[:4] == bytes.fromhex("04224d18") and not frame[4] & 0x09
    frame[6] ^= 0x5A
    return bytes(frame)


def legacy_v0(offset_hex: str, key_value_hex: str, size_hex: str) -> bytes:
    return seal_legacy(f"""
        {offset_hex}        # offset
        {size_hex}          # size
        CCCCCCCC            # crc
        00                  # magic 0
        00                  # attributes: uncompressed
        {key_value_hex}     # int32 key length, key, int32 value length, value
    """)


def legacy_v1(offset_hex: str, timestamp_hex: str, key_value_hex: str, size_hex: str) -> bytes:
    return seal_legacy(f"""
        {offset_hex}        # offset
        {size_hex}          # size
        CCCCCCCC            # crc
        01                  # magic 1
        00                  # attributes: uncompressed, CreateTime
        {timestamp_hex}     # timestamp
        {key_value_hex}     # int32 key length, key, int32 value length, value
    """)


# Three magic 1 inner messages with RELATIVE offsets 0, 1, 2 and their own timestamps T+10..T+12.
V1_INNER_SET = b"".join(
    legacy_v1(
        f"{relative:016x}",
        f"{T + 10 + relative:016x}",
        f"00000002 6b{relative:02x} 00000002 76{relative:02x}",
        "0000001a",
    )
    for relative in range(3)
)


def v1_wrapper(
    attributes_hex: str, timestamp_hex: str, compressed: bytes, offset_hex: str = "0000000000000034"
) -> bytes:
    return seal_legacy(
        f"""
        {offset_hex}        # offset (default 52): the LAST inner message's absolute offset
        LLLLLLLL            # size
        CCCCCCCC            # crc
        01                  # magic 1
        {attributes_hex}    # attributes: codec (+ bit 3 for LogAppendTime)
        {timestamp_hex}     # wrapper timestamp
        ffffffff            # key: null
        VVVVVVVV            # value length: the compressed inner message set follows
    """,
        compressed,
    )


# --- magic 2 ---------------------------------------------------------------------------------------------


def test_plain_batch_gives_one_row_per_record_with_every_field_shape(tmp_path):
    rows = read_rows(write_segment(tmp_path, PLAIN_BATCH))
    assert pick(rows, "source_offset", "record_timestamp_ms", "key", "value") == [
        (100, T, b"k0", b"v0"),
        (101, T + 1, None, b"v1"),
        (102, T + 2, b"k2", None),
        (103, T + 3, b"k3", b""),
        (104, T - 5, b"k4", b"v4"),
    ]
    for row in rows:
        assert row["source_partition"] == 7
        assert (row["producer_id"], row["producer_epoch"], row["is_transactional"]) == (-1, -1, False)
        assert (row["is_control"], row["control_type"]) == (False, None)
        assert row["source_file"].endswith("__consumer_offsets-7/00000000000000000000.log")
        assert (row["source_position"], row["source_error"], row["source_note"]) == (0, None, None)


def test_transactions_show_their_producer_and_markers_commit_or_abort(tmp_path):
    path = write_segment(
        tmp_path,
        transactional_batch("00000000000000c8", "6b35 04 7635"),  # offset 200, "k5"="v5"
        control_batch("00000000000000c9", "0001"),  # offset 201, COMMIT
        transactional_batch("00000000000000ca", "6b36 04 7636"),  # offset 202, "k6"="v6"
        control_batch("00000000000000cb", "0000"),  # offset 203, ABORT
        control_batch("00000000000000cc", "0005"),  # offset 204, a KRaft type this log should not hold
    )
    rows = read_rows(path)
    assert pick(rows, "source_offset", "is_transactional", "is_control", "control_type", "key", "value") == [
        (200, True, False, None, b"k5", b"v5"),
        (201, True, True, "COMMIT", bytes.fromhex("00000001"), bytes.fromhex("000000000005")),
        (202, True, False, None, b"k6", b"v6"),
        (203, True, True, "ABORT", bytes.fromhex("00000000"), bytes.fromhex("000000000005")),
        (204, True, True, "UNKNOWN(5)", bytes.fromhex("00000005"), bytes.fromhex("000000000005")),
    ]
    assert {(row["producer_id"], row["producer_epoch"]) for row in rows} == {(4242, 3)}
    assert pick(rows, "source_position") == [(0,), (72,), (150,), (222,), (300,)]


def test_log_append_time_gives_every_record_the_batch_max_timestamp(tmp_path):
    batch = seal_v2("""
        0000000000000000    # baseOffset 0
        00000047            # batchLength 71 = 49 + 22
        00000000            # partitionLeaderEpoch
        02                  # magic 2
        CCCCCCCC            # crc
        0008                # attributes: LogAppendTime
        00000001            # lastOffsetDelta 1
        0000018bcfe56800    # baseTimestamp T (the producer's clock)
        0000018bcfe569f4    # maxTimestamp T+500: the broker's append time
        ffffffffffffffff    # producerId -1
        ffff                # producerEpoch -1
        ffffffff            # baseSequence -1
        00000002            # records count 2
        14 00 00 00 04 6b37 04 7637 00   # ts +0, offset +0, "k7"="v7"
        14 00 0e 02 04 6b38 04 7638 00   # ts +7, offset +1, "k8"="v8"
    """)
    rows = read_rows(write_segment(tmp_path, batch))
    assert pick(rows, "source_offset", "record_timestamp_ms") == [(0, T + 500), (1, T + 500)]


def test_delete_horizon_batch_timestamps_are_the_horizon_plus_delta_as_kafka_reads_them(tmp_path):
    # The cleaner writes baseTimestamp = delete horizon and rewrites the deltas against it
    # (MemoryRecordsBuilder), so base + delta is still the record's own timestamp.
    batch = seal_v2("""
        0000000000000000    # baseOffset 0
        0000004b            # batchLength 75 = 49 + 26
        00000000            # partitionLeaderEpoch
        02                  # magic 2
        CCCCCCCC            # crc
        0040                # attributes: delete horizon set
        00000001            # lastOffsetDelta 1
        0000018bd50bc400    # baseTimestamp = delete horizon T + 1 day
        0000018bcfe56801    # maxTimestamp T+1
        ffffffffffffffff    # producerId -1
        ffff                # producerEpoch -1
        ffffffff            # baseSequence -1
        00000002            # records count 2
        16 00 ffefb252 00 04 6b68 01 00       # length 11, ts -86400000, offset +0, key "kh", tombstone
        1a 00 fdefb252 02 04 6b39 04 7639 00  # length 13, ts -86399999, offset +1, "k9"="v9"
    """)
    rows = read_rows(write_segment(tmp_path, batch))
    assert pick(rows, "source_offset", "record_timestamp_ms", "value") == [(0, T, None), (1, T + 1, b"v9")]


@pytest.mark.parametrize(
    ("codec_id", "compress"),
    [
        (1, gzip.compress),
        (2, xerial_snappy),
        (2, lambda data: bytes(cramjam.snappy.compress_raw(data))),  # bare snappy block, no xerial header
        (3, lambda data: bytes(cramjam.lz4.compress(data))),
        (4, lambda data: bytes(cramjam.zstd.compress(data))),
    ],
    ids=["gzip", "snappy-xerial", "snappy-raw", "lz4-frame", "zstd"],
)
def test_each_codec_decompresses_the_records_of_a_magic_2_batch(tmp_path, codec_id, compress):
    rows = read_rows(write_segment(tmp_path, compressed_batch(codec_id, compress(TWO_RECORDS))))
    assert pick(rows, "source_offset", "record_timestamp_ms", "key", "value") == TWO_RECORDS_EXPECTED
    assert {row["source_error"] for row in rows} == {None}


def test_snappy_with_two_xerial_chunks_is_joined(tmp_path):
    half = len(TWO_RECORDS) // 2
    chunks = b"".join(
        len(block).to_bytes(4, "big") + block
        for block in (bytes(cramjam.snappy.compress_raw(part)) for part in (TWO_RECORDS[:half], TWO_RECORDS[half:]))
    )
    payload = bytes.fromhex("82534e4150505900 00000001 00000001") + chunks
    rows = read_rows(write_segment(tmp_path, compressed_batch(2, payload)))
    assert pick(rows, "source_offset", "record_timestamp_ms", "key", "value") == TWO_RECORDS_EXPECTED


def test_magic_2_lz4_frame_with_a_wrong_descriptor_checksum_is_an_error_row(tmp_path):
    # Kafka ignores the frame header checksum only for magic 0 (Lz4Compression.wrapForInput).
    rows = read_rows(
        write_segment(tmp_path, compressed_batch(3, lz4_frame_with_wrong_descriptor_checksum(TWO_RECORDS)))
    )
    assert len(rows) == 1
    assert "lz4" in rows[0]["source_error"] and "2 records (offsets 500..501" in rows[0]["source_error"]


def test_undecodable_payload_and_unknown_codec_are_one_error_row_each_and_reading_goes_on(tmp_path):
    path = write_segment(
        tmp_path,
        compressed_batch(1, b"not gzip at all"),
        compressed_batch(5, TWO_RECORDS),
        PLAIN_BATCH,
    )
    rows = read_rows(path)
    assert len(rows) == 2 + 5
    gzip_error, codec_error = rows[0]["source_error"], rows[1]["source_error"]
    assert "gzip" in gzip_error and "cannot be decompressed" in gzip_error
    assert "unknown compression codec id 5" in codec_error
    for error_row in rows[:2]:
        assert (error_row["source_offset"], error_row["key"], error_row["value"]) == (500, None, None)
    assert pick(rows[2:], "source_offset") == [(100,), (101,), (102,), (103,), (104,)]


def test_offsets_above_2_to_the_53_are_kept_exactly(tmp_path):
    batch = seal_v2("""
        0020000000000005    # baseOffset 2**53 + 5 (not representable as a double)
        00000048            # batchLength 72 = 49 + 23
        00000000            # partitionLeaderEpoch
        02                  # magic 2
        CCCCCCCC            # crc
        0000                # attributes
        00000001            # lastOffsetDelta 1
        0000018bcfe56800    # baseTimestamp T
        0000018bcfe56800    # maxTimestamp T
        ffffffffffffffff    # producerId -1
        ffff                # producerEpoch -1
        ffffffff            # baseSequence -1
        00000002            # records count 2
        1a 00 00 00 04 6b61 0a 7676767676 00  # length 13, offset +0, "ka"="vvvvv"
        10 00 00 02 04 6b62 00 00             # length 8, offset +1, "kb"="" (empty value)
    """)
    rows = read_rows(write_segment(tmp_path, batch))
    assert pick(rows, "source_offset") == [(2**53 + 5,), (2**53 + 6,)]


def test_empty_batch_left_by_compaction_gives_no_rows(tmp_path):
    empty = seal_v2("""
        0000000000000009    # baseOffset 9
        00000031            # batchLength 49: a header and no records
        00000000            # partitionLeaderEpoch
        02                  # magic 2
        CCCCCCCC            # crc
        0010                # attributes: transactional
        00000000            # lastOffsetDelta 0
        ffffffffffffffff    # baseTimestamp -1 (NO_TIMESTAMP)
        0000018bcfe56800    # maxTimestamp T
        0000000000001092    # producerId 4242
        0003                # producerEpoch 3
        00000007            # baseSequence 7
        00000000            # records count 0
    """)
    rows = read_rows(write_segment(tmp_path, empty, PLAIN_BATCH))
    assert pick(rows, "source_offset", "source_position") == [(offset, 49 + 12) for offset in range(100, 105)]


def test_records_that_do_not_fill_the_batch_are_an_error_row(tmp_path):
    batch = seal_v2("""
        0000000000000000    # baseOffset 0
        0000003c            # batchLength 60 = 49 + 11
        00000000            # partitionLeaderEpoch
        02                  # magic 2
        CCCCCCCC            # crc (valid: the batch was written this way)
        0000                # attributes
        00000001            # lastOffsetDelta 1
        0000018bcfe56800    # baseTimestamp T
        0000018bcfe56800    # maxTimestamp T
        ffffffffffffffff    # producerId -1
        ffff                # producerEpoch -1
        ffffffff            # baseSequence -1
        00000002            # records count 2, but only one record follows
        14 00 00 00 04 6b61 04 7661 00
    """)
    rows = read_rows(write_segment(tmp_path, batch))
    assert len(rows) == 1
    assert "malformed records: the records end after 1 of the 2 the header counts;" in rows[0]["source_error"]
    assert rows[0]["key"] is None


def test_a_record_whose_value_runs_past_its_length_is_an_error_row_naming_the_field(tmp_path):
    """The record's length (10) ends inside its value, whose length (2) points past it: Kafka reads a
    record from a buffer of its own length, so the value cannot be read (BufferUnderflowException)."""
    batch = seal_v2("""
        0000000000000000    # baseOffset 0
        00000039            # batchLength 57 = 49 + 8
        00000000            # partitionLeaderEpoch
        02                  # magic 2
        CCCCCCCC            # crc
        0000                # attributes
        00000000            # lastOffsetDelta 0
        0000018bcfe56800    # baseTimestamp T
        0000018bcfe56800    # maxTimestamp T
        ffffffffffffffff    # producerId -1
        ffff                # producerEpoch -1
        ffffffff            # baseSequence -1
        00000001            # records count 1
        0e                  # length 7 (zigzag 14): attributes .. the value's first byte
        00 00 00            # attributes, timestampDelta 0, offsetDelta 0
        02 6b               # key length 1, "k"
        04 76               # value length 2, but only "v" is inside the record
    """)
    rows = read_rows(write_segment(tmp_path, batch))
    assert len(rows) == 1 and "malformed records: record 0 ends inside its value;" in rows[0]["source_error"]


def test_an_internal_error_reading_records_is_a_crash_not_an_error_row(tmp_path, monkeypatch):
    """Only what the format can make wrong becomes an error row; a bug in the reader must be seen."""
    from offset_audit.inputs.segments import record_batch

    def broken(*_args):
        raise IndexError("a bug in the reader")

    monkeypatch.setattr(record_batch, "_read_records", broken)
    with pytest.raises(IndexError, match="a bug in the reader"):
        read_rows(write_segment(tmp_path, PLAIN_BATCH), fast=False)


# --- magic 0 and 1 ---------------------------------------------------------------------------------------


def test_magic_0_and_1_messages_have_no_producer_and_magic_0_no_timestamp(tmp_path):
    path = write_segment(
        tmp_path,
        legacy_v0("0000000000000000", "00000001 6b 00000001 76", "00000010"),  # offset 0, "k"="v", size 16
        legacy_v0("0000000000000001", "ffffffff 00000001 77", "0000000f"),  # offset 1, null key, "w", size 15
        legacy_v1("0000000000000002", "0000018bcfe56800", "00000001 6b ffffffff", "00000017"),  # tombstone at T
    )
    rows = read_rows(path)
    assert pick(rows, "source_offset", "record_timestamp_ms", "key", "value", "source_position") == [
        (0, None, b"k", b"v", 0),
        (1, None, None, b"w", 28),
        (2, T, b"k", None, 55),
    ]
    for row in rows:
        assert (row["producer_id"], row["producer_epoch"], row["is_transactional"], row["is_control"]) == (
            -1,
            -1,
            False,
            False,
        )


@pytest.mark.parametrize(
    ("codec_hex", "compress"),
    [("01", gzip.compress), ("02", xerial_snappy), ("03", lambda data: bytes(cramjam.lz4.compress(data)))],
    ids=["gzip", "snappy-xerial", "lz4"],
)
def test_magic_1_wrapper_inner_offsets_are_relative_to_the_wrapper_offset(tmp_path, codec_hex, compress):
    rows = read_rows(write_segment(tmp_path, v1_wrapper(codec_hex, "0000018bcfe5680c", compress(V1_INNER_SET))))
    assert pick(rows, "source_offset", "record_timestamp_ms", "key", "value", "source_position") == [
        (50, T + 10, b"k\x00", b"v\x00", 0),
        (51, T + 11, b"k\x01", b"v\x01", 0),
        (52, T + 12, b"k\x02", b"v\x02", 0),
    ]


def test_magic_1_wrapper_with_log_append_time_gives_its_timestamp_to_inner_messages(tmp_path):
    # attributes 09 = gzip + LogAppendTime; wrapper timestamp T+999
    rows = read_rows(write_segment(tmp_path, v1_wrapper("09", "0000018bcfe56be7", gzip.compress(V1_INNER_SET))))
    assert pick(rows, "source_offset", "record_timestamp_ms") == [(offset, T + 999) for offset in (50, 51, 52)]


def magic_0_wrapper(codec_hex: str, compressed: bytes) -> bytes:
    return seal_legacy(
        f"""
        000000000000000b    # offset 11: the last inner offset (magic 0 inner offsets are absolute anyway)
        LLLLLLLL            # size
        CCCCCCCC            # crc
        00                  # magic 0
        {codec_hex}         # attributes: codec
        ffffffff            # key: null
        VVVVVVVV            # value length: the compressed inner message set follows
    """,
        compressed,
    )


MAGIC_0_INNER_SET = legacy_v0("000000000000000a", "00000001 61 00000001 41", "00000010") + legacy_v0(
    "000000000000000b", "00000001 62 00000001 42", "00000010"
)  # absolute offsets 10 ("a"="A") and 11 ("b"="B")


def test_magic_0_gzip_wrapper_inner_offsets_are_absolute(tmp_path):
    rows = read_rows(write_segment(tmp_path, magic_0_wrapper("01", gzip.compress(MAGIC_0_INNER_SET))))
    assert pick(rows, "source_offset", "record_timestamp_ms", "key", "value") == [
        (10, None, b"a", b"A"),
        (11, None, b"b", b"B"),
    ]


def test_magic_0_lz4_wrapper_with_the_old_broken_descriptor_checksum_is_read(tmp_path):
    payload = lz4_frame_with_wrong_descriptor_checksum(MAGIC_0_INNER_SET)
    rows = read_rows(write_segment(tmp_path, magic_0_wrapper("03", payload)))
    assert pick(rows, "source_offset", "key", "value", "source_error") == [
        (10, b"a", b"A", None),
        (11, b"b", b"B", None),
    ]


def test_magic_1_wrapper_with_offset_0_keeps_inner_offsets_as_they_are(tmp_path):
    # Some librdkafka versions wrote wrapper offset 0; AbstractLegacyRecordBatch then uses inner offsets as is.
    wrapper = v1_wrapper("01", "0000018bcfe5680c", gzip.compress(V1_INNER_SET), offset_hex="0000000000000000")
    rows = read_rows(write_segment(tmp_path, wrapper))
    assert pick(rows, "source_offset") == [(0,), (1,), (2,)]


def test_magic_1_wrapper_offset_below_its_last_inner_offset_is_an_error_row(tmp_path):
    wrapper = v1_wrapper("01", "0000018bcfe5680c", gzip.compress(V1_INNER_SET), offset_hex="0000000000000001")
    rows = read_rows(write_segment(tmp_path, wrapper))
    assert len(rows) == 1
    assert "wrapper offset 1 is less than the last inner message offset 2" in rows[0]["source_error"]


def test_timestamp_beyond_any_date_is_kept_exactly(tmp_path):
    message = legacy_v1("0000000000000000", "7fffffffffffffff", "00000001 6b 00000001 76", "00000018")
    rows = read_rows(write_segment(tmp_path, message))
    assert pick(rows, "source_offset", "record_timestamp_ms", "value", "source_error") == [(0, 2**63 - 1, b"v", None)]
    assert rows[0]["source_note"] is None


# --- bad and truncated bytes -------------------------------------------------------------------------


def test_bad_crc_is_one_error_row_and_the_next_batch_is_still_read(tmp_path):
    corrupt = bytearray(PLAIN_BATCH)
    corrupt[70] ^= 0xFF  # a byte of the first record's value (records start at byte 61)
    next_batch = transactional_batch("00000000000000c8", "6b35 04 7635")
    path = write_segment(tmp_path, bytes(corrupt), next_batch)
    rows = read_rows(path)
    assert len(rows) == 2
    error = rows[0]["source_error"]
    stored = int.from_bytes(PLAIN_BATCH[17:21], "big")
    computed = crc32c_reference(bytes(corrupt[21:]))
    assert f"stored crc = {stored}, computed crc = {computed}" in error
    assert f"byte 0 of {path}" in error and "5 records (offsets 100..104" in error
    assert (rows[0]["source_offset"], rows[0]["source_position"], rows[0]["key"], rows[0]["value"]) == (
        100,
        0,
        None,
        None,
    )
    assert rows[0]["record_timestamp_ms"] is None
    assert pick(rows[1:], "source_offset", "key", "source_position", "source_error") == [
        (200, b"k5", len(PLAIN_BATCH), None)
    ]


def test_bad_crc_of_a_legacy_message_is_an_error_row(tmp_path):
    good = legacy_v0("0000000000000000", "00000001 6b 00000001 76", "00000010")
    corrupt = good[:-1] + b"X"  # the value byte
    rows = read_rows(write_segment(tmp_path, corrupt, good))
    assert "message is corrupt (stored crc = " in rows[0]["source_error"] and rows[0]["value"] is None
    assert pick(rows[1:], "source_offset", "value") == [(0, b"v")]


def test_truncated_final_batch_keeps_what_came_before_and_ends_with_one_error_row(tmp_path):
    cut = PLAIN_BATCH[:40]
    path = write_segment(tmp_path, PLAIN_BATCH, cut)
    rows = read_rows(path)
    assert pick(rows[:-1], "source_offset") == [(100,), (101,), (102,), (103,), (104,)]
    last = rows[-1]
    assert (last["source_offset"], last["source_position"], last["key"]) == (100, len(PLAIN_BATCH), None)
    assert f"byte {len(PLAIN_BATCH)} of {path}" in last["source_error"]
    assert "promises 114 bytes, the file has 40 left" in last["source_error"]


def test_a_few_stray_bytes_at_the_end_are_a_truncated_header(tmp_path):
    rows = read_rows(write_segment(tmp_path, PLAIN_BATCH, b"\x00\x00\x00\x00\x00"))
    assert rows[-1]["source_offset"] is None
    assert "needs 12 bytes" in rows[-1]["source_error"] and "has 5 left" in rows[-1]["source_error"]


def test_file_ending_between_the_length_and_the_magic_byte_is_truncated(tmp_path):
    rows = read_rows(write_segment(tmp_path, PLAIN_BATCH, PLAIN_BATCH[:14]))
    assert (rows[-1]["source_offset"], rows[-1]["source_position"]) == (100, len(PLAIN_BATCH))
    assert "promises 114 bytes, the file has 14 left" in rows[-1]["source_error"]


def test_unknown_magic_is_an_error_row_and_the_next_batch_is_read(tmp_path):
    magic_3 = bytearray(PLAIN_BATCH)
    magic_3[16] = 3
    rows = read_rows(write_segment(tmp_path, bytes(magic_3), PLAIN_BATCH))
    assert "unknown magic 3" in rows[0]["source_error"]
    assert pick(rows[1:], "source_offset") == [(100,), (101,), (102,), (103,), (104,)]


def test_nonsensical_batch_length_is_an_error_row_and_reading_resumes_at_the_next_batch(tmp_path):
    nonsense = bytes.fromhex("0000000000000069 fffffffe") + bytes(60)  # offset 105, batchLength -2
    after = transactional_batch("00000000000000c8", "6b35 04 7635")  # offset 200
    rows = read_rows(write_segment(tmp_path, PLAIN_BATCH, nonsense, after))
    assert len(rows) == 7
    skipped = rows[5]
    assert "batch length -2 is below the minimum" in skipped["source_error"]
    assert (skipped["source_offset"], skipped["source_position"], skipped["skipped_bytes"]) == (105, 114, 72)
    assert f"bytes 114..186 of {rows[0]['source_file']} skipped (72 bytes)" in skipped["source_error"]
    assert pick(rows[6:], "source_offset", "key", "source_position") == [(200, b"k5", 186)]


def test_a_length_that_is_wrong_but_inside_the_file_does_not_hide_the_batches_after_it(tmp_path):
    """The CRC does not cover the length: jumping by a damaged one would skip good batches silently."""
    later = [transactional_batch(f"{offset:016x}", "6b35 04 7635") for offset in (200, 201, 202)]
    damaged = bytearray(PLAIN_BATCH)
    damaged[8:12] = (102 + 2 * len(later[0])).to_bytes(4, "big")  # claims to run over two more batches
    rows = read_rows(write_segment(tmp_path, bytes(damaged), *later))
    assert rows[0]["skipped_bytes"] == len(PLAIN_BATCH) and "cannot be trusted" in rows[0]["source_error"]
    assert pick(rows[1:], "source_offset") == [(200,), (201,), (202,)]


def test_garbage_between_batches_is_one_skipped_stretch_of_its_exact_length(tmp_path):
    import random

    garbage = random.Random(4).randbytes(10_000)
    after = transactional_batch("00000000000000c8", "6b35 04 7635")
    rows = read_rows(write_segment(tmp_path, PLAIN_BATCH, garbage, after))
    assert [r["skipped_bytes"] for r in rows if r["source_error"]] == [10_000]
    assert pick([r for r in rows if not r["source_error"]], "source_offset")[-1] == (200,)


def test_a_batch_larger_than_the_bound_is_never_read(tmp_path):
    after = transactional_batch("00000000000000c8", "6b35 04 7635")
    rows = read_rows(write_segment(tmp_path, PLAIN_BATCH, after), max_batch_bytes=100)
    assert "claims 102 bytes, beyond the bound of 100" in rows[0]["source_error"]
    assert rows[0]["skipped_bytes"] == len(PLAIN_BATCH)
    assert pick(rows[1:], "source_offset") == [(200,)]


def test_magic_2_batch_length_below_its_header_size_is_nonsense(tmp_path):
    short = bytes.fromhex("0000000000000001 00000014 00000000 02") + bytes(40)  # batchLength 20 < 49
    rows = read_rows(write_segment(tmp_path, short))
    assert "batch length 20 is below the minimum 49 for magic 2" in rows[0]["source_error"]


def test_zero_filled_tail_of_a_preallocated_segment_is_named_as_such(tmp_path):
    rows = read_rows(write_segment(tmp_path, PLAIN_BATCH, bytes(4096)))
    assert len(rows) == 6 and "preallocated" in rows[-1]["source_error"]
    assert rows[-1]["skipped_bytes"] == 4096 and "to the end of the file" in rows[-1]["source_error"]


def test_a_batch_after_a_run_of_zeros_is_found_and_the_run_is_one_row(tmp_path):
    """Zeros are crossed without screening each position; a batch right after them, whose header starts
    with zero bytes of its own (an offset below 2^56), is still where reading resumes."""
    rows = read_rows(write_segment(tmp_path, PLAIN_BATCH, bytes(3 << 20), PLAIN_BATCH))
    skipped = [r for r in rows if r["source_error"]]
    assert len(rows) == 11 and len(skipped) == 1 and skipped[0]["skipped_bytes"] == 3 << 20
    assert [r["source_offset"] for r in rows if not r["source_error"]] == [100, 101, 102, 103, 104] * 2


@pytest.mark.parametrize("zeros", [1, 11, 12, 63, 64, 65, 4097, (16 << 20) + 3])
def test_a_run_of_zeros_of_any_length_is_one_skipped_row_and_the_batch_after_it_is_read(tmp_path, zeros):
    """Zeros are tested a machine word at a time (`framing._past_zeros`): runs shorter than the probe,
    not a multiple of 8 and longer than one chunk all end exactly where the next batch starts."""
    rows = read_rows(write_segment(tmp_path, PLAIN_BATCH, bytes(zeros), PLAIN_BATCH))
    skipped = [r for r in rows if r["source_error"]]
    assert [r["skipped_bytes"] for r in skipped] == [zeros]
    assert [r["source_offset"] for r in rows if not r["source_error"]] == [100, 101, 102, 103, 104] * 2


def test_a_hole_of_a_sparse_segment_is_stepped_over_unread(tmp_path):
    """A preallocated segment's tail is a hole (RandomAccessFile.setLength): 64 GiB of it cost no read,
    and a batch written after it is still found. The file's stored size counts no hole."""
    path = write_segment(tmp_path, PLAIN_BATCH)
    hole = 64 << 30
    os.truncate(path, len(PLAIN_BATCH) + hole)
    if os.stat(path).st_blocks * 512 >= hole:
        pytest.skip(f"the filesystem of {tmp_path} keeps no sparse files")
    with path.open("ab") as handle:
        handle.write(PLAIN_BATCH)
    rows = read_rows(path)
    assert [r["skipped_bytes"] for r in rows if r["source_error"]] == [hole]
    assert [r["source_offset"] for r in rows if not r["source_error"]] == [100, 101, 102, 103, 104] * 2
    assert LOCAL.stored_size(str(path)) < 1 << 20 < LOCAL.size(str(path))


def test_empty_log_file_yields_nothing(tmp_path):
    assert list(read_segment(str(write_segment(tmp_path)))) == []


# --- partition and bounded reading ---------------------------------------------------------------------


def test_partition_comes_from_the_log_folder_unless_given(tmp_path):
    path = write_segment(tmp_path, PLAIN_BATCH, folder="__consumer_offsets-17")
    assert {row["source_partition"] for row in read_rows(path)} == {17}
    assert {row["source_partition"] for row in read_rows(path, partition=3)} == {3}
    elsewhere = write_segment(tmp_path, PLAIN_BATCH, folder="copied-segments")
    assert {row["source_partition"] for row in read_rows(elsewhere)} == {None}


@pytest.mark.parametrize(
    ("path", "partition"),
    [
        ("/data/kafka/__consumer_offsets-17/00000000000000000000.log", 17),
        ("__consumer_offsets-0/00000000000000001234.log", 0),
        ("/d/__consumer_offsets-49.8a0f6c2a3b6d4e1f9e2b5c7d8e9f0a1b-delete/00000000000000000000.log", 49),
        ("/d/__consumer_offsets-3-future/00000000000000000000.log", None),
        ("/d/orders-3/00000000000000000000.log", None),
        ("/d/00000000000000000000.log", None),
    ],
)
def test_partition_from_path(path, partition):
    assert partition_from_path(path) == partition


def test_many_batches_come_out_in_arrow_batches_of_at_most_batch_rows(tmp_path):
    template = transactional_batch("0000000000000000", "6b35 04 7635")
    batches = [(offset).to_bytes(8, "big") + template[8:] for offset in range(9)]  # baseOffset is outside the CRC
    arrow_batches = list(read_segment(str(write_segment(tmp_path, *batches)), batch_rows=2))
    assert [batch.num_rows for batch in arrow_batches] == [2, 2, 2, 2, 1]
    offsets = [offset for batch in arrow_batches for offset in batch.column("source_offset").to_pylist()]
    assert offsets == list(range(9))


def test_one_kafka_batch_larger_than_batch_rows_is_split(tmp_path):
    arrow_batches = list(read_segment(str(write_segment(tmp_path, PLAIN_BATCH)), batch_rows=2))
    assert [batch.num_rows for batch in arrow_batches] == [2, 2, 1]


def test_batch_rows_below_one_is_refused(tmp_path):
    with pytest.raises(ValueError, match="batch_rows"):
        list(read_segment(str(write_segment(tmp_path, PLAIN_BATCH)), batch_rows=0))


def test_only_control_reads_just_the_markers(tmp_path):
    """The first pass of transaction resolution skips data batches by their header's control bit."""
    from offset_audit.inputs.segments.writer import marker_batch, record_batch

    folder = tmp_path / "__consumer_offsets-4"
    folder.mkdir()
    path = folder / "00000000000000000000.log"
    path.write_bytes(
        record_batch(0, [(b"\x00\x01k", b"v", 1_000)], producer_id=5, attributes=0x10)
        + marker_batch(1, 5, True, 2_000)
        + record_batch(2, [(b"\x00\x01k", None, 3_000)])
    )
    rows = [r for b in read_segment(str(path), only_control=True) for r in b.to_pylist()]
    assert [(r["source_offset"], r["is_control"], r["control_type"], r["producer_id"]) for r in rows] == [
        (1, True, "COMMIT", 5)
    ]
    assert len([r for b in read_segment(str(path)) for r in b.to_pylist()]) == 3
