"""cvt: conversions between integer, float (f64 f32 f16 bf16) and packed f16x2/bf16x2 types.

Integer to integer: sign- or zero-extend by the source type, truncate, or clamp with .sat.
Float to integer: .rni .rzi .rmi .rpi round to an integer, then always saturate; NaN gives 0.
Integer to float and float to narrower float: .rn .rz .rm .rp (no modifier: .rn), exactly.
Float to the same float type with .rni/.rzi/.rmi/.rpi rounds to an integral value. A NaN
converted to f16/bf16 is the canonical 0x7FFF, to f32/f64 the canonical NaN. .ftz flushes f32
subnormals, .sat clamps a float result to [0, 1], .relu clamps f16/bf16 results at zero and
.satfinite replaces infinities by the largest finite value."""

from __future__ import annotations

from typing import Any

import numpy as np

from .ptx_ast import Instr
from .ptx_float import flush, saturate
from .ptx_fround import CANON, canonical_nan, int_to_float, round_f64_to
from .ptx_machine import Fn, Machine, Mask, PType
from .ptx_operands import Ctx, arity, split_mods

__all__ = ["DECODERS"]

_INT = frozenset(("u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64"))
_FLOAT = frozenset(("f16", "bf16", "f32", "f64"))
_IRND = frozenset(("rni", "rzi", "rmi", "rpi"))
_FRND = frozenset(("rn", "rz", "rm", "rp"))
_ALLOWED = _IRND | _FRND | frozenset(("ftz", "sat", "relu", "satfinite"))
_TO_INTEGRAL = {"rni": np.rint, "rzi": np.trunc, "rmi": np.floor, "rpi": np.ceil}


def dec_cvt(ins: Instr, ctx: Ctx) -> Fn:
    types = _INT | _FLOAT | {"f16x2", "bf16x2"}
    flags, (dt, st) = split_mods(ctx, ins.mods, _ALLOWED, frozenset(types), ntypes=2)
    if dt.name in ("f16x2", "bf16x2"):
        return _packed(ins, ctx, flags, dt, st)
    if st.name in ("f16x2", "bf16x2"):
        raise ctx.error(f"cvt from .{st.name} is not modelled")
    arity(ctx, ins, 2)
    _check_sm(ctx, dt, st)
    d = ctx.dst(ins.operands[0], _reg_type(ctx, dt), wider_ok=True)
    a = ctx.src(ins.operands[1], _reg_type(ctx, st), wider_ok=True)
    conv = _converter(ctx, flags, dt, st)
    return lambda m, mask: d(m, conv(a(m, mask)), mask)


def _reg_type(ctx: Ctx, t: PType) -> PType:
    return ctx.ptype("b16") if t.name == "bf16" else t


def _check_sm(ctx: Ctx, dt: PType, st: PType) -> None:
    if "bf16" in (dt.name, st.name) and ctx.sm < 80 and not (st.name == "bf16" and dt.name == "f32"):
        raise ctx.error(f"cvt with .bf16 needs sm_80 or newer (the module targets sm_{ctx.sm})")


def _converter(ctx: Ctx, flags: frozenset[str], dt: PType, st: PType) -> Any:
    irnd, frnd = flags & _IRND, flags & _FRND
    if len(irnd) + len(frnd) > 1:
        raise ctx.error("more than one rounding modifier")
    if (flags & {"relu", "satfinite"}) and dt.name not in ("f16", "bf16"):
        raise ctx.error(".relu and .satfinite are for .f16/.bf16 results")
    src_float, dst_float = st.name in _FLOAT, dt.name in _FLOAT
    if not src_float and not dst_float:
        if irnd or frnd or flags - {"sat"}:
            raise ctx.error("an integer-to-integer cvt takes only .sat")
        return _int_to_int(dt, st, "sat" in flags)
    if src_float and not dst_float:
        if not irnd:
            raise ctx.error("a float-to-integer cvt needs .rni, .rzi, .rmi or .rpi")
        return _float_to_int(dt, st, next(iter(irnd)), "ftz" in flags)
    if not src_float:
        if irnd:
            raise ctx.error("an integer-to-float cvt takes .rn, .rz, .rm or .rp")
        return _int_to_float(dt, st, next(iter(frnd), "rn"), flags)
    return _float_to_float(ctx, dt, st, next(iter(irnd | frnd), ""), flags)


# ============================================================================ integers
def _int_to_int(dt: PType, st: PType, sat: bool) -> Any:
    def conv(x: Any) -> Any:
        v = np.asarray(x)
        if sat:
            lo, hi = _range(dt)
            wide = v.astype(np.int64) if v.dtype != np.uint64 else v
            if v.dtype == np.uint64:
                return np.minimum(v, np.uint64(hi)).astype(dt.dtype)
            return np.clip(wide, max(lo, -(2 ** 63)), min(hi, 2 ** 63 - 1)).astype(dt.dtype)
        return v.astype(dt.dtype)  # numpy's integer casts wrap (truncate) and extend by the source's sign
    return conv


def _range(t: PType) -> tuple[int, int]:
    if t.kind == "s":
        return -(1 << (t.bits - 1)), (1 << (t.bits - 1)) - 1
    return 0, (1 << t.bits) - 1


def _to_f64(x: Any, st: PType) -> np.ndarray:
    v = np.asarray(x)
    if st.name == "bf16":
        return (v.astype(np.uint32) << np.uint32(16)).view(np.float32).astype(np.float64)
    return v.astype(np.float64)


def _float_to_int(dt: PType, st: PType, rnd: str, ftz: bool) -> Any:
    lo, hi = _range(dt)

    def conv(x: Any) -> Any:
        v = _to_f64(x, st)
        if ftz and st.name == "f32":
            v = flush(v.astype(np.float32)).astype(np.float64)
        r = _TO_INTEGRAL[rnd](v)
        r = np.where(np.isnan(r), 0.0, r)
        if dt.name == "u64":
            big = r >= 2.0 ** 63
            low = np.clip(r, 0, 2.0 ** 63 - 1).astype(np.int64).view(np.uint64)
            high = (np.clip(r, 2.0 ** 63, 2.0 ** 64 - 2048) - 2.0 ** 63).astype(np.int64).view(np.uint64) \
                + np.uint64(1 << 63)
            out = np.where(big, high, low)
            return np.where(r >= 2.0 ** 64, np.uint64(hi), out)
        if dt.name == "s64":
            out = np.clip(r, -(2.0 ** 63), 2.0 ** 63 - 1024).astype(np.int64)
            return np.where(r >= 2.0 ** 63, np.int64(hi), out)
        return np.clip(r, lo, hi).astype(dt.dtype)
    return conv


def _int_to_float(dt: PType, st: PType, mode: str, flags: frozenset[str]) -> Any:
    fmt = dt.name

    def conv(x: Any) -> Any:
        v = np.asarray(x)
        wide = v.astype(np.uint64) if st.kind == "u" else v.astype(np.int64)
        r = int_to_float(np.atleast_1d(wide), fmt if fmt != "f64" else "f64", mode).reshape(v.shape)
        return _store_float(r, dt, flags)
    return conv


# ============================================================================ floats
def _float_to_float(ctx: Ctx, dt: PType, st: PType, rnd: str, flags: frozenset[str]) -> Any:
    narrowing = dt.bits < st.bits or (dt.name, st.name) in (("bf16", "f16"), ("f16", "bf16"))
    if rnd in _IRND and dt.name != st.name:
        raise ctx.error(".rni/.rzi/.rmi/.rpi convert to the same float type only")
    if rnd in _FRND and not narrowing:
        raise ctx.error(f"a rounding modifier is not allowed widening .{st.name} to .{dt.name}")
    mode = rnd if rnd in _FRND else "rn"
    ftz = "ftz" in flags

    def conv(x: Any) -> Any:
        v = _to_f64(x, st)
        if ftz and st.name == "f32":
            v = flush(v.astype(np.float32)).astype(np.float64)
        if rnd in _IRND:
            v = _TO_INTEGRAL[rnd](v)
        return _store_float(v, dt, flags, mode)
    return conv


def _store_float(v: np.ndarray, dt: PType, flags: frozenset[str], mode: str = "rn") -> Any:
    """Float64 values rounded to ``dt`` (raw bits for bf16, which numpy lacks)."""
    if "relu" in flags:
        v = np.where(v < 0, 0.0, v)
    if dt.name == "f64":
        r64 = v
    else:
        r64 = round_f64_to(v, dt.name, mode, satfinite="satfinite" in flags)
    if dt.name == "bf16":
        bits = (r64.astype(np.float32).view(np.uint32) >> np.uint32(16)).astype(np.uint16)
        return np.where(np.isnan(r64), CANON[16], bits)
    r = r64.astype(dt.dtype)
    if dt.name == "f16":
        return np.where(np.isnan(r64), CANON[16].view(np.float16), r)
    if "ftz" in flags and dt.name == "f32":
        r = flush(r)
    if "sat" in flags:
        r = saturate(r)
    return canonical_nan(np.asarray(r))


def _packed(ins: Instr, ctx: Ctx, flags: frozenset[str], dt: PType, st: PType) -> Fn:
    """cvt.frnd{.relu}{.satfinite}.f16x2|.bf16x2.f32 d, a, b: a in the upper half, b in the lower."""
    if st.name != "f32":
        raise ctx.error(f"cvt to .{dt.name} takes .f32 sources")
    if ctx.sm < 80:
        raise ctx.error(f"cvt to .{dt.name} needs sm_80 or newer (the module targets sm_{ctx.sm})")
    arity(ctx, ins, 3)
    frnd = flags & _FRND
    if len(frnd) != 1 or flags - _FRND - {"relu", "satfinite"}:
        raise ctx.error(f"cvt to .{dt.name} needs one of .rn .rz and takes only .relu/.satfinite besides")
    half = ctx.ptype(dt.name[:-2])
    mode = next(iter(frnd))
    d = ctx.dst(ins.operands[0], ctx.ptype("b32"))
    a, b = ctx.src(ins.operands[1], st), ctx.src(ins.operands[2], st)

    def bits16(x: Any) -> np.ndarray:
        r = np.asarray(_store_float(np.asarray(x).astype(np.float64), half, flags, mode))
        return (r.view(np.uint16) if r.dtype != np.uint16 else r).astype(np.uint32)

    def run(m: Machine, mask: Mask) -> None:
        d(m, (bits16(a(m, mask)) << np.uint32(16)) | bits16(b(m, mask)), mask)
    return run


DECODERS = {"cvt": dec_cvt}
