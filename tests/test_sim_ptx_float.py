"""The PTX interpreter's floating-point instructions and conversions, checked against exact
rational arithmetic (fractions.Fraction, mpmath for square roots) rounded by this file's own
rounding function: every rounding mode, fma exactness, cvt saturation and NaN rules, NaN rules
of min/max, comparisons, testp, copysign, .ftz, and 'approx' findings."""

from __future__ import annotations

import math
import random
import struct
from fractions import Fraction

import mpmath
import numpy as np
import pytest

from sim_ptx_helpers import kernel_text, run_op

R = random.Random(26)
FMT = {"f32": (24, -126, 127), "f64": (53, -1022, 1023), "f16": (11, -14, 15), "bf16": (8, -126, 127)}
NAN32, NAN64 = 0x7FFFFFFF, 0x7FFFFFFFFFFFFFFF


def round_exact(q: Fraction, fmt: str, mode: str) -> float:
    """The exact value q rounded to ``fmt`` in mode rn/rz/rm/rp (as a Python float, exact)."""
    p, emin, emax = FMT[fmt]
    if q == 0:
        return 0.0
    neg, a = q < 0, abs(q)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    quantum = Fraction(2) ** (max(e, emin) - p + 1)
    n, rem = divmod(a, quantum)
    n = int(n)
    if mode == "rn":
        n += rem > quantum / 2 or (rem == quantum / 2 and n % 2 == 1)
    elif (mode == "rp" and not neg) or (mode == "rm" and neg):
        n += rem != 0
    mag = n * quantum
    largest = (2 - Fraction(2) ** (1 - p)) * Fraction(2) ** emax
    if mag > largest:
        to_inf = mode == "rn" or (mode == "rp" and not neg) or (mode == "rm" and neg)
        return -math.inf if neg and to_inf else math.inf if to_inf else float(-largest if neg else largest)
    return float(-mag if neg else mag)


def sign_of_zero(x: float, exact: Fraction, mode: str) -> float:
    """IEEE zero signs: a nonzero exact value rounds to a zero of its sign."""
    if x == 0 and exact != 0:
        return math.copysign(0.0, exact)
    return x


def values(fmt: str, n: int) -> list[float]:
    dt = np.float32 if fmt == "f32" else np.float64
    fixed = [0.0, -0.0, 1.0, -1.0, 0.5, 3.0, 1e-40 if fmt == "f32" else 1e-310, float(np.finfo(dt).max),
             float(np.finfo(dt).tiny), 2.0 ** (-149 if fmt == "f32" else -1074), 1.0 + 2.0 ** -23, 0.1, -7.25]
    out = fixed + [float(dt(R.uniform(1, 2) * 2.0 ** R.randint(-30, 30) * R.choice([1, -1]))) for _ in range(n)]
    return [float(dt(v)) for v in out]


def as_dtype(vals: list[float], fmt: str) -> np.ndarray:
    return np.array(vals, dtype=np.float32 if fmt == "f32" else np.float64)


def same(got: np.ndarray, want: list[float]) -> bool:
    w = np.array(want, dtype=got.dtype)
    ok = (got.view(f"u{got.itemsize}") == w.view(f"u{w.itemsize}")) | (np.isnan(got) & np.isnan(w))
    if not ok.all():
        k = int(np.flatnonzero(~ok)[0])
        print("first difference at", k, got[k], w[k])
    return bool(ok.all())


@pytest.mark.parametrize("fmt", ["f32", "f64"])
@pytest.mark.parametrize("mode", ["rn", "rz", "rm", "rp"])
def test_add_sub_mul_div_in_every_rounding_mode(fmt, mode):
    a, b = values(fmt, 60), values(fmt, 60)
    R.shuffle(b)
    b = [y if y != 0 else 3.0 for y in b]
    srcs = [(fmt, as_dtype(a, fmt)), (fmt, as_dtype(b, fmt))]
    ops = {"add": lambda x, y: x + y, "sub": lambda x, y: x - y, "mul": lambda x, y: x * y,
           "div": lambda x, y: x / y}
    for name, f in ops.items():
        got, _ = run_op(f"{name}.{mode}.{fmt} %d, %a, %b", fmt, srcs)
        want = []
        for x, y in zip(a, b):
            exact = f(Fraction(x), Fraction(y))
            r = round_exact(exact, fmt, mode)
            if exact == 0:  # an exact zero: IEEE's sign rules for sums, the sign of the product/quotient
                if name in ("mul", "div"):
                    r = math.copysign(0.0, math.copysign(1, x) * math.copysign(1, y))
                else:
                    y2 = -y if name == "sub" else y
                    both = math.copysign(1, x) < 0 and math.copysign(1, y2) < 0
                    differ = x != 0 or math.copysign(1, x) != math.copysign(1, y2)
                    r = -0.0 if both or (mode == "rm" and differ) else 0.0
            want.append(sign_of_zero(r, exact, mode))
        assert same(got, want), (name, mode)


@pytest.mark.parametrize("fmt", ["f32", "f64"])
def test_sqrt_and_rcp_rounding(fmt):
    a = [abs(v) for v in values(fmt, 50)] + [4.0, 2.0, 0.25]
    mpmath.mp.prec = 400
    for mode in ("rn", "rz", "rm", "rp"):
        got, _ = run_op(f"sqrt.{mode}.{fmt} %d, %a", fmt, [(fmt, as_dtype(a, fmt))])
        want = []
        for x in a:
            s = mpmath.sqrt(mpmath.mpf(x))
            man, exp = s.man_exp if s != 0 else (0, 0)
            want.append(round_exact(Fraction(int(man)) * Fraction(2) ** int(exp), fmt, mode) if x else x)
        assert same(got, want), mode
        nz = [x if x else 1.0 for x in a]
        rcp, _ = run_op(f"rcp.{mode}.{fmt} %d, %a", fmt, [(fmt, as_dtype(nz, fmt))])
        assert same(rcp, [round_exact(1 / Fraction(x), fmt, mode) for x in nz]), mode
    special, _ = run_op(f"sqrt.rn.{fmt} %d, %a", fmt, [(fmt, as_dtype([-0.0, -1.0, math.inf, math.nan], fmt))])
    assert math.copysign(1, special[0]) < 0 and np.isnan(special[1]) and special[2] == math.inf


def test_fma_is_one_rounding():
    cases = []
    for _ in range(150):
        a, b = R.uniform(-2, 2) * 2.0 ** R.randint(-60, 60), R.uniform(-2, 2) * 2.0 ** R.randint(-60, 60)
        cases.append((a, b, -(a * b)))  # the error of the rounded product: exact fma only
        cases.append((a, b, R.uniform(-1, 1) * 2.0 ** R.randint(-80, 80)))
    x = 1.0 + 2.0 ** -30
    cases += [(x, x, -1.0), (1.0 + 2.0 ** -52, 1.0 - 2.0 ** -53, -1.0), (2.0 ** -600, 2.0 ** -500, 2.0 ** -1074),
              (2.0 ** -537, 2.0 ** -537, -(2.0 ** -1074)), (1e300, 1e10, -math.inf), (0.0, -1.0, 0.0),
              (-0.0, 0.0, -0.0), (1e-200, -1e-200, 0.0), (3.0, 1.0 / 3.0, -1.0), (math.inf, 0.0, 1.0),
              (2.0 ** 1000, 2.0 ** 23, -(2.0 ** 1023)), (1.5, 2.0 ** -1074, 2.0 ** -1073)]
    for mode in ("rn", "rz", "rm", "rp"):
        a, b, c = (list(v) for v in zip(*cases))
        got, _ = run_op(f"fma.{mode}.f64 %d, %a, %b, %c", "f64", [("f64", np.array(a)), ("f64", np.array(b)),
                                                                   ("f64", np.array(c))])
        want = []
        for x, y, z in cases:
            if not all(map(math.isfinite, (x, y, z))):
                finite_product = math.isfinite(x) and math.isfinite(y)
                want.append(z if math.isinf(z) and finite_product else x * y + z)
                continue
            exact = Fraction(x) * Fraction(y) + Fraction(z)
            r = round_exact(exact, "f64", mode)
            if exact == 0:
                neg_p = math.copysign(1, x) * math.copysign(1, y) < 0
                neg_c = math.copysign(1, z) < 0
                if x * y == 0 or x == 0 or y == 0:
                    r = -0.0 if (neg_p and neg_c) or (mode == "rm" and (neg_p or neg_c)) else 0.0
                else:
                    r = -0.0 if mode == "rm" else 0.0
            want.append(sign_of_zero(r, exact, mode))
        assert same(got, want), mode
    f = [(float(np.float32(p)), float(np.float32(q)), float(np.float32(s))) for p, q, s in cases[:200]]
    a, b, c = (np.array(v, dtype=np.float32) for v in zip(*f))
    got32, _ = run_op("fma.rn.f32 %d, %a, %b, %c", "f32", [("f32", a), ("f32", b), ("f32", c)])
    want32 = [sign_of_zero(round_exact(Fraction(x) * Fraction(y) + Fraction(z), "f32", "rn"),
                           Fraction(x) * Fraction(y) + Fraction(z), "rn") for x, y, z in f]
    assert same(got32, want32)


def test_float_to_int_cvt_rounds_then_saturates_nan_to_zero():
    vals = [0.0, -0.0, 0.5, -0.5, 1.5, 2.5, -2.5, 0.49999997, 1e-45, -1.0, 2.0**31, 2.0**31 - 128, -2.0**31 - 256,
            2.0**32, 4294967040.0, 2.0**63, -2.0**63, 2.0**64, 1e30, -1e30, math.inf, -math.inf, math.nan, 7.75]
    rounders = {"rni": lambda v: round(v), "rzi": math.trunc, "rmi": math.floor, "rpi": math.ceil}
    for dst, lo, hi in (("s32", -2**31, 2**31 - 1), ("u32", 0, 2**32 - 1), ("s64", -2**63, 2**63 - 1),
                        ("u64", 0, 2**64 - 1), ("s16", -2**15, 2**15 - 1), ("u8", 0, 255)):
        for src in ("f32", "f64"):
            for rnd, f in rounders.items():
                got, _ = run_op(f"cvt.{rnd}.{dst}.{src} %d, %a", dst if dst != "u8" else "u32",
                                [(src, as_dtype(vals, src))]) if dst != "u8" else \
                    run_op(f"cvt.{rnd}.u8.{src} %d, %a", "u32", [(src, as_dtype(vals, src))])
                xs = as_dtype(vals, src).tolist()
                want = [0 if math.isnan(v) else max(lo, min(hi, f(v) if math.isfinite(v) else (hi if v > 0 else lo)))
                        for v in xs]
                assert [int(g) for g in got] == want, (dst, src, rnd)


def test_int_to_float_cvt_every_mode():
    ints = [0, 1, -1, 2**24 + 1, 2**24 + 3, -(2**24 + 1), 2**53 + 1, 2**53 + 3, 2**63 - 1, -2**63, 2**31 - 1,
            -2**31, 123456789, -987654321012345678, 2**62 + 2**40 + 1]
    uints = [0, 1, 2**64 - 1, 2**63 + 1, 2**32 - 1, 2**24 + 1, 2**53 + 1, 2**64 - 2**40 - 1]
    for mode in ("rn", "rz", "rm", "rp"):
        for fmt in ("f32", "f64"):
            got, _ = run_op(f"cvt.{mode}.{fmt}.s64 %d, %a", fmt, [("s64", np.array(ints, dtype=np.int64))])
            assert same(got, [round_exact(Fraction(v), fmt, mode) for v in ints]), (mode, fmt)
            got, _ = run_op(f"cvt.{mode}.{fmt}.u64 %d, %a", fmt, [("u64", np.array(uints, dtype=np.uint64))])
            assert same(got, [round_exact(Fraction(v), fmt, mode) for v in uints]), (mode, fmt)
        s32 = [v for v in ints if -2**31 <= v < 2**31]
        got, _ = run_op(f"cvt.{mode}.f32.s32 %d, %a", "f32", [("s32", np.array(s32, dtype=np.int32))])
        assert same(got, [round_exact(Fraction(v), "f32", mode) for v in s32])


def test_f64_to_f32_and_f16_bf16_rounding_and_nan():
    a = values("f64", 80) + [1 + 2.0**-24, 1 + 3 * 2.0**-24, 2.0**-150, 2.0**-149 * 1.5, 3.4028235677973366e38,
                             3.4028235677973362e38, 65519.99, 65520.0, 1e-8, 2.0**-25, 5.960464477539063e-08]
    for mode in ("rn", "rz", "rm", "rp"):
        got, _ = run_op(f"cvt.{mode}.f32.f64 %d, %a", "f32", [("f64", np.array(a))])
        want = [x if x == 0 else sign_of_zero(round_exact(Fraction(x), "f32", mode), Fraction(x), mode) for x in a]
        assert same(got, want), mode
    f = np.array([x for x in a if abs(x) < 3.4e38], dtype=np.float32)
    for mode in ("rn", "rz"):
        h, _ = run_op(f"cvt.{mode}.f16.f32 %d, %a", "b16", [("f32", f)])
        want = np.array([sign_of_zero(round_exact(Fraction(float(x)), "f16", mode), Fraction(float(x)), mode) if x
                         else x for x in f], dtype=np.float16)
        assert h.tolist() == [int(w) for w in want.view(np.uint16)], mode
    bf, _ = run_op("cvt.rn.bf16.f32 %d, %a", "b16", [("f32", f)])
    want_bf = [int(np.array(sign_of_zero(round_exact(Fraction(float(x)), "bf16", "rn"), Fraction(float(x)), "rn")
                            if x else x, dtype=np.float32).view(np.uint32)) >> 16 for x in f]
    assert bf.tolist() == want_bf
    nans, _ = run_op("cvt.rn.f16.f32 %d, %a", "b16", [("f32", np.array([math.nan, -math.nan, math.inf]))])
    assert nans.tolist() == [0x7FFF, 0x7FFF, 0x7C00]  # NaN becomes the canonical f16 NaN
    back, _ = run_op("cvt.f32.f16 %d, %a", "f32", [("b16", np.array([0x3C00, 0x0001, 0xFC00, 0x8000], dtype=np.uint16))])
    assert back.tolist()[:3] == [1.0, 2.0**-24, -math.inf] and math.copysign(1, back[3]) < 0


def test_packed_f16x2_bf16x2_put_a_in_the_upper_half():
    a = np.array([1.0, math.nan, 65520.0], dtype=np.float32)
    b = np.array([-2.0, 0.0, 2.0**-24], dtype=np.float32)
    h, _ = run_op("cvt.rn.f16x2.f32 %d, %a, %b", "b32", [("f32", a), ("f32", b)])
    assert h.tolist() == [0x3C00C000, 0x7FFF0000, 0x7C000001]
    bf, _ = run_op("cvt.rn.bf16x2.f32 %d, %a, %b", "b32", [("f32", a), ("f32", b)])
    assert bf.tolist() == [0x3F80C000, 0x7FFF0000, 0x47803380]  # 65520 rounds up to 0x4780; 2^-24 is 0x3380
    with pytest.raises(Exception, match="sm_80"):
        run_op("cvt.rn.bf16x2.f32 %d, %a, %b", "b32", [("f32", a), ("f32", b)], sm=75)


def test_int_to_int_cvt_extends_truncates_and_saturates():
    v = [0, 1, -1, 127, 128, -129, 255, 256, 2**31 - 1, -2**31, 70000]
    s32 = np.array(v, dtype=np.int32)
    got, _ = run_op("cvt.u64.s32 %d, %a", "u64", [("s32", s32)])
    assert [int(g) for g in got] == [x & (2**64 - 1) for x in v]  # sign-extended by the source type
    got, _ = run_op("cvt.s64.u32 %d, %a", "s64", [("u32", s32.view(np.uint32))])
    assert [int(g) for g in got] == [x & (2**32 - 1) for x in v]
    got, _ = run_op("cvt.sat.u8.s32 %d, %a", "u32", [("s32", s32)])
    assert got.tolist() == [max(0, min(255, x)) for x in v]
    got, _ = run_op("cvt.s8.s32 %d, %a", "s32", [("s32", s32)])
    assert got.tolist() == [((x + 128) & 255) - 128 for x in v]  # truncated, then sign-extended into the register
    got, _ = run_op("cvt.sat.s32.u64 %d, %a", "s32", [("u64", np.array([0, 2**31, 2**64 - 1], dtype=np.uint64))])
    assert got.tolist() == [0, 2**31 - 1, 2**31 - 1]
    got, _ = run_op("cvt.sat.u32.s32 %d, %a", "u32", [("s32", s32)])
    assert got.tolist() == [max(0, x) for x in v]


def test_float_same_type_rounding_and_sat():
    a = [0.5, 1.5, 2.5, -0.5, -1.5, 1e20, -0.0, math.nan, 2.0**52 + 0.5 if False else 4.5]
    f = np.array(a)
    for rnd, fn in {"rni": lambda v: float(round(v)), "rzi": lambda v: float(math.trunc(v)),
                    "rmi": lambda v: float(math.floor(v)), "rpi": lambda v: float(math.ceil(v))}.items():
        got, _ = run_op(f"cvt.{rnd}.f64.f64 %d, %a", "f64", [("f64", f)])
        want = [math.copysign(fn(x), x) if math.isfinite(x) else x for x in a]
        assert same(got, want), rnd
    sat, _ = run_op("cvt.sat.f32.f32 %d, %a", "f32", [("f32", np.array([-2.0, 0.25, 7.0, math.nan], np.float32))])
    assert sat.tolist() == [0.0, 0.25, 1.0, 0.0]


@pytest.mark.parametrize("fmt", ["f32", "f64"])
def test_min_max_nan_and_signed_zero(fmt):
    nan = math.nan
    a = [nan, 1.0, nan, 0.0, -0.0, -math.inf, 2.0, -1.0]
    b = [1.0, nan, nan, -0.0, 0.0, math.inf, 2.0, -3.0]
    srcs = [(fmt, as_dtype(a, fmt)), (fmt, as_dtype(b, fmt))]
    mn, _ = run_op(f"min.{fmt} %d, %a, %b", fmt, srcs)
    mx, _ = run_op(f"max.{fmt} %d, %a, %b", fmt, srcs)
    assert same(mn, [1.0, 1.0, nan, -0.0, -0.0, -math.inf, 2.0, -3.0])
    assert same(mx, [1.0, 1.0, nan, 0.0, 0.0, math.inf, 2.0, -1.0])
    canon = NAN32 if fmt == "f32" else NAN64
    assert int(mn.view(f"u{mn.itemsize}")[2]) == canon  # both NaN: the canonical NaN
    mnan, _ = run_op(f"min.NaN.{fmt} %d, %a, %b", fmt, srcs)
    assert same(mnan, [nan, nan, nan, -0.0, -0.0, -math.inf, 2.0, -3.0])


def test_float_compares_testp_copysign_abs_neg():
    nan, inf = math.nan, math.inf
    a = np.array([1.0, nan, 1.0, -0.0, inf, 1e-40, -2.0], dtype=np.float32)
    b = np.array([2.0, 1.0, nan, 0.0, inf, 0.0, -2.0], dtype=np.float32)
    table = {"eq": lambda x, y: x == y, "ne": lambda x, y: x != y and not (math.isnan(x) or math.isnan(y)),
             "lt": lambda x, y: x < y, "ge": lambda x, y: x >= y, "equ": lambda x, y: x == y or math.isnan(x) or math.isnan(y),
             "neu": lambda x, y: x != y, "ltu": lambda x, y: not x >= y, "num": lambda x, y: not (math.isnan(x) or math.isnan(y)),
             "nan": lambda x, y: math.isnan(x) or math.isnan(y)}
    for op, f in table.items():
        got, _ = run_op(f"setp.{op}.f32 %d, %a, %b", "pred", [("f32", a), ("f32", b)])
        assert got.tolist() == [int(f(float(x), float(y))) for x, y in zip(a, b)], op
    ftz, _ = run_op("setp.eq.ftz.f32 %d, %a, %b", "pred", [("f32", a), ("f32", b)])
    assert ftz.tolist()[5] == 1  # the subnormal compares as zero
    tests = {"finite": [1, 0, 1, 1, 0, 1, 1], "infinite": [0, 0, 0, 0, 1, 0, 0], "number": [1, 0, 1, 1, 1, 1, 1],
             "notanumber": [0, 1, 0, 0, 0, 0, 0], "normal": [1, 0, 1, 1, 0, 0, 1], "subnormal": [0, 0, 0, 0, 0, 1, 0]}
    for op, want in tests.items():
        got, _ = run_op(f"testp.{op}.f32 %d, %a", "pred", [("f32", a)])
        assert got.tolist() == want, op
    cs, _ = run_op("copysign.f32 %d, %a, %b", "f32", [("f32", b), ("f32", a)])  # sign of b's values, a's magnitude
    assert [math.copysign(1, x) for x in cs.tolist()] == [math.copysign(1, x) for x in b.tolist()]
    assert np.array_equal(np.abs(cs.view(np.uint32) & 0x7FFFFFFF), a.view(np.uint32) & 0x7FFFFFFF)
    neg_nan = np.array([struct.unpack("<f", struct.pack("<I", 0xFFC00001))[0]], dtype=np.float32)
    ab, _ = run_op("abs.f32 %d, %a", "f32", [("f32", neg_nan)])
    ng, _ = run_op("neg.f32 %d, %a", "f32", [("f32", neg_nan)])
    assert int(ab.view(np.uint32)[0]) == 0x7FC00001 and int(ng.view(np.uint32)[0]) == 0x7FC00001  # bit operations


def test_ftz_sat_and_canonical_nan():
    tiny = np.array([1e-40, -1e-40, 1.0, math.nan], dtype=np.float32)
    got, _ = run_op("add.ftz.f32 %d, %a, %a", "f32", [("f32", tiny)])
    assert got.view(np.uint32).tolist()[:2] == [0, 0x80000000] and got[2] == 2.0
    assert int(got.view(np.uint32)[3]) == NAN32
    plain, _ = run_op("add.rn.f32 %d, %a, %a", "f32", [("f32", tiny)])
    assert plain[0] == tiny[0] * np.float32(2) and plain[0] != 0  # subnormals kept without .ftz
    sat, _ = run_op("mul.rn.sat.f32 %d, %a, %a", "f32", [("f32", np.array([3.0, -1.0, 0.5, math.nan], np.float32))])
    assert sat.tolist() == [1.0, 1.0, 0.25, 0.0]


def test_approx_instructions_are_reported_not_guessed():
    x = np.array([0.5, 1.0, -2.0, 0.0], dtype=np.float32)
    for op, f in (("sin", math.sin), ("cos", math.cos), ("ex2", lambda v: 2.0 ** v), ("tanh", math.tanh)):
        got, findings = run_op(f"{op}.approx.f32 %d, %a", "f32", [("f32", x)])
        assert np.allclose(got, [f(float(v)) for v in x], rtol=1e-6, atol=1e-7), op
        line = kernel_text(f"{op}.approx.f32 %d, %a", "f32", ["f32"]).splitlines().index(f"\t{op}.approx.f32 %d, %a;") + 1
        assert [(fd.kind, fd.line) for fd in findings] == [("approx", line)], op
        assert "leaves the result to the hardware" in findings[0].message
    got, findings = run_op("rcp.rn.f32 %d, %a", "f32", [("f32", np.array([3.0], np.float32))])
    assert not findings and got[0] == np.float32(1 / 3)
    lg, findings = run_op("lg2.approx.ftz.f32 %d, %a", "f32", [("f32", np.array([8.0, 0.0, -1.0], np.float32))])
    assert lg[0] == 3.0 and lg[1] == -math.inf and np.isnan(lg[2]) and findings[0].kind == "approx"
