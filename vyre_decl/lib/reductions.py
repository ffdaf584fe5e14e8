"""Reductions with numpy's signature (``axis``, ``keepdims``, ``dtype``, ``out``, ``ddof``) and
numpy's rules (NaN propagates through min/max/argmin/argmax; the nan* functions skip NaNs; empty
reductions without an identity raise; int32 sums accumulate in int64). Over every axis a
reduction is one standard routine (the tree order of docs/routines.md); over some of the axes it
is one generated program folding each output's elements in index order (lib/_rows.py)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ._axes import as_rows, finish, norm_axes, reduced_shape
from ._core import F32, F64, I64, ROUTINE_DTYPES, U64, call, exact, fail, intake, is_bf16, narrow_back, widen, widen_to
from ._device import device_call, is_device
from ._rows import arg_rows, fold_rows, moments_rows

__all__ = ["sum", "prod", "min", "max", "nansum", "nanmin", "nanmax", "mean", "var", "std", "count_nonzero", "any",
           "all", "argmin", "argmax", "nanargmin", "nanargmax"]


def _acc(where: str, arr: np.ndarray, dtype: Any, floats_only: bool = False) -> np.ndarray:
    """``arr`` widened exactly to the accumulator: ``dtype`` when given (L010 unless it holds every
    value exactly), else numpy's (bool/int8..32 -> int64, uint8..32 -> uint64, float16 -> float32;
    for the means every integer -> float64)."""
    if dtype is not None:
        try:
            want = np.dtype(dtype)
        except TypeError:
            raise fail("L010", where, f"dtype={dtype!r} is not a numpy dtype", "pass a numpy dtype such as np.float64") from None
        if want not in ROUTINE_DTYPES or not exact(arr.dtype, want) or (floats_only and want.kind != "f"):
            raise fail("L010", where, f"dtype={want} cannot hold every {arr.dtype} value exactly"
                       f"{' or is not a float' if floats_only else ''}",
                       "leave dtype out (numpy's accumulator) or pass a wider type of "
                       f"{', '.join(d.name for d in ROUTINE_DTYPES if exact(arr.dtype, d))}")
        return arr.astype(want) if arr.dtype != want else arr
    if floats_only:
        return widen_to(where, arr, [F32, F64] if (arr.dtype.kind == "f" or is_bf16(arr.dtype)) else [F64])
    if arr.dtype.kind == "b" or arr.dtype.kind == "i":
        return widen_to(where, arr, [I64])
    if arr.dtype.kind == "u":
        return widen_to(where, arr, [U64])
    return widen_to(where, arr, [F32, F64])


def _split(where: str, x: Any, axis: Any) -> tuple[np.ndarray, tuple[int, ...]]:
    arr = intake(where, x)
    return arr, norm_axes(where, axis, arr.ndim)


def _fold(where: str, arr: np.ndarray, axes: tuple[int, ...], whole: str, name: str, keepdims: bool, out: Any,
          backend: Any, empty_raises: bool = False) -> Any:
    """One fold: the routine ``whole`` over every element, else the generated rows program."""
    shape = reduced_shape(arr.shape, axes, keepdims)
    rows2, _, rows, cols = as_rows(arr, axes)
    if empty_raises and cols == 0:
        raise fail("L005", where, f"{where} of an empty selection has no value (shape {arr.shape}, axis {axes})",
                   "pass at least one element along the reduced axes (numpy raises here too)")
    if len(axes) == arr.ndim:
        value = call(where, whole, rows2.ravel(), backend=backend)
    elif rows == 0:
        value = np.zeros(0, arr.dtype)
    else:
        value = fold_rows(where, name, rows2, rows, cols, backend)
    return finish(where, value, shape, out)


def sum(x: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False, *,  # noqa: A001
        backend: Any = "auto") -> Any:
    """numpy.sum: integers accumulate in int64/uint64 unless ``dtype`` says otherwise (then they wrap);
    floats in the fixed order (every axis: docs/routines.md; some axes: index order)."""
    if is_device(x):
        return device_call("sum", x, backend, axis, dtype=dtype, out=out, keepdims=keepdims)
    arr, axes = _split("sum", x, axis)
    return _fold("sum", _acc("sum", arr, dtype), axes, "reduce.sum", "sum", keepdims, out, backend)


def nansum(x: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False, *,
           backend: Any = "auto") -> Any:
    """numpy.nansum: NaNs count as zero; always in index order (one program per output element)."""
    arr, axes = _split("nansum", x, axis)
    acc = _acc("nansum", arr, dtype)
    shape = reduced_shape(arr.shape, axes, keepdims)
    rows2, _, rows, cols = as_rows(acc, axes)
    value = np.zeros(0, acc.dtype) if rows == 0 else fold_rows("nansum", "nansum", rows2, rows, cols, backend)
    return finish("nansum", value, shape, out)


def prod(x: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False, *,
         backend: Any = "auto") -> Any:
    """numpy.prod (integers accumulate in int64/uint64 and wrap there, as numpy's do)."""
    if is_device(x):
        return device_call("prod", x, backend, axis, dtype=dtype, out=out, keepdims=keepdims)
    arr, axes = _split("prod", x, axis)
    return _fold("prod", _acc("prod", arr, dtype), axes, "reduce.prod", "prod", keepdims, out, backend)


def _extreme(where: str, x: Any, axis: Any, out: Any, keepdims: bool, backend: Any, kind: str) -> Any:
    if is_device(x):
        return device_call(where, x, backend, axis, out=out, keepdims=keepdims)
    arr, axes = _split(where, x, axis)
    wide = widen(where, arr)
    names = {"min": ("lib.minimum", "reduce.min"), "max": ("lib.maximum", "reduce.max"),
             "nanmin": ("lib.nanmin", "reduce.min"), "nanmax": ("lib.nanmax", "reduce.max")}[kind]
    whole = names[0] if wide.dtype.kind == "f" else names[1]
    result = _fold(where, wide, axes, whole, kind, keepdims, None, backend, empty_raises=True)
    return finish(where, narrow_back(np.asarray(result), arr.dtype), reduced_shape(arr.shape, axes, keepdims), out)


def min(x: Any, axis: Any = None, out: Any = None, keepdims: bool = False, *, backend: Any = "auto") -> Any:  # noqa: A001
    """numpy.min: a NaN anywhere in the selection gives NaN; L005 when the selection is empty."""
    return _extreme("min", x, axis, out, keepdims, backend, "min")


def max(x: Any, axis: Any = None, out: Any = None, keepdims: bool = False, *, backend: Any = "auto") -> Any:  # noqa: A001
    """numpy.max: a NaN anywhere in the selection gives NaN; L005 when the selection is empty."""
    return _extreme("max", x, axis, out, keepdims, backend, "max")


def nanmin(x: Any, axis: Any = None, out: Any = None, keepdims: bool = False, *, backend: Any = "auto") -> Any:
    """numpy.nanmin: NaNs are skipped (NaN when all are NaN); L005 when the selection is empty."""
    return _extreme("nanmin", x, axis, out, keepdims, backend, "nanmin")


def nanmax(x: Any, axis: Any = None, out: Any = None, keepdims: bool = False, *, backend: Any = "auto") -> Any:
    """numpy.nanmax: NaNs are skipped (NaN when all are NaN); L005 when the selection is empty."""
    return _extreme("nanmax", x, axis, out, keepdims, backend, "nanmax")


def _moments(where: str, x: Any, axis: Any, dtype: Any, out: Any, keepdims: bool, ddof: Any, backend: Any) -> Any:
    if isinstance(ddof, (bool, np.bool_)) or not isinstance(ddof, (int, np.integer)) or ddof < 0:
        raise fail("L012", where, f"ddof={ddof!r} is not a non-negative int", "pass ddof=0 (population) or ddof=1 (sample)")
    if is_device(x):
        from ._devaxes import axis_moments
        return axis_moments(where, x, backend, axis, int(ddof), dtype=dtype, out=out, keepdims=keepdims)
    arr, axes = _split(where, x, axis)
    acc = _acc(where, arr, dtype, floats_only=True)
    shape = reduced_shape(arr.shape, axes, keepdims)
    rows2, _, rows, cols = as_rows(acc, axes)
    if len(axes) == arr.ndim and (where == "mean" or (where == "var" and ddof == 0)):
        value = call(where, "reduce.mean" if where == "mean" else "reduce.var", rows2.ravel(), backend=backend)
    elif rows == 0:
        value = np.zeros(0, acc.dtype)
    else:
        value = moments_rows(where, rows2, rows, cols, where, int(ddof), backend)
    return finish(where, value, shape, out)


def mean(x: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False, *,
         backend: Any = "auto") -> Any:
    """numpy.mean (integers in float64, float16 in float32; int64/uint64 are refused: L002)."""
    return _moments("mean", x, axis, dtype, out, keepdims, 0, backend)


def var(x: Any, axis: Any = None, dtype: Any = None, out: Any = None, ddof: int = 0, keepdims: bool = False, *,
        backend: Any = "auto") -> Any:
    """numpy.var, two passes (the mean, then the squared deviations) divided by max(n - ddof, 0)."""
    return _moments("var", x, axis, dtype, out, keepdims, ddof, backend)


def std(x: Any, axis: Any = None, dtype: Any = None, out: Any = None, ddof: int = 0, keepdims: bool = False, *,
        backend: Any = "auto") -> Any:
    """numpy.std: the square root of ``var`` (index order)."""
    return _moments("std", x, axis, dtype, out, keepdims, ddof, backend)


def count_nonzero(x: Any, axis: Any = None, *, keepdims: bool = False, backend: Any = "auto") -> Any:
    """numpy.count_nonzero (a NaN counts): an int over every axis, int64 counts along some."""
    from .elementwise import FUNCTIONS
    arr, axes = _split("count_nonzero", x, axis)
    if len(axes) == arr.ndim and not keepdims:
        return int(call("count_nonzero", "reduce.count", widen("count_nonzero", arr).ravel(), backend=backend)[0])
    flags = FUNCTIONS["not_equal"](arr, 0, backend=backend)
    return sum(flags, axis=axes, keepdims=keepdims, backend=backend)


def _truth(where: str, x: Any, axis: Any, out: Any, keepdims: bool, backend: Any) -> Any:
    from .elementwise import FUNCTIONS
    arr, axes = _split(where, x, axis)
    if len(axes) == arr.ndim and not keepdims and out is None:
        return bool(call(where, f"reduce.{where}", widen(where, arr).ravel(), backend=backend)[0])
    counts = count_nonzero(arr, axis=axes, keepdims=keepdims, backend=backend)
    cols = int(np.prod([arr.shape[k] for k in axes], dtype=np.int64))
    found = FUNCTIONS["greater"](counts, 0, backend=backend) if where == "any" else \
        FUNCTIONS["equal"](counts, cols, backend=backend)
    return finish(where, np.asarray(found), reduced_shape(arr.shape, axes, keepdims), out)


def any(x: Any, axis: Any = None, out: Any = None, keepdims: bool = False, *, backend: Any = "auto") -> Any:  # noqa: A001
    """numpy.any."""
    return _truth("any", x, axis, out, keepdims, backend)


def all(x: Any, axis: Any = None, out: Any = None, keepdims: bool = False, *, backend: Any = "auto") -> Any:  # noqa: A001
    """numpy.all (True when empty)."""
    return _truth("all", x, axis, out, keepdims, backend)


def _arg(where: str, x: Any, axis: Any, out: Any, keepdims: bool, backend: Any, largest: bool, nan_wins: bool) -> Any:
    arr = intake(where, x)
    if isinstance(axis, tuple):
        raise fail("L004", where, f"axis={axis!r}: {where} takes one axis or None", "pass an int or None")
    axes = norm_axes(where, axis, arr.ndim)
    wide = widen(where, arr)
    flat = len(axes) == arr.ndim
    rows2, _, rows, cols = as_rows(wide, axes)
    if cols == 0:
        raise fail("L005", where, f"{where} of an empty selection (shape {arr.shape})", "pass at least one element")
    if flat:
        rid = ("lib." if nan_wins and wide.dtype.kind == "f" else "reduce.") + ("argmax" if largest else "argmin")
        found = call(where, rid, rows2.ravel(), backend=backend)
    else:
        found = arg_rows(where, rows2, rows, cols, largest, nan_wins, backend) if rows else np.zeros(0, np.uint32)
    if (found == 0xFFFFFFFF).any():
        raise fail("L006", where, f"{where} of an all-NaN selection", "pass a selection with at least one number "
                   f"(lib.{where.replace('nan', '')} returns the first NaN's index)")
    shape = (1,) * arr.ndim if (flat and keepdims) else reduced_shape(arr.shape, axes, keepdims)
    return finish(where, found.astype(np.int64), shape, out)


def argmin(x: Any, axis: Any = None, out: Any = None, *, keepdims: bool = False, backend: Any = "auto") -> Any:
    """numpy.argmin: the first smallest element, or the first NaN; flat index for axis=None."""
    return _arg("argmin", x, axis, out, keepdims, backend, False, True)


def argmax(x: Any, axis: Any = None, out: Any = None, *, keepdims: bool = False, backend: Any = "auto") -> Any:
    """numpy.argmax: the first largest element, or the first NaN; flat index for axis=None."""
    return _arg("argmax", x, axis, out, keepdims, backend, True, True)


def nanargmin(x: Any, axis: Any = None, out: Any = None, *, keepdims: bool = False, backend: Any = "auto") -> Any:
    """numpy.nanargmin: NaNs skipped; L006 for an all-NaN selection."""
    return _arg("nanargmin", x, axis, out, keepdims, backend, False, False)


def nanargmax(x: Any, axis: Any = None, out: Any = None, *, keepdims: bool = False, backend: Any = "auto") -> Any:
    """numpy.nanargmax: NaNs skipped; L006 for an all-NaN selection."""
    return _arg("nanargmax", x, axis, out, keepdims, backend, True, False)
