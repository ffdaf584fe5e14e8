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


def blocks_any_order(combine: Fn, ident: Any, lift: Fn, src: np.ndarray, y: Any, groups: int, c: int,
                      batch: int, a_dtype: np.dtype) -> np.ndarray:
    """reduce.blocks where the laws make any order give the same bits (free_any_order): each
    chunk's lifted elements (the identity past the end) combined as a tree along the chunk, a
    batch of chunks at a time."""
    n = src.size
    out = np.full(groups, ident, a_dtype)
    for g0 in range(0, groups if n else 0, batch):
        g1 = min(groups, g0 + batch)
        lo, hi = g0 * c, min(g1 * c, n)
        if lo >= hi:
            break  # (groups past the end take in nothing)
        v = np.asarray(lift((src[lo:hi], y[lo:hi] if isinstance(y, np.ndarray) else y)))
        if v.size < (g1 - g0) * c:
            v = np.concatenate([v, np.full((g1 - g0) * c - v.size, ident, v.dtype)])
        v = v.reshape(g1 - g0, c)
        while v.shape[1] > 1:
            h = v.shape[1] // 2
            head = np.asarray(combine((v[:, :h], v[:, h:2 * h])))
            if v.shape[1] % 2:
                head[:, 0] = np.asarray(combine((head[:, 0], v[:, 2 * h])))
            v = head
        out[g0:g1] = v[:, 0]
    return out


def free_any_order(ops: "_Ops") -> bool:
    """Whether the laws make every order and grouping of ``with.combine`` over A give the same
    bits: _free_order and commutative for A."""
    op, a = ops.registry.get(ops.params["combine"]), ops.types["A"]
    return bool(free_order(ops) and ops.once("commutative", lambda: any(
        law.law == "commutative" for law in op.laws if law.when is None or a in law.when.get("T", (a,)))))
