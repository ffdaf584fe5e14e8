"""GPU cases of issue 28's row kernels and data movement against PyTorch and the copy: layer norm,
RMS norm and the variance against torch's (target: no slower), and the 2-D transpose's bytes read
+ written against the copy engine's (target 0.9). Routines run as prepared plans."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .core import Row, skipped
from .device import torch_seconds

__all__ = ["row_kernel_rows", "transpose_row"]

PlanSeconds = Callable[..., float]


def _close(out: np.ndarray, want: np.ndarray, rtol: float = 1e-4, atol: float = 1e-5) -> bool:
    return bool(np.allclose(out.reshape(want.shape), want, rtol=rtol, atol=atol))


def row_kernel_rows(torch: Any, plan_seconds: PlanSeconds, x: np.ndarray, cols: int, reps: int,
                    log2n: int) -> list[Row]:
    """nn.layer_norm and nn.rms_norm over cols x cols, reduce.var over all of x, each against torch."""
    if torch is None:
        return [skipped("layer norm, RMS norm and var vs torch", "PyTorch with CUDA is not importable")]
    F = torch.nn.functional
    m = x[: cols * cols]
    rng = np.random.default_rng(7)
    w, b = (rng.standard_normal(cols).astype(np.float32) for _ in range(2))
    xd = m.reshape(cols, cols).astype(np.float64)
    mean, var = xd.mean(axis=1, keepdims=True), xd.var(axis=1, keepdims=True)
    want_ln = (xd - mean) / np.sqrt(var + 1e-5) * w + b
    want_rms = xd / np.sqrt((xd * xd).mean(axis=1, keepdims=True) + 1e-6) * w
    tx, tw, tb = (torch.as_tensor(v, device="cuda") for v in (m, w, b))
    tx = tx.view(cols, cols)
    rows = [Row(f"nn.layer_norm f32 {cols} x {cols} (ms)", plan_seconds(
        "nn.layer_norm", [m, w, b], lambda out: _close(out, want_ln)) * 1e3, "torch layer_norm",
        torch_seconds(torch, lambda: F.layer_norm(tx, (cols,), tw, tb, 1e-5), reps) * 1e3, "ms", "lower", 1.0)]
    if hasattr(F, "rms_norm"):
        rows.append(Row(f"nn.rms_norm f32 {cols} x {cols} (ms)", plan_seconds(
            "nn.rms_norm", [m, w], lambda out: _close(out, want_rms)) * 1e3, "torch rms_norm",
            torch_seconds(torch, lambda: F.rms_norm(tx, (cols,), tw, 1e-6), reps) * 1e3, "ms", "lower", 1.0))
    else:
        rows.append(skipped("nn.rms_norm vs torch", "this torch has no rms_norm"))
    whole = torch.as_tensor(x, device="cuda")
    want_var = float(x.astype(np.float64).var())
    rows.append(Row(f"reduce.var f32 2^{log2n} (ms)", plan_seconds(
        "reduce.var", [x], lambda out: abs(float(out[0]) - want_var) <= 1e-4 * want_var) * 1e3,
        "torch.var (unbiased=False)", torch_seconds(torch, lambda: whole.var(unbiased=False), reps) * 1e3, "ms",
        "lower", 1.0))
    del tx, tw, tb, whole
    return rows


def transpose_row(plan_seconds: PlanSeconds, x: np.ndarray, cols: int, copy_name: str, copy_gbs: float) -> Row:
    """data.transpose of an f32 (n / cols) x cols matrix: bytes read + written against the copy's."""
    rows_n = x.size // cols
    m = x[: rows_n * cols]
    want = m.reshape(rows_n, cols).T.reshape(-1)
    seconds = plan_seconds("data.transpose", [m], lambda out: np.array_equal(out, want), rows=rows_n, cols=cols)
    return Row(f"data.transpose f32 {rows_n} x {cols}, bytes read + written (GB/s)", 2 * m.nbytes / seconds / 1e9,
               copy_name, copy_gbs, "GB/s", "higher", 0.90)
