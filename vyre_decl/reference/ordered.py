"""Ordered atomics and bounded waits on the reference (docs/semantics.md, "Ordered atomics" and
"Bounded waits").

The reference runs the invocations of a chunk of workgroups in lockstep, one statement (and within
it one expression) for all of them at a time, and chunks one after another. That is one schedule a
GPU may run, and under it every access is sequentially consistent, so an order and a scope change
nothing here. Two things still need care:

* atomic stores of several invocations to one word apply in invocation order, as the reference's
  atomics do: the highest linear id's value stays (``store_in_order``); plain stores are a race,
  whose winner is unspecified;
* a wait reads its word once: while one expression runs no other invocation moves, so every further
  read would see the same value. It yields that value, which is ``value`` itself when the bound ran
  out (the wait timed out), a value some GPU schedule gives too (``wait_function``).
"""

from __future__ import annotations

import numpy as np

from ..ir.nodes import Access, BufferDecl
from .frame import ExprFn, Frame, Mask, Value, _lane_row

__all__ = ["store_in_order", "wait_function"]


def store_in_order(mem: np.ndarray, idx: np.ndarray, raw: np.ndarray) -> None:
    """``mem[idx] = raw`` as if the lanes stored one after another in lane order: where several
    lanes store to one element, the last lane's value stays."""
    if idx.size == 0:
        return
    _, first = np.unique(idx[::-1], return_index=True)
    last = idx.size - 1 - first
    mem[idx[last]] = np.broadcast_to(raw, idx.shape)[last]


def wait_function(decl: BufferDecl, index: ExprFn, value: ExprFn, bound: ExprFn) -> ExprFn:
    """The reference's wait on ``decl[index]``: the index, the value and the bound evaluated once, in
    that order, as on a GPU; then one read (0 out of bounds, where nothing is read)."""
    name, dtype = decl.name, decl.dtype.numpy_dtype
    shared = decl.access is Access.WORKGROUP

    def wait(fr: Frame, m: Mask) -> Value:
        idx = np.broadcast_to(np.asarray(index(fr, m)), (fr.n,))
        value(fr, m)
        bound(fr, m)
        count = fr.counts[name]
        ok = idx < count
        flat = np.where(ok, idx, 0).astype(np.uint64)
        if shared:
            flat = _lane_row(fr, False) * np.uint64(count) + flat
        out = np.zeros(fr.n, dtype)
        out[ok] = fr.mem[name][flat[ok]]
        return out

    return wait
