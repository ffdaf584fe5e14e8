"""The reference meaning of a vector copy ``dst[i ..+ N] = src[j ..+ N]``: element ``j + k`` of
``src`` to element ``i + k`` of ``dst`` for k = 0 .. N-1 (a side written ``[q ..* N]`` counts
vectors: its elements are ``N q + k``), each under the bounds rules (an element
past the end, or past 2^32 - 1, loads 0 and stores nothing). The two buffers are distinct and hold
one word type (validation), so the copy moves storage bits unchanged, all loads before any store."""

from __future__ import annotations

import numpy as np

from ..ir.nodes import Access, BufferDecl
from .frame import ExprFn, Frame, Mask, StmtFn, _lane_row

__all__ = ["copy_function"]


def _flat(fr: Frame, decl: BufferDecl, idx: np.ndarray, ok: np.ndarray) -> np.ndarray:
    """The positions in ``fr.mem[decl.name]`` of each lane's elements ``idx`` (0 where not ``ok``)."""
    safe = np.where(ok, idx, 0).astype(np.uint64)
    if decl.access.is_scratch:  # a row per workgroup / per lane
        return _lane_row(fr, decl.access is Access.PRIVATE)[:, None] * np.uint64(fr.counts[decl.name]) + safe
    return safe


def copy_function(dst: BufferDecl, dst_index: ExprFn, src: BufferDecl, src_index: ExprFn, width: int,
                  dst_units: bool = False, src_units: bool = False) -> StmtFn:
    """The statement closure of a vector copy of ``width`` elements from ``src`` to ``dst``; a side
    with ``*_units`` has an index counting vectors (its first element ``width`` times the index)."""
    steps = np.arange(width, dtype=np.uint64)
    dst_scale, src_scale = np.uint64(width if dst_units else 1), np.uint64(width if src_units else 1)

    def copy(fr: Frame, m: Mask) -> None:
        di = np.broadcast_to(np.asarray(dst_index(fr, m)), (fr.n,)).astype(np.uint64)[:, None] * dst_scale + steps
        si = np.broadcast_to(np.asarray(src_index(fr, m)), (fr.n,)).astype(np.uint64)[:, None] * src_scale + steps
        load_ok = si < np.uint64(fr.counts[src.name])  # si < 4 * 2^32: past 2^32 - 1 is past every count
        raw = np.where(load_ok, fr.mem[src.name][_flat(fr, src, si, load_ok)], np.zeros(1, src.dtype.storage_dtype))
        ok = di < np.uint64(fr.counts[dst.name])
        if m is not None:
            ok = ok & np.asarray(m)[:, None]
        fr.mem[dst.name][_flat(fr, dst, di, ok)[ok]] = raw[ok]

    return copy
