"""What the registry's laws let the host path (routines/hostpath.py) change about a step's order:
whether a combine op's order, or also its grouping and the order of its operands, is free for a
type (the laws ``associative``, ``identity(e)``, ``commutative``), and reduce.blocks computed in
any order where it is (the same bits as the kernel's order, by those laws)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np

if TYPE_CHECKING:
    from .hostpath import _Ops

__all__ = ["free_order", "free_any_order", "blocks_any_order"]

Fn = Callable[[Sequence[Any]], Any]


def free_order(ops: "_Ops") -> bool:
    """Whether the registry's laws make the combination order of ``with.combine`` over A free:
    associative for A, with ``with.identity`` its identity element for A."""
    return bool(ops.once("free_order", lambda: _laws_free(ops)))


def _laws_free(ops: "_Ops") -> bool:
    op, a = ops.registry.get(ops.params["combine"]), ops.types["A"]
    holds = [law for law in op.laws if law.when is None or a in law.when.get("T", (a,))]
    return (any(law.law == "associative" for law in holds)
            and any(law.law == "identity" and law.element == ops.params["identity"] for law in holds))


def blocks_any_order(ops: "_Ops", lift: Fn, src: np.ndarray, y: Any, groups: int, c: int,
                     batch: int) -> np.ndarray:
    """reduce.blocks where the laws make any order give the same bits (free_any_order): each
    chunk's lifted elements combined in one go, a batch of chunks at a time — by the combine's
    ufunc's ``reduce`` along the chunk where it has one (ops.ufunc), else as a tree."""
    n, a_dtype = src.size, np.dtype(ops.types["A"].numpy_dtype)
    out = np.full(groups, ops.element("A", "identity"), a_dtype)
    whole = min(groups, n // c) if c else 0  # the chunks of c elements; then one partial (or none)
    for g0 in range(0, groups if n else 0, batch):
        g1 = min(groups, g0 + batch)
        lo, hi = g0 * c, min(g1 * c, n)
        if lo >= hi:
            break  # (groups past the end take in nothing)
        v = np.asarray(lift((src[lo:hi], y[lo:hi] if isinstance(y, np.ndarray) else y)))
        w1 = max(g0, min(g1, whole))
        if w1 > g0:
            out[g0:w1] = _along(ops, v[:(w1 - g0) * c].reshape(w1 - g0, c))
        if w1 < g1 and (w1 - g0) * c < v.size:
            out[w1] = _along(ops, v[(w1 - g0) * c:].reshape(1, -1))[0]
    return out


def _along(ops: "_Ops", v: np.ndarray) -> np.ndarray:
    """Each row of ``v`` (at least one column) combined into one value, in any order."""
    uf = ops.ufunc()
    if uf is not None and v.dtype == np.dtype(ops.types["A"].numpy_dtype):
        return np.asarray(uf.reduce(v, axis=1, dtype=v.dtype))
    combine = ops.combine()
    while v.shape[1] > 1:
        h = v.shape[1] // 2
        head = np.asarray(combine((v[:, :h], v[:, h:2 * h])))
        if v.shape[1] % 2:
            head[:, 0] = np.asarray(combine((head[:, 0], v[:, 2 * h])))
        v = head
    return v[:, 0]


def free_any_order(ops: "_Ops") -> bool:
    """Whether the laws make every order and grouping of ``with.combine`` over A give the same
    bits: _free_order and commutative for A."""
    op, a = ops.registry.get(ops.params["combine"]), ops.types["A"]
    return bool(free_order(ops) and ops.once("commutative", lambda: any(
        law.law == "commutative" for law in op.laws if law.when is None or a in law.when.get("T", (a,)))))
