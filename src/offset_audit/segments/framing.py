"""A segment file cut into its batches, one header at a time.

Every entry in a `.log` file, whatever its magic, starts with the same 12 bytes of log overhead, int64
offset and int32 size of what follows, and has its magic byte at byte 16 (FileLogInputStream.nextBatch,
Records.LOG_OVERHEAD, HEADER_SIZE_UP_TO_MAGIC). That is enough to find the next batch without decoding
this one, so the file is walked header by header and only one batch is ever in memory.

Where Kafka quietly stops (a partial batch at the end of the file, which the broker truncates on
recovery), this reader says so: a segment copied while the broker was writing, or a preallocated one,
is exactly what an auditor wants to hear about.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

LOG_OVERHEAD = 12  # int64 offset + int32 size, before every batch or legacy message
HEADER_SIZE_UP_TO_MAGIC = 17
MAGIC_OFFSET = 16

# The smallest size (after the log overhead) each magic can have: Kafka's RECORD_BATCH_OVERHEAD minus
# the log overhead for magic 2, LegacyRecord.RECORD_OVERHEAD_V0/V1 for magic 0/1. FileLogInputStream
# rejects anything below the v0 minimum before it has even looked at the magic.
MIN_SIZE_BY_MAGIC = {0: 14, 1: 22, 2: 49}
MIN_SIZE_ANY_MAGIC = 14

_LOG_OVERHEAD_STRUCT = struct.Struct(">qi")


@dataclass(slots=True)
class Frame:
    """One batch (magic 2) or one top-level message (magic 0/1) exactly as it sits in the file.

    `data` includes the 12-byte log overhead, so the field positions Kafka's classes name apply to it as is.
    Not frozen: a frozen dataclass costs five times as much to build, and there is one per batch.
    """

    position: int
    base_offset: int
    magic: int
    data: bytes


@dataclass(frozen=True, slots=True)
class FramingError:
    """The point where the file stops being a sequence of batches; nothing after it is read."""

    position: int
    base_offset: int | None
    reason: str


def iter_frames(segment_file: BinaryIO, size: int, path: str) -> Iterator[Frame | FramingError]:
    """The batches of a file of `size` bytes, read sequentially from `segment_file`; a FramingError, if
    any, is the last item.

    Plain reads rather than an mmap: a mapped file's pages count as the process's memory as they are
    touched, so reading a 1 GiB segment would look like using 1 GiB. Here only one batch is in memory.
    """
    read = segment_file.read
    position = 0
    while position < size:
        available = size - position
        if available < LOG_OVERHEAD:
            yield FramingError(
                position,
                None,
                f"truncated batch at byte {position} of {path}: a batch header needs {LOG_OVERHEAD} bytes for its "
                f"offset and length, the file has {available} left; reading of this file stopped here",
            )
            return
        head = read(HEADER_SIZE_UP_TO_MAGIC if available >= HEADER_SIZE_UP_TO_MAGIC else LOG_OVERHEAD)
        base_offset, batch_size = _LOG_OVERHEAD_STRUCT.unpack_from(head)
        if batch_size < MIN_SIZE_ANY_MAGIC:
            yield FramingError(position, base_offset, _nonsense_size(position, path, base_offset, batch_size, None))
            return
        if available < HEADER_SIZE_UP_TO_MAGIC:
            yield FramingError(position, base_offset, _truncated(position, path, LOG_OVERHEAD + batch_size, available))
            return
        magic = head[MAGIC_OFFSET]
        if magic > 127:
            magic -= 256
        if batch_size < MIN_SIZE_BY_MAGIC.get(magic, MIN_SIZE_ANY_MAGIC):
            yield FramingError(position, base_offset, _nonsense_size(position, path, base_offset, batch_size, magic))
            return
        total = LOG_OVERHEAD + batch_size
        if total > available:
            yield FramingError(position, base_offset, _truncated(position, path, total, available))
            return
        data = head + read(total - HEADER_SIZE_UP_TO_MAGIC)
        if len(data) < total:  # the file shrank while being read
            yield FramingError(position, base_offset, _truncated(position, path, total, len(data)))
            return
        yield Frame(position, base_offset, magic, data)
        position += total


def _truncated(position: int, path: str, expected: int, available: int) -> str:
    return (
        f"truncated batch at byte {position} of {path}: its header promises {expected} bytes, the file has "
        f"{available} left (a segment copied while the broker was writing?); reading of this file stopped here"
    )


def _nonsense_size(position: int, path: str, base_offset: int, batch_size: int, magic: int | None) -> str:
    if base_offset == 0 and batch_size == 0:
        # A preallocated segment (file.preallocate=true) is zero-filled past its last batch until the
        # broker trims it on roll or clean shutdown.
        return (
            f"zero bytes instead of a batch at byte {position} of {path} (the unused tail of a preallocated "
            "segment?); reading of this file stopped here"
        )
    minimum = MIN_SIZE_BY_MAGIC.get(magic, MIN_SIZE_ANY_MAGIC) if magic is not None else MIN_SIZE_ANY_MAGIC
    of_magic = f" for magic {magic}" if magic is not None else ""
    return (
        f"corrupt batch header at byte {position} of {path}: batch length {batch_size} is below the minimum "
        f"{minimum}{of_magic}; reading of this file stopped here"
    )
