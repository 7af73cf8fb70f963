"""Magic 0 and 1 messages (the log format before Kafka 0.11), including compressed wrapper messages.

    message: offset int64, size int32, crc uint32 (zlib CRC-32 of magic..end), magic int8, attributes int8,
             [timestamp int64: magic 1 only], keyLength int32, key, valueLength int32, value

(clients/.../record/internal/LegacyRecord.java.) A compressed message is a wrapper: its value is a whole
message set, compressed with the codec in attributes bits 0-2 (AbstractLegacyRecordBatch.DeepRecordsIterator):

- magic 1 wrappers carry the offset of their LAST inner message, and inner offsets are relative
  (0, 1, 2, ...); magic 0 inner messages carry absolute offsets;
- a magic 1 wrapper with LogAppendTime (attributes bit 3) gives its timestamp to every inner message;
- legacy messages have no producer id, epoch or transactions.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from offset_audit.inputs.segments.compression import CODEC_NAMES, CODEC_NONE, CODEC_ZSTD, CodecError, decompress
from offset_audit.inputs.segments.crc import crc32
from offset_audit.inputs.segments.decoded import NO_TIMESTAMP, DecodedBatch, UntrustedBatch
from offset_audit.inputs.segments.framing import (
    DEFAULT_MAX_BATCH_BYTES,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    MIN_SIZE_BY_MAGIC,
    Frame,
)

MAGIC_VALUE_V0 = 0
MAGIC_VALUE_V1 = 1
COMPRESSION_CODEC_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08  # set: LogAppendTime (magic 1)

# offset, size, crc, magic, attributes: the fixed start of every legacy message
_MESSAGE_START = struct.Struct(">qiIbb")
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")
_INT64_MAX = 2**63 - 1


@dataclass(frozen=True, slots=True)
class _Message:
    offset: int
    magic: int
    attributes: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    stored_crc: int
    computed_crc: int


def decode_legacy_message(frame: Frame, max_bytes: int = DEFAULT_MAX_BATCH_BYTES) -> DecodedBatch:
    """The record(s) of one top-level magic 0/1 message: itself, or the inner messages of a wrapper
    (inflated to at most `max_bytes`)."""
    data = frame.data
    codec = data[MAGIC_OFFSET + 1] & COMPRESSION_CODEC_MASK
    if codec == CODEC_NONE:
        claimed = f"1 message (offset {frame.base_offset})"
    else:
        claimed = f"the {_codec_name(codec)}-compressed message set ending at offset {frame.base_offset}"
    try:
        wrapper = _read_message(data, 0, len(data))
    except (ValueError, struct.error) as err:
        raise UntrustedBatch(f"malformed magic {frame.magic} message: {err}", claimed) from err
    if wrapper.stored_crc != wrapper.computed_crc:
        # Kafka's wording (LegacyRecord.ensureValid).
        raise UntrustedBatch(
            f"message is corrupt (stored crc = {wrapper.stored_crc}, computed crc = {wrapper.computed_crc})", claimed
        )
    if codec == CODEC_NONE:
        return DecodedBatch([wrapper.offset], [wrapper.timestamp], [wrapper.key], [wrapper.value])
    return _unwrap(wrapper, codec, claimed, max_bytes)


def _unwrap(wrapper: _Message, codec: int, claimed: str, max_bytes: int) -> DecodedBatch:
    """The inner messages of a compressed wrapper, with absolute offsets and their effective timestamps."""
    if codec == CODEC_ZSTD:
        raise UntrustedBatch(f"zstd compression is not allowed in magic {wrapper.magic} messages", claimed)
    if wrapper.value is None:
        raise UntrustedBatch(f"compressed message set with a null value (magic = {wrapper.magic})", claimed)
    try:
        message_set = decompress(codec, wrapper.value, wrapper.magic, max_bytes)
    except CodecError as err:
        raise UntrustedBatch(str(err), claimed) from err
    try:
        inner = _read_message_set(message_set)
    except (ValueError, struct.error) as err:
        raise UntrustedBatch(f"malformed inner message set: {err}", claimed) from err
    if not inner:
        raise UntrustedBatch("compressed message set with no inner messages", claimed)
    for message in inner:
        # Kafka checks inner CRCs when the message is produced (LogValidator), not when it reads the log;
        # checking here costs little and keeps "never a record from bad bytes" true inside wrappers too.
        if message.stored_crc != message.computed_crc:
            raise UntrustedBatch(
                f"inner message at offset {message.offset} is corrupt "
                f"(stored crc = {message.stored_crc}, computed crc = {message.computed_crc})",
                claimed,
            )
        if message.attributes & COMPRESSION_CODEC_MASK:
            raise UntrustedBatch("inner messages must not be compressed", claimed)

    offsets = [message.offset for message in inner]
    if wrapper.magic == MAGIC_VALUE_V1:
        if wrapper.offset == 0:
            # Some librdkafka versions produced wrappers with offset 0; Kafka then takes inner offsets as they are.
            base = 0
        else:
            last_inner = offsets[-1]
            if wrapper.offset < last_inner:
                raise UntrustedBatch(
                    f"wrapper offset {wrapper.offset} is less than the last inner message offset {last_inner}", claimed
                )
            base = wrapper.offset - last_inner
        offsets = [base + relative for relative in offsets]
        if max(offsets) > _INT64_MAX:
            raise UntrustedBatch("inner offsets overflow int64", claimed)

    wrapper_log_append = wrapper.magic == MAGIC_VALUE_V1 and bool(wrapper.attributes & TIMESTAMP_TYPE_MASK)
    timestamps = [
        NO_TIMESTAMP
        if message.magic == MAGIC_VALUE_V0
        else (wrapper.timestamp if wrapper_log_append else message.timestamp)
        for message in inner
    ]
    return DecodedBatch(offsets, timestamps, [m.key for m in inner], [m.value for m in inner])


def _read_message_set(buf: bytes) -> list[_Message]:
    """Inner messages until the set ends. A partial message at the very end is dropped without a word, as
    Kafka's DataLogInputStream does; a size below the minimum is corruption."""
    messages = []
    pos = 0
    end = len(buf)
    while end - pos >= LOG_OVERHEAD:
        size = _INT32.unpack_from(buf, pos + 8)[0]
        if size < MIN_SIZE_BY_MAGIC[MAGIC_VALUE_V0]:
            raise ValueError(f"inner message at byte {pos} has size {size}, below the minimum record overhead")
        message_end = pos + LOG_OVERHEAD + size
        if message_end > end:
            break
        messages.append(_read_message(buf, pos, message_end))
        pos = message_end
    return messages


def _read_message(buf: bytes, pos: int, end: int) -> _Message:
    """One message from its log overhead at `pos` to `end`; bytes after the value are ignored, as Kafka
    reads key and value by their own lengths."""
    offset, size, stored_crc, magic, attributes = _MESSAGE_START.unpack_from(buf, pos)
    computed_crc = crc32(buf[pos + MAGIC_OFFSET : end])
    cursor = pos + MAGIC_OFFSET + 2
    if magic == MAGIC_VALUE_V0:
        timestamp = NO_TIMESTAMP
    elif magic == MAGIC_VALUE_V1:
        if size < MIN_SIZE_BY_MAGIC[MAGIC_VALUE_V1]:
            raise ValueError(f"magic 1 message at byte {pos} has size {size}, below the minimum record overhead")
        timestamp = _INT64.unpack_from(buf, cursor)[0]
        cursor += 8
    else:
        raise ValueError(f"message at byte {pos} has magic {magic}, expected 0 or 1")
    key, cursor = _sized_bytes(buf, cursor, end, "key")
    value, cursor = _sized_bytes(buf, cursor, end, "value")
    return _Message(offset, magic, attributes, timestamp, key, value, stored_crc, computed_crc)


def _sized_bytes(buf: bytes, pos: int, end: int, field: str) -> tuple[bytes | None, int]:
    if pos + 4 > end:
        raise ValueError(f"{field} length at byte {pos} runs past the end of the message")
    size = _INT32.unpack_from(buf, pos)[0]
    pos += 4
    if size < 0:
        return None, pos
    if pos + size > end:
        raise ValueError(f"{field} of {size} bytes at byte {pos} runs past the end of the message")
    return buf[pos : pos + size], pos + size


def _codec_name(codec: int) -> str:
    return CODEC_NAMES.get(codec, f"codec-{codec}")
