"""Integer arithmetic: add sub (wrapping, .sat for s32, .cc/addc/subc carry chains), mul and mad
(.lo .hi .wide, 128-bit products for 64-bit types), mul24/mad24, sad, div/rem (truncating; x/0 and
x%0 are machine-specific in the ISA: the model gives all ones and the dividend, as NVIDIA GPUs do
for unsigned division, and the emitter's templates select their own value), abs neg min max
(.relu), dp4a dp2a. All wrapping arithmetic runs on unsigned bits."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .ptx_ast import Instr
from .ptx_machine import Fn, Machine, Mask, PType
from .ptx_operands import Ctx, arity, split_mods

__all__ = ["INT_FORMS", "DECODERS", "ITYPES", "umulhi64", "unsigned"]

ITYPES = frozenset(("u16", "u32", "u64", "s16", "s32", "s64"))
_M32 = np.uint64(0xFFFFFFFF)


def unsigned(x: Any, bits: int) -> np.ndarray:
    return np.asarray(x).view(np.dtype(f"uint{bits}"))


def umulhi64(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The high 64 bits of the 128-bit product of two uint64 vectors."""
    a, b = np.asarray(a, dtype=np.uint64), np.asarray(b, dtype=np.uint64)
    s32 = np.uint64(32)
    al, ah, bl, bh = a & _M32, a >> s32, b & _M32, b >> s32
    p0, p1, p2, p3 = al * bl, al * bh, ah * bl, ah * bh
    mid = (p0 >> s32) + (p1 & _M32) + (p2 & _M32)
    return p3 + (p1 >> s32) + (p2 >> s32) + (mid >> s32)


def _mul_parts(a: Any, b: Any, t: PType) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) halves of the exact product, as unsigned bits of t's width."""
    a, b = np.asarray(a), np.asarray(b)
    if t.bits < 64:
        w = 2 * t.bits
        wide = (a.astype(np.int64) * b.astype(np.int64)) if t.kind == "s" else \
            (a.astype(np.uint64) * b.astype(np.uint64)).view(np.int64)
        u = wide.view(np.uint64) & np.uint64((1 << w) - 1) if w < 64 else wide.view(np.uint64)
        ut = np.dtype(f"uint{t.bits}")
        return u.astype(ut), (u >> np.uint64(t.bits)).astype(ut)
    ua, ub = a.view(np.uint64), b.view(np.uint64)
    lo, hi = ua * ub, umulhi64(ua, ub)
    if t.kind == "s":  # signed high part: subtract the operands that carried a sign
        hi = hi - np.where(a < 0, ub, np.uint64(0)) - np.where(b < 0, ua, np.uint64(0))
    return lo, hi


def _wide_type(ctx: Ctx, t: PType) -> PType:
    if t.bits == 64:
        raise ctx.error(".wide applies to 16- and 32-bit types")
    return ctx.ptype(f"{t.kind}{2 * t.bits}")


def _join(lo: np.ndarray, hi: np.ndarray, t: PType) -> np.ndarray:
    w = np.dtype(f"uint{2 * t.bits}")
    return lo.astype(w) | (hi.astype(w) << w.type(t.bits))


# ============================================================================ add sub
def dec_addsub(ins: Instr, ctx: Ctx) -> Fn:
    flags, (t,) = split_mods(ctx, ins.mods, frozenset(("sat", "cc")), ITYPES)
    arity(ctx, ins, 3)
    if "sat" in flags and t.name != "s32":
        raise ctx.error(".sat applies to .s32 only")
    if "cc" in flags and t.bits < 32:
        raise ctx.error(".cc needs a 32- or 64-bit type")
    d, a, b = ctx.dst(ins.operands[0], t), ctx.src(ins.operands[1], t), ctx.src(ins.operands[2], t)
    sub = ins.opcode == "sub"
    if "sat" in flags:
        def sat(m: Machine, mask: Mask) -> None:
            x, y = np.asarray(a(m, mask)).astype(np.int64), np.asarray(b(m, mask)).astype(np.int64)
            d(m, np.clip(x - y if sub else x + y, -(2 ** 31), 2 ** 31 - 1).astype(np.int32), mask)
        return sat
    if "cc" in flags:
        return _carry_op(ins, ctx, t, d, a, b, sub, carry_in=False)

    def run(m: Machine, mask: Mask) -> None:
        x, y = unsigned(a(m, mask), t.bits), unsigned(b(m, mask), t.bits)
        d(m, (x - y) if sub else (x + y), mask)
    return run


def _carry_op(ins: Instr, ctx: Ctx, t: PType, d: Any, a: Any, b: Any, sub: bool, carry_in: bool) -> Fn:
    """add.cc/addc{.cc}/sub.cc/subc{.cc}: CC.CF is the carry (for sub: the borrow)."""
    set_cc = "cc" in ins.mods
    one = np.uint64(1)

    def run(m: Machine, mask: Mask) -> None:
        x, y = unsigned(a(m, mask), t.bits).astype(np.uint64), unsigned(b(m, mask), t.bits).astype(np.uint64)
        cf = m.carry if carry_in else np.uint64(0)
        if t.bits == 32:
            full = (x - y - cf) if sub else (x + y + cf)
            r = (full & _M32).astype(np.uint32)
            out = (full >> np.uint64(32)) & one  # a borrow wraps the 64-bit difference: bit 32 set
        else:
            if sub:
                r = x - y - cf
                out = ((x < y) | ((x == y) & (cf != 0))).astype(np.uint64)
            else:
                s = x + y
                r = s + cf
                out = ((s < x) | (r < s)).astype(np.uint64)
        if set_cc:
            m.carry = out if mask is None else np.where(mask, out, m.carry)
        d(m, r, mask)
    return run


def dec_carry(ins: Instr, ctx: Ctx) -> Fn:
    """addc / subc {.cc}.u32|s32|u64|s64: add/subtract with the carry (borrow) in."""
    _, (t,) = split_mods(ctx, ins.mods, frozenset(("cc",)), frozenset(("u32", "s32", "u64", "s64")))
    arity(ctx, ins, 3)
    d, a, b = ctx.dst(ins.operands[0], t), ctx.src(ins.operands[1], t), ctx.src(ins.operands[2], t)
    return _carry_op(ins, ctx, t, d, a, b, ins.opcode == "subc", carry_in=True)


# ============================================================================ mul mad
def dec_mul(ins: Instr, ctx: Ctx) -> Fn:
    """mul.lo/.hi/.wide and mad.lo/.hi/.wide{.sat for mad.hi.s32}{.cc, madc}."""
    mad = ins.opcode in ("mad", "madc")
    flags, (t,) = split_mods(ctx, ins.mods, frozenset(("lo", "hi", "wide", "sat", "cc")), ITYPES)
    modes = flags & {"lo", "hi", "wide"}
    if len(modes) != 1:
        raise ctx.error("one of .lo, .hi, .wide is required")
    mode = next(iter(modes))
    if "sat" in flags and not (mad and mode == "hi" and t.name == "s32"):
        raise ctx.error(".sat exists for mad.hi.s32 only")
    arity(ctx, ins, 4 if mad else 3)
    rt = _wide_type(ctx, t) if mode == "wide" else t
    d = ctx.dst(ins.operands[0], rt)
    a, b = ctx.src(ins.operands[1], t), ctx.src(ins.operands[2], t)
    c = ctx.src(ins.operands[3], rt) if mad else None

    def product(m: Machine, mask: Mask) -> np.ndarray:
        lo, hi = _mul_parts(a(m, mask), b(m, mask), t)
        return lo if mode == "lo" else hi if mode == "hi" else _join(lo, hi, t)
    if not mad:
        return lambda m, mask: d(m, product(m, mask), mask)
    assert c is not None
    if "cc" in flags or ins.opcode == "madc":
        return _carry_op(ins, ctx, rt, d, product, c, sub=False, carry_in=ins.opcode == "madc")
    if "sat" in flags:
        def sat(m: Machine, mask: Mask) -> None:
            hi = product(m, mask).view(np.int32).astype(np.int64)
            d(m, np.clip(hi + np.asarray(c(m, mask)).astype(np.int64), -(2 ** 31), 2 ** 31 - 1).astype(np.int32),
              mask)
        return sat
    return lambda m, mask: d(m, product(m, mask) + unsigned(c(m, mask), rt.bits), mask)


def dec_mul24(ins: Instr, ctx: Ctx) -> Fn:
    """mul24/mad24 .lo/.hi .u32/.s32: the 48-bit product of the low 24 bits (sign-extended for s32);
    .lo gives bits 31..0, .hi bits 47..16 (then + c for mad24)."""
    flags, (t,) = split_mods(ctx, ins.mods, frozenset(("lo", "hi", "sat")), frozenset(("u32", "s32")))
    mad = ins.opcode == "mad24"
    arity(ctx, ins, 4 if mad else 3)
    if len(flags & {"lo", "hi"}) != 1 or ("sat" in flags and not (mad and "hi" in flags and t.name == "s32")):
        raise ctx.error("one of .lo/.hi is required (.sat only for mad24.hi.sat.s32)")
    hi = "hi" in flags
    d, a, b = ctx.dst(ins.operands[0], t), ctx.src(ins.operands[1], t), ctx.src(ins.operands[2], t)
    c = ctx.src(ins.operands[3], t) if mad else None

    def low24(x: Any) -> np.ndarray:
        v = unsigned(x, 32).astype(np.int64) & 0xFFFFFF
        return np.where(v >= 0x800000, v - 0x1000000, v) if t.kind == "s" else v

    def run(m: Machine, mask: Mask) -> None:
        p = low24(a(m, mask)) * low24(b(m, mask))  # |p| < 2^47: exact in int64
        part = (p >> 16) if hi else p
        r = part + (np.asarray(c(m, mask)).astype(np.int64) if c is not None else 0)
        if "sat" in flags:
            r = np.clip(r, -(2 ** 31), 2 ** 31 - 1)
        d(m, (np.asarray(r).view(np.uint64) & _M32).astype(np.uint32), mask)
    return run


def dec_sad(ins: Instr, ctx: Ctx) -> Fn:
    """sad.type d, a, b, c: c + |a - b| (the difference exact, the sum wrapping)."""
    _, (t,) = split_mods(ctx, ins.mods, frozenset(), ITYPES)
    arity(ctx, ins, 4)
    d, a, b, c = ctx.dst(ins.operands[0], t), *(ctx.src(o, t) for o in ins.operands[1:])

    def run(m: Machine, mask: Mask) -> None:
        x, y = np.asarray(a(m, mask)), np.asarray(b(m, mask))
        ux, uy = unsigned(x, t.bits), unsigned(y, t.bits)
        diff = np.where(x < y, uy - ux, ux - uy)
        d(m, unsigned(c(m, mask), t.bits) + diff, mask)
    return run


# ============================================================================ div rem
def dec_divrem(ins: Instr, ctx: Ctx) -> Fn:
    _, (t,) = split_mods(ctx, ins.mods, frozenset(), ITYPES)
    arity(ctx, ins, 3)
    d, a, b = ctx.dst(ins.operands[0], t), ctx.src(ins.operands[1], t), ctx.src(ins.operands[2], t)
    ut = np.dtype(f"uint{t.bits}")
    rem = ins.opcode == "rem"

    def run(m: Machine, mask: Mask) -> None:
        x, y = np.asarray(a(m, mask)), np.asarray(b(m, mask))
        ux, uy = unsigned(x, t.bits), unsigned(y, t.bits)
        if t.kind == "s":  # magnitudes as unsigned (|MIN| fits), then the signs of C's truncation
            ux = np.where(x < 0, ut.type(0) - ux, ux)
            uy = np.where(y < 0, ut.type(0) - uy, uy)
        zero = uy == 0
        safe = np.where(zero, ut.type(1), uy)
        r = (ux % safe) if rem else (ux // safe)
        if t.kind == "s":
            neg = (x < 0) if rem else ((x < 0) != (y < 0))
            r = np.where(neg, ut.type(0) - r, r)
        r = np.where(zero, unsigned(x, t.bits) if rem else ~ut.type(0), r)
        d(m, r.astype(ut), mask)
    return run


# ============================================================================ abs neg min max
def dec_absneg(ins: Instr, ctx: Ctx) -> Fn:
    _, (t,) = split_mods(ctx, ins.mods, frozenset(), frozenset(("s16", "s32", "s64")))
    arity(ctx, ins, 2)
    d, a = ctx.dst(ins.operands[0], t), ctx.src(ins.operands[1], t)
    zero = np.dtype(f"uint{t.bits}").type(0)
    if ins.opcode == "neg":
        return lambda m, mask: d(m, zero - unsigned(a(m, mask), t.bits), mask)

    def run(m: Machine, mask: Mask) -> None:
        x = np.asarray(a(m, mask))
        u = unsigned(x, t.bits)
        d(m, np.where(x < 0, zero - u, u), mask)
    return run


def dec_minmax(ins: Instr, ctx: Ctx) -> Fn:
    flags, (t,) = split_mods(ctx, ins.mods, frozenset(("relu",)), ITYPES)
    arity(ctx, ins, 3)
    if "relu" in flags and t.name != "s32":
        raise ctx.error(".relu applies to .s32 here")
    d, a, b = ctx.dst(ins.operands[0], t), ctx.src(ins.operands[1], t), ctx.src(ins.operands[2], t)
    f = np.minimum if ins.opcode == "min" else np.maximum
    relu = "relu" in flags

    def run(m: Machine, mask: Mask) -> None:
        r = f(a(m, mask), b(m, mask))
        d(m, np.maximum(r, t.dtype.type(0)) if relu else r, mask)
    return run


# ============================================================================ dot products
def _bytes(x: Any, signed: bool, width: int) -> list[np.ndarray]:
    u = unsigned(x, 32).astype(np.int64)
    parts = []
    for k in range(32 // width):
        v = (u >> (k * width)) & ((1 << width) - 1)
        parts.append(np.where(v >= 1 << (width - 1), v - (1 << width), v) if signed else v)
    return parts


def dec_dp(ins: Instr, ctx: Ctx) -> Fn:
    """dp4a.atype.btype d, a, b, c and dp2a.lo|hi.atype.btype: byte/half-word dot products plus c."""
    types = frozenset(("u32", "s32"))
    flags, (ta, tb) = split_mods(ctx, ins.mods, frozenset(("lo", "hi")), types, ntypes=2)
    four = ins.opcode == "dp4a"
    if four == bool(flags) or (not four and len(flags) != 1):
        raise ctx.error("dp2a needs .lo or .hi; dp4a takes neither")
    arity(ctx, ins, 4)
    rt = ctx.ptype("s32" if "s32" in (ta.name, tb.name) else "u32")
    d, a, b, c = ctx.dst(ins.operands[0], rt), ctx.src(ins.operands[1], ta), ctx.src(ins.operands[2], tb), \
        ctx.src(ins.operands[3], rt)
    sel = 2 if "hi" in flags else 0

    def run(m: Machine, mask: Mask) -> None:
        va = _bytes(a(m, mask), ta.kind == "s", 8 if four else 16)
        vb = _bytes(b(m, mask), tb.kind == "s", 8)
        acc = np.asarray(c(m, mask)).astype(np.int64)
        for k in range(4 if four else 2):
            acc = acc + va[k] * vb[k if four else sel + k]
        d(m, (acc.view(np.uint64) & _M32).astype(np.uint32), mask)
    return run


INT_FORMS: dict[str, Callable[[Instr, Ctx], Fn]] = {  # opcodes shared with float types
    "add": dec_addsub, "sub": dec_addsub, "mul": dec_mul, "mad": dec_mul, "div": dec_divrem,
    "abs": dec_absneg, "neg": dec_absneg, "min": dec_minmax, "max": dec_minmax,
}
DECODERS: dict[str, Callable[[Instr, Ctx], Fn]] = {
    "addc": dec_carry, "subc": dec_carry, "madc": dec_mul, "mul24": dec_mul24, "mad24": dec_mul24,
    "sad": dec_sad, "rem": dec_divrem, "dp4a": dec_dp, "dp2a": dec_dp,
}
