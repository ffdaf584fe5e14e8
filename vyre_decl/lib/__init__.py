"""numpy-style functions over the standard routines and generated kernels:
``vyre_decl.lib.sum(x, axis=0, backend="cuda")``, ``lib.exp(x)``, ``lib.fuse(fn)``.

This package only gathers the public names; each module has one job (reductions, scans, data
movement, sorting, linear algebra and NN, bytes, the generated elementwise functions, fusion).
Results are numpy scalars or arrays with the same bits on every backend; docs/numpy.md lists every
function, its numpy counterpart and the differences that remain on purpose.
"""

from __future__ import annotations

from typing import Any

from .bytes import byte_histogram, crc32, crc32c, find
from .data import bincount, nonzero, scatter, segment_sum, take, transpose
from .elementwise import FUNCTIONS as _ELEMENTWISE
from .fuse import Traced, fuse
from .linalg import dot, gelu, layer_norm, matmul, rms_norm, silu, softmax
from .reductions import (all, any, argmax, argmin, count_nonzero, max, mean, min, nanargmax, nanargmin, nanmax, nanmin,
                         nansum, prod, std, sum, var)
from .scans import cummax, cummin, cumprod, cumsum, exclusive_cumsum
from .sets import searchsorted, unique
from .sorting import argsort, sort, topk

ELEMENTWISE: tuple[str, ...] = tuple(sorted(_ELEMENTWISE))
globals().update(_ELEMENTWISE)  # exp, log1p, arctan2, where, clip, ... (generated: lib/elementwise.py)

__all__ = ["sum", "prod", "min", "max", "nansum", "nanmin", "nanmax", "mean", "var", "std", "count_nonzero", "any",
           "all", "argmin", "argmax", "nanargmin", "nanargmax", "dot", "cumsum", "cumprod", "exclusive_cumsum",
           "cummin", "cummax", "segment_sum", "nonzero", "take", "scatter", "bincount", "transpose", "sort",
           "argsort", "topk", "unique", "searchsorted", "matmul", "softmax", "layer_norm", "rms_norm", "gelu", "silu", "byte_histogram", "crc32",
           "crc32c", "find", "fuse", "Traced", "ELEMENTWISE", *ELEMENTWISE]


def __getattr__(name: str) -> Any:  # for type checkers: the generated functions
    raise AttributeError(f"module 'vyre_decl.lib' has no attribute {name!r}")
