"""Routines on a GPU beside torch, CuPy and a device-to-device copy (a benchmark, not a test).

    python scripts/bench_routines.py [--sizes 16777216,67108864] [--reps 20] [--only reduce.,scan.sum]

Each routine runs as a prepared plan (``routine.plan``: inputs uploaded once, the launches
captured as one CUDA graph that also zeroes the outputs and temporaries; timed replays, then a
synchronize). Beside it, in the same process: torch's and CuPy's function on the same data
(skipped with a reason when missing) and a device-to-device copy of the input (torch's copy_),
whose GB/s is the roof. A routine's GB/s is the bytes it must read and write (inputs read once,
outputs written once) over its time; "of copy" divides that by the copy's (bytes read + written)
GB/s. matmul reports TFLOP/s against torch's fp32 matmul with TF32 off; softmax and the norms run
over rows of 4096 columns.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_math import timed  # noqa: E402 - the same timing rule as the math benchmark

COLS = 4096


@dataclass
class Bench:
    rid: str
    dtype: str                                    # the element type of the main input
    make: Callable[[int, np.random.Generator], tuple[list[np.ndarray], dict[str, int]]]
    moved: Callable[[list[np.ndarray], dict[str, int]], int]   # bytes read + written
    torch: Callable[..., Any] | None = None       # (torch module, *tensors) -> result
    cupy: Callable[..., Any] | None = None        # (cupy module, *arrays) -> result
    target: str = ""


def _x(dtype: str) -> Callable[[int, np.random.Generator], tuple[list[np.ndarray], dict[str, int]]]:
    def make(n: int, rng: np.random.Generator) -> tuple[list[np.ndarray], dict[str, int]]:
        if dtype.startswith("f"):
            return [rng.standard_normal(n).astype({"f32": np.float32, "f64": np.float64}[dtype])], {}
        if dtype == "u8":
            return [rng.integers(0, 256, n).astype(np.uint8)], {}
        return [rng.integers(0, 1 << 30, n).astype({"u32": np.uint32, "u64": np.uint64}[dtype])], {}
    return make


def _read(ins: list[np.ndarray], attrs: dict[str, int]) -> int:
    return sum(a.nbytes for a in ins)


def _read_write(ins: list[np.ndarray], attrs: dict[str, int]) -> int:
    return 2 * sum(a.nbytes for a in ins)


def _pairs(n: int, rng: np.random.Generator) -> tuple[list[np.ndarray], dict[str, int]]:
    return [rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32), rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)], {}


def _gather(n: int, rng: np.random.Generator) -> tuple[list[np.ndarray], dict[str, int]]:
    return [rng.standard_normal(n).astype(np.float32), rng.integers(0, n, n).astype(np.uint32)], {}


def _rows(extra: int) -> Callable[[int, np.random.Generator], tuple[list[np.ndarray], dict[str, int]]]:
    def make(n: int, rng: np.random.Generator) -> tuple[list[np.ndarray], dict[str, int]]:
        x = rng.standard_normal(n).astype(np.float32)
        return [x] + [rng.standard_normal(COLS).astype(np.float32) for _ in range(extra)], ({"cols": COLS} if not extra else {})
    return make


def _transpose(n: int, rng: np.random.Generator) -> tuple[list[np.ndarray], dict[str, int]]:
    return [rng.standard_normal(n).astype(np.float32)], {"rows": COLS, "cols": n // COLS}


def _matmul(n: int, rng: np.random.Generator) -> tuple[list[np.ndarray], dict[str, int]]:
    a, b = (rng.standard_normal(COLS * COLS).astype(np.float32) for _ in range(2))
    return [a, b], {"m": COLS, "k": COLS, "n": COLS}


def _crc(n: int, rng: np.random.Generator) -> tuple[list[np.ndarray], dict[str, int]]:
    return [rng.integers(0, 256, n).astype(np.uint8)], {"record": 4096}


def _find(n: int, rng: np.random.Generator) -> tuple[list[np.ndarray], dict[str, int]]:
    x = rng.integers(0, 200, n).astype(np.uint8)
    x[-1] = 250
    return [x], {"byte": 250}


def _hist(n: int, rng: np.random.Generator) -> tuple[list[np.ndarray], dict[str, int]]:
    return [rng.integers(0, 256, n).astype(np.uint32)], {"bins": 256}


def _scatter(n: int, rng: np.random.Generator) -> tuple[list[np.ndarray], dict[str, int]]:
    return [rng.standard_normal(n).astype(np.float32), rng.permutation(n).astype(np.uint32)], {"size": n}


RED = "reductions >= 85% of copy"
SCAN = "scans >= 70% of copy"
BENCHES = [
    Bench("reduce.sum", "f32", _x("f32"), _read, lambda t, x: t.sum(x), lambda c, x: c.sum(x), RED),
    Bench("reduce.sum", "f64", _x("f64"), _read, lambda t, x: t.sum(x), lambda c, x: c.sum(x), RED),
    Bench("reduce.sum", "u32", _x("u32"), _read, None, lambda c, x: c.sum(x, dtype=c.uint32), RED),
    Bench("reduce.min", "f32", _x("f32"), _read, lambda t, x: t.amin(x), lambda c, x: c.min(x), RED),
    Bench("reduce.max", "f32", _x("f32"), _read, lambda t, x: t.amax(x), lambda c, x: c.max(x), RED),
    Bench("reduce.and", "u32", _x("u32"), _read, None, None, RED),
    Bench("reduce.count", "f32", _x("f32"), _read, lambda t, x: t.count_nonzero(x), lambda c, x: c.count_nonzero(x), RED),
    Bench("reduce.any", "f32", _x("f32"), _read, lambda t, x: t.any(x), lambda c, x: c.any(x), RED),
    Bench("reduce.argmin", "f32", _x("f32"), _read, lambda t, x: t.argmin(x), lambda c, x: c.argmin(x), RED),
    Bench("reduce.mean", "f32", _x("f32"), _read, lambda t, x: t.mean(x), lambda c, x: c.mean(x), RED),
    Bench("reduce.var", "f32", _x("f32"), _read, lambda t, x: t.var(x, unbiased=False), lambda c, x: c.var(x), RED),
    Bench("linalg.dot", "f32", lambda n, r: (_x("f32")(n, r)[0] + _x("f32")(n, r)[0], {}), _read, lambda t, a, b: t.dot(a, b),
          lambda c, a, b: c.dot(a, b), RED),
    Bench("scan.sum", "f32", _x("f32"), _read_write, lambda t, x: t.cumsum(x, 0), lambda c, x: c.cumsum(x), SCAN),
    Bench("scan.sum", "u32", _x("u32"), _read_write, None, lambda c, x: c.cumsum(x, dtype=c.uint32), SCAN),
    Bench("scan.exclusive_sum", "f32", _x("f32"), _read_write, None, None, SCAN),
    Bench("scan.max", "f32", _x("f32"), _read_write, lambda t, x: t.cummax(x, 0), None, SCAN),
    Bench("data.compact", "f32", _x("f32"), _read_write, lambda t, x: t.nonzero(x), lambda c, x: c.flatnonzero(x)),
    Bench("data.gather", "f32", _gather, lambda i, a: 3 * i[0].nbytes, lambda t, s, i: s[i.long()], lambda c, s, i: c.take(s, i)),
    Bench("data.scatter", "f32", _scatter, lambda i, a: 3 * i[0].nbytes, None, None),
    Bench("data.histogram", "u32", _hist, _read, lambda t, x: t.bincount(x.long(), minlength=256),
          lambda c, x: c.bincount(x, minlength=256)),
    Bench("data.transpose", "f32", _transpose, _read_write, lambda t, x: x.view(COLS, -1).t().contiguous(),
          lambda c, x: c.ascontiguousarray(x.reshape(COLS, -1).T)),
    Bench("sort.radix", "u32", _x("u32"), _read_write, lambda t, x: t.sort(x), lambda c, x: c.sort(x),
          "radix sort <= 2x cupy.sort"),
    Bench("sort.radix_pairs", "u32", _pairs, _read_write, None, None),
    Bench("sort.topk", "u32", lambda n, r: (_x("u32")(n, r)[0], {"k": 100}), _read, None, None),
    Bench("linalg.matmul", "f32", _matmul, lambda i, a: 3 * i[0].nbytes, lambda t, a, b: a.view(COLS, COLS) @ b.view(COLS, COLS),
          lambda c, a, b: a.reshape(COLS, COLS) @ b.reshape(COLS, COLS), "matmul >= 40% of torch fp32 (TF32 off)"),
    Bench("nn.softmax", "f32", _rows(0), _read_write, lambda t, x: t.softmax(x.view(-1, COLS), 1), None,
          "softmax <= 1.5x torch"),
    Bench("nn.layer_norm", "f32", _rows(2), _read_write,
          lambda t, x, w, b: t.nn.functional.layer_norm(x.view(-1, COLS), (COLS,), w, b), None),
    Bench("nn.rms_norm", "f32", _rows(1), _read_write,
          lambda t, x, w: t.nn.functional.rms_norm(x.view(-1, COLS), (COLS,), w, 1e-6), None),
    Bench("nn.gelu", "f32", _x("f32"), _read_write, lambda t, x: t.nn.functional.gelu(x), None),
    Bench("nn.silu", "f32", _x("f32"), _read_write, lambda t, x: t.nn.functional.silu(x), None),
    Bench("bytes.histogram", "u8", _x("u8"), _read, lambda t, x: t.bincount(x, minlength=256),
          lambda c, x: c.bincount(x, minlength=256)),
    Bench("bytes.crc32", "u8", _crc, _read, None, None),
    Bench("bytes.find", "u8", _find, _read, lambda t, x: (x == 250).nonzero()[0], None),
]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default=f"{1 << 24},{1 << 26}")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--only", default="", help="comma-separated routine id prefixes")
    ap.add_argument("--profile", action="store_true", help="also time each launch of the selected routines alone")
    args = ap.parse_args()
    from vyre_decl.backends.cuda import CudaBackend
    from vyre_decl.routines import routine

    try:
        import torch
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    except ImportError:
        torch = None
    try:
        import cupy
    except ImportError:
        cupy = None
    cuda = CudaBackend()
    print(f"device: {cuda.device.name}; torch {torch.__version__ if torch else 'missing (skipped)'}; "
          f"cupy {cupy.__version__ if cupy else 'missing (skipped)'}")
    print(f"{'routine':18s} {'type':4s} {'n':>9s} {'vyre_decl':>10s} {'GB/s':>6s} {'of copy':>7s} {'torch':>9s} "
          f"{'cupy':>9s} {'vs best':>7s}  target")
    only = tuple(p for p in args.only.split(",") if p)
    rng = np.random.default_rng(1)
    for n in (int(s) for s in args.sizes.split(",")):
        copy_gbs = float("nan")
        if torch is not None:
            src = torch.empty(n, dtype=torch.float32, device="cuda")
            dst = torch.empty_like(src)
            copy_gbs = 2 * 4 * n / timed(lambda: dst.copy_(src), args.reps, torch.cuda.synchronize) / 1e9
            del src, dst
        print(f"-- n = {n}: device-to-device copy {copy_gbs:.0f} GB/s (read + written)")
        for b in BENCHES:
            if only and not b.rid.startswith(only):
                continue
            if b.rid == "linalg.matmul" and n != int(args.sizes.split(",")[0]):
                continue  # one size: 4096 x 4096
            inputs, attrs = b.make(n, rng)
            r = routine(b.rid)
            plan = r.plan(*inputs, backend=cuda, **attrs)
            for buf, arr in zip(plan.inputs, inputs):
                cuda.upload_at(buf, 0, arr)
            ours = timed(plan.replay, args.reps, cuda.synchronize)
            th = cu = None
            if torch is not None and b.torch is not None:
                tins = [torch.as_tensor(a.astype(np.int32) if a.dtype == np.uint32 and b.rid != "data.gather" else a,
                                        device="cuda") for a in inputs]
                th = timed(lambda: b.torch(torch, *tins), args.reps, torch.cuda.synchronize)
                del tins
            if cupy is not None and b.cupy is not None:
                cins = [cupy.asarray(a) for a in inputs]
                cu = timed(lambda: b.cupy(cupy, *cins), args.reps, cupy.cuda.Device().synchronize)
                del cins
            moved = b.moved(inputs, attrs)
            gbs = moved / ours / 1e9
            best = min(t for t in (th, cu) if t) if (th or cu) else None
            extra = ""
            if b.rid == "linalg.matmul":
                extra = f" {2 * COLS ** 3 / ours / 1e12:.1f} TFLOP/s" + (f", torch {2 * COLS ** 3 / th / 1e12:.1f}" if th else "")
            print(f"{b.rid:18s} {b.dtype:4s} {n:9d} {ours * 1e3:8.3f}ms {gbs:6.0f} {gbs / copy_gbs:6.0%} "
                  + (f"{th * 1e3:7.3f}ms" if th else f"{'-':>9s}") + " " + (f"{cu * 1e3:7.3f}ms" if cu else f"{'-':>9s}")
                  + (f" {ours / best:6.2f}x" if best else f"{'-':>8s}") + f"  {b.target}{extra}")
            if args.profile:
                profile(r, inputs, attrs, cuda, args.reps)
            plan.close()


def profile(r: Any, inputs: list[np.ndarray], attrs: dict[str, int], cuda: Any, reps: int) -> None:
    """Each launch of the routine timed alone (the same buffers, in order), summed by kernel."""
    bufs = [cuda.upload(a) for a in inputs]
    compiled = r.compiled([a.dtype for a in inputs], cuda.registry)
    sequence, env = compiled.resident_steps(cuda, bufs, attrs)
    sizes, scope = compiled.scope({s.name: a.size for s, a in zip(compiled.routine.inputs, inputs)}, attrs)
    names = [step.kernel for step, _, grid in compiled.steps(sizes, scope) if grid]
    totals: dict[str, list[float]] = {}
    for name, launch in zip(names, sequence.steps):
        t = timed(launch, reps, cuda.synchronize)
        totals.setdefault(name, []).append(t)
    for name, times in totals.items():
        print(f"    {name:14s} x{len(times):<3d} {sum(times) * 1e3:8.3f} ms")
    for b in list(env.values()):
        if not b.freed:
            cuda.free(b)


if __name__ == "__main__":
    main()
