"""vyre_decl.lib against numpy on the reference backend over dtypes x shapes x axes
(tests/lib_grid.py): reductions, nan-reductions, arg-reductions, scans, sorts, take."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from lib_grid import DTYPES, axes_for, layouts
from vyre_decl import lib
from vyre_decl.ir.diagnostics import VyreError

B = "reference"


def _np_acc(dt: np.dtype):
    """numpy's accumulator for sums, with lib's one documented difference: float16 sums in float32."""
    if dt.kind in "bi":
        return np.int64
    if dt.kind == "u":
        return np.uint64
    return np.float32 if dt == np.float16 else None


def _close(got, want, dtype):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    if want.dtype.kind == "f":
        tol = 1e-5 if want.dtype == np.float64 else 2e-3
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)


def _cases():
    for dtype in DTYPES:
        for name, arr in layouts(dtype):
            for axis in axes_for(arr.ndim):
                yield pytest.param(np.dtype(dtype), arr, axis, id=f"{np.dtype(dtype).name}-{name}-{axis}")


CASES = list(_cases())


def _expect_or_error(fn_np, fn_lib):
    """numpy's answer, or (when numpy raises) a VyreError from lib."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with np.errstate(all="ignore"):
                want = fn_np()
    except (ValueError, TypeError):
        with pytest.raises(VyreError):
            fn_lib()
        return None
    return want


@pytest.mark.parametrize("dtype,arr,axis", CASES)
def test_sums_and_extremes(dtype, arr, axis):
    acc = _np_acc(dtype)
    _close(lib.sum(arr, axis=axis, backend=B), np.sum(arr, axis=axis, dtype=acc), dtype)
    _close(lib.sum(arr, axis=axis, keepdims=True, backend=B), np.sum(arr, axis=axis, dtype=acc, keepdims=True), dtype)
    for name in ("min", "max", "nanmin", "nanmax"):
        want = _expect_or_error(lambda: getattr(np, name)(arr, axis=axis),
                                lambda: getattr(lib, name)(arr, axis=axis, backend=B))
        if want is not None:
            got = getattr(lib, name)(arr, axis=axis, backend=B)
            assert np.asarray(got).tobytes() == np.asarray(want).tobytes() or np.array_equal(got, want, equal_nan=True)
            assert np.asarray(got).dtype == np.asarray(want).dtype.newbyteorder("=")


@pytest.mark.parametrize("dtype,arr,axis", [c for c in CASES if c.values[0] != np.uint64 and c.values[0] != np.int64])
def test_means_and_variances(dtype, arr, axis):
    acc = np.float32 if dtype == np.float16 else None
    for name in ("mean", "var", "std"):
        want = _expect_or_error(lambda: getattr(np, name)(arr, axis=axis, dtype=acc),
                                lambda: getattr(lib, name)(arr, axis=axis, backend=B))
        if want is not None:
            _close(lib.__dict__[name](arr, axis=axis, backend=B), want, dtype)
    if arr.size > 2:
        _close(lib.var(arr, axis=axis, ddof=1, backend=B), np.var(arr, axis=axis, ddof=1, dtype=acc), dtype)


@pytest.mark.parametrize("dtype,arr,axis", [c for c in CASES if not isinstance(c.values[2], tuple)])
def test_arg_reductions_and_scans(dtype, arr, axis):
    for name in ("argmin", "argmax", "nanargmin", "nanargmax"):
        want = _expect_or_error(lambda: getattr(np, name)(arr, axis=axis),
                                lambda: getattr(lib, name)(arr, axis=axis, backend=B))
        if want is not None:
            np.testing.assert_array_equal(getattr(lib, name)(arr, axis=axis, backend=B), want)
    _close(lib.cumsum(arr, axis=axis, backend=B), np.cumsum(arr, axis=axis, dtype=_np_acc(dtype)), dtype)
    if dtype.kind != "b":
        np.testing.assert_array_equal(lib.cummin(arr, axis=axis, backend=B),
                                      np.minimum.accumulate(arr.ravel() if axis is None else arr, axis=axis or 0))
    _close(lib.count_nonzero(arr, axis=axis, backend=B), np.count_nonzero(arr, axis=axis), dtype)
    assert np.array_equal(lib.any(arr, axis=axis, backend=B), np.any(arr, axis=axis))
    assert np.array_equal(lib.all(arr, axis=axis, backend=B), np.all(arr, axis=axis))


@pytest.mark.parametrize("dtype", [np.dtype(t) for t in DTYPES])
def test_sort_argsort_take_like_numpy(dtype):
    for name, arr in layouts(dtype, seed=3):
        if dtype.kind == "f" and arr.size > 3:
            arr = arr.copy()
            arr.flat[1] = np.nan
            arr.flat[-1] = -0.0
        want = np.sort(arr, kind="stable") if arr.ndim else arr
        got = lib.sort(arr, backend=B)
        assert np.array_equal(got, want, equal_nan=dtype.kind == "f"), name
        if arr.ndim:
            np.testing.assert_array_equal(lib.argsort(arr, backend=B), np.argsort(arr, kind="stable"))
        if arr.size:
            idx = np.array([-1, 0, arr.size - 1])
            np.testing.assert_array_equal(lib.take(arr, idx, backend=B), np.take(arr, idx))


def test_issue_cases_give_numpy_answers():
    nan = np.nan
    assert np.array_equal(lib.dot(np.eye(2), np.eye(2), backend=B), np.eye(2))
    assert lib.sum(np.full(3, 2**30, np.int32), backend=B) == 3221225472
    assert np.isnan(lib.min([nan, 2, 1], backend=B)) and lib.argmax([1, nan, .5], backend=B) == 1
    assert np.array_equal(lib.cummax([1, nan, .5, 3], backend=B), [1, nan, nan, nan], equal_nan=True)
    assert lib.nanmin([nan, 2, 1], backend=B) == 1 and lib.nanargmax([1, nan, .5], backend=B) == 0
    assert lib.crc32(b"", backend=B) == 0
    assert lib.take(np.arange(5), np.array([-1]), backend=B)[0] == 4
    assert lib.sum(np.arange(12).reshape(3, 4), axis=0, backend=B).tolist() == [12, 15, 18, 21]
    a = np.arange(24, dtype=np.float64).reshape(2, 3, 4)
    np.testing.assert_array_equal(lib.matmul(a, np.ones((4, 2)), backend=B), a @ np.ones((4, 2)))
    np.testing.assert_array_equal(lib.sort(np.array([[3, -1], [2, -7]], np.int16), backend=B), [[-1, 3], [-7, 2]])
    vals, idx = lib.topk(np.array([1.0, 5, -3, 5]), 2, largest=False, backend=B)
    assert vals.tolist() == [-3.0, 1.0] and idx.tolist() == [2, 0]
    out = np.zeros(4, np.int64)
    assert lib.sum(np.ones((3, 4), np.int32), axis=0, out=out, backend=B) is out and out.tolist() == [3] * 4
