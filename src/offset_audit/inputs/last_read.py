"""What identifies the last record an incremental run read of a partition, and finding it again before the
next run reads on (docs/incremental.md, "When a run reads everything again").

A position is an offset, and every log numbers its records from 0: a log replaced by another one that holds
more records reads, by its offsets alone, as the same log grown. Where a partition's folder has no
`partition.metadata` (brokers before 2.8, or a dump put together by hand) nothing else tells them apart.
So each run keeps, per partition, what identifies the last record it read, and the next run looks for it:

- broker folders: the batch that holds it, as the batch header gives it (DefaultRecordBatch, magic 2):

      bytes 0-8  baseOffset   8-12 length   12-16 partitionLeaderEpoch   16 magic   17-21 crc
      21-23 attributes   23-27 lastOffsetDelta

  The CRC covers the attributes and every record (key, value, timestamp, headers), the epoch says which
  leader wrote it. A magic 0 or 1 message (LegacyRecord) has its offset at 0-8, its CRC at 12-16 (it covers
  the magic byte on) and no epoch; a compressed one's offset is its last inner record's, so its offset is
  both its first and last here. The run keeps where it found the batch too (the segment file's name and the
  byte position), and the next run reads the header there (27 bytes) before Spark starts; where the
  cleaner has rewritten that segment since, it walks the headers of the file that now holds the offset.
- Kafka-source snapshots and the live topic: the record's offset and a SHA-256 of its timestamp, key and
  value (their rows have no batch header).

The check is strict. Kafka's log cleaner copies a batch whose records it keeps byte for byte, but rewrites
one it removes some records of (same base and last offset, another CRC) and drops one whose records were
all replaced: a batch cleaned since it was read is not found, and the run reads everything.
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass, replace
from typing import BinaryIO, cast

from offset_audit.escaping import stored_text
from offset_audit.inputs import log_loader
from offset_audit.inputs.log_files import LogFile
from offset_audit.inputs.segments.framing import HEADER_SIZE_UP_TO_MAGIC, LOG_OVERHEAD, MAGIC_OFFSET, MIN_SIZE_BY_MAGIC
from offset_audit.storage import basename, parent

# DefaultRecordBatch: through lastOffsetDelta, all a header needs to say which offsets it holds.
V2_HEADER_BYTES = 27
_OFFSET_AND_LENGTH = struct.Struct(">qi")
_INT = struct.Struct(">i")
_UNSIGNED = struct.Struct(">I")
_TIMESTAMP = struct.Struct(">q")
NO_EPOCH = -1
# Kafka's nullable bytes: a length of -1 stands for null (an empty key or value is not null).
_NULL = _INT.pack(-1)


@dataclass(frozen=True)
class BatchHeader:
    """A batch's identity, as its header gives it, and where it is (file name and byte position)."""

    base_offset: int
    last_offset: int
    crc: int
    leader_epoch: int
    segment: str = ""  # the segment file's name
    position: int = 0
    size: int = 0  # bytes with the log overhead, the next batch starts this far on (0: not known)

    def holds(self, offset: int) -> bool:
        return self.base_offset <= offset <= self.last_offset

    def same_batch(self, other: BatchHeader) -> bool:
        return (self.base_offset, self.last_offset, self.crc, self.leader_epoch) == (
            other.base_offset,
            other.last_offset,
            other.crc,
            other.leader_epoch,
        )


@dataclass(frozen=True)
class LastRead:
    """What identifies the last record a run read of a partition (its offset is the position less one):
    the batch holding it (broker folders), or a digest of the record (Kafka-source snapshots, the live topic)."""

    batch: BatchHeader | None = None
    record_digest: str | None = None
    # A Kafka-source snapshot: the data file it was read in. While that file is there as it was read, the
    # record is too, and the next run need not look for it (`inputs.snapshot_files`).
    file: str | None = None


@dataclass(frozen=True)
class LastRow:
    """The last record a decode task read of a partition: where its batch is (`source_file` as the
    reader names it, `source_position` its byte; None where the input has no files of batches) and the
    digest of the record (`record_digest`)."""

    source_file: str | None
    source_position: int | None
    record_digest: str


def parse_header(head: bytes) -> BatchHeader | None:
    """The identity in a batch's first bytes (27 for magic 2, 17 for magic 0/1); None where they cannot be
    a batch's (too short, a length below the magic's minimum, an unknown magic)."""
    if len(head) < HEADER_SIZE_UP_TO_MAGIC:
        return None
    offset, length = _OFFSET_AND_LENGTH.unpack_from(head)
    magic = head[MAGIC_OFFSET]
    if magic not in MIN_SIZE_BY_MAGIC or length < MIN_SIZE_BY_MAGIC[magic]:
        return None
    size = LOG_OVERHEAD + length
    if magic == 2:
        if len(head) < V2_HEADER_BYTES:
            return None
        epoch = _INT.unpack_from(head, 12)[0]
        crc = _UNSIGNED.unpack_from(head, 17)[0]
        last = offset + _INT.unpack_from(head, 23)[0]
        return BatchHeader(offset, last, crc, epoch, size=size)
    return BatchHeader(offset, offset, _UNSIGNED.unpack_from(head, 12)[0], NO_EPOCH, size=size)


def header_at(handle: BinaryIO, position: int, file_size: int) -> BatchHeader | None:
    """The header at `position` of an open segment file, None where no batch fits there."""
    if position < 0 or file_size - position < HEADER_SIZE_UP_TO_MAGIC:
        return None
    handle.seek(position)
    header = parse_header(handle.read(V2_HEADER_BYTES))
    if header is None or position + header.size > file_size:
        return None
    return header


def batch_read(unit: LogFile, position: int) -> BatchHeader | None:
    """The header of the batch a run read at `position` of `unit`: what the next run finds again. (The
    file's size now: a segment copied again while the run read it may have grown since it was listed.)"""
    with unit.storage.open_input_file(unit.path) as handle:
        header = header_at(handle, position, unit.storage.size(unit.path))
    return None if header is None else replace(header, segment=basename(unit.path), position=position)


# The record's fields its digest covers, as the raw records name them.
RECORD_FIELDS = ("record_timestamp_ms", "key", "value")


def record_digest(timestamp_ms: int | None, key: bytes | None, value: bytes | None) -> str:
    """SHA-256 of a record's timestamp, key and value, each told from null (hex)."""
    digest = hashlib.sha256()
    digest.update(b"\x00" if timestamp_ms is None else b"\x01" + _TIMESTAMP.pack(timestamp_ms))
    for part in (key, value):
        digest.update(_NULL if part is None else _INT.pack(len(part)) + part)
    return digest.hexdigest()


def _batch_holding(unit: LogFile, offset: int, hint: BatchHeader) -> tuple[BatchHeader | None, BatchHeader | None]:
    """The first batch of `unit` whose last offset is at or past `offset` (the one that holds it, or the
    first after the gap where it was), and the file's last batch when none is. Looked for first where the
    run before found it, then header by header from the file's start (a file that stops reading as batches
    ends there)."""
    with unit.storage.open_input_file(unit.path) as handle:
        if basename(unit.path) == hint.segment:
            there = header_at(handle, hint.position, unit.size)
            if there is not None and there.holds(offset):
                return there, None
        position, previous = 0, None
        while (header := header_at(handle, position, unit.size)) is not None:
            if header.last_offset >= offset:
                return header, None
            position += header.size
            previous = header
    return None, previous


def _loaded(files: list[LogFile]) -> list[LogFile]:
    """A folder's segment files as the broker's log loader keeps them (mid-compaction files settled)."""
    from offset_audit.inputs.partition_folders import swap_next_offset

    return log_loader.plan(files, swap_next_offset).log


def _file_holding(files: list[LogFile], offset: int) -> list[LogFile]:
    """The file of a folder whose records may hold `offset`: the last whose base offset (its name) is at or
    below it; every file where names do not give base offsets."""
    bases = [log_loader.base_offset(f.path) for f in files]
    if any(b is None for b in bases):
        return files
    below = [f for f, base in zip(files, cast(list[int], bases), strict=True) if base <= offset]  # none is None
    return below[-1:]


def missing_batch(files: tuple[LogFile, ...], offset: int, last: BatchHeader) -> str | None:
    """Why the batch a partition's last run read last (holding `offset`) is not in its segment files now, as
    the end of a sentence that starts with the partition; None when the same batch is there. With several
    copies of the partition (folders of several brokers), one copy holding it is enough: a copy behind the
    others does not reach it yet."""
    folders: dict[str, list[LogFile]] = {}
    for unit in files:
        folders.setdefault(parent(unit.path), []).append(unit)
    other, end = None, None
    for folder_files in folders.values():
        loaded = _loaded(folder_files)
        for unit in _file_holding(loaded, offset):
            header, tail = _batch_holding(unit, offset, last)
            if header is not None and header.same_batch(last):
                return None
            if header is not None and header.holds(offset):
                other = header
            elif header is None and unit is loaded[-1]:
                reach = tail.last_offset + 1 if tail is not None else log_loader.base_offset(unit.path) or 0
                end = max(end or 0, reach)
    read = _described(last)
    if other is not None:
        return f"last batch read ({read}) is another batch now ({_described(other)})"
    if end is not None:
        return f"offsets went backwards (its records end at {end}, below the last batch read: {read})"
    return f"last batch read ({read}) is not in its segments any more"


def _described(header: BatchHeader) -> str:
    """How a reason names a batch: offsets 10-12, CRC 0badc0de, leader epoch 3."""
    if header.base_offset == header.last_offset:
        span = f"offset {header.base_offset}"
    else:
        span = f"offsets {header.base_offset}-{header.last_offset}"
    return f"{span}, CRC {header.crc:08x}, leader epoch {header.leader_epoch}"


def last_read_of(row: LastRow, segments: tuple[LogFile, ...] | None) -> LastRead | None:
    """What the next run finds again of a partition whose last record read is `row`: the batch holding it
    (its header read here, from the partition's `segments`), or for inputs without segment files
    the record's digest. None where the batch cannot be read again (its file gone meanwhile)."""
    if segments is None:
        return LastRead(record_digest=row.record_digest, file=row.source_file)
    unit = next((f for f in segments if stored_text(f.path) == row.source_file), None)
    if unit is None or row.source_position is None:
        return None
    batch = batch_read(unit, row.source_position)
    return LastRead(batch) if batch is not None else None
