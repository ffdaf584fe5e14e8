"""The grid the lib tests share: every numeric dtype x shapes (0-d, empty, odd, non-contiguous,
big-endian) x axes, numpy's expected answer for each lib function, and a bit-level comparison."""

from __future__ import annotations

import numpy as np

from routine_cases import same_bits as _same_bits

DTYPES = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
          np.float16, np.float32, np.float64]


def values(dtype, shape, seed=0):
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    n = int(np.prod(shape))
    if dt.kind == "b":
        flat = rng.integers(0, 2, n).astype(bool)
    elif dt.kind == "f":
        flat = (rng.standard_normal(n) * 4).astype(dt)
        if n > 3:
            flat[n // 2] = flat[n // 3]  # a tie
    else:
        flat = rng.integers(0 if dt.kind == "u" else -50, 100, n).astype(dt)
    return flat.reshape(shape)


def layouts(dtype, seed=0):
    """(name, array) for each layout of the grid."""
    base = values(dtype, (3, 8), seed)
    out = [("0d", values(dtype, (), seed)), ("empty", values(dtype, (0,), seed)), ("empty2d", values(dtype, (2, 0), seed)),
           ("1d", values(dtype, (7,), seed)), ("3d", values(dtype, (2, 3, 2), seed)), 
           ("strided", base[:, ::3])]
    if np.dtype(dtype).itemsize > 1:
        out.append(("bigendian", values(dtype, (2, 5), seed).astype(np.dtype(dtype).newbyteorder(">"))))
    return out


def axes_for(ndim):
    if ndim == 0:
        return [None]
    if ndim == 1:
        return [None, 0]
    return [None, -1, (0, ndim - 1)]


def same_bits(a, b) -> bool:
    """routine_cases.same_bits of anything numpy takes as an array."""
    return _same_bits(np.asarray(a), np.asarray(b))
