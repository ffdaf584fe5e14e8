"""Witness values per type: the boundary cases every op is checked on, plus seeded random ones.

All values are bit patterns, so NaN payloads, signalling NaNs, -0.0 and subnormals survive.
"""

from __future__ import annotations

import struct
from typing import Final

import numpy as np

from ..ir.types import DataType

__all__ = ["witnesses", "random_bits", "sweep"]


def _f32(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


def _f64(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def _int_witnesses(t: DataType) -> list[int]:
    w, mask = t.bits, t.mask
    sign = 1 << (w - 1)
    alt = int("55" * (w // 8), 16)
    vals = [0, 1, 2, 3, 7, 31, 32, 33, 63, 64, 65, 255, 256, mask, mask - 1, sign, sign - 1, sign + 1,
            alt, alt << 1, int("0F" * (w // 8), 16), 0x12345678 & mask, 1 << (w // 2)]
    return sorted({v & mask for v in vals})


_FLOAT_SPECIALS: Final = {
    DataType.F32: [
        _f32(0.0), _f32(-0.0), _f32(1.0), _f32(-1.0), _f32(0.5), _f32(1.5), _f32(2.5), _f32(-2.5), _f32(1 / 3),
        0x7F800000, 0xFF800000,  # ±inf
        0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FC00001,  # quiet, negative, signalling, payload NaN
        0x00000001, 0x80000001, 0x007FFFFF, 0x00800000,  # smallest/largest subnormal, smallest normal
        0x7F7FFFFF, 0xFF7FFFFF,  # ±max finite
        _f32(3e9), _f32(-3e9), _f32(2.0**31), _f32(2.0**32), _f32(2.0**63), _f32(-(2.0**63)), _f32(2.0**64),
        _f32(16777217.0), _f32(0.1), _f32(-0.7), _f32(100.5),
    ],
    DataType.F64: [
        _f64(0.0), _f64(-0.0), _f64(1.0), _f64(-1.0), _f64(0.5), _f64(1.5), _f64(2.5), _f64(-2.5), _f64(1 / 3),
        0x7FF0000000000000, 0xFFF0000000000000,
        0x7FF8000000000000, 0xFFF8000000000000, 0x7FF0000000000001, 0x7FF8000000000001,
        0x0000000000000001, 0x8000000000000001, 0x000FFFFFFFFFFFFF, 0x0010000000000000,
        0x7FEFFFFFFFFFFFFF, 0xFFEFFFFFFFFFFFFF,
        _f64(3e9), _f64(2.0**31), _f64(2.0**32), _f64(2.0**63), _f64(-(2.0**63)), _f64(2.0**64), _f64(1e300),
        _f64(3.4028235677973366e38), _f64(1.401298464324817e-45), _f64(0.1), _f64(-0.7),
    ],
}


def witnesses(t: DataType) -> list[int]:
    """Boundary bit patterns of value type ``t``."""
    if t is DataType.BOOL:
        return [0, 1]
    if t.is_float:
        return list(dict.fromkeys(_FLOAT_SPECIALS[t]))
    return _int_witnesses(t)


def random_bits(t: DataType, n: int, rng: np.random.Generator) -> list[int]:
    """``n`` random bit patterns of ``t``: uniform bits, plus small magnitudes for numbers."""
    if t is DataType.BOOL:
        return [int(v) for v in rng.integers(0, 2, n)]
    raw = rng.integers(0, 1 << t.bits, n, dtype=np.uint64, endpoint=False) if t.bits < 64 else rng.integers(
        0, np.iinfo(np.uint64).max, n, dtype=np.uint64, endpoint=True)
    vals = [int(v) for v in raw]
    if t.is_float:  # also ordinary magnitudes, where most arithmetic happens
        scale = rng.standard_normal(n) * 10.0 ** rng.integers(-8, 9, n)
        vals[: n // 2] = [(_f32 if t is DataType.F32 else _f64)(float(x)) for x in scale[: n // 2]]
    else:
        small = rng.integers(-300, 300, n // 2)
        vals[: n // 2] = [int(v) & t.mask for v in small]
    return vals


def _minifloat(t: DataType) -> np.ndarray:
    """256 float bit patterns decoded from every 8-bit IEEE-style minifloat (1 sign, 4 exponent,
    3 mantissa bits): ±0, subnormals, normals from 2^-6 to 2^8, ±inf and NaNs."""
    b = np.arange(256, dtype=np.uint64)
    sign, exp, man = b >> 7, (b >> 3) & 15, b & 7
    width = 32 if t is DataType.F32 else 64
    frac, bias = (23, 127) if t is DataType.F32 else (52, 1023)
    top = np.uint64(width - 1)
    normal = (sign << top) | ((exp - 7 + bias).astype(np.uint64) << np.uint64(frac)) | (man << np.uint64(frac - 3))
    tiny = (sign << top) | man  # zero and subnormals
    special = (sign << top) | (np.uint64((1 << (width - 1 - frac)) - 1) << np.uint64(frac)) | man  # inf, NaN
    return np.where(exp == 0, tiny, np.where(exp == 15, special, normal))


def sweep(t: DataType, arity: int) -> list[np.ndarray]:
    """Exhaustive small-domain cases for an op of ``arity`` operands of type ``t`` (columns of bit
    patterns): bool — every combination; integers — every 8-bit value (signed: -128..127), every
    pair for binary ops; floats — every bf16-grid pattern (unary) or every pair of 8-bit minifloats
    (binary). Three-operand ops take a 32-value slice of the same domain, ops of more operands a
    slice small enough that every combination stays around 40,000 cases."""
    if t is DataType.BOOL:
        base = np.arange(2, dtype=np.uint64)
    elif t.is_int:
        lo = -128 if t.is_signed else 0
        base = (np.arange(lo, lo + 256, dtype=np.int64) & t.mask).astype(np.uint64) if t.bits < 64 else \
            np.array([v & t.mask for v in range(lo, lo + 256)], dtype=np.uint64)
    elif arity == 1:
        shift = np.uint64(16 if t is DataType.F32 else 48)
        return [np.arange(1 << 16, dtype=np.uint64) << shift]
    else:
        base = _minifloat(t)
    if arity >= 3:  # a slice of the domain, so that every combination stays around 32^3 cases
        keep = 32 if arity == 3 else max(2, int(40000 ** (1 / arity)))
        base = base[:: max(1, len(base) // keep)][:keep]
    grids = np.meshgrid(*([base] * arity), indexing="ij")
    return [g.reshape(-1) for g in grids]
