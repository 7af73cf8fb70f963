"""The five codecs a Kafka batch (or legacy wrapper message) can be compressed with, undone.

The codec id is attributes bits 0-2 in every magic (CompressionType: 0 none, 1 gzip, 2 snappy, 3 lz4,
4 zstd). Each codec is read the way Kafka's own input streams read it
(clients/.../common/compress/*Compression.java), through maintained libraries: zlib for gzip, cramjam
for snappy, lz4 and zstd. Two of them need framing Kafka adds on top of the library format:

- snappy is written by snappy-java's SnappyOutputStream ("xerial" framing), not Google's framing format;
- lz4 frames of magic 0 carry a frame-descriptor checksum that old Kafka computed over the wrong bytes.

A batch's header says nothing trustworthy about how large it inflates: 1 MiB of gzip can hold 1 GiB of
zeros. Every codec is therefore undone into a bounded output (`max_bytes`, the decode.max_batch_mib
setting): past the bound the batch is refused as a CodecError, having used no more memory than the
bound. The output buffer is allocated once per process and reused, so only pages a batch really
fills ever become resident.
"""

from __future__ import annotations

import threading
import zlib

import cramjam
import numpy as np

CODEC_NONE = 0
CODEC_GZIP = 1
CODEC_SNAPPY = 2
CODEC_LZ4 = 3
CODEC_ZSTD = 4

CODEC_NAMES = {CODEC_NONE: "none", CODEC_GZIP: "gzip", CODEC_SNAPPY: "snappy", CODEC_LZ4: "lz4", CODEC_ZSTD: "zstd"}

# snappy-java's stream header: 8 magic bytes, then int32 version and int32 compatible version; chunks
# follow as [int32 length][raw snappy block] (SnappyOutputStream, SnappyCodec.MAGIC_HEADER).
XERIAL_MAGIC = b"\x82SNAPPY\x00"
XERIAL_HEADER_SIZE = 16

LZ4_FRAME_MAGIC = b"\x04\x22\x4d\x18"
_LZ4_FLG_CONTENT_SIZE = 0x08
_LZ4_FLG_DICT_ID = 0x01

_GZIP_MAGIC = b"\x1f\x8b"
DEFAULT_MAX_BYTES = 64 << 20  # framing.DEFAULT_MAX_BATCH_BYTES, decode.max_batch_mib


class CodecError(ValueError):
    """A payload that cannot be decompressed, or a codec id Kafka does not define."""


class TooLarge(CodecError):
    """A payload that inflates past the bound."""


# Each thread's reusable output buffer: a fresh 64 MiB np.empty per batch cost 20 us more than reusing
# one (a 5 KB zstd batch: 9-11 us against 29 us), and a buffer shared by threads would be written by two
# decompressions at once.
_scratch = threading.local()


def _buffer(size: int) -> np.ndarray:
    """This thread's output buffer, at least `size` bytes (allocated lazily, never filled)."""
    out: np.ndarray | None = getattr(_scratch, "out", None)
    if out is None or len(out) < size:
        out = _scratch.out = np.empty(size, np.uint8)
    return out[:size]


def decompress(codec: int, payload: bytes, magic: int, max_bytes: int = DEFAULT_MAX_BYTES) -> bytes:
    """The uncompressed bytes of a batch's records (magic 2) or a wrapper's inner message set (magic 0/1),
    at most `max_bytes` of them.

    `magic` matters only for lz4, where Kafka ignores the frame-descriptor checksum of magic 0 data.
    """
    name = CODEC_NAMES.get(codec)
    try:
        if codec == CODEC_GZIP:
            return _gunzip(payload, max_bytes)
        if codec == CODEC_SNAPPY:
            return _unsnappy(payload, max_bytes)
        if codec == CODEC_LZ4:
            framed = _with_correct_descriptor_checksum(payload) if magic == 0 else payload
            return _bounded(cramjam.lz4.decompress_into, framed, max_bytes)
        if codec == CODEC_ZSTD:
            return _bounded(cramjam.zstd.decompress_into, payload, max_bytes)
    except TooLarge as err:
        raise TooLarge(
            f"{name} payload of {len(payload)} bytes inflates to {err}; refused without inflating further (raise "
            "decode.max_batch_mib if a broker really wrote such a batch)"
        ) from err
    except (cramjam.DecompressionError, zlib.error, ValueError) as err:
        raise CodecError(f"{name} payload of {len(payload)} bytes cannot be decompressed: {err}") from err
    raise CodecError(f"unknown compression codec id {codec} (Kafka defines 0-4: none, gzip, snappy, lz4, zstd)")


def _too_large(max_bytes: int) -> TooLarge:
    return TooLarge(f"more than {max_bytes:,} bytes")


def _bounded(decompress_into, payload: bytes, max_bytes: int) -> bytes:
    """A streaming codec undone into a buffer one byte larger than the bound: cramjam stops with
    'failed to write whole buffer' once the buffer is full, and a full buffer means past the bound."""
    out = _buffer(max_bytes + 1)
    try:
        size = decompress_into(payload, out)
    except cramjam.DecompressionError as err:
        if "write whole buffer" in str(err):
            raise _too_large(max_bytes) from err
        raise
    if size > max_bytes:
        raise _too_large(max_bytes)
    return out[:size].tobytes()


def _gunzip(payload: bytes, max_bytes: int) -> bytes:
    """gzip, member after member: Java's GZIPInputStream reads concatenated members and stops quietly at
    trailing bytes that do not start another member, so this does too. zlib's max_length keeps each step
    within what is left of the bound."""
    parts = []
    total = 0
    rest = payload
    while True:
        member = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
        while True:
            chunk = member.decompress(rest, max_bytes - total + 1)
            total += len(chunk)
            if total > max_bytes:
                raise _too_large(max_bytes)
            parts.append(chunk)
            rest = member.unconsumed_tail
            if member.eof or not rest:
                break
        if not member.eof:
            raise CodecError("gzip stream ends before its end-of-member marker")
        rest = member.unused_data
        if not rest.startswith(_GZIP_MAGIC):
            return b"".join(parts)


def _unsnappy(payload: bytes, max_bytes: int) -> bytes:
    """snappy-java stream framing, or a bare snappy block when the header is absent (SnappyInputStream
    falls back to that too). A second stream header at a chunk boundary is skipped, as snappy-java does
    for concatenated streams; it cannot be mistaken for a chunk because its first byte would make the
    chunk length negative."""
    if not payload.startswith(XERIAL_MAGIC):
        return _snappy_block(payload, _buffer(max_bytes), max_bytes)
    view = memoryview(payload)
    parts = []
    total = 0
    pos = XERIAL_HEADER_SIZE
    end = len(payload)
    while pos < end:
        if payload.startswith(XERIAL_MAGIC, pos):
            pos += XERIAL_HEADER_SIZE
            continue
        if end - pos < 4:
            raise CodecError(f"snappy chunk length at byte {pos} needs 4 bytes, {end - pos} left")
        chunk_size = int.from_bytes(payload[pos : pos + 4], "big", signed=True)
        pos += 4
        if chunk_size < 0 or chunk_size > end - pos:
            raise CodecError(f"snappy chunk of {chunk_size} bytes at byte {pos - 4}, {end - pos} left")
        part = _snappy_block(view[pos : pos + chunk_size], _buffer(max_bytes - total), max_bytes)
        total += len(part)
        parts.append(part)
        pos += chunk_size
    return b"".join(parts)


def _snappy_block(block, out: np.ndarray, max_bytes: int) -> bytes:
    """A raw snappy block into `out`: its header states its size, which cramjam checks against the
    buffer before writing anything."""
    try:
        # An ndarray is a buffer; numpy's stubs say so (__buffer__) only for Python 3.12 on.
        size = cramjam.snappy.decompress_raw_into(block, out)  # type: ignore[arg-type]
    except cramjam.DecompressionError as err:
        if "smaller than required" in str(err):
            raise _too_large(max_bytes) from err
        raise
    return out[:size].tobytes()


def _with_correct_descriptor_checksum(frame: bytes) -> bytes:
    """The lz4 frame with its header checksum (HC) byte recomputed.

    Kafka before 0.10 hashed the frame magic together with the descriptor, and brokers kept writing magic 0
    data that way (KafkaLZ4BlockOutputStream's useBrokenFlagDescriptorChecksum); Kafka therefore ignores HC
    for magic 0 (Lz4BlockInputStream ignoreFlagDescriptorChecksum, Lz4Compression.wrapForInput). The lz4
    library always checks it, so rewrite it to the correct value instead. The batch CRC still guards
    these bytes.
    """
    if len(frame) < 7 or not frame.startswith(LZ4_FRAME_MAGIC):
        return frame
    flg = frame[4]
    descriptor_end = 6 + (8 if flg & _LZ4_FLG_CONTENT_SIZE else 0) + (4 if flg & _LZ4_FLG_DICT_ID else 0)
    if len(frame) <= descriptor_end:
        return frame
    checksum = (xxh32(frame[4:descriptor_end]) >> 8) & 0xFF
    if frame[descriptor_end] == checksum:
        return frame
    return frame[:descriptor_end] + bytes((checksum,)) + frame[descriptor_end + 1 :]


_PRIME32_1 = 0x9E3779B1
_PRIME32_2 = 0x85EBCA77
_PRIME32_3 = 0xC2B2AE3D
_PRIME32_4 = 0x27D4EB2F
_PRIME32_5 = 0x165667B1
_MASK32 = 0xFFFFFFFF


def _rotl32(value: int, bits: int) -> int:
    return ((value << bits) | (value >> (32 - bits))) & _MASK32


def _xxh32_round(acc: int, lane: int) -> int:
    return (_rotl32((acc + lane * _PRIME32_2) & _MASK32, 13) * _PRIME32_1) & _MASK32


def xxh32(data: bytes, seed: int = 0) -> int:
    """XXH32, the hash lz4 frames use for their header checksum. Only ever run on a frame descriptor
    (2 to 14 bytes), so a plain Python version is enough and spares a dependency."""
    length = len(data)
    pos = 0
    if length >= 16:
        accs = [
            (seed + _PRIME32_1 + _PRIME32_2) & _MASK32,
            (seed + _PRIME32_2) & _MASK32,
            seed & _MASK32,
            (seed - _PRIME32_1) & _MASK32,
        ]
        while pos + 16 <= length:
            for lane in range(4):
                word = int.from_bytes(data[pos : pos + 4], "little")
                accs[lane] = _xxh32_round(accs[lane], word)
                pos += 4
        digest = (_rotl32(accs[0], 1) + _rotl32(accs[1], 7) + _rotl32(accs[2], 12) + _rotl32(accs[3], 18)) & _MASK32
    else:
        digest = (seed + _PRIME32_5) & _MASK32
    digest = (digest + length) & _MASK32
    while pos + 4 <= length:
        word = int.from_bytes(data[pos : pos + 4], "little")
        digest = (_rotl32((digest + word * _PRIME32_3) & _MASK32, 17) * _PRIME32_4) & _MASK32
        pos += 4
    while pos < length:
        digest = (_rotl32((digest + data[pos] * _PRIME32_5) & _MASK32, 11) * _PRIME32_1) & _MASK32
        pos += 1
    digest ^= digest >> 15
    digest = (digest * _PRIME32_2) & _MASK32
    digest ^= digest >> 13
    digest = (digest * _PRIME32_3) & _MASK32
    digest ^= digest >> 16
    return digest
