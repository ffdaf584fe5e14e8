"""Exact floating-point rounding for the interpreter: a correctly rounded fused multiply-add for
f32 and f64 (numpy has none), directed rounding (.rz .rm .rp) of the IEEE operations, rounding an
f64 value to a narrower format (f32, f16, bf16) in any mode, and integers to floats in any mode.

Method: round-to-nearest results come from numpy (IEEE, correctly rounded, subnormals kept); the
sign of the rounding error is computed exactly (TwoSum, Dekker's TwoProduct, the remainder through
an exact fma) and the directed modes step one ulp from it. The f64 fma follows Boldo & Melquiond
("Emulation of FMA and correctly rounded sums: proved algorithms using rounding to odd", 2008); lanes
outside its proven range (extreme exponents, results near underflow) take an exact rational path.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

__all__ = ["fma", "directed", "err_add", "err_mul", "err_div", "err_sqrt", "round_f64_to", "int_to_float",
           "FORMATS", "nudge", "canonical_nan", "CANON"]

# (precision p, minimum normal exponent, maximum exponent, storage bits) of the binary formats
FORMATS = {"f64": (53, -1022, 1023, 64), "f32": (24, -126, 127, 32), "f16": (11, -14, 15, 16),
           "bf16": (8, -126, 127, 16)}
CANON: dict[int, Any] = {32: np.uint32(0x7FFFFFFF), 64: np.uint64(0x7FFFFFFFFFFFFFFF), 16: np.uint16(0x7FFF)}


def canonical_nan(r: np.ndarray) -> np.ndarray:
    """``r`` with every NaN replaced by the canonical NaN (all mantissa bits set, sign clear)."""
    nan = np.isnan(r)
    if not np.any(nan):
        return r
    bits = CANON[r.dtype.itemsize * 8]
    return np.where(nan, bits.view(r.dtype), r)


def nudge(r: Any, err: Any, mode: str) -> Any:
    """Step the nearest-rounded ``r`` by one ulp where mode ``rz``/``rm``/``rp`` needs it, given the
    sign of the rounding error ``err`` (exact value minus r; any number of that sign)."""
    r = np.asarray(r)
    e = np.asarray(err)
    inf = np.array(np.inf, dtype=r.dtype)
    if mode == "rm":
        return np.where(e < 0, np.nextafter(r, -inf), r)
    if mode == "rp":
        return np.where(e > 0, np.nextafter(r, inf), r)
    if mode == "rz":
        toward = ((r > 0) & (e < 0)) | ((r < 0) & (e > 0))
        return np.where(toward, np.nextafter(r, np.zeros_like(r)), r)
    return r


def directed(r: Any, err: Any, mode: str) -> Any:
    return r if mode == "rn" else nudge(r, err, mode)


# ============================================================================ error terms
def err_add(a: np.ndarray, b: np.ndarray, s: np.ndarray) -> np.ndarray:
    """The exact error (a + b) - s of s = RN(a + b) (TwoSum); -s where s overflowed."""
    bb = s - a
    err = (a - (s - bb)) + (b - bb)
    over = np.isinf(s) & np.isfinite(a) & np.isfinite(b)
    return np.where(over, -s, np.where(np.isfinite(s), err, 0))


def _split(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    c = x * 134217729.0  # 2^27 + 1 (Veltkamp)
    hi = c - (c - x)
    return hi, x - hi


def _two_product(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(b)
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def err_mul(a: np.ndarray, b: np.ndarray, r: np.ndarray) -> np.ndarray:
    """A value with the sign of (a * b) - r for r = RN(a * b)."""
    if a.dtype == np.float32:
        return a.astype(np.float64) * b.astype(np.float64) - r.astype(np.float64)
    return _exactly(-fma(-a, b, r, "rn"), "mul", a, b, r)


def err_div(a: np.ndarray, b: np.ndarray, q: np.ndarray) -> np.ndarray:
    """A value with the sign of a / b - q for q = RN(a / b)."""
    wide = a.dtype == np.float32
    a64, b64, q64 = (x.astype(np.float64) for x in (a, b, q)) if wide else (a, b, q)
    rem = fma(-q64, b64, a64, "rn")  # exact: a - q*b
    err = np.where(np.isfinite(q64), rem * np.sign(b64), -q64)
    return err if wide else _exactly(err, "div", a, b, q)


def err_sqrt(a: np.ndarray, s: np.ndarray) -> np.ndarray:
    wide = a.dtype == np.float32
    a64, s64 = (a.astype(np.float64), s.astype(np.float64)) if wide else (a, s)
    err = np.where(np.isfinite(s64) & (s64 > 0), fma(-s64, s64, a64, "rn"), 0)
    return err if wide else _exactly(err, "sqrt", a, a, s)


_EXACT = {"mul": lambda x, y, r: x * y - r, "div": lambda x, y, r: x / y - r, "sqrt": lambda x, y, r: x - r * r}


def _exactly(err: np.ndarray, op: str, a: np.ndarray, b: np.ndarray, r: np.ndarray) -> np.ndarray:
    """``err`` with the lanes near the subnormal range (where the error term itself may underflow)
    recomputed from exact rationals."""
    a, b, r = np.broadcast_arrays(np.asarray(a), np.asarray(b), np.asarray(r))
    small = lambda x: (x != 0) & (np.abs(x) < 2.0 ** -900)  # noqa: E731
    risky = np.isfinite(a) & np.isfinite(b) & np.isfinite(r) & (small(a) | small(b) | small(r) | (r == 0))
    if op == "div":
        risky &= b != 0
    if not risky.any():
        return err
    err = np.array(np.broadcast_to(err, a.shape), dtype=np.float64)
    f = _EXACT[op]
    for k in np.flatnonzero(risky):
        e = f(Fraction(float(a.flat[k])), Fraction(float(b.flat[k])), Fraction(float(r.flat[k])))
        err.flat[k] = (e > 0) - (e < 0)
    return err


# ============================================================================ fma
def fma(a: Any, b: Any, c: Any, mode: str) -> np.ndarray:
    """a * b + c rounded once, in mode rn/rz/rm/rp (arrays of one float dtype, or scalars)."""
    a, b, c = np.broadcast_arrays(np.asarray(a), np.asarray(b), np.asarray(c))
    if a.dtype == np.float32:
        return _fma32(a, b, c, mode)
    a, b, c = (np.ascontiguousarray(x, dtype=np.float64) for x in (a, b, c))
    with np.errstate(all="ignore"):
        out = _fma64_fast(a, b, c)
        slow = _fma64_unproven(a, b, c, out)
        if mode != "rn":
            slow |= np.isfinite(a) & np.isfinite(b) & np.isfinite(c)
        if slow.any():
            out = out.copy()
            idx = np.flatnonzero(slow)
            out[idx] = [_fma_exact(float(x), float(y), float(z), mode) for x, y, z in zip(a[idx], b[idx], c[idx])]
    return out


def _round_to_odd(s: np.ndarray, err: np.ndarray) -> np.ndarray:
    bits = s.view(np.uint64)
    even = (bits & np.uint64(1)) == 0
    step = (err != 0) & even & np.isfinite(s)
    return np.where(step, np.nextafter(s, np.where(err > 0, np.inf, -np.inf)), s)


def _fma32(a: np.ndarray, b: np.ndarray, c: np.ndarray, mode: str) -> np.ndarray:
    with np.errstate(all="ignore"):
        p = a.astype(np.float64) * b.astype(np.float64)  # exact (48 bits)
        c64 = c.astype(np.float64)
        s = p + c64
        odd = _round_to_odd(s, err_add(p, c64, s))  # exact sum, rounded to odd at 53 bits
        if mode == "rn":
            return odd.astype(np.float32)
        return round_f64_to(odd, "f32", mode).astype(np.float32)


def _fma64_fast(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    ph, pl = _two_product(a, b)
    uh = c + ph
    ul = err_add(c, ph, uh)
    t = ul + pl
    v = _round_to_odd(t, err_add(ul, pl, t))
    r = uh + v
    # zero, infinite and NaN operands: the product is exact, so one rounded sum is the fma
    plain = (a * b) + c
    zero_or_special = (a == 0) | (b == 0) | ~np.isfinite(a) | ~np.isfinite(b) | ~np.isfinite(c)
    r = np.where(zero_or_special, plain, r)
    r = np.where((c == 0) & (a != 0) & (b != 0) & np.isfinite(a * b), a * b, r)
    # a finite product that overflows numpy's a*b meets an infinite c: the fma is c
    return np.where(np.isinf(c) & np.isfinite(a) & np.isfinite(b), c, r)


_LO, _HI = 2.0 ** -900, 2.0 ** 900


def _fma64_unproven(a: np.ndarray, b: np.ndarray, c: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Lanes where the fast algorithm's proof does not cover the operands or the result."""
    finite = np.isfinite(a) & np.isfinite(b) & np.isfinite(c)
    nz = (a != 0) & (b != 0)
    p = np.abs(a * b)
    risky = (np.abs(a) > _HI) | (np.abs(b) > _HI) | (p < _LO) | (p > _HI) | (np.abs(c) > _HI)
    risky |= (c != 0) & (np.abs(c) < _LO)
    risky |= (np.abs(r) < 2.0 ** -1000) & (r != 0)
    return finite & nz & risky


def _fma_exact(a: float, b: float, c: float, mode: str) -> float:
    """Finite operands: the exact rational value, rounded."""
    exact = Fraction(a) * Fraction(b) + Fraction(c)
    if exact == 0:
        prod_neg = (math.copysign(1, a) * math.copysign(1, b)) < 0
        if a * b == 0:  # an exact zero product: IEEE's sign of a sum of zeros
            both_neg = prod_neg and math.copysign(1, c) < 0
            return -0.0 if both_neg or (mode == "rm" and (prod_neg or math.copysign(1, c) < 0)) else 0.0
        return -0.0 if mode == "rm" else 0.0
    try:
        r = exact.numerator / exact.denominator  # correctly rounded (to nearest even) by CPython
    except OverflowError:
        r = math.inf if exact > 0 else -math.inf
    if r == 0:
        r = math.copysign(0.0, exact)
    if mode == "rn":
        return r
    diff = exact - Fraction(r) if math.isfinite(r) else (-1 if r > 0 else 1)
    return float(nudge(np.float64(r), np.float64(1 if diff > 0 else -1 if diff < 0 else 0), mode))


# ============================================================================ narrowing
def round_f64_to(x: np.ndarray, fmt: str, mode: str, satfinite: bool = False) -> np.ndarray:
    """``x`` (float64) rounded to format ``fmt`` in ``mode``, as float64 values (exact in fmt).
    NaN stays NaN; overflow gives infinity or the largest finite value as the mode says."""
    p, emin, emax, _ = FORMATS[fmt]
    x = np.asarray(x, dtype=np.float64)
    ax = np.abs(x)
    with np.errstate(all="ignore"):
        _, e = np.frexp(ax)  # ax = m * 2^e, m in [0.5, 1)
        lead = np.maximum(e - 1, emin)
        ulp_exp = lead - p + 1
        scaled = np.ldexp(ax, -ulp_exp)
        t = np.floor(scaled)
        frac = scaled - t
        neg = np.signbit(x)
        if mode == "rn":
            up = (frac > 0.5) | ((frac == 0.5) & (np.fmod(t, 2) == 1))
        elif mode == "rz":
            up = np.zeros_like(frac, dtype=bool)
        else:
            away = (mode == "rp") != neg  # rounding away from zero in magnitude
            up = (frac > 0) & away
        mag = np.ldexp(t + up, ulp_exp)
        largest = np.ldexp(2.0 - 2.0 ** (1 - p), emax)
        over = mag > largest
        to_inf = np.full(x.shape, mode == "rn") if mode in ("rn", "rz") else ((mode == "rp") != neg)
        if mode == "rz" or satfinite:
            to_inf = np.zeros(x.shape, dtype=bool)
        mag = np.where(over, np.where(to_inf, np.inf, largest), mag)
        mag = np.where(np.isinf(ax), np.inf if not satfinite else largest, mag)
        out = np.where(neg, -mag, mag)
        out = np.where(ax == 0, x, out)
    return np.where(np.isnan(x), x, out)


def int_to_float(v: np.ndarray, fmt: str, mode: str) -> np.ndarray:
    """Integers (int64 or uint64 arrays) as the nearest values of ``fmt`` (float64 result)."""
    p = FORMATS[fmt][0]
    neg = v < 0 if v.dtype.kind == "i" else np.zeros(v.shape, dtype=bool)
    mag = np.where(neg, (~v.view(np.uint64)) + np.uint64(1), v.view(np.uint64)) if v.dtype.kind == "i" \
        else v.astype(np.uint64)
    length = _bit_length(mag)
    shift = np.maximum(length - p, 0).astype(np.uint64)
    q = mag >> shift
    low = mag - (q << shift)
    half = np.where(shift > 0, np.uint64(1) << np.maximum(shift, np.uint64(1)) - np.uint64(1), np.uint64(0))
    if mode == "rn":
        up = (low > half) | ((low == half) & (shift > 0) & ((q & np.uint64(1)) == 1))
    elif mode == "rz":
        up = np.zeros(v.shape, dtype=bool)
    else:
        up = (low != 0) & ((mode == "rp") != neg)
    value = np.ldexp((q + up.astype(np.uint64)).astype(np.float64), shift.astype(np.int64))
    return np.where(neg, -value, value)


def _bit_length(x: np.ndarray) -> np.ndarray:
    n = np.zeros(x.shape, dtype=np.int64)
    v = x.astype(np.uint64)
    for s in (32, 16, 8, 4, 2, 1):
        hi = (v >> np.uint64(s)) != 0
        n += hi * s
        v = np.where(hi, v >> np.uint64(s), v)
    return n + (v != 0)
