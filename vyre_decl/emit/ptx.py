"""Lowering a Program to PTX text.

The emitter knows structure only — registers, memory, control flow and the kernel ABI. Every
computation is an op whose PTX comes from its template in ``ops/*.toml`` (composite ops without
a template for a binding are inlined from their ``compose`` expression).

The kernel's calling convention and the module record are in ``abi.py``; ``module.py`` assembles
a module from this emitter's entry (and ``vector.py``'s vectorised one).

Templates arrive parsed and instantiated for their binding (``registry/templates.py``); the
emitter only names the registers and immediates of their operands. The result (``{out}``, or
``{old}`` in atomic templates) and every temporary are fresh registers that alias no operand, so
a template may write its result before it has read all its operands (the ÷0 templates do).

Memory rules of the semantics table: loads out of bounds yield 0 and stores/atomics out of
bounds do nothing — by a predicate on the access, never by clamping the index. Workgroup buffers
are ``.shared`` arrays zeroed by the workgroup before the body runs.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Final

from ..ir.diagnostics import VyreError
from ..ir.nodes import (
    AXES,
    Access,
    Assign,
    Atomic,
    Barrier,
    Block,
    BufferDecl,
    BufLen,
    Expr,
    Id,
    IdKind,
    If,
    Let,
    Lit,
    Load,
    Loop,
    Node,
    Op,
    Program,
    Region,
    Return,
    Select,
    Store,
    Var,
)
from ..ir.subgroup import SUBGROUP_SIZE
from ..ir.text import print_expr
from ..ir.types import DataType
from ..ir.walk import body_exprs, statements
from ..registry import OpDef, Registry
from ..registry.templates import NEEDS_SM, PTX_TYPE, immediate
from .abi import kernel_abi, shared_words
from .target import Target

__all__ = ["uses_collectives"]  # and the emitter class, used by emit/module.py and emit/vector.py


def uses_collectives(program: Program, registry: Registry) -> bool:
    """Whether ``program`` calls a collective op (docs/semantics.md, "Subgroups")."""
    ids = {e.op for e in body_exprs(program.body) if isinstance(e, Op)}
    return any(registry.has_trait(i, "collective") for i in ids if i in registry)

# value type -> (PTX register type, register prefix)
_REG: Final = {t: (PTX_TYPE[t], prefix) for t, prefix in (
    (DataType.BOOL, "%p"), (DataType.U32, "%r"), (DataType.I32, "%s"), (DataType.U64, "%rd"),
    (DataType.I64, "%sd"), (DataType.F32, "%f"), (DataType.F64, "%fd"))}
_B16: Final = ("b16", "%h")
_BF16_CVT_SM: Final = dict(NEEDS_SM)[".bf16"]  # the first target with cvt.rn.bf16.f32
_BITS: Final = {"b32": ("b32", "%b"), "b64": ("b64", "%bd")}  # untyped template temporaries
# storage type -> ld/st instruction type for the value register
_MEM_TYPE: Final = {
    DataType.U8: "u8",
    DataType.U16: "u16",
    DataType.I8: "s8",
    DataType.I16: "s16",
    DataType.U32: "u32",
    DataType.I32: "s32",
    DataType.U64: "u64",
    DataType.I64: "s64",
    DataType.F32: "f32",
    DataType.F64: "f64",
}
_COMMENT_WIDTH: Final = 110


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _COMMENT_WIDTH else text[: _COMMENT_WIDTH - 3] + "..."


class _Emitter:
    def __init__(self, program: Program, registry: Registry, target: Target) -> None:
        self.program, self.registry, self.target = program, registry, target
        self.buffers = {b.name: b for b in program.buffers}
        self.lines: list[str] = []
        self.counts: dict[str, int] = defaultdict(int)
        self.kinds: dict[str, str] = {}
        self.labels = 0
        self.vars: dict[str, tuple[str, DataType]] = {}
        self.base: dict[str, str] = {}  # buffer -> register holding its address
        self.length: dict[str, str] = {}  # buffer -> register holding its element count
        self.ids: dict[tuple[IdKind, int], str] = {}
        self.exit_label = "$L_exit"  # where ``return`` goes (an entry handling several elements moves it)
        # value numbering while one outermost composite call is inlined (straight-line code whose
        # registers are written once): a literal, select or op call repeated on the same registers
        # reuses the first result (e.g. an argument reduction shared by several parts of a result)
        self.inlined: dict[tuple[object, ...], tuple[str, DataType]] | None = None
        # subgroups (collective ops): the lane register, the mask of the warp's existing lanes, and
        # whether the present lanes must be voted at each collective (the program can return)
        self.lane_reg = self.exist_reg = self.true_reg = ""
        self.returns = any(isinstance(n, Return) for n in statements(program.body))

    # --- registers, labels, lines
    def reg(self, t: DataType | tuple[str, str]) -> str:
        kind, prefix = _REG[t] if isinstance(t, DataType) else t
        n = self.counts[prefix]
        self.counts[prefix] += 1
        self.kinds[prefix] = kind
        return f"{prefix}{n}"

    def label(self, what: str) -> str:
        self.labels += 1
        return f"$L{self.labels}_{what}"

    def emit(self, line: str) -> None:
        self.lines.append("\t" + line)

    def comment(self, text: str) -> None:
        self.lines.append("\t// " + _short(text))

    def place(self, label: str) -> None:
        self.lines.append(label + ":")

    def declarations(self) -> list[str]:
        return [f"\t.reg .{self.kinds[p]} {p}<{n}>;" for p, n in sorted(self.counts.items())]

    # --- prologue: addresses, lengths, ids, zeroed workgroup memory
    def prologue(self) -> None:
        used = {b for b in self._buffers_used()}
        for param in kernel_abi(self.program).params:
            decl = self.buffers[param.buffer]
            if param.kind != "ptr" or decl.name not in used:
                continue
            base = self.reg(DataType.U64)
            self.emit(f"ld.param.u64 {base}, [p_{decl.name}];")
            self.emit(f"cvta.to.global.u64 {base}, {base};")
            n = self.reg(DataType.U32)
            self.emit(f"ld.param.u32 {n}, [n_{decl.name}];")
            self.base[decl.name], self.length[decl.name] = base, n
        ids = sorted({(e.kind, e.axis) for e in body_exprs(self.program.body) if isinstance(e, Id)},
                     key=lambda k: (k[0].value, k[1]))
        for kind, axis in ids:
            ax = AXES[axis]
            r = self.reg(DataType.U32)
            if kind is IdKind.LOCAL:
                self.emit(f"mov.u32 {r}, %tid.{ax};")
            elif kind is IdKind.WORKGROUP:
                self.emit(f"mov.u32 {r}, %ctaid.{ax};")
            else:
                c, n = self.reg(DataType.U32), self.reg(DataType.U32)
                self.emit(f"mov.u32 {c}, %ctaid.{ax};")
                self.emit(f"mov.u32 {n}, %ntid.{ax};")
                self.emit(f"mov.u32 {r}, %tid.{ax};")
                self.emit(f"mad.lo.u32 {r}, {c}, {n}, {r};")
            self.ids[(kind, axis)] = r
        if uses_collectives(self.program, self.registry):
            self.subgroup_prologue()
        shared = [b for b in self.program.buffers if b.access is Access.WORKGROUP]
        if shared:
            self.comment("zero the workgroup buffers, then wait for the whole workgroup")
            lin, size, t = self.reg(DataType.U32), self.reg(DataType.U32), self.reg(DataType.U32)
            self.emit(f"mov.u32 {lin}, %tid.z;")
            self.emit(f"mov.u32 {t}, %ntid.y;")
            self.emit(f"mov.u32 {size}, %tid.y;")
            self.emit(f"mad.lo.u32 {lin}, {lin}, {t}, {size};")
            self.emit(f"mov.u32 {t}, %ntid.x;")
            self.emit(f"mov.u32 {size}, %tid.x;")
            self.emit(f"mad.lo.u32 {lin}, {lin}, {t}, {size};")
            self.emit(f"mov.u32 {size}, %ntid.x;")
            self.emit(f"mov.u32 {t}, %ntid.y;")
            self.emit(f"mul.lo.u32 {size}, {size}, {t};")
            self.emit(f"mov.u32 {t}, %ntid.z;")
            self.emit(f"mul.lo.u32 {size}, {size}, {t};")
            for b in shared:
                addr = self.reg(DataType.U32)
                self.emit(f"mov.u32 {addr}, wg_{b.name};")
                self.base[b.name] = addr
                i, p, a = self.reg(DataType.U32), self.reg(DataType.BOOL), self.reg(DataType.U32)
                top, done = self.label("zero"), self.label("zeroed")
                self.emit(f"mov.u32 {i}, {lin};")
                self.place(top)
                self.emit(f"setp.ge.u32 {p}, {i}, {shared_words(b)};")
                self.emit(f"@{p} bra {done};")
                self.emit(f"mad.lo.u32 {a}, {i}, 4, {addr};")
                self.emit(f"st.shared.u32 [{a}], 0;")
                self.emit(f"add.u32 {i}, {i}, {size};")
                self.emit(f"bra {top};")
                self.place(done)
            self.emit("bar.sync 0;")


    def subgroup_prologue(self) -> None:
        """The lane id and the mask of the lanes that exist in this invocation's warp (a partial last
        warp of the block has fewer): the membermask from which the present lanes are voted."""
        if self.target.subgroup_size != SUBGROUP_SIZE:
            raise VyreError.one("E006", f"{self.target.name} has subgroups of {self.target.subgroup_size} lanes, the IR "
                                f"{SUBGROUP_SIZE}", f"program {self.program.name!r}",
                                "run programs with subgroup ops on a target whose subgroup size is the IR's")
        self.comment(f"subgroups: lane id, and the lanes of this warp that exist (warps of {SUBGROUP_SIZE} threads)")
        lane, lin, t, u = (self.reg(DataType.U32) for _ in range(4))
        self.emit(f"mov.u32 {lane}, %laneid;")
        self.emit(f"mov.u32 {lin}, %tid.z;")
        self.emit(f"mov.u32 {t}, %ntid.y;")
        self.emit(f"mov.u32 {u}, %tid.y;")
        self.emit(f"mad.lo.u32 {lin}, {lin}, {t}, {u};")
        self.emit(f"mov.u32 {t}, %ntid.x;")
        self.emit(f"mov.u32 {u}, %tid.x;")
        self.emit(f"mad.lo.u32 {lin}, {lin}, {t}, {u};")
        self.emit(f"mov.u32 {u}, %ntid.y;")
        self.emit(f"mul.lo.u32 {t}, {t}, {u};")
        self.emit(f"mov.u32 {u}, %ntid.z;")
        self.emit(f"mul.lo.u32 {t}, {t}, {u};")  # threads in the block
        self.emit(f"and.b32 {lin}, {lin}, {-SUBGROUP_SIZE & 0xFFFFFFFF};")  # the warp's first thread
        self.emit(f"sub.u32 {t}, {t}, {lin};")
        self.emit(f"min.u32 {t}, {t}, {SUBGROUP_SIZE};")
        exist = self.reg(DataType.U32)
        self.emit(f"shl.b32 {exist}, 1, {t};")  # 1 << 32 is 0: all ones after the subtraction
        self.emit(f"sub.u32 {exist}, {exist}, 1;")
        self.lane_reg, self.exist_reg = lane, exist
        self.true_reg = self.reg(DataType.BOOL)
        self.emit(f"mov.pred {self.true_reg}, 1;")

    def members(self) -> str:
        """The present lanes of the subgroup: those that exist, less any that returned (voted)."""
        if not self.returns:
            return self.exist_reg
        m = self.reg(DataType.U32)
        self.emit(f"vote.sync.ballot.b32 {m}, {self.true_reg}, {self.exist_reg};")
        return m

    def _buffers_used(self) -> set[str]:
        names: set[str] = set()
        for e in body_exprs(self.program.body):
            if isinstance(e, (Load, BufLen, Atomic)):
                names.add(e.buffer)
        names.update(n.buffer for n in statements(self.program.body) if isinstance(n, Store))
        return names

    # --- expressions: (register, type, owned) — owned registers may be adopted by a let
    def expr(self, e: Expr) -> tuple[str, DataType, bool]:
        if isinstance(e, Lit):
            if self.inlined is not None and ("lit", e.dtype, e.bits) in self.inlined:
                r, t = self.inlined[("lit", e.dtype, e.bits)]
                return r, t, False
            r = self.reg(e.dtype)
            self.emit(f"mov.{_REG[e.dtype][0]} {r}, {immediate(e.dtype, e.bits)};")
            if self.inlined is not None:
                self.inlined[("lit", e.dtype, e.bits)] = (r, e.dtype)
            return r, e.dtype, True
        if isinstance(e, Var):
            r, t = self.vars[e.name]
            return r, t, False
        if isinstance(e, Id):
            return self.ids[(e.kind, e.axis)], DataType.U32, False
        if isinstance(e, BufLen):
            decl = self.buffers[e.buffer]
            if decl.access is Access.WORKGROUP:
                return self.expr(Lit(DataType.U32, decl.count))
            return self.length[e.buffer], DataType.U32, False
        if isinstance(e, Load):
            return self.load(e)
        if isinstance(e, Select):
            return self.select(e)
        if isinstance(e, Op):
            return self.op(e)
        if isinstance(e, Atomic):
            return self.atomic(e)
        raise TypeError(f"cannot emit {e!r}")

    def address(self, decl: BufferDecl, index: str) -> tuple[str, str, str]:
        """(predicate 'index in bounds', address register, state space)."""
        p = self.reg(DataType.BOOL)
        size = decl.dtype.size
        if decl.access is Access.WORKGROUP:
            self.emit(f"setp.lt.u32 {p}, {index}, {decl.count};")
            a = self.reg(DataType.U32)
            self.emit(f"mad.lo.u32 {a}, {index}, {size}, {self.base[decl.name]};")
            return p, a, ".shared"
        self.emit(f"setp.lt.u32 {p}, {index}, {self.length[decl.name]};")
        off, a = self.reg(DataType.U64), self.reg(DataType.U64)
        self.emit(f"mul.wide.u32 {off}, {index}, {size};")
        self.emit(f"add.u64 {a}, {self.base[decl.name]}, {off};")
        return p, a, ".global"

    def load(self, e: Load) -> tuple[str, DataType, bool]:
        decl = self.buffers[e.buffer]
        idx, _, _ = self.expr(e.index)
        p, a, space = self.address(decl, idx)
        st, vt = decl.dtype, decl.dtype.value_type
        if st is DataType.BOOL:
            raw, out = self.reg(DataType.U32), self.reg(DataType.BOOL)
            self.emit(f"mov.u32 {raw}, 0;")
            self.emit(f"@{p} ld{space}.u32 {raw}, [{a}];")
            self.emit(f"setp.ne.u32 {out}, {raw}, 0;")
            return out, vt, True
        if st in (DataType.F16, DataType.BF16):
            h, out = self.reg(_B16), self.reg(DataType.F32)
            self.emit(f"mov.b16 {h}, 0;")
            self.emit(f"@{p} ld{space}.b16 {h}, [{a}];")
            if st is DataType.F16:
                self.emit(f"cvt.f32.f16 {out}, {h};")
            else:  # bf16 is the top half of an f32
                w = self.reg(DataType.U32)
                self.emit(f"cvt.u32.u16 {w}, {h};")
                self.emit(f"shl.b32 {w}, {w}, 16;")
                self.emit(f"mov.b32 {out}, {w};")
            return out, vt, True
        out = self.reg(vt)
        self.emit(f"mov.{_REG[vt][0]} {out}, {immediate(vt, 0)};")
        self.emit(f"@{p} ld{space}.{_MEM_TYPE[st]} {out}, [{a}];")
        return out, vt, True

    def select(self, e: Select) -> tuple[str, DataType, bool]:
        if e.lazy:
            return self.branch(e)
        c, _, _ = self.expr(e.cond)
        a, t, _ = self.expr(e.if_true)
        b, _, _ = self.expr(e.if_false)
        key = ("select", c, a, b)
        if self.inlined is not None and key in self.inlined:
            return self.inlined[key][0], t, False
        out = self.reg(t)
        if self.inlined is not None:
            self.inlined[key] = (out, t)
        if t is DataType.BOOL:
            x, nc, y = self.reg(t), self.reg(t), self.reg(t)
            self.emit(f"and.pred {x}, {c}, {a};")
            self.emit(f"not.pred {nc}, {c};")
            self.emit(f"and.pred {y}, {nc}, {b};")
            self.emit(f"or.pred {out}, {x}, {y};")
        else:
            self.emit(f"selp.{_REG[t][0]} {out}, {a}, {b}, {c};")
        return out, t, True

    def branch(self, e: Select) -> tuple[str, DataType, bool]:
        """A select whose chosen arm alone runs: each arm behind a branch, into one register.
        Values numbered inside an arm stay inside it (the other path never computed them)."""
        c, _, _ = self.expr(e.cond)
        other, end = self.label("branch_else"), self.label("branch_end")
        known = None if self.inlined is None else dict(self.inlined)
        self.emit(f"@!{c} bra {other};")
        a, t, _ = self.expr(e.if_true)
        out = self.reg(t)
        self.emit(f"mov.{_REG[t][0]} {out}, {a};")
        self.emit(f"bra.uni {end};")
        self.place(other)
        self.inlined = None if known is None else dict(known)
        b, _, _ = self.expr(e.if_false)
        self.emit(f"mov.{_REG[t][0]} {out}, {b};")
        self.place(end)
        self.inlined = known
        return out, t, True

    def fill(self, op: OpDef, binding: tuple[DataType, ...], names: dict[str, str]) -> None:
        tmpl = op.templates[binding]
        if "collective" in op.traits:
            names.update(lane=self.lane_reg, members=self.members())
        for temp, t in tmpl.temps:
            names[temp] = self.reg(t if isinstance(t, DataType) else _BITS[t])
        types = ",".join(t.value for t in binding)
        self.comment(f"op {op.id}<{types}>")
        for line in tmpl.fill(names):
            self.emit(line)

    def op(self, e: Op) -> tuple[str, DataType, bool]:
        op = self.registry.get(e.op)
        args = [self.expr(a) for a in e.args]
        sig = op.signature
        binding, out_t = sig.bind([t for _, t, _ in args], dict(e.types))
        attrs = {a.name: a.default for a in sig.attrs if a.default is not None}
        attrs.update({name: lit.bits for name, lit in e.attrs})
        attr_types = {a.name: a.dtype for a in sig.attrs}
        tmpl = op.templates.get(binding)
        if tmpl is None or tmpl.min_sm > self.target.sm:  # inline compose: no template (for this target)
            comp = op.compose_for(binding)
            if comp is None:
                assert tmpl is not None, f"{op.id} has neither a template nor a compose definition for {binding}"
                raise VyreError.one("E005", f"op {op.id} needs sm_{tmpl.min_sm} or newer (its PTX template uses an "
                                    f"instruction {self.target.name} lacks) and has no compose definition to fall "
                                    f"back on", f"program {self.program.name!r}",
                                    f"run it on an sm_{tmpl.min_sm} GPU, or give the op a compose definition")
            key = (op.id, binding, tuple(sorted(attrs.items())), tuple(r for r, _, _ in args))
            outermost = self.inlined is None
            if outermost:
                self.inlined = {}
            elif key in self.inlined:  # type: ignore[operator]
                r, t = self.inlined[key]  # type: ignore[index]
                return r, t, False
            saved = self.vars
            self.vars = {p.name: (r, t) for p, (r, t, _) in zip(sig.inputs, args)}
            for name, bits in attrs.items():
                r, t, _ = self.expr(Lit(attr_types[name], bits))
                self.vars[name] = (r, t)
            self.comment(f"inline {op.id}: {op.compose_text}")
            for name, value in comp.steps:
                r, t, _ = self.expr(value)
                self.vars[name] = (r, t)
            r, t, owned = self.expr(comp.result)
            self.vars = saved
            if outermost:
                self.inlined = None
            else:
                self.inlined[key] = (r, t)  # type: ignore[index]
            return r, t, owned and outermost
        key = (op.id, binding, tuple(sorted(attrs.items())), tuple(r for r, _, _ in args))
        if self.inlined is not None and key in self.inlined:
            return self.inlined[key][0], out_t, False
        out = self.reg(out_t)
        if self.inlined is not None:
            self.inlined[key] = (out, out_t)
        names = {p.name: r for p, (r, _, _) in zip(sig.inputs, args)}
        names[sig.output.name] = out
        names.update({name: immediate(attr_types[name], bits) for name, bits in attrs.items()})
        self.fill(op, binding, names)
        return out, out_t, True

    def atomic(self, e: Atomic) -> tuple[str, DataType, bool]:
        op = self.registry.get(e.op)
        decl = self.buffers[e.buffer]
        idx, _, _ = self.expr(e.index)
        args = [self.expr(a) for a in e.args]
        binding, _ = op.signature.bind([decl.dtype] + [t for _, t, _ in args])
        p, a, space = self.address(decl, idx)
        old = self.reg(decl.dtype)
        self.emit(f"mov.{_REG[decl.dtype][0]} {old}, 0;")
        skip = self.label("atomic_oob")
        self.emit(f"@!{p} bra {skip};")
        names = {prm.name: r for prm, (r, _, _) in zip(op.signature.operands, args)}
        names.update(addr=a, space=space, old=old)
        self.fill(op, binding, names)
        self.place(skip)
        return old, decl.dtype, True

    # --- statements
    def body(self, nodes: tuple[Node, ...], path: str, scoped: bool = True) -> None:
        saved = dict(self.vars) if scoped else None
        for i, n in enumerate(nodes):
            self.stmt(n, f"{path}[{i}]")
        if saved is not None:
            self.vars = saved

    def stmt(self, n: Node, path: str) -> None:
        if isinstance(n, Let):
            self.comment(f"{path}: let {n.name} = {print_expr(n.value)}")
            r, t, owned = self.expr(n.value)
            if not owned:
                v = self.reg(t)
                self.emit(f"mov.{_REG[t][0]} {v}, {r};")
                r = v
            self.vars[n.name] = (r, t)
        elif isinstance(n, Assign):
            self.comment(f"{path}: {n.name} = {print_expr(n.value)}")
            r, t, _ = self.expr(n.value)
            self.emit(f"mov.{_REG[t][0]} {self.vars[n.name][0]}, {r};")
        elif isinstance(n, Store):
            self.comment(f"{path}: {n.buffer}[{print_expr(n.index)}] = {print_expr(n.value)}")
            self.store(n)
        elif isinstance(n, If):
            self.comment(f"{path}: if {print_expr(n.cond)}")
            c, _, _ = self.expr(n.cond)
            other, end = self.label("else"), self.label("endif")
            self.emit(f"@!{c} bra {other};")
            self.body(n.then, f"{path}.then")
            if n.otherwise:
                self.emit(f"bra {end};")
                self.place(other)
                self.body(n.otherwise, f"{path}.otherwise")
                self.place(end)
            else:
                self.place(other)
        elif isinstance(n, Loop):
            self.comment(f"{path}: loop {n.var} in {print_expr(n.start)} .. {print_expr(n.end)}")
            s, t, _ = self.expr(n.start)
            end, _, owned = self.expr(n.end)
            kind = _REG[t][0]
            if not owned:  # the bound is evaluated once, even if its variable changes in the body
                copy = self.reg(t)
                self.emit(f"mov.{kind} {copy}, {end};")
                end = copy
            v, p = self.reg(t), self.reg(DataType.BOOL)
            top, done = self.label("loop"), self.label("endloop")
            self.emit(f"mov.{kind} {v}, {s};")
            self.place(top)
            self.emit(f"setp.ge.{kind} {p}, {v}, {end};")
            self.emit(f"@{p} bra {done};")
            saved = dict(self.vars)
            self.vars[n.var] = (v, t)
            self.body(n.body, f"{path}.body")
            self.vars = saved
            self.emit(f"add.{kind} {v}, {v}, 1;")
            self.emit(f"bra {top};")
            self.place(done)
        elif isinstance(n, Return):
            self.comment(f"{path}: return")
            if self.lane_reg and self.exit_label == "$L_exit":  # with subgroups: leave now, so that the
                self.emit("ret;")  # returned lanes have exited when the others vote (not waited for)
            else:
                self.emit(f"bra {self.exit_label};")
        elif isinstance(n, Barrier):
            self.comment(f"{path}: barrier")
            self.emit("bar.sync 0;")
        elif isinstance(n, Block):
            self.body(n.body, f"{path}.body")
        elif isinstance(n, Region):
            self.comment(f"{path}: region {n.generator!r}")
            self.body(n.body, f"{path}.body", scoped=False)
        else:
            raise TypeError(f"cannot emit {n!r}")

    def store(self, n: Store) -> None:
        decl = self.buffers[n.buffer]
        idx, _, _ = self.expr(n.index)
        val, _, _ = self.expr(n.value)
        p, a, space = self.address(decl, idx)
        st = decl.dtype
        if st is DataType.BOOL:
            w = self.reg(DataType.U32)
            self.emit(f"selp.u32 {w}, 1, 0, {val};")
            self.emit(f"@{p} st{space}.u32 [{a}], {w};")
        elif st is DataType.BF16 and self.target.sm < _BF16_CVT_SM:
            # no cvt to bf16 before sm_80: round the f32 bits to nearest even by hand, the same
            # bits cvt.rn.bf16.f32 gives (a NaN becomes the canonical 0x7FFF)
            w, t, r = self.reg(DataType.U32), self.reg(DataType.U32), self.reg(DataType.U32)
            nan, h = self.reg(DataType.BOOL), self.reg(_B16)
            self.emit(f"mov.b32 {w}, {val};")
            self.emit(f"bfe.u32 {t}, {w}, 16, 1;")
            self.emit(f"add.u32 {t}, {t}, 32767;")
            self.emit(f"add.u32 {r}, {w}, {t};")
            self.emit(f"shr.u32 {r}, {r}, 16;")
            self.emit(f"setp.nan.f32 {nan}, {val}, {val};")
            self.emit(f"selp.b32 {r}, 32767, {r}, {nan};")
            self.emit(f"cvt.u16.u32 {h}, {r};")
            self.emit(f"@{p} st{space}.b16 [{a}], {h};")
        elif st in (DataType.F16, DataType.BF16):
            h = self.reg(_B16)
            self.emit(f"cvt.rn.{st.value}.f32 {h}, {val};")
            self.emit(f"@{p} st{space}.b16 [{a}], {h};")
        else:
            self.emit(f"@{p} st{space}.{_MEM_TYPE[st]} [{a}], {val};")

