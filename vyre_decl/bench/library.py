"""GPU cases of the standard library: routines (sum, scan, radix sort, matmul, softmax) against
the copy engine, CuPy and PyTorch with the routine issue's targets, and float functions against
PyTorch (informative). Routines run as prepared plans (one graph replay each)."""

from __future__ import annotations

from ctypes import c_void_p
from typing import Any

import numpy as np

from .. import libcuda as cu
from .core import Row, skipped
from .device import EventTimer, cupy_module, cupy_seconds, torch_module, torch_seconds
from .kernels import map_program

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

    def plan_seconds(rid: str, inputs: list[np.ndarray], **attrs: int) -> float:
        plan = routine(rid).plan(*inputs, backend=be, **attrs)
        try:
            for buf, arr in zip(plan.inputs, inputs):
                be.upload_at(buf, 0, arr)
            return timer.median(plan.replay, reps)
        finally:
            plan.close()

    copy_name = "cuMemcpyDtoD (read + written)"
    x = rng.standard_normal(n).astype(np.float32)
    rows = [Row(f"reduce.sum f32 2^{log2n}, bytes read (GB/s)", n * 4 / plan_seconds("reduce.sum", [x]) / 1e9,
                copy_name, copy_gbs, "GB/s", "higher", 0.85),
            Row(f"scan.sum f32 2^{log2n}, bytes read + written (GB/s)", 2 * n * 4 / plan_seconds("scan.sum", [x]) / 1e9,
                copy_name, copy_gbs, "GB/s", "higher", 0.70)]
    keys = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    ours = plan_seconds("sort.radix", [keys])
    if cupy is not None:
        ck = cupy.asarray(keys)
        rows.append(Row(f"sort.radix u32 2^{log2n} (ms)", ours * 1e3, "cupy.sort", cupy_seconds(cupy, lambda: cupy.sort(ck), reps)
                        * 1e3, "ms", "lower", 2.0))
        del ck
    else:
        rows.append(skipped("sort.radix vs cupy.sort", "CuPy is not importable"))
    a, b = (rng.standard_normal(cols * cols).astype(np.float32) for _ in range(2))
    ours = plan_seconds("linalg.matmul", [a, b], m=cols, k=cols, n=cols)
    flops = 2 * cols**3
    if torch is not None:
        torch.backends.cuda.matmul.allow_tf32 = False
        ta, tb = (torch.as_tensor(v, device="cuda").view(cols, cols) for v in (a, b))
        theirs = torch_seconds(torch, lambda: ta @ tb, reps)
        rows.append(Row(f"linalg.matmul f32 {cols}^2 (TFLOP/s)", flops / ours / 1e12, "torch fp32 matmul, TF32 off",
                        flops / theirs / 1e12, "TFLOP/s", "higher", 0.40))
        tx = torch.as_tensor(x[: cols * cols], device="cuda").view(cols, cols)
        ours_sm = plan_seconds("nn.softmax", [x[: cols * cols]], cols=cols)
        rows.append(Row(f"nn.softmax f32 {cols} x {cols} (ms)", ours_sm * 1e3, "torch softmax",
                        torch_seconds(torch, lambda: tx.softmax(1), reps) * 1e3, "ms", "lower", 1.5))
        del ta, tb, tx
        rows += _math_rows(be, timer, torch, n, reps, log2n)
    else:
        rows.append(skipped("matmul, softmax and float functions vs torch", "PyTorch with CUDA is not importable"))
    return rows


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
        rows.append(Row(f"{fn} f32 2^{log2n} (ms)", ours * 1e3, f"torch.{fn}(out=)", theirs * 1e3, "ms", "lower",
                        note="correctly rounded or within the op's ulp; torch's CUDA functions are not"))
    be.free(a)
    be.free(out)
    return rows
