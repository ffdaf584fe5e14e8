"""Sorting like numpy: ``sort``, ``argsort`` (stable, along an axis, default the last) and
``topk``. Keys of every numeric dtype go through an order-preserving key transform — one generated
program of registry ops (bitcast, xor, select): signed integers flip the sign bit, floats flip all
bits of negatives and the sign bit of the rest, -0 sorts as +0, every NaN last — then the
standard stable radix sort (sort.radix_pairs) carries the indices."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ir.types import DataType
from ..routines import hostpath
from ._core import call, check_backend, fail, intake, ints, narrow_back, on_host_path, widen
from ._device import is_device
from ._devsort import device_sort
from ._kernel import WORKGROUP, run_text

__all__ = ["sort", "argsort", "topk"]

_KEY = {  # value type: (unsigned key type, expression of the key of v)
    "u32": ("u32", "v"), "u64": ("u64", "v"),
    "i32": ("u32", "primitive.convert.bitcast<T=u32>(v) ^ 2147483648u32"),
    "i64": ("u64", "primitive.convert.bitcast<T=u64>(v) ^ 9223372036854775808u64"),
    "f32": ("u32", "select(v != v, 4294967295u32, select(v == 0.0f32, 2147483648u32, select("
                   "primitive.float.signbit(v), ~primitive.convert.bitcast<T=u32>(v), "
                   "primitive.convert.bitcast<T=u32>(v) | 2147483648u32)))"),
    "f64": ("u64", "select(v != v, 18446744073709551615u64, select(v == 0.0f64, 9223372036854775808u64, select("
                   "primitive.float.signbit(v), ~primitive.convert.bitcast<T=u64>(v), "
                   "primitive.convert.bitcast<T=u64>(v) | 9223372036854775808u64)))"),
}


def _keys(where: str, wide: np.ndarray, backend: Any, descending: bool = False) -> np.ndarray:
    """The unsigned sort keys of ``wide`` (a routine dtype), complemented for a descending order,
    one generated program."""
    vt = wide.dtype.name.replace("uint", "u").replace("int", "i").replace("float", "f")
    kt, form = _KEY[vt]
    if descending:
        form = f"~({form})"
    elif form == "v":
        return wide
    n = wide.size
    be = check_backend(where, backend)
    if on_host_path(be):  # the same expression over the whole array, no program around it
        return hostpath.map_values(form, {"v": (DataType(vt), wide.ravel())}, be.registry).astype(np.dtype(kt.replace("u", "uint")), copy=False)
    return run_text(where, keys_text(vt, n, descending), [wide.ravel()], backend)[0]


def keys_text(vt: str, n: int, descending: bool = False) -> str:
    """The program writing the unsigned sort key of each of n elements of value type ``vt``."""
    kt, form = _KEY[vt]
    if descending:
        form = f"~({form})"
    return "\n".join([f"program lib_sort_keys workgroup({WORKGROUP}, 1, 1) {{", f"  buffer x: read {vt}[] @0",
                      f"  buffer out: write {kt}[{n}] @1", "  let i = gid.x", f"  if i < {n}u32 {{",
                      "    let v = x[i]", f"    out[i] = {form}", "  }", "}", ""])


def _argsort_rows(where: str, keys: np.ndarray, rows: int, cols: int, backend: Any) -> np.ndarray:
    """The stable order of each row of keys (rows x cols): a stable sort by key, then a stable sort
    of the result by row (LSD order), each a sort.radix_pairs call."""
    index = np.arange(rows * cols, dtype=np.uint32)
    _, order = call(where, "sort.radix_pairs", keys.ravel(), index, backend=backend)
    if rows > 1:
        row_of = (np.asarray(order) // np.uint32(cols)).astype(np.uint32)
        _, again = call(where, "sort.radix_pairs", row_of, np.asarray(order), backend=backend)
        order = again
    if rows == 1:
        return np.asarray(order).astype(np.int64).reshape(1, cols)
    return (np.asarray(order) % np.uint32(cols)).astype(np.int64).reshape(rows, cols) if cols else np.zeros((rows, 0), np.int64)


def argsort(x: Any, axis: Any = -1, kind: Any = None, *, backend: Any = "auto", descending: bool = False) -> np.ndarray:
    """numpy.argsort (stable; NaNs last; axis=None sorts the flattened array); ``descending``
    reverses the key order (NaNs first), ties still in index order."""
    if is_device(x):
        return device_sort("argsort", x, backend, axis, keys_text, order=True, descending=descending)
    arr = intake("argsort", x)
    if axis is None:
        arr, axis = arr.ravel(), 0
    if arr.ndim == 0:
        return np.zeros((), np.int64)
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)) or not -arr.ndim <= axis < arr.ndim:
        raise fail("L004", "argsort", f"axis={axis!r} is not an axis of a {arr.ndim}-D array", "pass an int axis or None")
    moved = np.ascontiguousarray(np.moveaxis(arr, int(axis), -1))
    cols = moved.shape[-1]
    rows = moved.size // cols if cols else 0
    if rows * cols == 0:
        return np.moveaxis(np.zeros(moved.shape, np.int64), -1, int(axis))
    keys = _keys("argsort", widen("argsort", moved.reshape(-1)), backend, descending)
    order = _argsort_rows("argsort", keys, rows, cols, backend).reshape(moved.shape)
    return np.ascontiguousarray(np.moveaxis(order, -1, int(axis)))


def sort(keys: Any, values: Any = None, axis: Any = -1, *, backend: Any = "auto") -> Any:
    """numpy.sort (stable; NaNs last; along ``axis``, default the last; None: flattened). With
    ``values`` (1-D), ``(sorted keys, values moved with them)``."""
    if is_device(keys):
        return device_sort("sort", keys, backend, axis, keys_text, values=values)
    arr = intake("sort", keys)
    order = argsort(arr, axis=axis, backend=backend)
    flat_axis = -1 if axis is None else axis
    src = arr.ravel() if axis is None else arr
    out = (src[order] if src.ndim == 1 else np.take_along_axis(src, order, axis=flat_axis)) if src.ndim else src.copy()
    if values is None:
        return out
    vals = intake("sort", values, "values")
    if vals.shape != arr.shape:
        raise fail("L009", "sort", f"values of shape {vals.shape} for keys of shape {arr.shape}", "pass one value per key")
    return out, np.take_along_axis(vals.ravel() if axis is None else vals, order, axis=flat_axis)


def topk(x: Any, k: int, *, largest: bool = True, backend: Any = "auto") -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` largest (or, with largest=False, smallest) elements of the flattened ``x`` and
    their indices (int64), best first; ties: the lower index first; NaNs count as largest."""
    arr = intake("topk", x).ravel()
    n = ints("topk", k, "k", 0, arr.size)
    order = argsort(arr, backend=backend, descending=largest)
    chosen = order[:n].astype(np.int64)
    return narrow_back(arr[chosen], arr.dtype), chosen
