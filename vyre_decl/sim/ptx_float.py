"""Floating-point instructions: add sub mul fma mad div rcp sqrt (every rounding mode, exactly),
the .approx functions (rsqrt sin cos lg2 ex2 tanh, div.approx/.full, rcp.approx: computed in f64 and
rounded, and reported as findings of kind 'approx' because the ISA leaves their results to the
hardware), abs neg min max copysign testp, with .ftz and .sat. Arithmetic that produces a NaN
gives the canonical NaN (0x7FFFFFFF, 0x7FFFFFFFFFFFFFFF); abs, neg and copysign move bits."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .ptx_ast import Instr
from .ptx_fround import canonical_nan, err_add, err_div, err_mul, err_sqrt, fma, nudge
from .ptx_machine import Fn, Machine, Mask
from .ptx_operands import Ctx, arity, split_mods

__all__ = ["DECODERS", "FTYPES", "flush", "saturate"]

FTYPES = frozenset(("f32", "f64"))
_RND = frozenset(("rn", "rz", "rm", "rp"))
_TINY = {np.dtype(np.float32): np.float32(2.0 ** -126), np.dtype(np.float64): np.float64(2.0 ** -1022)}


def flush(x: Any) -> Any:
    """.ftz: subnormal values become zeros of the same sign."""
    x = np.asarray(x)
    return np.where((np.abs(x) < _TINY[x.dtype]) & (x != 0), np.copysign(x.dtype.type(0), x), x)


def saturate(x: Any) -> Any:
    """.sat: clamp to [0.0, 1.0]; NaN becomes +0.0."""
    x = np.asarray(x)
    return np.where(np.isnan(x), x.dtype.type(0), np.clip(x, x.dtype.type(0), x.dtype.type(1)))


def _rounding(ctx: Ctx, flags: frozenset[str], required: bool) -> str:
    modes = flags & _RND
    if len(modes) > 1:
        raise ctx.error("more than one rounding modifier")
    if not modes and required:
        raise ctx.error("a rounding modifier (.rn .rz .rm .rp) is required")
    return next(iter(modes), "rn")


def _finish(r: Any, ftz: bool, sat: bool) -> Any:
    if ftz:
        r = flush(r)
    if sat:
        r = saturate(r)
    return canonical_nan(np.asarray(r))


def _ftz_ok(ctx: Ctx, flags: frozenset[str], t: Any) -> bool:
    if "ftz" in flags and t.name != "f32":
        raise ctx.error(".ftz applies to .f32 only")
    return "ftz" in flags


# ============================================================================ arithmetic
_ARITH: dict[str, tuple[Callable[[Any, Any], Any], Callable[[Any, Any, Any], Any]]] = {
    "add": (np.add, err_add),
    "sub": (np.subtract, lambda x, y, r: err_add(x, -y, r)),
    "mul": (np.multiply, err_mul),
}


def dec_arith(ins: Instr, ctx: Ctx) -> Fn:
    """add/sub/mul{.rnd}{.ftz}{.sat}.f32|.f64 (no rounding modifier: .rn, without contraction)."""
    flags, (t,) = split_mods(ctx, ins.mods, _RND | {"ftz", "sat"}, FTYPES)
    arity(ctx, ins, 3)
    mode, ftz, sat = _rounding(ctx, flags, False), _ftz_ok(ctx, flags, t), "sat" in flags
    if sat and t.name != "f32":
        raise ctx.error(".sat applies to .f32 only")
    op, err = _ARITH[ins.opcode]
    d, a, b = ctx.dst(ins.operands[0], t), ctx.src(ins.operands[1], t), ctx.src(ins.operands[2], t)

    def run(m: Machine, mask: Mask) -> None:
        x, y = np.asarray(a(m, mask)), np.asarray(b(m, mask))
        if ftz:
            x, y = flush(x), flush(y)
        r = op(x, y)
        if mode != "rn":
            r = nudge(r, err(x, y, r), mode)
        d(m, _finish(r, ftz, sat), mask)
    return run


def dec_fma(ins: Instr, ctx: Ctx) -> Fn:
    """fma.rnd / mad.rnd {.ftz}{.sat}.f32|.f64: one rounding of a*b+c."""
    flags, (t,) = split_mods(ctx, ins.mods, _RND | {"ftz", "sat"}, FTYPES)
    arity(ctx, ins, 4)
    mode = _rounding(ctx, flags, ins.opcode == "fma")
    ftz, sat = _ftz_ok(ctx, flags, t), "sat" in flags
    d, a, b, c = ctx.dst(ins.operands[0], t), *(ctx.src(o, t) for o in ins.operands[1:])

    def run(m: Machine, mask: Mask) -> None:
        x, y, z = a(m, mask), b(m, mask), c(m, mask)
        if ftz:
            x, y, z = flush(x), flush(y), flush(z)
        d(m, _finish(fma(x, y, z, mode), ftz, sat), mask)
    return run


def _approx(ins: Instr, what: str) -> Callable[[Machine], None]:
    message = (f"{ins.opcode}.approx: the ISA leaves the result to the hardware ({what}); the simulator "
               "computes it in f64 and rounds it, so a GPU may give other bits")

    def note(m: Machine) -> None:
        if (("approx", ins.line)) not in m.findings:
            m.report("approx", message)
    return note


_SPECIAL_FN: dict[str, tuple[Callable[[Any], Any], str]] = {
    "sin": (np.sin, "max. absolute error 2^-20.5 in -pi..pi"),
    "cos": (np.cos, "max. absolute error 2^-20.5 in -pi..pi"),
    "lg2": (np.log2, "max. absolute error 2^-22"),
    "ex2": (np.exp2, "max. relative error 2^-22"),
    "tanh": (np.tanh, "max. relative error 2^-10.987"),
    "rsqrt": (lambda x: 1.0 / np.sqrt(x), "max. relative error 2^-22.9"),
    "rcp": (lambda x: 1.0 / x, "max. 1 ulp"),
    "sqrt": (np.sqrt, "max. relative error 2^-23"),
}


def dec_unary(ins: Instr, ctx: Ctx) -> Fn:
    """rcp/sqrt (.rnd or .approx), rsqrt/sin/cos/lg2/ex2/tanh (.approx) {.ftz}.f32|.f64."""
    flags, (t,) = split_mods(ctx, ins.mods, _RND | {"ftz", "approx"}, FTYPES)
    arity(ctx, ins, 2)
    ftz = "ftz" in flags
    if ftz and t.name == "f64" and not (ins.opcode == "rcp" and "approx" in flags):
        raise ctx.error(".ftz applies to .f32 only")
    exact = ins.opcode in ("rcp", "sqrt") and "approx" not in flags
    if exact:
        mode = _rounding(ctx, flags, True)
    elif "approx" not in flags or flags & _RND:
        raise ctx.error(f"{ins.opcode} needs .approx here")
    if not exact and t.name == "f64" and ins.opcode not in ("rsqrt", "rcp"):
        raise ctx.error(f"{ins.opcode}.approx.f64 does not exist")
    d, a = ctx.dst(ins.operands[0], t), ctx.src(ins.operands[1], t)
    fn, what = _SPECIAL_FN[ins.opcode]
    note = _approx(ins, what)

    def run(m: Machine, mask: Mask) -> None:
        x = np.asarray(a(m, mask))
        if ftz:
            x = flush(x)
        if exact:
            r = np.sqrt(x) if ins.opcode == "sqrt" else t.dtype.type(1) / x
            if mode != "rn":
                one = np.ones_like(x)
                r = nudge(r, err_sqrt(x, r) if ins.opcode == "sqrt" else err_div(one, x, r), mode)
        else:
            note(m)
            r = fn(x.astype(np.float64)).astype(t.dtype)
        d(m, _finish(r, ftz, False), mask)
    return run


def dec_div(ins: Instr, ctx: Ctx) -> Fn:
    """div.rnd{.ftz}.f32|.f64 exactly; div.approx/.full{.ftz}.f32 rounded, with an 'approx' finding."""
    flags, (t,) = split_mods(ctx, ins.mods, _RND | {"ftz", "approx", "full"}, FTYPES)
    arity(ctx, ins, 3)
    ftz = _ftz_ok(ctx, flags, t)
    inexact = bool(flags & {"approx", "full"})
    if inexact and (t.name != "f32" or flags & _RND or len(flags & {"approx", "full"}) > 1):
        raise ctx.error(".approx and .full are for .f32 alone, without a rounding modifier")
    mode = "rn" if inexact else _rounding(ctx, flags, True)
    d, a, b = ctx.dst(ins.operands[0], t), ctx.src(ins.operands[1], t), ctx.src(ins.operands[2], t)
    note = _approx(ins, "max. 2 ulp" if "full" in flags else "max. 2 ulp for |b| in 2^-126..2^126")

    def run(m: Machine, mask: Mask) -> None:
        x, y = np.asarray(a(m, mask)), np.asarray(b(m, mask))
        if ftz:
            x, y = flush(x), flush(y)
        if inexact:
            note(m)
        q = x / y
        if mode != "rn":
            q = nudge(q, err_div(x, y, q), mode)
        d(m, _finish(q, ftz, False), mask)
    return run


# ============================================================================ bits and comparisons
def dec_absneg(ins: Instr, ctx: Ctx) -> Fn:
    flags, (t,) = split_mods(ctx, ins.mods, frozenset({"ftz"}), FTYPES)
    arity(ctx, ins, 2)
    ftz = _ftz_ok(ctx, flags, t)
    d, a = ctx.dst(ins.operands[0], t), ctx.src(ins.operands[1], t)
    f = np.abs if ins.opcode == "abs" else np.negative

    def run(m: Machine, mask: Mask) -> None:
        x = np.asarray(a(m, mask))
        d(m, f(flush(x) if ftz else x), mask)
    return run


def dec_minmax(ins: Instr, ctx: Ctx) -> Fn:
    """min/max{.ftz}{.NaN}.f32|.f64: a NaN operand loses (both NaN, or any with .NaN: the canonical
    NaN); between -0.0 and +0.0, min gives -0.0 and max +0.0 (a modelling choice: the ISA text
    does not order the zeros)."""
    flags, (t,) = split_mods(ctx, ins.mods, frozenset({"ftz", "NaN"}), FTYPES)
    arity(ctx, ins, 3)
    ftz, nan_wins = _ftz_ok(ctx, flags, t), "NaN" in flags
    if nan_wins and ctx.sm < 80:
        raise ctx.error(f".NaN needs sm_80 or newer (the module targets sm_{ctx.sm})")
    d, a, b = ctx.dst(ins.operands[0], t), ctx.src(ins.operands[1], t), ctx.src(ins.operands[2], t)
    is_min = ins.opcode == "min"

    def run(m: Machine, mask: Mask) -> None:
        x, y = np.asarray(a(m, mask)), np.asarray(b(m, mask))
        if ftz:
            x, y = flush(x), flush(y)
        r = np.where(x < y, x, y) if is_min else np.where(x > y, x, y)
        xn, yn = np.isnan(x), np.isnan(y)
        r = np.where(xn, y, np.where(yn, x, r))
        zeros = (x == 0) & (y == 0)
        either = (np.signbit(x) | np.signbit(y)) if is_min else (np.signbit(x) & np.signbit(y))
        r = np.where(zeros, np.where(either, -t.dtype.type(0), t.dtype.type(0)), r)
        if nan_wins:
            r = np.where(xn | yn, t.dtype.type(np.nan), r)
        d(m, canonical_nan(np.asarray(r, dtype=t.dtype)), mask)
    return run


def dec_copysign(ins: Instr, ctx: Ctx) -> Fn:
    """copysign.type d, a, b: the sign of a with the magnitude of b."""
    _, (t,) = split_mods(ctx, ins.mods, frozenset(), FTYPES)
    arity(ctx, ins, 3)
    bt = ctx.ptype(f"b{t.bits}")
    d, a, b = ctx.dst(ins.operands[0], bt), ctx.src(ins.operands[1], bt), ctx.src(ins.operands[2], bt)
    sign = bt.dtype.type(1 << (t.bits - 1))

    def run(m: Machine, mask: Mask) -> None:
        d(m, (a(m, mask) & sign) | (b(m, mask) & ~sign), mask)
    return run


_TESTS: dict[str, Callable[[Any, Any], Any]] = {
    "finite": lambda x, tiny: np.isfinite(x),
    "infinite": lambda x, tiny: np.isinf(x),
    "number": lambda x, tiny: ~np.isnan(x),
    "notanumber": lambda x, tiny: np.isnan(x),
    "normal": lambda x, tiny: np.isfinite(x) & ~((x != 0) & (np.abs(x) < tiny)),
    "subnormal": lambda x, tiny: (x != 0) & (np.abs(x) < tiny),
}


def dec_testp(ins: Instr, ctx: Ctx) -> Fn:
    """testp.op.type p, a (zeros count as normal numbers)."""
    if len(ins.mods) != 2 or ins.mods[0] not in _TESTS or ins.mods[1] not in FTYPES:
        raise ctx.error("testp takes .finite .infinite .number .notanumber .normal or .subnormal, then .f32/.f64")
    arity(ctx, ins, 2)
    t = ctx.ptype(ins.mods[1])
    d, a = ctx.dst(ins.operands[0], ctx.ptype("pred")), ctx.src(ins.operands[1], t)
    test, tiny = _TESTS[ins.mods[0]], _TINY[t.dtype]
    return lambda m, mask: d(m, np.asarray(test(np.asarray(a(m, mask)), tiny)), mask)


DECODERS: dict[str, Callable[[Instr, Ctx], Fn]] = {
    "fma": dec_fma, "rcp": dec_unary, "sqrt": dec_unary, "rsqrt": dec_unary, "sin": dec_unary,
    "cos": dec_unary, "lg2": dec_unary, "ex2": dec_unary, "tanh": dec_unary, "copysign": dec_copysign,
    "testp": dec_testp,
}
FLOAT_FORMS: dict[str, Callable[[Instr, Ctx], Fn]] = {  # opcodes shared with integer types
    "add": dec_arith, "sub": dec_arith, "mul": dec_arith, "mad": dec_fma, "div": dec_div, "abs": dec_absneg,
    "neg": dec_absneg, "min": dec_minmax, "max": dec_minmax,
}
