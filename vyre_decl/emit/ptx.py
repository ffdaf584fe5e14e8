"""Lowering a Program to PTX text.

The emitter knows structure only — registers, memory, control flow and the kernel ABI. Every
computation is an op whose PTX comes from its template in ``ops/*.toml`` (composite ops without
a template for a binding are inlined from their ``compose`` expression).

The kernel's calling convention and the module record are in ``abi.py``; ``module.py`` assembles
a module from this emitter's entry (and ``vector.py``'s vectorised one). The entry's registers and
lines are ``registers.py``'s, its prologue ``prologue.py``'s.

Templates arrive parsed and instantiated for their binding (``registry/templates.py``); the
emitter only names the registers and immediates of their operands. The result (``{out}``, or
``{old}`` in atomic templates) and every temporary are fresh registers that alias no operand, so
a template may write its result before it has read all its operands (the ÷0 templates do).

Memory rules of the semantics table: loads out of bounds yield 0 and stores/atomics out of
bounds do nothing — by a predicate on the access, never by clamping the index. Workgroup buffers
are ``.shared`` arrays zeroed by the workgroup before the body runs; private arrays are ``.local``
arrays each invocation zeroes, accessed through the same computed addresses and predicates, or,
where every index is a literal or an unroll counter, a register per element (``promote.py``).
Vector copies (``dst[i ..+ N] = src[j ..+ N]``) are ``vcopy.py``'s.

An ``unroll`` loop is written out structurally: its body once per iteration, the counter a fresh
register set by ``mov`` to that iteration's literal. No arithmetic is folded here: ptxas (or the
driver's JIT) propagates the constants, drops the bounds predicates and keeps a private array whose
every index became a constant in registers, as CUDA C's ``float acc[64]`` under ``#pragma unroll``.
"""

from __future__ import annotations

from typing import Final

from ..ir.diagnostics import VyreError
from ..ir.nodes import (
    Access,
    Assign,
    Atomic,
    Barrier,
    Block,
    Break,
    BufferDecl,
    BufLen,
    Copy,
    Expr,
    Id,
    If,
    Let,
    Lit,
    Load,
    Loop,
    Node,
    Op,
    Region,
    Return,
    Select,
    Store,
    Var,
    Wait,
)
from ..ir.text import print_expr
from ..ir.types import DataType
from ..registry import OpDef
from ..registry.templates import NEEDS_SM, immediate
from .byteview import view_load
from .ordered import _OrderedMemory, atom_qualifiers, qualifiers
from .private import private_slot
from .prologue import _Prologue
from .ranges import _ProvenBounds, at
from .rewrite import rewritten
from .registers import _B16, _BITS, _MEM_TYPE, _REG
from .vcopy import _VectorCopy

__all__: list[str] = []  # the emitter class, used by emit/module.py and emit/vector.py

_BF16_CVT_SM: Final = dict(NEEDS_SM)[".bf16"]  # the first target with cvt.rn.bf16.f32


class _Emitter(_Prologue, _OrderedMemory, _VectorCopy, _ProvenBounds):
    """A program's body as PTX lines: expressions into registers, statements into control flow."""

    break_label: str | None = None  # the end of the innermost loop being emitted: where ``break`` goes

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
            if decl.access.is_scratch:  # a fixed count
                return self.expr(Lit(DataType.U32, decl.count))
            return self.length[e.buffer], DataType.U32, False
        if isinstance(e, Load):  # a byte view x.u32[i]: byteview.py
            return self.load(e) if e.view is None else view_load(self, e)
        if isinstance(e, Select):
            return self.select(e)
        if isinstance(e, Op):
            return self.op(e)
        if isinstance(e, Atomic):
            return self.atomic(e)
        if isinstance(e, Wait):
            return self.wait(e)
        raise TypeError(f"cannot emit {e!r}")

    def address(self, decl: BufferDecl, index: str, proven: bool = False) -> tuple[str, str, str]:
        """(predicate 'index in bounds', address register, state space); the predicate is "" where
        ``proven`` says the index is below a workgroup or private array's count (ranges.py)."""
        p = "" if proven and decl.access.is_scratch else self.reg(DataType.BOOL)
        size = private_slot(decl).size if decl.access is Access.PRIVATE else decl.dtype.size
        if decl.access.is_scratch:
            if p:
                self.emit(f"setp.lt.u32 {p}, {index}, {decl.count};")
            a = self.reg(DataType.U32)
            self.emit(f"mad.lo.u32 {a}, {index}, {size}, {self.base[decl.name]};")
            return p, a, ".shared" if decl.access is Access.WORKGROUP else ".local"
        self.emit(f"setp.lt.u32 {p}, {index}, {self.length[decl.name]};")
        off, a = self.reg(DataType.U64), self.reg(DataType.U64)
        self.emit(f"mul.wide.u32 {off}, {index}, {size};")
        self.emit(f"add.u64 {a}, {self.base[decl.name]}, {off};")
        return p, a, ".global"

    def load(self, e: Load) -> tuple[str, DataType, bool]:
        if e.buffer in self.promoted:  # a private array in registers (promote.py)
            return self.promoted_load(e)
        decl = self.buffers[e.buffer]
        idx, _, _ = self.expr(e.index)
        p, a, space = self.address(decl, idx, e.order is None and self.proven(decl, e.index))
        st, vt = decl.dtype, decl.dtype.value_type
        if e.order is not None:  # an atomic load of a 32- or 64-bit word: ld.acquire.gpu.global.u32 ...
            space = qualifiers(e.order, e.scope) + space
        if decl.access is Access.PRIVATE:  # 8- and 64-bit elements are kept in 32-bit words (private.py)
            word = self.private_load(decl, p, a)
            if word is not None:
                return word, vt, True
        if st is DataType.BOOL:
            raw, out = self.reg(DataType.U32), self.reg(DataType.BOOL)
            self.emit(f"mov.u32 {raw}, 0;")
            self.emit(f"{at(p)}ld{space}.u32 {raw}, [{a}];")
            self.emit(f"setp.ne.u32 {out}, {raw}, 0;")
            return out, vt, True
        if st in (DataType.F16, DataType.BF16):
            h, out = self.reg(_B16), self.reg(DataType.F32)
            self.emit(f"mov.b16 {h}, 0;")
            self.emit(f"{at(p)}ld{space}.b16 {h}, [{a}];")
            if st is DataType.F16:
                self.emit(f"cvt.f32.f16 {out}, {h};")
            else:  # bf16 is the top half of an f32
                w = self.reg(DataType.U32)
                self.emit(f"cvt.u32.u16 {w}, {h};")
                self.emit(f"shl.b32 {w}, {w}, 16;")
                self.emit(f"mov.b32 {out}, {w};")
            return out, vt, True
        out = self.reg(vt)
        if p:  # a load not made gives 0
            self.emit(f"mov.{_REG[vt][0]} {out}, {immediate(vt, 0)};")
        self.emit(f"{at(p)}ld{space}.{_MEM_TYPE[st]} {out}, [{a}];")
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
        if op.rewrites:
            alt = rewritten(e, self.registry, self.index_ranges())
            if alt is not None:
                self.comment(f"op {e.op} rewritten: {print_expr(alt)}")  # an op comment: the statement's stays
                return self.expr(alt)
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
        p, a, space = self.address(decl, idx, self.proven(decl, e.index))  # any order: the test gates it all
        old = self.reg(decl.dtype)
        skip = self.label("atomic_oob") if p else ""
        if p:  # out of bounds: no effect, and the old value reads 0
            self.emit(f"mov.{_REG[decl.dtype][0]} {old}, 0;")
            self.emit(f"@!{p} bra {skip};")
        names = {prm.name: r for prm, (r, _, _) in zip(op.signature.operands, args)}
        names.update(addr=a, space=atom_qualifiers(e.order, e.scope) + space, old=old)
        self.fill(op, binding, names)
        if p:
            self.place(skip)
        return old, decl.dtype, True

    def wait(self, e: Wait) -> tuple[str, DataType, bool]:
        """The index and the value, then the counted loop of reads (``ordered.py``); the bound is a
        literal (validation), so its count is written into the loop."""
        decl = self.buffers[e.buffer]
        idx, _, _ = self.expr(e.index)
        value, _, _ = self.expr(e.value)
        assert isinstance(e.bound, Lit)
        p, a, space = self.address(decl, idx)
        return self.wait_loop(p, a, space, decl.dtype, value, e.bound.bits, e.order, e.scope), decl.dtype, True

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
        elif isinstance(n, Copy):  # a vector copy (vcopy.py)
            self.comment(f"{path}: {n.dst}[{print_expr(n.dst_index)} ..+ {n.width}] = "
                         f"{n.src}[{print_expr(n.src_index)} ..+ {n.width}]")
            self.vector_copy(n)
        elif isinstance(n, If):
            self.if_(n, path)
        elif isinstance(n, Loop):
            self.loop(n, path)
        elif isinstance(n, Return):
            self.comment(f"{path}: return")
            if self.lane_reg and self.exit_label == "$L_exit":  # with subgroups: leave now, so that the
                self.emit("ret;")  # returned lanes have exited when the others vote (not waited for)
            else:
                self.emit(f"bra {self.exit_label};")
        elif isinstance(n, Break):  # validation puts it in a loop that is not unrolled
            self.comment(f"{path}: break")
            assert self.break_label is not None
            self.emit(f"bra {self.break_label};")
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

    def if_(self, n: If, path: str) -> None:
        self.comment(f"{path}: if {print_expr(n.cond)}")
        if isinstance(n.cond, Lit):  # only the branch it takes (ir/wgmem.live_statements)
            self.body(n.then if n.cond.bits else n.otherwise, f"{path}.{'then' if n.cond.bits else 'otherwise'}")
            return
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

    def loop(self, n: Loop, path: str) -> None:
        if n.unroll and isinstance(n.start, Lit) and isinstance(n.end, Lit):  # validation asks for literals
            self.unrolled(n, n.start, n.end, path)
            return
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
        saved, outer = dict(self.vars), self.break_label
        self.vars[n.var] = (v, t)
        self.break_label = done
        self.body(n.body, f"{path}.body")
        self.vars, self.break_label = saved, outer
        self.emit(f"add.{kind} {v}, {v}, 1;")
        self.emit(f"bra {top};")
        self.place(done)

    def unrolled(self, n: Loop, start: Lit, end: Lit, path: str) -> None:
        """The body once per iteration, the counter a fresh register holding that iteration's literal."""
        head = f"{path}: loop {n.var} in {print_expr(start)} .. {print_expr(end)} unroll"
        first, stop = start.value, end.value
        assert isinstance(first, int) and isinstance(stop, int)
        for value in range(first, stop):
            counter = Lit.of(start.dtype, value)
            self.comment(f"{head}: {n.var} = {print_expr(counter)}")
            r, t, _ = self.expr(counter)
            self.counter(r, value)  # for the indices of register arrays (promote.py)
            saved = dict(self.vars)
            self.vars[n.var] = (r, t)
            self.body(n.body, f"{path}.body")
            self.vars = saved

    def store(self, n: Store) -> None:
        if n.buffer in self.promoted:  # a private array in registers (promote.py)
            self.promoted_store(n.buffer, self.known_index(n.index), self.expr(n.value)[0])
            return
        decl = self.buffers[n.buffer]
        idx, _, _ = self.expr(n.index)
        val, _, _ = self.expr(n.value)
        p, a, space = self.address(decl, idx, n.order is None and self.proven(decl, n.index))
        st = decl.dtype
        if n.order is not None:  # an atomic store of a 32- or 64-bit word: st.release.gpu.global.u32 ...
            space = qualifiers(n.order, n.scope) + space
        if decl.access is Access.PRIVATE and self.private_store(decl, p, a, val):
            return  # an 8- or 64-bit element, kept in 32-bit words (private.py)
        if st is DataType.BOOL:
            w = self.reg(DataType.U32)
            self.emit(f"selp.u32 {w}, 1, 0, {val};")
            self.emit(f"{at(p)}st{space}.u32 [{a}], {w};")
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
            self.emit(f"{at(p)}st{space}.b16 [{a}], {h};")
        elif st in (DataType.F16, DataType.BF16):
            h = self.reg(_B16)
            self.emit(f"cvt.rn.{st.value}.f32 {h}, {val};")
            self.emit(f"{at(p)}st{space}.b16 [{a}], {h};")
        else:
            self.emit(f"{at(p)}st{space}.{_MEM_TYPE[st]} [{a}], {val};")
