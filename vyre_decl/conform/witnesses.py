"""Witness values per type: the boundary cases every op is checked on, plus seeded random ones.

All values are bit patterns, so NaN payloads, signalling NaNs, -0.0 and subnormals survive.
"""

from __future__ import annotations

import struct
from typing import Final

import numpy as np

from ..ir.types import DataType

__all__ = ["witnesses", "random_bits"]


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
