"""Value helpers for conformance: arrays from bit patterns, bit patterns from arrays, comparison
(bit-exact for integers and bools; within a ULP budget for floats, all NaNs equal, and the sign of
a zero always checked: no budget covers it)."""

from __future__ import annotations

import numpy as np

from ..ir.types import DataType

__all__ = ["from_bits", "to_bits", "mismatches", "ulp_distance", "opposite_zero", "zero_sign_note",
           "buffer_mismatches"]

_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def from_bits(dtype: DataType, bits: list[int] | np.ndarray) -> np.ndarray:
    """Values of ``dtype`` (its numpy value dtype) from bit patterns, exactly (NaN payloads kept)."""
    if dtype is DataType.BOOL:
        return np.asarray(bits, dtype=np.uint8).astype(bool)
    raw = np.asarray(bits, dtype=np.uint64).astype(_UINT[dtype.numpy_dtype.itemsize])
    return raw.view(dtype.numpy_dtype)


def to_bits(dtype: DataType, values: np.ndarray) -> np.ndarray:
    """Bit patterns (as unsigned integers) of values of ``dtype``."""
    arr = np.asarray(values)
    if dtype is DataType.BOOL:
        return arr.astype(np.uint8)
    return np.ascontiguousarray(arr.astype(dtype.numpy_dtype, copy=False)).view(_UINT[dtype.numpy_dtype.itemsize])


def ulp_distance(dtype: DataType, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Units in the last place between two float arrays (ordered bit distance; ±0 are 0 apart, so
    a comparison within a budget checks the sign of zero apart: ``opposite_zero``)."""
    width = dtype.numpy_dtype.itemsize * 8
    sint = np.dtype(f"i{width // 8}")

    def ordered(x: np.ndarray) -> np.ndarray:
        i = np.ascontiguousarray(x).view(sint).astype(object if width == 64 else np.int64)
        return np.where(i < 0, -(i & ((1 << (width - 1)) - 1)), i)

    return np.abs(ordered(a) - ordered(b))


def opposite_zero(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Where one of two float arrays holds a zero and the other a number of the other sign
    (-0.0 for +0.0, or +0.0 for a negative number): a wrong sign, however few ULP apart."""
    a, b = np.asarray(a), np.asarray(b)
    numbers = ~(np.isnan(a) | np.isnan(b))
    return numbers & ((a == 0) | (b == 0)) & (np.signbit(a) != np.signbit(b))


def zero_sign_note(expected: object, actual: object) -> str:
    """A clause for a report when two float values differ in the sign of a zero ("" otherwise)."""
    if not bool(opposite_zero(np.asarray(expected), np.asarray(actual)).any()):
        return ""
    return " (the sign of zero differs: no ULP budget covers a wrong sign)"


def mismatches(dtype: DataType, expected: np.ndarray, actual: np.ndarray, ulp: int = 0) -> np.ndarray:
    """Indices where ``actual`` differs from ``expected``: bits for integers/bools; for floats
    any NaN matches any NaN, otherwise bits (ulp=0) or at most ``ulp`` units apart and of one sign
    where either is a zero (``opposite_zero``)."""
    e, a = np.asarray(expected), np.asarray(actual)
    if not dtype.is_float:
        return np.flatnonzero(to_bits(dtype, e) != to_bits(dtype, a))
    e_nan, a_nan = np.isnan(e), np.isnan(a)
    if ulp == 0:
        differ = to_bits(dtype, e) != to_bits(dtype, a)
    else:
        differ = ulp_distance(dtype, e, a) > ulp
        differ |= np.isinf(e) != np.isinf(a)
        differ |= opposite_zero(e, a)
    return np.flatnonzero(np.where(e_nan | a_nan, e_nan != a_nan, differ))


def buffer_mismatches(dtype: DataType, expected: np.ndarray, actual: np.ndarray, ulp: int = 0) -> np.ndarray:
    """``mismatches`` for the contents of a buffer of storage type ``dtype`` as dispatch returns
    them (bf16 as uint16 bit patterns is compared as the floats it encodes; shapes must agree)."""
    e, a = np.asarray(expected), np.asarray(actual)
    if e.shape != a.shape:
        return np.arange(max(e.size, a.size))
    if dtype is DataType.BF16:
        e = (e.astype(np.uint32) << np.uint32(16)).view(np.float32)
        a = (a.astype(np.uint32) << np.uint32(16)).view(np.float32)
        dtype = DataType.F32
    return mismatches(dtype, e, a, ulp)
