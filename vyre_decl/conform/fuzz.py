"""A seeded generator of well-typed random programs, for differential testing.

``random_program(seed)`` builds a program from the registry's ops (every op whose types are
u32, i32, f32 or bool and that takes no required attribute or memory operand): typed input
buffers, one output sized like the first input, and a body of lets, assignments, ifs, bounded
loops and stores. Stores write the invocation's own element (``o[i]``) or an element far out of
bounds (a no-op by the semantics); loads read input buffers at the invocation's element or at
any index (out of bounds included: they read 0). Every program is deterministic, so a backend
must give exactly the reference's bits. ``check_program`` runs the checks a machine without a GPU
can make: it validates, survives print and parse, and runs on the reference backend.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..ir import sugar
from ..ir.nodes import (
    Access,
    Assign,
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
    Select,
    Store,
    Var,
)
from ..ir.types import DataType
from ..registry import Registry

__all__ = ["random_program", "random_inputs", "check_program", "FuzzOps"]

_TYPES = (DataType.U32, DataType.I32, DataType.F32)
_VALUE = _TYPES + (DataType.BOOL,)
_FLOATS = (0.0, -0.0, 1.0, -1.5, 0.5, 3.0e38, -3.0e38, 1e-40, float("inf"), float("-inf"), float("nan"), 7.25)
_INTS = (0, 1, 2, 3, 7, 31, 32, 255, 65535, 2**31 - 1, 2**31, 2**32 - 1)


@dataclass(frozen=True)
class _Use:
    op: str
    types: tuple[tuple[str, DataType], ...]
    args: tuple[DataType, ...]


class FuzzOps:
    """The ops a generated program may call, by result type."""

    def __init__(self, registry: Registry) -> None:
        self.by_result: dict[DataType, list[_Use]] = {t: [] for t in _VALUE}
        for op in registry:
            sig = op.signature
            if any(p.memory for p in sig.inputs) or any(a.default is None for a in sig.attrs):
                continue
            for b in op.bindings():
                m = op.binding_map(b)
                args = tuple(sig.resolve(p.type, m) for p in sig.inputs)
                out = op.output_type(b)
                inferred = {p.type for p in sig.inputs}  # type variables the arguments determine
                explicit = tuple((n, t) for n, t in m.items() if n not in inferred)
                if out in self.by_result and all(a in _VALUE for a in args) and args:
                    self.by_result[out].append(_Use(op.id, explicit, args))


class _Gen:
    def __init__(self, ops: FuzzOps, rng: random.Random, inputs: list[BufferDecl]) -> None:
        self.ops, self.rng, self.inputs = ops, rng, inputs
        self.scopes: list[dict[str, DataType]] = [{"i": DataType.U32}]
        self.assignable: set[str] = set()
        self.names = 0

    def fresh(self) -> str:
        self.names += 1
        return f"v{self.names}"

    def visible(self, t: DataType) -> list[str]:
        return [n for scope in self.scopes for n, vt in scope.items() if vt is t]

    def lit(self, t: DataType) -> Lit:
        r = self.rng
        if t is DataType.BOOL:
            return Lit.of(t, r.random() < 0.5)
        if t is DataType.F32:
            return Lit.of(t, r.choice(_FLOATS) if r.random() < 0.6 else round(r.uniform(-100, 100), 3))
        value = r.choice(_INTS) if r.random() < 0.6 else r.randrange(0, 1000)
        if t is DataType.I32:
            value = (value + 2**31) % 2**32 - 2**31
        return Lit.of(t, value)

    def index(self, depth: int) -> Expr:
        """A load index: the invocation's element mostly, else any u32 (out of bounds included)."""
        return Var("i") if self.rng.random() < 0.6 else self.expr(DataType.U32, max(depth - 1, 0))

    def leaf(self, t: DataType, depth: int) -> Expr:
        r = self.rng
        names = self.visible(t)
        loads = [b for b in self.inputs if b.dtype is t]
        pick = r.random()
        if names and pick < 0.4:
            return Var(r.choice(names))
        if loads and pick < 0.75:
            b = r.choice(loads)
            return Load(b.name, self.index(depth))
        if t is DataType.U32 and pick < 0.85:
            return r.choice([BufLen(r.choice(self.inputs).name), Id(IdKind.GLOBAL, 0), Var("i")])
        return self.lit(t)

    def expr(self, t: DataType, depth: int) -> Expr:
        r = self.rng
        if depth <= 0 or r.random() < 0.25:
            return self.leaf(t, depth)
        if r.random() < 0.1:
            return Select(self.expr(DataType.BOOL, depth - 1), self.expr(t, depth - 1), self.expr(t, depth - 1))
        if t in _TYPES and r.random() < 0.1:  # a cast from another type
            src = r.choice([s for s in _TYPES if s is not t])
            return Op(sugar.CAST_OP, (self.expr(src, depth - 1),), types=((sugar.CAST_TYPE_VAR, t),))
        uses = self.ops.by_result.get(t) or []
        if not uses:
            return self.leaf(t, depth)
        use = r.choice(uses)
        return Op(use.op, tuple(self.expr(a, depth - 1) for a in use.args), types=use.types)

    def statements(self, depth: int, count: int, output: BufferDecl) -> list[Node]:
        r = self.rng
        out: list[Node] = []
        for _ in range(count):
            k = r.random()
            if k < 0.35 or depth <= 0:
                t = r.choice(_VALUE)
                name = self.fresh()
                out.append(Let(name, self.expr(t, 3)))
                self.scopes[-1][name] = t
                self.assignable.add(name)
            elif k < 0.5:
                names = [n for n in self.assignable if any(n in s for s in self.scopes)]
                if names:
                    name = r.choice(names)
                    t = next(s[name] for s in self.scopes if name in s)
                    out.append(Assign(name, self.expr(t, 3)))
            elif k < 0.7:
                cond = self.expr(DataType.BOOL, 2)
                self.scopes.append({})
                then = self.statements(depth - 1, r.randint(1, 3), output)
                self.scopes.pop()
                self.scopes.append({})
                other = self.statements(depth - 1, r.randint(0, 2), output)
                self.scopes.pop()
                out.append(If(cond, tuple(then), tuple(other)))
            elif k < 0.8:
                var = self.fresh()
                self.scopes.append({var: DataType.U32})
                body = self.statements(depth - 1, r.randint(1, 3), output)
                self.scopes.pop()
                out.append(Loop(var, Lit.of(DataType.U32, 0), Lit.of(DataType.U32, r.randint(0, 4)), tuple(body)))
            else:
                far = r.random() < 0.15  # far out of bounds: a no-op by the semantics
                index: Expr = Op("primitive.math.add", (Var("i"), Lit.of(DataType.U32, 1 << 30))) if far else Var("i")
                out.append(Store(output.name, index, self.expr(output.dtype, 3)))
        return out


def random_program(seed: int, ops: FuzzOps) -> Program:
    """A valid, deterministic program drawn from ``seed``."""
    r = random.Random(seed)
    inputs = [BufferDecl(f"a{k}", Access.READ, r.choice(_TYPES), binding=k) for k in range(r.randint(1, 3))]
    output = BufferDecl("o", Access.WRITE, r.choice(_TYPES), binding=len(inputs), count_like="a0")
    gen = _Gen(ops, r, inputs)
    body: list[Node] = [Let("i", Id(IdKind.GLOBAL, 0))]
    inner = gen.statements(2, r.randint(1, 5), output)
    store = Store(output.name, Var("i"), gen.expr(output.dtype, 3))
    guard = Op("primitive.compare.lt", (Var("i"), BufLen(output.name)))
    body.append(If(guard, tuple(inner) + (store,)))
    return Program(tuple(inputs) + (output,), (r.choice([32, 64, 128]), 1, 1), tuple(body), name=f"fuzz{seed}")


def random_inputs(program: Program, seed: int) -> list[np.ndarray]:
    """Inputs of one random length: mixed special and random bit patterns."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 300))
    out = []
    for d in program.inputs:
        bits = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
        if d.dtype is DataType.F32:
            special = np.array([0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 1, 0x3F800000], np.uint32)
            bits[: min(n, special.size)] = special[: min(n, special.size)]
        out.append(bits.view(d.dtype.storage_dtype))
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


def run_fuzz(runner: Any, registry: Registry, count: int, seed: int, progress: Any,
             capsule_dir: Any = None) -> tuple[int, list[str]]:
    """Run ``count`` generated programs (seeds ``seed`` ..) on ``runner`` and on the reference;
    returns (programs run, a line per mismatch). A mismatch is written as a replay capsule."""
    import time

    from .capsule import write_capsule
    from .isolation import CaseError
    from .values import buffer_mismatches

    ops = FuzzOps(registry)
    problems: list[str] = []
    t0 = time.perf_counter()
    for k in range(count):
        s = seed * 1_000_003 + k
        program = random_program(s, ops)
        expected = check_program(program, registry, s)
        inputs = random_inputs(program, s)
        try:
            actual = runner.run(program, inputs, None)
        except CaseError as err:
            actual, why = None, f"the backend failed: {err}"
        else:
            bad = [(d.name, int(m.size)) for d, e, a in zip(program.outputs, expected, actual)
                   if (m := buffer_mismatches(d.dtype, e, a)).size]
            why = f"{bad} elements differ" if bad else ""
        if why:
            path = write_capsule(capsule_dir, f"fuzz-{s}", program, inputs, None, runner.name, s, why) \
                if capsule_dir is not None else None
            problems.append(f"seed {s} ({program.name}): {why}" + (f"; replay: {path}" if path else ""))
        if (k + 1) % 100 == 0 or k + 1 == count:
            progress(f"fuzz: {k + 1}/{count} programs, {len(problems)} mismatches, {time.perf_counter() - t0:.1f}s")
    return count, problems
