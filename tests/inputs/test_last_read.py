"""What identifies the last record an incremental run read (offset_audit.inputs.last_read): batch headers
laid out by hand, field by field, for magic 2, 1 and 0; the digest's exact bytes; and the batch found again,
or not, in segment folders as a later copy of the log holds them."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest
from segment_files import batch

from offset_audit.inputs.formats import SEGMENTS
from offset_audit.inputs.last_read import (
    BatchHeader,
    LastRead,
    LastRow,
    batch_read,
    last_read_of,
    missing_batch,
    parse_header,
    record_digest,
)
from offset_audit.inputs.log_files import LogFile
from offset_audit.inputs.segments.crc import crc32c


def hex_fields(text: str) -> bytes:
    """Hex laid out one field per line: '#' starts a comment, whitespace is ignored."""
    return bytes.fromhex("".join("".join(re.sub(r"#.*", "", line).split()) for line in text.splitlines()))


MAGIC_2_HEADER = hex_fields(
    """
    00 00 00 00 00 00 00 64   # baseOffset 100
    00 00 00 4a               # batchLength 74 (after these 12 bytes)
    00 00 00 07               # partitionLeaderEpoch 7
    02                        # magic 2
    de ad be ef               # crc (the CRC-32C of the attributes on; not checked here)
    00 00                     # attributes
    00 00 00 02               # lastOffsetDelta 2: offsets 100-102
    """
)
MAGIC_1_HEADER = hex_fields(
    """
    00 00 00 00 00 00 00 05   # offset 5 (a compressed wrapper's: its last inner record's)
    00 00 00 22               # message size 34
    0a 0b 0c 0d               # crc (CRC-32 of the magic byte on)
    01                        # magic 1
    00                        # attributes
    """
)
MAGIC_0_HEADER = hex_fields(
    """
    00 00 00 00 00 00 00 09   # offset 9
    00 00 00 0e               # message size 14, the least a magic 0 message has
    ff ff ff ff               # crc
    00                        # magic 0
    """
)


def test_a_magic_2_header_gives_its_base_and_last_offset_crc_and_leader_epoch():
    assert parse_header(MAGIC_2_HEADER) == BatchHeader(100, 102, 0xDEADBEEF, 7, size=86)


@pytest.mark.parametrize(
    ("head", "expected"),
    [
        (MAGIC_1_HEADER, BatchHeader(5, 5, 0x0A0B0C0D, -1, size=46)),
        (MAGIC_0_HEADER, BatchHeader(9, 9, 0xFFFFFFFF, -1, size=26)),
    ],
    ids=["magic 1", "magic 0"],
)
def test_a_legacy_message_is_its_offset_and_crc_without_a_leader_epoch(head, expected):
    assert parse_header(head) == expected


@pytest.mark.parametrize(
    "head",
    [
        MAGIC_2_HEADER[:20],  # cut inside the magic 2 header
        MAGIC_2_HEADER[:8] + bytes.fromhex("00000030") + MAGIC_2_HEADER[12:],  # length 48, below magic 2's 49
        MAGIC_2_HEADER[:16] + b"\x03" + MAGIC_2_HEADER[17:],  # magic 3
        MAGIC_0_HEADER[:8] + bytes.fromhex("0000000d") + MAGIC_0_HEADER[12:],  # size 13, below any message's
    ],
    ids=["short", "magic 2 too small", "magic 3", "magic 0 too small"],
)
def test_bytes_that_cannot_start_a_batch_give_no_header(head):
    assert parse_header(head) is None


def test_the_digest_covers_timestamp_key_and_value_each_told_from_null():
    expected = hashlib.sha256(
        bytes.fromhex("01 0000018bcfe56800")  # a timestamp, 1700000000000
        + bytes.fromhex("00000001") + b"k"  # key: length 1, b"k"
        + bytes.fromhex("ffffffff")  # value: null
    ).hexdigest()  # fmt: skip
    assert record_digest(1_700_000_000_000, b"k", None) == expected
    assert record_digest(None, None, None) == hashlib.sha256(bytes.fromhex("00 ffffffff ffffffff")).hexdigest()
    assert len({record_digest(1, b"", None), record_digest(1, None, b""), record_digest(1, None, None)}) == 3


# Segment folders -------------------------------------------------------------------------------------

T = 1_700_000_000_000


def record(offset: int, ts_shift: int = 0) -> tuple[bytes, bytes, int]:
    return (f"k{offset % 3}".encode(), f"v{offset}".encode(), T + offset + ts_shift)


def write_folder(folder: Path, segments: dict[int, list[bytes]]) -> tuple[LogFile, ...]:
    """Segment files named by base offset, each the batches given, and their LogFiles."""
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.log"):
        old.unlink()
    for base, batches in segments.items():
        (folder / f"{base:020d}.log").write_bytes(b"".join(batches))
    return units(folder)


def units(*folders: Path) -> tuple[LogFile, ...]:
    return tuple(
        LogFile(str(path), SEGMENTS.name, 0, path.stat().st_size)
        for folder in folders
        for path in sorted(folder.glob("*.log"))
    )


def one(offset: int, ts_shift: int = 0, epoch: int = 0) -> bytes:
    from offset_audit.inputs.segments.writer import record_batch

    return record_batch(offset, [record(offset, ts_shift)], leader_epoch=epoch)


def read_at(files: tuple[LogFile, ...], name: str, position: int) -> BatchHeader:
    unit = next(f for f in files if f.path.endswith(name))
    header = batch_read(unit, position)
    assert header is not None
    return header


def test_the_batch_read_is_its_header_and_where_it_sits(tmp_path):
    three = batch(10, [record(10), record(11), record(12)])
    files = write_folder(tmp_path / "p", {0: [one(0), one(1)], 10: [three]})
    header = read_at(files, "00000000000000000010.log", 0)
    assert (header.base_offset, header.last_offset, header.leader_epoch) == (10, 12, 0)
    assert header.crc == crc32c(three[21:]) and header.size == len(three)
    assert (header.segment, header.position) == ("00000000000000000010.log", 0)
    second = read_at(files, "00000000000000000000.log", len(one(0)))
    assert (second.base_offset, second.position) == (1, len(one(0)))


def test_the_batch_read_last_is_found_where_it_was_once_the_log_grew(tmp_path):
    folder = tmp_path / "p"
    files = write_folder(folder, {0: [one(0), one(1), one(2)]})
    last = read_at(files, "00000000000000000000.log", 2 * len(one(0)))
    grown = write_folder(folder, {0: [one(0), one(1), one(2), one(3)], 4: [one(4)]})
    assert missing_batch(grown, 2, last) is None


def test_a_batch_the_cleaner_kept_whole_is_found_in_the_segment_it_was_copied_into(tmp_path):
    folder = tmp_path / "p"
    files = write_folder(folder, {0: [one(0), one(1)], 2: [one(2), one(3), one(4)]})
    last = read_at(files, "00000000000000000002.log", len(one(2)))  # offset 3
    # The cleaner removed 0-2 (later records of their keys replace them) and copied 3 and 4 as they were,
    # into a segment named after the first one it replaced; the run's hint points at another file now.
    cleaned = write_folder(folder, {0: [one(3), one(4)], 5: [one(5)]})
    assert missing_batch(cleaned, 3, last) is None


def test_another_batch_at_the_offset_read_last_is_another_log(tmp_path):
    folder = tmp_path / "p"
    last = read_at(write_folder(folder, {0: [one(0), one(1)]}), "00000000000000000000.log", len(one(0)))
    replaced = write_folder(folder, {0: [one(0, ts_shift=5), one(1, ts_shift=5), one(2, ts_shift=5)]})
    why = missing_batch(replaced, 1, last)
    assert why.startswith(f"last batch read (offset 1, CRC {last.crc:08x}, leader epoch 0) is another batch now"), why
    # another leader's batch with the same records: its epoch differs, and it is outside the CRC
    other_leader = write_folder(folder, {0: [one(0), one(1, epoch=3)]})
    assert "leader epoch 3" in missing_batch(other_leader, 1, last)


def test_a_batch_the_cleaner_rewrote_with_fewer_records_is_not_taken_for_the_one_read(tmp_path):
    """Kafka's cleaner keeps a magic 2 batch's base and last offset when it removes some of its records,
    and its CRC changes: the check is strict, and such a run reads everything (docs/incremental.md)."""
    from offset_audit.inputs.segments.writer import record_batch

    folder = tmp_path / "p"
    whole = record_batch(0, [record(0), record(1), record(2)])
    last = read_at(write_folder(folder, {0: [whole]}), "00000000000000000000.log", 0)
    kept = bytearray(record_batch(0, [record(0), record(2)]))
    kept[23:27] = (2).to_bytes(4, "big")  # lastOffsetDelta kept at 2, as the cleaner keeps it
    kept[17:21] = crc32c(bytes(kept[21:])).to_bytes(4, "big")
    rewritten = write_folder(folder, {0: [bytes(kept)]})
    assert "is another batch now (offsets 0-2" in missing_batch(rewritten, 2, last)


def test_a_log_that_ends_below_the_batch_read_last_went_backwards(tmp_path):
    folder = tmp_path / "p"
    last = read_at(write_folder(folder, {0: [one(0), one(1)], 2: [one(2)]}), "00000000000000000002.log", 0)
    shorter = write_folder(folder, {0: [one(0), one(1)]})
    assert missing_batch(shorter, 2, last).startswith("offsets went backwards (its records end at 2, below")


def test_a_batch_gone_from_the_middle_of_the_log_is_not_in_its_segments(tmp_path):
    folder = tmp_path / "p"
    last = read_at(write_folder(folder, {0: [one(0), one(1), one(2)]}), "00000000000000000000.log", len(one(0)))
    gone = write_folder(folder, {0: [one(0), one(2), one(3)]})
    assert missing_batch(gone, 1, last) == (
        f"last batch read (offset 1, CRC {last.crc:08x}, leader epoch 0) is not in its segments any more"
    )


def test_one_copy_holding_the_batch_is_enough_where_another_is_behind(tmp_path):
    leader = tmp_path / "broker-1" / "__consumer_offsets-0"
    follower = tmp_path / "broker-2" / "__consumer_offsets-0"
    write_folder(follower, {0: [one(0)]})
    files = write_folder(leader, {0: [one(0), one(1), one(2)]})
    last = read_at(files, "00000000000000000000.log", 2 * len(one(0)))
    assert missing_batch(units(leader, follower), 2, last) is None


def test_the_next_run_keeps_the_batch_of_a_segment_input_and_the_digest_of_another():
    row = LastRow(None, None, "ab" * 32)
    assert last_read_of(row, None) == LastRead(record_digest="ab" * 32)
    assert last_read_of(row, ()) is None  # the file is gone: nothing to find again
