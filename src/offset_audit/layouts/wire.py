"""Kafka's primitive wire encodings (reference 1.2), read from a bytes buffer.

Every read checks the bytes it needs are there, so a truncated or corrupt record becomes a
`DecodeError` with a reason a person can act on, never an IndexError or a garbage value.
"""

from __future__ import annotations

import struct
import uuid

_INT8 = struct.Struct(">b")
_INT16 = struct.Struct(">h")
_UINT16 = struct.Struct(">H")
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")
_FLOAT64 = struct.Struct(">d")


class DecodeError(ValueError):
    """Bytes that do not fit the layout; the message becomes the quarantine reason."""


class WireReader:
    """A cursor over one key or value.

    `what` names the thing being read ("value of OffsetCommit v3") so that every error says where it
    happened.
    """

    __slots__ = ("buf", "pos", "what")

    def __init__(self, buf: bytes, pos: int = 0, what: str = "record") -> None:
        self.buf = buf
        self.pos = pos
        self.what = what

    @property
    def remaining(self) -> int:
        return len(self.buf) - self.pos

    def _need(self, n: int, field: str) -> None:
        if n > len(self.buf) - self.pos:
            raise DecodeError(
                f"truncated {self.what}: field '{field}' needs {n} bytes at byte {self.pos}, "
                f"{len(self.buf) - self.pos} left"
            )

    def int8(self, field: str = "int8") -> int:
        self._need(1, field)
        v = _INT8.unpack_from(self.buf, self.pos)[0]
        self.pos += 1
        return v

    def int16(self, field: str = "int16") -> int:
        self._need(2, field)
        v = _INT16.unpack_from(self.buf, self.pos)[0]
        self.pos += 2
        return v

    def uint16(self, field: str = "uint16") -> int:
        self._need(2, field)
        v = _UINT16.unpack_from(self.buf, self.pos)[0]
        self.pos += 2
        return v

    def int32(self, field: str = "int32") -> int:
        self._need(4, field)
        v = _INT32.unpack_from(self.buf, self.pos)[0]
        self.pos += 4
        return v

    def int64(self, field: str = "int64") -> int:
        self._need(8, field)
        v = _INT64.unpack_from(self.buf, self.pos)[0]
        self.pos += 8
        return v

    def float64(self, field: str = "float64") -> float:
        self._need(8, field)
        v = _FLOAT64.unpack_from(self.buf, self.pos)[0]
        self.pos += 8
        return v

    def boolean(self, field: str = "bool") -> bool:
        return self.int8(field) != 0

    def uuid(self, field: str = "uuid") -> str:
        self._need(16, field)
        raw = self.buf[self.pos : self.pos + 16]
        self.pos += 16
        return str(uuid.UUID(bytes=bytes(raw)))

    def uvarint(self, field: str = "varint") -> int:
        """Unsigned LEB128 as Kafka writes it: at most 5 bytes for a 32-bit value."""
        value = 0
        shift = 0
        for _ in range(5):
            self._need(1, field)
            b = self.buf[self.pos]
            self.pos += 1
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7
        raise DecodeError(f"corrupt {self.what}: varint for '{field}' is longer than 5 bytes")

    def raw(self, n: int, field: str) -> bytes:
        self._need(n, field)
        out = bytes(self.buf[self.pos : self.pos + n])
        self.pos += n
        return out

    # Lengths: each returns -1 for null, else the byte/element count, checked against what is left.

    def length(self, flexible: bool, wide: bool, field: str) -> int:
        """Length prefix of a string (int16 / compact) or bytes/array (int32 / compact)."""
        if flexible:
            n = self.uvarint(field) - 1
        else:
            n = self.int32(field) if wide else self.int16(field)
        if n < -1:
            raise DecodeError(f"corrupt {self.what}: negative length {n} for '{field}'")
        return n

    def string(self, flexible: bool, nullable: bool, field: str) -> str | None:
        n = self.length(flexible, False, field)
        if n == -1:
            if not nullable:
                raise DecodeError(f"corrupt {self.what}: non-nullable string '{field}' is null")
            return None
        self._need(n, field)
        # Java's String(bytes, UTF_8) replaces malformed input rather than failing; so do we.
        s = bytes(self.buf[self.pos : self.pos + n]).decode("utf-8", errors="replace")
        self.pos += n
        return s

    def bytes_(self, flexible: bool, nullable: bool, field: str) -> bytes | None:
        n = self.length(flexible, True, field)
        if n == -1:
            if not nullable:
                raise DecodeError(f"corrupt {self.what}: non-nullable bytes '{field}' is null")
            return None
        return self.raw(n, field)

    def array_length(self, flexible: bool, nullable: bool, field: str, min_element_size: int) -> int:
        n = self.length(flexible, True, field)
        if n == -1:
            if not nullable:
                raise DecodeError(f"corrupt {self.what}: non-nullable array '{field}' is null")
            return -1
        # An element takes at least one byte, so a count beyond the bytes left is impossible; checking
        # here stops a corrupt count from allocating billions of elements.
        if n * min_element_size > self.remaining:
            raise DecodeError(
                f"corrupt {self.what}: array '{field}' claims {n} elements but only {self.remaining} bytes are left"
            )
        return n
