"""Accuracy against the true function: the functions whose meaning is known, a correctly rounded
oracle, and the error in ULP.

Used by ``scripts/accuracy.py`` (which measures every float function and writes docs/accuracy.md)
and by ``python -m vyre_decl.conform --accuracy`` (which samples each float op on the backend under
test). The true values come from mpmath at 200 bits, rounded to the result type without passing
through another format; mpmath is a test dependency and is imported only here, on first use.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

import numpy as np

from ..ir.types import DataType
from .units import Failure
from .values import from_bits, opposite_zero

if TYPE_CHECKING:
    from .isolation import Runner
    from ..registry.model import OpDef
    from .units import Unit, UnitResult

__all__ = ["Function", "functions", "function_for", "oracle", "exact_zero", "ulp_error", "round_to", "same", "sample_inputs",
           "measure", "measure_accuracy", "kat_inputs",
           "near_f32_midpoint", "render_table"]


@dataclass(frozen=True)
class Function:
    mp: Callable[..., Any]  # mpmath function
    np64: Callable[..., np.ndarray]  # numpy f64 function (the f32 oracle before rounding)
    domain: str  # what the table says about where the inputs come from
    lo: float = -math.inf  # f64 sampling interval (random bit patterns within it)
    hi: float = math.inf
    arity: int = 1
    torch: Callable[[Any, Any], Any] | None = None  # (torch, x) -> the f64 oracle on a GPU (None: torch.<name>)


def _mp() -> Any:
    import mpmath  # type: ignore[import-untyped]

    mpmath.mp.prec = 200
    return mpmath


def functions() -> dict[str, Function]:
    """The functions measured, by op name (the last part of the op id)."""
    mp = _mp()
    inf = math.inf
    return {
        "exp": Function(mp.exp, np.exp, "all finite inputs", -745.2, 709.8),
        "exp2": Function(lambda x: mp.power(2, x), np.exp2, "all finite inputs", -1075.0, 1024.0),
        "expm1": Function(mp.expm1, np.expm1, "all finite inputs", -40.0, 709.8),
        "log": Function(mp.log, np.log, "x > 0", 0.0, inf),
        "log2": Function(lambda x: mp.log(x, 2), np.log2, "x > 0", 0.0, inf),
        "log10": Function(mp.log10, np.log10, "x > 0", 0.0, inf),
        "log1p": Function(mp.log1p, np.log1p, "x > -1", -1.0, inf),
        "sin": Function(mp.sin, np.sin, "all finite inputs"),
        "cos": Function(mp.cos, np.cos, "all finite inputs"),
        "tan": Function(mp.tan, np.tan, "all finite inputs"),
        "asin": Function(mp.asin, np.arcsin, "-1 <= x <= 1", -1.0, 1.0),
        "acos": Function(mp.acos, np.arccos, "-1 <= x <= 1", -1.0, 1.0),
        "atan": Function(mp.atan, np.arctan, "all finite inputs"),
        "sinh": Function(mp.sinh, np.sinh, "all finite inputs", -711.0, 711.0),
        "cosh": Function(mp.cosh, np.cosh, "all finite inputs", -711.0, 711.0),
        "tanh": Function(mp.tanh, np.tanh, "all finite inputs"),
        "asinh": Function(mp.asinh, np.arcsinh, "all finite inputs"),
        "acosh": Function(mp.acosh, np.arccosh, "x >= 1", 1.0, inf),
        "atanh": Function(mp.atanh, np.arctanh, "-1 < x < 1", -1.0, 1.0),
        "erf": Function(mp.erf, lambda x: np.vectorize(math.erf)(x), "all finite inputs"),
        "cbrt": Function(lambda x: mp.sign(x) * mp.cbrt(abs(x)), np.cbrt, "all finite inputs",
                         torch=lambda tc, x: tc.sign(x) * tc.abs(x).pow(1 / 3)),
        "rsqrt": Function(lambda x: 1 / mp.sqrt(x), lambda x: 1 / np.sqrt(x), "x >= 0", 0.0, torch=lambda tc, x: tc.rsqrt(x)),
        "rcp": Function(lambda x: 1 / x, lambda x: 1 / x, "all finite inputs", torch=lambda tc, x: tc.reciprocal(x)),
        "hypot": Function(mp.hypot, np.hypot, "all finite pairs", arity=2),
        "atan2": Function(mp.atan2, np.arctan2, "all finite pairs", arity=2),
        "pow": Function(mp.power, np.power, "x > 0 and all y, with results in range; x < 0 with integer y", arity=2),
        "box_muller": Function(lambda u1, u2: mp.sqrt(-2 * mp.log(u1)) * mp.cospi(2 * u2),
                               lambda u1, u2: np.sqrt(-2 * np.log(u1)) * np.cos(2 * np.pi * u2),
                               "0 < u1 <= 1, 0 <= u2 < 1", 0.0, 1.0, arity=2),
    }


def function_for(op_id: str) -> Function | None:
    """The function an op computes, by its name (the last part of its id), or None."""
    return functions().get(op_id.rsplit(".", 1)[1])


def ulp_error(t: DataType, got: np.ndarray, want: np.ndarray, unsigned: np.ndarray | None = None) -> np.ndarray:
    """Distance in representable values between got and want, as floats (0 where both are NaN;
    infinite where only one is, and where a zero has the wrong sign: ``values.opposite_zero``,
    except where ``unsigned`` marks a true value that is an exact zero, which has no sign)."""
    sint = np.int32 if t is DataType.F32 else np.int64
    mask = (1 << (t.bits - 1)) - 1

    def ordered(x: np.ndarray) -> np.ndarray:
        bits = np.ascontiguousarray(x, dtype=t.numpy_dtype).view(sint).astype(np.int64)
        return np.where(bits < 0, -(bits & mask), bits)

    a, b = ordered(got), ordered(want)
    same_side = (a >= 0) == (b >= 0)
    near = np.abs(np.where(same_side, a - b, 0)).astype(np.float64)  # cannot overflow
    far = np.abs(a.astype(np.float64)) + np.abs(b.astype(np.float64))  # opposite signs: only large distances
    diff = np.where(same_side, near, far)
    g_nan, w_nan = np.isnan(got), np.isnan(want)
    diff = np.where(g_nan & w_nan, 0.0, diff)
    wrong_sign = opposite_zero(got, want) & (True if unsigned is None else ~np.asarray(unsigned, bool))
    return np.where((g_nan != w_nan) | wrong_sign, np.inf, diff)


def round_to(t: DataType, value: Any) -> float:
    """An mpmath value correctly rounded to t, subnormals included (never through another format)."""
    mp = _mp()
    if mp.isnan(value) or mp.isinf(value) or value == 0:
        return float(value)
    digits, emin, emax = (24, -126, 128) if t is DataType.F32 else (53, -1022, 1024)
    sign = -1.0 if value < 0 else 1.0
    if abs(value) >= mp.mpf(2) ** emax:
        return sign * math.inf
    if abs(value) < mp.mpf(2) ** (emin - digits):
        return sign * 0.0
    man, exp = mp.mpf(abs(value)).man_exp
    v = Fraction(int(man)) * (Fraction(2) ** int(exp))
    e = max(v.numerator.bit_length() - v.denominator.bit_length(), emin)
    if Fraction(2) ** e > v:
        e = max(e - 1, emin)
    q = v / Fraction(2) ** (e - digits + 1)
    k = q.numerator // q.denominator
    rest = q - k
    k += int(rest > Fraction(1, 2) or (rest == Fraction(1, 2) and k % 2 == 1))
    out = Fraction(k) * Fraction(2) ** (e - digits + 1)
    return sign * (math.inf if out >= Fraction(2) ** emax else float(out))


def _true_value(fn: Function, args: tuple[float, ...]) -> Any:
    """fn's real value at finite, non-zero ``args`` from mpmath, or None (a zero or non-finite
    operand, a pole, a complex result)."""
    if not all(math.isfinite(a) and a != 0 for a in args):
        return None
    mp = _mp()
    try:
        r = fn.mp(*(mp.mpf(a) for a in args))
    except (ValueError, ZeroDivisionError, OverflowError):
        return None
    return mp.re(r) if mp.im(r) == 0 else None


def oracle(fn: Function, t: DataType, args: tuple[float, ...]) -> float:
    """The correctly rounded true value; IEEE's special values (numpy's) where mpmath has none:
    for operands that are zeros (mpmath has no -0), infinities or NaNs, and at poles."""
    r = _true_value(fn, args)
    if r is not None:
        return round_to(t, r)
    with np.errstate(all="ignore"):
        return float(np.asarray(fn.np64(*(np.float64(a) for a in args))).astype(t.numpy_dtype))


def exact_zero(fn: Function, args: tuple[float, ...]) -> bool:
    """Whether the true value at finite, non-zero ``args`` is exactly 0 (box_muller(0.5, 0.25)):
    a zero of either sign meets it. An underflow to zero keeps the sign of the value."""
    r = _true_value(fn, args)
    return r is not None and r == 0


def same(a: float, b: float) -> bool:
    """Equal, or both NaN."""
    return a == b or (math.isnan(a) and math.isnan(b))




def near_f32_midpoint(w: np.ndarray, window: int = 8) -> np.ndarray:
    """Where f64 values lie within ``window`` f64 ULPs of a point halfway between two f32 values:
    there an f64 evaluation rounded to f32 may round the wrong way, so the oracle must be exact."""
    bits = np.ascontiguousarray(w, dtype=np.float64).view(np.uint64) & np.uint64(0x7FFFFFFFFFFFFFFF)
    exponent = (bits >> np.uint64(52)).astype(np.int64) - 1023
    shift = (29 + np.clip(-126 - exponent, 0, 34)).astype(np.uint64)  # f64 bits below the f32 result's last
    low = (bits & ((np.uint64(1) << shift) - np.uint64(1))).astype(np.int64)
    half = (np.uint64(1) << (shift - np.uint64(1))).astype(np.int64)
    return (np.abs(low - half) <= window) & np.isfinite(w)


def kat_inputs(op: OpDef, t: DataType) -> list[np.ndarray]:
    """The inputs of the op's known answers for result type t, as columns: they hold the hard
    cases its authors found (results next to a rounding boundary)."""
    rows = [case[:-1] for kat in op.kats if op.output_type(kat.binding) is t for case in kat.cases]
    return [from_bits(t, [r[j] for r in rows]) for j in range(len(op.signature.inputs))]


def sample_inputs(fn: Function, t: DataType, n: int, rng: np.random.Generator,
                  extra: Sequence[np.ndarray] = ()) -> tuple[list[np.ndarray], str]:
    """About n inputs of type t for fn: random bit patterns of its domain, values near 1 and of
    moderate size, the boundaries and the ``extra`` columns; and a sentence saying so."""
    lo, hi = fn.lo, fn.hi
    cols = []
    for _ in range(fn.arity):
        with np.errstate(invalid="ignore"):  # signalling NaN patterns
            raw = from_bits(t, rng.integers(0, 2**t.bits, 2 * n, dtype=np.uint64)).astype(np.float64)
        raw = raw[np.isfinite(raw) & (raw >= lo) & (raw <= hi)][: n // 2]
        finite_max = float(np.finfo(t.numpy_dtype).max)
        special = np.array([0.0, -0.0, 1.0, -1.0, 0.5, 2.0, math.pi, -math.pi, float(np.finfo(t.numpy_dtype).tiny),
                            max(lo, -finite_max), min(hi, finite_max)])
        near_one = 1.0 + rng.standard_normal(n // 4) * 1e-3
        moderate = rng.standard_normal(n // 4) * 4.0
        x = np.concatenate([raw, special, near_one, moderate])
        cols.append(x[(x >= lo) & (x <= hi)].astype(t.numpy_dtype))
    size = min(len(c) for c in cols)
    cols = [rng.permutation(c)[:size] if fn.arity > 1 else c for c in cols]
    if extra and len(extra[0]):
        cols = [np.concatenate([c, e.astype(t.numpy_dtype)]) for c, e in zip(cols, extra)]
    what = "inputs" if fn.arity == 1 else "pairs"
    return cols, (f"{len(cols[0]):,} {what}: random bit patterns of the domain, values near 1 and of moderate size, "
                  f"boundaries{', the known answers' if extra else ''}")


def measure(evaluate: Callable[[list[np.ndarray]], np.ndarray], fn: Function, t: DataType, n: int,
            rng: np.random.Generator, extra: Sequence[np.ndarray] = ()) -> dict[str, Any]:
    """The largest error in ULP of ``evaluate`` (inputs -> results of type t) against mpmath on
    sample_inputs: {"max_ulp", "at", "got", "true", "samples", "method"}."""
    cols, method = sample_inputs(fn, t, n, rng, extra)
    with np.errstate(all="ignore"):
        got = np.asarray(evaluate(cols), t.numpy_dtype)
    rows = [tuple(float(c[i]) for c in cols) for i in range(len(got))]
    want = np.array([oracle(fn, t, r) for r in rows], t.numpy_dtype)
    err = ulp_error(t, got, want, np.array([w == 0 and exact_zero(fn, r) for w, r in zip(want, rows)], bool))
    worst = int(np.argmax(err))
    max_ulp = float(err[worst])
    wrong = "wrong sign of zero" if opposite_zero(got[worst], want[worst]) else "wrong special value"
    return {"max_ulp": int(max_ulp) if math.isfinite(max_ulp) else wrong,
            "at": ", ".join(repr(float(c[worst])) for c in cols), "got": repr(float(got[worst])),
            "true": repr(float(want[worst])), "samples": len(got), "method": method + "; oracle mpmath at 200 bits"}


def measure_accuracy(runner: Runner, units: Sequence[Unit], results: Mapping[str, UnitResult], samples: int,
                     seed: int, progress: Callable[[str], None]) -> None:
    """For each op unit computing a known float function: its error against mpmath on ``samples``
    inputs, run on the backend under test, recorded in the unit's result (a failure when it
    exceeds the op's declared budget)."""
    import hashlib

    from .isolation import CaseError
    from .oneop import one_op_program

    for unit in units:
        op, binding = unit.op, unit.binding
        if unit.kind != "op" or op is None or binding is None:
            continue
        fn, t = function_for(op.id), op.output_type(binding)
        if fn is None or not t.is_float or len(op.input_types(binding)) != fn.arity:
            continue
        program = one_op_program(op, binding)
        digest = hashlib.sha256(f"{seed}|accuracy|{unit.key}".encode()).digest()
        rng = np.random.default_rng(int.from_bytes(digest[:8], "little"))
        result = results[unit.key]
        try:
            r = measure(lambda cols: runner.run(program, cols, None)[0], fn, t, samples, rng, kat_inputs(op, t))
        except CaseError as err:
            result.failures.append(Failure("accuracy", f"the backend failed on the accuracy sample: {err}"))
            continue
        r["budget"] = op.accuracy(t)
        result.accuracy = r
        over = not isinstance(r["max_ulp"], int) or r["max_ulp"] > r["budget"]
        if over:
            result.failures.append(Failure("accuracy", f"{r['max_ulp']} ULP from the true value at {r['at']} "
                                           f"(gives {r['got']}, true {r['true']}); the op declares {r['budget']}"))
        progress(f"accuracy {unit.key}: max {r['max_ulp']} ULP (budget {r['budget']}) over {r['samples']:,} "
                 f"inputs ... {'FAIL' if over else 'ok'}")


def render_table(results: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> str:
    """docs/accuracy.md from the measurements in docs/accuracy.json (op id -> type -> result)."""
    lines = ["# Accuracy of the float functions", "",
             "Generated by `python scripts/accuracy.py --update` from `docs/accuracy.json`; do not edit by hand.",
             "The error is the largest distance in ULP between an op's result and the correctly rounded true",
             "result, over the inputs described. Every function gives the same bits on the reference and CUDA",
             "backends, so the figures hold for both. Each op's `ulp` in `ops/primitive.float.toml` declares",
             "exactly this maximum (a test checks it); `python -m vyre_decl.conform --accuracy` samples it again",
             "on any backend.", "",
             "| function | type | max ULP | where (input -> result, true) | domain | inputs |", "|---|---|---|---|---|---|"]
    for op_id in sorted(results):
        for t, r in sorted(results[op_id].items()):
            where = f"{r['at']} -> {r['got']}, true {r['true']}" if r["max_ulp"] else "-"
            lines.append(f"| `{op_id.rsplit('.', 1)[1]}` | {t} | {r['max_ulp']} | {where} | {r['domain']} | "
                         f"{r['method']} |")
    return "\n".join(lines) + "\n"
