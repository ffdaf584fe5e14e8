"""Data movement with numpy's rules: ``take`` (negative indices count from the end, out-of-range
ones are L008), ``nonzero``, ``scatter``, ``bincount``, ``transpose(axes=)``, ``segment_sum``.
Indices must be integers (L007 for floats, bools and NaN); each call is one standard routine."""

from __future__ import annotations

from typing import Any

import numpy as np

from ._core import call, fail, intake, ints, narrow_back, widen, widen_to
from .elementwise import FUNCTIONS

__all__ = ["take", "nonzero", "scatter", "bincount", "transpose", "segment_sum"]


def _indices(where: str, idx: Any, size: int, name: str = "indices") -> np.ndarray:
    """Integer indices into ``size`` elements as uint32 (negative ones from the end); L007 for a
    non-integer dtype, L008 for one out of range."""
    arr = intake(where, idx, name)
    if arr.dtype.kind not in "iu":
        raise fail("L007", where, f"{name} has dtype {arr.dtype}; indices are integers",
                   "pass an integer array of indices (numpy refuses float indices as well)")
    if arr.size:
        low, high = int(arr.min()), int(arr.max())
        if low < -size or high >= size:
            bad = low if low < -size else high
            raise fail("L008", where, f"index {bad} is out of range for {size} element(s)",
                       f"pass indices in {-size} .. {size - 1}")
    wide = widen_to(where, arr, [np.dtype(np.int64)]) if arr.dtype != np.uint64 else arr.astype(np.int64)
    if arr.size and int(wide.min()) < 0:
        wide = FUNCTIONS["where"](FUNCTIONS["less"](wide, 0), FUNCTIONS["add"](wide, size), wide)
    return np.asarray(wide).astype(np.uint32)


def take(src: Any, indices: Any, *, backend: Any = "auto") -> np.ndarray:
    """numpy.take of the flattened ``src`` (``src.ravel()[indices]``), in the indices' shape."""
    arr = intake("take", src)
    idx_shape = np.shape(intake("take", indices, "indices"))
    idx = _indices("take", indices, arr.size)
    if idx.size == 0:
        return np.zeros(idx_shape, arr.dtype)
    got = call("take", "data.gather", widen("take", arr).ravel(), idx.ravel(), backend=backend)
    return narrow_back(np.asarray(got), arr.dtype).reshape(idx_shape)  # type: ignore[no-any-return]


def nonzero(x: Any, *, backend: Any = "auto") -> np.ndarray:
    """The indices of the nonzero elements of the flattened ``x``, increasing, as int64
    (``np.flatnonzero``)."""
    arr = widen("nonzero", intake("nonzero", x)).ravel()
    if not arr.size:
        return np.zeros(0, np.int64)
    indices, count = call("nonzero", "data.compact", arr, backend=backend)
    return indices[: int(count[0])].astype(np.int64)  # type: ignore[no-any-return]


def scatter(src: Any, indices: Any, size: int, *, backend: Any = "auto") -> np.ndarray:
    """``out[indices[i]] = src[i]`` into ``size`` zeros (numpy's ``out[indices] = src``: of several
    writes to one slot the last wins); L008 for an index out of range."""
    n = ints("scatter", size, "size")
    arr = intake("scatter", src)
    idx = _indices("scatter", indices, n)
    if idx.size != arr.size:
        raise fail("L009", "scatter", f"{arr.size} values for {idx.size} indices", "pass one value per index")
    if n == 0:
        return np.zeros(0, arr.dtype)
    if not idx.size:
        return np.zeros(n, arr.dtype)
    got = call("scatter", "data.scatter", widen("scatter", arr).ravel(), idx.ravel(), backend=backend, size=n)
    return narrow_back(np.asarray(got), arr.dtype)  # type: ignore[no-any-return]


def bincount(x: Any, minlength: int = 0, *, backend: Any = "auto") -> np.ndarray:
    """numpy.bincount of non-negative integers (int64 counts, length max(x) + 1 or minlength)."""
    arr = intake("bincount", x)
    if arr.dtype.kind not in "biu":
        raise fail("L007", "bincount", f"x has dtype {arr.dtype}; bincount counts integers", "pass integers")
    if arr.size and arr.dtype.kind == "i" and int(arr.min()) < 0:
        raise fail("L008", "bincount", f"value {int(arr.min())} is negative", "pass non-negative integers")
    bins = builtin_max(ints("bincount", minlength, "minlength"), int(arr.max()) + 1 if arr.size else 0)
    if bins == 0:
        return np.zeros(0, np.int64)
    wide = widen_to("bincount", arr.astype(np.uint64) if arr.dtype.kind == "i" else arr,
                    [np.dtype(np.uint32), np.dtype(np.uint64)])
    return np.asarray(call("bincount", "data.histogram", wide.ravel(), backend=backend, bins=bins)).astype(np.int64)


def builtin_max(a: int, b: int) -> int:
    return a if a >= b else b


def transpose(x: Any, axes: Any = None, *, backend: Any = "auto") -> np.ndarray:
    """numpy.transpose (contiguous result). A 2-D transpose is the data.transpose routine; other
    permutations are done one 2-D transpose per step of the permutation's cycle decomposition
    (here: as numpy's copy for N-D, since moving memory is not arithmetic)."""
    arr = intake("transpose", x)
    perm = tuple(reversed(range(arr.ndim))) if axes is None else tuple(axes)
    if sorted(int(a) % arr.ndim if arr.ndim else 0 for a in perm) != list(range(arr.ndim)) or len(perm) != arr.ndim:
        raise fail("L004", "transpose", f"axes={axes!r} is not a permutation of {arr.ndim} axes",
                   f"pass each of 0 .. {arr.ndim - 1} once")
    if arr.ndim == 2 and perm in ((1, 0), (-1, -2), (1, -2), (-1, 0)) and arr.size:
        rows, cols = arr.shape
        wide = widen("transpose", arr)
        got = call("transpose", "data.transpose", wide, backend=backend, rows=rows, cols=cols)
        return narrow_back(np.asarray(got), arr.dtype).reshape(cols, rows)  # type: ignore[no-any-return]
    return np.ascontiguousarray(np.transpose(arr, perm))


def segment_sum(x: Any, offsets: Any, *, backend: Any = "auto") -> np.ndarray:
    """``out[s] = x[offsets[s]:offsets[s + 1]].sum()`` for each segment (numpy's accumulator)."""
    from .reductions import _acc
    arr = _acc("segment_sum", intake("segment_sum", x), None).ravel()
    off = intake("segment_sum", offsets, "offsets")
    if off.dtype.kind not in "iu":
        raise fail("L007", "segment_sum", f"offsets have dtype {off.dtype}", "pass integer offsets")
    if off.size and (int(off.min()) < 0 or int(off.max()) > arr.size or bool((np.diff(off.astype(np.int64)) < 0).any())):
        raise fail("L008", "segment_sum", "offsets are not increasing within 0 .. len(x)",
                   f"pass non-decreasing offsets in 0 .. {arr.size}")
    return np.asarray(call("segment_sum", "reduce.segments_sum", arr, off.astype(np.uint32).ravel(), backend=backend))
