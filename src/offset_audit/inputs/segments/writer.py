"""Writes magic-2 log segments: for `generate --format segments`, the benchmark and the pipeline tests.

The reader's correctness is pinned by hand-laid hex vectors (tests/inputs/test_segments.py), never by round
trips through this writer. Batches are laid out as DefaultRecordBatch writes them: the CRC-32C covers
the attributes to the end, a compressed batch compresses the records after the record count.
"""

from __future__ import annotations

import gzip
import struct
from collections.abc import Iterable, Iterator
from pathlib import Path

import cramjam

from offset_audit.inputs.segments.crc import crc32c

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
TRANSACTIONAL = 0x10
CONTROL = 0x20
SEGMENT_BYTES = 100 * 1024 * 1024  # the broker's offsets.topic.segment.bytes default
_XERIAL_HEADER = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK = 32 * 1024


def _varint(n: int) -> bytes:
    """Zigzag varint/varlong (DefaultRecord's encoding of every record field)."""
    n = (n << 1) ^ (n >> 63)
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _sized(data: bytes | None) -> bytes:
    return _varint(-1) if data is None else _varint(len(data)) + data


def _record(offset_delta: int, timestamp_delta: int, key: bytes | None, value: bytes | None) -> bytes:
    body = b"\x00" + _varint(timestamp_delta) + _varint(offset_delta) + _sized(key) + _sized(value) + b"\x00"
    return _varint(len(body)) + body


def _compress(codec: str, data: bytes) -> bytes:
    if codec == "gzip":
        return gzip.compress(data)
    if codec == "snappy":  # snappy-java's stream format (xerial), as Kafka's producer writes it
        blocks = [data[i : i + _XERIAL_BLOCK] for i in range(0, len(data), _XERIAL_BLOCK)]
        framed = b"".join(
            struct.pack(">i", len(c)) + c for c in (bytes(cramjam.snappy.compress_raw(b)) for b in blocks)
        )
        return _XERIAL_HEADER + framed
    if codec == "lz4":
        return bytes(cramjam.lz4.compress(data))
    if codec == "zstd":
        return bytes(cramjam.zstd.compress(data))
    return data


def record_batch(
    base_offset: int,
    records: list[tuple[bytes | None, bytes | None, int]],
    producer_id: int = -1,
    attributes: int = 0,
    compression: str = "none",
    leader_epoch: int = 0,
) -> bytes:
    """One batch of (key, value, timestamp ms) records at consecutive offsets from `base_offset`, as
    written by the leader of `leader_epoch` (the partition leader epoch, outside the CRC)."""
    base_ts = records[0][2]
    body = b"".join(_record(i, ts - base_ts, k, v) for i, (k, v, ts) in enumerate(records))
    attributes |= CODECS[compression]
    header = struct.pack(
        ">hiqqqhii",
        attributes,
        len(records) - 1,
        base_ts,
        max(r[2] for r in records),
        producer_id,
        -1 if producer_id == -1 else 0,
        -1,
        len(records),
    )
    after_crc = header + _compress(compression, body)
    after_length = struct.pack(">ibI", leader_epoch, 2, crc32c(after_crc)) + after_crc
    return struct.pack(">qi", base_offset, len(after_length)) + after_length


def marker_batch(offset: int, producer_id: int, commit: bool, timestamp: int, coordinator_epoch: int = 0) -> bytes:
    """A transaction marker: a control batch with one record, key (version 0, type 1 COMMIT / 0 ABORT)."""
    key = struct.pack(">hh", 0, 1 if commit else 0)
    value = struct.pack(">hi", 0, coordinator_epoch)
    return record_batch(offset, [(key, value, timestamp)], producer_id, TRANSACTIONAL | CONTROL)


def batch_runs(
    records: Iterable[tuple[int, bytes | None, bytes | None, int]], batch_records: int
) -> Iterator[tuple[int, list[tuple[bytes | None, bytes | None, int]]]]:
    """(offset, key, value, ts) records in offset order -> runs of consecutive offsets, at most batch_records."""
    run: list[tuple[bytes | None, bytes | None, int]] = []
    start = last = -2
    for offset, key, value, ts in records:
        if run and (offset != last + 1 or len(run) >= batch_records):
            yield start, run
            run = []
        if not run:
            start = offset
        run.append((key, value, ts))
        last = offset
    if run:
        yield start, run


def write_partition(
    folder: Path,
    records: Iterable[tuple[int, bytes | None, bytes | None, int]],
    batch_records: int = 1,
    compression: str = "none",
    segment_bytes: int = SEGMENT_BYTES,
) -> list[Path]:
    """Write one partition's records (in offset order) as segment files named by their base offset,
    rolling to a new segment when one would exceed `segment_bytes`, as the broker does. The folder holds
    these segments only afterwards: a segment file of an earlier write that this one has not (a later
    stage of the log, `generator.writers.snapshot_to_segments`) is removed."""
    folder.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    handle = None
    size = 0
    try:
        for base, run in batch_runs(records, batch_records):
            data = record_batch(base, run, compression=compression)
            if handle is None or (size and size + len(data) > segment_bytes):
                if handle is not None:
                    handle.close()
                path = folder / f"{base:020d}.log"
                handle = open(path, "wb")  # noqa: SIM115 - kept open across many batches, closed below
                written.append(path)
                size = 0
            handle.write(data)
            size += len(data)
    finally:
        if handle is not None:
            handle.close()
    for old in folder.glob("*.log"):
        if old not in written:
            old.unlink()
    return written
