"""The common cases of a segment, walked in compiled code: magic 2 data batches, plain or compressed with
any of Kafka's codecs, decoded a chunk at a time; and the transaction markers alone, for the first pass.

Nearly every batch a group coordinator writes is a magic 2 batch of a few records without headers, and a
segment holds about a million of them; in Python each costs about 3 µs (40 with zstd). Here `walk`
(numba) steps over a chunk of the file's bytes batch by batch, checks each CRC-32C, inflates zstd
batches with libzstd, gzip batches with zlib and lz4 ones with liblz4 (`native`), decodes snappy ones
itself (`_unsnappy`: no dependency ships libsnappy's C symbols, and a raw snappy block is a few dozen
lines of literals and copies), and decodes the records of every batch it accepts into columns (offset,
timestamp, key and value as start and length, the batch's producer and position), which `gather_bytes`
turns into Arrow binary buffers. `scan_control` walks the same way but decodes nothing: it gives the
positions of the control batches, the only ones the transaction pass reads.

It accepts a batch only when the Python reader (`framing`, `record_batch`) would read it without a word
to say and its records are laid out plainly; it stops at the first batch it does not accept (a control
batch, magic 0/1, a CRC that fails, a length that does not fit, a payload its library or its snappy
decoder refuses or that inflates past the bound, a gzip payload of more than one member or an lz4 one
of more than one frame, a varint longer than it reads, record headers, an offset or timestamp near the
int64 limits) and the reader hands that batch to the Python path, which says exactly what it says
today. So the fast path decides nothing the slow path would decide differently: it only does the same
work without Python objects per record.

Numba rather than numpy: the walk is sequential (each batch's position is the previous one's end), so it
cannot be vectorised, and a per-batch Python loop is what costs. Integers are int64 throughout: numba
turns uint64 mixed with int64 into floats.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from numba import njit

# How walk and scan_control stopped.
END = 0  # every batch in the chunk was taken; the chunk ends exactly after the last one
MORE = 1  # the next batch goes past the chunk but fits in the file: read on from `consumed`
SLOW = 2  # the next batch (at `consumed`) is one for the Python reader
FULL = 3  # the inflated records of the next batch do not fit what is left of `out`: call again from `consumed`

_RECORD_BATCH_OVERHEAD = 61
_MIN_V2_SIZE = 49  # after the 12-byte log overhead
_MIN_RECORD_BYTES = 7  # length, attributes, timestamp delta, offset delta, key length, value length, headers
_CODEC_MASK = 0x07
_GZIP = 1
_SNAPPY = 2
_LZ4 = 3
_ZSTD = 4
_Z_FINISH = 4
_Z_STREAM_END = 1
_CONTROL = 0x20
# attributes the walker reads itself besides the codec: timestamp type, transactional, delete horizon.
# Another codec, the control flag or a bit Kafka does not define goes to the Python reader.
_FAST_ATTRIBUTES = 0x08 | 0x10 | 0x40
_LOG_APPEND_TIME = 0x08
_TRANSACTIONAL = 0x10
# base offsets (and timestamps) from which adding an int32 delta (a varlong delta below 2^62) cannot
# leave the int64 range; beyond them the Python reader checks.
_OFFSET_SAFE = 2**63 - 2**31 - 1
_TIMESTAMP_SAFE = 2**62


class Native(NamedTuple):
    """What `walk` and `scan_control` call: the C functions (or their stand-ins) and what they need."""

    crc_tables: np.ndarray  # slicing-by-8 CRC-32C tables; empty when libcrc32c is used
    crc32c: Any  # crc32c_value
    zstd_decompress: Any
    zstd_is_error: Any
    zstd_context: int  # 0: no libzstd
    inflate_reset: Any
    inflate: Any
    gzip_stream: np.ndarray  # zlib's z_stream, as words (empty: no zlib)
    gzip_stream_words32: np.ndarray
    gzip_fields: np.ndarray  # the z_stream field indexes
    lz4_decompress: Any
    lz4_is_error: Any
    lz4_reset: Any
    lz4_context: int  # 0: no liblz4
    lz4_sizes: np.ndarray  # its two size words


class Walked(NamedTuple):
    """What `walk` gives: how it stopped, the bytes of buf the taken batches fill, the records decoded,
    then one column per record (the first `records` rows of each are set)."""

    how: int  # END, MORE, SLOW or FULL
    consumed: int
    records: int
    offsets: np.ndarray
    timestamps: np.ndarray
    key_starts: np.ndarray  # a start from len(buf) on is in `out`
    key_lengths: np.ndarray  # -1: null
    value_starts: np.ndarray
    value_lengths: np.ndarray
    producer_ids: np.ndarray
    producer_epochs: np.ndarray
    transactional: np.ndarray
    positions: np.ndarray  # the record's batch's position in the file


class Scanned(NamedTuple):
    """What `scan_control` gives: how it stopped and the bytes taken, as `walk`, and the file positions of
    the control batches it stepped over."""

    how: int
    consumed: int
    control_positions: np.ndarray


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
_NO_TABLES = np.zeros((0, 256), np.int64)


def native_functions() -> Native:
    """What `walk` and `scan_control` are given as `native`, from what this machine's libraries offer."""
    from offset_audit.inputs.segments import native

    tables = _NO_TABLES if native.CRC32C_AVAILABLE else CRC32C_TABLES
    return Native(
        tables,
        native.CRC32C,
        native.ZSTD_DECOMPRESS,
        native.ZSTD_IS_ERROR,
        native.ZSTD_CONTEXT,
        native.INFLATE_RESET,
        native.INFLATE,
        native.GZIP_STREAM,
        native.GZIP_STREAM_WORDS32,
        native.GZIP_FIELDS,
        native.LZ4_DECOMPRESS,
        native.LZ4_IS_ERROR,
        native.LZ4_RESET,
        native.LZ4_CONTEXT,
        native.LZ4_SIZES,
    )


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
def _crc(buf, address, start, end, tables, crc_function):
    """CRC-32C of buf[start:end] (buf at `address`): libcrc32c's when `crc_function` is it (native's), else
    the tables'."""
    if tables.shape[0] == 0:
        return np.int64(crc_function(address + np.uint64(start), np.uint64(end - start)))
    return crc32c(buf, start, end, tables)


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
def _le(buf, pos, width):
    """An unsigned little-endian integer of `width` bytes (1 to 4): snappy's lengths and offsets."""
    value = np.int64(0)
    for k in range(width):
        value |= np.int64(buf[pos + k]) << (8 * k)
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
def _sized(src, cursor, record_end):
    """A key or value: its length varint and bytes, as (start, length, next position); length -1 for
    null, next position -1 when it does not fit the record (the Python reader then says why)."""
    raw, cursor = _uvarint(src, cursor, record_end, 5)
    if raw < 0:
        return cursor, np.int64(-1), np.int64(-1)
    if raw & 1:
        return cursor, np.int64(-1), cursor
    length = raw >> 1
    if cursor + length > record_end:
        return cursor, length, np.int64(-1)
    return cursor, length, cursor + length


@njit(cache=True, nogil=True)
def _read_records(src, cursor, end, count, base_offset, base_timestamp, max_timestamp, attributes, space, columns, row):
    """The `count` records in src[cursor:end] into the columns from `row` on, exactly as
    record_batch._read_records reads them; key and value starts are shifted by `space` (0 for the chunk,
    its length for `out`). Returns the next row, or -1 for records the Python reader must judge."""
    offsets, timestamps, key_starts, key_lengths, value_starts, value_lengths = columns
    for _ in range(count):
        raw, cursor = _uvarint(src, cursor, end, 5)
        if raw < 0 or raw & 1:
            return -1
        record_end = cursor + (raw >> 1)
        if record_end > end:
            return -1
        cursor += 1  # record attributes
        raw, cursor = _uvarint(src, cursor, record_end, 9)  # varlong; 10 bytes go to Python
        if raw < 0:
            return -1
        timestamp_delta = (raw >> 1) ^ -(raw & 1)
        if timestamp_delta < -_TIMESTAMP_SAFE or timestamp_delta > _TIMESTAMP_SAFE:
            return -1
        raw, cursor = _uvarint(src, cursor, record_end, 5)
        if raw < 0:
            return -1
        offset_delta = (raw >> 1) ^ -(raw & 1)
        key_start, key_length, cursor = _sized(src, cursor, record_end)
        if cursor < 0:
            return -1
        value_start, value_length, cursor = _sized(src, cursor, record_end)
        if cursor < 0:
            return -1
        # no headers (a zero count) and nothing else: anything more is for the Python reader
        if cursor + 1 != record_end or src[cursor] != 0:
            return -1
        cursor = record_end
        offsets[row] = base_offset + offset_delta
        timestamps[row] = max_timestamp if attributes & _LOG_APPEND_TIME else base_timestamp + timestamp_delta
        key_starts[row] = key_start + space
        key_lengths[row] = key_length
        value_starts[row] = value_start + space
        value_lengths[row] = value_length
        row += 1
    if cursor != end:
        return -1
    return row


@njit(cache=True, nogil=True)
def _header_stop(buf, pos, n, file_position, file_size, max_batch_bytes):
    """Whether the batch at `pos` can be walked at all (END: yes) or why not: the chunk ends (END with
    nothing left, MORE) or it is one for the Python reader (SLOW). Then its total length."""
    left = n - pos
    if left < _RECORD_BATCH_OVERHEAD:
        return (MORE if file_position + n < file_size else SLOW), np.int64(0)
    size = _be(buf, pos + 8, 4)
    if buf[pos + 16] != 2 or size < _MIN_V2_SIZE or size > max_batch_bytes:
        return SLOW, np.int64(0)
    total = 12 + size
    if total > left:
        return (MORE if file_position + pos + total <= file_size else SLOW), total
    return END, total


@njit(cache=True, nogil=True)
def _gunzip(reset, inflate, words, words32, fields, dst, capacity, src, size):
    """One gzip member at src (size bytes) inflated to dst (at most capacity bytes): how many bytes it
    gave, or -1 where the Python reader must judge. Only a single member that ends exactly at the end of
    the payload is taken: _gunzip in compression.py reads further members and stops at trailing bytes."""
    stream = np.uint64(words.ctypes.data)
    if reset(stream) != 0:
        return -1
    words[fields[0]] = src
    words32[fields[1]] = np.uint32(size)
    words[fields[2]] = dst
    words32[fields[3]] = np.uint32(capacity)
    if inflate(stream, _Z_FINISH) != _Z_STREAM_END or words32[fields[1]] != 0:
        return -1
    return np.int64(capacity) - np.int64(words32[fields[3]])


@njit(cache=True, nogil=True)
def _unlz4(decompress, is_error, reset, context, sizes, buf, start, dst, capacity, src, size):
    """One lz4 frame at src (size bytes, buf[start:] in the chunk) decoded to dst (at most capacity
    bytes): how many bytes it gave, or -1 where the Python reader must judge. Only a frame that starts
    with the frame magic and ends with the payload is taken."""
    if size < 4 or buf[start] != 0x04 or buf[start + 1] != 0x22 or buf[start + 2] != 0x4D or buf[start + 3] != 0x18:
        return -1
    reset(np.uint64(context))
    sizes[0] = np.uint64(capacity)
    sizes[1] = np.uint64(size)
    address = np.uint64(sizes.ctypes.data)
    hint = decompress(np.uint64(context), dst, address, src, address + np.uint64(8), np.uint64(0))
    if is_error(hint) != 0 or hint != 0 or np.int64(sizes[1]) != size:
        return -1  # an error, a frame not finished (cut short, or dst full), or bytes after the frame
    return np.int64(sizes[0])


@njit(cache=True, nogil=True)
def _snappy_block(src, start, end, dst, at, room):
    """A raw snappy block src[start:end] decoded to dst[at:] (at most `room` bytes): how many bytes it
    gave, or -1 where the Python reader must judge.

    Strict, so that it takes only what the Python reader (cramjam, i.e. the snap crate) takes, and gives
    the same bytes: the stated length (a varint of at most 5 bytes, below 2^32) must fit `room` and be
    exactly what the elements produce; every literal and copy must lie within the input and the stated
    length; a copy's offset is from 1 to the bytes produced so far (it may overlap what it writes, as a
    run does); a literal with 1-4 length bytes needs 4 bytes left after its tag, as snap requires.
    Elements (tag low bits): 00 literal, length-1 in the tag's upper six bits, or for 60-63 in the next
    1-4 bytes little-endian; 01 copy of 4-11 bytes, 11-bit offset (tag's top 3 bits, then a byte); 10 and
    11 copies of 1-64 bytes with a 2 or 4 byte little-endian offset."""
    # Not _uvarint: it cuts a 5-byte varint to 32 bits as Java does, and would take lengths snap refuses.
    length = np.int64(0)
    pos = start
    done = False
    for k in range(5):
        if pos >= end:
            return -1
        byte = np.int64(src[pos])
        pos += 1
        length |= (byte & 0x7F) << (7 * k)
        if byte < 0x80:
            done = True
            break
    if not done or length > 0xFFFFFFFF or length > room:
        return -1
    limit = at + length
    d = at
    while pos < end:
        tag = np.int64(src[pos])
        pos += 1
        kind = tag & 3
        if kind == 0:
            size = (tag >> 2) + 1
            if size > 60:
                extra = size - 60
                if pos + 4 > end:
                    return -1
                size = _le(src, pos, extra) + 1
                pos += extra
            if end - pos < size or limit - d < size:
                return -1
            for k in range(size):
                dst[d + k] = src[pos + k]
            pos += size
            d += size
            continue
        if kind == 1:
            if pos >= end:
                return -1
            size = 4 + ((tag >> 2) & 7)
            offset = ((tag & 0xE0) << 3) | np.int64(src[pos])
            pos += 1
        elif kind == 2:
            if pos + 2 > end:
                return -1
            size = (tag >> 2) + 1
            offset = _le(src, pos, 2)
            pos += 2
        else:
            if pos + 4 > end:
                return -1
            size = (tag >> 2) + 1
            offset = _le(src, pos, 4)
            pos += 4
        if offset == 0 or offset > d - at or limit - d < size:
            return -1
        # byte by byte: a copy may overlap the bytes it writes (offset 1 repeats one byte)
        for k in range(size):
            dst[d + k] = dst[d + k - offset]
        d += size
    if d != limit:
        return -1
    return length


@njit(cache=True, nogil=True)
def _unsnappy(src, start, end, dst, at, room):
    """A snappy payload src[start:end] decoded to dst[at:] (at most `room` bytes), read as
    compression._unsnappy reads it: snappy-java's stream (the 8-byte magic and two int32 versions, then
    chunks of a big-endian int32 length and a raw block; a second stream header at a chunk boundary is
    skipped), or a bare raw block when there is no stream header. How many bytes it gave, or -1 where
    the Python reader must judge (a header cut short, a chunk length that does not fit, a block it does
    not take)."""
    if end - start < 8 or not _xerial_magic_at(src, start):
        return _snappy_block(src, start, end, dst, at, room)
    pos = start + 16
    produced = np.int64(0)
    while pos < end:
        if end - pos >= 8 and _xerial_magic_at(src, pos):
            pos += 16
            continue
        if end - pos < 4:
            return -1
        chunk = _be(src, pos, 4)
        pos += 4
        if chunk < 0 or chunk > end - pos:
            return -1
        size = _snappy_block(src, pos, pos + chunk, dst, at + produced, room - produced)
        if size < 0:
            return -1
        produced += size
        pos += chunk
    if pos != end:
        return -1  # a stream header cut short: the Python reader reads it as ending there
    return produced


@njit(cache=True, nogil=True)
def _xerial_magic_at(src, pos):
    """Whether snappy-java's stream magic (0x82 'SNAPPY' 0x00) starts at src[pos] (8 bytes known to be there)."""
    return (
        src[pos] == 0x82
        and src[pos + 1] == 0x53
        and src[pos + 2] == 0x4E
        and src[pos + 3] == 0x41
        and src[pos + 4] == 0x50
        and src[pos + 5] == 0x50
        and src[pos + 6] == 0x59
        and src[pos + 7] == 0x00
    )


@njit(cache=True, nogil=True)
def walk(buf, n, file_position, file_size, max_batch_bytes, out, native):
    """Batches of buf[:n] (which starts at byte `file_position` of a file of `file_size` bytes) that the
    fast path takes, from the start of buf up to the first it does not; zstd batches are inflated into
    `out`. `native`: `native_functions()`, the C functions (or their stand-ins) the walk calls.

    Returns a `Walked`.
    """
    tables, crc_function = native.crc_tables, native.crc32c
    zstd_decompress, zstd_is_error, zstd_context = native.zstd_decompress, native.zstd_is_error, native.zstd_context
    inflate_reset, inflate, gzip_words = native.inflate_reset, native.inflate, native.gzip_stream
    gzip_words32, gzip_fields = native.gzip_stream_words32, native.gzip_fields
    lz4_decompress, lz4_is_error, lz4_reset = native.lz4_decompress, native.lz4_is_error, native.lz4_reset
    lz4_context, lz4_sizes = native.lz4_context, native.lz4_sizes
    has_zstd = zstd_context != 0
    has_gzip = len(gzip_words) > 0
    has_lz4 = lz4_context != 0
    # First the headers alone, to size the columns: how many records the candidate batches claim. Inflated
    # records take 7 bytes at least, so those of compressed batches are bounded by what `out` holds.
    pos = 0
    claimed = 0
    claimed_inflated = 0
    inflated_limit = len(out) // _MIN_RECORD_BYTES
    how = END
    while pos < n:
        how, total = _header_stop(buf, pos, n, file_position, file_size, max_batch_bytes)
        if how != END:
            break
        attributes = _be(buf, pos + 21, 2)
        count = _be(buf, pos + 57, 4)
        base_offset = _be(buf, pos, 8)
        codec = attributes & _CODEC_MASK
        if (
            attributes & ~(_FAST_ATTRIBUTES | _CODEC_MASK)
            or (
                codec != 0
                and codec != _SNAPPY
                and not ((codec == _ZSTD and has_zstd) or (codec == _GZIP and has_gzip) or (codec == _LZ4 and has_lz4))
            )
            or count <= 0
            or base_offset < -_OFFSET_SAFE
            or base_offset > _OFFSET_SAFE
        ):
            how = SLOW
            break
        if codec == 0:
            if count * _MIN_RECORD_BYTES > total - _RECORD_BATCH_OVERHEAD:
                how = SLOW
                break
        elif claimed_inflated + count > inflated_limit:
            how = FULL if claimed_inflated else SLOW
            break
        else:
            claimed_inflated += count
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
    columns = (offsets, timestamps, key_starts, key_lengths, value_starts, value_lengths)

    # Then each batch: its CRC, its records inflated if need be, and the records decoded.
    space = len(buf)
    out_address = np.uint64(out.ctypes.data)
    buf_address = np.uint64(buf.ctypes.data)
    inflated = 0
    pos = 0
    row = 0
    while pos < header_end:
        end = pos + 12 + _be(buf, pos + 8, 4)
        stored_crc = _be(buf, pos + 17, 4) & 0xFFFFFFFF
        attributes = _be(buf, pos + 21, 2)
        codec = attributes & _CODEC_MASK
        base_timestamp = _be(buf, pos + 27, 8)
        timestamp_unsafe = base_timestamp < -_TIMESTAMP_SAFE or base_timestamp > _TIMESTAMP_SAFE
        if timestamp_unsafe or _crc(buf, buf_address, pos + 21, end, tables, crc_function) != stored_crc:
            how = SLOW
            header_end = pos
            break
        count = _be(buf, pos + 57, 4)
        base_offset = _be(buf, pos, 8)
        max_timestamp = _be(buf, pos + 35, 8)
        if codec == 0:
            start = pos + _RECORD_BATCH_OVERHEAD
            next_row = _read_records(
                buf, start, end, count, base_offset, base_timestamp, max_timestamp, attributes, 0, columns, row
            )
        else:
            # One byte more than the bound, so a batch inflating past it is caught (and left to Python).
            capacity = min(len(out) - inflated, max_batch_bytes + 1)
            # Addresses as uint64: numba makes a float of uint64 mixed with int64.
            target = out_address + np.uint64(inflated)
            payload = buf_address + np.uint64(pos + _RECORD_BATCH_OVERHEAD)
            payload_size = end - pos - _RECORD_BATCH_OVERHEAD
            if codec == _ZSTD:
                raw = zstd_decompress(
                    np.uint64(zstd_context), target, np.uint64(capacity), payload, np.uint64(payload_size)
                )
                failed = zstd_is_error(raw) != 0
                size = np.int64(raw)  # one integer type in both branches: numba makes a float of two
            elif codec == _LZ4:
                size = _unlz4(
                    lz4_decompress,
                    lz4_is_error,
                    lz4_reset,
                    lz4_context,
                    lz4_sizes,
                    buf,
                    pos + _RECORD_BATCH_OVERHEAD,
                    target,
                    capacity,
                    payload,
                    payload_size,
                )
                failed = size < 0
            elif codec == _SNAPPY:
                start = pos + _RECORD_BATCH_OVERHEAD
                size = _unsnappy(buf, start, end, out, inflated, capacity)
                failed = size < 0
            else:
                size = _gunzip(
                    inflate_reset,
                    inflate,
                    gzip_words,
                    gzip_words32,
                    gzip_fields,
                    target,
                    capacity,
                    payload,
                    payload_size,
                )
                failed = size < 0
            if failed or size > max_batch_bytes:
                # Out of room in `out` after earlier batches: again with all of it; else Python's to judge.
                how = FULL if inflated and capacity < max_batch_bytes + 1 else SLOW
                header_end = pos
                break
            start = inflated
            inflated += np.int64(size)
            next_row = _read_records(
                out, start, inflated, count, base_offset, base_timestamp, max_timestamp, attributes, space, columns, row
            )
        if next_row < 0:
            how = SLOW
            header_end = pos
            break
        producer_id = _be(buf, pos + 43, 8)
        producer_epoch = _be(buf, pos + 51, 2)
        is_transactional = attributes & _TRANSACTIONAL != 0
        # element by element: a slice per batch costs more than the batch's one record
        for batch_row in range(row, next_row):
            producer_ids[batch_row] = producer_id
            producer_epochs[batch_row] = producer_epoch
            transactional[batch_row] = is_transactional
            positions[batch_row] = file_position + pos
        row = next_row
        pos = end
    return Walked(
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
def scan_control(buf, n, file_position, file_size, max_batch_bytes, native):
    """The transaction pass's walk: every magic 2 batch of buf[:n] whose CRC verifies is stepped over
    without being read, and the file positions of the control batches among them are returned.

    Returns a `Scanned`; the Python reader reads the control batches (a few per transaction) and
    everything the scan stops at.
    """
    tables, crc_function = native.crc_tables, native.crc32c
    address = np.uint64(buf.ctypes.data)
    positions = np.empty(n // (12 + _MIN_V2_SIZE) + 1, np.int64)
    found = 0
    pos = 0
    how = END
    while pos < n:
        how, total = _header_stop(buf, pos, n, file_position, file_size, max_batch_bytes)
        if how != END:
            break
        if _crc(buf, address, pos + 21, pos + total, tables, crc_function) != _be(buf, pos + 17, 4) & 0xFFFFFFFF:
            how = SLOW
            break
        if _be(buf, pos + 21, 2) & _CONTROL:
            positions[found] = file_position + pos
            found += 1
        pos += total
    return Scanned(how, pos, positions[:found])


@njit(cache=True, nogil=True)
def gather_bytes(buf, out, starts, lengths, rows):
    """An Arrow binary column's buffers from (start, length) pairs (length -1: null; a start from len(buf)
    on is in `out`): int32 offsets, the bytes, one validity byte per row, and the null count."""
    space = len(buf)
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
            # byte by byte: keys and values are tens of bytes, where a slice's setup costs more
            if start < space:
                for k in range(length):
                    data[at + k] = buf[start + k]
            else:
                start -= space
                for k in range(length):
                    data[at + k] = out[start + k]
            at += length
        arrow_offsets[row + 1] = at
    return arrow_offsets, data, valid, nulls
