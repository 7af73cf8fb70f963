"""The common case of a segment, walked in compiled code: plain magic 2 data batches, decoded a chunk at a time.

Nearly every batch a group coordinator writes is a magic 2 batch of uncompressed records without headers,
and a segment holds about a million of them; in Python each costs about 10 µs. Here `walk` (numba) steps
over a chunk of the file's bytes batch by batch, checks each CRC-32C, and decodes the records of every
batch it accepts into columns (offset, timestamp, key and value as start and length in the chunk, the
batch's producer and position), which `gather_bytes` turns into Arrow binary buffers.

It accepts a batch only when the Python reader (`framing`, `record_batch`) would read it without a
word to say and its records are laid out plainly; it stops at the first batch it does not accept
(anything compressed, a control batch, magic 0/1, a CRC that fails, a length that does not fit, a
varint longer than it reads, record headers, an offset or timestamp near the int64 limits) and the
reader hands that batch to the Python path, which says exactly what it says today. So the fast path
decides nothing the slow path would decide differently: it only does the same work without Python
objects per record.

Numba rather than numpy: the walk is sequential (each batch's position is the previous one's end), so
it cannot be vectorised, and a per-batch Python loop is what costs today. Integers are int64
throughout: numba turns uint64 mixed with int64 into floats.
"""

from __future__ import annotations

import numpy as np
from numba import njit

# How walk stopped.
END = 0  # every batch in the chunk was taken; the chunk ends exactly after the last one
MORE = 1  # the next batch goes past the chunk but fits in the file: read on from `consumed`
SLOW = 2  # the next batch (at `consumed`) is one for the Python reader

_RECORD_BATCH_OVERHEAD = 61
_MIN_V2_SIZE = 49  # after the 12-byte log overhead
_MIN_RECORD_BYTES = 7  # length, attributes, timestamp delta, offset delta, key length, value length, headers
# attributes the fast path reads itself: timestamp type, transactional, delete horizon. Any codec, the
# control flag or a bit Kafka does not define goes to the Python reader.
_FAST_ATTRIBUTES = 0x08 | 0x10 | 0x40
_LOG_APPEND_TIME = 0x08
_TRANSACTIONAL = 0x10
# base offsets (and timestamps) from which adding an int32 delta (a varlong delta below 2^62) cannot
# leave the int64 range; beyond them the Python reader checks.
_OFFSET_SAFE = 2**63 - 2**31 - 1
_TIMESTAMP_SAFE = 2**62


def _crc32c_tables() -> np.ndarray:
    """Slicing-by-8 tables of CRC-32C (Castagnoli, reflected polynomial 0x82F63B78)."""
    tables = np.zeros((8, 256), np.int64)
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
        tables[0, byte] = crc
    for byte in range(256):
        crc = int(tables[0, byte])
        for k in range(1, 8):
            crc = int(tables[0, crc & 0xFF]) ^ (crc >> 8)
            tables[k, byte] = crc
    return tables


CRC32C_TABLES = _crc32c_tables()


@njit(cache=True, nogil=True)
def crc32c(buf, start, end, tables):
    """CRC-32C of buf[start:end], eight bytes per step."""
    crc = np.int64(0xFFFFFFFF)
    i = start
    while i + 8 <= end:
        crc ^= (
            np.int64(buf[i]) | (np.int64(buf[i + 1]) << 8) | (np.int64(buf[i + 2]) << 16) | (np.int64(buf[i + 3]) << 24)
        )
        crc = (
            tables[7, crc & 0xFF]
            ^ tables[6, (crc >> 8) & 0xFF]
            ^ tables[5, (crc >> 16) & 0xFF]
            ^ tables[4, (crc >> 24) & 0xFF]
            ^ tables[3, buf[i + 4]]
            ^ tables[2, buf[i + 5]]
            ^ tables[1, buf[i + 6]]
            ^ tables[0, buf[i + 7]]
        )
        i += 8
    while i < end:
        crc = tables[0, (crc ^ np.int64(buf[i])) & 0xFF] ^ (crc >> 8)
        i += 1
    return crc ^ np.int64(0xFFFFFFFF)


@njit(cache=True, nogil=True)
def _be(buf, pos, width):
    """A signed big-endian integer of `width` bytes (2, 4 or 8)."""
    value = np.int64(0)
    for k in range(width):
        value = (value << 8) | np.int64(buf[pos + k])
    if width < 8:
        sign = np.int64(1) << (8 * width - 1)
        value = (value ^ sign) - sign
    return value


@njit(cache=True, nogil=True)
def _uvarint(buf, pos, end, max_bytes):
    """An unsigned varint of at most `max_bytes` bytes ending before `end`: (raw, next position), or
    (-1, pos) when it is longer or runs past `end` (the Python reader then says what is wrong). With
    max_bytes 5 it is truncated to 32 bits as Java's int is (ByteUtils.readUnsignedVarint)."""
    raw = np.int64(0)
    shift = 0
    for k in range(max_bytes):
        if pos + k >= end:
            return np.int64(-1), pos
        byte = np.int64(buf[pos + k])
        raw |= (byte & 0x7F) << shift
        if byte < 0x80:
            if max_bytes == 5:
                raw &= 0xFFFFFFFF
            return raw, pos + k + 1
        shift += 7
    return np.int64(-1), pos


@njit(cache=True, nogil=True)
def walk(buf, n, file_position, file_size, max_batch_bytes, tables):
    """Batches of buf[:n] (which starts at byte `file_position` of a file of `file_size` bytes) that the
    fast path takes, from the start of buf up to the first it does not.

    Returns (how, consumed, records, columns...): `how` is END, MORE or SLOW, `consumed` the bytes of buf
    the taken batches fill, then per record: offset, timestamp, key start and length, value start and
    length (length -1: null), producer id, producer epoch, transactional, batch position in the file.
    """
    # First the headers alone, to size the columns: how many records the candidate batches claim.
    pos = 0
    claimed = 0
    how = END
    while True:
        left = n - pos
        if left == 0:
            break
        if left < _RECORD_BATCH_OVERHEAD:
            how = MORE if file_position + n < file_size else SLOW
            break
        size = _be(buf, pos + 8, 4)
        attributes = _be(buf, pos + 21, 2)
        count = _be(buf, pos + 57, 4)
        base_offset = _be(buf, pos, 8)
        if (
            buf[pos + 16] != 2
            or size < _MIN_V2_SIZE
            or size > max_batch_bytes
            or attributes & ~_FAST_ATTRIBUTES
            or count <= 0
            or count * _MIN_RECORD_BYTES > size - _MIN_V2_SIZE
            or base_offset < -_OFFSET_SAFE
            or base_offset > _OFFSET_SAFE
        ):
            how = SLOW
            break
        total = 12 + size
        if total > left:
            how = MORE if file_position + pos + total <= file_size else SLOW
            break
        claimed += count
        pos += total
    header_end = pos

    offsets = np.empty(claimed, np.int64)
    timestamps = np.empty(claimed, np.int64)
    key_starts = np.empty(claimed, np.int64)
    key_lengths = np.empty(claimed, np.int64)
    value_starts = np.empty(claimed, np.int64)
    value_lengths = np.empty(claimed, np.int64)
    producer_ids = np.empty(claimed, np.int64)
    producer_epochs = np.empty(claimed, np.int16)
    transactional = np.empty(claimed, np.bool_)
    positions = np.empty(claimed, np.int64)

    # Then each batch: its CRC, then its records exactly as record_batch._read_records reads them.
    pos = 0
    row = 0
    while pos < header_end:
        end = pos + 12 + _be(buf, pos + 8, 4)
        stored_crc = _be(buf, pos + 17, 4) & 0xFFFFFFFF
        ok = crc32c(buf, pos + 21, end, tables) == stored_crc
        attributes = _be(buf, pos + 21, 2)
        base_offset = _be(buf, pos, 8)
        base_timestamp = _be(buf, pos + 27, 8)
        max_timestamp = _be(buf, pos + 35, 8)
        if base_timestamp < -_TIMESTAMP_SAFE or base_timestamp > _TIMESTAMP_SAFE:
            ok = False
        producer_id = _be(buf, pos + 43, 8)
        producer_epoch = _be(buf, pos + 51, 2)
        count = _be(buf, pos + 57, 4)
        first_row = row
        cursor = pos + _RECORD_BATCH_OVERHEAD
        index = 0
        while ok and index < count:
            raw, cursor = _uvarint(buf, cursor, end, 5)
            if raw < 0 or raw & 1:
                ok = False
                break
            record_end = cursor + (raw >> 1)
            if record_end > end:
                ok = False
                break
            cursor += 1  # record attributes
            raw, cursor = _uvarint(buf, cursor, record_end, 9)  # varlong; 10 bytes go to Python
            if raw < 0:
                ok = False
                break
            timestamp_delta = (raw >> 1) ^ -(raw & 1)
            if timestamp_delta < -_TIMESTAMP_SAFE or timestamp_delta > _TIMESTAMP_SAFE:
                ok = False
                break
            raw, cursor = _uvarint(buf, cursor, record_end, 5)
            if raw < 0:
                ok = False
                break
            offset_delta = (raw >> 1) ^ -(raw & 1)
            raw, cursor = _uvarint(buf, cursor, record_end, 5)
            if raw < 0:
                ok = False
                break
            if raw & 1:
                key_start = cursor
                key_length = np.int64(-1)
            else:
                key_start = cursor
                key_length = raw >> 1
                cursor += key_length
                if cursor > record_end:
                    ok = False
                    break
            raw, cursor = _uvarint(buf, cursor, record_end, 5)
            if raw < 0:
                ok = False
                break
            if raw & 1:
                value_start = cursor
                value_length = np.int64(-1)
            else:
                value_start = cursor
                value_length = raw >> 1
                cursor += value_length
                if cursor > record_end:
                    ok = False
                    break
            # no headers (a zero count) and nothing else: anything more is for the Python reader
            if cursor + 1 != record_end or buf[cursor] != 0:
                ok = False
                break
            cursor = record_end
            offsets[row] = base_offset + offset_delta
            timestamps[row] = max_timestamp if attributes & _LOG_APPEND_TIME else base_timestamp + timestamp_delta
            key_starts[row] = key_start
            key_lengths[row] = key_length
            value_starts[row] = value_start
            value_lengths[row] = value_length
            producer_ids[row] = producer_id
            producer_epochs[row] = producer_epoch
            transactional[row] = attributes & _TRANSACTIONAL != 0
            positions[row] = file_position + pos
            row += 1
            index += 1
        if not ok or cursor != end:
            row = first_row
            how = SLOW
            header_end = pos
            break
        pos = end
    return (
        how,
        header_end,
        row,
        offsets,
        timestamps,
        key_starts,
        key_lengths,
        value_starts,
        value_lengths,
        producer_ids,
        producer_epochs,
        transactional,
        positions,
    )


@njit(cache=True, nogil=True)
def gather_bytes(buf, starts, lengths, rows):
    """An Arrow binary column's buffers from (start, length) pairs in buf (length -1: null): int32
    offsets, the bytes, one validity byte per row, and the null count."""
    total = 0
    nulls = 0
    for row in range(rows):
        if lengths[row] < 0:
            nulls += 1
        else:
            total += lengths[row]
    arrow_offsets = np.empty(rows + 1, np.int32)
    data = np.empty(total, np.uint8)
    valid = np.empty(rows, np.bool_)
    at = 0
    arrow_offsets[0] = 0
    for row in range(rows):
        length = lengths[row]
        if length < 0:
            valid[row] = False
        else:
            valid[row] = True
            start = starts[row]
            for k in range(length):
                data[at + k] = buf[start + k]
            at += length
        arrow_offsets[row + 1] = at
    return arrow_offsets, data, valid, nulls
