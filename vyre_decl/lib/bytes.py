"""Byte functions: histogram, CRC-32 (zlib's), CRC-32C, find. They take ``bytes`` or a uint8
array; wider integers are refused (L002: their bytes would depend on the byte order)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ._core import call, fail, intake, ints

__all__ = ["byte_histogram", "crc32", "crc32c", "find"]


def _raw(where: str, data: Any) -> np.ndarray:
    if isinstance(data, (bytes, bytearray, memoryview)):
        return np.frombuffer(bytes(data), np.uint8)
    arr = intake(where, data, "data")
    if arr.dtype != np.uint8:
        raise fail("L002", where, f"data has dtype {arr.dtype}; {where} reads bytes",
                   "pass bytes or a uint8 array (for the bytes of a wider array in memory order, arr.tobytes())")
    return arr.ravel()


def byte_histogram(data: Any, *, backend: Any = "auto") -> np.ndarray:
    """The count of each byte value 0 .. 255 (uint32) of ``bytes`` or a uint8 array."""
    raw = _raw("byte_histogram", data)
    if not raw.size:
        return np.zeros(256, np.uint32)
    return np.asarray(call("byte_histogram", "bytes.histogram", raw, backend=backend))


def _crc(name: str, data: Any, record: int | None, backend: Any) -> Any:
    raw = _raw(name, data)
    if record is None:
        if not raw.size:
            return 0  # the CRC of no bytes, as zlib.crc32(b"")
        return int(call(name, f"bytes.{name}", raw, backend=backend, record=raw.size)[0])
    size = ints(name, record, "record", 1)
    if raw.size % size:
        raise fail("L009", name, f"{raw.size} bytes are not whole records of {size}", "pass whole records")
    if not raw.size:
        return np.zeros(0, np.uint32)
    return np.asarray(call(name, f"bytes.{name}", raw, backend=backend, record=size))


def crc32(data: Any, record: int | None = None, *, backend: Any = "auto") -> Any:
    """The CRC-32 of ``data`` (as ``zlib.crc32``; 0 for no bytes), or with ``record`` an array of
    the CRC-32 of each ``record``-byte record."""
    return _crc("crc32", data, record, backend)


def crc32c(data: Any, record: int | None = None, *, backend: Any = "auto") -> Any:
    """The CRC-32C (Castagnoli) of ``data`` (0 for no bytes), or of each ``record``-byte record."""
    return _crc("crc32c", data, record, backend)


def find(data: Any, byte: int, *, backend: Any = "auto") -> int:
    """The index of the first ``byte`` in ``data`` (``bytes`` or uint8), -1 when there is none."""
    raw = _raw("find", data)
    b = ints("find", byte, "byte", 0, 255)
    if not raw.size:
        return -1
    at = int(call("find", "bytes.find", raw, backend=backend, byte=b)[0])
    return -1 if at == raw.size else at
