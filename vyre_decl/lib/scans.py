"""Scans with numpy's signature and rules: ``cumsum`` (int32 accumulates in int64, uint32 in
uint64, like numpy), ``cummin``/``cummax`` (numpy's ``minimum.accumulate``: a NaN propagates),
``exclusive_cumsum``. Along the whole flattened array a scan is one standard routine (the tiled
order of docs/routines.md); along one axis of an N-D array it is one generated program per call,
each row scanned in index order."""

from __future__ import annotations

from typing import Any

import numpy as np

from ._axes import norm_axes
from ._core import call, fail, intake, narrow_back, widen
from ._device import device_call, is_device
from ._rows import scan_rows
from .reductions import _acc

__all__ = ["cumsum", "exclusive_cumsum", "cummin", "cummax", "cumprod"]


def _scan(where: str, arr: np.ndarray, axis: Any, routine_id: str, name: str, backend: Any) -> np.ndarray:
    """``arr`` (a routine dtype) scanned along ``axis`` (None: flattened)."""
    if axis is None:
        flat = arr.ravel()
        if routine_id and flat.size:
            return np.asarray(call(where, routine_id, flat, backend=backend))
        return flat.copy() if not flat.size else scan_rows(where, name, flat.reshape(1, -1), 1, flat.size, backend)
    if isinstance(axis, tuple):
        raise fail("L004", where, f"axis={axis!r}: {where} takes one axis or None", "pass an int or None")
    (k,) = norm_axes(where, axis, arr.ndim) or (0,)
    moved = np.ascontiguousarray(np.moveaxis(arr, k, -1))
    cols = moved.shape[-1] if moved.ndim else 1
    rows = moved.size // cols if cols else 0
    if rows * cols == 0:
        return np.moveaxis(moved.copy(), -1, k)
    done = scan_rows(where, name, moved.reshape(rows, cols), rows, cols, backend).reshape(moved.shape)
    return np.moveaxis(done, -1, k)


def _out(where: str, result: np.ndarray, out: Any) -> Any:
    if out is None:
        return np.ascontiguousarray(result)
    from ._axes import finish
    return finish(where, result, result.shape, out)


def cumsum(x: Any, axis: Any = None, dtype: Any = None, out: Any = None, *, backend: Any = "auto") -> np.ndarray:
    """numpy.cumsum (flattened for axis=None); a device array gives a resident buffer."""
    if is_device(x):
        return device_call("cumsum", x, backend, axis, dtype=dtype, out=out)
    arr = _acc("cumsum", intake("cumsum", x), dtype)
    return _out("cumsum", _scan("cumsum", arr, axis, "scan.sum", "sum", backend), out)


def cumprod(x: Any, axis: Any = None, dtype: Any = None, out: Any = None, *, backend: Any = "auto") -> np.ndarray:
    """numpy.cumprod, in index order."""
    arr = _acc("cumprod", intake("cumprod", x), dtype)
    return _out("cumprod", _scan("cumprod", arr, axis, "", "prod", backend), out)


def exclusive_cumsum(x: Any, *, backend: Any = "auto") -> np.ndarray:
    """The exclusive prefix sum of the flattened ``x`` (``out[0] = 0``), in numpy's accumulator."""
    if is_device(x):
        return device_call("exclusive_cumsum", x, backend)
    arr = _acc("exclusive_cumsum", intake("exclusive_cumsum", x), None).ravel()
    return arr.copy() if not arr.size else np.asarray(call("exclusive_cumsum", "scan.exclusive_sum", arr, backend=backend))


def _extreme(where: str, x: Any, axis: Any, out: Any, backend: Any, largest: bool) -> Any:
    if is_device(x):
        return device_call(where, x, backend, axis, out=out)
    arr = intake(where, x)
    wide = widen(where, arr)
    if wide.dtype.kind == "f":
        rid = "lib.cummaximum" if largest else "lib.cumminimum"
    else:
        rid = "scan.max" if largest else "scan.min"
    done = _scan(where, wide, axis, rid, "max" if largest else "min", backend)
    return _out(where, narrow_back(done, arr.dtype), out)


def cummin(x: Any, axis: Any = None, out: Any = None, *, backend: Any = "auto") -> np.ndarray:
    """The running minimum (numpy.minimum.accumulate: a NaN propagates), flattened for axis=None."""
    return _extreme("cummin", x, axis, out, backend, False)


def cummax(x: Any, axis: Any = None, out: Any = None, *, backend: Any = "auto") -> np.ndarray:
    """The running maximum (numpy.maximum.accumulate: a NaN propagates), flattened for axis=None."""
    return _extreme("cummax", x, axis, out, backend, True)
