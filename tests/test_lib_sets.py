"""lib.unique and lib.searchsorted against numpy over the lib grid (every dtype x 0-d, empty, odd,
non-contiguous, big-endian), NaNs and signed zeros, and their coded errors."""

from __future__ import annotations

import numpy as np
import pytest

import vyre_decl
from vyre_decl import lib
from lib_grid import DTYPES, layouts

REF = vyre_decl.acquire("reference")


def _same_values(got, want) -> bool:
    """Equal values (-0.0 == +0.0: numpy's unsorted choice between them is unspecified), NaN where
    numpy has NaN, the same dtype (lib's in native byte order) and shape."""
    got, want = np.asarray(got), np.asarray(want)
    if got.dtype != want.dtype.newbyteorder("=") or got.shape != want.shape:
        return False
    if got.dtype.kind == "f":
        return bool(((got == want) | (np.isnan(got) & np.isnan(want))).all())
    return bool((got == want).all())


def _with_specials(dtype):
    cases = layouts(dtype)
    if np.dtype(dtype).kind == "f":
        special = np.array([np.nan, 2.0, -0.0, 0.0, np.inf, np.nan, -np.inf, 2.0, 0.0], dtype)
        cases += [("special", special), ("special_be", special.astype(special.dtype.newbyteorder(">")))]
    return cases


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_unique_is_numpys(dtype):
    for layout, x in _with_specials(dtype):
        assert _same_values(lib.unique(x, backend=REF), np.unique(x)), layout
        got = lib.unique(x, return_index=True, return_inverse=True, return_counts=True, backend=REF)
        want = np.unique(x, return_index=True, return_inverse=True, return_counts=True)
        assert len(got) == 4
        for g, w, what in zip(got, want, ("values", "index", "inverse", "counts")):
            assert _same_values(g, w), (layout, what, g, w)
        if np.dtype(dtype).kind == "f":
            g = lib.unique(x, return_counts=True, equal_nan=False, backend=REF)
            w = np.unique(x, return_counts=True, equal_nan=False)
            assert _same_values(g[0], w[0]) and _same_values(g[1], w[1]), layout


def test_unique_keeps_the_first_of_equal_zeros_and_one_nan():
    x = np.array([0.0, np.nan, -0.0, np.nan], np.float64)
    values, index = lib.unique(x, return_index=True, backend=REF)
    assert values.tolist()[0] == 0.0 and not np.signbit(values[0]) and np.isnan(values[1]) and values.size == 2
    assert index.tolist() == [0, 1]
    assert np.signbit(lib.unique(x[::-1], backend=REF)[0])  # -0.0 first in the input


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted_is_numpys(dtype, side):
    for layout, x in _with_specials(dtype):
        a = np.sort(x.ravel())
        if layout == "special_be":
            a = a.astype(a.dtype.newbyteorder(">"))
        for v in (x, x.ravel()[:3], a):
            got = lib.searchsorted(a, v, side=side, backend=REF)
            assert _same_values(got, np.searchsorted(a, v, side=side)), (layout, v)
        order = np.argsort(x.ravel(), kind="stable")
        got = lib.searchsorted(x.ravel(), x, side=side, sorter=order, backend=REF)
        assert _same_values(got, np.searchsorted(x.ravel(), x, side=side, sorter=order)), layout


def test_searchsorted_scalars_and_mixed_types():
    a = np.array([1, 3, 3, 7], np.int32)
    got = lib.searchsorted(a, 3, side="right", backend=REF)
    assert isinstance(got, np.int64) and got == 3
    assert lib.searchsorted(a, 2.5, backend=REF) == 1  # a Python float: a in float64, exactly
    assert lib.searchsorted(np.array([0.5, 1.5], np.float32), np.array([1], np.int16), backend=REF).tolist() == [1]
    assert lib.searchsorted(np.array([1.0, np.nan]), np.nan, backend=REF) == 1  # NaNs last, equal to each other
    assert lib.searchsorted(np.array([1, 2], np.uint8), 1.5, backend=REF) == 1  # uint8 and 1.5 in float64
    assert lib.searchsorted(np.array([1, 2], np.uint32), -1, backend=REF) == 0  # in int64


@pytest.mark.parametrize("call, code", [
    (lambda: lib.unique(np.ones((2, 2)), axis=0, backend=REF), "L017"),
    (lambda: lib.searchsorted([1, 2], 1, side="middle", backend=REF), "L018"),
    (lambda: lib.searchsorted(np.ones((2, 2)), 1, backend=REF), "L019"),
    (lambda: lib.searchsorted([1, 2], 1, sorter=[0], backend=REF), "L020"),
    (lambda: lib.searchsorted([1, 2], 1, sorter=[0.0, 1.0], backend=REF), "L020"),
    (lambda: lib.searchsorted(np.array([1, 2], np.int64), np.array([1.5]), backend=REF), "L002"),
    (lambda: lib.searchsorted(np.array([1, 2], np.uint64), -1, backend=REF), "L014"),
    (lambda: lib.searchsorted(np.array([1, 2], np.uint64), 1.5, backend=REF), "L014"),
    (lambda: lib.searchsorted([1, 2], 1, sorter=[0, 5], backend=REF), "L008"),
])
def test_coded_errors(call, code):
    with pytest.raises(vyre_decl.VyreError) as info:
        call()
    diag = info.value.diagnostics[0]
    assert diag.code == code and "Fix" in str(info.value)
