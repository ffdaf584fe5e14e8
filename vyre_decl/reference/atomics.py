"""Atomics in invocation order over numpy arrays: every lane of a chunk that targets a memory word
applies its update as if the lanes ran one after another, lower linear invocation ids first, and
sees the value before its own update. ``apply_scan`` does it in O(log n) passes for an
associative combine; ``apply_rounds`` for any combine, one round per lane rank."""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

__all__ = ["apply_scan", "apply_rounds", "Combine"]

Combine = Callable[[Sequence[Any]], Any]  # (current value, operands...) -> new value, vectorised


def apply_scan(mem: np.ndarray, addr: np.ndarray, values: np.ndarray, combine: Combine) -> np.ndarray:
    """Sequential-order atomics for an associative combine: a segmented inclusive scan per
    address (Hillis-Steele, O(log n) numpy passes). Returns the old value seen by each lane."""
    order = np.argsort(addr, kind="stable")
    a = addr[order]
    v = values[order]
    n = a.size
    first = np.ones(n, bool)
    first[1:] = a[1:] != a[:-1]
    starts = np.flatnonzero(first)
    seg = np.cumsum(first) - 1
    pos = np.arange(n) - starts[seg]
    scan = v.copy()
    d = 1
    longest = int(pos.max()) + 1
    while d < longest:
        take = np.flatnonzero(pos >= d)
        nxt = scan.copy()
        nxt[take] = combine((scan[take - d], scan[take]))
        scan = nxt
        d *= 2
    base = mem[a]
    prev = np.empty_like(scan)
    prev[1:] = scan[:-1]
    old_sorted = np.where(first, base, combine((base, np.where(first, base, prev))))
    last = np.ones(n, bool)
    last[:-1] = first[1:]
    ends = np.flatnonzero(last)
    mem[a[ends]] = combine((base[ends], scan[ends]))
    old = np.empty_like(old_sorted)
    old[order] = old_sorted
    return old


def apply_rounds(mem: np.ndarray, addr: np.ndarray, args: list[np.ndarray], combine: Combine,
                  tick: Callable[[], None]) -> np.ndarray:
    """Sequential-order atomics for any combine: round r applies, for every address at once, the
    r-th lane (in invocation order) that targets it."""
    order = np.argsort(addr, kind="stable")
    a = addr[order]
    first = np.ones(a.size, bool)
    first[1:] = a[1:] != a[:-1]
    starts = np.flatnonzero(first)
    rank = np.arange(a.size) - starts[np.cumsum(first) - 1]
    by_rank = np.argsort(rank, kind="stable")  # lanes grouped by rank, each group of distinct addresses
    bounds = np.searchsorted(rank[by_rank], np.arange(int(rank.max()) + 2))
    old = np.empty(addr.size, mem.dtype)
    for r in range(len(bounds) - 1):
        tick()
        lanes = order[by_rank[bounds[r]: bounds[r + 1]]]
        where = addr[lanes]
        current = mem[where]
        mem[where] = combine([current] + [x[lanes] for x in args])
        old[lanes] = current
    return old
