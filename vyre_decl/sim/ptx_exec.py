"""Running a decoded kernel over a grid: blocks in groups (as many as fit a vector of about 2^16
lanes, in grid order), each group one numpy vector of lanes with a program counter per lane.

Scheduling: the lanes at the lowest pending program counter run together, straight on until a
branch splits them, they reach another group's counter (where the two merge), a barrier or an
exit — so lanes that diverged reconverge where their paths meet, and a loop runs until its last
lane leaves. A lane at bar.sync waits; when no lane can run, every waiting lane is released (a
block whose waiting lanes stand at different barriers, or that has exited lanes, is a
'divergent_barrier' finding) and the shared-memory race epoch ends."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from .memory import DeviceMemory
from .ptx_decode import BAR, BRA, EXIT, OP, TRAP, Op, Program
from .ptx_machine import Machine, Mask
from .ptx_sanitize import RaceTracker
from .ptx_types import Finding, KernelTimeout

__all__ = ["launch", "LANES_PER_GROUP"]

LANES_PER_GROUP = 1 << 16
_REGISTER_BYTES = 256 << 20  # register vectors of one group, at most


def launch(prog: Program, grid: tuple[int, int, int], block: tuple[int, int, int], params: bytes,
           memory: DeviceMemory, sanitize: bool, dynamic_shared: int = 0, deadline: float | None = None,
           stats: dict[str, Any] | None = None) -> list[Finding]:
    """Run ``prog`` on every block of ``grid``; the findings (one per kind and PTX line)."""
    dims = tuple(grid) + tuple(block)
    if len(dims) != 6 or any(not isinstance(d, (int, np.integer)) or d < 1 for d in dims):
        raise ValueError(f"grid {grid} and block {block} need three positive integers each")
    grid, block = (int(grid[0]), int(grid[1]), int(grid[2])), (int(block[0]), int(block[1]), int(block[2]))
    if len(params) < prog.param_bytes:
        raise ValueError(f"{prog.name} takes {prog.param_bytes} bytes of parameters, {len(params)} given")
    threads = block[0] * block[1] * block[2]
    n_blocks = grid[0] * grid[1] * grid[2]
    shared = prog.shared_bytes if not prog.dynamic_shared else prog.dynamic_offset + dynamic_shared
    per_lane = sum(b // 8 or 1 for b in prog.reg_bits) + prog.local_bytes + 1
    per_group = max(1, min(n_blocks, LANES_PER_GROUP // threads, _REGISTER_BYTES // (threads * per_lane)))
    findings: dict[tuple[str, int], Finding] = {}
    steps = 0
    for first in range(0, n_blocks, per_group):
        count = min(per_group, n_blocks - first)
        m = Machine(prog.name, prog.reg_bits, count, threads, memory, bytes(params), shared, prog.local_bytes,
                    sanitize)
        m.block_base = first
        m.special = Specials(m.n, grid, block, first, shared, dynamic_shared)
        if sanitize and shared:
            m.race = RaceTracker(count * shared)
        _run(prog, m, deadline)
        for key, f in m.findings.items():
            findings.setdefault(key, f)
        steps += m.steps
    if stats is not None:
        stats["lane_instructions"] = stats.get("lane_instructions", 0) + steps
    return sorted(findings.values(), key=lambda f: (f.line, f.kind))


class Specials(dict):  # type: ignore[type-arg]
    """The special registers of a group of blocks, each computed when first read."""

    def __init__(self, n: int, grid: tuple[int, int, int], block: tuple[int, int, int], first: int, shared: int,
                 dynamic: int) -> None:
        super().__init__()
        self.n, self.grid, self.block, self.first, self.shared, self.dynamic = n, grid, block, first, shared, dynamic

    def __missing__(self, name: str) -> np.ndarray:
        if name in ("%clock64", "%gridid", "%globaltimer"):
            value = np.full(self.n, time.time_ns() if name == "%globaltimer" else 0, dtype=np.uint64)
        else:
            raw = self._value(name)
            value = np.ascontiguousarray(np.broadcast_to(np.asarray(raw, dtype=np.int64).astype(np.uint32), (self.n,)))
        self[name] = value
        return value

    def _value(self, name: str) -> Any:
        threads = self.block[0] * self.block[1] * self.block[2]
        t = np.arange(self.n, dtype=np.int64) % threads
        b = self.first + np.arange(self.n, dtype=np.int64) // threads
        (bx, by, bz), (gx, gy, gz) = self.block, self.grid
        lane = t % 32
        table: dict[str, Any] = {
            "%tid.x": lambda: t % bx, "%tid.y": lambda: (t // bx) % by, "%tid.z": lambda: t // (bx * by),
            "%ctaid.x": lambda: b % gx, "%ctaid.y": lambda: (b // gx) % gy, "%ctaid.z": lambda: b // (gx * gy),
            "%ntid.x": lambda: bx, "%ntid.y": lambda: by, "%ntid.z": lambda: bz, "%nctaid.x": lambda: gx,
            "%nctaid.y": lambda: gy, "%nctaid.z": lambda: gz, "%laneid": lambda: lane, "%warpid": lambda: t // 32,
            "%nwarpid": lambda: -(-threads // 32), "%smid": lambda: 0, "%nsmid": lambda: 1,
            "%lanemask_eq": lambda: 1 << lane, "%lanemask_lt": lambda: (1 << lane) - 1,
            "%lanemask_le": lambda: (2 << lane) - 1, "%lanemask_gt": lambda: ~((2 << lane) - 1),
            "%lanemask_ge": lambda: ~((1 << lane) - 1), "%warpsize": lambda: 32, "WARP_SZ": lambda: 32,
            "%clock": lambda: 0, "%dynamic_smem_size": lambda: self.dynamic, "%total_smem_size": lambda: self.shared,
        }
        if name not in table:
            raise KeyError(name)
        return table[name]()


def _run(prog: Program, m: Machine, deadline: float | None) -> None:
    ops = prog.ops
    n = m.n
    pc = np.zeros(n, dtype=np.int64)
    alive = np.ones(n, dtype=bool)
    m.alive = alive  # updated in place as lanes exit (warp instructions read it)
    waiting = np.zeros(n, dtype=bool)
    end = len(ops) + 1
    with np.errstate(all="ignore"):
        while True:
            runnable = alive & ~waiting
            if not runnable.any():
                if not alive.any():
                    return
                _release(m, ops, pc, waiting, alive)
                continue
            start = int(pc[runnable].min())
            group = runnable & (pc == start)
            rest = runnable & ~group
            stop = int(pc[rest].min()) if rest.any() else end
            mask = None if group.all() else group
            _straight(m, ops, pc, group, mask, start, stop, alive, waiting, deadline)


def _guard(m: Machine, op: Op, mask: Mask) -> Any:
    if m.init is not None:
        m.check_init(op.guard, mask, "the guard predicate")
    g = m.regs[op.guard]
    if op.negated:
        g = ~g
    return g if mask is None else (g & mask)


def _straight(m: Machine, ops: list[Op], pc: np.ndarray, group: np.ndarray, mask: Mask, start: int, stop: int,
              alive: np.ndarray, waiting: np.ndarray, deadline: float | None) -> None:
    """Run the lanes of ``group`` (all at ``start``) until they split, meet others, wait or exit."""
    p = start
    lanes = m.count(mask)
    while True:
        if p >= stop:
            pc[group] = p
            return
        op = ops[p]
        m.instr = op.instr
        emask = mask if op.guard < 0 else _guard(m, op, mask)
        kind = op.kind
        if kind == OP:
            if emask is mask or emask.any():  # type: ignore[union-attr]
                op.fn(m, emask)  # type: ignore[misc]
                m.steps += lanes
            p += 1
            continue
        if kind == BRA:
            m.steps += lanes
            taken = _split(emask, mask)
            if taken is None:  # some lanes go each way
                assert emask is not None
                pc[emask] = op.target
                pc[group & ~emask] = p + 1
                return
            if taken:
                if op.target <= p and deadline is not None and time.monotonic() > deadline:
                    raise KernelTimeout(m.kernel, m.steps)
                p = op.target
                if p > stop:
                    pc[group] = p
                    return
            else:
                p += 1
            continue
        if kind == BAR:
            pc[group] = p
            waiting |= group
            return
        if kind == EXIT:
            _exit(pc, group, emask, mask, alive, p)
            return
        if kind == TRAP and (emask is mask or emask.any()):  # type: ignore[union-attr]
            raise m.fault("trap", "a trap instruction ran")
        p += 1


def _split(emask: Mask, mask: Mask) -> bool | None:
    """True: every lane of the group takes the branch; False: none; None: the group splits."""
    if emask is mask:
        return True
    assert emask is not None
    if not emask.any():
        return False
    if mask is None:
        return True if emask.all() else None
    return True if not (mask & ~emask).any() else None


def _exit(pc: np.ndarray, group: np.ndarray, emask: Mask, mask: Mask, alive: np.ndarray, p: int) -> None:
    leaving = group if emask is None or emask is mask else emask
    alive &= ~leaving
    staying = group & ~leaving
    pc[staying] = p + 1


def _release(m: Machine, ops: list[Op], pc: np.ndarray, waiting: np.ndarray, alive: np.ndarray) -> None:
    """Every live lane waits at a barrier: check each block's lanes met at one barrier, release."""
    shape = (m.blocks, m.threads)
    w, a, p = waiting.reshape(shape), alive.reshape(shape), pc.reshape(shape)
    at_bar = w.any(axis=1)
    lo = np.where(w, p, np.iinfo(np.int64).max).min(axis=1)
    hi = np.where(w, p, -1).max(axis=1)
    exited = np.asarray(at_bar & ~a.all(axis=1))
    apart = at_bar & (lo != hi)
    if m.sanitize and (exited | apart).any():
        b = int(np.flatnonzero(exited | apart)[0])
        m.instr = ops[int(lo[b])].instr
        gone = int(m.threads - a[b].sum())
        why = (f"{gone} of its {m.threads} threads have exited" if exited[b] else
               f"its threads wait at different barriers (PTX lines {ops[int(lo[b])].instr.line} and "
               f"{ops[int(hi[b])].instr.line})")
        m.report("divergent_barrier", f"bar.sync in block {b + m.block_base} is not reached by the whole block: "
                 f"{why}")
    pc[waiting] += 1
    waiting[:] = False
    if m.race is not None:
        m.race.reset()
