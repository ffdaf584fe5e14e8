"""Float functions on the GPU against torch (a benchmark, not a test; prints ratios).

    python scripts/bench_math.py [--n 67108864] [--reps 50] [--ops exp,log,...] [--types f32,f64]
                                 [--dialect primitive.float]

Each function of primitive.float runs over n f32 and n f64 elements in resident buffers (one
element per invocation, one read per operand and one write), beside torch.<fn> on the same inputs in the same
process. Both are timed alike: many launches back to back, then a synchronize, wall clock divided
by the launches (a launch costs a few microseconds of the ~0.1-1 ms measured); medians of 5 rounds.
The inputs are uniform over a range where the function is defined and not saturated. Functions
torch does not have are marked as such; without torch the script says so and times ours alone.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from vyre_decl.ir import parse_program  # noqa: E402

# op name -> (low, high) of the inputs, and torch's name when it differs
CASES = {
    "exp": (-80.0, 80.0), "exp2": (-120.0, 120.0), "expm1": (-10.0, 80.0), "log": (1e-30, 1e30),
    "log2": (1e-30, 1e30), "log10": (1e-30, 1e30), "log1p": (-0.9, 1e6), "sin": (-100.0, 100.0),
    "cos": (-100.0, 100.0), "tan": (-100.0, 100.0), "asin": (-1.0, 1.0), "acos": (-1.0, 1.0),
    "atan": (-100.0, 100.0), "sinh": (-80.0, 80.0), "cosh": (-80.0, 80.0), "tanh": (-10.0, 10.0),
    "asinh": (-1e6, 1e6), "acosh": (1.0, 1e6), "atanh": (-0.99, 0.99), "erf": (-5.0, 5.0),
    "cbrt": (-1e6, 1e6), "rsqrt": (1e-6, 1e6), "rcp": (-1e6, 1e6),
    # two operands: the ranges of a and b
    "atan2": ((-100.0, 100.0), (-100.0, 100.0)), "hypot": ((-1e6, 1e6), (-1e6, 1e6)),
    "pow": ((0.01, 100.0), (-20.0, 20.0)),
}
TORCH_NAME = {"rcp": "reciprocal"}
NO_TORCH = {"cbrt"}


def timed(fn, reps: int, sync) -> float:
    fn()
    sync()
    rounds = []
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(reps):
            fn()
        sync()
        rounds.append((time.perf_counter() - t) / reps)
    return statistics.median(rounds)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1 << 26)
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--ops", default=",".join(CASES))
    ap.add_argument("--types", default="f32,f64")
    ap.add_argument("--dialect", default="primitive.float",
                    help="the dialect whose functions to time (e.g. a candidate on VYRE_DECL_OPS_PATH)")
    args = ap.parse_args()
    from vyre_decl.backends.cuda import CudaBackend
    from vyre_decl.registry import default_registry

    try:
        import torch
    except ImportError:
        torch = None
    cuda = CudaBackend()
    reg = default_registry()
    print(f"device: {cuda.device.name}; n = {args.n:,} elements; torch {torch.__version__ if torch else 'missing'}")
    print(f"{'function':10s} {'type':4s} {'vyre_decl':>11s} {'torch':>11s} {'ratio':>7s}   GB/s (ours)")
    rng = np.random.default_rng(1)
    for name in args.ops.split(","):
        op_id = f"{args.dialect}.{name}"
        if op_id not in reg:
            print(f"{name:10s} (not in the registry yet)")
            continue
        ranges = CASES[name] if isinstance(CASES[name][0], tuple) else (CASES[name],)
        arity = len(ranges)
        for t, np_t in (("f32", np.float32), ("f64", np.float64)):
            if t not in args.types.split(","):
                continue
            names = ["a", "b"][:arity]
            decls = "\n".join(f"buffer {n}: read {t}[] @{k}" for k, n in enumerate(names))
            program = parse_program(f"""program bench workgroup(256, 1, 1) {{
              {decls}
              buffer o: write {t}[len(a)] @{arity}
              let i = gid.x
              if i < len(o) {{ o[i] = {op_id}({", ".join(f"{n}[i]" for n in names)}) }}
            }}""")
            xs = [rng.uniform(lo, hi, args.n).astype(np_t) for lo, hi in ranges]
            bufs = [cuda.upload(x) for x in xs]
            o = cuda.allocate(t, args.n)
            pipe = cuda.compile(program)
            ours = timed(lambda: pipe.dispatch_resident(bufs + [o]), args.reps, cuda.synchronize)
            gbs = (arity + 1) * args.n * np.dtype(np_t).itemsize / ours / 1e9
            if torch is None or name in NO_TORCH:
                print(f"{name:10s} {t:4s} {ours * 1e3:9.3f}ms {'-':>11s} {'-':>7s}   {gbs:6.0f}"
                      + ("   (torch has no " + name + ")" if torch else ""))
            else:
                txs = [torch.as_tensor(x, device="cuda") for x in xs]
                ty = torch.empty_like(txs[0])
                fn = getattr(torch, TORCH_NAME.get(name, name))
                theirs = timed(lambda: fn(*txs, out=ty), args.reps, torch.cuda.synchronize)
                print(f"{name:10s} {t:4s} {ours * 1e3:9.3f}ms {theirs * 1e3:9.3f}ms {ours / theirs:6.2f}x   {gbs:6.0f}")
            for buf in bufs + [o]:
                cuda.free(buf)


if __name__ == "__main__":
    main()
