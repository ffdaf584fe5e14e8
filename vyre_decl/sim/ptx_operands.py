"""Operands at decode time: each PTX operand becomes a reader (machine, mask -> values of the
instruction's type) or a writer (machine, values, mask -> None), after the PTX type-checking rules
(operand sizes match the instruction type except where ld/st/cvt allow wider registers; float
instructions take float or bit registers; integer instructions take integer or bit registers)."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .ptx_ast import FImm, Imm, Instr, Operand, Reg, Sym
from .ptx_machine import PTYPES, Machine, Mask, PType, Reader, Writer, storage_dtype
from .ptx_types import Param, PtxError

__all__ = ["Ctx", "SPECIALS", "split_mods", "arity"]

# special registers (u32 unless named in _SPECIAL64)
SPECIALS = frozenset(
    [f"%{r}.{a}" for r in ("tid", "ntid", "ctaid", "nctaid") for a in "xyz"]
    + ["%laneid", "%warpid", "%nwarpid", "%smid", "%nsmid", "%gridid", "%lanemask_eq", "%lanemask_lt",
       "%lanemask_le", "%lanemask_gt", "%lanemask_ge", "%clock", "%clock64", "%globaltimer", "%warpsize",
       "%dynamic_smem_size", "%total_smem_size", "WARP_SZ"])
_SPECIAL64 = frozenset(["%clock64", "%globaltimer", "%gridid"])


@dataclass
class Ctx:
    """What decoding an entry's instructions needs to know."""

    kernel: str
    sm: int
    regs: dict[str, tuple[int, PType]]
    labels: dict[str, int]
    shared: dict[str, int]  # variable -> byte offset in the block's shared memory
    local: dict[str, int]
    params: dict[str, Param]
    instr: Instr | None = None
    version: tuple[int, int] = (0, 0)  # the module's PTX ISA version
    readers: dict[tuple[str, bool, str, bool], Reader] = field(default_factory=dict)
    writers: dict[tuple[str, bool, str, bool], Writer] = field(default_factory=dict)

    def error(self, message: str) -> PtxError:
        ins = self.instr
        return PtxError(ins.line if ins else 0, f"{ins.text}: {message}" if ins else message)

    # --- types
    def ptype(self, name: str) -> PType:
        try:
            return PTYPES[name]
        except KeyError:
            raise self.error(f".{name} is not a PTX type here") from None

    def check(self, reg: str, rt: PType, it: PType, wider_ok: bool) -> None:
        """PTX's type-checking rule for register ``reg`` of type ``rt`` in an instruction of type ``it``."""
        if (rt.kind == "pred") != (it.kind == "pred"):
            raise self.error(f"{reg} is .{rt.name}, the instruction needs .{it.name}")
        if rt.bits < it.bits or (rt.bits > it.bits and not wider_ok):
            raise self.error(f"{reg} is .{rt.name} ({rt.bits} bits), the instruction type .{it.name} has {it.bits}")
        if rt.bits == it.bits and rt.kind != "b" and it.kind != "b":
            if (rt.kind in ("f", "bf")) != (it.kind in ("f", "bf")):
                raise self.error(f"{reg} is .{rt.name}, which an instruction of type .{it.name} cannot take")

    def reg(self, name: str) -> tuple[int, PType]:
        found = self.regs.get(name)
        if found is None:
            raise self.error(f"{name} is not a declared register")
        return found

    # --- readers (memoised: most operands of a module repeat)
    def src(self, op: Operand, t: PType, wider_ok: bool = False) -> Reader:
        if type(op) is not Reg:
            return self._src(op, t, wider_ok)
        key = (op.name, op.negated, t.name, wider_ok)  # type: ignore[union-attr]
        found = self.readers.get(key)
        if found is None:
            found = self.readers[key] = self._src(op, t, wider_ok)
        return found

    def _src(self, op: Operand, t: PType, wider_ok: bool) -> Reader:
        if isinstance(op, Reg):
            if op.negated and t.kind != "pred":
                raise self.error(f"!{op.name}: only a predicate can be negated")
            if op.name in SPECIALS:
                return self.special(op.name, t)
            i, rt = self.reg(op.name)
            self.check(op.name, rt, t, wider_ok)
            return _reg_reader(i, rt, t, op.negated, op.name)
        if isinstance(op, (Imm, FImm)):
            value = self.immediate(op, t)
            return lambda m, mask: value
        if isinstance(op, Sym):
            value = self.immediate(Imm(self.address_of(op.name) + op.offset), t)
            return lambda m, mask: value
        raise self.error(f"{type(op).__name__.lower()} operand where a value is expected")

    def address_of(self, name: str) -> int:
        if name in self.shared:
            return self.shared[name]
        if name in self.local:
            return self.local[name]
        raise self.error(f"{name} is not a .shared or .local variable of this entry")

    def immediate(self, op: Imm | FImm, t: PType) -> Any:
        if t.kind == "pred":
            if isinstance(op, FImm):
                raise self.error("a float literal is not a predicate")
            return np.bool_(op.value != 0)
        if t.kind == "f":
            if isinstance(op, Imm):  # an integer literal in a float instruction: its value
                if abs(op.value) >= 2 ** 1024:
                    raise self.error(f"the literal {op.value} is too large for .{t.name}")
                return t.dtype.type(float(op.value))
            if op.width == t.bits:
                return np.array(op.bits, dtype=storage_dtype(t.bits)).view(t.dtype)[()]
            return t.dtype.type(_float_of(op))
        if isinstance(op, FImm):
            if t.kind == "b" and op.width == t.bits:
                return np.array(op.bits, dtype=t.dtype)[()]
            raise self.error("a float literal in an integer instruction")
        if t.bits == 1:
            return np.bool_(op.value)
        raw = op.value & ((1 << t.bits) - 1)
        return np.array(raw, dtype=storage_dtype(t.bits)).view(t.dtype)[()]

    def special(self, name: str, t: PType) -> Reader:
        bits = 64 if name in _SPECIAL64 else 32
        if t.kind in ("f", "bf", "pred") or t.bits < 16 or (t.bits != bits and bits == 64):
            raise self.error(f"{name} cannot be read as .{t.name}")
        dt = t.dtype

        def read(m: Machine, mask: Mask) -> Any:
            try:
                return m.special[name].astype(dt, copy=False)
            except KeyError:
                return _missing(m, name)
        return read

    # --- writers
    def dst(self, op: Operand, t: PType, wider_ok: bool = False) -> Writer:
        if type(op) is not Reg:
            return self._dst(op, t, wider_ok)
        key = (op.name, op.negated, t.name, wider_ok)  # type: ignore[union-attr]
        found = self.writers.get(key)
        if found is None:
            found = self.writers[key] = self._dst(op, t, wider_ok)
        return found

    def _dst(self, op: Operand, t: PType, wider_ok: bool) -> Writer:
        if isinstance(op, Reg) and op.name == "_":
            return lambda m, v, mask: None
        if not isinstance(op, Reg) or op.negated or op.name in SPECIALS:
            raise self.error("the destination must be a register")
        i, rt = self.reg(op.name)
        self.check(op.name, rt, t, wider_ok)
        store = storage_dtype(rt.bits)
        if rt.bits == t.bits:
            if rt.bits == 1:
                return lambda m, v, mask: m.put(i, v, mask)
            return lambda m, v, mask: m.put(i, _bits(v, t.dtype, store), mask)
        signed = t.kind == "s"
        wide = np.dtype(f"int{rt.bits}") if signed else store

        def write_wide(m: Machine, v: Any, mask: Mask) -> None:  # ld/cvt into a wider register: extend
            m.put(i, _bits(v, t.dtype, t.dtype).astype(wide).view(store), mask)
        return write_wide


def _bits(v: Any, dt: np.dtype, store: np.dtype) -> np.ndarray:
    """A semantic result (of the instruction's dtype, or raw bits of its width) as ``store`` bits."""
    v = np.asarray(v)
    if v.dtype.itemsize != dt.itemsize:
        v = v.astype(dt)
    return v.view(store)


def _reg_reader(i: int, rt: PType, t: PType, negated: bool, name: str) -> Reader:
    if t.kind == "pred":
        if negated:
            return lambda m, mask: ~_checked(m, i, mask, name)
        return lambda m, mask: _checked(m, i, mask, name)
    if rt.bits == t.bits:
        dt = t.dtype
        return lambda m, mask: _checked(m, i, mask, name).view(dt)
    narrow = storage_dtype(t.bits)
    dt = t.dtype
    return lambda m, mask: _checked(m, i, mask, name).astype(narrow).view(dt)  # the low bits


def _checked(m: Machine, i: int, mask: Mask, name: str) -> np.ndarray:
    if m.init is not None:
        m.check_init(i, mask, name)
    return m.regs[i]


def _missing(m: Machine, name: str) -> Any:
    raise m.fault("illegal_instruction", f"special register {name} is not modelled")


def _float_of(op: FImm) -> float:
    if op.width == 32:
        return float(struct.unpack("<f", struct.pack("<I", op.bits))[0])
    return float(struct.unpack("<d", struct.pack("<Q", op.bits))[0])


_SPLIT: dict[tuple[tuple[str, ...], frozenset[str], frozenset[str], int], tuple[frozenset[str], list[PType]]] = {}


def split_mods(ctx: Ctx, mods: tuple[str, ...], allowed: frozenset[str], types: frozenset[str],
               ntypes: int = 1) -> tuple[frozenset[str], list[PType]]:
    """The ``ntypes`` type modifiers, in order (each in ``types``), and the other modifiers (each in
    ``allowed``, in any position: prmt.b32.f4e, cvt.f64.bf16.rp); PtxError naming anything else."""
    key = (mods, allowed, types, ntypes)
    found = _SPLIT.get(key)
    if found is None:
        found = _split(ctx, mods, allowed, types, ntypes)
        if len(_SPLIT) < 4096:
            _SPLIT[key] = found
    return found


def _split(ctx: Ctx, mods: tuple[str, ...], allowed: frozenset[str], types: frozenset[str],
           ntypes: int) -> tuple[frozenset[str], list[PType]]:
    tnames = [m for m in mods if m in PTYPES]
    if len(tnames) != ntypes:
        raise ctx.error(f"the instruction needs {ntypes} type modifier(s) (.u32, .f32 ...), found {len(tnames)}")
    for t in tnames:
        if t not in types:
            raise ctx.error(f".{t} is not a type this instruction takes ({', '.join(sorted(types))})")
    rest = [m for m in mods if m not in PTYPES]
    for m in rest:
        if m not in allowed:
            raise ctx.error(f"unknown or unsupported modifier .{m}")
    if len(set(rest)) != len(rest):
        raise ctx.error("a modifier is repeated")
    return frozenset(rest), [ctx.ptype(t) for t in tnames]


def arity(ctx: Ctx, ins: Instr, *counts: int) -> None:
    if len(ins.operands) not in counts:
        want = " or ".join(str(c) for c in counts)
        raise ctx.error(f"{ins.opcode} takes {want} operands, found {len(ins.operands)}")
