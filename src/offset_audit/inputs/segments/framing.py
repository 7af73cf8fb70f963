"""A segment file cut into its batches, one header at a time, and found again after bytes that are none.

Every entry in a `.log` file, whatever its magic, starts with the same 12 bytes of log overhead, int64
offset and int32 size of what follows, and has its magic byte at byte 16 (FileLogInputStream.nextBatch,
Records.LOG_OVERHEAD, HEADER_SIZE_UP_TO_MAGIC). That is enough to find the next batch without decoding
this one, so the file is walked header by header and only one batch is ever in memory.

A batch's CRC covers everything after its crc field but not its length, so a length is trusted only
when the batch verifies, or when a batch that verifies starts where the length says this one ends (a
batch whose records are damaged). Otherwise the length may be what is damaged, and jumping by it would
skip good batches silently or land mid-batch. Reading then resynchronises: it scans forward for the
next position where a header is plausible (magic 0-2, a size within the bound and the file, attribute
bits Kafka defines, for magic 2 a record count its offset delta allows, and an offset in the segment's
range when its file name gives it) and the CRC verifies (a false match is about one in 2^32), and
reports the bytes in between as skipped, with their start, end and length. Offsets of good batches are
not used as bounds: the offset field is outside the CRC too, so one damaged offset must not hide the
batches after it.

Where Kafka quietly stops (a partial batch at the end of the file, which the broker truncates on
recovery), this reader says so: a segment copied while the broker was writing, or a preallocated one,
is exactly what an auditor wants to hear about.
"""

from __future__ import annotations

import errno
import io
import os
import re
import struct
from collections.abc import Generator
from dataclasses import dataclass
from typing import BinaryIO

import numpy as np

from offset_audit.inputs.segments.crc import crc32, crc32c

LOG_OVERHEAD = 12  # int64 offset + int32 size, before every batch or legacy message
HEADER_SIZE_UP_TO_MAGIC = 17
MAGIC_OFFSET = 16

# The smallest size (after the log overhead) each magic can have: Kafka's RECORD_BATCH_OVERHEAD minus
# the log overhead for magic 2, LegacyRecord.RECORD_OVERHEAD_V0/V1 for magic 0/1. FileLogInputStream
# rejects anything below the v0 minimum before it has even looked at the magic.
MIN_SIZE_BY_MAGIC = {0: 14, 1: 22, 2: 49}
MIN_SIZE_ANY_MAGIC = 14
# The bound on one batch (read as it is, or inflated), decode.max_batch_mib: 64 times the broker's
# default message.max.bytes, far above what a coordinator writes.
DEFAULT_MAX_BATCH_BYTES = 64 << 20
# A segment's offsets are its base offset plus an int (LogSegment: relative offsets in the index).
_SEGMENT_SPAN = 2**31
_SEGMENT_NAME = re.compile(r"(\d{1,20})\.log")
_SCAN_WINDOW = 1 << 20
# Zero runs: the bytes looked at before a run is taken for one, and the chunk it is then read in.
_ZERO_PROBE = 64
_ZERO_CHUNK = 16 << 20
# Bytes screened at a candidate position: through a magic 2 header's record count. Near the end of the
# file fewer are there; they are padded with zeros, which only a legacy message (26 bytes at least, its
# fields all in the first 18) can be screened on, as a magic 2 batch needs 61 bytes to fit at all.
_SCREENED = 61
_PAD = np.zeros(_SCREENED - HEADER_SIZE_UP_TO_MAGIC, np.uint8)

_LOG_OVERHEAD_STRUCT = struct.Struct(">qi")
_CRC = struct.Struct(">I")
_MIN_SIZES = np.array([MIN_SIZE_BY_MAGIC[m] for m in (0, 1, 2)], np.int64)


@dataclass(slots=True)
class Frame:
    """One batch (magic 2) or one top-level message (magic 0/1) exactly as it sits in the file.

    `data` includes the 12-byte log overhead, so the field positions Kafka's classes name apply to it as is.
    `verified`: its CRC was checked here and matched (the decoder need not check it again).
    Not frozen: a frozen dataclass costs five times as much to build, and there is one per batch.
    """

    position: int
    base_offset: int
    magic: int
    data: bytes
    verified: bool = False


@dataclass(frozen=True, slots=True)
class Skipped:
    """Bytes `start` to `end` (exclusive) that are no batch to be trusted, and why."""

    start: int
    end: int
    base_offset: int | None
    reason: str

    @property
    def length(self) -> int:
        return self.end - self.start


def crc_matches(data: bytes, magic: int) -> bool | None:
    """Whether the stored CRC covers the frame's bytes: CRC-32C from the attributes on (magic 2), zlib
    CRC-32 from the magic byte on (magic 0/1); None for a magic no CRC is known for."""
    if magic == 2:
        return crc32c(data[21:]) == _CRC.unpack_from(data, 17)[0]
    if magic in (0, 1):
        return crc32(data[MAGIC_OFFSET:]) == _CRC.unpack_from(data, 12)[0]
    return None


def segment_base_offset(path: str) -> int | None:
    """The base offset a segment's file name gives (00000000000000001234.log), None for other names."""
    match = _SEGMENT_NAME.fullmatch(os.path.basename(path))
    base = int(match.group(1)) if match else None
    return base if base is not None and base < 2**63 - _SEGMENT_SPAN else None


class _Bounds:
    """Where a batch's offset may lie: within the segment's span, from its file name (any offset from 0
    when the name does not tell)."""

    def __init__(self, base: int | None) -> None:
        self.lower = base if base is not None else 0
        self.upper = base + _SEGMENT_SPAN if base is not None else 2**63


def iter_frames(
    segment_file: BinaryIO,
    size: int,
    path: str,
    max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES,
    start: int = 0,
) -> Generator[Frame | Skipped, None, None]:
    """The batches of a file of `size` bytes, read from `segment_file`, and a Skipped for each stretch of
    bytes that holds none (reading goes on after it).

    Plain reads rather than an mmap: a mapped file's pages count as the process's memory as they are
    touched, so reading a 1 GiB segment would look like using 1 GiB. Here only one batch is in memory,
    and no batch larger than `max_batch_bytes` is ever read. `start`: the byte to begin at, a batch
    boundary (the fast path hands over the batches it does not take).
    """
    read = segment_file.read
    bounds = _Bounds(segment_base_offset(path))
    position = start
    segment_file.seek(start)
    while position < size:
        frame, problem = _frame_at(read, position, size, path, max_batch_bytes)
        if frame is not None:
            if crc_matches(frame.data, frame.magic):
                frame.verified = True
                yield frame
                position += len(frame.data)
                continue
            # Its length is not covered by any check: it holds only if the first batch that verifies after
            # this one starts exactly where it says this one ends (its records are what is damaged).
            end = position + len(frame.data)
            resume = _next_verified_batch(segment_file, position + 1, size, bounds, max_batch_bytes)
            if resume == end:
                yield frame  # the decoder says what is wrong with it
                segment_file.seek(end)
                position = end
                continue
            after = (
                f"the next batch that verifies starts at byte {resume}"
                if resume < size
                else "no batch after it verifies"
            )
            problem = (
                f"the batch at byte {position} of {path} fails its check and {after}, not one at byte {end} where "
                "its length says it ends: its length cannot be trusted"
            )
        else:
            resume = _next_verified_batch(segment_file, position + 1, size, bounds, max_batch_bytes)
        base_offset = _offset_at(segment_file, position, size)
        yield Skipped(position, resume, base_offset, _skipped_reason(problem, position, resume, size, path))
        segment_file.seek(resume)
        position = resume


def _frame_at(read, position: int, size: int, path: str, max_batch_bytes: int) -> tuple[Frame | None, str]:
    """The frame at the file's read position, or why there is none (its header cannot be a batch)."""
    available = size - position
    if available < LOG_OVERHEAD:
        return None, (
            f"truncated batch at byte {position} of {path}: a batch header needs {LOG_OVERHEAD} bytes for its "
            f"offset and length, the file has {available} left"
        )
    head = read(HEADER_SIZE_UP_TO_MAGIC if available >= HEADER_SIZE_UP_TO_MAGIC else LOG_OVERHEAD)
    base_offset, batch_size = _LOG_OVERHEAD_STRUCT.unpack_from(head)
    if batch_size < MIN_SIZE_ANY_MAGIC:
        return None, _nonsense_size(position, path, base_offset, batch_size, None)
    if available < HEADER_SIZE_UP_TO_MAGIC:
        return None, _truncated(position, path, LOG_OVERHEAD + batch_size, available)
    magic = head[MAGIC_OFFSET]
    if magic > 127:
        magic -= 256
    if batch_size < MIN_SIZE_BY_MAGIC.get(magic, MIN_SIZE_ANY_MAGIC):
        return None, _nonsense_size(position, path, base_offset, batch_size, magic)
    total = LOG_OVERHEAD + batch_size
    if total > available:
        return None, _truncated(position, path, total, available)
    if batch_size > max_batch_bytes:
        return None, (
            f"the batch at byte {position} of {path} claims {batch_size:,} bytes, beyond the bound of "
            f"{max_batch_bytes:,} (decode.max_batch_mib; raise it if a broker really wrote such a batch)"
        )
    data = head + read(total - HEADER_SIZE_UP_TO_MAGIC)
    if len(data) < total:  # the file shrank while being read
        return None, _truncated(position, path, total, len(data))
    return Frame(position, base_offset, magic, data), ""


def _verified_batch_at(segment_file: BinaryIO, position: int, size: int, bounds: _Bounds, max_bytes: int) -> bool:
    """Whether a plausible batch whose CRC verifies starts at `position`."""
    if size - position < HEADER_SIZE_UP_TO_MAGIC:
        return False
    segment_file.seek(position)
    head = segment_file.read(_SCREENED)
    screened = np.concatenate([np.frombuffer(head, np.uint8), _PAD])
    if not _plausible(screened, np.zeros(1, np.int64), position, size, bounds, max_bytes)[0]:
        return False
    total = LOG_OVERHEAD + _LOG_OVERHEAD_STRUCT.unpack_from(head)[1]
    # a small (magic 0 or 1) batch can end inside the screened bytes
    data = head[:total] if total <= len(head) else head + segment_file.read(total - len(head))
    return bool(crc_matches(data, head[MAGIC_OFFSET]))


def _plausible(
    buf: np.ndarray, at: np.ndarray, buf_start: int, size: int, bounds: _Bounds, max_bytes: int
) -> np.ndarray:
    """Which positions `at` of `buf` (which starts at file position `buf_start`, and holds _SCREENED bytes
    from each) hold a header Kafka could have written: what a batch must be, before its CRC is asked.

    Magic 2 (DefaultRecordBatch): attribute bits above the delete-horizon flag (0x40) unset, a codec id of
    0-4, a last offset delta and a record count that agree (a compacted batch keeps fewer records than
    its offsets span, never more). Magic 0/1 (LegacyRecord): attribute bits above the timestamp type
    unset, a codec id of 0-3.
    """
    magic = buf[at + MAGIC_OFFSET].astype(np.int64)
    ok = magic <= 2
    magic = np.where(ok, magic, 0)
    sizes = _big_endian(buf, at + 8, 4)
    ok &= (sizes >= _MIN_SIZES[magic]) & (sizes <= max_bytes) & (buf_start + at + LOG_OVERHEAD + sizes <= size)
    offsets = _big_endian(buf, at, 8)
    ok &= (offsets >= bounds.lower) & (offsets < bounds.upper)
    v2 = magic == 2
    attributes = _big_endian(buf, at + 21, 2)
    ok &= ~v2 | (((attributes & ~0x7F) == 0) & ((attributes & 0x07) <= 4))
    last_delta = _big_endian(buf, at + 23, 4)
    count = _big_endian(buf, at + 57, 4)
    ok &= ~v2 | ((last_delta >= 0) & (count >= 0) & (count <= last_delta + 1))
    legacy_attributes = buf[at + MAGIC_OFFSET + 1].astype(np.int64)
    ok &= v2 | (((legacy_attributes & ~0x0F) == 0) & ((legacy_attributes & 0x07) <= 3))
    return ok


def _next_verified_batch(segment_file: BinaryIO, start: int, size: int, bounds: _Bounds, max_bytes: int) -> int:
    """The first position from `start` on where a verified batch starts, or `size` when none does.

    Headers are screened a window at a time with numpy (magic byte, size, offset range), so only the
    rare plausible positions cost a CRC; a run of zeros or garbage is crossed at memory speed.
    """
    window_start = start
    while size - window_start >= HEADER_SIZE_UP_TO_MAGIC:
        window_start = _past_zeros(segment_file, window_start, size)
        segment_file.seek(window_start)
        buf = np.frombuffer(segment_file.read(_SCAN_WINDOW + HEADER_SIZE_UP_TO_MAGIC - 1), np.uint8)
        positions = len(buf) - HEADER_SIZE_UP_TO_MAGIC + 1
        if positions <= 0:
            break
        buf = np.concatenate([buf, _PAD])
        # A batch's size (bytes 8-11) is at least 14, so a position whose size bytes are all zero is no
        # candidate: a run of zeros (a preallocated segment's unused tail) yields none and costs only these
        # few byte-wide passes, not a screening of every position in it.
        size_bytes = buf[8 : 8 + positions] | buf[9 : 9 + positions] | buf[10 : 10 + positions]
        size_bytes |= buf[11 : 11 + positions]
        candidates = np.flatnonzero((buf[MAGIC_OFFSET : MAGIC_OFFSET + positions] <= 2) & (size_bytes != 0))
        if len(candidates):
            plausible = _plausible(buf, candidates, window_start, size, bounds, max_bytes)
            for candidate in candidates[plausible].tolist():
                if _verified_batch_at(segment_file, window_start + candidate, size, bounds, max_bytes):
                    return window_start + candidate
        window_start += positions
    return size


def _past_zeros(segment_file: BinaryIO, start: int, size: int) -> int:
    """The first position from `start` on where a batch can begin, past a run of zero bytes.

    A batch's size field (bytes 8-11) is at least 14, so no batch starts more than 11 bytes before the
    first non-zero byte. A preallocated segment's unused tail (file.preallocate) is such a run, up to
    log.segment.bytes long: its holes are stepped over without reading them (SEEK_DATA, where the file
    is a local one), and zeros that are on disk (a copy that filled the holes) are read in large chunks
    and tested a machine word at a time, not screened a byte position at a time.
    """
    segment_file.seek(start)
    if any(segment_file.read(_ZERO_PROBE)):
        return start
    position = start
    while position < size:
        position = _next_data(segment_file, position, size)
        segment_file.seek(position)
        chunk = segment_file.read(min(_ZERO_CHUNK, size - position))
        if not chunk:
            return size
        words = np.frombuffer(chunk, np.uint8, len(chunk) - len(chunk) % 8).view(np.uint64)
        nonzero = np.flatnonzero(words)
        if len(nonzero):
            first = position + 8 * int(nonzero[0])
            return max(start, first - (LOG_OVERHEAD - 1))
        tail = chunk[len(words) * 8 :]
        if any(tail):
            first = position + len(words) * 8 + next(i for i, b in enumerate(tail) if b)
            return max(start, first - (LOG_OVERHEAD - 1))
        position += len(chunk)
    return size


def _next_data(segment_file: BinaryIO, position: int, size: int) -> int:
    """The next position at or after `position` that is not a hole of a sparse local file (a hole
    reads as zeros); `position` itself where the file cannot tell (an object store's stream)."""
    try:
        fd = segment_file.fileno()
        kept = os.lseek(fd, 0, os.SEEK_CUR)  # the buffered reader's idea of where its file stands
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        return position
    try:
        return min(os.lseek(fd, position, os.SEEK_DATA), size)
    except OSError as error:  # ENXIO: no data after position, only a hole to the end
        return size if error.errno == errno.ENXIO else position
    finally:
        os.lseek(fd, kept, os.SEEK_SET)


def _big_endian(buf: np.ndarray, positions: np.ndarray, width: int) -> np.ndarray:
    """Signed big-endian integers of `width` bytes at each position."""
    gathered = buf[positions[:, None] + np.arange(width)]
    return np.ascontiguousarray(gathered).view(f">i{width}").ravel().astype(np.int64)


def _offset_at(segment_file: BinaryIO, position: int, size: int) -> int | None:
    """The offset field at `position` as the (untrusted) header says, for the skipped row."""
    if size - position < 8:
        return None
    segment_file.seek(position)
    return int.from_bytes(segment_file.read(8), "big", signed=True)


def _skipped_reason(problem: str, start: int, end: int, size: int, path: str) -> str:
    where = "to the end of the file" if end == size else f"reading resumed at byte {end}, where a batch verifies"
    return f"{problem}; bytes {start}..{end} of {path} skipped ({end - start:,} bytes), {where}"


def _truncated(position: int, path: str, expected: int, available: int) -> str:
    return (
        f"truncated batch at byte {position} of {path}: its header promises {expected} bytes, the file has "
        f"{available} left (a segment copied while the broker was writing, or a damaged length?)"
    )


def _nonsense_size(position: int, path: str, base_offset: int, batch_size: int, magic: int | None) -> str:
    if base_offset == 0 and batch_size == 0:
        # A preallocated segment (file.preallocate=true) is zero-filled past its last batch until the
        # broker trims it on roll or clean shutdown.
        return (
            f"zero bytes instead of a batch at byte {position} of {path} (the unused tail of a preallocated segment?)"
        )
    minimum = MIN_SIZE_BY_MAGIC.get(magic, MIN_SIZE_ANY_MAGIC) if magic is not None else MIN_SIZE_ANY_MAGIC
    of_magic = f" for magic {magic}" if magic is not None else ""
    return (
        f"corrupt batch header at byte {position} of {path}: batch length {batch_size} is below the minimum "
        f"{minimum}{of_magic}"
    )
