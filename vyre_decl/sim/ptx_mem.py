"""Memory instructions: ld and st (.global .shared .local .param and generic addresses; .v2/.v4;
caching, .nc and ordering qualifiers accepted and given no meaning, once ``ptx_order`` has checked the
orders and scopes as ptxas does), cvta, atom and red (in lane order: a defined order), membar/fence
(checked by ``ptx_order``; no-ops: lanes run in program order).

Global accesses go through DeviceMemory: outside every live allocation is KernelFault
'illegal_address' naming the address, and an address not aligned to the access size is
'misaligned_address', as on hardware. Shared accesses outside the block's shared memory are a
sanitizer finding 'oob_shared' (the lane reads 0, its store is dropped) or, without the sanitizer,
KernelFault 'illegal_address'; local accesses likewise ('oob_local'), and a read of local bytes the
thread never wrote is the finding 'uninitialised_local'. Generic addresses map the shared window at SHARED_WINDOW and local
memory at LOCAL_WINDOW; anything else is global."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .memory import MemoryFault
from .ptx_ast import Addr, Instr, Vec
from .ptx_machine import Fn, Machine, Mask, PType
from .ptx_operands import Ctx, arity
from .ptx_order import ORDER_MODS, check_fence, check_order, is_strong
from .ptx_sanitize import local_access, shared_access

__all__ = ["DECODERS", "SHARED_WINDOW", "LOCAL_WINDOW", "Space", "read_at", "write_at", "resolve", "space_of"]

SHARED_WINDOW = 0x0000_0001_0000_0000  # generic addresses of the block's shared memory
LOCAL_WINDOW = 0x0000_0002_0000_0000  # generic addresses of a thread's local memory
_WINDOW = 0x0000_0001_0000_0000
_SPACES = ("global", "shared", "local", "param", "const")
_IGNORED = frozenset(("ca", "cg", "cs", "lu", "cv", "wb", "wt", "nc", "unified")) | ORDER_MODS
_ELEMENT = frozenset(("b8", "b16", "b32", "b64", "u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64", "f16",
                      "f32", "f64", "bf16", "f16x2", "bf16x2", "b128"))


class Space:
    """Where an access goes: its state space, and the address of each active lane."""

    def __init__(self, ctx: Ctx, space: str, addr: Addr) -> None:
        self.space, self.param = space, None
        self.base: Callable[[Machine, Mask], Any] | None = None
        self.const = addr.offset
        if addr.base is None:
            pass
        elif addr.base.startswith("%"):
            i, rt = ctx.reg(addr.base)
            if rt.bits not in (32, 64):
                raise ctx.error(f"{addr.base} cannot hold an address")
            self.base = lambda m, mask: m.regs[i]
            self.reg_index, self.reg_name = i, addr.base
        elif space == "param" and addr.base in ctx.params:
            self.param = ctx.params[addr.base]
            self.const = self.param.offset + addr.offset
        else:
            self.const = ctx.address_of(addr.base) + addr.offset
            if space == "generic":
                self.const += SHARED_WINDOW if addr.base in ctx.shared else LOCAL_WINDOW

    def addresses(self, m: Machine, mask: Mask, idx: Any) -> np.ndarray:
        if self.base is None:
            return np.full(m.count(mask), self.const, dtype=np.uint64)
        if m.init is not None:
            m.check_init(self.reg_index, mask, self.reg_name)
        return self.base(m, mask)[idx].astype(np.uint64) + np.uint64(self.const & 0xFFFFFFFFFFFFFFFF)


def space_of(ctx: Ctx, mods: tuple[str, ...]) -> tuple[str, list[str]]:
    space, rest = "generic", []
    for mod in mods:
        name = mod.split("::")[0]
        if name in _SPACES:
            if space != "generic":
                raise ctx.error("more than one state space")
            space = name
        elif name in _IGNORED or name.startswith(("L1", "L2")) or "::" in mod and name not in _ELEMENT:
            continue
        else:
            rest.append(mod)
    if space == "const":
        raise ctx.error(".const memory is not modelled")
    return space, rest


def _vec_and_type(ctx: Ctx, rest: list[str]) -> tuple[int, PType]:
    vec = 1
    if rest and rest[0] in ("v2", "v4", "v8"):
        vec = int(rest.pop(0)[1:])
    if len(rest) != 1 or rest[0] not in _ELEMENT or rest[0] == "b128":
        raise ctx.error(f"unsupported modifiers or type .{'.'.join(rest)}")
    return vec, ctx.ptype(rest[0])


# ============================================================================ raw access
def load(m: Machine, sp: Space, mask: Mask, t: PType, vec: int) -> list[np.ndarray]:
    """The ``vec`` elements at each active lane's address (a list of arrays over active lanes)."""
    idx = m.lanes(mask)
    addr = sp.addresses(m, mask, idx)
    size = t.bits // 8
    if sp.space == "param":
        raw = m.params[sp.const:sp.const + size * vec]
        vals = np.frombuffer(raw, dtype=t.dtype, count=vec) if len(raw) == size * vec else _param_fault(m, sp)
        return [np.full(addr.size, v, dtype=t.dtype) for v in vals]
    space, addr = resolve(m, sp.space, addr, size * vec)
    return [read_at(m, space, addr + np.uint64(k * size), idx, t.dtype) for k in range(vec)]


def store(m: Machine, sp: Space, mask: Mask, t: PType, values: list[Any]) -> None:
    idx = m.lanes(mask)
    addr = sp.addresses(m, mask, idx)
    size = t.bits // 8
    if sp.space == "param":
        raise m.fault("illegal_instruction", "a kernel parameter cannot be stored to")
    space, addr = resolve(m, sp.space, addr, size * len(values))
    for k, v in enumerate(values):
        vals = np.broadcast_to(np.asarray(v, dtype=t.dtype), (addr.size,)) if np.ndim(v) == 0 else \
            np.asarray(v, dtype=t.dtype)[idx]
        write_at(m, space, addr + np.uint64(k * size), idx, vals)


def _param_fault(m: Machine, sp: Space) -> Any:
    raise m.fault("illegal_address", f"parameter offset {sp.const} is past the parameter buffer")


def resolve(m: Machine, space: str, addr: np.ndarray, width: int) -> tuple[str, np.ndarray]:
    if (addr % np.uint64(width)).any():
        bad = int(addr[np.flatnonzero(addr % np.uint64(width))[0]])
        raise m.fault("misaligned_address", f"address {bad:#x} is not aligned to the {width}-byte access")
    if space != "generic":
        return space, addr
    if addr.size and ((addr >= np.uint64(SHARED_WINDOW)) & (addr < np.uint64(LOCAL_WINDOW + _WINDOW))).any():
        shared = (addr >= np.uint64(SHARED_WINDOW)) & (addr < np.uint64(SHARED_WINDOW + _WINDOW))
        if shared.all():
            return "shared", addr - np.uint64(SHARED_WINDOW)
        local = (addr >= np.uint64(LOCAL_WINDOW)) & (addr < np.uint64(LOCAL_WINDOW + _WINDOW))
        if local.all():
            return "local", addr - np.uint64(LOCAL_WINDOW)
        raise m.fault("illegal_instruction", "one generic access mixes state spaces across lanes (not modelled)")
    return "global", addr


def read_at(m: Machine, space: str, addr: np.ndarray, idx: Any, dt: np.dtype) -> np.ndarray:
    if space == "global":
        try:
            return m.memory.load(addr, dt)
        except MemoryFault as exc:
            raise m.fault("illegal_address", f"read of {exc.nbytes} bytes at {exc.address:#x}, outside every "
                          "live allocation") from None
    if space == "shared":
        flat, ok = shared_access(m, addr, idx, dt.itemsize, write=False)
        out = np.zeros(addr.size, dtype=dt)
        good = np.flatnonzero(ok)
        out[good] = m.shared.reshape(-1)[flat[good][:, None] + np.arange(dt.itemsize)].view(dt)[:, 0]
        return out
    lanes, cols, ok = local_access(m, addr, idx, dt.itemsize, write=False)
    raw = np.zeros((addr.size, dt.itemsize), dtype=np.uint8)
    good = np.flatnonzero(ok)
    raw[good] = m.local[lanes[good, None], cols[good]]
    return raw.view(dt)[:, 0]


def write_at(m: Machine, space: str, addr: np.ndarray, idx: Any, vals: np.ndarray) -> None:
    if space == "global":
        try:
            m.memory.store(addr, np.ascontiguousarray(vals))
        except MemoryFault as exc:
            raise m.fault("illegal_address", f"write of {exc.nbytes} bytes at {exc.address:#x}, outside every "
                          "live allocation") from None
        return
    raw = np.ascontiguousarray(vals).view(np.uint8).reshape(-1, vals.dtype.itemsize)
    if space == "shared":
        flat, ok = shared_access(m, addr, idx, vals.dtype.itemsize, write=True)
        good = np.flatnonzero(ok)
        m.shared.reshape(-1)[flat[good][:, None] + np.arange(vals.dtype.itemsize)] = raw[good]
        return
    lanes, cols, ok = local_access(m, addr, idx, vals.dtype.itemsize, write=True)
    good = np.flatnonzero(ok)
    m.local[lanes[good, None], cols[good]] = raw[good]


# ============================================================================ decoders
def dec_ld(ins: Instr, ctx: Ctx) -> Fn:
    space, rest = space_of(ctx, ins.mods)
    check_order(ctx, "ld", ins.mods, space)
    vec, t = _vec_and_type(ctx, rest)
    arity(ctx, ins, 2)
    target, where = ins.operands
    if not isinstance(where, Addr):
        raise ctx.error("the source of ld must be an address [..]")
    sp = Space(ctx, space, where)
    items = target.items if isinstance(target, Vec) else (target,)
    if len(items) != vec:
        raise ctx.error(f"{'.v' + str(vec) if vec > 1 else 'a scalar load'} needs {vec} destination(s)")
    rt = ctx.ptype("b16") if t.name == "bf16" else t
    dsts = [ctx.dst(o, rt, wider_ok=True) for o in items]

    def run(m: Machine, mask: Mask) -> None:
        vals = load(m, sp, mask, rt, vec)
        for d, v in zip(dsts, vals):
            if mask is None:
                d(m, v, None)
            else:
                full = np.zeros(m.n, dtype=v.dtype)
                full[mask] = v
                d(m, full, mask)
    return _untracked(run) if is_strong(ins.mods) else run


def dec_st(ins: Instr, ctx: Ctx) -> Fn:
    space, rest = space_of(ctx, ins.mods)
    check_order(ctx, "st", ins.mods, space)
    vec, t = _vec_and_type(ctx, rest)
    arity(ctx, ins, 2)
    where, source = ins.operands
    if not isinstance(where, Addr):
        raise ctx.error("the target of st must be an address [..]")
    sp = Space(ctx, space, where)
    items = source.items if isinstance(source, Vec) else (source,)
    if len(items) != vec:
        raise ctx.error(f"the store needs {vec} source value(s)")
    rt = ctx.ptype("b16") if t.name == "bf16" else t
    srcs = [ctx.src(o, rt, wider_ok=True) for o in items]

    def run(m: Machine, mask: Mask) -> None:
        store(m, sp, mask, rt, [s(m, mask) for s in srcs])
    return _untracked(run) if is_strong(ins.mods) else run


def _untracked(fn: Fn) -> Fn:
    """``fn`` with the shared-memory race tracker off while it runs: strong accesses, like atomics,
    do not race with one another (``ptx_order.is_strong``)."""
    def run(m: Machine, mask: Mask) -> None:
        race, m.race = m.race, None
        try:
            fn(m, mask)
        finally:
            m.race = race
    return run


def dec_cvta(ins: Instr, ctx: Ctx) -> Fn:
    """cvta{.to}.space.u32|u64: between a state space's addresses and generic ones."""
    mods = list(ins.mods)
    to = bool(mods) and mods[0] == "to"
    if to:
        mods.pop(0)
    if len(mods) != 2 or mods[0] not in ("global", "shared", "local", "param", "const") or mods[1] not in ("u32", "u64"):
        raise ctx.error("cvta{.to}.space.u32|u64 with space global, shared or local")
    arity(ctx, ins, 2)
    t = ctx.ptype(mods[1])
    d, a = ctx.dst(ins.operands[0], t), ctx.src(ins.operands[1], t)
    base = {"shared": SHARED_WINDOW, "local": LOCAL_WINDOW}.get(mods[0], 0)
    if mods[0] in ("param", "const"):
        raise ctx.error(f"cvta of .{mods[0]} addresses is not modelled")
    delta = t.dtype.type((-base if to else base) & ((1 << t.bits) - 1))
    return lambda m, mask: d(m, np.asarray(a(m, mask)) + delta, mask)


def dec_fence(ins: Instr, ctx: Ctx) -> Fn:
    check_fence(ctx, ins.opcode, ins.mods)
    arity(ctx, ins, 0)
    return lambda m, mask: None


DECODERS: dict[str, Callable[[Instr, Ctx], Fn]] = {
    "ld": dec_ld, "st": dec_st, "cvta": dec_cvta, "membar": dec_fence, "fence": dec_fence,
}
