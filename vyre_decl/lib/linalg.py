"""Linear algebra and NN blocks like numpy: ``dot`` and ``matmul`` (numpy's shape rules: no
flattening; matmul broadcasts batch dimensions), softmax along an axis, layer and RMS norms over
the last axis, GELU and SiLU. Each product or row is a standard routine (linalg.*, nn.*)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ._core import F32, F64, call, fail, intake, widen_to

__all__ = ["dot", "matmul", "softmax", "layer_norm", "rms_norm", "gelu", "silu"]


def _floats(where: str, x: Any, name: str = "x") -> np.ndarray:
    return widen_to(where, intake(where, x, name), [F32, F64], name)


def _common(where: str, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    t = np.result_type(a.dtype, b.dtype)
    return a.astype(t, copy=False), b.astype(t, copy=False)


def matmul(a: Any, b: Any, *, backend: Any = "auto") -> np.ndarray:
    """numpy.matmul (``a @ b``) of float arrays: 1-D operands are promoted and the added axis
    removed, batch dimensions broadcast; each element is an fma chain over k in increasing order."""
    x, y = _common("matmul", _floats("matmul", a, "a"), _floats("matmul", b, "b"))
    if x.ndim == 0 or y.ndim == 0:
        raise fail("L009", "matmul", "matmul does not take 0-d operands", "use lib.multiply for scalars")
    xs = x.reshape(1, -1) if x.ndim == 1 else x
    ys = y.reshape(-1, 1) if y.ndim == 1 else y
    m, k = xs.shape[-2:]
    k2, n = ys.shape[-2:]
    if k != k2:
        raise fail("L009", "matmul", f"shapes {x.shape} and {y.shape} do not chain ({k} != {k2})",
                   "pass a (..., m, k) and b (..., k, n)")
    try:
        batch = np.broadcast_shapes(xs.shape[:-2], ys.shape[:-2])
    except ValueError:
        raise fail("L009", "matmul", f"batch shapes {xs.shape[:-2]} and {ys.shape[:-2]} do not broadcast",
                   "pass batch dimensions that broadcast") from None
    xb = np.broadcast_to(xs, batch + (m, k)).reshape(-1, m, k)
    yb = np.broadcast_to(ys, batch + (k, n)).reshape(-1, k, n)
    out = np.zeros((xb.shape[0], m, n), x.dtype)
    if m and n and k:
        for i in range(xb.shape[0]):
            out[i] = np.asarray(call("matmul", "linalg.matmul", np.ascontiguousarray(xb[i]), np.ascontiguousarray(yb[i]),
                                     backend=backend, m=m, k=k, n=n)).reshape(m, n)
    shape = batch + ((m,) if x.ndim > 1 else ()) + ((n,) if y.ndim > 1 else ())
    result = out.reshape(shape)
    return result[()] if shape == () else result  # type: ignore[no-any-return]


def dot(a: Any, b: Any, *, backend: Any = "auto") -> Any:
    """numpy.dot: vectors give their dot product (the order of reduce.sum; integers too), 2-D
    operands a matrix product, one N-D operand with a vector or matrix numpy's sum over the last
    axis of a and the second-to-last of b."""
    x, y = intake("dot", a, "a"), intake("dot", b, "b")
    if x.ndim == 1 and y.ndim == 1:
        if x.size != y.size:
            raise fail("L009", "dot", f"vectors of {x.size} and {y.size} elements", "pass vectors of one length")
        t = np.result_type(x.dtype, y.dtype)
        from ._core import widen
        xx = widen("dot", x.astype(t, copy=False))
        return call("dot", "linalg.dot", xx, y.astype(xx.dtype), backend=backend)[0]
    if x.ndim == 0 or y.ndim == 0:
        from .elementwise import FUNCTIONS
        return FUNCTIONS["multiply"](x, y, backend=backend)
    if y.ndim <= 2:
        return matmul(x, y, backend=backend)
    raise fail("L009", "dot", f"dot of shapes {x.shape} and {y.shape} (b with more than 2 dimensions)",
               "use lib.matmul (batched) for stacks of matrices")


def _rows(where: str, x: Any) -> np.ndarray:
    arr = _floats(where, x)
    if arr.ndim < 1 or arr.shape[-1] < 1:
        raise fail("L009", where, f"expected at least one column, got shape {arr.shape}",
                   "pass an array whose last axis is not empty")
    return arr


def softmax(x: Any, axis: int = -1, *, backend: Any = "auto") -> np.ndarray:
    """Softmax along ``axis`` (default the last), as scipy.special.softmax."""
    arr = _rows("softmax", x)
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)) or not -arr.ndim <= axis < arr.ndim:
        raise fail("L004", "softmax", f"axis={axis!r} is not an axis of a {arr.ndim}-D array", "pass an int axis")
    moved = np.ascontiguousarray(np.moveaxis(arr, int(axis), -1))
    if moved.shape[-1] == 0 or not moved.size:
        return moved
    got = call("softmax", "nn.softmax", moved, backend=backend, cols=moved.shape[-1])
    return np.ascontiguousarray(np.moveaxis(np.asarray(got).reshape(moved.shape), -1, int(axis)))


def layer_norm(x: Any, weight: Any = None, bias: Any = None, *, backend: Any = "auto") -> np.ndarray:
    """Layer norm over the last axis, eps 1e-5 (torch's default), with optional weight and bias."""
    arr = _rows("layer_norm", x)
    cols = arr.shape[-1]
    w = np.ones(cols, arr.dtype) if weight is None else _floats("layer_norm", weight, "weight").astype(arr.dtype)
    b = np.zeros(cols, arr.dtype) if bias is None else _floats("layer_norm", bias, "bias").astype(arr.dtype)
    if w.shape != (cols,) or b.shape != (cols,):
        raise fail("L009", "layer_norm", f"weight/bias of shapes {w.shape}, {b.shape} for {cols} columns",
                   f"pass weight and bias of shape ({cols},)")
    return np.asarray(call("layer_norm", "nn.layer_norm", arr, w, b, backend=backend)).reshape(arr.shape)


def rms_norm(x: Any, weight: Any = None, *, backend: Any = "auto") -> np.ndarray:
    """RMS norm over the last axis, eps 1e-6, with an optional weight."""
    arr = _rows("rms_norm", x)
    cols = arr.shape[-1]
    w = np.ones(cols, arr.dtype) if weight is None else _floats("rms_norm", weight, "weight").astype(arr.dtype)
    if w.shape != (cols,):
        raise fail("L009", "rms_norm", f"weight of shape {w.shape} for {cols} columns", f"pass weight of shape ({cols},)")
    return np.asarray(call("rms_norm", "nn.rms_norm", arr, w, backend=backend)).reshape(arr.shape)


def _activation(where: str, x: Any, backend: Any) -> np.ndarray:
    arr = _floats(where, x)
    if not arr.size:
        return arr.copy()
    return np.asarray(call(where, f"nn.{where}", arr, backend=backend)).reshape(arr.shape)


def gelu(x: Any, *, backend: Any = "auto") -> np.ndarray:
    """GELU, the erf form (torch's default), elementwise."""
    return _activation("gelu", x, backend)


def silu(x: Any, *, backend: Any = "auto") -> np.ndarray:
    """SiLU (x * sigmoid(x)), elementwise."""
    return _activation("silu", x, backend)
