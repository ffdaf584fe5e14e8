"""The CPU reference interpreter: the executable form of the semantics table.

A Program is compiled once into a tree of Python closures; running it executes every invocation
of a chunk of workgroups at the same time with numpy arrays (one element per invocation).
Divergent ``if``/``loop``/``return`` are masks, workgroup buffers are one array row per
workgroup and private arrays one row per invocation (``unroll`` changes nothing here), and
statements run in lockstep, so a barrier needs no action. Atomics apply in
invocation order: within one atomic expression, lower linear invocation ids go first.

The interpreter knows structure only. Every computation is an op from the registry, evaluated
through its reference (a whitelisted ufunc, a named kernel, or its ``compose`` expression).

This module compiles expressions and statements into closures over a ``Frame`` (``frame.py``:
the running chunk's state and the closures' shared runtime), and ops into vectorised functions
(``op_function``); ``program`` runs a compiled program over a grid and ``atomics`` applies atomic
updates in invocation order.
"""

from __future__ import annotations

import weakref
from typing import Any, Callable, Mapping, Sequence

import numpy as np

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
    IdKind,
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
from ..ir.scalars import to_numpy
from ..ir.signature import Binding
from ..ir.types import DataType
from ..registry import OpDef, Registry
from .atomics import apply_rounds, apply_scan
from .breaks import break_statement, leaving
from .collective import COLLECTIVE_KERNELS, Lanes
from .frame import (
    ExprFn,
    Frame,
    Mask,
    StmtFn,
    Value,
    _and,
    _barrier,
    _lane_row,
    _return,
    _run_block,
    _Values,
    check_deadline,
)
from .kernels import KERNELS, ufunc
from .memory import to_storage, to_value
from .ordered import store_in_order, wait_function
from .vcopy import copy_function
from .byteview import view_load_function

__all__ = ["Compiler", "op_function", "collective_function"]

OpFn = Callable[[Sequence[Value]], Value]
CollectiveFn = Callable[[Sequence[Value], Lanes], Value]  # a collective op: the args and the subgroups


# ============================================================================ op functions


def op_function(registry: Registry, op: OpDef, binding: Binding, attrs: tuple[tuple[str, int], ...] = ()) -> OpFn:
    """A vectorised function computing ``op`` for ``binding``: args -> result (the atomic ops:
    current memory value and operands -> new memory value)."""
    key = (op.id, binding, attrs)
    cache = _OP_CACHE.get(registry)
    if cache is None:
        cache = _OP_CACHE[registry] = {}
    fn = cache.get(key)
    if fn is None:
        fn = cache[key] = _make_op_function(registry, op, binding, attrs)
    return fn


# one cache per registry, dropped with it
_OP_CACHE: weakref.WeakKeyDictionary[Registry, dict[tuple[Any, ...], OpFn]] = weakref.WeakKeyDictionary()


def collective_function(registry: Registry, op: OpDef, binding: Binding,
                        attrs: tuple[tuple[str, int], ...] = ()) -> CollectiveFn:
    """A collective op (one with the collective trait, or a composition calling one) for ``binding``:
    (args, subgroups) -> result, each lane's value computed from its subgroup's lanes."""
    key = ("collective", op.id, binding, attrs)
    cache: Any = _OP_CACHE.get(registry)
    if cache is None:
        cache = _OP_CACHE[registry] = {}
    fn: Any = cache.get(key)
    if fn is None:
        ref = op.reference_for(binding)
        if ref is not None:
            kernel, out = COLLECTIVE_KERNELS[ref], op.output_type(binding)

            def moved(args: Sequence[Value], lanes: Lanes) -> Value:
                return kernel(args, lanes=lanes, out=out)

            fn = cache[key] = moved
        else:
            fn = cache[key] = _make_op_function(registry, op, binding, attrs, collective=True)
    return fn  # type: ignore[no-any-return]


def _make_op_function(registry: Registry, op: OpDef, binding: Binding, attrs: tuple[tuple[str, int], ...],
                      collective: bool = False) -> Any:
    out_type = op.output_type(binding)
    out_dtype = out_type.numpy_dtype
    attr_types = {a.name: a.dtype for a in op.signature.attrs}
    attr_values = {a.name: a.default for a in op.signature.attrs if a.default is not None}
    attr_values.update(dict(attrs))
    consts = {name: to_numpy(attr_types[name], bits) for name, bits in attr_values.items()}
    ref = op.reference_for(binding)
    if ref is not None and ref not in KERNELS:
        uf = ufunc(ref)

        def via_ufunc(args: Sequence[Value]) -> Value:
            r = uf(*args)
            return r if r.dtype == out_dtype else r.astype(out_dtype)

        return via_ufunc
    if ref is not None:
        kernel = KERNELS[ref]
        types = op.binding_map(binding)
        return lambda args: kernel(args, out=out_type, types=types, attrs=consts)
    comp = op.compose_for(binding)
    assert comp is not None, f"{op.id} has no reference for {binding}"
    m = op.binding_map(binding)
    names = [p.name for p in op.signature.inputs]
    var_types = {p.name: op.signature.resolve(p.type, m) for p in op.signature.inputs}
    var_types.update(attr_types)
    compiler = Compiler(registry, {}, var_types)
    steps = []
    for name, value in comp.steps:
        fn, t = compiler.expr(value)
        compiler.types[name] = t
        steps.append((name, fn))
    body, _ = compiler.expr(comp.result)

    def via_compose(args: Sequence[Value], lanes: Lanes | None = None) -> Value:
        frame = _Values(dict(zip(names, args)), lanes)
        frame.vars.update(consts)
        for name, fn in steps:
            frame.vars[name] = fn(frame, None)  # type: ignore[arg-type]
        return body(frame, None)  # type: ignore[arg-type]

    return via_compose


# ============================================================================ compiler


class Compiler:
    """Turns IR into closures; tracks variable types the way validation does."""

    def __init__(self, registry: Registry, buffers: Mapping[str, BufferDecl], var_types: Mapping[str, DataType]) -> None:
        self.registry = registry
        self.buffers = buffers
        self.types: dict[str, DataType] = dict(var_types)
        self.ids_used: set[tuple[IdKind, int]] = set()
        self.collective: dict[str, bool] = {}  # op id -> whether it is collective (memo)
        self.uses_collectives = False
        self.loops: list[list[str]] = []  # the loops being compiled, innermost last: [key of its breaks] once one breaks

    # --- expressions
    def expr(self, e: Expr) -> tuple[ExprFn, DataType]:
        if isinstance(e, Lit):
            value = to_numpy(e.dtype, e.bits)
            return (lambda fr, m: value), e.dtype
        if isinstance(e, Var):
            name = e.name
            return (lambda fr, m: fr.vars[name]), self.types[name]
        if isinstance(e, BufLen):
            bname = e.buffer
            return (lambda fr, m: np.uint32(fr.counts[bname])), DataType.U32
        if isinstance(e, Id):
            key = (e.kind, e.axis)
            self.ids_used.add(key)
            return (lambda fr, m: fr.ids[key]), DataType.U32
        if isinstance(e, Load):
            return self.load(e)
        if isinstance(e, Select):
            c, _ = self.expr(e.cond)
            a, t = self.expr(e.if_true)
            b, _ = self.expr(e.if_false)
            return (lambda fr, m: np.where(c(fr, m), a(fr, m), b(fr, m))), t
        if isinstance(e, Op):
            return self.op(e)
        if isinstance(e, Atomic):
            return self.atomic(e)
        if isinstance(e, Wait):  # the index, value and bound in that order, then one read (ordered.py)
            decl = self.buffers[e.buffer]
            return wait_function(decl, self.expr(e.index)[0], self.expr(e.value)[0], self.expr(e.bound)[0]), decl.dtype
        raise TypeError(f"cannot interpret {e!r}")

    def op(self, e: Op) -> tuple[ExprFn, DataType]:
        op = self.registry.get(e.op)
        compiled = [self.expr(a) for a in e.args]
        fns = [f for f, _ in compiled]
        binding, out = op.signature.bind([t for _, t in compiled], dict(e.types))
        if e.op not in self.collective:
            self.collective[e.op] = self.registry.has_trait(e.op, "collective")
        if self.collective[e.op]:  # structure: the subgroups of the running invocations
            self.uses_collectives = True
            group = collective_function(self.registry, op, binding, tuple((n, lit.bits) for n, lit in e.attrs))
            return (lambda fr, m: group([f(fr, m) for f in fns], fr.lanes(m))), out
        impl = op_function(self.registry, op, binding, tuple((n, lit.bits) for n, lit in e.attrs))
        if len(fns) == 1:
            (a,) = fns
            return (lambda fr, m: impl((a(fr, m),))), out
        if len(fns) == 2:
            a, b = fns
            return (lambda fr, m: impl((a(fr, m), b(fr, m)))), out
        return (lambda fr, m: impl([f(fr, m) for f in fns])), out

    def load(self, e: Load) -> tuple[ExprFn, DataType]:
        decl = self.buffers[e.buffer]
        index, _ = self.expr(e.index)
        if e.view is not None:  # x.u32[i]: the buffer's bytes (byteview.py)
            return view_load_function(decl, e.view, index), e.view.value_type
        name, dtype = decl.name, decl.dtype
        zero = to_value(dtype, np.zeros(1, dtype.storage_dtype))[0]
        shared, private = decl.access.is_scratch, decl.access is Access.PRIVATE  # a row per workgroup / lane

        def load(fr: Frame, m: Mask) -> Value:
            idx = np.asarray(index(fr, m))
            count = fr.counts[name]
            mem = fr.mem[name]
            if shared:
                idx = np.broadcast_to(idx, (fr.n,))
                ok = idx < count
                flat = _lane_row(fr, private) * np.uint64(count) + np.where(ok, idx, 0)
                return np.where(ok, to_value(dtype, mem[flat]), zero)
            if count == 0:
                return np.full(idx.shape, zero)
            start = fr.ranges.get(id(idx))
            if start is not None and start + fr.n <= count:  # a copy: a later store must not change it
                return to_value(dtype, mem[start: start + fr.n].copy())
            ok = idx < count
            if ok.all():
                return to_value(dtype, mem[idx])
            return np.where(ok, to_value(dtype, mem[np.where(ok, idx, 0)]), zero)

        return load, dtype.value_type

    def atomic(self, e: Atomic) -> tuple[ExprFn, DataType]:
        decl = self.buffers[e.buffer]
        op = self.registry.get(e.op)
        index, _ = self.expr(e.index)
        compiled = [self.expr(a) for a in e.args]
        operands = [f for f, _ in compiled]
        binding, _ = op.signature.bind([decl.dtype] + [t for _, t in compiled])
        combine = op_function(self.registry, op, binding)
        m_binding = op.binding_map(binding)
        scan = len(operands) == 1 and any(law.law == "associative" and law.applies(m_binding) for law in op.laws)
        name, dtype = decl.name, decl.dtype.numpy_dtype
        shared = decl.access is Access.WORKGROUP

        def atomic(fr: Frame, m: Mask) -> Value:
            count = fr.counts[name]
            idx = np.broadcast_to(np.asarray(index(fr, m)), (fr.n,))
            values = [f(fr, m) for f in operands]  # always evaluated (they may hold atomics themselves)
            ok = idx < count
            if m is not None:
                ok = ok & m
            lanes = np.flatnonzero(ok)
            result = np.zeros(fr.n, dtype)
            if lanes.size == 0:
                return result
            addr = idx[lanes].astype(np.int64)
            if shared:
                addr = addr + _lane_row(fr, False)[lanes].astype(np.int64) * count
            args = [np.broadcast_to(np.asarray(v, dtype), (fr.n,))[lanes] for v in values]
            mem = fr.mem[name]
            old = (apply_scan(mem, addr, args[0], combine) if scan
                   else apply_rounds(mem, addr, args, combine, lambda: check_deadline(fr)))
            result[lanes] = old
            return result

        return atomic, decl.dtype

    # --- statements
    def block(self, body: Sequence[Node]) -> StmtFn:
        saved = dict(self.types)
        stmts = [self.stmt(n) for n in body]
        self.types = saved
        return _run_block(stmts)

    def stmt(self, n: Node) -> StmtFn:
        if isinstance(n, Let):
            value, t = self.expr(n.value)
            self.types[n.name] = t
            name = n.name

            def let(fr: Frame, m: Mask) -> None:
                fr.vars[name] = value(fr, m)

            return let
        if isinstance(n, Assign):
            value, _ = self.expr(n.value)
            name = n.name

            def assign(fr: Frame, m: Mask) -> None:
                new = value(fr, m)
                fr.vars[name] = new if m is None else np.where(m, new, fr.vars[name])

            return assign
        if isinstance(n, Store):
            return self.store(n)
        if isinstance(n, Copy):  # a vector copy (vcopy.py)
            return copy_function(self.buffers[n.dst], self.expr(n.dst_index)[0], self.buffers[n.src],
                                 self.expr(n.src_index)[0], n.width, n.dst_units, n.src_units)
        if isinstance(n, If):
            return self.if_(n)
        if isinstance(n, Loop):
            return self.loop(n)
        if isinstance(n, Return):
            return _return
        if isinstance(n, Break):  # validation puts it in a loop
            inner = self.loops[-1]
            if not inner:
                inner.append(f"#break{len(self.loops)}")  # the loop's depth; never a variable's name
            return break_statement(inner[0])
        if isinstance(n, Barrier):
            return _barrier
        if isinstance(n, Block):
            return self.block(n.body)
        if isinstance(n, Region):  # no scope: its lets stay visible
            return _run_block([self.stmt(s) for s in n.body])
        raise TypeError(f"cannot interpret {n!r}")

    def store(self, n: Store) -> StmtFn:
        decl = self.buffers[n.buffer]
        index, _ = self.expr(n.index)
        value, _ = self.expr(n.value)
        name, dtype = decl.name, decl.dtype
        shared, private = decl.access.is_scratch, decl.access is Access.PRIVATE  # a row per workgroup / lane
        atomic = n.order is not None  # an atomic store: lanes storing to one element do so in lane order

        def store(fr: Frame, m: Mask) -> None:
            idx = np.asarray(index(fr, m))
            raw = to_storage(dtype, np.asarray(value(fr, m)))
            count = fr.counts[name]
            mem = fr.mem[name]
            if idx.ndim == 0 and raw.ndim == 0 and m is None and not shared:
                if idx < count:
                    mem[idx] = raw
                return
            start = fr.ranges.get(id(idx)) if m is None and not shared else None
            if start is not None and start + fr.n <= count:
                mem[start: start + fr.n] = raw
                return
            idx = np.broadcast_to(idx, (fr.n,))
            ok = idx < count
            if m is not None:
                ok = ok & m
            if shared:
                idx = _lane_row(fr, private) * np.uint64(count) + np.where(ok, idx, 0)
            raw = np.broadcast_to(raw, (fr.n,))
            if atomic:
                store_in_order(mem, idx[ok], raw[ok])
            elif ok.all():
                mem[idx] = raw
            else:
                mem[idx[ok]] = raw[ok]

        return store

    def if_(self, n: If) -> StmtFn:
        cond, _ = self.expr(n.cond)
        then = self.block(n.then)
        otherwise = self.block(n.otherwise) if n.otherwise else None

        def if_(fr: Frame, m: Mask) -> None:
            c = np.asarray(cond(fr, m))
            if c.ndim == 0:
                if c:
                    then(fr, m)
                elif otherwise is not None:
                    otherwise(fr, m)
                return
            if m is None and c.all():
                then(fr, None)
                return
            taken = _and(m, c)
            if taken.any():
                then(fr, taken)
            if otherwise is not None:
                rest = _and(m, ~c)
                if rest.any():
                    otherwise(fr, rest)

        return if_

    def loop(self, n: Loop) -> StmtFn:
        start, t = self.expr(n.start)
        end, _ = self.expr(n.end)
        saved = dict(self.types)
        self.types[n.var] = t
        self.loops.append([])
        body = self.block(n.body)
        breaks = self.loops.pop()
        self.types = saved
        name, dtype = n.var, t.numpy_dtype
        unsigned = np.dtype(f"u{dtype.itemsize}")

        def loop(fr: Frame, m: Mask) -> None:
            lo, hi = np.asarray(start(fr, m)), np.asarray(end(fr, m))
            if lo.ndim == 0 and hi.ndim == 0:  # same bounds for every invocation
                for v in range(int(lo), int(hi)):
                    check_deadline(fr)
                    fr.vars[name] = dtype.type(v)
                    body(fr, m)
                    if fr.alive is not None:
                        m = _and(m, fr.alive)
                        if not m.any():
                            return
                return
            trips = np.where(hi > lo, hi.view(unsigned) - lo.view(unsigned), 0).astype(unsigned)
            active = trips if m is None else np.where(m, trips, 0)
            base = np.broadcast_to(lo.view(unsigned), (fr.n,))
            for k in range(int(active.max(initial=0))):
                check_deadline(fr)
                step = _and(m, trips > k)
                if fr.alive is not None:
                    step = step & fr.alive
                if not step.any():
                    break
                fr.vars[name] = (base + unsigned.type(k)).view(dtype)
                body(fr, step)

        return leaving(loop, breaks[0]) if breaks else loop
