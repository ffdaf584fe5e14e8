"""Comparison, selection and moves: setp and set (every CmpOp, ordered and unordered float
comparisons, .and/.or/.xor with a possibly negated predicate, the p|q pair), selp, slct, and mov
(registers, immediates, special registers, variable addresses, vector pack and unpack)."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .ptx_ast import Instr, Pair, Reg, Vec
from .ptx_float import flush
from .ptx_int import unsigned
from .ptx_machine import PTYPES, Fn, Machine, Mask, PType
from .ptx_operands import Ctx, arity, split_mods

__all__ = ["DECODERS", "compare"]

_INT_CMP = frozenset(("eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs"))
_FLOAT_CMP = frozenset(("eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan"))
_BOOL = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}
_NUMERIC = frozenset(("b16", "b32", "b64", "u16", "u32", "u64", "s16", "s32", "s64", "f32", "f64"))
_ORDERED: dict[str, Callable[[Any, Any], Any]] = {
    "eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
    "ge": np.greater_equal,
}


def compare(op: str, x: Any, y: Any, t: PType) -> np.ndarray:
    """``x op y`` for values of type t (lo/ls/hi/hs compare the bits as unsigned)."""
    if t.kind == "f":
        unordered = np.isnan(x) | np.isnan(y)
        if op == "num":
            return ~unordered
        if op == "nan":
            return unordered
        base = _ORDERED[op.rstrip("u") if op != "equ" else "eq"](x, y)
        return (base | unordered) if op.endswith("u") else (base & ~unordered)
    if op in ("lo", "ls", "hi", "hs"):
        x, y = unsigned(x, t.bits), unsigned(y, t.bits)
        op = {"lo": "lt", "ls": "le", "hi": "gt", "hs": "ge"}[op]
    return _ORDERED[op](x, y)


def _cmp_parts(ctx: Ctx, ins: Instr, ntypes: int) -> tuple[str, str | None, bool, list[PType]]:
    allowed = _INT_CMP | _FLOAT_CMP | frozenset(_BOOL) | {"ftz"}
    flags, types = split_mods(ctx, ins.mods, allowed, _NUMERIC | {"f32"}, ntypes=ntypes)
    st = types[-1]
    cmps = [f for f in ins.mods if f in _INT_CMP | _FLOAT_CMP]
    bools = [f for f in ins.mods if f in _BOOL]
    if len(cmps) != 1 or len(bools) > 1 or ins.mods.index(cmps[0]) != 0:
        raise ctx.error("expected .CmpOp{.BoolOp} right after the opcode")
    op = cmps[0]
    if st.kind == "f" and op not in _FLOAT_CMP or st.kind != "f" and op not in _INT_CMP:
        raise ctx.error(f".{op} does not compare .{st.name} values")
    if st.kind == "b" and op not in ("eq", "ne"):
        raise ctx.error(f"bit types compare with .eq/.ne only, not .{op}")
    if "ftz" in flags and st.name != "f32":
        raise ctx.error(".ftz applies to .f32 comparisons only")
    return op, (bools[0] if bools else None), "ftz" in flags, types


def dec_setp(ins: Instr, ctx: Ctx) -> Fn:
    op, bop, ftz, (t,) = _cmp_parts(ctx, ins, 1)
    arity(ctx, ins, 4 if bop else 3)
    pred = PTYPES["pred"]
    target = ins.operands[0]
    if isinstance(target, Pair):
        p, q = ctx.dst(Reg(target.first), pred), ctx.dst(Reg(target.second), pred)
    else:
        p, q = ctx.dst(target, pred), None
    a, b = ctx.src(ins.operands[1], t), ctx.src(ins.operands[2], t)
    c = ctx.src(ins.operands[3], pred) if bop else None
    combine = _BOOL[bop] if bop else None

    def run(m: Machine, mask: Mask) -> None:
        x, y = np.asarray(a(m, mask)), np.asarray(b(m, mask))
        if ftz:
            x, y = flush(x), flush(y)
        r = compare(op, x, y, t)
        if combine is not None and c is not None:
            cv = c(m, mask)
            p(m, np.asarray(combine(r, cv)), mask)
            if q is not None:
                q(m, np.asarray(combine(~r, cv)), mask)
            return
        p(m, r, mask)
        if q is not None:
            q(m, ~r, mask)
    return run


def dec_set(ins: Instr, ctx: Ctx) -> Fn:
    """set.CmpOp{.BoolOp}{.ftz}.dtype.stype d, a, b{, {!}c}: 1.0f or 0xffffffff when true, else 0."""
    op, bop, ftz, (dt, st) = _cmp_parts(ctx, ins, 2)
    if dt.name not in ("u32", "s32", "f32"):
        raise ctx.error("set writes .u32, .s32 or .f32")
    arity(ctx, ins, 4 if bop else 3)
    d, a, b = ctx.dst(ins.operands[0], dt), ctx.src(ins.operands[1], st), ctx.src(ins.operands[2], st)
    c = ctx.src(ins.operands[3], PTYPES["pred"]) if bop else None
    true = np.uint32(0x3F800000 if dt.name == "f32" else 0xFFFFFFFF)

    def run(m: Machine, mask: Mask) -> None:
        x, y = np.asarray(a(m, mask)), np.asarray(b(m, mask))
        if ftz:
            x, y = flush(x), flush(y)
        r = compare(op, x, y, st)
        if bop and c is not None:
            r = _BOOL[bop](r, c(m, mask))
        d(m, np.where(r, true, np.uint32(0)), mask)
    return run


def dec_selp(ins: Instr, ctx: Ctx) -> Fn:
    _, (t,) = split_mods(ctx, ins.mods, frozenset(), _NUMERIC)
    arity(ctx, ins, 4)
    d, a, b = ctx.dst(ins.operands[0], t), ctx.src(ins.operands[1], t), ctx.src(ins.operands[2], t)
    c = ctx.src(ins.operands[3], PTYPES["pred"])
    return lambda m, mask: d(m, np.where(c(m, mask), a(m, mask), b(m, mask)), mask)


def dec_slct(ins: Instr, ctx: Ctx) -> Fn:
    """slct{.ftz}.dtype.s32|f32 d, a, b, c: a where c >= 0, else b (-0.0 >= 0; NaN is not)."""
    flags, (dt, ct) = split_mods(ctx, ins.mods, frozenset(("ftz",)), _NUMERIC, ntypes=2)
    if ct.name not in ("s32", "f32") or ("ftz" in flags and ct.name != "f32"):
        raise ctx.error("slct takes .s32 or .f32 as its last type (.ftz with .f32)")
    arity(ctx, ins, 4)
    d, a, b = ctx.dst(ins.operands[0], dt), ctx.src(ins.operands[1], dt), ctx.src(ins.operands[2], dt)
    c = ctx.src(ins.operands[3], ct)
    ftz = "ftz" in flags

    def run(m: Machine, mask: Mask) -> None:
        z = np.asarray(c(m, mask))
        if ftz:
            z = flush(z)
        d(m, np.where(z >= 0, a(m, mask), b(m, mask)), mask)
    return run


# ============================================================================ mov
def dec_mov(ins: Instr, ctx: Ctx) -> Fn:
    _, (t,) = split_mods(ctx, ins.mods, frozenset(), _NUMERIC | {"pred", "f16", "bf16"})
    arity(ctx, ins, 2)
    dst_op, src_op = ins.operands
    if isinstance(src_op, Vec):
        return _pack(ctx, t, dst_op, src_op)
    if isinstance(dst_op, Vec):
        return _unpack(ctx, t, dst_op, src_op)
    rt = ctx.ptype("b16") if t.name == "bf16" else t
    d, a = ctx.dst(dst_op, rt), ctx.src(src_op, rt)
    return lambda m, mask: d(m, a(m, mask), mask)


def _parts(ctx: Ctx, t: PType, vec: Vec) -> PType:
    if t.kind not in ("b", "u", "s") or t.bits not in (32, 64) or len(vec.items) not in (2, 4) \
            or t.bits // len(vec.items) < 16:
        raise ctx.error(f"cannot split .{t.name} into {len(vec.items)} parts")
    return ctx.ptype(f"b{t.bits // len(vec.items)}")


def _pack(ctx: Ctx, t: PType, dst_op: Any, vec: Vec) -> Fn:
    """mov.b64 d, {a, b}: a in the low bits."""
    pt = _parts(ctx, t, vec)
    srcs = [ctx.src(o, pt) for o in vec.items]
    d = ctx.dst(dst_op, t)
    wide = np.dtype(f"uint{t.bits}")

    def run(m: Machine, mask: Mask) -> None:
        r = np.zeros((), dtype=wide)
        for k, s in enumerate(srcs):
            r = r | (np.asarray(s(m, mask)).astype(wide) << wide.type(k * pt.bits))
        d(m, r, mask)
    return run


def _unpack(ctx: Ctx, t: PType, vec: Vec, src_op: Any) -> Fn:
    pt = _parts(ctx, t, vec)
    a = ctx.src(src_op, t)
    dsts = [ctx.dst(o, pt) for o in vec.items]
    wide = np.dtype(f"uint{t.bits}")

    def run(m: Machine, mask: Mask) -> None:
        v = unsigned(a(m, mask), t.bits)
        for k, d in enumerate(dsts):
            d(m, (v >> wide.type(k * pt.bits)).astype(pt.dtype), mask)
    return run


DECODERS: dict[str, Callable[[Instr, Ctx], Fn]] = {
    "setp": dec_setp, "set": dec_set, "selp": dec_selp, "slct": dec_slct, "mov": dec_mov,
}
