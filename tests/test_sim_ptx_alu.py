"""The PTX interpreter's integer and bit instructions, each checked against Python integers
computed from the ISA's pseudocode (not from the interpreter's own helpers)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from sim_ptx_helpers import run_op

R = random.Random(20260126)
M32, M64 = (1 << 32) - 1, (1 << 64) - 1


def corners(bits: int, n: int = 40) -> list[int]:
    top = 1 << bits
    base = [0, 1, 2, 3, top - 1, top - 2, top >> 1, (top >> 1) - 1, (top >> 1) + 1, 0x55555555 & (top - 1)]
    return base + [R.randrange(top) for _ in range(n - len(base))]


def signed(v: int, bits: int) -> int:
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


def pairs(bits: int, n: int = 60) -> tuple[list[int], list[int]]:
    a, b = corners(bits, n), corners(bits, n)
    R.shuffle(b)
    return a, b


def typed(values: list[int], t: str) -> np.ndarray:
    bits = int(t[1:])
    raw = np.array([v & ((1 << bits) - 1) for v in values], dtype=f"uint{bits}")
    return raw.view(f"int{bits}") if t[0] == "s" else raw


def as_ints(arr: np.ndarray) -> list[int]:
    return [int(x) for x in arr.view(f"uint{arr.dtype.itemsize * 8}")]


@pytest.mark.parametrize("t", ["u16", "s16", "u32", "s32", "u64", "s64"])
def test_mul_lo_hi_wide(t):
    bits = int(t[1:])
    a, b = pairs(bits)
    val = (lambda v: signed(v, bits)) if t[0] == "s" else (lambda v: v)
    exact = [val(x) * val(y) for x, y in zip(a, b)]
    mask = (1 << bits) - 1
    lo, _ = run_op(f"mul.lo.{t} %d, %a, %b", t, [(t, typed(a, t)), (t, typed(b, t))])
    hi, _ = run_op(f"mul.hi.{t} %d, %a, %b", t, [(t, typed(a, t)), (t, typed(b, t))])
    assert as_ints(lo) == [p & mask for p in exact]
    assert as_ints(hi) == [(p >> bits) & mask for p in exact]
    if bits < 64:
        wt = f"{t[0]}{2 * bits}"
        wide, _ = run_op(f"mul.wide.{t} %d, %a, %b", wt, [(t, typed(a, t)), (t, typed(b, t))])
        assert as_ints(wide) == [p & ((1 << 2 * bits) - 1) for p in exact]


@pytest.mark.parametrize("t", ["u32", "s32", "u64", "s64"])
def test_mad_lo_hi(t):
    bits = int(t[1:])
    a, b = pairs(bits)
    c = corners(bits, len(a))
    val = (lambda v: signed(v, bits)) if t[0] == "s" else (lambda v: v)
    mask = (1 << bits) - 1
    srcs = [(t, typed(a, t)), (t, typed(b, t)), (t, typed(c, t))]
    lo, _ = run_op(f"mad.lo.{t} %d, %a, %b, %c", t, srcs)
    hi, _ = run_op(f"mad.hi.{t} %d, %a, %b, %c", t, srcs)
    assert as_ints(lo) == [(val(x) * val(y) + z) & mask for x, y, z in zip(a, b, c)]
    assert as_ints(hi) == [(((val(x) * val(y)) >> bits) + z) & mask for x, y, z in zip(a, b, c)]


def test_mad_hi_sat_and_add_sub_sat():
    a, b = pairs(32)
    c = corners(32, len(a))
    sat = lambda v: max(-(2**31), min(2**31 - 1, v))  # noqa: E731
    s = lambda v: signed(v, 32)  # noqa: E731
    got, _ = run_op("mad.hi.sat.s32 %d, %a, %b, %c", "s32", [("s32", typed(a, "s32")), ("s32", typed(b, "s32")),
                                                           ("s32", typed(c, "s32"))])
    assert got.tolist() == [sat(((s(x) * s(y)) >> 32) + s(z)) for x, y, z in zip(a, b, c)]
    add, _ = run_op("add.sat.s32 %d, %a, %b", "s32", [("s32", typed(a, "s32")), ("s32", typed(b, "s32"))])
    sub, _ = run_op("sub.sat.s32 %d, %a, %b", "s32", [("s32", typed(a, "s32")), ("s32", typed(b, "s32"))])
    assert add.tolist() == [sat(s(x) + s(y)) for x, y in zip(a, b)]
    assert sub.tolist() == [sat(s(x) - s(y)) for x, y in zip(a, b)]


def test_mul24_and_mad24():
    a, b = pairs(32)
    c = corners(32, len(a))
    s24 = lambda v: signed(v & 0xFFFFFF, 24)  # noqa: E731
    for t, val in (("u32", lambda v: v & 0xFFFFFF), ("s32", s24)):
        srcs = [(t, typed(a, t)), (t, typed(b, t))]
        lo, _ = run_op(f"mul24.lo.{t} %d, %a, %b", t, srcs)
        hi, _ = run_op(f"mul24.hi.{t} %d, %a, %b", t, srcs)
        mad, _ = run_op(f"mad24.hi.{t} %d, %a, %b, %c", t, srcs + [(t, typed(c, t))])
        assert as_ints(lo) == [(val(x) * val(y)) & M32 for x, y in zip(a, b)]
        assert as_ints(hi) == [((val(x) * val(y)) >> 16) & M32 for x, y in zip(a, b)]
        assert as_ints(mad) == [(((val(x) * val(y)) >> 16) + z) & M32 for x, y, z in zip(a, b, c)]


def test_carry_chains_add_and_subtract_wide_integers():
    # a 64-bit add and subtract out of 32-bit halves: add.cc + addc, sub.cc + subc
    a, b = pairs(64)
    lo_a, hi_a = [x & M32 for x in a], [x >> 32 for x in a]
    lo_b, hi_b = [x & M32 for x in b], [x >> 32 for x in b]
    srcs = [("u32", typed(lo_a, "u32")), ("u32", typed(lo_b, "u32")), ("u32", typed(hi_a, "u32")),
            ("u32", typed(hi_b, "u32"))]
    add, _ = run_op("add.cc.u32 %d, %a, %b; addc.u32 %d, %c, %e", "u32", srcs)
    sub, _ = run_op("sub.cc.u32 %d, %a, %b; subc.u32 %d, %c, %e", "u32", srcs)
    assert as_ints(add) == [((x + y) >> 32) & M32 for x, y in zip(a, b)]
    assert as_ints(sub) == [((x - y) >> 32) & M32 for x, y in zip(a, b)]
    # 128-bit: u64 halves with carry-out of the high part into a third word
    big = [(x << 64 | y) for x, y in zip(a, b)]
    srcs = [("u64", typed([v & M64 for v in big], "u64")), ("u64", typed([v >> 64 for v in big], "u64")),
            ("u64", typed([v >> 64 for v in big], "u64"))]
    carry, _ = run_op("add.cc.u64 %d, %a, %a; addc.cc.u64 %d, %b, %c; addc.u64 %d, 0, 0", "u64", srcs)
    assert as_ints(carry) == [(2 * v) >> 128 for v in big]


@pytest.mark.parametrize("t", ["u32", "s32", "u64", "s64"])
def test_div_rem_truncate_and_machine_values_at_zero(t):
    bits = int(t[1:])
    a, b = pairs(bits)
    b[:4] = [0, 0, M64 & ((1 << bits) - 1), 1]  # x/0, and -1 (MIN/-1 for signed a = MIN)
    a[:4] = [5, 1 << (bits - 1), 1 << (bits - 1), 7]
    val = (lambda v: signed(v, bits)) if t[0] == "s" else (lambda v: v)
    srcs = [(t, typed(a, t)), (t, typed(b, t))]
    q, _ = run_op(f"div.{t} %d, %a, %b", t, srcs)
    r, _ = run_op(f"rem.{t} %d, %a, %b", t, srcs)
    mask = (1 << bits) - 1
    for x, y, gq, gr in zip(a, b, as_ints(q), as_ints(r)):
        if y == 0:  # machine-specific in the ISA; the model: all ones and the dividend
            assert (gq, gr) == (mask, x & mask)
            continue
        n, d = val(x), val(y)
        quo = abs(n) // abs(d) * (1 if (n < 0) == (d < 0) else -1)
        assert (gq, gr) == (quo & mask, (n - quo * d) & mask), (x, y)


@pytest.mark.parametrize("t", ["b32", "b64", "u32", "s32", "u64", "s64"])
def test_shifts_clamp_amounts_of_the_width_or_more(t):
    bits = int(t[1:])
    vals = corners(bits, 20)
    amounts = list(range(0, bits + 3)) + [bits * 2, 255, 256, 0xFFFFFFFF]
    a = [v for v in vals for _ in amounts]
    n = [s for _ in vals for s in amounts]
    mask = (1 << bits) - 1
    for chunk in range(0, len(a), 1024):
        sa, sn = a[chunk:chunk + 1024], n[chunk:chunk + 1024]
        if t[0] != "s":
            shl, _ = run_op(f"shl.b{bits} %d, %a, %b", f"b{bits}", [(f"b{bits}", typed(sa, "u" + t[1:])),
                                                                  ("u32", typed(sn, "u32"))])
            assert as_ints(shl) == [(x << s) & mask if s < bits else 0 for x, s in zip(sa, sn)]
        shr, _ = run_op(f"shr.{t} %d, %a, %b", t, [(t, typed(sa, t if t[0] == "s" else "u" + t[1:])),
                                                   ("u32", typed(sn, "u32"))])
        if t[0] == "s":
            want = [(signed(x, bits) >> min(s, bits - 1)) & mask for x, s in zip(sa, sn)]
        else:
            want = [(x >> s) if s < bits else 0 for x, s in zip(sa, sn)]
        assert as_ints(shr) == want


@pytest.mark.parametrize("mode", ["l.wrap", "l.clamp", "r.wrap", "r.clamp"])
def test_shf_funnel_shifts(mode):
    a, b = pairs(32, 30)
    amounts = [0, 1, 5, 31, 32, 33, 63, 100]
    xa, xb, xc = ([v for v in a for _ in amounts], [v for v in b for _ in amounts], [s for _ in a for s in amounts])
    got, _ = run_op(f"shf.{mode}.b32 %d, %a, %b, %c", "b32", [("b32", typed(xa, "u32")), ("b32", typed(xb, "u32")),
                                                             ("u32", typed(xc, "u32"))])
    want = []
    for lo, hi, c in zip(xa, xb, xc):
        n = min(c, 32) if mode.endswith("clamp") else c & 31
        pair = hi << 32 | lo
        want.append(((pair << n) >> 32) & M32 if mode[0] == "l" else (pair >> n) & M32)
    assert as_ints(got) == want


def _prmt_generic(a: int, b: int, c: int) -> int:
    src = (b << 32 | a).to_bytes(8, "little")
    out = 0
    for k in range(4):
        sel = (c >> 4 * k) & 0xF
        byte = src[sel & 7]
        if sel & 8:
            byte = 0xFF if byte & 0x80 else 0
        out |= byte << 8 * k
    return out


def test_prmt_generic_selectors_and_sign_replication():
    a, b = pairs(32, 80)
    c = [R.randrange(1 << 16) for _ in a] + [0x0123, 0x3210, 0x8888, 0xFFFF]
    a, b = a + [0x11223344, 0x11223344, 0x807F0080, 0x80FF7F01], b + [0x55667788] * 4
    got, _ = run_op("prmt.b32 %d, %a, %b, %c", "b32", [("b32", typed(a, "u32")), ("b32", typed(b, "u32")),
                                                      ("b32", typed(c, "u32"))])
    assert as_ints(got) == [_prmt_generic(x, y, z) for x, y, z in zip(a, b, c)]
    assert as_ints(got)[-4] == 0x44332211  # selector 0x0123 reverses the bytes of a


def test_prmt_modes_follow_the_isa_table():
    # d.b3 d.b2 d.b1 d.b0 as the ISA's table lists them, for c[1:0] = 0..3
    table = {"f4e": ["3210", "4321", "5432", "6543"], "b4e": ["5670", "6701", "7012", "0123"],
             "rc8": ["0000", "1111", "2222", "3333"], "ecl": ["3210", "3211", "3222", "3333"],
             "ecr": ["0000", "1110", "2210", "3210"], "rc16": ["1010", "3232", "1010", "3232"]}
    a, b = 0x03020100, 0x07060504  # byte k holds k
    for mode, rows in table.items():
        got, _ = run_op(f"prmt.b32.{mode} %d, %a, %b, %c", "b32",
                        [("b32", typed([a] * 4, "u32")), ("b32", typed([b] * 4, "u32")),
                         ("b32", typed([0, 1, 2, 0xFFFFFFFF], "u32"))])
        want = [int("".join(f"0{d}" for d in row), 16) for row in rows[:3] + [rows[3]]]
        assert as_ints(got) == want, mode


def _bfe(a: int, pos: int, ln: int, bits: int, is_signed: bool) -> int:
    msb = bits - 1
    pos, ln = pos & 0xFF, ln & 0xFF
    sbit = 0 if (not is_signed or ln == 0) else (a >> min(pos + ln - 1, msb)) & 1
    d = 0
    for i in range(bits):
        bit = (a >> (pos + i)) & 1 if (i < ln and pos + i <= msb) else sbit
        d |= bit << i
    return d


@pytest.mark.parametrize("t", ["u32", "s32", "u64", "s64"])
def test_bfe_fields_past_the_msb(t):
    bits = int(t[1:])
    vals = corners(bits, 12)
    cases = [(v, p, ln) for v in vals for p, ln in [(0, 0), (0, bits), (3, 5), (bits - 1, 1), (bits - 4, 9),
                                                    (bits, 3), (200, 8), (0x105, 4), (7, 0x103), (1, 255)]]
    a, pos, ln = zip(*cases)
    got, _ = run_op(f"bfe.{t} %d, %a, %b, %c", t, [(t, typed(list(a), t)), ("u32", typed(list(pos), "u32")),
                                                    ("u32", typed(list(ln), "u32"))])
    assert as_ints(got) == [_bfe(x, p, n, bits, t[0] == "s") for x, p, n in cases]


@pytest.mark.parametrize("bits", [32, 64])
def test_bfi_inserts_inside_the_value(bits):
    a, b = pairs(bits, 12)
    spots = [(0, 0), (0, bits), (4, 8), (bits - 3, 8), (bits, 4), (0x104, 2), (3, 255)]
    cases = [(x, y, p, n) for x, y in zip(a, b) for p, n in spots]
    xa, xb, xp, xn = (list(v) for v in zip(*cases))
    t = f"b{bits}"
    got, _ = run_op(f"bfi.{t} %d, %a, %b, %c, %e", t, [(t, typed(xa, f"u{bits}")), (t, typed(xb, f"u{bits}")),
                                                        ("u32", typed(xp, "u32")), ("u32", typed(xn, "u32"))])
    want = []
    for x, y, p, n in cases:
        f, p, n = y, p & 0xFF, n & 0xFF
        for i in range(n):
            if p + i > bits - 1:
                break
            f = (f & ~(1 << (p + i))) | (((x >> i) & 1) << (p + i))
        want.append(f)
    assert as_ints(got) == want


@pytest.mark.parametrize("bits", [32, 64])
def test_popc_clz_brev_bfind(bits):
    vals = corners(bits, 60)
    u, s = f"u{bits}", f"s{bits}"
    popc, _ = run_op(f"popc.b{bits} %d, %a", "u32", [(f"b{bits}", typed(vals, u))])
    clz, _ = run_op(f"clz.b{bits} %d, %a", "u32", [(f"b{bits}", typed(vals, u))])
    brev, _ = run_op(f"brev.b{bits} %d, %a", f"b{bits}", [(f"b{bits}", typed(vals, u))])
    assert popc.tolist() == [bin(v).count("1") for v in vals]
    assert clz.tolist() == [bits - v.bit_length() for v in vals]
    assert as_ints(brev) == [int(f"{v:0{bits}b}"[::-1], 2) for v in vals]
    for t in (u, s):
        for amt in ("", ".shiftamt"):
            got, _ = run_op(f"bfind{amt}.{t} %d, %a", "u32", [(t, typed(vals, t))])
            want = []
            for v in vals:
                x = (~v & ((1 << bits) - 1)) if t[0] == "s" and v >> (bits - 1) else v
                d = x.bit_length() - 1 if x else M32
                want.append(bits - 1 - d if amt and d != M32 else d)
            assert got.tolist() == want, (t, amt)


def test_lop3_truth_tables():
    a, b = pairs(32, 40)
    c = corners(32, 40)
    for lut in (0x00, 0xFF, 0x80, 0x96, 0xE8, 0xF0, 0xCC, 0xAA, 0x1E, R.randrange(256)):
        got, _ = run_op(f"lop3.b32 %d, %a, %b, %c, {lut}", "b32",
                        [("b32", typed(a, "u32")), ("b32", typed(b, "u32")), ("b32", typed(c, "u32"))])
        want = []
        for x, y, z in zip(a, b, c):
            r = 0
            for i in range(32):
                k = ((x >> i) & 1) << 2 | ((y >> i) & 1) << 1 | ((z >> i) & 1)
                r |= ((lut >> k) & 1) << i
            want.append(r)
        assert as_ints(got) == want, hex(lut)


def test_szext_and_bmsk_pseudocode():
    vals = corners(32, 10)
    ns = [0, 1, 7, 31, 32, 33, 63, 0xFFFFFFFF]
    a = [v for v in vals for _ in ns]
    n = [k for _ in vals for k in ns]
    for mode in ("clamp", "wrap"):
        for t in ("u32", "s32"):
            got, _ = run_op(f"szext.{mode}.{t} %d, %a, %b", t, [(t, typed(a, t)), ("u32", typed(n, "u32"))])
            want = []
            for x, b in zip(a, n):
                b1 = b & 31
                too_large = b >= 32 and mode == "clamp"
                mask = 0 if too_large else (M32 << b1) & M32
                sign = not (b1 == 0 or too_large or t != "s32") and (x >> ((b1 - 1) & 31)) & 1
                want.append((x & ~mask & M32) | (mask if sign else 0))
            assert as_ints(got) == want, (mode, t)
        pos = [k for k in ns for _ in ns]
        width = [k for _ in ns for k in ns]
        got, _ = run_op(f"bmsk.{mode}.b32 %d, %a, %b", "b32", [("u32", typed(pos, "u32")), ("u32", typed(width, "u32"))])
        want = []
        for pa, pb in zip(pos, width):
            a1, b1 = pa & 31, pb & 31
            mask0, mask1 = (M32 << a1) & M32, (M32 << (a1 + b1)) & M32 if a1 + b1 < 32 else 0
            over = a1 + b1 >= 32 or (mode == "clamp" and (pa >= 32 or pb >= 32))
            if mode == "clamp" and pa >= 32:
                mask0 = 0
            mask1 = 0 if over else (M32 if b1 == 0 else mask1)
            want.append(mask0 & ~mask1 & M32)
        assert as_ints(got) == want, mode


def test_dp4a_dp2a_sad():
    a, b = pairs(32, 50)
    c = corners(32, 50)

    def parts(v: int, width: int, is_signed: bool) -> list[int]:
        return [signed(v >> (width * k), width) if is_signed else (v >> (width * k)) & ((1 << width) - 1)
                for k in range(32 // width)]
    for ta in ("u32", "s32"):
        for tb in ("u32", "s32"):
            rt = "s32" if "s32" in (ta, tb) else "u32"
            srcs = [(ta, typed(a, ta)), (tb, typed(b, tb)), (rt, typed(c, rt))]
            got, _ = run_op(f"dp4a.{ta}.{tb} %d, %a, %b, %c", rt, srcs)
            want = [(z + sum(p * q for p, q in zip(parts(x, 8, ta == "s32"), parts(y, 8, tb == "s32")))) & M32
                    for x, y, z in zip(a, b, c)]
            assert as_ints(got) == want
            for half in ("lo", "hi"):
                got, _ = run_op(f"dp2a.{half}.{ta}.{tb} %d, %a, %b, %c", rt, srcs)
                sel = 0 if half == "lo" else 2
                want = [(z + sum(p * q for p, q in zip(parts(x, 16, ta == "s32"),
                                                       parts(y, 8, tb == "s32")[sel:sel + 2]))) & M32
                        for x, y, z in zip(a, b, c)]
                assert as_ints(got) == want
    for t in ("u32", "s32", "u64", "s64"):
        bits = int(t[1:])
        x, y = pairs(bits, 40)
        z = corners(bits, 40)
        val = (lambda v: signed(v, bits)) if t[0] == "s" else (lambda v: v)
        got, _ = run_op(f"sad.{t} %d, %a, %b, %c", t, [(t, typed(x, t)), (t, typed(y, t)), (t, typed(z, t))])
        assert as_ints(got) == [(val(w) + abs(val(u) - val(v))) & ((1 << bits) - 1) for u, v, w in zip(x, y, z)]


def test_fns_finds_the_nth_set_bit():
    masks = [0, M32, 0x80000001, 0x0F0F0F0F, 0x12345678, 0xF0000000]
    cases = [(mk, base, off) for mk in masks for base in (0, 3, 16, 31) for off in (-3, -1, 0, 1, 2, 5, 33)]
    mk, base, off = (list(v) for v in zip(*cases))
    got, _ = run_op("fns.b32 %d, %a, %b, %c", "b32", [("b32", typed(mk, "u32")), ("u32", typed(base, "u32")),
                                                      ("s32", typed(off, "s32"))])
    want = []
    for m, bs, of in cases:
        d = M32
        if of == 0:
            d = bs if (m >> bs) & 1 else M32
        else:
            pos, count, inc = bs, abs(of) - 1, 1 if of > 0 else -1
            while 0 <= pos < 32:
                if (m >> pos) & 1:
                    if count == 0:
                        d = pos
                        break
                    count -= 1
                pos += inc
        want.append(d)
    assert as_ints(got) == want


@pytest.mark.parametrize("t", ["u32", "s32", "u64", "s64"])
def test_min_max_abs_neg(t):
    bits = int(t[1:])
    a, b = pairs(bits)
    val = (lambda v: signed(v, bits)) if t[0] == "s" else (lambda v: v)
    mask = (1 << bits) - 1
    srcs = [(t, typed(a, t)), (t, typed(b, t))]
    mn, _ = run_op(f"min.{t} %d, %a, %b", t, srcs)
    mx, _ = run_op(f"max.{t} %d, %a, %b", t, srcs)
    assert as_ints(mn) == [min(val(x), val(y)) & mask for x, y in zip(a, b)]
    assert as_ints(mx) == [max(val(x), val(y)) & mask for x, y in zip(a, b)]
    if t[0] == "s":
        ab, _ = run_op(f"abs.{t} %d, %a", t, srcs[:1])
        ng, _ = run_op(f"neg.{t} %d, %a", t, srcs[:1])
        assert as_ints(ab) == [abs(val(x)) & mask for x in a]  # |MIN| wraps to MIN
        assert as_ints(ng) == [-val(x) & mask for x in a]
    if t == "s32":
        relu, _ = run_op("max.relu.s32 %d, %a, %b", t, srcs)
        assert relu.tolist() == [max(0, max(val(x), val(y))) for x, y in zip(a, b)]


def test_integer_compares_bool_ops_set_selp_slct():
    a, b = pairs(32, 60)
    sa, sb = typed(a, "s32"), typed(b, "s32")
    ops = {"eq": lambda x, y: x == y, "ne": lambda x, y: x != y, "lt": lambda x, y: x < y,
           "le": lambda x, y: x <= y, "gt": lambda x, y: x > y, "ge": lambda x, y: x >= y}
    for op, f in ops.items():
        got, _ = run_op(f"setp.{op}.s32 %d, %a, %b", "pred", [("s32", sa), ("s32", sb)])
        assert got.tolist() == [int(f(signed(x, 32), signed(y, 32))) for x, y in zip(a, b)], op
    for op, f in {"lo": ops["lt"], "ls": ops["le"], "hi": ops["gt"], "hs": ops["ge"]}.items():
        got, _ = run_op(f"setp.{op}.u32 %d, %a, %b", "pred", [("u32", typed(a, "u32")), ("u32", typed(b, "u32"))])
        assert got.tolist() == [int(f(x, y)) for x, y in zip(a, b)], op
    c = [R.randrange(2) for _ in a]
    pc = ("pred", np.array(c, dtype=np.uint32))
    for bop, f2 in {"and": lambda p, q: p and q, "or": lambda p, q: p or q, "xor": lambda p, q: p != q}.items():
        got, _ = run_op(f"setp.lt.{bop}.s32 %d|%q, %a, %b, !%c", "pred", [("s32", sa), ("s32", sb), pc])
        other, _ = run_op(f"setp.lt.{bop}.s32 %q|%d, %a, %b, !%c", "pred", [("s32", sa), ("s32", sb), pc])
        lt = [signed(x, 32) < signed(y, 32) for x, y in zip(a, b)]
        assert got.tolist() == [int(bool(f2(t, not k))) for t, k in zip(lt, c)], bop
        assert other.tolist() == [int(bool(f2(not t, not k))) for t, k in zip(lt, c)], bop
    st, _ = run_op("set.gt.u32.s32 %d, %a, %b", "u32", [("s32", sa), ("s32", sb)])
    sf, _ = run_op("set.gt.f32.s32 %d, %a, %b", "f32", [("s32", sa), ("s32", sb)])
    gt = [signed(x, 32) > signed(y, 32) for x, y in zip(a, b)]
    assert as_ints(st) == [M32 if g else 0 for g in gt] and sf.tolist() == [1.0 if g else 0.0 for g in gt]
    sel, _ = run_op("selp.b32 %d, %a, %b, %c", "b32", [("b32", typed(a, "u32")), ("b32", typed(b, "u32")), pc])
    assert as_ints(sel) == [x if k else y for x, y, k in zip(a, b, c)]
    sl, _ = run_op("slct.u32.s32 %d, %a, %b, %c", "u32", [("u32", typed(a, "u32")), ("u32", typed(b, "u32")),
                                                         ("s32", sb)])
    assert as_ints(sl) == [x if signed(y, 32) >= 0 else y for x, y in zip(a, b)]


def test_not_cnot_and_logic():
    a, b = pairs(64, 40)
    t = [("b64", typed(a, "u64")), ("b64", typed(b, "u64"))]
    for op, f in {"and": lambda x, y: x & y, "or": lambda x, y: x | y, "xor": lambda x, y: x ^ y}.items():
        got, _ = run_op(f"{op}.b64 %d, %a, %b", "b64", t)
        assert as_ints(got) == [f(x, y) for x, y in zip(a, b)]
    nt, _ = run_op("not.b64 %d, %a", "b64", t[:1])
    cn, _ = run_op("cnot.b64 %d, %a", "b64", t[:1])
    assert as_ints(nt) == [~x & M64 for x in a] and as_ints(cn) == [int(x == 0) for x in a]
