"""Giving meaning to a parsed entry: register numbering, the layouts of parameters, shared and local
memory, labels, and each instruction decoded once into an executable closure (or a control-flow
record: bra, bar.sync, ret/exit, trap). Checks what ptxas would: unknown instructions, modifiers
and registers, operand types, instructions newer than the module's target, branch targets."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from . import ptx_atom, ptx_bits, ptx_cmp, ptx_cvt, ptx_float, ptx_int, ptx_mem, ptx_warp
from .ptx_ast import Entry, Imm, Instr, Label, ModuleAst, Sym, Var
from .ptx_machine import PTYPES, Fn, PType
from .ptx_operands import Ctx
from .ptx_types import Param, PtxError

__all__ = ["Op", "Program", "decode", "OP", "BRA", "BAR", "EXIT", "TRAP", "MODELLED"]

OP, BRA, BAR, EXIT, TRAP = range(5)

_DECODERS: dict[str, Callable[[Instr, Ctx], Fn]] = {
    **ptx_int.DECODERS, **ptx_float.DECODERS, **ptx_bits.DECODERS, **ptx_cmp.DECODERS, **ptx_cvt.DECODERS,
    **ptx_mem.DECODERS, **ptx_atom.DECODERS, **ptx_warp.DECODERS,
}
_SHARED_FORMS = frozenset(ptx_int.INT_FORMS) | frozenset(ptx_float.FLOAT_FORMS)
MODELLED = frozenset(_DECODERS) | _SHARED_FORMS | {"bra", "bar", "barrier", "ret", "exit", "trap", "brkpt"}
_NOT_MODELLED = frozenset((
    "call", "brx", "activemask", "elect", "mbarrier", "cp", "ldu", "ldmatrix",
    "stmatrix", "mma", "wmma", "wgmma", "tex", "tld4", "suld", "sust", "sured", "suq", "txq", "prefetch",
    "prefetchu", "isspacep", "istypep", "mapa", "getctarank", "alloca", "stackrestore", "stacksave",
    "nanosleep", "pmevent", "griddepcontrol", "setmaxnreg", "discard", "applypriority", "createpolicy",
    "multimem", "tensormap", "tcgen05", "movmatrix", "clusterlaunchcontrol", "vabsdiff", "vadd", "vsub", "vmad",
    "vmax", "vmin", "vset", "vshl", "vshr", "vavrg2", "vavrg4",
))
# the first target with each instruction (PTX ISA, "Target ISA notes"), beyond the oldest we model
_NEEDS_SM = {"dp4a": 61, "dp2a": 61, "szext": 70, "bmsk": 70, "match": 70, "tanh": 75, "redux": 80}
# the first PTX ISA version that knows each target
_TARGET_VERSION = {50: (4, 0), 52: (4, 1), 53: (4, 2), 60: (5, 0), 61: (5, 0), 62: (5, 0), 70: (6, 0), 72: (6, 1),
                   75: (6, 3), 80: (7, 0), 86: (7, 1), 87: (7, 4), 89: (7, 8), 90: (7, 8), 100: (8, 6),
                   101: (8, 6), 120: (8, 7)}


@dataclass(slots=True)
class Op:
    kind: int
    instr: Instr
    fn: Fn | None = None
    guard: int = -1  # predicate register, or -1
    negated: bool = False
    target: int = 0  # branch target pc


@dataclass
class Program:
    """A decoded entry, ready to run."""

    name: str
    ops: list[Op]
    reg_bits: list[int]
    reg_names: list[str]
    params: list[Param]
    param_bytes: int
    shared_bytes: int  # static shared memory (module and entry variables)
    dynamic_shared: bool  # an .extern .shared array follows the static variables
    dynamic_offset: int  # where it starts
    local_bytes: int
    registers: int
    directives: dict[str, tuple[int, ...]] = field(default_factory=dict)


def _layout(vars_: list[Var], start: int = 0) -> tuple[dict[str, int], int]:
    offsets, pos = {}, start
    for v in vars_:
        pos = -(-pos // v.align) * v.align
        offsets[v.name] = pos
        pos += v.nbytes
    return offsets, pos


def _params(ent: Entry) -> tuple[list[Param], int]:
    out, pos = [], 0
    for v in ent.params:
        pos = -(-pos // v.align) * v.align
        out.append(Param(v.name, v.nbytes, v.align, pos))
        pos += v.nbytes
    return out, pos


def _registers(ent: Entry) -> int:
    """A per-thread register estimate from the declarations (capped at the hardware's 255)."""
    words = sum(n * (2 if PTYPES[t].bits == 64 else 1) for t, n in ent.reg_decls if t != "pred")
    return max(1, min(255, words))


def check_header(mod: ModuleAst, sm: int, max_version: tuple[int, int]) -> None:
    if mod.version > max_version:
        raise PtxError(1, f".version {mod.version[0]}.{mod.version[1]} is newer than this driver's PTX ISA "
                       f"{max_version[0]}.{max_version[1]}")
    if mod.target > sm:
        raise PtxError(1, f".target {mod.target_text} is newer than the device (sm_{sm})")
    need = _TARGET_VERSION.get(mod.target)
    if need is not None and mod.version < need:
        raise PtxError(1, f"PTX .version {mod.version[0]}.{mod.version[1]} does not know .target {mod.target_text} "
                       f"(it needs {need[0]}.{need[1]})")


def decode(ent: Entry, mod: ModuleAst) -> Program:
    regs: dict[str, tuple[int, PType]] = {}
    for name, t in ent.regs.items():
        regs[name] = (len(regs), PTYPES[t])
    labels: dict[str, int] = {}
    instrs: list[Instr] = []
    for item in ent.body:
        if isinstance(item, Label):
            if item.name in labels:
                raise PtxError(item.line, f"label {item.name} is defined twice")
            labels[item.name] = len(instrs)
        else:
            instrs.append(item)
    static = [v for v in mod.shared + ent.shared if not v.extern]
    shared, shared_end = _layout(static)
    dynamic = [v for v in mod.shared + ent.shared if v.extern]  # ptxas takes .extern only at module scope
    dyn_start = -(-shared_end // max([v.align for v in dynamic], default=1)) * max([v.align for v in dynamic], default=1)
    shared.update({v.name: dyn_start for v in dynamic})
    local, local_end = _layout(ent.local)
    params, param_bytes = _params(ent)
    ctx = Ctx(ent.name, mod.target, regs, labels, shared, local, {p.name: p for p in params}, version=mod.version)
    ops = [_decode_one(ins, ctx) for ins in instrs]
    end = instrs[-1].line if instrs else ent.line
    ops.append(Op(EXIT, Instr(end, None, "ret", (), (), "(the end of the entry)", "")))  # falling off the end
    return Program(ent.name, ops, [t.bits for _, t in regs.values()], list(regs), params, param_bytes,
                   shared_end, bool(dynamic), dyn_start, local_end, _registers(ent), dict(ent.directives))


def _decode_one(ins: Instr, ctx: Ctx) -> Op:
    ctx.instr = ins
    op = _control(ins, ctx)
    if op is None:
        op = Op(OP, ins, _decoder(ins, ctx)(ins, ctx))
    if ins.guard is not None:
        name, negated = ins.guard
        i, t = ctx.reg(name)
        if t.kind != "pred":
            raise ctx.error(f"the guard {name} is not a predicate")
        op.guard, op.negated = i, negated
    return op


def _decoder(ins: Instr, ctx: Ctx) -> Callable[[Instr, Ctx], Fn]:
    name = ins.opcode
    need = _NEEDS_SM.get(name)
    if need is not None and ctx.sm < need:
        raise ctx.error(f"{name} needs sm_{need} or newer (the module targets sm_{ctx.sm})")
    if name in _SHARED_FORMS:
        last = ins.mods[-1] if ins.mods else ""
        if last in ptx_float.FTYPES:
            if name not in ptx_float.FLOAT_FORMS:
                raise ctx.error(f"{name} has no floating-point form")
            return ptx_float.FLOAT_FORMS[name]
        if name in ("add", "sub", "mul", "mad", "div", "abs", "neg", "min", "max") and last in ("f16", "f16x2", "bf16",
                                                                                                   "bf16x2"):
            raise ctx.error(f"{name}.{last} (half-precision arithmetic) is not modelled")
        return ptx_int.INT_FORMS[name]
    if name in _DECODERS:
        return _DECODERS[name]
    if name in _NOT_MODELLED:
        raise ctx.error(f"{name} is PTX, but the simulator does not model it")
    raise ctx.error(f"unknown instruction {name!r}")


def _control(ins: Instr, ctx: Ctx) -> Op | None:
    name = ins.opcode
    if name == "bra":
        if ins.mods not in ((), ("uni",)) or len(ins.operands) != 1 or not isinstance(ins.operands[0], Sym):
            raise ctx.error("bra{.uni} takes one label")
        label = ins.operands[0].name
        if label not in ctx.labels:
            raise ctx.error(f"the label {label} is not defined in {ctx.kernel}")
        return Op(BRA, ins, target=ctx.labels[label])
    if name in ("bar", "barrier"):
        forms = (("sync",),) if name == "bar" else (("sync",), ("sync", "aligned"))
        if ins.mods not in forms:
            raise ctx.error(f"{name}.{'.'.join(ins.mods)} is not modelled (only {name}.sync)")
        first = ins.operands[0] if ins.operands else None
        if not isinstance(first, Imm) or first.value != 0 or len(ins.operands) != 1:
            raise ctx.error("only barrier 0 for the whole block (bar.sync 0) is modelled")
        return Op(BAR, ins)
    if name in ("ret", "exit"):
        if ins.mods not in ((), ("uni",)) or ins.operands:
            raise ctx.error(f"{name} takes no operands")
        return Op(EXIT, ins)
    if name in ("trap", "brkpt"):
        return Op(TRAP, ins)
    return None
