"""numpy's ``axis``, ``keepdims`` and ``out`` for lib's reductions and scans: an axis argument
normalised to a sorted tuple of axes, an array viewed as (rows, cols) with the reduced axes last
(moved on the host: a copy, no arithmetic), and results shaped and stored the numpy way."""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from ._core import exact, fail

__all__ = ["norm_axes", "as_rows", "finish", "reduced_shape"]


def norm_axes(where: str, axis: Any, ndim: int) -> tuple[int, ...]:
    """``axis`` (None, an int, or a tuple of ints; negative counts from the end) as sorted axes; L004
    for an axis out of range, a repeated one, or a non-integer."""
    if axis is None:
        return tuple(range(ndim))
    items = axis if isinstance(axis, tuple) else (axis,)
    found: list[int] = []
    for a in items:
        if isinstance(a, (bool, np.bool_)):
            raise fail("L004", where, f"axis={axis!r} holds a bool", "pass axis as an int, a tuple of ints, or None")
        try:
            k = operator.index(a)
        except TypeError:
            raise fail("L004", where, f"axis={axis!r} is not an int, a tuple of ints or None",
                       "pass axis as an int, a tuple of ints, or None") from None
        if not -ndim <= k < max(ndim, 1) or (ndim == 0 and k not in (0, -1)):
            raise fail("L004", where, f"axis {k} is out of range for an array of {ndim} dimension(s)",
                       f"pass an axis in {-ndim} .. {ndim - 1}" if ndim else "pass axis=None for a 0-d array")
        k = k % ndim if ndim else 0
        if k in found:
            raise fail("L004", where, f"axis {k} is given twice in axis={axis!r}", "name each axis once")
        found.append(k)
    return tuple(sorted(found)) if ndim else ()


def as_rows(arr: np.ndarray, axes: tuple[int, ...]) -> tuple[np.ndarray, tuple[int, ...], int, int]:
    """``arr`` with the kept axes first and ``axes`` last, contiguous, as (rows, cols); also the
    kept shape."""
    kept = [k for k in range(arr.ndim) if k not in axes]
    moved = np.ascontiguousarray(np.transpose(arr, kept + list(axes)))
    kept_shape = tuple(arr.shape[k] for k in kept)
    rows = int(np.prod(kept_shape, dtype=np.int64))
    cols = int(np.prod([arr.shape[k] for k in axes], dtype=np.int64))
    return moved.reshape(rows, cols), kept_shape, rows, cols


def reduced_shape(shape: tuple[int, ...], axes: tuple[int, ...], keepdims: bool) -> tuple[int, ...]:
    if keepdims:
        return tuple(1 if k in axes else n for k, n in enumerate(shape))
    return tuple(n for k, n in enumerate(shape) if k not in axes)


def finish(where: str, values: np.ndarray, shape: tuple[int, ...], out: Any) -> Any:
    """``values`` in ``shape`` (a numpy scalar for shape ()), or written into ``out`` (L011 unless
    ``out`` is an ndarray of that shape whose dtype holds every result exactly)."""
    result = np.asarray(values).reshape(shape)
    if out is None:
        return result[()] if shape == () else result
    if not isinstance(out, np.ndarray) or out.shape != shape or not out.flags.writeable:
        got = f"shape {out.shape}" if isinstance(out, np.ndarray) else type(out).__name__
        raise fail("L011", where, f"out= is {got}; the result has shape {shape}",
                   f"pass a writeable numpy array of shape {shape} (or leave out=None)")
    if not exact(result.dtype, out.dtype):
        raise fail("L011", where, f"out= has dtype {out.dtype}, which does not hold every {result.dtype} result exactly",
                   f"pass out= of dtype {result.dtype} (or one that holds it exactly)")
    out[...] = result
    return out
