"""Subgroups on the reference interpreter: which invocations of a chunk form each subgroup, which
of them are present, and the three collective reference functions (``lane_id``, ``lane_shuffle``,
``lane_ballot``) that move values between the lanes of a subgroup. Every other collective op is a
composition of these (``ops/subgroup.toml``), so its arithmetic comes from the op files.

A subgroup is ``SUBGROUP_SIZE`` consecutive invocations of one workgroup by linear local id (the
last subgroup of a workgroup whose size is not a multiple has fewer); a lane is present when its
invocation exists and takes part in the statement (it has not returned). docs/semantics.md,
"Subgroups", is the normative text.
"""

from __future__ import annotations

from typing import Any, Callable, Final, Mapping, Sequence

import numpy as np

from ..ir.subgroup import SUBGROUP_SIZE
from ..registry.references import COLLECTIVE, REFERENCES

__all__ = ["Lanes", "subgroup_slots", "COLLECTIVE_KERNELS", "CollectiveKernel"]

_S: Final = SUBGROUP_SIZE


def subgroup_slots(n_workgroups: int, workgroup_size: int) -> tuple[np.ndarray, int]:
    """For a chunk of whole workgroups (invocations in workgroup order, then linear local id): each
    invocation's slot in a (subgroups, SUBGROUP_SIZE) grid, and the number of subgroups."""
    per_wg = -(-workgroup_size // _S)
    inv = np.arange(n_workgroups * workgroup_size, dtype=np.int64)
    wg, loc = inv // workgroup_size, inv % workgroup_size
    return wg * (per_wg * _S) + loc, n_workgroups * per_wg


class Lanes:
    """The subgroups of a chunk as they are at one collective: slots and the present lanes."""

    __slots__ = ("slot", "count", "present")

    def __init__(self, slot: np.ndarray, count: int, present: np.ndarray | None) -> None:
        self.slot, self.count = slot, count
        grid = np.zeros(count * _S, dtype=bool)
        grid[slot if present is None else slot[present]] = True
        self.present = grid.reshape(count, _S)

    def lift(self, values: Any, dtype: Any) -> np.ndarray:
        """Per-invocation values as a (subgroups, SUBGROUP_SIZE) array (zeros where no lane is)."""
        grid = np.zeros(self.count * _S, dtype=dtype)
        grid[self.slot] = np.broadcast_to(np.asarray(values).astype(dtype, copy=False), self.slot.shape)
        return grid.reshape(self.count, _S)

    def drop(self, grid: np.ndarray) -> np.ndarray:
        """A (subgroups, SUBGROUP_SIZE) array back to one value per invocation."""
        return grid.reshape(-1)[self.slot]


CollectiveKernel = Callable[..., np.ndarray]


def lane_id(args: Sequence[Any], *, lanes: Lanes, **_: object) -> np.ndarray:
    """The invocation's lane: its linear local id modulo the subgroup size."""
    return (lanes.slot % _S).astype(np.uint32)


def lane_shuffle(args: Sequence[Any], *, lanes: Lanes, out: Any, **_: object) -> np.ndarray:
    """x of lane src; the caller's own x where lane src is not present (src >= size, or absent)."""
    dtype = out.numpy_dtype
    x = lanes.lift(args[0], dtype)
    src = lanes.lift(np.asarray(args[1]).astype(np.int64), np.int64)
    own = np.broadcast_to(np.arange(_S), src.shape)
    inside = src < _S
    j = np.where(inside, src, own)
    ok = inside & np.take_along_axis(lanes.present, j, axis=1)
    return lanes.drop(np.take_along_axis(x, np.where(ok, j, own), axis=1))


def lane_ballot(args: Sequence[Any], *, lanes: Lanes, **_: object) -> np.ndarray:
    """A u32 whose bit k is set where lane k is present and the condition holds there."""
    c = lanes.lift(args[0], bool) & lanes.present
    weights = np.uint64(1) << np.arange(_S, dtype=np.uint64)
    bits = (c.astype(np.uint64) * weights).sum(axis=1, dtype=np.uint64).astype(np.uint32)
    return lanes.drop(np.broadcast_to(bits[:, None], c.shape))


COLLECTIVE_KERNELS: Final[Mapping[str, CollectiveKernel]] = {
    "lane_id": lane_id,
    "lane_shuffle": lane_shuffle,
    "lane_ballot": lane_ballot,
}

if set(COLLECTIVE_KERNELS) != {n for n, (k, _) in REFERENCES.items() if k == COLLECTIVE}:
    raise ImportError("reference/collective.py does not implement the collective entries of registry.references")
