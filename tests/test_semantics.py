"""Every row of the normative semantics table (DESIGN.md), checked on the reference backend with
whole programs and, where possible, against an independent oracle in plain Python integers."""

from __future__ import annotations

import math
import struct

import numpy as np
import pytest

from vyre_decl.backends.hostio import prepare
from vyre_decl.backends.config import DispatchConfig
from vyre_decl.conform.witnesses import random_bits, witnesses
from vyre_decl.ir import DataType, parse_program

INTS = [DataType.U32, DataType.I32, DataType.U64, DataType.I64]


def map2(t_in: str, t_out: str, expr: str) -> str:
    return f"""program m workgroup(64, 1, 1) {{
  buffer a: read {t_in}[] @0
  buffer b: read {t_in}[] @1
  buffer out: write {t_out}[len(a)] @2
  let i = gid.x
  if i < len(out) {{
    out[i] = {expr}
  }}
}}"""


def signed(t: DataType, v: int) -> int:
    v &= t.mask
    return v - (1 << t.bits) if t.is_signed and v >> (t.bits - 1) else v


def samples(t: DataType, n: int = 200, seed: int = 0) -> tuple[np.ndarray, np.ndarray, list[int], list[int]]:
    """All witness pairs plus random pairs, as arrays and as Python ints."""
    w = witnesses(t)
    rng = np.random.default_rng(seed)
    a = [x for x in w for _ in w] + random_bits(t, n, rng)
    b = [y for _ in w for y in w] + random_bits(t, n, rng)
    av = [signed(t, x) for x in a]
    bv = [signed(t, y) for y in b]
    return np.array(av, dtype=t.numpy_dtype), np.array(bv, dtype=t.numpy_dtype), av, bv


def check(got: np.ndarray, t: DataType, want: list[int]) -> None:
    expected = np.array([signed(t, v) for v in want], dtype=t.numpy_dtype)
    bad = np.flatnonzero(got != expected)
    assert bad.size == 0, f"first mismatch at {bad[0]}: got {got[bad[0]]}, want {expected[bad[0]]}"


# --- integer + - * wrap (two's complement)
@pytest.mark.parametrize("t", INTS, ids=str)
@pytest.mark.parametrize("sym, fn", [("+", lambda a, b: a + b), ("-", lambda a, b: a - b), ("*", lambda a, b: a * b)])
def test_integer_arithmetic_wraps(run, t, sym, fn):
    a, b, av, bv = samples(t)
    (out,) = run(map2(t.value, t.value, f"a[i] {sym} b[i]"), a, b)
    check(out, t, [fn(x, y) for x, y in zip(av, bv)])


# --- shifts and rotates: amount masked to width - 1
@pytest.mark.parametrize("t", INTS, ids=str)
def test_shifts_and_rotates_mask_the_amount(run, t):
    a, b, av, bv = samples(t)
    w, mask = t.bits, t.mask
    n = [y & (w - 1) for y in bv]
    shl = [(x << k) & mask for x, k in zip(av, n)]
    shr = [(x >> k) if t.is_signed else ((x & mask) >> k) for x, k in zip(av, n)]
    rotl = [(((x & mask) << k) | ((x & mask) >> ((w - k) % w))) & mask for x, k in zip(av, n)]
    rotr = [(((x & mask) >> k) | ((x & mask) << ((w - k) % w))) & mask for x, k in zip(av, n)]
    for expr, want in [("a[i] << b[i]", shl), ("a[i] >> b[i]", shr),
                       ("primitive.bitwise.rotl(a[i], b[i])", rotl), ("primitive.bitwise.rotr(a[i], b[i])", rotr)]:
        (out,) = run(map2(t.value, t.value, expr), a, b)
        check(out, t, want)


# --- unsigned division: x / 0 = all ones, x % 0 = 0
@pytest.mark.parametrize("t", [DataType.U32, DataType.U64], ids=str)
def test_unsigned_division_by_zero(run, t):
    a, b, av, bv = samples(t)
    (q,) = run(map2(t.value, t.value, "a[i] / b[i]"), a, b)
    (r,) = run(map2(t.value, t.value, "a[i] % b[i]"), a, b)
    check(q, t, [x // y if y else t.mask for x, y in zip(av, bv)])
    check(r, t, [x % y if y else 0 for x, y in zip(av, bv)])


def trunc_div(x: int, y: int) -> int:
    q = abs(x) // abs(y)
    return q if (x >= 0) == (y >= 0) else -q


# --- signed division: x / 0 = 0, x % 0 = 0, MIN / -1 = MIN, MIN % -1 = 0, truncation toward zero
@pytest.mark.parametrize("t", [DataType.I32, DataType.I64], ids=str)
def test_signed_division_rules(run, t):
    a, b, av, bv = samples(t)
    (q,) = run(map2(t.value, t.value, "a[i] / b[i]"), a, b)
    (r,) = run(map2(t.value, t.value, "a[i] % b[i]"), a, b)
    check(q, t, [trunc_div(x, y) if y else 0 for x, y in zip(av, bv)])  # MIN/-1 wraps to MIN
    check(r, t, [x - trunc_div(x, y) * y if y not in (0, -1) else 0 for x, y in zip(av, bv)])
    assert int(q[list(zip(av, bv)).index((t.min, -1))]) == t.min


# --- floats: IEEE binary32/64, round to nearest even, subnormals kept; matches numpy
@pytest.mark.parametrize("t", [DataType.F32, DataType.F64], ids=str)
@pytest.mark.parametrize("sym, fn", [("+", np.add), ("-", np.subtract), ("*", np.multiply), ("/", np.divide)])
def test_float_arithmetic_is_ieee_and_matches_numpy(run, t, sym, fn):
    rng = np.random.default_rng(1)
    bits = witnesses(t) + random_bits(t, 2000, rng)
    raw = np.array(bits, dtype=np.uint32 if t is DataType.F32 else np.uint64).view(t.numpy_dtype)
    a, b = np.repeat(raw[:40], 40), np.tile(raw[:40], 40)
    a, b = np.concatenate([a, raw]), np.concatenate([b, raw[::-1]])
    (out,) = run(map2(t.value, t.value, f"a[i] {sym} b[i]"), a, b)
    with np.errstate(all="ignore"):
        want = fn(a, b)
    same = (out.view(np.uint64 if t is DataType.F64 else np.uint32) == want.view(out.dtype.str.replace("f", "u"))) | (
        np.isnan(out) & np.isnan(want))
    assert same.all()


def test_subnormals_are_kept_not_flushed(run):
    tiny = np.array([1.401298464324817e-45, 1e-40], np.float32)
    (out,) = run(map2("f32", "f32", "a[i] + b[i]"), tiny, tiny)
    assert out.view(np.uint32).tolist() == [2, tiny[1:].view(np.uint32)[0] * 2]  # exact doubling, no flush
    (out,) = run(map2("f32", "f32", "a[i] * b[i]"), np.array([1e-20], np.float32), np.array([1e-20], np.float32))
    assert out[0] != 0 and out[0] < np.finfo(np.float32).tiny  # a subnormal product survives


# --- NaN: min/max return the non-NaN operand; comparisons with NaN
def test_nan_min_max_and_comparisons(run):
    nan = np.float32("nan")
    a = np.array([nan, 1.0, nan, -0.0, 0.0], np.float32)
    b = np.array([2.0, nan, nan, 0.0, -0.0], np.float32)
    (mn,) = run(map2("f32", "f32", "primitive.math.min(a[i], b[i])"), a, b)
    (mx,) = run(map2("f32", "f32", "primitive.math.max(a[i], b[i])"), a, b)
    assert mn[0] == 2.0 and mn[1] == 1.0 and np.isnan(mn[2]) and np.signbit(mn[3]) and np.signbit(mn[4])
    assert mx[0] == 2.0 and mx[1] == 1.0 and np.isnan(mx[2]) and not np.signbit(mx[3]) and not np.signbit(mx[4])
    (eq,) = run(map2("f32", "bool", "a[i] == b[i]"), a, b)
    (ne,) = run(map2("f32", "bool", "a[i] != b[i]"), a, b)
    (lt,) = run(map2("f32", "bool", "a[i] < b[i]"), a, b)
    assert eq.tolist() == [False, False, False, True, True]
    assert ne.tolist() == [True, True, True, False, False]
    assert lt.tolist() == [False] * 5


def f32_of(bits: int) -> float:
    return struct.unpack("<f", struct.pack("<I", bits))[0]


# --- float -> int: truncate toward zero, saturate, NaN -> 0
@pytest.mark.parametrize("src", [DataType.F32, DataType.F64], ids=str)
@pytest.mark.parametrize("dst", INTS, ids=str)
def test_float_to_int_truncates_saturates_nan_zero(run, src, dst):
    rng = np.random.default_rng(2)
    bits = witnesses(src) + random_bits(src, 500, rng)
    a = np.array(bits, dtype=np.uint32 if src is DataType.F32 else np.uint64).view(src.numpy_dtype)
    (out,) = run(map2(src.value, dst.value, f"a[i] as {dst.value}"), a, a)
    want = []
    for x in a.tolist():
        if math.isnan(x):
            want.append(0)
        elif math.isinf(x):
            want.append(dst.max if x > 0 else dst.min)
        else:
            want.append(min(max(math.trunc(x), dst.min), dst.max))
    check(out, dst, want)


def round_int_to_float(x: int, mantissa: int) -> float:
    """Exact round-half-even of an integer to a float with `mantissa` significant bits."""
    n = abs(x)
    if n.bit_length() <= mantissa:
        return float(x)
    shift = n.bit_length() - mantissa
    q, r = divmod(n, 1 << shift)
    half = 1 << (shift - 1)
    if r > half or (r == half and q & 1):
        q += 1
    return math.copysign(float(q << shift), x)


# --- int -> float: round to nearest even (no double rounding)
@pytest.mark.parametrize("src", INTS, ids=str)
@pytest.mark.parametrize("dst, mantissa", [(DataType.F32, 24), (DataType.F64, 53)], ids=["f32", "f64"])
def test_int_to_float_rounds_to_nearest_even(run, src, dst, mantissa):
    a, _, av, _ = samples(src, 2000, seed=3)
    tricky = [(1 << 53) + (1 << 29) + 1, (1 << 24) + 1, (1 << 24) + 3, (1 << 62) + (1 << 38) + 1]
    extra = [v for v in tricky + [-t for t in tricky] if src.min <= v <= src.max]
    a = np.concatenate([a, np.array(extra, dtype=src.numpy_dtype)])
    av = av + extra
    (out,) = run(map2(src.value, dst.value, f"a[i] as {dst.value}"), a, a)
    want = np.array([round_int_to_float(x, mantissa) for x in av], dtype=dst.numpy_dtype)
    assert (out == want).all(), np.flatnonzero(out != want)[:5]


# --- round(): half to even
def test_round_half_to_even(run):
    a = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.5, 0.49999997], np.float32)
    (out,) = run(map2("f32", "f32", "primitive.math.round(a[i])"), a, a)
    assert out.tolist() == [0.0, 2.0, 2.0, -0.0, -2.0, -2.0, 4.0, 0.0]
    assert np.signbit(out[3])


# --- approximations declare their accuracy in ULP; the arithmetic of primitive.math is correctly rounded
def test_ulp_budgets_are_declared_per_float_type(registry):
    float_ops = [op for op in registry if any(op.output_type(b).is_float for b in op.bindings())
                 and op.dialect == "primitive.math"]
    assert float_ops
    for op in float_ops:
        for b in op.bindings():
            t = op.output_type(b)
            if t.is_float:
                assert op.accuracy(t) == 0, f"{op.id} is exact and must declare 0 ULP"
    assert registry.get("primitive.math.sqrt").accuracy_ulp == {DataType.F32: 0, DataType.F64: 0}


# --- out of bounds: loads yield 0, stores and atomics do nothing (atomics yield 0)
def test_out_of_bounds_is_predicated_not_clamped(run):
    src = """program m workgroup(8, 1, 1) {
      buffer a: read u32[4] @0
      buffer h: read_write u32[4] @1
      buffer o: write u32[8] @2
      buffer old: write u32[8] @3
      let i = gid.x
      o[i] = a[i] + 100u32
      h[i + 2u32] = 7u32
      old[i] = atomic primitive.atomic.add(h[i * 2u32], 1u32)
    }"""
    a = np.array([1, 2, 3, 4], np.uint32)
    h = np.array([10, 20, 30, 40], np.uint32)
    out_h, o, old = run(src, a, h, grid=(1, 1, 1))
    assert o.tolist() == [101, 102, 103, 104, 100, 100, 100, 100]  # loads past the end read 0
    assert out_h.tolist() == [11, 20, 8, 7]  # stores past the end dropped (never clamped onto element 0)
    assert old.tolist() == [10, 7, 0, 0, 0, 0, 0, 0]  # atomics past the end yield 0
    assert h.tolist() == [10, 20, 30, 40]  # the caller's array is not modified


# --- bool: nonzero is true; stored as the word 1 or 0
def test_bool_truthiness_and_storage(run, backend):
    src = """program m workgroup(4, 1, 1) {
      buffer flags: read bool[] @0
      buffer out: write u32[len(flags)] @1
      buffer copy: write bool[len(flags)] @2
      let i = gid.x
      if flags[i] { out[i] = 1u32 }
      copy[i] = flags[i]
    }"""
    words = np.array([0, 1, 5, 0xFFFFFFFF], np.uint32)
    out, copy = run(src, words)
    assert out.tolist() == [0, 1, 1, 1] and copy.tolist() == [False, True, True, True]
    pipe = backend.compile(parse_program(src))
    launch = prepare(pipe.program, [words], DispatchConfig())
    pipe.compiled.run(launch.memory, launch.counts, launch.grid)
    assert launch.memory["copy"].tolist() == [0, 1, 1, 1]  # the stored words are exactly 0 and 1
    (out2, _) = run(src, np.array([False, True, True, False]))
    assert out2.tolist() == [0, 1, 1, 0]


# --- outputs are allocated and zero-filled by the runtime before launch
def test_outputs_are_zero_filled(run):
    src = """program m workgroup(4, 1, 1) {
      buffer o: write u32[8] @0
      buffer p: read_write f32[8] @1 output
      let i = gid.x
      if i % 2u32 == 0u32 { o[i] = 9u32 }
    }"""
    o, p = run(src)
    assert o.tolist() == [9, 0, 9, 0, 9, 0, 9, 0] and p.tolist() == [0.0] * 8
