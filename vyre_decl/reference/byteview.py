"""The reference meaning of a byte view load ``x.u32[i]``: bytes ``S i .. S i + S - 1`` (S the
view type's size) of the global buffer ``x``'s little-endian bytes, assembled little-endian into
one element of the view type; a byte at or past ``len(x) * size(x's type)`` reads as 0, so a
view element wholly past the end is 0 and a last partial one is zero-padded (ir/byteview.py)."""

from __future__ import annotations

import numpy as np

from ..ir.nodes import BufferDecl
from ..ir.types import DataType
from .frame import ExprFn, Frame, Mask, Value

__all__ = ["view_load_function"]


def _bytes(mem: np.ndarray, count: int, dtype: DataType) -> np.ndarray:
    """The buffer's first ``count`` elements as little-endian bytes."""
    words = np.ascontiguousarray(mem[:count])
    return words.astype(words.dtype.newbyteorder("<"), copy=False).view(np.uint8)


def view_load_function(decl: BufferDecl, view: DataType, index: ExprFn) -> ExprFn:
    """The expression closure of ``decl.name.view[index]``; its values are of the view's value type."""
    name, size, out_type = decl.name, view.size, view.value_type.numpy_dtype

    def load(fr: Frame, m: Mask) -> Value:
        idx = np.asarray(index(fr, m)).astype(np.uint64)
        raw = _bytes(fr.mem[name], fr.counts[name], decl.dtype)
        word = np.zeros(idx.shape, np.uint64)
        if raw.size == 0:
            return word.astype(out_type)
        first = idx * np.uint64(size)  # below 2^35: no wrap
        for k in range(size):
            at = first + np.uint64(k)
            ok = at < np.uint64(raw.size)
            byte = np.where(ok, raw[np.where(ok, at, 0)], 0).astype(np.uint64)
            word |= byte << np.uint64(8 * k)
        return word.astype(out_type)

    return load
