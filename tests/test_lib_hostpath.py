"""The host path (vyre_decl/routines/hostpath.py) against the reference interpreter, which stays the
definition: the same bits for every lib function that runs a routine, over the lib grid (every
dtype x 0-d, empty, odd, non-contiguous, big-endian), and for the routines themselves at lengths
that give several chunks, partial rows and tiles, with NaN, -0.0 and infinities."""

from __future__ import annotations

import numpy as np
import pytest

import vyre_decl
from vyre_decl import lib
from vyre_decl.routines import hostpath, routine
from lib_grid import DTYPES, layouts, same_bits

REF = vyre_decl.acquire("reference")

# lib functions whose whole-array form is a routine (reductions over every axis, scans of the
# flattened array, sorts along the last axis)
WHOLE = {
    "sum": lambda x: lib.sum(x, backend=REF), "prod": lambda x: lib.prod(x, backend=REF),
    "min": lambda x: lib.min(x, backend=REF), "max": lambda x: lib.max(x, backend=REF),
    "nanmin": lambda x: lib.nanmin(x, backend=REF), "nanmax": lambda x: lib.nanmax(x, backend=REF),
    "mean": lambda x: lib.mean(x, backend=REF), "count_nonzero": lambda x: lib.count_nonzero(x, backend=REF),
    "any": lambda x: lib.any(x, backend=REF), "all": lambda x: lib.all(x, backend=REF),
    "argmin": lambda x: lib.argmin(x, backend=REF), "nanargmax": lambda x: lib.nanargmax(x, backend=REF),
    "cumsum": lambda x: lib.cumsum(x, backend=REF), "exclusive_cumsum": lambda x: lib.exclusive_cumsum(x, backend=REF),
    "cummin": lambda x: lib.cummin(x, backend=REF), "cummax": lambda x: lib.cummax(x, backend=REF),
    "sort": lambda x: lib.sort(x, backend=REF), "argsort": lambda x: lib.argsort(x, backend=REF),
    "sort_none": lambda x: lib.sort(x, axis=None, backend=REF),
    "topk": lambda x: lib.topk(x, min(3, x.size), backend=REF),
    "topk_small": lambda x: lib.topk(x, min(2, x.size), largest=False, backend=REF),
    "dot": lambda x: lib.dot(x.ravel(), x.ravel(), backend=REF),
    "unique": lambda x: lib.unique(x, return_index=True, return_inverse=True, return_counts=True, backend=REF),
    "searchsorted": lambda x: lib.searchsorted(np.sort(x.ravel()), x, side="right", backend=REF),
}


def _both(fn, x):
    """(host path, interpreter): each the value or the VyreError code."""
    out = []
    for interpreted in (False, True):
        with hostpath.interpreted() if interpreted else _nothing():
            try:
                out.append(fn(x))
            except vyre_decl.VyreError as exc:
                out.append(("error", exc.diagnostics[0].code))
    return out


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _equal(a, b) -> bool:
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_equal(p, q) for p, q in zip(a, b))
    return same_bits(a, b) and np.asarray(a).dtype == np.asarray(b).dtype


@pytest.mark.parametrize("name", sorted(WHOLE))
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_grid_host_path_is_the_interpreter(name, dtype):
    """Every layout of the grid, plus NaN, -0.0 and infinities among the floats."""
    cases = layouts(dtype)
    if np.dtype(dtype).kind == "f":
        special = np.array([np.nan, -0.0, 0.0, np.inf, -np.inf, 1.5, -0.0, np.nan, 2.0], dtype)
        cases += [("special", special), ("special_be", special.astype(special.dtype.newbyteorder(">")))]
    for layout, x in cases:
        host, interp = _both(WHOLE[name], x)
        assert _equal(host, interp), (name, layout, host, interp)


def _input(dtype, n, seed, special=False):
    """Random values (floats of mixed signs and magnitudes; with ``special``, two NaNs, two -0.0
    and both infinities among them: sums are then NaN, so both kinds are tested)."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "f":
        x = (rng.standard_normal(n) * 1000).astype(dt)
        pick = rng.integers(0, max(n, 1), 8)
        if n and special:
            x[pick[:2]] = np.nan
            x[pick[2:4]] = -0.0
            x[pick[4]] = np.inf
            x[pick[5]] = -np.inf
        return x
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)


ROUTINE_DTYPES = [np.float32, np.float64, np.int32, np.uint32, np.int64, np.uint64]
SIZES = [1, 255, 256, 1025, 4097, 12289]


def _routine_both(rid, args, attrs=None):
    handle = routine(rid)
    host = hostpath.run(handle, args, REF, attrs or {})
    assert host is not None
    with hostpath.interpreted():
        assert hostpath.run(handle, args, REF, attrs or {}) is None  # really the interpreter below
        interp = handle(*args, backend=REF, **(attrs or {}))
    return host, interp


@pytest.mark.parametrize("rid", ["reduce.sum", "reduce.prod", "reduce.min", "reduce.max", "reduce.count",
                                 "reduce.argmin", "reduce.mean", "lib.minimum", "lib.nanmax", "linalg.dot",
                                 "scan.sum", "scan.exclusive_sum", "scan.max", "lib.cumminimum"])
@pytest.mark.parametrize("dtype", ROUTINE_DTYPES, ids=lambda d: np.dtype(d).name)
def test_routines_at_many_chunks(rid, dtype):
    """Lengths with one and several chunks, a partial last row of 256 and tile of 1024, a short
    last chunk: the host path gives the interpreter's bits."""
    spec = routine(rid).definition
    for n, special in [(n, s) for n in SIZES for s in (False, True)]:
        x = _input(dtype, n, n, special)
        args = (x, _input(dtype, n, n + 1, special)) if len(spec.inputs) == 2 else (x,)
        try:
            host, interp = _routine_both(rid, args)
        except vyre_decl.VyreError as exc:
            assert exc.diagnostics[0].code == "U012", exc  # a type the routine does not take
            return
        assert _equal(host, interp), (rid, n)


@pytest.mark.parametrize("rid", ["reduce.sum", "scan.sum", "lib.cummaximum"])
def test_eighteen_chunks(rid):
    """70,001 elements: 18 chunks of 3,889 (partial rows, tiles and a short last chunk)."""
    for special in (False, True):
        host, interp = _routine_both(rid, (_input(np.float32, 70001, 5, special),))
        assert _equal(host, interp)


@pytest.mark.parametrize("rid", ["sort.radix", "sort.radix_pairs", "sort.topk"])
@pytest.mark.parametrize("ktype", [np.uint32, np.uint64])
def test_sorts(rid, ktype):
    """Stable sorts: many equal keys (ties keep their order), full-width keys, values of another type."""
    for n in (0, 1, 300, 4097):
        rng = np.random.default_rng(n)
        keys = rng.integers(0, 7, n).astype(ktype) if n % 2 else _input(ktype, n, n)
        attrs = {"k": min(n, 9)} if rid == "sort.topk" else {}
        args = (keys, rng.standard_normal(n)) if rid == "sort.radix_pairs" else (keys,)
        host, interp = _routine_both(rid, args, attrs)
        assert _equal(host, interp), (rid, n)


def test_switch_and_unknown_steps():
    """hostpath.interpreted() restores the previous state; a routine with no step of known
    structure runs every step through the backend (the same result as the routine call)."""
    assert hostpath.enabled()
    with hostpath.interpreted():
        assert not hostpath.enabled()
    assert hostpath.enabled()
    x = np.arange(10, dtype=np.uint32)
    got = hostpath.run(routine("data.gather"), (x, np.array([3, 1], np.uint32)), REF, {})
    assert got.tolist() == [3, 1]


@pytest.mark.parametrize("rid", ["reduce.sum", "scan.sum"])
@pytest.mark.parametrize("dtype", [np.int64, np.uint32], ids=lambda d: np.dtype(d).name)
def test_integer_folds_over_many_batches(rid, dtype):
    """Integers whose add the laws make free of order (associative, commutative, identity zero):
    the host path folds each chunk in another order, so over several batches of chunks (300,001
    elements: 74 chunks, the last short) the sums and every scan prefix must still wrap exactly
    as numpy's, which is the kernel's result by those laws."""
    info = np.iinfo(dtype)
    x = np.random.default_rng(9).integers(info.min, info.max, 300_001, dtype=dtype, endpoint=True)
    host = hostpath.run(routine(rid), (x,), REF, {})
    want = np.cumsum(x, dtype=dtype) if rid == "scan.sum" else np.sum(x, dtype=dtype, keepdims=True)
    assert host is not None and np.array_equal(host, want)
