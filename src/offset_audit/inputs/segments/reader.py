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
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from offset_audit.inputs.segments.batch_rows import RowBuffer
from offset_audit.inputs.segments.decoded import UntrustedBatch
from offset_audit.inputs.segments.framing import DEFAULT_MAX_BATCH_BYTES, Frame, Skipped, iter_frames
from offset_audit.inputs.segments.legacy import decode_legacy_message

if TYPE_CHECKING:
    from offset_audit.inputs.segments import fast_walk
from offset_audit.inputs.segments.record_batch import decode_default_batch
from offset_audit.storage import LOCAL, Storage, basename, is_remote, parent

DEFAULT_BATCH_ROWS = 50_000
# decode.fast_path's default (the tests run the segment suites with it off too).
FAST_BY_DEFAULT = True
# The fast path reads the file in chunks of this size (one buffer, reused); 16 MiB holds some 100,000
# coordinator batches, enough to pay for each call.
FAST_CHUNK_BYTES = 16 << 20
# What one chunk's zstd batches may inflate to (reused, and only the pages used become resident): 8 MiB
# and the record columns it can fill stay well under the memory one Python worker is given.
FAST_INFLATED_BYTES = 8 << 20
# The read after a stretch the walker refused: enough for a few hundred coordinator batches.
_PROBE_BYTES = 64 << 10
# The most batches handed to the Python path in one go while the walker takes none.
_MAX_SLOW_STRETCH = 1024

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
    fast: bool | None = None,
) -> Iterator[pa.RecordBatch]:
    """Arrow batches of LOG_RECORD_SCHEMA, one row per record in file order, each at most `batch_rows` rows.

    `partition` overrides the one the folder name gives. An empty file yields nothing. `only_control`
    reads nothing but control batches (transaction markers), judged by the attributes in the batch
    header: the light first pass that resolves transactions never decompresses or parses data batches
    (both passes frame the file alike). No batch larger than `max_batch_bytes`, read or inflated, is
    held in memory. `fast` (decode.fast_path): the compiled walker (`fast_walk`) reads the batches it
    can and hands the others to the Python path, with the same rows as the Python path alone; None:
    FAST_BY_DEFAULT.
    """
    if batch_rows < 1:
        raise ValueError(f"batch_rows must be at least 1, got {batch_rows}")
    if partition is not None and not 0 <= partition <= _MAX_PARTITION:
        raise ValueError(f"partition must be between 0 and {_MAX_PARTITION}, got {partition}")
    source_file = str(path)
    if partition is None:
        partition = partition_from_path(source_file)
    rows = RowBuffer(source_file, partition, batch_rows)
    if fast is None:
        fast = FAST_BY_DEFAULT
    with storage.open_input_file(source_file) as segment_file:
        size = storage.size(source_file)
        if fast:
            yield from _read_fast(segment_file, size, rows, max_batch_bytes, only_control)
        else:
            for item in iter_frames(segment_file, size, rows.source_file, max_batch_bytes):
                _add_item(rows, item, only_control, max_batch_bytes)
                if len(rows) >= batch_rows:
                    yield from rows.full_batches()
    yield from rows.last_batches()


def _add_item(rows: RowBuffer, item: Frame | Skipped, only_control: bool, max_batch_bytes: int) -> None:
    """One frame (or stretch of skipped bytes) of the Python path, into the rows."""
    if isinstance(item, Skipped):
        rows.add_error(item.start, item.base_offset, item.reason, skipped_bytes=item.length)
        return
    if only_control and (item.magic != 2 or not item.data[_ATTRIBUTES_LOW_BYTE] & _CONTROL_BIT):
        return
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


def _read_fast(
    segment_file, size: int, rows: RowBuffer, max_batch_bytes: int, only_control: bool
) -> Iterator[pa.RecordBatch]:
    """The file a chunk at a time: the batches the compiled walker takes are decoded in bulk (or, for the
    transaction pass, only stepped over), each one it does not take is read by the Python path from its
    first byte, and the walker goes on after it.

    The chunk and the inflation buffer are reused, so memory is one chunk, what the chunk's zstd batches
    inflate to (at most FAST_INFLATED_BYTES) and the rows not yet handed out, whatever the file's size. A
    batch larger than a chunk goes to the Python path (bounded by max_batch_bytes). After a stretch the
    walker refuses (a magic 0/1 segment, records with headers), it is asked again with a small probe rather than a
    whole chunk, so such a file costs about what it costs without the fast path.
    """
    from offset_audit.inputs.segments import fast_walk

    native = fast_walk.native_functions()
    chunk = np.empty(FAST_CHUNK_BYTES, np.uint8)
    view = memoryview(chunk)  # type: ignore[arg-type]  # numpy's stubs give ndarray __buffer__ from Python 3.12 on
    out = np.empty(0 if only_control else FAST_INFLATED_BYTES, np.uint8)
    position = 0
    held = 0  # bytes at the start of the chunk already read: the end of the previous chunk, not yet walked
    slow_stretch = 1
    read_size = FAST_CHUNK_BYTES
    while position < size:
        wanted = min(read_size, size - position)
        if held < wanted:
            segment_file.seek(position + held)
            held += segment_file.readinto(view[held:wanted])
        filled = min(held, wanted)
        if only_control:
            how, consumed, controls = fast_walk.scan_control(chunk, filled, position, size, max_batch_bytes, native)
            for control_position in controls.tolist():
                _python_path(segment_file, size, rows, max_batch_bytes, True, control_position, 1)
        else:
            walked = fast_walk.walk(chunk, filled, position, size, max_batch_bytes, out, native)
            how, consumed = walked.how, walked.consumed
            if walked.records:
                _add_walked(rows, chunk, out, walked)
        position += consumed
        # What the walker did not take is kept for the next call (it stopped at a chunk or `out` boundary).
        held = held - consumed if how in (fast_walk.MORE, fast_walk.FULL) and consumed else 0
        if held:
            chunk[:held] = chunk[consumed : consumed + held]
        if how == fast_walk.MORE and consumed == 0 and read_size < FAST_CHUNK_BYTES:
            read_size = FAST_CHUNK_BYTES  # a batch larger than the probe: walk it with a whole chunk
            continue
        if how == fast_walk.SLOW or (how == fast_walk.MORE and consumed == 0):
            # the Python path for the next batch (and more, while the walker keeps refusing)
            position = _python_path(segment_file, size, rows, max_batch_bytes, only_control, position, slow_stretch)
            slow_stretch = 1 if consumed else min(slow_stretch * 2, _MAX_SLOW_STRETCH)
        read_size = FAST_CHUNK_BYTES if consumed or how == fast_walk.FULL else _PROBE_BYTES
        if len(rows) >= rows.batch_rows:
            yield from rows.full_batches()


def _python_path(
    segment_file, size: int, rows: RowBuffer, max_batch_bytes: int, only_control: bool, position: int, frames: int
) -> int:
    """Up to `frames` frames (or skipped stretches) from `position` read by the Python path; where it
    stopped."""
    items = iter_frames(segment_file, size, rows.source_file, max_batch_bytes, start=position)
    for _, item in zip(range(frames), items, strict=False):
        _add_item(rows, item, only_control, max_batch_bytes)
        position = item.end if isinstance(item, Skipped) else item.position + len(item.data)
    items.close()
    return position


def _add_walked(rows: RowBuffer, chunk: np.ndarray, out: np.ndarray, walked: fast_walk.Walked) -> None:
    """The records the walker decoded, into the rows."""
    from offset_audit.inputs.segments import fast_walk

    count = walked.records
    rows.add_records(
        walked.offsets[:count],
        walked.timestamps[:count],
        _binary(fast_walk.gather_bytes(chunk, out, walked.key_starts, walked.key_lengths, count)),
        _binary(fast_walk.gather_bytes(chunk, out, walked.value_starts, walked.value_lengths, count)),
        walked.producer_ids[:count],
        walked.producer_epochs[:count],
        walked.transactional[:count],
        walked.positions[:count],
    )


def _binary(buffers: tuple) -> pa.Array:
    arrow_offsets, data, valid, nulls = buffers
    validity = pa.py_buffer(np.packbits(valid, bitorder="little")) if nulls else None
    return pa.Array.from_buffers(
        pa.binary(), len(valid), [validity, pa.py_buffer(arrow_offsets), pa.py_buffer(data)], null_count=nulls
    )


def _unreadable(frame: Frame, source_file: str, bad: UntrustedBatch) -> str:
    kind = "record batch" if frame.magic >= 2 else f"magic {frame.magic} message"
    return (
        f"unreadable {kind} at byte {frame.position} of {source_file}: {bad.reason}; "
        f"records not trusted: {bad.untrusted}"
    )
