"""Routines on a GPU beside torch, CuPy and a device-to-device copy (a benchmark, not a test).

    python scripts/bench_routines.py [--sizes 16777216,67108864] [--reps 50]

Each routine runs over resident buffers (the input uploaded once; the steps enqueued back to back
as one dispatch sequence, built once, replayed; then a synchronize). Beside it, in the same
process: torch's and CuPy's function on the same data (skipped with a reason when missing) and a
device-to-device copy of the input (torch's copy_), whose GB/s is the roof. Ratios: a reduction's
GB/s (bytes read / time) against the copy's (bytes read + written / time).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_math import timed  # noqa: E402 - the same timing rule as the math benchmark

CASES = {"reduce.sum": ("sum", "sum"), "reduce.min": ("min", "min"), "reduce.max": ("max", "max")}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default=f"{1 << 24},{1 << 26}")
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--types", default="f32,u32,f64")
    args = ap.parse_args()
    from vyre_decl.backends.cuda import CudaBackend
    from vyre_decl.routines import routine

    try:
        import torch
    except ImportError:
        torch = None
    try:
        import cupy
    except ImportError:
        cupy = None
    cuda = CudaBackend()
    print(f"device: {cuda.device.name}; torch {torch.__version__ if torch else 'missing'}; "
          f"cupy {cupy.__version__ if cupy else 'missing'}")
    print(f"{'routine':11s} {'type':4s} {'n':>10s} {'vyre_decl':>10s} {'GB/s':>6s} {'copy GB/s':>9s} {'of copy':>7s} "
          f"{'torch':>9s} {'cupy':>9s}")
    np_types = {"f32": np.float32, "u32": np.uint32, "f64": np.float64, "i64": np.int64}
    for t in args.types.split(","):
        for n in (int(s) for s in args.sizes.split(",")):
            x = (np.random.default_rng(1).standard_normal(n) * 100).astype(np_types[t])
            buf = cuda.upload(x)
            tx = torch.as_tensor(x, device="cuda") if torch is not None and t != "u32" else None
            copy_s = None
            if tx is not None:
                ty = torch.empty_like(tx)
                copy_s = timed(lambda: ty.copy_(tx), args.reps, torch.cuda.synchronize)
            for rid, (tname, cname) in CASES.items():
                r = routine(rid)
                seq, bufs = r.compiled([x.dtype], cuda.registry).resident_steps(cuda, [buf], {})
                ours = timed(seq.run, args.reps, cuda.synchronize)
                got = cuda.download(bufs["out"])
                assert got.tobytes() == r(x, backend="reference").tobytes() or n > 1 << 24  # spot check (reference is slow)
                gbs = x.nbytes / ours / 1e9
                copy_gbs = 2 * x.nbytes / copy_s / 1e9 if copy_s else float("nan")
                th = timed(lambda: getattr(torch, tname)(tx), args.reps, torch.cuda.synchronize) if tx is not None else None
                cx = cupy.asarray(x) if cupy is not None else None
                cu = timed(lambda: getattr(cupy, cname)(cx), args.reps, cupy.cuda.Device().synchronize) if cx is not None else None
                print(f"{rid:11s} {t:4s} {n:10d} {ours * 1e3:8.3f}ms {gbs:6.0f} {copy_gbs:9.0f} {gbs / copy_gbs:6.0%} "
                      + (f"{th * 1e3:7.3f}ms" if th else f"{'-':>9s}") + " " + (f"{cu * 1e3:7.3f}ms" if cu else f"{'-':>9s}"))
                for name, b in bufs.items():
                    if name != "x":
                        cuda.free(b)
            cuda.free(buf)


if __name__ == "__main__":
    main()
