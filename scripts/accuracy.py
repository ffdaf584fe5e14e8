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
* --gpu: f32 functions of one operand take every one of the 2^32 inputs on the CUDA backend
  (bit-identical to the reference), against torch's f64 evaluation on the GPU rounded to f32.

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
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from vyre_decl.conform.accuracy import (Function, function_for, kat_inputs, near_f32_midpoint, oracle,  # noqa: E402
                                        render_table, same, ulp_error)
from vyre_decl.conform.accuracy import measure as sampled  # noqa: E402
from vyre_decl.ir.types import DataType  # noqa: E402
from vyre_decl.reference.interpreter import op_function  # noqa: E402
from vyre_decl.registry import load  # noqa: E402

JSON_PATH = ROOT / "docs" / "accuracy.json"
MD_PATH = ROOT / "docs" / "accuracy.md"


def f32_inputs(stride: int) -> np.ndarray:
    """Every stride-th bit pattern of all 2^32, plus the patterns around 0, 1 and the extremes."""
    dense = np.arange(0, 2**32, stride, dtype=np.uint64)
    edges = [np.arange(c - 4096, c + 4096, dtype=np.int64) & 0xFFFFFFFF
             for c in (0, 0x3F800000, 0x7F7FFFFF, 0x00800000, 0x80000000, 0xBF800000, 0xFF7FFFFF)]
    bits = np.unique(np.concatenate([dense] + [e.astype(np.uint64) for e in edges])).astype(np.uint32)
    return bits.view(np.float32)


def measure(registry: Any, op_id: str, fn: Function, t: DataType, samples: int, rng: np.random.Generator) -> dict:
    op = registry.get(op_id)
    binding = next(b for b in op.bindings() if op.output_type(b) is t)
    evaluate = op_function(registry, op, binding)
    t0 = time.perf_counter()
    if not (t is DataType.F32 and fn.arity == 1):
        r = sampled(evaluate, fn, t, samples, rng, kat_inputs(op, t))
        r.pop("samples")
        return {**r, "domain": fn.domain, "seconds": round(time.perf_counter() - t0, 1)}
    stride = max(1, 2**32 // samples)
    x = np.concatenate([f32_inputs(stride)] + kat_inputs(op, t))
    method = f"{len(x):,} inputs: every {stride}-th f32 bit pattern and the regions around 0, 1 and the extremes"
    with np.errstate(all="ignore"):
        got = np.asarray(evaluate([x]), np.float32)
        wide = np.asarray(fn.np64(x.astype(np.float64)))
    with np.errstate(over="ignore"):
        want = wide.astype(np.float32)
    pick = rng.integers(0, len(got), 2000)
    differ = sum(int(not same(oracle(fn, t, (float(x[i]),)), float(want[i]))) for i in pick)
    exact = np.flatnonzero(near_f32_midpoint(wide))
    exact = np.union1d(exact, np.arange(len(x) - len(kat_inputs(op, t)[0]), len(x)))
    for i in exact:
        want[i] = oracle(fn, t, (float(x[i]),))
    method += (f"; oracle numpy f64 rounded to f32 (it differs from mpmath on {differ} of {len(pick)} checked), "
               f"mpmath for the {len(exact):,} inputs whose result is near a rounding midpoint or known to be hard")
    err = ulp_error(t, got, want)
    worst = int(np.argmax(err))
    max_ulp = float(err[worst])
    return {"max_ulp": int(max_ulp) if math.isfinite(max_ulp) else "wrong special value", "at": repr(float(x[worst])),
            "got": repr(float(got[worst])), "true": repr(float(want[worst])), "domain": fn.domain, "method": method,
            "seconds": round(time.perf_counter() - t0, 1)}


def write_budgets(registry: Any, results: dict) -> int:
    """Rewrite the `ulp = { ... }` line of every measured op to the measured maxima."""
    import re

    changed = 0
    for op_id, rows in sorted(results.items()):
        op = registry.get(op_id)
        text = op.source.read_text()
        start = text.index(f'id = "{op_id}"')
        end = text.find("[[op]]", start)
        end = len(text) if end < 0 else end
        block = text[start:end]
        line = "ulp = { " + ", ".join(f"{t} = {r['max_ulp']}" for t, r in sorted(rows.items())) + " }"
        new, n = re.subn(r"^ulp = \{[^}\n]*\}$", line, block, count=1, flags=re.M)
        if n == 0:
            print(f"{op_id}: no `ulp = {{ ... }}` line to rewrite; add `{line}`")
            continue
        if new != block:
            op.source.write_text(text[:start] + new + text[end:])
            print(f"{op_id}: {line}")
            changed += 1
    print(f"{changed} budget(s) changed")
    return 0


def write_markdown(results: dict) -> None:
    MD_PATH.write_text(render_table(results))


_CHUNK = 1 << 28


def measure_gpu_f32(registry: Any, op_id: str, fn: Function) -> dict:
    """Every f32 input on the CUDA backend, against torch's f64 evaluation rounded to f32, all on the
    GPU: 16 launches of 2^28 invocations, each computing op(bits(base + i)). Results whose f64 value
    lies near a rounding midpoint, and the known answers' inputs, are checked against mpmath."""
    import torch

    from vyre_decl.backends.cuda import CudaBackend
    from vyre_decl.ir import parse_program

    t0 = time.perf_counter()
    cuda = _gpu_backend(CudaBackend)
    program = parse_program(f"""program sweep workgroup(256, 1, 1) {{
      buffer base: read u32[1] @0
      buffer out: write f32[{_CHUNK}] @1
      let i = gid.x
      out[i] = {op_id}(primitive.convert.bitcast<T=f32>(base[0u32] + i))
    }}""")
    pipe = cuda.compile(program)
    base, out = cuda.upload(np.zeros(1, np.uint32)), cuda.allocate("f32", _CHUNK)
    got_t = torch.as_tensor(out, device="cuda")
    worst, worst_x, worst_got, worst_want, unverified = 0.0, 0.0, 0.0, 0.0, 0.0
    index = torch.arange(_CHUNK, device="cuda", dtype=torch.int64)
    oracle_f64 = fn.torch or (lambda tc, v: getattr(tc, op_id.rsplit(".", 1)[1])(v))
    hard_x: list[np.ndarray] = []
    hard_got: list[np.ndarray] = []
    for c in range(2**32 // _CHUNK):
        cuda.upload_at(base, 0, np.array([c * _CHUNK], np.uint32))
        pipe.dispatch_resident([base, out])
        cuda.synchronize()
        bits = index + c * _CHUNK
        x = torch.where(bits >= 2**31, bits - 2**32, bits).to(torch.int32).view(torch.float32)
        wide = oracle_f64(torch, x.double())
        want = wide.float()
        err = _ulp_torch(got_t, want)
        m = float(err.max())
        if m > unverified:
            unverified = m
        # the oracle is itself checked where it matters: results near a rounding midpoint, and
        # the largest disagreements (which may be the oracle's own error, e.g. cancellation)
        largest = torch.topk(err, 256)
        top = largest.indices[largest.values > 0]
        near = torch.cat([_near_midpoint_torch(wide).nonzero().flatten(), top])
        hard_x.append(x[near].cpu().numpy())
        hard_got.append(got_t[near].cpu().numpy())
    op = registry.get(op_id)
    kat_x = kat_inputs(op, DataType.F32)[0]
    binding = next(b for b in op.bindings() if op.output_type(b) is DataType.F32)
    with np.errstate(all="ignore"):
        kat_got = np.asarray(op_function(registry, op, binding)([kat_x]), np.float32)  # bit-identical to CUDA
    xs, gots = np.concatenate(hard_x + [kat_x]), np.concatenate(hard_got + [kat_got])
    exact = np.array([oracle(fn, DataType.F32, (float(v),)) for v in xs], np.float32)
    err = ulp_error(DataType.F32, gots, exact)
    if len(err) and float(err.max()) > 0:
        k = int(err.argmax())
        worst, worst_x, worst_got, worst_want = float(err[k]), float(xs[k]), float(gots[k]), float(exact[k])
    if unverified > worst + 1:  # the oracle's largest disagreement was not explained by the checks
        print(f"  warning: torch's oracle disagrees by {unverified:.0f} ULP somewhere unchecked", file=sys.stderr)
    return {"max_ulp": int(worst) if worst < 2**40 else "wrong special value", "at": repr(worst_x),
            "got": repr(worst_got), "true": repr(worst_want), "domain": fn.domain,
            "method": f"all 4,294,967,296 f32 inputs on {cuda.device.name}; oracle torch f64 on the GPU rounded to "
                      f"f32, mpmath for the {len(xs):,} inputs whose result is near a rounding midpoint, known to "
                      "be hard or among the largest disagreements",
            "seconds": round(time.perf_counter() - t0, 1)}


def _near_midpoint_torch(wide: Any) -> Any:
    """near_f32_midpoint on a GPU tensor of f64 values."""
    import torch

    bits = wide.view(torch.int64) & 0x7FFFFFFFFFFFFFFF
    exponent = (bits >> 52) - 1023
    shift = 29 + torch.clamp(-126 - exponent, 0, 34)
    one = torch.ones_like(bits)
    low = bits & ((one << shift) - 1)
    half = one << (shift - 1)
    return ((low - half).abs() <= 8) & torch.isfinite(wide)


_BACKEND: list[Any] = []


def _gpu_backend(cls: Any) -> Any:
    if not _BACKEND:
        _BACKEND.append(cls())
    return _BACKEND[0]


def _ulp_torch(got: Any, want: Any) -> Any:
    import torch

    def ordered(v: Any) -> Any:
        i = v.view(torch.int32).to(torch.int64)
        return torch.where(i < 0, -(i & 0x7FFFFFFF), i)

    g_nan, w_nan = torch.isnan(got), torch.isnan(want)
    diff = (ordered(got) - ordered(want)).abs().double()
    diff = torch.where(g_nan & w_nan, torch.zeros_like(diff), diff)
    return torch.where(g_nan != w_nan, torch.full_like(diff, 2.0**50), diff)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ops", default="*", help="ops whose id matches this glob (default: every op with a known function)")
    ap.add_argument("--samples", type=int, default=1 << 20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--types", default="f32,f64", help="result types to measure (default f32,f64)")
    ap.add_argument("--write-budgets", action="store_true",
                    help="set each op's `ulp` in its TOML file to the maxima in docs/accuracy.json, then exit")
    ap.add_argument("--update", action="store_true", help="write docs/accuracy.json and docs/accuracy.md")
    ap.add_argument("--gpu", action="store_true", help="f32 unary functions: every input, on the CUDA backend "
                    "(needs torch for the oracle); f64 and two-operand functions: sampled as without --gpu")
    args = ap.parse_args()
    registry = load()  # the standard ops and VYRE_DECL_OPS_PATH
    if args.write_budgets:
        return write_budgets(registry, json.loads(JSON_PATH.read_text()))
    rng = np.random.default_rng(args.seed)
    results = json.loads(JSON_PATH.read_text()) if JSON_PATH.exists() else {}
    mismatched = []
    for op in registry:
        op_id = op.id
        fn = function_for(op_id)
        if fn is None or not fnmatch.fnmatchcase(op_id, args.ops):
            continue
        for t in (DataType(v) for v in args.types.split(",")):
            if t not in {op.output_type(b) for b in op.bindings()}:
                continue
            if args.gpu and t is DataType.F32 and fn.arity == 1:
                r = measure_gpu_f32(registry, op_id, fn)
            else:
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
