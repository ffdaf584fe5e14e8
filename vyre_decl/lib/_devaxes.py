"""Device arrays along axes, without a trip through the host: an N-D C-contiguous device array folded
over a run of adjacent axes, its mean/var/std (any ddof) over such a run or the whole array, or
scanned along one axis. The ``data.transpose`` routine brings the axes last on the device (the
array viewed as (P, R, Q), R the axes: one transpose of (P R) x Q gives (Q, P, R)), the rows program
of lib/_rows.py that the host path runs on its own moved copy folds or scans each row in index
order (so the host's bits), and a transpose of the outputs puts them back in C order. Axes that are
not adjacent stay L022 (two runs cannot be brought together by whole-buffer transposes)."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..routines import routine
from ._axes import norm_axes
from ._core import fail
from ._device import DEVICE_ROUTINES, resident
from ._fusedev import device_leaf, prepare
from ._kernel import _parsed, storage_type, value_type
from ._rows import fold_text, moments_text, scan_text

__all__ = ["axis_fold", "axis_moments", "axis_scan", "ROW_FOLDS", "ROW_SCANS"]

ROW_FOLDS = {"sum": "sum", "prod": "prod", "min": "min", "max": "max", "nanmin": "nanmin", "nanmax": "nanmax"}
ROW_SCANS = {"cumsum": "sum", "cummin": "min", "cummax": "max"}
_STD = ("float32", "float64")  # std takes floats as they are, as mean and var do


def _size(shape: tuple[int, ...]) -> int:
    return int(np.prod(shape, dtype=np.int64))


def _transposed(buf: Any, rows: int, cols: int, be: Any) -> Any:
    """``buf`` (rows x cols, row-major) transposed on the device (a buffer the caller frees)."""
    return routine("data.transpose").resident(buf, backend=be, rows=rows, cols=cols)


def _leaf(where: str, x: Any, backend: Any) -> tuple[Any, Any, np.dtype, tuple[int, ...]]:
    """(the resident buffer, the backend, the dtype, the shape) of a device array."""
    value, dtype, shape = device_leaf(where, x, backend)
    buf, be = resident(where, value, backend)
    takes = DEVICE_ROUTINES[where][2] if where in DEVICE_ROUTINES else _STD
    if dtype.name not in takes:
        raise fail("L021", where, f"lib.{where} of a device array of {dtype} along axes (on the device: "
                   f"{', '.join(takes)})", "pass a device array of one of those types, or download it and call "
                   "lib on the host copy (which widens exactly)")
    return buf, be, dtype, shape


def _run(where: str, be: Any, text: str | None, src: Any, out_type: str, count: int) -> Any:
    """The generated program ``text`` over ``src`` on the device: its one output buffer."""
    plan = prepare(where, _parsed(text) if count and text else None, [src], [out_type], count, be)
    plan.replay()
    out = plan.release_outputs()[0]
    plan.close()
    return out


def _rows_moved(where: str, be: Any, buf: Any, p: int, r: int, q: int, text: str | None, out_type: str,
                per_row: int) -> Any:
    """The rows program ``text`` (P Q rows of R elements, ``per_row`` outputs each) over ``buf``
    viewed as (P, R, Q): one transpose of (P R) x Q brings R last ((Q, P, R); none where Q is 1 or
    the array is empty), and one of the outputs (Q, P per_row) puts them in C order (P per_row, Q)."""
    owned: list[Any] = []
    try:
        moved = buf
        if q > 1 and p * r * q:
            moved = _transposed(buf, p * r, q, be)
            owned.append(moved)
        found = _run(where, be, text, moved, out_type, p * q * per_row)
        if moved is not buf and p * per_row > 1:
            owned.append(found)
            found = _transposed(found, q, p * per_row, be)
        return found
    finally:
        for b in owned:
            if not b.freed:
                b.free()


def _over_run(where: str, x: Any, backend: Any, axes: tuple[int, ...], out_type: Callable[[np.dtype], str],
              text: Callable[[np.dtype, int, int], str]) -> Any:
    """The rows program ``text(dtype, rows, cols)`` over the axes ``axes`` (adjacent) moved last:
    a resident buffer of the outputs in C order of the kept axes."""
    buf, be, dtype, shape = _leaf(where, x, backend)
    if 0 < len(axes) < len(shape) and axes != tuple(range(axes[0], axes[-1] + 1)):
        raise fail("L022", where, f"lib.{where} of a device array of shape {shape} over axes {axes}, which are not "
                   "adjacent (on the device: one run of adjacent axes, or every axis)",
                   "reduce over adjacent axes (one call per run, moving axes on the device first), or download the "
                   "array and call lib on the host copy")
    if len(axes) == len(shape):  # every axis (a 0-d array included): one row
        p, r, q = 1, _size(shape), 1
    elif not axes:  # no axis: every element its own row
        p, r, q = _size(shape), 1, 1
    else:
        p, r, q = _size(shape[:axes[0]]), _size(shape[axes[0]:axes[-1] + 1]), _size(shape[axes[-1] + 1:])
    return _rows_moved(where, be, buf, p, r, q, text(dtype, p * q, r), out_type(dtype), 1)


def axis_fold(where: str, x: Any, backend: Any, axis: Any) -> Any:
    """``lib.<where>`` (a ROW_FOLDS name) of an N-D device array over ``axis``: every axis, the
    whole-array routine (as on the host); one run of adjacent axes, the host's rows program."""
    from ._device import device_call
    _, dtype, shape = device_leaf(where, x, backend)
    axes = norm_axes(where, axis, len(shape))
    if len(axes) == len(shape):
        return device_call(where, x, backend)
    if where in ("min", "max", "nanmin", "nanmax") and 0 in [shape[a] for a in axes]:
        raise fail("L005", where, f"{where} over empty axes has no value", "pass at least one element along them")
    return _over_run(where, x, backend, axes, storage_type,
                     lambda dt, rows, cols: fold_text(ROW_FOLDS[where], dt, rows, cols))


def axis_moments(where: str, x: Any, backend: Any, axis: Any, ddof: int, **unsupported: Any) -> Any:
    """``lib.mean``/``var``/``std`` of a device array over ``axis`` (None: every axis) with
    ``ddof``: over every axis, mean and var with ddof 0 are the routines reduce.mean/reduce.var,
    anything else the rows program, as on the host."""
    from ._device import device_call
    _, _, shape = device_leaf(where, x, backend)
    axes = norm_axes(where, axis, len(shape))
    if (where == "mean" or (where == "var" and ddof == 0)) and len(axes) == len(shape):
        return device_call(where, x, backend, **unsupported)
    if any(v not in (None, False) for v in unsupported.values()):
        return device_call(where, x, backend, **unsupported)  # L022 naming them
    return _over_run(where, x, backend, axes, value_type,
                     lambda dt, rows, cols: moments_text(where, dt, rows, cols, ddof))


def axis_scan(where: str, x: Any, backend: Any, axis: Any) -> Any:
    """``lib.<where>`` (a ROW_SCANS name) of an N-D device array along one axis: the host's rows
    scan (each line along the axis in index order), the result in the array's C order."""
    buf, be, dtype, shape = _leaf(where, x, backend)
    if isinstance(axis, tuple):
        raise fail("L004", where, f"axis={axis!r}: {where} takes one axis or None", "pass an int or None")
    (k,) = norm_axes(where, axis, len(shape)) or (0,)
    p, n, q = _size(shape[:k]), shape[k] if shape else 1, _size(shape[k + 1:])
    return _rows_moved(where, be, buf, p, n, q, scan_text(ROW_SCANS[where], dtype, p * q, n), storage_type(dtype), n)
