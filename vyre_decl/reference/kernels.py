"""The reference functions op files name (``reference = "int_div"``), computed with numpy.

``registry.references.REFERENCES`` lists what an op file may name; this module implements it:
ufunc entries are numpy's own ufuncs, kernel entries the vectorised functions below, each
implementing rows of the normative semantics table (docs/semantics.md) that no numpy ufunc gets
right. A kernel is called ``kernel(args, out=DataType, types={var: DataType}, attrs={name:
numpy scalar}) -> ndarray``. Importing the module checks that it implements the catalogue exactly.
"""

from __future__ import annotations

import math
from typing import Callable, Final, Mapping, Sequence

import numpy as np

from ..ir.types import DataType
from ..registry.references import KERNEL, REFERENCES, UFUNC

__all__ = ["KERNELS", "Kernel", "ufunc"]

Kernel = Callable[..., np.ndarray]

def ufunc(name: str) -> np.ufunc:
    """The whitelisted numpy ufunc ``name``."""
    if REFERENCES.get(name, ("",))[0] != UFUNC:
        raise KeyError(name)
    return getattr(np, name)


def _unsigned(dtype: np.dtype) -> np.dtype:
    return np.dtype(f"u{dtype.itemsize}")


def _bits(a: np.ndarray) -> int:
    return a.dtype.itemsize * 8


def int_div(args: Sequence[np.ndarray], **_: object) -> np.ndarray:
    """Truncating division; unsigned ÷0 = all ones; signed ÷0 = 0, MIN ÷ −1 = MIN."""
    a, b = np.asarray(args[0]), np.asarray(args[1])
    zero = b == 0
    if a.dtype.kind == "u":
        q = a // np.where(zero, 1, b).astype(b.dtype)
        return np.where(zero, np.iinfo(a.dtype).max, q).astype(a.dtype)
    minus_one = b == -1
    safe = np.where(zero | minus_one, 1, b).astype(b.dtype)
    q = (a - np.fmod(a, safe)) // safe  # exact division, so floor == trunc
    return np.where(zero, 0, np.where(minus_one, np.negative(a), q)).astype(a.dtype)


def int_mod(args: Sequence[np.ndarray], **_: object) -> np.ndarray:
    """Remainder of truncating division (sign of the dividend); x % 0 = 0, MIN % −1 = 0."""
    a, b = np.asarray(args[0]), np.asarray(args[1])
    bad = b == 0 if a.dtype.kind == "u" else (b == 0) | (b == -1)
    safe = np.where(bad, 1, b).astype(b.dtype)
    return np.where(bad, 0, np.fmod(a, safe)).astype(a.dtype)


def _float_pick(a: np.ndarray, b: np.ndarray, want_min: bool) -> np.ndarray:
    a, b = np.asarray(a), np.asarray(b)
    first = a < b if want_min else a > b
    second = b < a if want_min else b > a
    # equal values (including ±0): min prefers the negative zero, max the positive one
    tie = np.where(np.signbit(a) == want_min, a, b)
    picked = np.where(first, a, np.where(second, b, tie))
    return np.where(np.isnan(a), b, np.where(np.isnan(b), a, picked)).astype(a.dtype)


def float_min(args: Sequence[np.ndarray], **_: object) -> np.ndarray:
    """IEEE 754-2019 minimumNumber: a NaN operand loses; −0 < +0."""
    return _float_pick(args[0], args[1], True)


def float_max(args: Sequence[np.ndarray], **_: object) -> np.ndarray:
    """IEEE 754-2019 maximumNumber: a NaN operand loses; −0 < +0."""
    return _float_pick(args[0], args[1], False)


def _as_unsigned(a: np.ndarray) -> np.ndarray:
    return np.asarray(a).view(_unsigned(np.asarray(a).dtype))


def shl(args: Sequence[np.ndarray], **_: object) -> np.ndarray:
    """Left shift by the amount masked to width − 1."""
    a = np.asarray(args[0])
    u = _as_unsigned(a)
    n = (np.asarray(args[1]) & (_bits(a) - 1)).astype(u.dtype)
    return np.left_shift(u, n).view(a.dtype)


def shr(args: Sequence[np.ndarray], **_: object) -> np.ndarray:
    """Right shift by the amount masked to width − 1; arithmetic for signed types."""
    a = np.asarray(args[0])
    n = (np.asarray(args[1]) & (_bits(a) - 1)).astype(a.dtype)
    return np.right_shift(a, n)


def _rotate(a: np.ndarray, amount: np.ndarray, left: bool) -> np.ndarray:
    a = np.asarray(a)
    u = _as_unsigned(a)
    width = _bits(a)
    n = (np.asarray(amount) & (width - 1)).astype(u.dtype)
    back = ((width - n) & (width - 1)).astype(u.dtype)
    if left:
        r = np.left_shift(u, n) | np.right_shift(u, back)
    else:
        r = np.right_shift(u, n) | np.left_shift(u, back)
    return r.view(a.dtype)


def rotl(args: Sequence[np.ndarray], **_: object) -> np.ndarray:
    """Rotate left by the amount masked to width − 1."""
    return _rotate(args[0], args[1], True)


def rotr(args: Sequence[np.ndarray], **_: object) -> np.ndarray:
    """Rotate right by the amount masked to width − 1."""
    return _rotate(args[0], args[1], False)


def popcount(args: Sequence[np.ndarray], **_: object) -> np.ndarray:
    """Number of one bits (of the two's-complement pattern for signed types), as u32."""
    return np.bitwise_count(_as_unsigned(args[0])).astype(np.uint32)


def clz(args: Sequence[np.ndarray], **_: object) -> np.ndarray:
    """Leading zero bits, as u32; clz(0) = width."""
    x = _as_unsigned(args[0])
    width = _bits(x)
    n = np.zeros(x.shape, np.uint32)
    step = width // 2
    while step:
        top_zero = np.right_shift(x, x.dtype.type(width - step)) == 0
        n += np.where(top_zero, np.uint32(step), np.uint32(0))
        x = np.where(top_zero, np.left_shift(x, x.dtype.type(step)), x)
        step //= 2
    return n + (x == 0).astype(np.uint32)


def ctz(args: Sequence[np.ndarray], **_: object) -> np.ndarray:
    """Trailing zero bits, as u32; ctz(0) = width."""
    x = _as_unsigned(args[0])
    lowest = x & (np.negative(x))
    return np.bitwise_count(lowest - x.dtype.type(1)).astype(np.uint32)


_REVERSE_STEPS: Final = (
    (1, 0x5555555555555555),
    (2, 0x3333333333333333),
    (4, 0x0F0F0F0F0F0F0F0F),
    (8, 0x00FF00FF00FF00FF),
    (16, 0x0000FFFF0000FFFF),
    (32, 0x00000000FFFFFFFF),
)


def reverse_bits(args: Sequence[np.ndarray], **_: object) -> np.ndarray:
    """Bit order reversed (bit 0 <-> bit width−1)."""
    a = np.asarray(args[0])
    x = _as_unsigned(a)
    t = x.dtype.type
    width = _bits(x)
    for shift, mask in _REVERSE_STEPS:
        if shift >= width:
            break
        m = t(mask & ((1 << width) - 1))
        x = (np.right_shift(x, t(shift)) & m) | np.left_shift(x & m, t(shift))
    return x.view(a.dtype)


def cast(args: Sequence[np.ndarray], *, out: DataType, **_: object) -> np.ndarray:
    """Conversion to ``out`` following the semantics table: to bool = nonzero; int -> int wraps
    (two's complement, sign-extending signed sources); int -> float rounds to nearest even;
    float -> int truncates toward zero and saturates, NaN -> 0; float -> float rounds to
    nearest even."""
    x = np.asarray(args[0])
    target = out.numpy_dtype
    if out is DataType.BOOL:
        return x != 0
    if x.dtype.kind == "f" and out.is_int:
        wide = np.trunc(x.astype(np.float64))
        lo, hi = float(out.min), 2.0 ** (out.bits - 1 if out.is_signed else out.bits)
        inside = (wide >= lo) & (wide < hi)  # False for NaN, which therefore stays 0
        result = np.array(np.where(inside, wide, 0).astype(target))
        result[wide >= hi] = out.max
        result[wide < lo] = out.min
        return result
    return x.astype(target)


def bitcast(args: Sequence[np.ndarray], *, out: DataType, **_: object) -> np.ndarray:
    """The bits of a value read as another type of the same width."""
    return np.ascontiguousarray(np.asarray(args[0])).view(out.numpy_dtype)


def mulhi(args: Sequence[np.ndarray], **_: object) -> np.ndarray:
    """The high half of the full-width product (signed for signed types)."""
    a, b = np.asarray(args[0]), np.asarray(args[1])
    a, b = np.broadcast_arrays(a, b)
    if a.dtype.itemsize == 4:
        wide = np.int64 if a.dtype.kind == "i" else np.uint64
        return ((a.astype(wide) * b.astype(wide)) >> 32).astype(a.dtype)
    u = a.view(np.uint64), b.view(np.uint64)
    mask, s32 = np.uint64(0xFFFFFFFF), np.uint64(32)
    al, ah, bl, bh = u[0] & mask, u[0] >> s32, u[1] & mask, u[1] >> s32
    ll, lh, hl, hh = al * bl, al * bh, ah * bl, ah * bh
    mid = (ll >> s32) + (lh & mask) + (hl & mask)
    high = hh + (lh >> s32) + (hl >> s32) + (mid >> s32)
    if a.dtype.kind == "i":  # signed: subtract b (resp. a) where a (resp. b) is negative
        high = high - np.where(a < 0, u[1], np.uint64(0)) - np.where(b < 0, u[0], np.uint64(0))
    return high.view(a.dtype)


_SPLITTER: Final = 134217729.0  # 2^27 + 1, Veltkamp's splitting constant for binary64


def _two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _round_to_odd_sum(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """x + y rounded to odd: an inexact sum keeps the neighbour with an odd last bit."""
    s, e = _two_sum(x, y)
    fix = (e != 0) & ((s.view(np.uint64) & np.uint64(1)) == 0) & np.isfinite(s)
    return np.where(fix, np.nextafter(s, np.where(e > 0, np.inf, -np.inf)), s)


def _fma_exact(x: float, y: float, z: float) -> float:
    if math.isinf(z) and math.isfinite(x) and math.isfinite(y):
        return z  # a finite product, however large, does not change an infinite addend
    if not (math.isfinite(x) and math.isfinite(y) and math.isfinite(z)):
        return x * y + z  # an infinite or NaN factor, or a NaN addend: no finite product overflows here
    from fractions import Fraction  # here, not at import: a fresh process pays ~3 ms for it

    v = Fraction(x) * Fraction(y) + Fraction(z)
    if v == 0:  # the sign of an exact zero: -0 only for (-0 or a negative product of zero) + -0
        both_negative = (x == 0 or y == 0) and z == 0 and math.copysign(1, x) * math.copysign(1, y) < 0 \
            and math.copysign(1, z) < 0
        return -0.0 if both_negative else 0.0
    try:
        return float(v)  # correctly rounded
    except OverflowError:
        return math.inf if v > 0 else -math.inf


def fma(args: Sequence[np.ndarray], *, out: DataType, **_: object) -> np.ndarray:
    """a * b + c with a single rounding. binary32: the exact product in binary64, the sum rounded
    to odd, then to binary32 (correct by Boldo and Melquiond's round-to-odd theorem). binary64:
    their two-product / round-to-odd emulation where no intermediate can over- or underflow,
    exact rational arithmetic elsewhere."""
    a, b, c = np.broadcast_arrays(*(np.asarray(x, out.numpy_dtype) for x in args))
    with np.errstate(all="ignore"):
        if out is DataType.F32:
            p = a.astype(np.float64) * b.astype(np.float64)  # exact: 24 + 24 bits
            return np.asarray(_round_to_odd_sum(p, c.astype(np.float64)).astype(np.float32))
        mag = [np.abs(x) for x in (a, b, c)]
        safe = (mag[0] > 2.0**-480) & (mag[0] < 2.0**480) & (mag[1] > 2.0**-480) & (mag[1] < 2.0**480)
        safe &= (mag[2] < 2.0**1000) & ((c == 0) | (mag[2] > 2.0**-900))
        hi_a, hi_b = _SPLITTER * a, _SPLITTER * b
        ah, bh = hi_a - (hi_a - a), hi_b - (hi_b - b)
        al, bl = a - ah, b - bh
        uh = a * b
        ul = ((ah * bh - uh) + ah * bl + al * bh) + al * bl  # a * b == uh + ul exactly
        th, tl = _two_sum(c, uh)
        result = th + _round_to_odd_sum(tl, ul)
        safe &= np.abs(result) > 2.0**-900
        # vectorised where a * b + c is the fma already: a zero factor makes the product an exact
        # +-0 (IEEE's signed-zero sum rule is fma's); a NaN or infinite operand leaves no finite
        # product to round, except that a finite product never changes an infinite addend
        finite_ab = np.isfinite(a) & np.isfinite(b)
        direct = (finite_ab & np.isfinite(c) & ((a == 0) | (b == 0))) | ~(finite_ab & np.isfinite(c))
        plain = np.where(finite_ab & np.isinf(c), c, a * b + c)
        result = np.where(direct, plain, result)
        safe |= direct
    result = np.where(safe, result, 0.0)
    for i in np.flatnonzero(~safe):
        result.flat[i] = _fma_exact(float(a.flat[i]), float(b.flat[i]), float(c.flat[i]))
    return result


KERNELS: Final[Mapping[str, Kernel]] = {
    "int_div": int_div,
    "int_mod": int_mod,
    "float_min": float_min,
    "float_max": float_max,
    "shl": shl,
    "shr": shr,
    "rotl": rotl,
    "rotr": rotr,
    "popcount": popcount,
    "clz": clz,
    "ctz": ctz,
    "reverse_bits": reverse_bits,
    "cast": cast,
    "bitcast": bitcast,
    "mulhi": mulhi,
    "fma": fma,
}


_WANT: Final = {name for name, (kind, _) in REFERENCES.items() if kind == KERNEL}
if set(KERNELS) != _WANT or not all(isinstance(getattr(np, n, None), np.ufunc)
                                    for n, (k, _) in REFERENCES.items() if k == UFUNC):
    raise ImportError(f"reference kernels {sorted(set(KERNELS) ^ _WANT)} do not match registry.references")
