"""A seeded generator of well-typed random programs, for differential testing.

``random_program(seed, ops)`` builds a program from the registry's ops (every op over 32- and
64-bit value types, required attributes given random literals; atomics whose laws make the final memory
independent of the order of the updates): typed input buffers of every storage type, one output
sized like the first input, and

- a body of lets, assignments, ifs, bounded loops, blocks, regions, early returns and stores;
  expressions include ``select`` (both arms run) and lazy ``branch`` (the chosen arm alone runs);
  stores write the invocation's own element or one far out of bounds (a no-op), loads read any
  index (out of bounds: 0);
- sometimes workgroup memory: rounds of "each invocation writes its own slot, barrier", at the
  top level where control flow is uniform, after which any invocation reads any slot;
- sometimes subgroup collectives (``subgroup.*``: shuffles, votes, match, reductions, scans), only
  in control flow every invocation of the workgroup takes alike (V027) and never in a lazy
  branch's arm (V028): such a program has no guard around its body and mostly sends the
  invocations past its data away with an early ``return`` (so the subgroup where the data ends
  is partial), or keeps them (their stores are no-ops); its ``if``s take a uniform condition
  (literals, lengths, ``wgid``, inputs at uniform indices) or call no collective inside;
  workgroup sizes are sometimes not multiples of the subgroup size;
- sometimes a ``read_write`` accumulator that ``atomic`` updates at any index with one op whose
  laws make the result independent of the order (commutative and associative; one op, since
  two such ops need not commute with each other), the old values never read — as a statement, or
  in the condition of a ``branch`` (never in its arms: V026);
- sometimes a private array with ``unroll`` loops, and sometimes memory orders and scopes on the
  accumulator's atomics, atomic stores of owned elements, atomic loads and bounded waits of
  workgroup memory between barriers (``fuzzfeatures.py``; a program without them is the one its
  seed gave before they existed).

Every program is deterministic: a NaN reaches an op whose result shows a NaN's bits (the
``nan-bits`` trait) only as a fixed literal, so a backend must give exactly the reference's
bits. ``check_program`` runs the checks a machine without a GPU can make.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..ir import sugar
from ..ir.subgroup import SUBGROUP_SIZE
from ..ir.nodes import (
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
from ..ir.types import DataType as D
from ..registry import Registry
from .fuzzfeatures import byte_views, large_memory, resident, vector_copies, vector_prelude, vector_types, view_load
from .fuzzfeatures import wg_collective, wg_collectives
from .fuzzfeatures import (acc_order, break_plan, features, ordered_read, ordered_store, place_break, private_decl,
                           private_load, private_store, shared_read)

__all__ = ["random_program", "random_inputs", "check_program", "FuzzOps", "ACC_COUNT"]

_NUMERIC = (D.U32, D.I32, D.F32, D.U64, D.I64, D.F64)
_VALUE = _NUMERIC + (D.BOOL,)
_NARROW = (D.U8, D.U16, D.I8, D.I16, D.F16, D.BF16, D.BOOL)  # storage types: loads widen, stores narrow
_FLOATS = (0.0, -0.0, 1.0, -1.5, 0.5, 3.0e38, -3.0e38, 1e-40, float("inf"), float("-inf"), float("nan"), 7.25)
_INTS = (0, 1, 2, 3, 7, 31, 32, 255, 65535, 2**31 - 1, 2**31, 2**32 - 1, 2**63 - 1, 2**63, 2**64 - 1)
_ORDER_FREE = {"commutative", "associative"}  # an atomic op with both laws leaves the same final memory in any order
ACC_COUNT = 8  # elements of the atomic accumulator
_NE, _LT, _GE, _MOD = "primitive.compare.ne", "primitive.compare.lt", "primitive.compare.ge", "primitive.math.mod"
_WORKGROUPS = (32, 64, 128, 32, 64, 128, 20, 48, 100)  # some not multiples of the subgroup size (32)
_COLLECTIVE_PROGRAMS = 0.35  # the share of programs that may call collective ops
_COLLECTIVE_CALL = 0.2  # the chance an expression there (in uniform control flow) is a collective call


@dataclass(frozen=True)
class _Use:
    op: str
    types: tuple[tuple[str, D], ...]
    args: tuple[D, ...]
    nan_bits: bool  # the op shows a NaN operand's bits
    attrs: tuple[tuple[str, D], ...]  # attributes without a default: the generator picks a literal


class FuzzOps:
    """The ops a generated program may call, by result type (the collective ones apart: they need
    uniform control flow), and the order-free atomics by word type."""

    def __init__(self, registry: Registry) -> None:
        self.by_result: dict[D, list[_Use]] = {t: [] for t in _VALUE}
        self.collective: dict[D, list[_Use]] = {t: [] for t in _VALUE}
        self.atomics: dict[D, list[str]] = {}
        for op in registry:
            collective = registry.has_trait(op.id, "collective")
            sig = op.signature
            required = tuple((a.name, a.dtype) for a in sig.attrs if a.default is None)
            for b in op.bindings():
                m = op.binding_map(b)
                args = tuple(sig.resolve(p.type, m) for p in sig.inputs)
                if op.is_atomic:
                    laws = {law.law for law in op.laws if law.applies(m)}
                    if len(args) == 2 and args[0] == args[1] and _ORDER_FREE <= laws:
                        self.atomics.setdefault(args[0], []).append(op.id)
                    continue
                out = op.output_type(b)
                inferred = {p.type for p in sig.inputs}  # type variables the arguments determine
                explicit = tuple((n, t) for n, t in m.items() if n not in inferred)
                if out in self.by_result and all(a in _VALUE for a in args) and (args or collective):
                    use = _Use(op.id, explicit, args, registry.has_trait(op.id, "nan-bits"), required)
                    (self.collective if collective else self.by_result)[out].append(use)


class _Gen:
    def __init__(self, ops: FuzzOps, rng: random.Random, inputs: list[BufferDecl]) -> None:
        self.ops, self.rng, self.inputs = ops, rng, inputs
        self.scopes: list[dict[str, D]] = [{"i": D.U32}]
        self.assignable: list[str] = []  # a list: a set's order changes with the hash seed, and so would the program
        self.names = 0
        self.shared: BufferDecl | None = None  # readable once a barrier made its slots visible
        self.acc: BufferDecl | None = None
        self.acc_op = ""  # one op per program: two order-free ops on one element (and, xor) do not commute
        self.lazy_arms = 0  # > 0 while generating an arm of a lazy branch, where effects are illegal (V026)
        self.divergent = 0  # > 0 in control flow the invocations of a workgroup may take differently
        self.uniform_only = 0  # > 0 while generating a value every invocation of the workgroup shares
        self.collectives = 0  # collective calls this program may still make (V027, V028: where allowed)
        self.buffers: list[BufferDecl] = []
        self.private: BufferDecl | None = None  # a private array (fuzzfeatures.py), its loops sometimes unrolled
        self.counters: list[str] = []  # the counters of the unroll loops around: constant private indices
        self.ordered = False  # atomics, stores and workgroup reads may carry a memory order (fuzzfeatures.py)
        self.vector = False  # the private array's stores may be vector copies (fuzzfeatures.py)
        self.breaks = False  # loops may break (fuzzfeatures.py)
        self.views = False  # u32/u64 leaves may be byte views of an input (fuzzfeatures.py)

    def fresh(self) -> str:
        self.names += 1
        return f"v{self.names}"

    def visible(self, t: D) -> list[str]:
        return [n for scope in self.scopes for n, vt in scope.items() if vt is t]

    def lit(self, t: D) -> Lit:
        r = self.rng
        if t is D.BOOL:
            return Lit.of(t, r.random() < 0.5)
        if t.is_float:
            extra = (1e308, -5e-324, 2.0**-1022) if t is D.F64 else ()
            return Lit.of(t, r.choice(_FLOATS + extra) if r.random() < 0.6 else round(r.uniform(-100, 100), 3))
        value = (r.choice(_INTS) if r.random() < 0.6 else r.randrange(0, 1000)) % 2**t.bits
        if t.is_signed:
            value = (value + 2 ** (t.bits - 1)) % 2**t.bits - 2 ** (t.bits - 1)
        return Lit.of(t, value)

    def index(self, depth: int) -> Expr:
        """A load index: the invocation's element mostly, else any u32 (out of bounds included)."""
        return Var("i") if self.rng.random() < 0.6 else self.expr(D.U32, max(depth - 1, 0))

    def leaf(self, t: D, depth: int) -> Expr:
        r = self.rng
        if self.uniform_only:
            return self.uniform_leaf(t, depth)
        if self.private is not None and self.private.dtype.value_type is t and r.random() < 0.3:
            return private_load(self)
        view = view_load(self, t, depth)  # draws only in a program with byte views
        if view is not None:
            return view
        names = self.visible(t)
        loads = [b for b in self.inputs if b.dtype.value_type is t]
        if self.shared is not None and self.shared.dtype is t:
            loads.append(self.shared)
        pick = r.random()
        if names and pick < 0.4:
            return Var(r.choice(names))
        if loads and pick < 0.75:
            b = r.choice(loads)
            if b.access is Access.WORKGROUP and r.random() < 0.5:
                slot = Id(IdKind.LOCAL, 0) if r.random() < 0.3 else self.lit(D.U32)
                return ordered_read(self, b, slot) or Load(b.name, slot)
            return Load(b.name, self.index(depth))
        if t is D.U32 and pick < 0.85:
            return r.choice([BufLen(r.choice(self.inputs).name), Id(IdKind.GLOBAL, 0), Id(IdKind.LOCAL, 0), Var("i")])
        return self.lit(t)

    def uniform_leaf(self, t: D, depth: int) -> Expr:
        """A leaf every invocation of a workgroup shares (ir/uniformity.py): an input at a uniform
        index, a length, the workgroup id, a literal; no variable (an assignment in divergent
        control flow would make it vary)."""
        r = self.rng
        loads = [b for b in self.inputs if b.dtype.value_type is t]
        pick = r.random()
        if loads and pick < 0.5:
            index = self.expr(D.U32, depth - 1) if depth > 0 and r.random() < 0.5 else Lit.of(D.U32, r.randrange(8))
            return Load(r.choice(loads).name, index)
        if t is D.U32 and pick < 0.8:
            return r.choice([BufLen(r.choice(self.inputs).name), Id(IdKind.WORKGROUP, 0)])
        return self.lit(t)

    def uniform(self, t: D, depth: int) -> Expr:
        """An expression of type ``t`` with the same value in every invocation of a workgroup."""
        self.uniform_only += 1
        e = self.expr(t, depth)
        self.uniform_only -= 1
        return e

    def collective_call(self, t: D, depth: int) -> Expr:
        """A collective op's call (the caller checked that control flow is uniform here); a
        shuffle's lane is mostly one of the subgroup's (0 .. 31), sometimes any u32."""
        r = self.rng
        self.collectives -= 1
        use = r.choice(self.ops.collective[t])
        args = [self.expr(a, depth - 1) for a in use.args]
        if use.op.startswith("subgroup.shuffle") and r.random() < 0.8:  # (x, lane or lane offset)
            wrapped = Op(_MOD, (args[1], Lit.of(D.U32, SUBGROUP_SIZE)))
            args[1] = wrapped if r.random() < 0.4 else Lit.of(D.U32, r.randrange(SUBGROUP_SIZE + 1))
        if use.nan_bits:
            args = [self.fixed_nan(x, a) if a.is_float else x for x, a in zip(args, use.args)]
        return Op(use.op, tuple(args), (), use.types)

    def fixed_nan(self, e: Expr, t: D) -> Expr:
        """``e`` with any NaN replaced by the literal NaN (whose bits are the same everywhere)."""
        return Select(Op(_NE, (e, e)), Lit.of(t, float("nan")), e)

    def expr(self, t: D, depth: int) -> Expr:
        r = self.rng
        if depth <= 0 or r.random() < 0.25:
            return self.leaf(t, depth)
        if self.collectives and not (self.divergent or self.lazy_arms or self.uniform_only) \
                and self.ops.collective[t] and r.random() < _COLLECTIVE_CALL:
            return self.collective_call(t, depth)
        if r.random() < 0.1:
            return self.select(t, depth)
        if t in _NUMERIC and r.random() < 0.1:  # a cast from another type
            src = r.choice([s for s in _NUMERIC if s is not t])
            return Op(sugar.CAST_OP, (self.expr(src, depth - 1),), types=((sugar.CAST_TYPE_VAR, t),))
        uses = self.ops.by_result.get(t) or []
        if not uses:
            return self.leaf(t, depth)
        use = r.choice(uses)
        args = [self.expr(a, depth - 1) for a in use.args]
        if use.nan_bits:
            args = [self.fixed_nan(x, a) if a.is_float else x for x, a in zip(args, use.args)]
        return Op(use.op, tuple(args), tuple((n, self.lit(a)) for n, a in use.attrs), use.types)

    def select(self, t: D, depth: int) -> Expr:
        """``select`` (both arms run) or ``branch`` (only the chosen arm runs: no effects in its arms,
        though its condition may update the accumulator)."""
        if self.rng.random() < 0.5:
            return Select(self.expr(D.BOOL, depth - 1), self.expr(t, depth - 1), self.expr(t, depth - 1))
        cond = self.expr(D.BOOL, depth - 1)
        if self.acc is not None and not (self.lazy_arms or self.uniform_only) and self.rng.random() < 0.5:
            # an effect whose old value never shows: `select(atomic != 0, c, c)` is c
            cond = Select(Op(_NE, (self.acc_update(), Lit.of(self.acc.dtype, 0))), cond, cond)
        self.lazy_arms += 1
        arms = self.expr(t, depth - 1), self.expr(t, depth - 1)
        self.lazy_arms -= 1
        return Select(cond, *arms, lazy=True)

    def acc_update(self) -> Atomic:
        """An order-free atomic update of the accumulator at any index (ACC_COUNT: out of bounds)."""
        assert self.acc is not None
        slot = Op(_MOD, (self.expr(D.U32, 2), Lit.of(D.U32, ACC_COUNT + 1)))
        value = self.expr(self.acc.dtype, 2)
        return Atomic(self.acc_op, self.acc.name, slot, (value,), *acc_order(self))

    def scoped(self, depth: int, count: int, output: BufferDecl, extra: dict[str, D] | None = None) -> list[Node]:
        self.scopes.append(dict(extra or {}))
        body = self.statements(depth, count, output)
        self.scopes.pop()
        return body

    def statements(self, depth: int, count: int, output: BufferDecl) -> list[Node]:
        r = self.rng
        out: list[Node] = []
        for _ in range(count):
            k = r.random()
            if k < 0.3 or depth <= 0:
                t = r.choice(_VALUE)
                name = self.fresh()
                out.append(Let(name, self.expr(t, 3)))
                self.scopes[-1][name] = t
                self.assignable.append(name)
            elif k < 0.42:
                names = [n for n in self.assignable if any(n in s for s in self.scopes)]
                if names:
                    name = r.choice(names)
                    t = next(s[name] for s in self.scopes if name in s)
                    out.append(Assign(name, self.expr(t, 3)))
            elif k < 0.57:
                out.append(self.if_statement(depth, output))
            elif k < 0.65:
                out.append(self.loop(depth, output))
            elif k < 0.7:
                out.append(Block(tuple(self.scoped(depth - 1, r.randint(1, 2), output))))
            elif k < 0.74:
                out.append(Region("fuzz", tuple(self.statements(depth - 1, r.randint(1, 2), output))))
            elif k < 0.84 and self.acc is not None:
                out.append(Let(self.fresh(), self.acc_update()))  # the old value depends on the order: never read
            elif k < 0.9 and self.private is not None:
                out.append(private_store(self) if r.random() < 0.5 else self.loop(depth, output, fill=True))
            else:
                far = r.random() < 0.15  # far out of bounds: a no-op by the semantics
                index: Expr = Op("primitive.math.add", (Var("i"), Lit.of(D.U32, 1 << 30))) if far else Var("i")
                store = Store(output.name, index, self.expr(output.dtype.value_type, 3))
                out.append(store if far else ordered_store(self, store, False))
        return out

    def loop(self, depth: int, output: BufferDecl, fill: bool = False) -> Loop:
        """A bounded loop; where the program has a private array, mostly an ``unroll`` one whose
        counter may index it (``fill``: over the array's elements, storing into it first)."""
        r = self.rng
        var = self.fresh()
        unroll = fill or (self.private is not None and r.random() < 0.6)
        self.counters += [var] if unroll else []
        plan = break_plan(self, unroll)  # None: no break (and no draw, in a program without breaks)
        self.divergent += plan is True
        body = self.scoped(depth - 1, r.randint(0, 2) if fill else r.randint(1, 3), output, {var: D.U32})
        self.divergent -= plan is True
        if plan is not None:
            place_break(self, body, var, plan)
        if fill:
            assert self.private is not None and isinstance(self.private.count, int)
            body.insert(0, Store(self.private.name, Var(var), self.expr(self.private.dtype.value_type, 2)))
        self.counters = [c for c in self.counters if c != var]
        end = self.private.count if fill and self.private is not None else r.randint(0, 4)
        return Loop(var, Lit.of(D.U32, 0), Lit.of(D.U32, end), tuple(body), unroll)

    def if_statement(self, depth: int, output: BufferDecl) -> If:
        """An ``if``, sometimes returning early; where collectives may come, its condition is
        sometimes uniform, so its arms may call them too."""
        r = self.rng
        uniform = bool(self.collectives and not self.divergent) and r.random() < 0.5
        cond = self.uniform(D.BOOL, 2) if uniform else self.expr(D.BOOL, 2)
        self.divergent += not uniform
        then = self.scoped(depth - 1, r.randint(1, 3), output)
        if r.random() < 0.1:
            then.append(Return())
        otherwise = self.scoped(depth - 1, r.randint(0, 2), output)
        self.divergent -= not uniform
        return If(cond, tuple(then), tuple(otherwise))

    def shared_rounds(self, shared: BufferDecl) -> list[Node]:
        """Rounds of: a value per invocation, (a barrier so every read of the last round is done,)
        the value into the invocation's own slot, a barrier. Top level: control flow is uniform."""
        out: list[Node] = []
        for k in range(self.rng.randint(1, 2)):
            name = self.fresh()
            out.append(Let(name, self.expr(shared.dtype, 3)))
            self.scopes[-1][name] = shared.dtype
            if k:
                out.append(Barrier())
            out += [ordered_store(self, Store(shared.name, Id(IdKind.LOCAL, 0), Var(name)), True), Barrier()]
            self.shared = shared
        return out + shared_read(self, shared)


def random_program(seed: int, ops: FuzzOps) -> Program:
    """A valid, deterministic program drawn from ``seed``."""
    r = random.Random(seed)
    types = lambda: r.choice(_NARROW) if r.random() < 0.2 else r.choice(_NUMERIC)  # noqa: E731
    inputs = [BufferDecl(f"a{k}", Access.READ, types(), binding=k) for k in range(r.randint(1, 3))]
    gen = _Gen(ops, r, inputs)
    buffers = gen.buffers = list(inputs)
    feats = features(seed)
    gen.vector = vector_copies(seed)  # copies into the private array (fuzzfeatures.py)
    gen.views = byte_views(seed)
    gen.ordered, gen.breaks = feats.ordered, feats.breaks
    if ops.atomics and r.random() < 0.25:
        gen.acc = BufferDecl("acc", Access.READ_WRITE, r.choice(sorted(ops.atomics, key=lambda t: t.value)),
                             count=ACC_COUNT, binding=len(buffers))
        gen.acc_op = r.choice(ops.atomics[gen.acc.dtype])
        buffers.append(gen.acc)
    output = BufferDecl("o", Access.WRITE, types(), binding=len(buffers), count_like="a0")
    buffers.append(output)
    workgroup = r.choice(_WORKGROUPS)
    if ops.collective[D.U32] and r.random() < _COLLECTIVE_PROGRAMS:
        gen.collectives = r.randint(1, 4)
    body: list[Node] = [Let("i", Id(IdKind.GLOBAL, 0))]
    if r.random() < 0.25 or (feats.ordered and r.random() < 0.4):  # ordered: workgroup reads between barriers
        shared = BufferDecl("sh", Access.WORKGROUP, r.choice(_NUMERIC), count=workgroup)
        buffers.append(shared)
        body += gen.shared_rounds(shared)
    if feats.private:
        gen.private = private_decl(r, vector_types(gen))
        buffers.append(gen.private)
        body += vector_prelude(gen)
    if wg_collectives(seed):  # workgroup collectives (fuzzfeatures.py), a draw of their own
        body += wg_collective(gen, buffers, workgroup)
    if gen.collectives:
        body += _uniform_body(gen, output)
    else:
        inner = gen.statements(2, r.randint(1, 5), output)
        store = ordered_store(gen, Store(output.name, Var("i"), gen.expr(output.dtype.value_type, 3)), False)
        body.append(If(Op(_LT, (Var("i"), BufLen(output.name))), tuple(inner) + (store,)))
    return Program(tuple(buffers), (workgroup, 1, 1), tuple(body), name=f"fuzz{seed}",
                   large_workgroup_memory=large_memory(seed), resident=resident(seed, workgroup))


def _uniform_body(gen: _Gen, output: BufferDecl) -> list[Node]:
    """The body of a program that may call collectives, with no guard around it (the top level is
    uniform control flow): statements every invocation runs (stores past the data are no-ops),
    mostly an early return of the invocations past the data (they leave their subgroups: where
    the data ends inside a subgroup, that one is partial), then more statements and the store."""
    r = gen.rng
    body = gen.statements(1, r.randint(0, 2), output)
    if r.random() < 0.75:
        body.append(If(Op(_GE, (Var("i"), BufLen(output.name))), (Return(),)))
    body += gen.statements(2, r.randint(1, 5), output)
    body.append(ordered_store(gen, Store(output.name, Var("i"), gen.expr(output.dtype.value_type, 3)), False))
    return body


_SPECIAL = {
    D.F32: (0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 1, 0x3F800000),
    D.F64: (0, 1 << 63, 0x7FF0 << 48, 0xFFF0 << 48, 0x7FF8 << 48, 1, 0x3FF0 << 48),
    D.F16: (0, 0x8000, 0x7C00, 0xFC00, 0x7E00, 1, 0x3C00),
    D.BF16: (0, 0x8000, 0x7F80, 0xFF80, 0x7FC0, 1, 0x3F80),
}


def random_inputs(program: Program, seed: int) -> list[np.ndarray]:
    """Inputs of one random length (fixed-size buffers: their size): random bit patterns, float
    buffers starting with the special values."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 300))
    out = []
    for d in program.inputs:
        count, storage = d.count or n, np.dtype(d.dtype.storage_dtype)
        bits = rng.integers(0, 2**63, count, dtype=np.uint64) * np.uint64(2) + rng.integers(0, 2, count, dtype=np.uint64)
        words = bits.astype(f"u{storage.itemsize}")  # the low bits
        special = np.array(_SPECIAL.get(d.dtype, ()), dtype=words.dtype)[:count]
        words[: special.size] = special
        out.append(words.view(storage))
    return out


def check_program(program: Program, registry: Registry, seed: int) -> list[np.ndarray]:
    """What a machine without a GPU can check: valid, the same after print and parse, runs on the
    reference; returns the reference's outputs. Raises AssertionError (a generator or validator
    bug) or VyreError (a backend refused a valid program)."""
    from ..backends.config import DispatchConfig
    from ..backends.reference import ReferenceBackend
    from ..ir.text import parse_program, print_program
    from ..ir.validation import validate

    diags = validate(program, registry)
    assert not diags, f"generated program {program.name} is invalid: {[str(d) for d in diags]}"
    assert parse_program(print_program(program)) == program, f"{program.name} changes through print and parse"
    backend: Any = ReferenceBackend(registry)
    return backend.dispatch(program, random_inputs(program, seed), DispatchConfig(timeout=10.0))
