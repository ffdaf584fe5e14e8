"""The order of scan.singlef (the one-pass scan of 32-bit floats) on whole numpy arrays, for the host
path (routines/hostpath.py): tiles of 8192 (8 subgroups x 8 steps x 32 lanes x 4 elements), each
lane's runs folded in order, Hillis-Steele over the lanes, the tile's aggregate, the tree of the
aggregates before a tile in its group of 64 and the chained group prefixes — exactly the kernel's
combinations (docs/routines.md), so the bits are the interpreter's. Every combination is the
caller's ``combine``; this module knows the order only."""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

__all__ = ["shifted", "hillis_steele", "singlef_scan", "TILE", "GROUP"]

Fn = Callable[[Sequence[Any]], Any]
TILE, GROUP = 8192, 64  # singlef's tile (256 invocations x 32 elements) and tiles a group


def shifted(values: np.ndarray, d: int, ident: Any, axis: int = -1) -> np.ndarray:
    """Along ``axis``: entry t holds values[t - d], the identity for t < d."""
    v = np.moveaxis(values, axis, -1)
    out = np.empty_like(v)
    out[..., :d] = ident
    out[..., d:] = v[..., :-d]
    return np.moveaxis(out, -1, axis)


def hillis_steele(combine: Fn, values: np.ndarray, ident: Any) -> np.ndarray:
    """The inclusive scan of the last axis: step d combines entry t - d (the identity for t < d)
    into entry t, d = 1, 2, 4, ... below the axis' length."""
    d = 1
    while d < values.shape[-1]:
        values = np.asarray(combine((shifted(values, d, ident), values)))
        d *= 2
    return values


def _lanes(combine: Fn, x: np.ndarray) -> np.ndarray:
    """A subgroup's shuffle-up scan over the lane axis (-1): lane l takes in lane l - d only where
    l >= d (the others keep their value: no identity is combined)."""
    lane = np.arange(x.shape[-1])
    for d in (1, 2, 4, 8, 16):
        x = np.where(lane >= d, combine((shifted(x, d, x.dtype.type(0)), x)), x)
    return x


def _tree(combine: Fn, leaves: np.ndarray) -> np.ndarray:
    """The balanced tree over the last axis (a power of two): pairs, then pairs of pairs."""
    while leaves.shape[-1] > 1:
        leaves = np.asarray(combine((leaves[..., 0::2], leaves[..., 1::2])))
    return leaves[..., 0]


def _tiles(combine: Fn, ident: Any, v: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per tile (v: [tile, w, k, lane, e]): each element's value in its subgroup's scan (sv), each
    subgroup's prefix of the subgroups before it (wpre: [tile, w]) and the tile's aggregate."""
    runs = [np.asarray(combine((np.full(v.shape[:-1], ident, v.dtype), v[..., 0])))]
    for e in range(1, 4):
        runs.append(np.asarray(combine((runs[-1], v[..., e]))))
    x = _lanes(combine, runs[3])
    up = shifted(x, 1, ident)
    sv = np.empty_like(v)
    wrun = np.full(v.shape[:2], ident, v.dtype)
    for k in range(v.shape[2]):
        pre = np.asarray(combine((wrun[..., None], up[:, :, k])))
        pre[..., 0] = wrun
        for e in range(4):
            sv[:, :, k, :, e] = combine((pre, runs[e][:, :, k]))
        wrun = np.asarray(combine((wrun, x[:, :, k, 31])))
    wpre = np.empty_like(wrun)
    agg = np.full(wrun.shape[0], ident, v.dtype)
    for w in range(wrun.shape[1]):
        wpre[:, w] = agg
        agg = np.asarray(combine((agg, wrun[:, w])))
    wpre[:, 0] = ident
    return sv, wpre, agg


def _prefixes(combine: Fn, ident: Any, agg: np.ndarray) -> np.ndarray:
    """Each tile's prefix H(g) (+) F: F the tree of its group's aggregates before it (identity
    from it on), H the chain of the earlier groups' (F of their last tile (+) its aggregate)."""
    tiles = agg.size
    groups = -(-tiles // GROUP)
    padded = np.full(groups * GROUP, ident, agg.dtype)
    padded[:tiles] = agg
    per = padded.reshape(groups, GROUP)
    slot = np.arange(GROUP)
    leaves = np.where(slot[None, :] < slot[:, None], per[:, None, :], ident)  # [group, p, i]
    f = _tree(combine, leaves)  # [group, p]
    h = np.empty(groups, agg.dtype)
    run = np.asarray(ident, agg.dtype)
    for g in range(groups):
        h[g] = run
        run = np.asarray(combine((run, combine((f[g, GROUP - 1], per[g, GROUP - 1])))))
    return np.asarray(combine((h[:, None], f))).reshape(-1)[:tiles]


def singlef_scan(combine: Fn, ident: Any, exclusive: bool, lifted: np.ndarray) -> np.ndarray:
    """scan.singlef's output for the lifted input (one value per element, of type A)."""
    n = lifted.size
    tiles = -(-n // TILE)
    padded = np.full(tiles * TILE, ident, lifted.dtype)
    padded[:n] = lifted
    sv, wpre, agg = _tiles(combine, ident, padded.reshape(tiles, 8, 8, 32, 4))
    before = np.asarray(combine((_prefixes(combine, ident, agg)[:, None], wpre)))  # [tile, w]
    flat = sv.reshape(tiles, 8, 1024)
    if exclusive:
        flat = shifted(flat, 1, ident)
    return np.asarray(combine((before[..., None], flat))).reshape(-1)[:n]
