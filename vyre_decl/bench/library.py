"""GPU cases of the standard library: routines (sum, scan, radix sort, compaction, histograms, matmul, softmax) against
the copy engine, CuPy and PyTorch with the routine issue's targets, and float functions against
PyTorch (informative). Routines run as prepared plans (one graph replay each)."""

from __future__ import annotations

import math
from ctypes import c_void_p
from typing import Any, Callable

import numpy as np

from .. import libcuda as cu
from .core import Row, skipped
from .device import EventTimer, cupy_module, cupy_seconds, torch_module, torch_seconds
from .kernels import map_program
from .rows import row_kernel_rows, transpose_row

__all__ = ["library_rows"]

_MATH = ("exp", "log", "sin", "tanh")


def library_rows(be: Any, timer: EventTimer, reps: int, quick: bool) -> list[Row]:
    from ..routines import routine

    log2n = 20 if quick else 26
    n, cols = 1 << log2n, 512 if quick else 4096
    rng = np.random.default_rng(0)
    torch, cupy = torch_module(), cupy_module()
    src, dst = be.allocate("f32", n), be.allocate("f32", n)
    copy, stream = cu.function("cuMemcpyDtoDAsync_v2"), c_void_p(be.stream_handle)
    copy_gbs = 2 * n * 4 / timer.median(lambda: copy(dst.ptr, src.ptr, n * 4, stream), reps) / 1e9
    be.free(src)
    be.free(dst)

    def plan_seconds(rid: str, inputs: list[np.ndarray], check: Callable[[np.ndarray], bool], **attrs: int) -> float:
        """The routine's median time as a prepared plan; its output after the timed replays must
        pass ``check`` (the bench measures only what computes the right thing)."""
        plan = routine(rid).plan(*inputs, backend=be, **attrs)
        try:
            for buf, arr in zip(plan.inputs, inputs):
                be.upload_at(buf, 0, arr)
            seconds = timer.median(plan.replay, reps)
            assert check(be.download(plan.outputs[0])), f"{rid}: the benchmarked plan's result is wrong"
            return seconds
        finally:
            plan.close()

    copy_name = "cuMemcpyDtoD (read + written)"
    x = rng.standard_normal(n).astype(np.float32)
    prefix = np.cumsum(x, dtype=np.float64)  # the f32 sums differ from it only by rounding
    bound = 1e-4 * np.cumsum(np.abs(x), dtype=np.float64)
    rows = [Row(f"reduce.sum f32 2^{log2n}, bytes read (GB/s)", n * 4 / plan_seconds(
                "reduce.sum", [x], lambda out: abs(float(out[0]) - prefix[-1]) <= bound[-1]) / 1e9,
                copy_name, copy_gbs, "GB/s", "higher", 0.85),
            Row(f"scan.sum f32 2^{log2n}, bytes read + written (GB/s)", 2 * n * 4 / plan_seconds(
                "scan.sum", [x], lambda out: bool((np.abs(out - prefix) <= bound).all())) / 1e9,
                copy_name, copy_gbs, "GB/s", "higher", 0.70)]
    xu = np.random.default_rng(2).integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)  # one pass (issue 28)
    rows.append(Row(f"scan.sum u32 2^{log2n}, bytes read + written (GB/s)", 2 * n * 4 / plan_seconds(
                "scan.sum", [xu], lambda out: np.array_equal(out, np.cumsum(xu, dtype=np.uint32))) / 1e9,
                copy_name, copy_gbs, "GB/s", "higher", 0.85))
    keys = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    ours = plan_seconds("sort.radix", [keys], lambda out: np.array_equal(out, np.sort(keys)))
    if cupy is not None:
        ck = cupy.asarray(keys)
        rows.append(Row(f"sort.radix u32 2^{log2n} (ms)", ours * 1e3, "cupy.sort", cupy_seconds(cupy, lambda: cupy.sort(ck), reps)
                        * 1e3, "ms", "lower", 1.0))
        del ck
    else:
        rows.append(skipped("sort.radix vs cupy.sort", "CuPy is not importable"))
    rows += _cooperative_rows(torch, cupy, plan_seconds, keys, copy_name, copy_gbs, reps, log2n)
    rows += _fuse_rows(be, timer, torch, x, copy_name, copy_gbs, reps, log2n)
    rows.append(transpose_row(plan_seconds, x, cols, copy_name, copy_gbs))
    rows += row_kernel_rows(torch, plan_seconds, x, cols, reps, log2n)
    if torch is not None:
        rows += _torch_rows(be, timer, torch, plan_seconds, x, cols, reps, log2n)
    else:
        rows.append(skipped("matmul, softmax, GELU, SiLU and float functions vs torch", "PyTorch with CUDA is not importable"))
    return rows


PlanSeconds = Callable[..., float]


def _torch_rows(be: Any, timer: EventTimer, torch: Any, plan_seconds: PlanSeconds, x: np.ndarray, cols: int,
                reps: int, log2n: int) -> list[Row]:
    """matmul and softmax (cols x cols), GELU and SiLU (all of x) against torch's, then the float
    functions."""
    rng = np.random.default_rng(1)
    a, b = (rng.standard_normal(cols * cols).astype(np.float32) for _ in range(2))
    ours = plan_seconds("linalg.matmul", [a, b], lambda out: _matmul_close(out, a, b, cols), m=cols, k=cols, n=cols)
    flops = 2 * cols**3
    torch.backends.cuda.matmul.allow_tf32 = False
    ta, tb = (torch.as_tensor(v, device="cuda").view(cols, cols) for v in (a, b))
    theirs = torch_seconds(torch, lambda: ta @ tb, reps)
    rows = [Row(f"linalg.matmul f32 {cols}^2 (TFLOP/s)", flops / ours / 1e12, "torch fp32 matmul, TF32 off",
                flops / theirs / 1e12, "TFLOP/s", "higher", 0.40)]
    tx = torch.as_tensor(x[: cols * cols], device="cuda").view(cols, cols)
    ours_sm = plan_seconds("nn.softmax", [x[: cols * cols]], lambda out: _softmax_close(out, x[: cols * cols], cols),
                           cols=cols)
    rows.append(Row(f"nn.softmax f32 {cols} x {cols} (ms)", ours_sm * 1e3, "torch softmax",
                    torch_seconds(torch, lambda: tx.softmax(1), reps) * 1e3, "ms", "lower", 1.5))
    assert _matmul_close((ta @ tb).cpu().numpy().reshape(-1), a, b, cols), "torch's matmul is wrong"
    assert _softmax_close(tx.softmax(1).cpu().numpy().reshape(-1), x[: cols * cols], cols), "torch's softmax is wrong"
    del ta, tb, tx
    rows += _activation_rows(torch, plan_seconds, x, reps, log2n)
    return rows + _math_rows(be, timer, torch, x.size, reps, log2n)


def _activation_rows(torch: Any, plan_seconds: PlanSeconds, x: np.ndarray, reps: int, log2n: int) -> list[Row]:
    """nn.gelu and nn.silu over all of x against torch's (target: no slower)."""
    step = max(1, x.size >> 16)  # checked on every step-th element
    xd = x[::step].astype(np.float64)
    want = {"gelu": 0.5 * xd * (1.0 + np.array([math.erf(v / math.sqrt(2.0)) for v in xd])),
            "silu": xd / (1.0 + np.exp(-xd))}
    tx = torch.as_tensor(x, device="cuda")
    rows = []
    for name, fn in (("gelu", torch.nn.functional.gelu), ("silu", torch.nn.functional.silu)):
        ref = want[name]
        ours = plan_seconds(f"nn.{name}", [x], lambda out: bool(np.allclose(out[::step], ref, rtol=1e-5, atol=1e-6)))
        rows.append(Row(f"nn.{name} f32 2^{log2n} (ms)", ours * 1e3, f"torch.nn.functional.{name}",
                        torch_seconds(torch, lambda: fn(tx), reps) * 1e3, "ms", "lower", 1.0))
    del tx
    return rows


def _cooperative_rows(torch: Any, cupy: Any, plan_seconds: PlanSeconds, keys: np.ndarray, copy_name: str,
                      copy_gbs: float, reps: int, log2n: int) -> list[Row]:
    """Issue 28's subgroup routines: sort.radix_pairs against CuPy's argsort + gather (target
    1.2x), data.compact against torch's boolean-mask selection (1.0x), and the histograms' input
    bandwidth against the copy (0.70 of it: about 2.1 TB/s on an H100)."""
    n, rng = keys.size, np.random.default_rng(2)
    vals = rng.standard_normal(n).astype(np.float32)
    want = keys[np.argsort(keys, kind="stable")]
    ours = plan_seconds("sort.radix_pairs", [keys, vals], lambda out: np.array_equal(out, want))
    rows = [skipped("sort.radix_pairs vs cupy.argsort + gather", "CuPy is not importable")]
    if cupy is not None:
        ck, cv = cupy.asarray(keys), cupy.asarray(vals)
        rows = [Row(f"sort.radix_pairs u32 + f32 2^{log2n} (ms)", ours * 1e3, "cupy.argsort + gather",
                    cupy_seconds(cupy, lambda: cv[cupy.argsort(ck)], reps) * 1e3, "ms", "lower", 1.2)]
        del ck, cv
    x = np.where(rng.random(n) < 0.5, rng.standard_normal(n), 0).astype(np.float32)
    kept = np.flatnonzero(x)
    ours = plan_seconds("data.compact", [x], lambda out: np.array_equal(out[: kept.size], kept))
    if torch is not None:
        tx = torch.as_tensor(x, device="cuda")
        tm = tx != 0
        assert torch.equal(tx[tm].cpu(), torch.as_tensor(x[kept])), "torch's selection is wrong"
        rows.append(Row(f"data.compact f32 2^{log2n}, half kept (ms)", ours * 1e3, "torch x[mask] (mask given)",
                        torch_seconds(torch, lambda: tx[tm], reps) * 1e3, "ms", "lower", 1.0))
        del tx, tm
    else:
        rows.append(skipped("data.compact vs torch x[mask]", "PyTorch with CUDA is not importable"))
    b = rng.integers(0, 256, 4 * n, dtype=np.uint8)
    hist = np.bincount(b, minlength=256)
    rows.append(Row(f"bytes.histogram 2^{log2n + 2} bytes, bytes read (GB/s)", b.size / plan_seconds(
        "bytes.histogram", [b], lambda out: np.array_equal(out, hist)) / 1e9, copy_name, copy_gbs, "GB/s", "higher", 0.70))
    v = rng.integers(0, 256, n, dtype=np.uint32)
    hist = np.bincount(v, minlength=256)
    rows.append(Row(f"data.histogram u32 2^{log2n}, 256 bins, bytes read (GB/s)", v.nbytes / plan_seconds(
        "data.histogram", [v], lambda out: np.array_equal(out, hist), bins=256) / 1e9, copy_name, copy_gbs, "GB/s",
        "higher", 0.70))
    return rows


def _fuse_rows(be: Any, timer: EventTimer, torch: Any, x: np.ndarray, copy_name: str, copy_gbs: float, reps: int,
               log2n: int) -> list[Row]:
    """Issue 29: ``lib.fuse`` of a five-step expression (mul, add, abs, sqrt, sub) over resident
    f32 buffers, as a prepared plan (one launch a replay, counted): its read + written bytes
    against the copy's (target 0.95), and its time against the same expression in torch eager
    (target 3x faster)."""
    from .. import lib
    y = np.random.default_rng(5).standard_normal(x.size).astype(np.float32)
    fused = lib.fuse(lambda a, b: lib.sqrt(lib.absolute(a * b + 1.0)) - 0.5)
    want = np.sqrt(np.abs(x * y + np.float32(1.0))) - np.float32(0.5)  # numpy's f32 loops: the same bits
    plan = fused.plan(x, y, backend=be)
    try:
        before = plan.pipeline.resident_launches
        ours = timer.median(plan.replay, reps)
        assert plan.pipeline.resident_launches - before == reps + 3, "lib.fuse: not one launch a call"
        assert np.array_equal(be.download(plan.outputs[0]), want), "lib.fuse: the benchmarked result is wrong"
    finally:
        plan.close()
    name = f"lib.fuse 5 steps f32 2^{log2n}"
    rows = [Row(f"{name}, bytes read + written (GB/s)", 3 * x.nbytes / ours / 1e9, copy_name, copy_gbs, "GB/s",
                "higher", 0.95)]
    if torch is None:
        return rows + [skipped(f"{name} vs torch eager", "PyTorch with CUDA is not importable")]
    tx, ty = torch.as_tensor(x, device="cuda"), torch.as_tensor(y, device="cuda")
    theirs = torch_seconds(torch, lambda: torch.sqrt(torch.abs(tx * ty + 1.0)) - 0.5, reps)
    got = (torch.sqrt(torch.abs(tx * ty + 1.0)) - 0.5).cpu().numpy()
    assert np.allclose(got, want, rtol=1e-6, atol=1e-7), "torch's expression is wrong"
    return rows + [Row(f"{name} (ms)", ours * 1e3, "torch eager (5 kernels)", theirs * 1e3, "ms", "lower", 1 / 3)]


def _matmul_close(out: np.ndarray, a: np.ndarray, b: np.ndarray, cols: int) -> bool:
    """Rows 0, 1 and the last of a @ b (row-major cols x cols) within f32 rounding of the f64 product."""
    am, bm, om = (v.reshape(cols, cols) for v in (a, b, out))
    rows = [0, 1, cols - 1]
    want = am[rows].astype(np.float64) @ bm.astype(np.float64)
    bound = 1e-5 * (np.abs(am[rows]).astype(np.float64) @ np.abs(bm).astype(np.float64))
    return bool((np.abs(om[rows] - want) <= bound).all())


def _softmax_close(out: np.ndarray, x: np.ndarray, cols: int) -> bool:
    """Each row of the softmax of x (row-major, cols columns) within 1e-5 relative of the f64 one."""
    xm = x.reshape(-1, cols).astype(np.float64)
    e = np.exp(xm - xm.max(axis=1, keepdims=True))
    want = e / e.sum(axis=1, keepdims=True)
    return bool((np.abs(out.reshape(-1, cols) - want) <= 1e-5 * want + 1e-12).all())


def _math_rows(be: Any, timer: EventTimer, torch: Any, n: int, reps: int, log2n: int) -> list[Row]:
    """Float functions over n f32 in resident buffers against torch's (informative: no target)."""
    x = np.linspace(0.5, 4.0, n, dtype=np.float32)
    a, out = be.upload(x), be.allocate("f32", n)
    tx = torch.as_tensor(x, device="cuda")
    ty = torch.empty_like(tx)
    rows = []
    for fn in _MATH:
        pipe = be.compile(map_program(f"primitive.float.{fn}", "f32"))
        ours = timer.median(lambda: pipe.dispatch_resident([a, out]), reps)
        theirs = torch_seconds(torch, lambda: getattr(torch, fn)(tx, out=ty), reps)
        want = getattr(np, fn)(x.astype(np.float64))  # both within a few f32 ULP of the true values
        for got in (be.download(out), ty.cpu().numpy()):
            assert np.allclose(got, want, rtol=4e-7, atol=0), f"{fn}: a benchmarked result is wrong"
        rows.append(Row(f"{fn} f32 2^{log2n} (ms)", ours * 1e3, f"torch.{fn}(out=)", theirs * 1e3, "ms", "lower",
                        note="correctly rounded or within the op's ulp; torch's CUDA functions are not"))
    be.free(a)
    be.free(out)
    return rows
