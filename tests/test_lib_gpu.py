"""lib on the CUDA backend gives the reference backend's bits (small sizes; runs on the simulated
H100 with VYRE_DECL_CUDA_SIM=h100, and on a GPU)."""

from __future__ import annotations

import numpy as np
import pytest

from lib_grid import same_bits, values
from vyre_decl import lib
from vyre_decl.backends.cuda import cuda_available

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not cuda_available(), reason="no CUDA GPU: libcuda.so.1 cannot be loaded or reports no device")]

CALLS = {
    "sum": lambda x, be: lib.sum(x, backend=be), "sum0": lambda x, be: lib.sum(x, axis=0, backend=be),
    "min": lambda x, be: lib.min(x, axis=-1, backend=be), "nanmax": lambda x, be: lib.nanmax(x, backend=be),
    "argmax": lambda x, be: lib.argmax(x, backend=be), "argmin1": lambda x, be: lib.argmin(x, axis=1, backend=be),
    "mean": lambda x, be: lib.mean(x, axis=0, backend=be), "std": lambda x, be: lib.std(x, axis=1, ddof=1, backend=be),
    "cumsum": lambda x, be: lib.cumsum(x, axis=1, backend=be), "cummax": lambda x, be: lib.cummax(x, backend=be),
    "sort": lambda x, be: lib.sort(x, backend=be), "exp": lambda x, be: lib.exp(x, backend=be),
    "fused": lambda x, be: lib.fuse(lambda a: lib.sin(a) * a + 1)(x, backend=be),
    "unique": lambda x, be: lib.unique(x, return_index=True, return_inverse=True, return_counts=True, backend=be),
    "searchsorted": lambda x, be: lib.searchsorted(np.sort(x.ravel()), x, side="right", backend=be),
    "argsort": lambda x, be: lib.argsort(x, axis=0, backend=be),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int8, np.uint32])
@pytest.mark.parametrize("name", sorted(CALLS))
def test_cuda_gives_the_reference_bits(name, dtype):
    x = values(dtype, (3, 5), 7)
    if np.dtype(dtype).kind == "f":
        x.flat[4] = np.nan
    try:
        want = CALLS[name](x, "reference")
    except Exception as e:  # refused on the reference: refused alike on CUDA
        with pytest.raises(type(e)):
            CALLS[name](x, "cuda")
        return
    got = CALLS[name](x, "cuda")
    pairs = zip(got, want) if isinstance(want, tuple) else [(got, want)]
    assert all(same_bits(g, w) for g, w in pairs), (name, got, want)


# ---------------------------------------------------------------- the whole lib grid, CUDA vs reference

import os  # noqa: E402

from lib_grid import DTYPES, axes_for, layouts  # noqa: E402
from vyre_decl.lib.elementwise import TABLE  # noqa: E402
from vyre_decl.ir.diagnostics import VyreError  # noqa: E402


def _one_axis(axis):
    return axis if not isinstance(axis, tuple) else axis[-1]


# every lib function but the elementwise ones: (x, axis, backend) -> result
AXIS_CALLS = {
    **{n: (lambda n: lambda x, a, be: getattr(lib, n)(x, axis=a, backend=be))(n)
       for n in ("sum", "prod", "min", "max", "nansum", "nanmin", "nanmax", "mean", "var", "std", "any", "all")},
    "sum_keepdims": lambda x, a, be: lib.sum(x, axis=a, keepdims=True, backend=be),
    "var_ddof1": lambda x, a, be: lib.var(x, axis=a, ddof=1, backend=be),
    "count_nonzero": lambda x, a, be: lib.count_nonzero(x, axis=a, backend=be),
    **{n: (lambda n: lambda x, a, be: getattr(lib, n)(x, axis=_one_axis(a), backend=be))(n)
       for n in ("argmin", "argmax", "nanargmin", "nanargmax", "cumsum", "cumprod", "cummin", "cummax")},
    "sort": lambda x, a, be: lib.sort(x, axis=_one_axis(a), backend=be),
    "argsort": lambda x, a, be: lib.argsort(x, axis=_one_axis(a), backend=be),
}
WHOLE_CALLS = {
    "exclusive_cumsum": lambda x, be: lib.exclusive_cumsum(x, backend=be),
    "topk": lambda x, be: lib.topk(x.ravel(), min(3, x.size), backend=be),
    "unique": lambda x, be: lib.unique(x, return_index=True, return_inverse=True, return_counts=True, backend=be),
    "searchsorted": lambda x, be: lib.searchsorted(np.sort(x.ravel()), x, side="right", backend=be),
    "take": lambda x, be: lib.take(x, np.array([-1, 0, x.size - 1]) if x.size else np.zeros(0, np.int64), backend=be),
    "nonzero": lambda x, be: lib.nonzero(x, backend=be),
    "scatter": lambda x, be: lib.scatter(x.ravel(), np.arange(x.size)[::-1], x.size, backend=be),
    "bincount": lambda x, be: lib.bincount(np.abs(x.ravel()).astype(np.int64) if x.dtype.kind != "f" else x, backend=be),
    "transpose": lambda x, be: lib.transpose(x, backend=be),
    "segment_sum": lambda x, be: lib.segment_sum(x.ravel(), np.array([0, x.size // 2, x.size]), backend=be),
    "dot": lambda x, be: lib.dot(x.ravel(), x.ravel(), backend=be),
    "matmul": lambda x, be: lib.matmul(x, np.swapaxes(x, -1, -2) if x.ndim > 1 else x, backend=be),
    **{n: (lambda n: lambda x, be: getattr(lib, n)(x, backend=be))(n)
       for n in ("softmax", "layer_norm", "rms_norm", "gelu", "silu", "byte_histogram", "crc32", "crc32c")},
    "find": lambda x, be: lib.find(x.tobytes(), 0, backend=be),
    "fuse": lambda x, be: lib.fuse(lambda a: lib.sin(a) * a + 1)(x, backend=be),
}
for _name, (_arity, _) in TABLE.items():  # the elementwise functions: x, its reverse, a third operand
    WHOLE_CALLS["ew_" + _name] = (lambda f, k: lambda x, be: f(*[x, x[::-1] if x.ndim else x, x][:k], backend=be))(
        getattr(lib, _name), _arity)

# The simulated device interprets PTX on the CPU: there a representative subset of (dtype, layout)
# runs by default (every function and every layout, with dtypes of each kind and width; every
# axis of each), the full grid with VYRE_DECL_LIB_GRID=full; on a GPU the full grid always runs.
FULL = not os.environ.get("VYRE_DECL_CUDA_SIM") or os.environ.get("VYRE_DECL_LIB_GRID") == "full"
_LAYOUTS = [name for name, _ in layouts(np.float32)]
SIM_PAIRS = [(np.float32, "0d"), (np.int64, "empty"), (np.float16, "empty2d"), (np.bool_, "1d"), (np.float64, "3d"),
             (np.int8, "strided"), (np.uint32, "bigendian")]
GRID = [(d, lay) for d in DTYPES for lay in _LAYOUTS] if FULL else SIM_PAIRS


def _grid_input(dtype, layout):
    arr = dict(layouts(dtype, seed=5))[layout]
    if np.dtype(dtype).kind == "f" and arr.size > 3:
        arr = arr.copy()
        arr.flat[1], arr.flat[-1], arr.flat[2] = np.nan, -0.0, np.inf
    return arr


def _outcome(fn):
    """The value, or "refused: " and the VyreError's code (numpy's own errors: their type)."""
    try:
        return fn()
    except VyreError as e:
        return "refused: " + e.diagnostics[0].code
    except (ValueError, TypeError, IndexError) as e:
        return "refused: " + type(e).__name__


def _check(name, got, want):
    if isinstance(want, str) or isinstance(got, str):
        assert isinstance(got, str) and got == want, (name, got, want)
        return
    pairs = list(zip(got, want)) if isinstance(want, tuple) else [(got, want)]
    assert all(same_bits(g, w) for g, w in pairs), (name, got, want)


@pytest.mark.parametrize("dtype, layout", GRID, ids=[f"{np.dtype(d).name}-{lay}" for d, lay in GRID])
def test_the_lib_grid_bit_for_bit(dtype, layout):
    """Every lib function over the grid of tests/lib_grid.py (each dtype x 0-d, empty, odd, 3-D,
    non-contiguous, big-endian x axes, with NaN, -0.0 and inf among the floats): CUDA's result has
    the reference backend's bits, or both refuse with the same error code."""
    if layout not in dict(layouts(dtype)):
        pytest.skip("no big-endian layout of a one-byte type")
    x = _grid_input(dtype, layout)
    for axis in axes_for(x.ndim):
        for name, fn in AXIS_CALLS.items():
            _check((name, axis), _outcome(lambda: fn(x, axis, "cuda")), _outcome(lambda: fn(x, axis, "reference")))
    for name, fn in WHOLE_CALLS.items():
        _check(name, _outcome(lambda: fn(x, "cuda")), _outcome(lambda: fn(x, "reference")))
