"""atom and red on global, shared and generic addresses: and or xor cas exch add inc dec min max.

The lanes of one instruction apply their read-modify-writes in lane order (a defined order; the
hardware's is unspecified): lanes on distinct addresses at once, lanes sharing an address one
rank after another, so each lane's old value is what the lanes before it left. Integer add takes
one vectorised pass (prefix sums within each address)."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .ptx_ast import Addr, Instr
from .ptx_machine import Fn, Machine, Mask, PType
from .ptx_mem import Space, read_at, resolve, space_of, write_at
from .ptx_operands import Ctx
from .ptx_order import check_order

__all__ = ["DECODERS"]

_OPS = {
    "and": ("b32", "b64"), "or": ("b32", "b64"), "xor": ("b32", "b64"), "cas": ("b32", "b64"),
    "exch": ("b32", "b64"), "add": ("u32", "s32", "u64", "s64", "f32", "f64"), "inc": ("u32",), "dec": ("u32",),
    "min": ("u32", "s32", "u64", "s64"), "max": ("u32", "s32", "u64", "s64"),
}


def _combine(op: str, t: PType) -> Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]:
    """new memory value from (old, b, c)."""
    zero, one = t.dtype.type(0), t.dtype.type(1)
    table: dict[str, Callable[[Any, Any, Any], Any]] = {
        "and": lambda o, b, c: o & b,
        "or": lambda o, b, c: o | b,
        "xor": lambda o, b, c: o ^ b,
        "exch": lambda o, b, c: b,
        "cas": lambda o, b, c: np.where(o == b, c, o),
        "add": lambda o, b, c: o + b,
        "inc": lambda o, b, c: np.where(o >= b, zero, o + one),
        "dec": lambda o, b, c: np.where((o == 0) | (o > b), b, o - one),
        "min": lambda o, b, c: np.minimum(o, b),
        "max": lambda o, b, c: np.maximum(o, b),
    }
    return table[op]


def _ranks(cells: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(order, rank): lanes sorted by cell (stable, so lane order within a cell), and each sorted
    lane's position among the lanes of its cell."""
    order = np.argsort(cells, kind="stable")
    sc = cells[order]
    start = np.ones(sc.size, dtype=bool)
    start[1:] = sc[1:] != sc[:-1]
    first = np.maximum.accumulate(np.where(start, np.arange(sc.size), 0))
    return order, np.arange(sc.size) - first


def apply(m: Machine, space: str, addr: np.ndarray, idx: Any, t: PType, op: str, b: np.ndarray,
          c: np.ndarray) -> np.ndarray:
    """Apply the atomics of the active lanes in lane order; their old values."""
    if addr.size == 0:
        return np.zeros(0, dtype=t.dtype)
    f = _combine(op, t)
    cells = addr
    if space == "shared":  # the same offset in two blocks is two cells
        lanes = np.arange(m.n)[idx]
        cells = m.block_of[lanes].astype(np.uint64) * np.uint64(m.shared.shape[1] + 1) + addr
    order, rank = _ranks(cells)
    if op == "add" and t.kind in ("u", "s") and rank.max() > 0:
        return _add_all(m, space, addr, idx, t, b, order, rank)
    old = np.empty(addr.size, dtype=t.dtype)
    sel_idx = np.arange(addr.size)
    for r in range(int(rank.max()) + 1):
        lanes = order[rank == r]
        lanes.sort()
        sub = sel_idx[lanes] if isinstance(idx, slice) else idx[lanes]
        cur = read_at(m, space, addr[lanes], sub, t.dtype)
        old[lanes] = cur
        write_at(m, space, addr[lanes], sub, np.asarray(f(cur, b[lanes], c[lanes]), dtype=t.dtype))
    return old


def _add_all(m: Machine, space: str, addr: np.ndarray, idx: Any, t: PType, b: np.ndarray,
             order: np.ndarray, rank: np.ndarray) -> np.ndarray:
    """Integer atomic add: each lane's old value is the start value plus the adds before it."""
    ut = np.dtype(f"uint{t.bits}")
    firsts = order[rank == 0]
    sub = np.arange(addr.size)[firsts] if isinstance(idx, slice) else idx[firsts]
    start = read_at(m, space, addr[firsts], sub, t.dtype).view(ut).astype(np.uint64)
    vals = b.view(ut).astype(np.uint64)[order]
    csum = np.cumsum(vals, dtype=np.uint64)
    group = np.cumsum(rank == 0) - 1  # which cell each sorted lane belongs to
    before = csum - vals  # inclusive sum minus own value
    base = (before[rank == 0])[group]
    old_sorted = start[group] + (before - base)
    old = np.empty(addr.size, dtype=np.uint64)
    old[order] = old_sorted
    ends = np.flatnonzero(np.r_[rank[1:] == 0, True])
    final = (start + (csum[ends] - base[ends])).astype(ut)
    write_at(m, space, addr[firsts], sub, final.view(t.dtype))
    return old.astype(ut).view(t.dtype)


def dec_atom(ins: Instr, ctx: Ctx) -> Fn:
    red = ins.opcode == "red"
    space, rest = space_of(ctx, ins.mods)
    if space not in ("global", "shared", "generic"):
        raise ctx.error(f"{ins.opcode} on .{space} memory does not exist")
    check_order(ctx, ins.opcode, ins.mods, space)
    if len(rest) != 2 or rest[0] not in _OPS or rest[1] not in _OPS[rest[0]]:
        raise ctx.error(f"unsupported {ins.opcode} form .{'.'.join(rest)}")
    op, t = rest[0], ctx.ptype(rest[1])
    if op == "cas" and red:
        raise ctx.error("red has no .cas")
    n = (2 if red else 3) + (op == "cas")
    if len(ins.operands) != n:
        raise ctx.error(f"{ins.opcode}.{op} takes {n} operands")
    ops = ins.operands if red else ins.operands[1:]
    where = ops[0]
    if not isinstance(where, Addr):
        raise ctx.error("the address operand must be [..]")
    sp = Space(ctx, space, where)
    d = None if red else ctx.dst(ins.operands[0], t)
    b = ctx.src(ops[1], t)
    c = ctx.src(ops[2], t) if op == "cas" else None

    def run(m: Machine, mask: Mask) -> None:
        idx = m.lanes(mask)
        addr = sp.addresses(m, mask, idx)
        kind, addr = resolve(m, sp.space, addr, t.bits // 8)
        bv = np.broadcast_to(np.asarray(b(m, mask), dtype=t.dtype), (m.n,))[idx]
        cv = np.broadcast_to(np.asarray(c(m, mask), dtype=t.dtype), (m.n,))[idx] if c is not None else bv
        race, m.race = m.race, None  # atomics do not race with one another
        try:
            old = apply(m, kind, addr, idx, t, op, np.ascontiguousarray(bv), np.ascontiguousarray(cv))
        finally:
            m.race = race
        if d is not None:
            full = np.zeros(m.n, dtype=t.dtype)
            full[idx] = old
            d(m, full, mask)
    return run


DECODERS: dict[str, Callable[[Instr, Ctx], Fn]] = {"atom": dec_atom, "red": dec_atom}
