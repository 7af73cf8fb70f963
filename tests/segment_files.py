"""Writes small magic-2 log segments for the end-to-end tests of log-file inputs.

The reader's byte-level correctness is pinned by hand-laid vectors in tests/test_segments.py; this
writer only builds realistic files (several batches, transactions, markers) for the pipeline tests.
"""

from __future__ import annotations

import struct

from offset_audit.segments.crc import crc32c

TRANSACTIONAL = 0x10
CONTROL = 0x20


def _zigzag(n: int) -> bytes:
    n = (n << 1) ^ (n >> 63)
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _sized(data: bytes | None) -> bytes:
    return _zigzag(-1) if data is None else _zigzag(len(data)) + data


def _record(offset_delta: int, timestamp_delta: int, key: bytes | None, value: bytes | None) -> bytes:
    body = b"\x00" + _zigzag(timestamp_delta) + _zigzag(offset_delta) + _sized(key) + _sized(value) + _zigzag(0)
    return _zigzag(len(body)) + body


def batch(
    base_offset: int,
    records: list[tuple[bytes | None, bytes | None, int]],
    producer_id: int = -1,
    attributes: int = 0,
) -> bytes:
    """One uncompressed batch of (key, value, timestamp ms) records at consecutive offsets."""
    base_ts = records[0][2]
    body = b"".join(_record(i, ts - base_ts, k, v) for i, (k, v, ts) in enumerate(records))
    after_crc = (
        struct.pack(
            ">hiqqqhii",
            attributes,
            len(records) - 1,
            base_ts,
            max(r[2] for r in records),
            producer_id,
            0,
            -1,
            len(records),
        )
        + body
    )
    crc = crc32c(after_crc)
    after_length = struct.pack(">ibI", 0, 2, crc) + after_crc
    return struct.pack(">qi", base_offset, len(after_length)) + after_length


def marker(offset: int, producer_id: int, commit: bool, timestamp: int) -> bytes:
    key = struct.pack(">hh", 0, 1 if commit else 0)
    value = struct.pack(">hi", 0, 5)
    return batch(offset, [(key, value, timestamp)], producer_id, TRANSACTIONAL | CONTROL)
