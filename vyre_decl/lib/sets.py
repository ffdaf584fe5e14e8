"""``unique`` and ``searchsorted`` like numpy, built from the standard routines so they run on
every backend: the order-preserving sort keys (lib/sorting.py: -0.0 and +0.0 share a key, every
NaN gets the largest one), the stable ``sort.radix_pairs``, an elementwise comparison of
neighbours, compaction (``data.compact``), scans (``scan.sum``), gathers and scatters."""

from __future__ import annotations

from typing import Any

import numpy as np

from ._core import F32, F64, I64, ROUTINE_DTYPES, call, exact, fail, intake, widen, widen_to
from .sorting import _keys

__all__ = ["unique", "searchsorted"]


def _sorted_keys(where: str, wide: np.ndarray, backend: Any) -> tuple[np.ndarray, np.ndarray]:
    """The keys of ``wide`` (1-D, a routine dtype) in stable ascending order, and the permutation."""
    keys = _keys(where, wide, backend)
    index = np.arange(wide.size, dtype=np.uint32)
    sk, perm = call(where, "sort.radix_pairs", keys, index, backend=backend)
    return np.asarray(sk), np.asarray(perm).astype(np.int64)


def unique(ar: Any, return_index: bool = False, return_inverse: bool = False, return_counts: bool = False,
           axis: Any = None, *, equal_nan: bool = True, backend: Any = "auto") -> Any:
    """numpy.unique of the flattened array (numpy >= 2: ``inverse`` has the input's shape): sorted,
    NaNs last; with ``equal_nan`` (the default) one NaN, else every NaN; -0.0 and +0.0 are one
    value, the first in the input is returned (numpy's stable choice with ``return_index``);
    ``index``, ``inverse`` and ``counts`` are int64. ``axis`` other than None: L017."""
    from .data import nonzero, scatter, take
    from .elementwise import FUNCTIONS
    from .scans import cumsum
    if axis is not None:
        raise fail("L017", "unique", f"axis={axis!r}: lib.unique works on the flattened array only",
                   "pass axis=None (or call lib.unique on each slice along the axis)")
    arr = intake("unique", ar)
    flat = arr.ravel()
    n = flat.size
    wide = widen("unique", flat)
    if n == 0:
        if not (return_index or return_inverse or return_counts):
            return flat.copy()
        empty = np.zeros(0, np.int64)
        return _pack(flat.copy(), return_index, return_inverse, return_counts, empty, empty.reshape(arr.shape), empty)
    sk, perm = _sorted_keys("unique", wide, backend)
    new = np.ones(n, np.bool_)
    if n > 1:
        new[1:] = np.asarray(FUNCTIONS["not_equal"](sk[1:], sk[:-1], backend=backend))
    if not equal_nan and wide.dtype.kind == "f":
        new |= np.asarray(FUNCTIONS["isnan"](take(wide, perm, backend=backend), backend=backend))
    starts = nonzero(new, backend=backend)  # data.compact: the first sorted position of each value
    first = take(perm, starts, backend=backend)  # its index in the input (the first occurrence)
    values = take(flat, first, backend=backend)
    counts = np.diff(np.append(starts, n)).astype(np.int64)
    inverse: np.ndarray = np.zeros(0, np.int64)
    if return_inverse:
        group = cumsum(new, backend=backend) - 1  # scan.sum: the value's number at each sorted position
        inverse = scatter(group, perm, n, backend=backend).astype(np.int64).reshape(arr.shape)
    if not (return_index or return_inverse or return_counts):
        return values
    return _pack(values, return_index, return_inverse, return_counts, first.astype(np.int64), inverse, counts)


def _pack(values: np.ndarray, ri: bool, rv: bool, rc: bool, index: np.ndarray, inverse: np.ndarray,
          counts: np.ndarray) -> tuple[np.ndarray, ...]:
    out = [values]
    if ri:
        out.append(index)
    if rv:
        out.append(inverse)
    if rc:
        out.append(counts)
    return tuple(out)


def _common(where: str, a: np.ndarray, v: Any) -> tuple[np.ndarray, np.ndarray]:
    """``a`` and ``v`` in one routine dtype that holds both exactly (numpy's result type, widened;
    a Python scalar ``v`` is weak, as in NEP 50): L002 when there is none, L014 for a Python
    scalar that is not a value of ``a``'s type."""
    if isinstance(v, (int, float, bool)) and not isinstance(v, np.generic):
        base = widen(where, a[:0], "iuf" if a.dtype.kind == "b" else "uif", what="a").dtype
        for d in [base] + [t for t in (I64, F64) if exact(a.dtype, t)]:
            if isinstance(v, float) and d.kind != "f":
                continue
            try:
                got = np.array(v, d)
            except (OverflowError, ValueError):
                continue
            if got == v or (v != v and d.kind == "f"):
                return widen_to(where, a, [d], "a"), got
        raise fail("L014", where, f"v={v!r} is not a value of any type that holds a's {a.dtype} values exactly",
                   "pass v within the range of a's type, or a as an array of a wider type that holds v")
    varr = intake(where, v, "v")
    common = np.result_type(a.dtype if a.dtype.kind != "b" else np.uint8, varr.dtype if varr.dtype.kind != "b" else np.uint8)
    order = [d for d in ROUTINE_DTYPES if d.kind == common.kind and d.itemsize >= common.itemsize] + \
        ([F32, F64] if common.kind != "f" else [])
    for d in order:
        if exact(a.dtype, d) and exact(varr.dtype, d):
            return a.astype(d, copy=False), varr.astype(d, copy=False)
    raise fail("L002", where, f"a ({a.dtype}) and v ({varr.dtype}) have no common type that holds both exactly",
               "pass a and v of one type (or of types one of which holds the other exactly)")


def searchsorted(a: Any, v: Any, side: str = "left", sorter: Any = None, *, backend: Any = "auto") -> Any:
    """numpy.searchsorted: for each element of ``v`` the index in the sorted 1-D ``a`` (NaNs last)
    where it would be inserted to keep the order, before equal elements (``side="left"``) or after
    them (``"right"``); ``sorter`` the indices that sort ``a``. A stable sort of the keys of
    ``v`` and ``a`` together (equal keys: v's first for left, a's first for right), then an
    exclusive scan of which entries come from ``a``. int64, the shape of ``v``."""
    from .data import scatter, take
    from .scans import exclusive_cumsum
    if side not in ("left", "right"):
        raise fail("L018", "searchsorted", f"side={side!r} is neither 'left' nor 'right'", "pass side='left' or side='right'")
    arr = intake("searchsorted", a, "a")
    if arr.ndim != 1:
        raise fail("L019", "searchsorted", f"a has {arr.ndim} dimensions; searchsorted takes a 1-D a",
                   "pass a 1-D sorted array (a.ravel() of a sorted array, or one row)")
    if sorter is not None:
        order = intake("searchsorted", sorter, "sorter")
        if order.shape != arr.shape or order.dtype.kind not in "iu":
            raise fail("L020", "searchsorted", f"sorter of shape {order.shape} and dtype {order.dtype} for a of "
                       f"shape {arr.shape}", "pass sorter=np.argsort(a): one integer index per element of a")
        arr = take(arr, order, backend=backend)
    wa, wv = _common("searchsorted", arr, v)
    shape = np.shape(wv)
    flat_v = np.ravel(wv)
    m, n = arr.size, flat_v.size
    if n == 0 or m == 0:
        found = np.zeros(n, np.int64)
    else:
        both = np.concatenate([flat_v, wa] if side == "left" else [wa, flat_v])
        _, perm = _sorted_keys("searchsorted", both, backend)
        from_a = (perm >= n) if side == "left" else (perm < m)
        before = exclusive_cumsum(from_a, backend=backend)  # scan.exclusive_sum: a's entries before each
        v_pos = np.asarray(perm[~from_a]) - (0 if side == "left" else m)
        found = scatter(before[~from_a], v_pos, n, backend=backend).astype(np.int64)
    return found.reshape(shape) if shape else np.int64(found[0])
