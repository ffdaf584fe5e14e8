"""Logic and bit instructions: and or xor not cnot lop3, shl shr shf (shift amounts of the width or
more give 0, or the sign for shr.s; shf clamps or wraps), popc clz bfind brev, bfe bfi (fields past
the msb), fns, szext, bmsk, and prmt with every mode — each written from the ISA's pseudocode."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .ptx_ast import Imm, Instr
from .ptx_int import unsigned
from .ptx_machine import Fn, Machine, Mask
from .ptx_operands import Ctx, arity, split_mods

__all__ = ["DECODERS", "bit_length"]

_BTYPES = frozenset(("b16", "b32", "b64"))


def bit_length(x: Any) -> np.ndarray:
    """The number of significant bits of each unsigned value (0 for 0), as int64."""
    v = np.asarray(x).astype(np.uint64)
    n = np.zeros(v.shape, dtype=np.int64)
    for s in (32, 16, 8, 4, 2, 1):
        hi = (v >> np.uint64(s)) != 0
        n += hi * s
        v = np.where(hi, v >> np.uint64(s), v)
    return n + (v != 0)


def _shl(x: np.ndarray, n: Any, bits: int) -> np.ndarray:
    """x << n for unsigned x of ``bits`` bits, 0 when n >= bits (numpy's shifts wrap the count)."""
    n = np.asarray(n).astype(np.int64)
    ut = x.dtype.type
    return np.where(n >= bits, ut(0), x << np.minimum(n, bits - 1).astype(x.dtype))


def _shr(x: np.ndarray, n: Any, bits: int) -> np.ndarray:
    n = np.asarray(n).astype(np.int64)
    fill = x >> x.dtype.type(bits - 1) if x.dtype.kind == "i" else x.dtype.type(0)
    return np.where(n >= bits, fill, x >> np.minimum(n, bits - 1).astype(x.dtype))


def _ones(n: Any, bits: int) -> np.ndarray:
    """A mask of the low n bits (n in 0..bits)."""
    ut = np.dtype(f"uint{bits}")
    return _shl(np.asarray(~ut.type(0), dtype=ut), n, bits) ^ ~ut.type(0)


# ============================================================================ logic
def dec_logic(ins: Instr, ctx: Ctx) -> Fn:
    _, (t,) = split_mods(ctx, ins.mods, frozenset(), _BTYPES | {"pred"})
    op: Callable[[Any, Any], Any] = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[ins.opcode]
    arity(ctx, ins, 3)
    d, a, b = ctx.dst(ins.operands[0], t), ctx.src(ins.operands[1], t), ctx.src(ins.operands[2], t)
    return lambda m, mask: d(m, op(a(m, mask), b(m, mask)), mask)


def dec_not(ins: Instr, ctx: Ctx) -> Fn:
    _, (t,) = split_mods(ctx, ins.mods, frozenset(), _BTYPES | {"pred"})
    arity(ctx, ins, 2)
    d, a = ctx.dst(ins.operands[0], t), ctx.src(ins.operands[1], t)
    if ins.opcode == "cnot":
        if t.kind == "pred":
            raise ctx.error("cnot takes .b16, .b32 or .b64")
        one, zero = t.dtype.type(1), t.dtype.type(0)
        return lambda m, mask: d(m, np.where(a(m, mask) == 0, one, zero), mask)
    return lambda m, mask: d(m, np.invert(a(m, mask)), mask)


def dec_lop3(ins: Instr, ctx: Ctx) -> Fn:
    """lop3.b32 d, a, b, c, immLut: bit k of immLut is the result for (a, b, c) bits = k's bits 2..0."""
    flags, (t,) = split_mods(ctx, ins.mods, frozenset(("and", "or")), frozenset(("b32",)))
    if flags:
        raise ctx.error("lop3 with a predicate result (.and/.or) is not modelled")
    arity(ctx, ins, 5)
    lut_op = ins.operands[4]
    if not isinstance(lut_op, Imm) or not 0 <= lut_op.value <= 255:
        raise ctx.error("immLut must be an integer constant 0..255")
    lut = lut_op.value
    d, a, b, c = ctx.dst(ins.operands[0], t), *(ctx.src(o, t) for o in ins.operands[1:4])

    def run(m: Machine, mask: Mask) -> None:
        x, y, z = np.asarray(a(m, mask)), np.asarray(b(m, mask)), np.asarray(c(m, mask))
        r = np.zeros(np.broadcast(x, y, z).shape, dtype=np.uint32)
        for k in range(8):
            if lut >> k & 1:
                r |= (x if k & 4 else ~x) & (y if k & 2 else ~y) & (z if k & 1 else ~z)
        d(m, r, mask)
    return run


# ============================================================================ shifts
def dec_shift(ins: Instr, ctx: Ctx) -> Fn:
    """shl.bN / shr.{b,u,s}N d, a, b (b: .u32 amount)."""
    types = _BTYPES if ins.opcode == "shl" else _BTYPES | {"u16", "u32", "u64", "s16", "s32", "s64"}
    _, (t,) = split_mods(ctx, ins.mods, frozenset(), frozenset(types))
    arity(ctx, ins, 3)
    d, a, b = ctx.dst(ins.operands[0], t), ctx.src(ins.operands[1], t), ctx.src(ins.operands[2], ctx.ptype("u32"))
    if ins.opcode == "shl":
        return lambda m, mask: d(m, _shl(unsigned(a(m, mask), t.bits), b(m, mask), t.bits), mask)
    signed = t.kind == "s"

    def run(m: Machine, mask: Mask) -> None:
        x = np.asarray(a(m, mask))
        d(m, _shr(x if signed else unsigned(x, t.bits), b(m, mask), t.bits), mask)
    return run


def dec_shf(ins: Instr, ctx: Ctx) -> Fn:
    """shf.l|r.wrap|clamp.b32 d, a, b, c: shift the 64-bit [b:a] by c (mod 32, or at most 32)."""
    flags, (t,) = split_mods(ctx, ins.mods, frozenset(("l", "r", "wrap", "clamp")), frozenset(("b32",)))
    if len(flags & {"l", "r"}) != 1 or len(flags & {"wrap", "clamp"}) != 1:
        raise ctx.error("shf needs .l or .r, and .wrap or .clamp")
    arity(ctx, ins, 4)
    d, a, b = ctx.dst(ins.operands[0], t), ctx.src(ins.operands[1], t), ctx.src(ins.operands[2], t)
    c = ctx.src(ins.operands[3], ctx.ptype("u32"))
    left, clamp = "l" in flags, "clamp" in flags

    def run(m: Machine, mask: Mask) -> None:
        n = np.asarray(c(m, mask)).astype(np.int64)
        n = np.minimum(n, 32) if clamp else n & 31
        pair = (unsigned(b(m, mask), 32).astype(np.uint64) << np.uint64(32)) | unsigned(a(m, mask), 32)
        if left:
            r = (_shl(pair, n, 64) >> np.uint64(32)).astype(np.uint32)
        else:
            r = _shr(pair, n, 64).astype(np.uint32)
        d(m, r, mask)
    return run


# ============================================================================ counting
def dec_count(ins: Instr, ctx: Ctx) -> Fn:
    """popc/clz .b32|.b64 (result .u32); brev .b32|.b64."""
    _, (t,) = split_mods(ctx, ins.mods, frozenset(), frozenset(("b32", "b64")))
    arity(ctx, ins, 2)
    a = ctx.src(ins.operands[1], t)
    if ins.opcode == "brev":
        d = ctx.dst(ins.operands[0], t)
        table = np.array([int(f"{k:08b}"[::-1], 2) for k in range(256)], dtype=np.uint8)

        def brev(m: Machine, mask: Mask) -> None:
            x = np.atleast_1d(unsigned(a(m, mask), t.bits))
            by = table[x.view(np.uint8).reshape(-1, t.bits // 8)][:, ::-1]
            d(m, np.ascontiguousarray(by).view(x.dtype).reshape(x.shape), mask)
        return brev
    d = ctx.dst(ins.operands[0], ctx.ptype("u32"))
    if ins.opcode == "popc":
        return lambda m, mask: d(m, np.bitwise_count(unsigned(a(m, mask), t.bits)).astype(np.uint32), mask)
    return lambda m, mask: d(m, (t.bits - bit_length(unsigned(a(m, mask), t.bits))).astype(np.uint32), mask)


def dec_bfind(ins: Instr, ctx: Ctx) -> Fn:
    """bfind{.shiftamt}.u32|u64|s32|s64: the position of the most significant non-sign bit."""
    flags, (t,) = split_mods(ctx, ins.mods, frozenset(("shiftamt",)), frozenset(("u32", "u64", "s32", "s64")))
    arity(ctx, ins, 2)
    d, a = ctx.dst(ins.operands[0], ctx.ptype("u32")), ctx.src(ins.operands[1], t)

    def run(m: Machine, mask: Mask) -> None:
        x = np.asarray(a(m, mask))
        u = unsigned(x, t.bits)
        if t.kind == "s":
            u = np.where(x < 0, ~u, u)
        pos = bit_length(u) - 1
        if "shiftamt" in flags:
            pos = np.where(pos >= 0, t.bits - 1 - pos, pos)
        d(m, np.where(pos < 0, np.uint32(0xFFFFFFFF), pos.astype(np.uint32)), mask)
    return run


# ============================================================================ fields
def dec_bfe(ins: Instr, ctx: Ctx) -> Fn:
    """bfe.type d, a, b, c: len c bits from position b (each & 0xff); signed types extend the last
    bit inside the value (bit min(pos+len-1, msb)); len 0 gives 0."""
    _, (t,) = split_mods(ctx, ins.mods, frozenset(), frozenset(("u32", "u64", "s32", "s64")))
    arity(ctx, ins, 4)
    d, a = ctx.dst(ins.operands[0], t), ctx.src(ins.operands[1], t)
    b, c = ctx.src(ins.operands[2], ctx.ptype("u32")), ctx.src(ins.operands[3], ctx.ptype("u32"))
    w = t.bits

    def run(m: Machine, mask: Mask) -> None:
        x = unsigned(a(m, mask), w)
        pos = np.asarray(b(m, mask)).astype(np.int64) & 0xFF
        ln = np.asarray(c(m, mask)).astype(np.int64) & 0xFF
        avail = np.clip(np.minimum(ln, w - pos), 0, w)
        field = _shr(x, pos, w) & _ones(avail, w)
        if t.kind == "s":
            top = np.minimum(pos + ln - 1, w - 1)
            sbit = ((_shr(x, top, w) & x.dtype.type(1)) == 1) & (ln != 0)
            field = np.where(sbit, field | ~_ones(avail, w), field)
        d(m, field, mask)
    return run


def dec_bfi(ins: Instr, ctx: Ctx) -> Fn:
    """bfi.bN f, a, b, c, d: b with its bits c..c+d-1 (inside the value) replaced by a's low bits."""
    _, (t,) = split_mods(ctx, ins.mods, frozenset(), frozenset(("b32", "b64")))
    arity(ctx, ins, 5)
    f, a, b = ctx.dst(ins.operands[0], t), ctx.src(ins.operands[1], t), ctx.src(ins.operands[2], t)
    c, n = ctx.src(ins.operands[3], ctx.ptype("u32")), ctx.src(ins.operands[4], ctx.ptype("u32"))
    w = t.bits

    def run(m: Machine, mask: Mask) -> None:
        pos = np.asarray(c(m, mask)).astype(np.int64) & 0xFF
        ln = np.asarray(n(m, mask)).astype(np.int64) & 0xFF
        avail = np.clip(np.minimum(ln, w - pos), 0, w)
        field = _shl(_ones(avail, w), pos, w)
        f(m, (unsigned(b(m, mask), w) & ~field) | (_shl(unsigned(a(m, mask), w), pos, w) & field), mask)
    return run


def dec_fns(ins: Instr, ctx: Ctx) -> Fn:
    """fns.b32 d, mask, base, offset: the position of the |offset|-th set bit from base, upward for
    offset > 0, downward for offset < 0 (offset 0: base itself if set); 0xffffffff if none."""
    _, (t,) = split_mods(ctx, ins.mods, frozenset(), frozenset(("b32",)))
    arity(ctx, ins, 4)
    d, mk = ctx.dst(ins.operands[0], t), ctx.src(ins.operands[1], t)
    base, off = ctx.src(ins.operands[2], ctx.ptype("u32")), ctx.src(ins.operands[3], ctx.ptype("s32"))

    def run(m: Machine, mask: Mask) -> None:
        bits = unsigned(mk(m, mask), 32).astype(np.int64)
        b0, o = np.asarray(base(m, mask)).astype(np.int64), np.asarray(off(m, mask)).astype(np.int64)
        shape = np.broadcast(bits, b0, o).shape
        out = np.full(shape, 0xFFFFFFFF, dtype=np.int64)
        need = np.broadcast_to(np.where(o == 0, 1, np.abs(o)), shape).copy()
        for k in range(32):
            for up in (True, False):
                pos = b0 + k if up else b0 - k
                here = ((o > 0) == up) & (o != 0) | ((o == 0) & (k == 0) & up)
                inside = here & (pos >= 0) & (pos < 32) & (out == 0xFFFFFFFF)
                hit = inside & (((bits >> np.clip(pos, 0, 31)) & 1) == 1)
                need = need - hit
                out = np.where(hit & (need == 0), pos, out)
        d(m, out.astype(np.uint32), mask)
    return run


def dec_szext(ins: Instr, ctx: Ctx) -> Fn:
    """szext.mode.u32|s32 d, a, b: a's low b bits, sign-extended for .s32 (.clamp/.wrap on b)."""
    flags, (t,) = split_mods(ctx, ins.mods, frozenset(("clamp", "wrap")), frozenset(("u32", "s32")))
    if len(flags) != 1:
        raise ctx.error("szext needs .clamp or .wrap")
    arity(ctx, ins, 3)
    d, a, b = ctx.dst(ins.operands[0], t), ctx.src(ins.operands[1], t), ctx.src(ins.operands[2], ctx.ptype("u32"))

    def run(m: Machine, mask: Mask) -> None:
        x = unsigned(a(m, mask), 32)
        n = np.asarray(b(m, mask)).astype(np.int64)
        b1 = n & 31
        too_large = (n >= 32) & ("clamp" in flags)
        hi = np.where(too_large, np.uint32(0), ~_ones(b1, 32))
        sign = np.zeros(np.broadcast(x, n).shape, dtype=bool) if t.kind == "u" else \
            ((b1 != 0) & ~too_large & (((x >> ((b1 - 1) & 31).astype(np.uint32)) & np.uint32(1)) == 1))
        d(m, (x & ~hi) | np.where(sign, hi, np.uint32(0)), mask)
    return run


def dec_bmsk(ins: Instr, ctx: Ctx) -> Fn:
    """bmsk.mode.b32 d, a, b: b ones from bit a (ISA pseudocode, .clamp/.wrap)."""
    flags, (t,) = split_mods(ctx, ins.mods, frozenset(("clamp", "wrap")), frozenset(("b32",)))
    if len(flags) != 1:
        raise ctx.error("bmsk needs .clamp or .wrap")
    arity(ctx, ins, 3)
    u32 = ctx.ptype("u32")
    d, a, b = ctx.dst(ins.operands[0], t), ctx.src(ins.operands[1], u32), ctx.src(ins.operands[2], u32)

    def run(m: Machine, mask: Mask) -> None:
        pa, pb = np.asarray(a(m, mask)).astype(np.int64), np.asarray(b(m, mask)).astype(np.int64)
        a1, b1 = pa & 31, pb & 31
        full = np.uint32(0xFFFFFFFF)
        mask0 = _shl(np.asarray(full), a1, 32)
        mask1 = _shl(np.asarray(full), a1 + b1, 32)
        over = a1 + b1 >= 32
        if "clamp" in flags:
            mask0 = np.where(pa >= 32, np.uint32(0), mask0)
            over = over | (pa >= 32) | (pb >= 32)
        mask1 = np.where(over, np.uint32(0), np.where(b1 == 0, full, mask1))
        d(m, mask0 & ~mask1, mask)
    return run


# ============================================================================ prmt
def _prmt_select(c: np.ndarray, mode: str) -> list[np.ndarray]:
    """The four 4-bit selectors (byte index 0..7, bit 3: replicate the sign) for each lane."""
    if mode == "":
        return [(c >> (4 * k)) & 0xF for k in range(4)]
    s = c & 3
    z = np.zeros_like(s)
    # the ISA's table, per selector c[1:0]: the source byte of d.b0 .. d.b3
    table: dict[str, list[np.ndarray]] = {
        "f4e": [s, s + 1, s + 2, s + 3],
        "b4e": [s, s - 1, s - 2, s - 3],
        "rc8": [s, s, s, s],
        "ecl": [s, np.maximum(s, 1), np.maximum(s, 2), z + 3],
        "ecr": [z, np.minimum(s, 1), np.minimum(s, 2), s],
        "rc16": [(s & 1) * 2, (s & 1) * 2 + 1, (s & 1) * 2, (s & 1) * 2 + 1],
    }
    return [x & 7 for x in table[mode]]


def dec_prmt(ins: Instr, ctx: Ctx) -> Fn:
    """prmt.b32{.mode} d, a, b, c: bytes of {b, a} chosen by c."""
    modes = frozenset(("f4e", "b4e", "rc8", "ecl", "ecr", "rc16"))
    flags, (t,) = split_mods(ctx, ins.mods, modes, frozenset(("b32",)))
    arity(ctx, ins, 4)
    mode = next(iter(flags), "")
    d, a, b, c = ctx.dst(ins.operands[0], t), *(ctx.src(o, t) for o in ins.operands[1:])

    def run(m: Machine, mask: Mask) -> None:
        x, y, z = np.asarray(a(m, mask)), np.asarray(b(m, mask)), np.asarray(c(m, mask))
        src = (y.astype(np.uint64) << np.uint64(32)) | x.astype(np.uint64)
        sel = _prmt_select(z.astype(np.int64), mode)
        out = np.zeros(np.broadcast(x, y, z).shape, dtype=np.uint64)
        for k in range(4):
            byte = (src >> (sel[k] & 7).astype(np.uint64) * np.uint64(8)) & np.uint64(0xFF)
            if mode == "":
                sign = (sel[k] & 8) != 0
                byte = np.where(sign, np.where(byte >= 0x80, np.uint64(0xFF), np.uint64(0)), byte)
            out |= byte << np.uint64(8 * k)
        d(m, out.astype(np.uint32), mask)
    return run


DECODERS: dict[str, Callable[[Instr, Ctx], Fn]] = {
    "and": dec_logic, "or": dec_logic, "xor": dec_logic, "not": dec_not, "cnot": dec_not, "lop3": dec_lop3,
    "shl": dec_shift, "shr": dec_shift, "shf": dec_shf, "popc": dec_count, "clz": dec_count, "brev": dec_count,
    "bfind": dec_bfind, "bfe": dec_bfe, "bfi": dec_bfi, "fns": dec_fns, "szext": dec_szext, "bmsk": dec_bmsk,
    "prmt": dec_prmt,
}
