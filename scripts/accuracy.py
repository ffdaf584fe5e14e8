"""Accuracy of the float functions against the true function (a measurement script, not a test).

    python scripts/accuracy.py [--ops GLOB] [--samples N] [--seed S] [--update]

For every function of primitive.float with a known mathematical meaning and each of its float
types, the script evaluates the op on the reference backend (bit-identical to CUDA) and measures
the largest error in ULP against the correctly rounded true result:

* f32: the inputs are a dense sample of all 2^32 bit patterns (every N-th pattern, plus
  boundary regions); the oracle is the function evaluated in f64 by numpy and rounded to f32,
  which mpmath checks on a subsample (disagreements are reported).
* f64: the inputs are random bit patterns of the domain plus boundary regions; the oracle is
  mpmath at 200 bits, rounded to f64.

Results go to docs/accuracy.json (merged by op and type) and docs/accuracy.md is regenerated from
it; with --update the `ulp` budgets in ops/primitive.float.toml must equal the measured maxima (the
script prints the ones that differ). mpmath is a test dependency, never a runtime one.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from vyre_decl.conform.values import from_bits, to_bits  # noqa: E402
from vyre_decl.ir.types import DataType  # noqa: E402
from vyre_decl.reference.interpreter import op_function  # noqa: E402
from vyre_decl.registry import load  # noqa: E402

JSON_PATH = ROOT / "docs" / "accuracy.json"
MD_PATH = ROOT / "docs" / "accuracy.md"


@dataclass(frozen=True)
class Function:
    mp: Callable[..., Any]  # mpmath function
    np64: Callable[..., np.ndarray]  # numpy f64 function (the f32 oracle before rounding)
    domain: str  # what the table says about where the inputs come from
    lo: float = -math.inf  # f64 sampling interval (random bit patterns within it)
    hi: float = math.inf
    arity: int = 1


def _mp() -> Any:
    import mpmath

    mpmath.mp.prec = 200
    return mpmath


def _functions() -> dict[str, Function]:
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
        "cbrt": Function(mp.cbrt, np.cbrt, "all finite inputs"),
        "rsqrt": Function(lambda x: 1 / mp.sqrt(x), lambda x: 1 / np.sqrt(x), "x >= 0", 0.0),
        "rcp": Function(lambda x: 1 / x, lambda x: 1 / x, "all finite inputs"),
        "hypot": Function(mp.hypot, np.hypot, "all finite pairs", arity=2),
        "atan2": Function(mp.atan2, np.arctan2, "all finite pairs", arity=2),
        "pow": Function(mp.power, np.power, "x > 0 and all y, with results in range; x < 0 with integer y", arity=2),
    }


def ulp_error(t: DataType, got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """Distance in representable values between got and want (0 where both are NaN; a huge
    number where only one is NaN or they differ in infinity)."""
    width = 32 if t is DataType.F32 else 64
    sint = np.int32 if width == 32 else np.int64

    def ordered(x: np.ndarray) -> np.ndarray:
        i = np.ascontiguousarray(x).view(sint).astype(np.float64 if width == 64 else np.int64)
        if width == 64:  # exact enough: distances that matter are small
            bits = np.ascontiguousarray(x).view(np.int64)
            return np.where(bits < 0, -(bits & 0x7FFFFFFFFFFFFFFF), bits).astype(object)
        return np.where(i < 0, -(i & 0x7FFFFFFF), i)

    g_nan, w_nan = np.isnan(got), np.isnan(want)
    diff = np.abs(np.asarray(ordered(got) - ordered(want), dtype=np.float64))
    diff = np.where(g_nan & w_nan, 0, diff)
    return np.where(g_nan != w_nan, np.inf, diff)


def f32_inputs(stride: int) -> np.ndarray:
    """Every stride-th bit pattern of all 2^32, plus the patterns around 0, 1 and the extremes."""
    dense = np.arange(0, 2**32, stride, dtype=np.uint64)
    edges = [np.arange(c - 4096, c + 4096, dtype=np.int64) & 0xFFFFFFFF
             for c in (0, 0x3F800000, 0x7F7FFFFF, 0x00800000, 0x80000000, 0xBF800000, 0xFF7FFFFF)]
    bits = np.unique(np.concatenate([dense] + [e.astype(np.uint64) for e in edges])).astype(np.uint32)
    return bits.view(np.float32)


def f64_inputs(fn: Function, n: int, rng: np.random.Generator) -> np.ndarray:
    raw = rng.integers(0, 2**64, n, dtype=np.uint64).view(np.float64)
    raw = raw[np.isfinite(raw) & (raw >= fn.lo) & (raw <= fn.hi)]
    special = np.array([0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 1e-300, 5e-324, 1e300, math.pi, -math.pi,
                        fn.lo if math.isfinite(fn.lo) else -1e308, fn.hi if math.isfinite(fn.hi) else 1e308])
    near_one = 1.0 + rng.standard_normal(n // 4) * 1e-3
    moderate = rng.standard_normal(n // 4) * 4.0
    x = np.concatenate([raw, special, near_one, moderate])
    return x[(x >= fn.lo) & (x <= fn.hi)]


def _inputs(fn: Function, t: DataType, samples: int, rng: np.random.Generator) -> tuple[list[np.ndarray], str]:
    if t is DataType.F32 and fn.arity == 1:
        stride = max(1, 2**32 // samples)
        x = f32_inputs(stride)
        return [x], f"{len(x):,} inputs: every {stride}-th f32 bit pattern and the regions around 0, 1 and the extremes"
    if fn.arity == 1:
        x = f64_inputs(fn, samples, rng)
        return [x], f"{len(x):,} inputs: random bit patterns of the domain, values near 1 and of moderate size, boundaries"
    n = max(1, samples // (4 if t is DataType.F64 else 1))
    cols = []
    for _ in range(fn.arity):
        bits = rng.integers(0, 2**t.bits, n, dtype=np.uint64)
        values = from_bits(t, bits)
        values = np.where(np.isfinite(values), values, 1.0).astype(t.numpy_dtype)
        moderate = (rng.standard_normal(n // 2) * 8.0).astype(t.numpy_dtype)
        cols.append(np.concatenate([values, moderate]))
    return cols, f"{len(cols[0]):,} pairs: random bit patterns and values of moderate size"


def _round(t: DataType, value: Any) -> float:
    """An mpmath value correctly rounded to t, subnormals included (never through another format)."""
    mp = _mp()
    if mp.isnan(value) or mp.isinf(value) or value == 0:
        return float(value)
    from fractions import Fraction

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


def oracle(fn: Function, t: DataType, args: tuple[float, ...]) -> float:
    """The correctly rounded true value; IEEE's special values (numpy's) where mpmath has none."""
    mp = _mp()
    try:
        r = fn.mp(*(mp.mpf(a) for a in args))
        if mp.im(r) == 0:
            return _round(t, mp.re(r))
    except (ValueError, ZeroDivisionError, OverflowError):
        pass
    with np.errstate(all="ignore"):
        return float(np.asarray(fn.np64(*(np.float64(a) for a in args))).astype(t.numpy_dtype))


def measure(registry: Any, op_id: str, fn: Function, t: DataType, samples: int, rng: np.random.Generator) -> dict:
    op = registry.get(op_id)
    binding = next(b for b in op.bindings() if op.output_type(b) is t)
    evaluate = op_function(registry, op, binding)
    t0 = time.perf_counter()
    cols, method = _inputs(fn, t, samples, rng)
    with np.errstate(all="ignore"):
        got = np.asarray(evaluate(cols), t.numpy_dtype)
    if t is DataType.F32 and fn.arity == 1:
        with np.errstate(all="ignore"):
            want = np.asarray(fn.np64(*(c.astype(np.float64) for c in cols))).astype(np.float32)
        pick = rng.integers(0, len(got), 2000)
        differ = sum(int(not _same(oracle(fn, t, tuple(float(c[i]) for c in cols)), float(want[i]))) for i in pick)
        method += f"; oracle numpy f64 rounded to f32, which differs from mpmath on {differ} of {len(pick)} checked"
    else:
        want = np.array([oracle(fn, t, tuple(float(c[i]) for c in cols)) for i in range(len(got))], t.numpy_dtype)
        method += "; oracle mpmath at 200 bits"
    err = ulp_error(t, got, want)
    worst = int(np.argmax(err))
    max_ulp = float(err[worst])
    at = ", ".join(f"{c[worst]!r}" for c in cols)
    return {"max_ulp": int(max_ulp) if math.isfinite(max_ulp) else "wrong special value", "at": at,
            "got": repr(got[worst]), "true": repr(want[worst]), "domain": fn.domain, "method": method,
            "seconds": round(time.perf_counter() - t0, 1)}


def _same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


def write_markdown(results: dict) -> None:
    lines = ["# Accuracy of the float functions", "",
             "Generated by `python scripts/accuracy.py` from `docs/accuracy.json`; do not edit by hand. The error is",
             "the largest distance in ULP between an op's result and the correctly rounded true result, over the",
             "inputs described. Every function gives the same bits on the reference and CUDA backends, so the",
             "figures hold for both. Each op's `ulp` in `ops/primitive.float.toml` declares the maximum (rounded up).", "",
             "| function | type | max ULP | where | inputs |", "|---|---|---|---|---|"]
    for op_id in sorted(results):
        for t, r in sorted(results[op_id].items()):
            lines.append(f"| `{op_id.rsplit('.', 1)[1]}` | {t} | {r['max_ulp']} | {r['at']} | {r['method']}; {r['domain']} |")
    MD_PATH.write_text("\n".join(lines) + "\n")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ops", default="primitive.float.*")
    ap.add_argument("--samples", type=int, default=1 << 20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--update", action="store_true", help="write docs/accuracy.json and docs/accuracy.md")
    args = ap.parse_args()
    registry = load()  # the standard ops and VYRE_DECL_OPS_PATH
    rng = np.random.default_rng(args.seed)
    results = json.loads(JSON_PATH.read_text()) if JSON_PATH.exists() else {}
    mismatched = []
    functions = _functions()
    for op in registry:
        op_id = op.id
        fn = functions.get(op_id.rsplit(".", 1)[1])
        if fn is None or not fnmatch.fnmatchcase(op_id, args.ops):
            continue
        for t in (DataType.F32, DataType.F64):
            r = measure(registry, op_id, fn, t, args.samples, rng)
            results.setdefault(op_id, {})[t.value] = r
            declared = op.accuracy(t)
            measured = r["max_ulp"]
            mark = "" if measured == declared else f"   <- declared {declared}"
            if mark:
                mismatched.append(op_id)
            print(f"{op_id:34s} {t.value}: max {measured} ULP at {r['at']} ({r['seconds']} s){mark}")
    if args.update:
        JSON_PATH.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
        write_markdown(results)
        print(f"wrote {JSON_PATH.relative_to(ROOT)} and {MD_PATH.relative_to(ROOT)}")
    return 1 if mismatched else 0


if __name__ == "__main__":
    sys.exit(main())
