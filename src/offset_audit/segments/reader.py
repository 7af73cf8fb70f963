"""Kafka log segment files (`__consumer_offsets-N/*.log`) read into LOG_RECORD_SCHEMA rows, in pure Python.

The file is read sequentially, batch by batch (`framing`); each batch is decoded by its magic
(`record_batch` for magic 2, `legacy` for 0 and 1) and its rows gathered into Arrow batches (`rows`).
Memory stays bounded by one Kafka batch plus `batch_rows` rows, whatever the segment's size.

Bad bytes are data: a batch that fails its CRC, cannot be decompressed (or inflates past the bound) or
does not parse becomes one row with `source_error` and no key or value, and reading goes on with the
next batch. Bytes that hold no trustworthy batch at all (a damaged length, a batch cut short by the end
of the file) become one such row that says how many bytes it covers (`skipped_bytes`), and reading
resumes at the next batch that verifies (`framing`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator

import pyarrow as pa

from offset_audit.segments.decoded import UntrustedBatch
from offset_audit.segments.framing import DEFAULT_MAX_BATCH_BYTES, Frame, Skipped, iter_frames
from offset_audit.segments.legacy import decode_legacy_message
from offset_audit.segments.record_batch import decode_default_batch
from offset_audit.segments.rows import RowBuffer
from offset_audit.storage import LOCAL, Storage, basename, is_remote, parent

DEFAULT_BATCH_ROWS = 50_000

# A partition's log directory is "<topic>-<partition>", with ".<id>-delete", "-future" or "-stray" added
# while the broker deletes, moves or quarantines it (LocalLog.parseTopicPartitionName).
_OFFSETS_LOG_DIR = re.compile(r"(__consumer_offsets|__share_group_state)-(\d+)(?:\.\S+-(?:delete|future|stray))?")
_MAX_PARTITION = 2**31 - 1
# DefaultRecordBatch: baseOffset(8) length(4) partitionLeaderEpoch(4) magic(1) crc(4), then the int16
# attributes, whose low byte holds the control flag (bit 5).
_ATTRIBUTES_LOW_BYTE = 22
_CONTROL_BIT = 0x20


def partition_from_path(path: str) -> int | None:
    """The partition a segment belongs to, from its folder's name; None when the folder is not a
    `__consumer_offsets-N` (or `__share_group_state-N`) log directory (a copy elsewhere needs it given)."""
    match = _OFFSETS_LOG_DIR.fullmatch(_folder_name(path))
    if match is None:
        return None
    partition = int(match.group(2))
    return partition if partition <= _MAX_PARTITION else None


def topic_from_path(path: str) -> str | None:
    """The internal topic a segment belongs to (__consumer_offsets or __share_group_state), from its
    folder's name; None when the folder does not say."""
    match = _OFFSETS_LOG_DIR.fullmatch(_folder_name(path))
    return match.group(1) if match else None


def _folder_name(path: str) -> str:
    """The name of the folder a segment sits in (local or object-store path)."""
    if is_remote(path):
        return basename(parent(path))
    return os.path.basename(os.path.dirname(os.path.abspath(path)))


def read_segment(
    path: str,
    partition: int | None = None,
    batch_rows: int = DEFAULT_BATCH_ROWS,
    only_control: bool = False,
    max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES,
    storage: Storage = LOCAL,
) -> Iterator[pa.RecordBatch]:
    """Arrow batches of LOG_RECORD_SCHEMA, one row per record in file order, each at most `batch_rows` rows.

    `partition` overrides the one the folder name gives. An empty file yields nothing. `only_control`
    reads nothing but control batches (transaction markers), judged by the attributes in the batch
    header: the light first pass that resolves transactions never decompresses or parses data batches
    (both passes frame the file alike). No batch larger than `max_batch_bytes`, read or inflated, is
    held in memory.
    """
    if batch_rows < 1:
        raise ValueError(f"batch_rows must be at least 1, got {batch_rows}")
    if partition is not None and not 0 <= partition <= _MAX_PARTITION:
        raise ValueError(f"partition must be between 0 and {_MAX_PARTITION}, got {partition}")
    source_file = str(path)
    if partition is None:
        partition = partition_from_path(source_file)
    rows = RowBuffer(source_file, partition, batch_rows)
    with storage.open_input_file(source_file) as segment_file:
        size = storage.size(source_file)
        for item in iter_frames(segment_file, size, rows.source_file, max_batch_bytes):
            if isinstance(item, Skipped):
                rows.add_error(item.start, item.base_offset, item.reason, skipped_bytes=item.length)
                continue
            if only_control and (item.magic != 2 or not item.data[_ATTRIBUTES_LOW_BYTE] & _CONTROL_BIT):
                continue
            try:
                if item.magic == 2:
                    batch = decode_default_batch(item, max_batch_bytes)
                elif item.magic in (0, 1):
                    batch = decode_legacy_message(item, max_batch_bytes)
                else:
                    raise UntrustedBatch(
                        f"unknown magic {item.magic} (Kafka writes 0, 1 and 2)",
                        f"everything in this batch of {len(item.data)} bytes",
                    )
            except UntrustedBatch as bad:
                rows.add_error(item.position, item.base_offset, _unreadable(item, rows.source_file, bad))
            else:
                rows.add_batch(item.position, batch)
            if len(rows) >= batch_rows:
                yield from rows.full_batches()
    yield from rows.last_batches()


def _unreadable(frame: Frame, source_file: str, bad: UntrustedBatch) -> str:
    kind = "record batch" if frame.magic >= 2 else f"magic {frame.magic} message"
    return (
        f"unreadable {kind} at byte {frame.position} of {source_file}: {bad.reason}; "
        f"records not trusted: {bad.untrusted}"
    )
