"""The running state of the reference interpreter: a ``Frame`` (one chunk of invocations), the
types of the closures compiled over it, and the runtime they share (masks, early return, blocks,
barriers, the deadline)."""

from __future__ import annotations

import time
from typing import Any, Callable

import numpy as np

from ..ir.diagnostics import VyreError
from ..ir.nodes import IdKind
from .collective import Lanes

__all__ = ["Frame", "check_deadline", "StmtFn", "ExprFn", "Value", "Mask"]

Value = Any  # numpy array (one element per invocation) or numpy scalar (same for all)
Mask = Any  # None (every invocation of the chunk) or a bool array
ExprFn = Callable[["Frame", Mask], Value]
StmtFn = Callable[["Frame", Mask], None]


def _and(mask: Mask, other: Any) -> Any:
    return other if mask is None else mask & other


def _lane_row(fr: Frame, private: bool) -> np.ndarray:
    """Each lane's row of a scratch buffer (set before a chunk that has one runs): its workgroup's
    index within the chunk for workgroup memory, its own index for a private array."""
    row = fr.lane_self if private else fr.lane_wg
    assert row is not None
    return row


class Frame:
    """State of one chunk of invocations while it runs."""

    __slots__ = ("n", "vars", "alive", "epoch", "mem", "counts", "lane_wg", "lane_self", "ids", "deadline", "ranges", "subgroups")

    def __init__(self, n: int) -> None:
        self.n = n
        self.vars: dict[str, Value] = {}
        self.alive: np.ndarray | None = None  # None = no invocation has returned
        self.epoch = 0  # bumped on every executed return
        self.mem: dict[str, np.ndarray] = {}
        self.counts: dict[str, int] = {}
        self.lane_wg: np.ndarray | None = None  # workgroup index within the chunk, per lane
        self.lane_self: np.ndarray | None = None  # 0 .. n-1 (u64): each lane's row of a private array
        self.ids: dict[tuple[IdKind, int], np.ndarray] = {}
        self.deadline: float | None = None
        # id(array) -> s for index arrays that are exactly s, s + 1, ..., s + n - 1 (the global id
        # of a 1-D dispatch): a load or store through one is a slice, not a gather
        self.ranges: dict[int, int] = {}
        # each invocation's slot in a (subgroups, SUBGROUP_SIZE) grid and the number of subgroups
        # (reference/collective.py), set before a chunk of a program with collective ops runs
        self.subgroups: tuple[np.ndarray, int] | None = None

    def lanes(self, m: Mask) -> Lanes:
        """The subgroups as a collective under mask ``m`` sees them: the present lanes are the
        invocations running the statement that have not returned."""
        assert self.subgroups is not None
        present = m if self.alive is None else _and(m, self.alive)
        return Lanes(self.subgroups[0], self.subgroups[1], None if present is None else np.broadcast_to(present, (self.n,)))


class _Values:
    """A minimal frame for evaluating an op's compose expression on its argument values (and, for a
    collective op, the subgroups of the invocations they belong to)."""

    __slots__ = ("vars", "lane_view")

    def __init__(self, variables: dict[str, Value], lane_view: Lanes | None = None) -> None:
        self.vars = variables
        self.lane_view = lane_view

    def lanes(self, m: Mask) -> Lanes:
        assert self.lane_view is not None, "a collective op evaluated outside a program"
        return self.lane_view


def _return(fr: Frame, m: Mask) -> None:
    if m is None:
        fr.alive = np.zeros(fr.n, bool)
    else:
        fr.alive = ~m if fr.alive is None else fr.alive & ~m
    fr.epoch += 1


def _barrier(fr: Frame, m: Mask) -> None:
    """Invocations run in lockstep, so every store before the barrier is already visible."""


def _run_block(stmts: list[StmtFn]) -> StmtFn:
    def block(fr: Frame, m: Mask) -> None:
        epoch = fr.epoch
        for s in stmts:
            s(fr, m)
            if fr.epoch != epoch:  # some invocations returned: they skip the rest
                epoch = fr.epoch
                m = _and(m, fr.alive)
                if not m.any():
                    return

    return block


def check_deadline(fr: Frame) -> None:
    if fr.deadline is not None and time.monotonic() > fr.deadline:
        raise VyreError.one("D013", "the reference dispatch ran past its timeout and was stopped (between "
                            "workgroups or statements); its outputs are not returned", "reference backend",
                            "check loop bounds and the grid, or raise DispatchConfig.timeout")
