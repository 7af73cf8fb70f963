"""The two C functions the compiled segment walker (`fast_walk`) calls: CRC-32C and zstd decompression.

Both come from libraries the project's dependencies already ship, loaded with ctypes, so every machine
that installed the project has the same code:

- `crc32c_value` from google-crc32c's libcrc32c, which uses the CPU's CRC instruction where there is
  one (SSE 4.2, ARMv8): about 10 GB/s, where a table-driven CRC in numba does about 0.4 GB/s and the
  CRC would be half of the walk;
- `ZSTD_decompressDCtx` from libzstd inside the zstandard package's cffi backend. A coordinator set to
  `compression.type=zstd` compresses every batch it writes, nearly always one record each; through
  cramjam each batch costs about 8 µs (a new decoder per call), here about 0.3 µs with one
  decompression context per process.

When a library cannot be loaded the walker is given stubs of the same types and told so: it then uses
its own table-driven CRC, and hands zstd batches to the Python reader. Whatever libzstd refuses also goes
to the Python reader, so the error a row carries is always cramjam's, whichever path read the file.
"""

from __future__ import annotations

import ctypes
import importlib.util
from pathlib import Path

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
ZSTD_AVAILABLE = _zstd is not None
CRC32C_AVAILABLE = _crc is not None
# What the walker is given: the libraries' functions, or stubs it is told not to trust.
ZSTD_DECOMPRESS, ZSTD_IS_ERROR, ZSTD_CONTEXT = _zstd if _zstd is not None else _zstd_stubs()
CRC32C = _crc if _crc is not None else _crc_stub()
