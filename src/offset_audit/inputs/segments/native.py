"""The C functions the compiled segment walker (`fast_walk`) calls: CRC-32C, zstd, gzip and lz4
decompression.

All are loaded with ctypes. CRC-32C and zstd come from libraries the project's dependencies ship, so
every machine that installed the project has them; zlib and liblz4 are the system's:

- `crc32c_value` from google-crc32c's libcrc32c, which uses the CPU's CRC instruction where there is
  one (SSE 4.2, ARMv8): about 10 GB/s, where a table-driven CRC in numba does about 0.4 GB/s and the
  CRC would be half of the walk;
- `ZSTD_decompressDCtx` from libzstd inside the zstandard package's cffi backend. A coordinator set to
  `compression.type=zstd` compresses every batch it writes, nearly always one record each; through
  cramjam each batch costs about 8 µs (a new decoder per call), here about 0.3 µs with one
  decompression context per process.

- `inflateReset` and `inflate` from zlib (the libz Python's own zlib module uses), for a coordinator set
  to gzip: one z_stream per process, reset per batch, instead of the Python reader's per-batch work
  (about 4 µs a one-record batch). The stream's fields are written by the walker at the offsets ctypes
  gives for this platform's z_stream.

- `LZ4F_decompress` from liblz4 (the system's, where there is one: no dependency ships its C symbols),
  with one decompression context per process, reset per batch.

When a library cannot be loaded the walker is given stubs of the same types and told so: it then uses
its own table-driven CRC, and hands that codec's batches to the Python reader. Whatever a library
refuses also goes to the Python reader, so the error a row carries is always the Python reader's,
whichever path read the file.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import importlib.util
from pathlib import Path

import numpy as np
from numba import cfunc, types

_SIZE = ctypes.c_size_t
# Pointers travel as size_t: the walker passes array addresses plus offsets, which numba does as integers.
_ZSTD_SIGNATURE = types.uint64(types.uint64, types.uint64, types.uint64, types.uint64, types.uint64)
_CRC_SIGNATURE = types.uint32(types.uint64, types.uint64)


def _library(path: str | Path | None) -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL(str(path)) if path else None
    except OSError:
        return None


def _package_dir(name: str) -> Path | None:
    spec = importlib.util.find_spec(name)
    return Path(spec.origin).parent if spec is not None and spec.origin else None


def _load_zstd() -> tuple[object, object, int] | None:
    """(ZSTD_decompressDCtx, ZSTD_isError, a decompression context's address), or None."""
    try:
        spec = importlib.util.find_spec("zstandard._cffi")
    except ImportError:
        return None
    lib = _library(spec.origin if spec is not None else None)
    if lib is None or not all(hasattr(lib, f) for f in ("ZSTD_decompressDCtx", "ZSTD_isError", "ZSTD_createDCtx")):
        return None
    decompress, is_error, create = lib.ZSTD_decompressDCtx, lib.ZSTD_isError, lib.ZSTD_createDCtx
    decompress.restype, decompress.argtypes = _SIZE, [_SIZE] * 5
    is_error.restype, is_error.argtypes = ctypes.c_uint, [_SIZE]
    create.restype, create.argtypes = _SIZE, []
    context = create()
    return (decompress, is_error, context) if context else None


def _load_crc32c() -> object | None:
    """crc32c_value(data, length) from the libcrc32c google-crc32c ships beside its module, or None."""
    package = _package_dir("google_crc32c")
    if package is None:
        return None
    for path in sorted((package.parent / "google_crc32c.libs").glob("libcrc32c*.so*")):
        lib = _library(path)
        if lib is not None and hasattr(lib, "crc32c_value"):
            crc = lib.crc32c_value
            crc.restype, crc.argtypes = ctypes.c_uint32, [_SIZE, _SIZE]
            return crc
    return None


class _ZStream(ctypes.Structure):
    """zlib's z_stream (zlib.h), so that ctypes gives its size and its fields' offsets on this platform."""

    _fields_ = [
        ("next_in", ctypes.c_void_p),
        ("avail_in", ctypes.c_uint),
        ("total_in", ctypes.c_ulong),
        ("next_out", ctypes.c_void_p),
        ("avail_out", ctypes.c_uint),
        ("total_out", ctypes.c_ulong),
        ("msg", ctypes.c_char_p),
        ("state", ctypes.c_void_p),
        ("zalloc", ctypes.c_void_p),
        ("zfree", ctypes.c_void_p),
        ("opaque", ctypes.c_void_p),
        ("data_type", ctypes.c_int),
        ("adler", ctypes.c_ulong),
        ("reserved", ctypes.c_ulong),
    ]


_GZIP_WINDOW_BITS = 16 + 15  # a gzip wrapper, the largest window: what Python's _gunzip asks of zlib


def _load_zlib() -> tuple[object, object, np.ndarray, np.ndarray, np.ndarray] | None:
    """(inflateReset, inflate, the stream as uint64 words, the same as uint32 words, the word indexes of
    next_in, avail_in, next_out and avail_out), the stream set up for gzip; or None."""
    pointer, count = ctypes.sizeof(ctypes.c_void_p), ctypes.sizeof(ctypes.c_uint)
    offsets = [_ZStream.next_in.offset, _ZStream.avail_in.offset, _ZStream.next_out.offset, _ZStream.avail_out.offset]
    if pointer != 8 or count != 4 or offsets[0] % 8 or offsets[2] % 8:
        return None  # the walker writes addresses as 64-bit words and counts as 32-bit ones
    lib = _library(ctypes.util.find_library("z"))
    if lib is None or not all(hasattr(lib, f) for f in ("inflateInit2_", "inflateReset", "inflate", "zlibVersion")):
        return None
    words = np.zeros(-(-ctypes.sizeof(_ZStream) // 8), np.uint64)
    init, version = lib.inflateInit2_, lib.zlibVersion
    version.restype, version.argtypes = ctypes.c_char_p, []
    init.restype, init.argtypes = ctypes.c_int, [_SIZE, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
    if init(words.ctypes.data, _GZIP_WINDOW_BITS, version(), ctypes.sizeof(_ZStream)) != 0:
        return None
    reset, inflate = lib.inflateReset, lib.inflate
    reset.restype, reset.argtypes = ctypes.c_int, [_SIZE]
    inflate.restype, inflate.argtypes = ctypes.c_int, [_SIZE, ctypes.c_int]
    fields = np.array([offsets[0] // 8, offsets[1] // 4, offsets[2] // 8, offsets[3] // 4], np.int64)
    return reset, inflate, words, words.view(np.uint32), fields


def _zlib_stubs() -> tuple[object, object, np.ndarray, np.ndarray, np.ndarray]:
    """Functions of zlib's types and an empty stream: the walker leaves gzip batches to Python."""

    @cfunc(types.int32(types.uint64))
    def no_reset(_stream):
        return -2

    @cfunc(types.int32(types.uint64, types.int32))
    def no_inflate(_stream, _flush):
        return -2

    words = np.zeros(0, np.uint64)
    return no_reset.ctypes, no_inflate.ctypes, words, words.view(np.uint32), np.zeros(4, np.int64)


_LZ4F_VERSION = 100


def _load_lz4() -> tuple[object, object, object, int, np.ndarray] | None:
    """(LZ4F_decompress, LZ4F_isError, LZ4F_resetDecompressionContext, a context's address, two size_t
    words for the in/out sizes LZ4F_decompress takes by pointer), or None."""
    lib = _library(ctypes.util.find_library("lz4"))
    names = ("LZ4F_createDecompressionContext", "LZ4F_decompress", "LZ4F_isError", "LZ4F_resetDecompressionContext")
    if lib is None or not all(hasattr(lib, f) for f in names) or ctypes.sizeof(ctypes.c_size_t) != 8:
        return None
    create = lib.LZ4F_createDecompressionContext
    create.restype, create.argtypes = _SIZE, [ctypes.POINTER(ctypes.c_void_p), ctypes.c_uint]
    context = ctypes.c_void_p()
    if create(ctypes.byref(context), _LZ4F_VERSION) != 0 or not context.value:
        return None
    decompress, is_error, reset = lib.LZ4F_decompress, lib.LZ4F_isError, lib.LZ4F_resetDecompressionContext
    decompress.restype, decompress.argtypes = _SIZE, [_SIZE] * 6
    is_error.restype, is_error.argtypes = ctypes.c_uint, [_SIZE]
    reset.restype, reset.argtypes = None, [_SIZE]
    return decompress, is_error, reset, context.value, np.zeros(2, np.uint64)


def _lz4_stubs() -> tuple[object, object, object, int, np.ndarray]:
    """Functions of liblz4's types and context 0: the walker leaves lz4 batches to Python."""

    @cfunc(types.uint64(types.uint64, types.uint64, types.uint64, types.uint64, types.uint64, types.uint64))
    def refuse(_context, _dst, _dst_size, _src, _src_size, _options):
        return 0xFFFFFFFFFFFFFFFF

    @cfunc(types.uint32(types.uint64))
    def always_error(_result):
        return 1

    @cfunc(types.void(types.uint64))
    def no_reset(_context):
        return

    return refuse.ctypes, always_error.ctypes, no_reset.ctypes, 0, np.zeros(2, np.uint64)


def _zstd_stubs() -> tuple[object, object, int]:
    """Functions of libzstd's types that refuse every batch, so the walker needs no second variant."""

    @cfunc(_ZSTD_SIGNATURE)
    def refuse(_context, _dst, _capacity, _src, _size):
        return 0xFFFFFFFFFFFFFFFF

    @cfunc(types.uint32(types.uint64))
    def always_error(_result):
        return 1

    return refuse.ctypes, always_error.ctypes, 0


def _crc_stub() -> object:
    @cfunc(_CRC_SIGNATURE)
    def unused(_data, _length):
        return 0

    return unused.ctypes


_zstd = _load_zstd()
_crc = _load_crc32c()
_zlib = _load_zlib()
_lz4 = _load_lz4()
CRC32C_AVAILABLE = _crc is not None
LZ4_AVAILABLE = _lz4 is not None
# What the walker is given: the libraries' functions, or stubs it is told not to trust.
ZSTD_DECOMPRESS, ZSTD_IS_ERROR, ZSTD_CONTEXT = _zstd if _zstd is not None else _zstd_stubs()
CRC32C = _crc if _crc is not None else _crc_stub()
# An empty stream (GZIP_STREAM) tells the walker there is no zlib.
INFLATE_RESET, INFLATE, GZIP_STREAM, GZIP_STREAM_WORDS32, GZIP_FIELDS = _zlib if _zlib is not None else _zlib_stubs()
# Context 0 (LZ4_CONTEXT) tells the walker there is no liblz4.
LZ4_DECOMPRESS, LZ4_IS_ERROR, LZ4_RESET, LZ4_CONTEXT, LZ4_SIZES = _lz4 if _lz4 is not None else _lz4_stubs()
