"""The row kernels (nn.softmax, nn.layer_norm, nn.rms_norm) at the widths where their strategy
changes: rows of up to 512 columns on a subgroup, up to 8,192 held in registers by a workgroup
(16 or 32 elements an invocation), longer ones read again in each pass. The reference agrees with
float64 numpy within the documented bounds, and on a GPU the CUDA backend gives the reference's
bits (marked gpu)."""

from __future__ import annotations

import numpy as np
import pytest

from routine_cases import same_bits
from vyre_decl.backends.cuda import cuda_available
from vyre_decl.routines import routine

GPU = pytest.mark.skipif(not cuda_available(), reason="no CUDA GPU: libcuda.so.1 cannot be loaded or reports no device")
# the edges of each strategy: narrow (<= 512), wide held (<= 4096 before, <= 8192 now), wide re-read
WIDTHS = [512, 513, 4096, 4097, 8192, 8193]
ROWS = 3


def _inputs(rid: str, cols: int) -> tuple[list[np.ndarray], dict[str, int]]:
    rng = np.random.default_rng(cols)
    x = (rng.standard_normal(ROWS * cols) * 4).astype(np.float32)
    w = rng.standard_normal(cols).astype(np.float32)
    if rid == "nn.softmax":
        return [x], {"cols": cols}
    if rid == "nn.layer_norm":
        return [x, w, rng.standard_normal(cols).astype(np.float32)], {}
    return [x, w], {}


def _numpy(rid: str, inputs: list[np.ndarray], cols: int) -> np.ndarray:
    x = inputs[0].astype(np.float64).reshape(ROWS, cols)
    if rid == "nn.softmax":
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return (e / e.sum(axis=1, keepdims=True)).ravel()
    w = inputs[1].astype(np.float64)
    if rid == "nn.layer_norm":
        m = x.mean(axis=1, keepdims=True)
        return ((x - m) / np.sqrt(((x - m) ** 2).mean(axis=1, keepdims=True) + 1e-5) * w
                + inputs[2].astype(np.float64)).ravel()
    return (x / np.sqrt((x * x).mean(axis=1, keepdims=True) + 1e-6) * w).ravel()


CASES = [(rid, cols) for rid in ("nn.softmax", "nn.layer_norm", "nn.rms_norm") for cols in WIDTHS]


@pytest.mark.parametrize("rid,cols", CASES)
def test_the_reference_agrees_with_numpy_at_every_width(rid, cols):
    inputs, attrs = _inputs(rid, cols)
    got = routine(rid)(*inputs, backend="reference", **attrs).astype(np.float64)
    want = _numpy(rid, inputs, cols)
    u = np.finfo(np.float32).eps / 2
    w_max = np.abs(inputs[1]).max(initial=0) if len(inputs) > 1 else 0.0
    bound = (8 * cols + 16) * u * (np.abs(want) + w_max) + 1e-30
    assert (np.abs(got - want) <= bound).all(), (rid, cols, float(np.abs(got - want).max()))


@pytest.mark.gpu
@GPU
@pytest.mark.parametrize("rid,cols", CASES)
def test_cuda_gives_the_reference_bits_at_every_width(rid, cols):
    inputs, attrs = _inputs(rid, cols)
    got = routine(rid)(*inputs, backend="cuda", **attrs)
    ref = routine(rid)(*inputs, backend="reference", **attrs)
    assert same_bits(got, ref), (rid, cols)
