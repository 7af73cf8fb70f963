"""Magic 2 record batches (Kafka 0.11+): the header, its CRC-32C, and the varint-framed records.

Layouts and rules from clients/.../record/internal/DefaultRecordBatch.java and DefaultRecord.java:

    batch:  baseOffset int64, batchLength int32, partitionLeaderEpoch int32, magic int8, crc uint32,
            attributes int16, lastOffsetDelta int32, baseTimestamp int64, maxTimestamp int64,
            producerId int64, producerEpoch int16, baseSequence int32, recordsCount int32, records
    record: length varint, attributes int8, timestampDelta varlong, offsetDelta varint,
            keyLength varint, key, valueLength varint, value, headerCount varint,
            headers [keyLength varint, key, valueLength varint, value]

Varints are zigzag-encoded (ByteUtils.readVarint/readVarlong); a negative key or value length is null.
The records loop is the hot path of the whole reader, so it reads one- and two-byte varints inline and
leaves longer ones to a helper.
"""

from __future__ import annotations

import struct

from offset_audit.inputs.segments.compression import CODEC_NAMES, CODEC_NONE, decompress
from offset_audit.inputs.segments.crc import crc32c
from offset_audit.inputs.segments.decoded import DecodedBatch, UntrustedBatch
from offset_audit.inputs.segments.framing import DEFAULT_MAX_BATCH_BYTES, Frame

MAGIC_VALUE_V2 = 2
ATTRIBUTES_OFFSET = 21  # the CRC covers attributes to the end of the batch
RECORD_BATCH_OVERHEAD = 61  # the records (or their compressed form) start here

COMPRESSION_CODEC_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08  # set: LogAppendTime
TRANSACTIONAL_FLAG_MASK = 0x10
CONTROL_FLAG_MASK = 0x20

# ControlRecordType ids a __consumer_offsets log can hold (transaction markers); the others (KRaft's
# LEADER_CHANGE, SNAPSHOT_*, KRAFT_*) become UNKNOWN(n).
CONTROL_TYPE_NAMES = {0: "ABORT", 1: "COMMIT"}
CONTROL_RECORD_KEY_SIZE = 4

# From partitionLeaderEpoch (byte 12) to recordsCount.
_BATCH_HEADER = struct.Struct(">ibIhiqqqhii")
_CONTROL_KEY = struct.Struct(">hh")

_INT64_MAX = 2**63 - 1
_INT64_MIN = -(2**63)
# Base offsets from which base + an int32 delta can leave the int64 range, so the offsets need checking.
_UNCHECKED_BASE_MIN = _INT64_MIN + 2**31
_UNCHECKED_BASE_MAX = _INT64_MAX - 2**31


def decode_default_batch(frame: Frame, max_bytes: int = DEFAULT_MAX_BATCH_BYTES) -> DecodedBatch:
    """The records of one magic 2 batch, or UntrustedBatch; compressed records inflate to at most
    `max_bytes`."""
    data = frame.data
    (
        _leader_epoch,
        _magic,
        stored_crc,
        attributes,
        last_offset_delta,
        base_timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        _base_sequence,
        count,
    ) = _BATCH_HEADER.unpack_from(data, 12)
    try:
        computed_crc = stored_crc if frame.verified else crc32c(data[ATTRIBUTES_OFFSET:])
        if computed_crc != stored_crc:
            # Kafka's wording (DefaultRecordBatch.ensureValid), so the row can be matched with broker logs.
            raise ValueError(f"record batch is corrupt (stored crc = {stored_crc}, computed crc = {computed_crc})")
        if count < 0:
            raise ValueError(f"invalid record count {count} in magic v2 batch")
        is_transactional = attributes & TRANSACTIONAL_FLAG_MASK != 0
        is_control = attributes & CONTROL_FLAG_MASK != 0
        if count == 0:
            # A batch emptied by compaction keeps its header for the producer state; it has no records and
            # Kafka does not even look at its payload.
            return DecodedBatch(
                [], [], [], [], producer_id, producer_epoch, is_transactional, [] if is_control else None
            )
        base_offset = frame.base_offset
        codec = attributes & COMPRESSION_CODEC_MASK
        if codec == CODEC_NONE:
            records, start = data, RECORD_BATCH_OVERHEAD
        else:
            records, start = decompress(codec, data[RECORD_BATCH_OVERHEAD:], MAGIC_VALUE_V2, max_bytes), 0
        # The record timestamp is always baseTimestamp + timestampDelta, even when the delete-horizon flag
        # (0x40) makes baseTimestamp the horizon: the cleaner rewrites the deltas against it
        # (MemoryRecordsBuilder, DefaultRecord.readFrom). Only LogAppendTime overrides it, with maxTimestamp.
        try:
            offsets, timestamps, keys, values = _read_records(records, start, count, base_offset, base_timestamp)
        except ValueError as err:
            what = "records" if codec == CODEC_NONE else f"records (after {CODEC_NAMES[codec]} decompression)"
            raise ValueError(f"malformed {what}: {err}") from err
        if attributes & TIMESTAMP_TYPE_MASK:
            timestamps = [max_timestamp] * count
        if not _UNCHECKED_BASE_MIN <= base_offset <= _UNCHECKED_BASE_MAX:
            _check_offsets_fit(offsets)
        control_types = [_control_type(key) for key in keys] if is_control else None
        return DecodedBatch(
            offsets, timestamps, keys, values, producer_id, producer_epoch, is_transactional, control_types
        )
    except ValueError as err:  # CodecError is one too
        raise UntrustedBatch(str(err), _claimed_records(count, frame.base_offset, last_offset_delta)) from err


def _claimed_records(count: int, base_offset: int, last_offset_delta: int) -> str:
    """What a bad batch stands for, as its (unverified) header tells it."""
    last_offset = base_offset + last_offset_delta
    if count == 1:
        return f"1 record (offset {base_offset}, per the batch header)"
    return f"{count} records (offsets {base_offset}..{last_offset}, per the batch header)"


def _read_records(
    buf: bytes, pos: int, count: int, base_offset: int, base_timestamp: int
) -> tuple[list[int], list[int], list[bytes | None], list[bytes | None]]:
    """Offsets, timestamps, keys and values of the `count` records in buf[pos:], which they must fill exactly
    (DefaultRecordBatch.RecordIterator checks that nothing is left after the last record).

    Every read is bounded by the record's own length, as DefaultRecord.readFrom reads from a buffer of
    that size: a field that would run past it is a ValueError saying so, never an IndexError.

    Every varint is read the same way, spelled out five times because this loop runs once per record:
    one- and two-byte varints (nearly all of them: lengths below 8 KiB, deltas below 8 s) are decoded
    inline, longer ones by `_uvarint`/`_uvarlong`; then the zigzag is undone.
    """
    end = len(buf)
    offsets: list[int] = []
    timestamps: list[int] = []
    keys: list[bytes | None] = []
    values: list[bytes | None] = []
    add_offset = offsets.append
    add_timestamp = timestamps.append
    add_key = keys.append
    add_value = values.append
    for index in range(count):
        if pos >= end:
            raise ValueError(f"the records end after {index} of the {count} the header counts")
        raw = buf[pos]
        if raw < 0x80:
            pos += 1
        elif pos + 1 < end and buf[pos + 1] < 0x80:
            raw = (raw & 0x7F) | (buf[pos + 1] << 7)
            pos += 2
        else:
            raw, pos = _uvarint(buf, pos, end)
        size = (raw >> 1) ^ -(raw & 1)
        record_start = pos
        record_end = pos + size
        if size < 0 or record_end > end:
            raise ValueError(f"record {index} claims {size} bytes, {end - record_start} are left")
        # attributes (unused by every Kafka version so far), then the timestamp delta, the offset delta,
        # the key length and the value length: at least one byte each
        if record_end - pos < _MIN_RECORD_FIELDS:
            raise ValueError(f"record {index} claims {size} bytes, too few for its fields")
        pos += 1

        raw = buf[pos]
        if raw < 0x80:
            pos += 1
        elif pos + 1 < record_end and buf[pos + 1] < 0x80:
            raw = (raw & 0x7F) | (buf[pos + 1] << 7)
            pos += 2
        else:
            raw, pos = _uvarlong(buf, pos, record_end)
        timestamp_delta = (raw >> 1) ^ -(raw & 1)

        if pos >= record_end:
            raise _cut(index, "offset delta")
        raw = buf[pos]
        if raw < 0x80:
            pos += 1
        elif pos + 1 < record_end and buf[pos + 1] < 0x80:
            raw = (raw & 0x7F) | (buf[pos + 1] << 7)
            pos += 2
        else:
            raw, pos = _uvarint(buf, pos, record_end)
        offset_delta = (raw >> 1) ^ -(raw & 1)

        if pos >= record_end:
            raise _cut(index, "key length")
        raw = buf[pos]
        if raw < 0x80:
            pos += 1
        elif pos + 1 < record_end and buf[pos + 1] < 0x80:
            raw = (raw & 0x7F) | (buf[pos + 1] << 7)
            pos += 2
        else:
            raw, pos = _uvarint(buf, pos, record_end)
        if raw & 1:  # a negative length: null (Kafka's Utils.readBytes takes any negative size as null)
            key = None
        else:
            key_end = pos + (raw >> 1)
            if key_end > record_end:
                raise _cut(index, "key")
            key = buf[pos:key_end]
            pos = key_end

        if pos >= record_end:
            raise _cut(index, "value length")
        raw = buf[pos]
        if raw < 0x80:
            pos += 1
        elif pos + 1 < record_end and buf[pos + 1] < 0x80:
            raw = (raw & 0x7F) | (buf[pos + 1] << 7)
            pos += 2
        else:
            raw, pos = _uvarint(buf, pos, record_end)
        if raw & 1:
            value = None
        else:
            value_end = pos + (raw >> 1)
            if value_end > record_end:
                raise _cut(index, "value")
            value = buf[pos:value_end]
            pos = value_end

        if pos >= record_end:
            raise _cut(index, "header count")
        if buf[pos] == 0:  # no headers, the usual case
            pos += 1
        else:
            pos = _skip_headers(buf, pos, record_end)

        if pos != record_end:
            raise ValueError(f"record {index} should be {size} bytes, its fields take {pos - record_start}")
        add_offset(base_offset + offset_delta)
        add_timestamp(base_timestamp + timestamp_delta)
        add_key(key)
        add_value(value)
    if pos != end:
        raise ValueError(f"{end - pos} bytes are left after the {count} records the header counts")
    return offsets, timestamps, keys, values


# attributes, timestamp delta, offset delta, key length, value length, header count: a byte each at least
_MIN_RECORD_FIELDS = 6


def _cut(index: int, field: str) -> ValueError:
    return ValueError(f"record {index} ends inside its {field}")


def _uvarint(buf: bytes, pos: int, limit: int) -> tuple[int, int]:
    """An unsigned varint of at most 5 bytes within buf[:limit], truncated to 32 bits as Java's int does
    (ByteUtils.readUnsignedVarint); the caller undoes the zigzag."""
    start = pos
    raw = 0
    shift = 0
    while True:
        if pos >= limit:
            raise ValueError(f"varint at byte {start} runs past the end of its record")
        byte = buf[pos]
        pos += 1
        raw |= (byte & 0x7F) << shift
        if byte < 0x80:
            return raw & 0xFFFFFFFF, pos
        shift += 7
        if shift > 28:
            raise ValueError(f"varint at byte {start} is longer than 5 bytes")


def _uvarlong(buf: bytes, pos: int, limit: int) -> tuple[int, int]:
    """An unsigned varlong of at most 10 bytes within buf[:limit], truncated to 64 bits
    (ByteUtils.readUnsignedVarlong)."""
    start = pos
    raw = 0
    shift = 0
    while True:
        if pos >= limit:
            raise ValueError(f"varlong at byte {start} runs past the end of its record")
        byte = buf[pos]
        pos += 1
        raw |= (byte & 0x7F) << shift
        if byte < 0x80:
            return raw & 0xFFFFFFFFFFFFFFFF, pos
        shift += 7
        if shift > 63:
            raise ValueError(f"varlong at byte {start} is longer than 10 bytes")


def _varint(buf: bytes, pos: int, limit: int) -> tuple[int, int]:
    """A zigzag varint (ByteUtils.readVarint), for the cold paths."""
    raw, pos = _uvarint(buf, pos, limit)
    return (raw >> 1) ^ -(raw & 1), pos


def _skip_headers(buf: bytes, pos: int, limit: int) -> int:
    """Step over a record's headers, checking them as DefaultRecord.readHeaders does; the output has no
    column for them (the coordinator never writes any)."""
    count, pos = _varint(buf, pos, limit)
    if count < 0:
        raise ValueError(f"invalid number of record headers {count}")
    if count > limit - pos:
        raise ValueError(f"{count} record headers cannot fit in the {limit - pos} bytes left")
    for _ in range(count):
        key_size, pos = _varint(buf, pos, limit)
        if key_size < 0:
            raise ValueError(f"invalid negative header key size {key_size}")
        pos += key_size
        value_size, pos = _varint(buf, pos, limit)
        if value_size > 0:
            pos += value_size
    return pos


def _check_offsets_fit(offsets: list[int]) -> None:
    """Java would wrap base + delta past the int64 range; a batch that does that is garbage, not data."""
    if offsets and (max(offsets) > _INT64_MAX or min(offsets) < _INT64_MIN):
        raise ValueError("record offsets (base offset + offset delta) overflow int64")


def _control_type(key: bytes | None) -> str:
    """The marker type from a control record key: int16 version, int16 type (ControlRecordType.parseTypeId;
    a version above 0 is read as version 0, a negative one is corruption)."""
    if key is None or len(key) < CONTROL_RECORD_KEY_SIZE:
        size = "null" if key is None else f"{len(key)} bytes"
        raise ValueError(f"control record key is {size}, needs at least {CONTROL_RECORD_KEY_SIZE}")
    version, control_type = _CONTROL_KEY.unpack_from(key)
    if version < 0:
        raise ValueError(f"invalid control record key version {version}")
    return CONTROL_TYPE_NAMES.get(control_type, f"UNKNOWN({control_type})")
