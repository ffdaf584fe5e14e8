"""Warp-level instructions: shfl.sync (up, down, bfly, idx with the clamp/segmask operand and the p
destination), vote.sync (all, any, uni, ballot), match.sync (any, all) and redux.sync (add, min,
max, and, or, xor) — each written from the PTX ISA's pseudocode.

A warp is 32 consecutive threads of a block (by linear thread index); a partial last warp has
fewer lanes, the missing ones count as exited. The lanes executing a warp instruction are the ones
the scheduler runs together at it (ptx_exec runs the lanes at the lowest program counter together,
so converged code arrives together). The ISA makes a .sync instruction wait for every non-exited
lane of its membermask; here such a lane that is not executing it, a lane executing it outside its
own membermask, or lanes of one warp naming different membermasks, is a 'warp_divergence' finding
(the result then uses the lanes that did execute). A shuffle reading a lane that does not take part
(exited, outside the membermask, or not executing the shfl) reads an undefined value on hardware:
a 'shfl_inactive_source' finding; the simulator then reads what that lane's register holds."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .ptx_ast import Instr, Pair, Reg
from .ptx_int import unsigned
from .ptx_machine import Fn, Machine, Mask
from .ptx_operands import Ctx, arity, split_mods

__all__ = ["DECODERS", "WARP"]

WARP = 32
_LANE_BITS = np.uint64(1) << np.arange(WARP, dtype=np.uint64)


class _Warps:
    """Where each lane of a machine sits: its warp (numbered over the machine's blocks) and lane."""

    def __init__(self, m: Machine) -> None:
        t = np.arange(m.n, dtype=np.int64) % m.threads
        per_block = -(-m.threads // WARP)
        self.count = m.blocks * per_block
        self.warp = (np.arange(m.n, dtype=np.int64) // m.threads) * per_block + t // WARP
        self.lane = t % WARP
        self.slot = self.warp * WARP + self.lane


def _warps(m: Machine) -> _Warps:
    if m.warps is None:
        m.warps = _Warps(m)
    return m.warps  # type: ignore[no-any-return]


def _grid(w: _Warps, values: Any, dtype: Any) -> np.ndarray:
    """Per-lane values as a (warps, 32) array (zeros where no lane exists)."""
    g = np.zeros(w.count * WARP, dtype=dtype)
    g[w.slot] = np.broadcast_to(np.asarray(values, dtype=dtype), w.slot.shape)
    return g.reshape(w.count, WARP)


def _bits(flags: np.ndarray) -> np.ndarray:
    """A (warps, 32) bool array as one 32-bit mask per warp (uint64)."""
    return (flags.astype(np.uint64) * _LANE_BITS).sum(axis=1, dtype=np.uint64)


class _Sync:
    """The lanes taking part in one execution of a .sync instruction: per lane its membermask, and
    per warp the executing lanes; reports what the ISA leaves undefined."""

    def __init__(self, m: Machine, mask: Mask, members: Any) -> None:
        self.w = w = _warps(m)
        self.active = np.ones(m.n, dtype=bool) if mask is None else mask
        self.mm = np.broadcast_to(unsigned(np.asarray(members), 32).astype(np.uint64), (m.n,))
        self.exec_bits = _bits(_grid(w, self.active, bool))
        alive = np.ones(m.n, dtype=bool) if m.alive is None else m.alive
        self.alive_bits = _bits(_grid(w, alive, bool))
        if m.sanitize:
            self._check(m)

    def _check(self, m: Machine) -> None:
        w, act = self.w, self.active
        lanes = np.flatnonzero(act)
        mm = self.mm[lanes]
        own = (mm >> w.lane[lanes].astype(np.uint64)) & np.uint64(1)
        missing = mm & self.alive_bits[w.warp[lanes]] & ~self.exec_bits[w.warp[lanes]]
        mm_grid = _grid(w, np.where(act, self.mm, 0), np.uint64)[w.warp[lanes]]  # (lanes, 32)
        others = ((mm[:, None] >> np.arange(WARP, dtype=np.uint64)) & np.uint64(1)).astype(bool)
        others &= ((self.exec_bits[w.warp[lanes]][:, None] >> np.arange(WARP, dtype=np.uint64))
                   & np.uint64(1)).astype(bool)
        differ = (others & (mm_grid != mm[:, None])).any(axis=1)
        if (own == 0).any():
            m.report("warp_divergence", "a lane executes a .sync warp instruction outside its own membermask")
        elif (missing != 0).any():
            m.report("warp_divergence", "a non-exited lane of the membermask does not execute this .sync warp "
                     "instruction with the others (divergent control flow)")
        elif differ.any():
            m.report("warp_divergence", "lanes of one warp execute this .sync warp instruction with different "
                     "membermasks")

    def taking_part(self, warp: np.ndarray, lane: np.ndarray) -> np.ndarray:
        """Whether lane ``lane`` of warp ``warp`` executes the instruction (False out of 0..31)."""
        ok = (lane >= 0) & (lane < WARP)
        bit = (self.exec_bits[warp] >> np.clip(lane, 0, WARP - 1).astype(np.uint64)) & np.uint64(1)
        return ok & (bit == 1)

    def in_members(self, lane: np.ndarray) -> np.ndarray:
        """Per lane: the executing lanes of its warp that its membermask names (a 32-bit mask)."""
        return self.mm & self.exec_bits[self.w.warp]


# ============================================================================ shfl.sync
def dec_shfl(ins: Instr, ctx: Ctx) -> Fn:
    """shfl.sync.mode.b32 d[|p], a, b, c, membermask."""
    modes = frozenset(("up", "down", "bfly", "idx"))
    flags, (t,) = split_mods(ctx, ins.mods, modes | {"sync"}, frozenset(("b32",)))
    mode = [f for f in ins.mods if f in modes]
    if "sync" not in flags or len(mode) != 1:
        raise ctx.error("shfl needs .sync and one mode (.up, .down, .bfly, .idx); shfl without .sync is not "
                        "modelled")
    arity(ctx, ins, 5)
    first = ins.operands[0]
    if isinstance(first, Pair):
        d, p = ctx.dst(Reg(first.first), t), ctx.dst(Reg(first.second), ctx.ptype("pred"))
    else:
        d, p = ctx.dst(first, t), None
    u32 = ctx.ptype("u32")
    a, b, c = ctx.src(ins.operands[1], t), ctx.src(ins.operands[2], u32), ctx.src(ins.operands[3], u32)
    members = ctx.src(ins.operands[4], u32)
    how = mode[0]

    def run(m: Machine, mask: Mask) -> None:
        s = _Sync(m, mask, members(m, mask))
        w = s.w
        lane = w.lane
        bval = unsigned(np.asarray(b(m, mask)), 32).astype(np.int64) & 31
        cv = unsigned(np.asarray(c(m, mask)), 32).astype(np.int64)
        cval, seg = cv & 31, (cv >> 8) & 31
        max_lane = (lane & seg) | (cval & ~seg)
        min_lane = lane & seg
        if how == "up":
            j = lane - bval
            pval = j >= max_lane
        elif how == "down":
            j = lane + bval
            pval = j <= max_lane
        elif how == "bfly":
            j = lane ^ bval
            pval = j <= max_lane
        else:
            j = min_lane | (bval & ~seg)
            pval = j <= max_lane
        j = np.where(pval, j, lane)
        value = np.asarray(a(m, mask))
        value = np.broadcast_to(value, (m.n,))
        src = w.warp * WARP + j
        lanes = s.active
        member = ((s.mm >> j.astype(np.uint64)) & np.uint64(1)) == 1
        ok = s.taking_part(w.warp, j) & member
        if m.sanitize and (lanes & ~ok).any():
            m.report("shfl_inactive_source", "a lane reads its value from a lane that does not take part in the "
                     "shfl (exited, outside the membermask or not executing it): undefined on hardware")
        back = np.full(w.count * WARP, -1, dtype=np.int64)
        back[w.slot] = np.arange(m.n)
        idx = back[np.clip(src, 0, w.count * WARP - 1)]
        out = value[np.where(idx < 0, np.arange(m.n), idx)]
        d(m, out, mask)
        if p is not None:
            p(m, pval, mask)
    return run


# ============================================================================ vote.sync
def dec_vote(ins: Instr, ctx: Ctx) -> Fn:
    """vote.sync.{all,any,uni}.pred d, {!}a, membermask; vote.sync.ballot.b32 d, {!}a, membermask."""
    modes = frozenset(("all", "any", "uni", "ballot"))
    flags, (t,) = split_mods(ctx, ins.mods, modes | {"sync"}, frozenset(("pred", "b32")))
    mode = [f for f in ins.mods if f in modes]
    if "sync" not in flags or len(mode) != 1:
        raise ctx.error("vote needs .sync and one mode (.all, .any, .uni, .ballot); vote without .sync is not "
                        "modelled")
    if (mode[0] == "ballot") != (t.name == "b32"):
        raise ctx.error("vote.sync.ballot takes .b32, the other modes .pred")
    arity(ctx, ins, 3)
    d, a = ctx.dst(ins.operands[0], t), ctx.src(ins.operands[1], ctx.ptype("pred"))
    members = ctx.src(ins.operands[2], ctx.ptype("u32"))
    how = mode[0]

    def run(m: Machine, mask: Mask) -> None:
        s = _Sync(m, mask, members(m, mask))
        pred = np.broadcast_to(np.asarray(a(m, mask), dtype=bool), (m.n,)) & s.active
        true_bits = _bits(_grid(s.w, pred, bool))[s.w.warp]
        group = s.in_members(s.w.lane)
        hits = true_bits & group
        if how == "ballot":
            d(m, hits.astype(np.uint32), mask)
        elif how == "any":
            d(m, hits != 0, mask)
        elif how == "all":
            d(m, hits == group, mask)
        else:
            d(m, (hits == 0) | (hits == group), mask)
    return run


# ============================================================================ match.sync
def dec_match(ins: Instr, ctx: Ctx) -> Fn:
    """match.any.sync.type d, a, membermask; match.all.sync.type d[|p], a, membermask (.b32, .b64)."""
    modes = frozenset(("any", "all"))
    flags, (t,) = split_mods(ctx, ins.mods, modes | {"sync"}, frozenset(("b32", "b64")))
    mode = [f for f in ins.mods if f in modes]
    if "sync" not in flags or len(mode) != 1:
        raise ctx.error("match needs .sync and .any or .all")
    arity(ctx, ins, 3)
    first = ins.operands[0]
    u32 = ctx.ptype("u32")
    if isinstance(first, Pair):
        if mode[0] != "all":
            raise ctx.error("only match.all has a predicate destination")
        d, p = ctx.dst(Reg(first.first), u32), ctx.dst(Reg(first.second), ctx.ptype("pred"))
    else:
        d, p = ctx.dst(first, u32), None
    a, members = ctx.src(ins.operands[1], t), ctx.src(ins.operands[2], u32)
    how = mode[0]

    def run(m: Machine, mask: Mask) -> None:
        s = _Sync(m, mask, members(m, mask))
        w = s.w
        v = np.broadcast_to(unsigned(np.asarray(a(m, mask)), t.bits).astype(np.uint64), (m.n,))
        rows = _grid(w, v, np.uint64)[w.warp]  # (lanes, 32): the warp's values
        same = (rows == v[:, None])
        group = s.in_members(w.lane)
        hits = _bits(same) & group
        if how == "any":
            d(m, hits.astype(np.uint32), mask)
        else:
            all_same = hits == group
            d(m, np.where(all_same, group, 0).astype(np.uint32), mask)
            if p is not None:
                p(m, all_same, mask)
    return run


# ============================================================================ redux.sync
_REDUX: dict[str, Callable[[np.ndarray, Any], Any]] = {
    "add": lambda x, axis: x.sum(axis=axis), "min": lambda x, axis: x.min(axis=axis),
    "max": lambda x, axis: x.max(axis=axis), "and": lambda x, axis: np.bitwise_and.reduce(x, axis=axis),
    "or": lambda x, axis: np.bitwise_or.reduce(x, axis=axis), "xor": lambda x, axis: np.bitwise_xor.reduce(x, axis=axis),
}


def dec_redux(ins: Instr, ctx: Ctx) -> Fn:
    """redux.sync.op.type d, a, membermask: .add/.min/.max on .u32/.s32, .and/.or/.xor on .b32."""
    flags, (t,) = split_mods(ctx, ins.mods, frozenset(_REDUX) | {"sync"}, frozenset(("u32", "s32", "b32")))
    ops = [f for f in ins.mods if f in _REDUX]
    if "sync" not in flags or len(ops) != 1:
        raise ctx.error("redux needs .sync and one operation (.add .min .max .and .or .xor)")
    op = ops[0]
    if (op in ("and", "or", "xor")) != (t.name == "b32"):
        raise ctx.error(f"redux.sync.{op} takes {'.b32' if op in ('and', 'or', 'xor') else '.u32 or .s32'}")
    arity(ctx, ins, 3)
    d, a, members = ctx.dst(ins.operands[0], t), ctx.src(ins.operands[1], t), ctx.src(ins.operands[2], ctx.ptype("u32"))
    fold = _REDUX[op]
    wide = np.int64 if t.name == "s32" else np.uint64

    def run(m: Machine, mask: Mask) -> None:
        s = _Sync(m, mask, members(m, mask))
        w = s.w
        v = np.broadcast_to(np.asarray(a(m, mask)).astype(wide), (m.n,))
        rows = _grid(w, v, wide)[w.warp]
        group = s.in_members(w.lane)
        take = ((group[:, None] >> np.arange(WARP, dtype=np.uint64)) & np.uint64(1)).astype(bool)
        neutral = {"add": 0, "and": 0xFFFFFFFF, "or": 0, "xor": 0,
                   "min": np.iinfo(np.int32).max if wide is np.int64 else 0xFFFFFFFF,
                   "max": np.iinfo(np.int32).min if wide is np.int64 else 0}[op]
        out = fold(np.where(take, rows, wide(neutral)), 1)
        d(m, (np.asarray(out).astype(np.int64) & 0xFFFFFFFF).astype(np.uint32).view(t.dtype), mask)
    return run


DECODERS: dict[str, Callable[[Instr, Ctx], Fn]] = {
    "shfl": dec_shfl, "vote": dec_vote, "match": dec_match, "redux": dec_redux,
}
