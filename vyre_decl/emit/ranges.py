"""Interval analysis of a kernel's unsigned integer values, from the ops' range laws only.

Each unsigned expression of the program gets an interval [lo, hi] that holds for every invocation
and every time it is evaluated: literals are exact, ``lid`` on an axis is below the workgroup's
size on it, a workgroup/private array's length is its count, a loop counter (unrolled or not) lies
between its start and its end - 1 (the end is evaluated once), and a ``let`` is its value's. An op's
result is the intersection of what its range laws (``ranges = [...]`` in the op file, parsed by
``registry/ranges.py``) give for the operands' intervals — this module knows no op by name; without
a law that holds, a result may be any value of its type. Anything else (a load, ``gid``, ``wgid``,
a variable some statement assigns, a signed or float value) may be any value of its type.

The emitter asks ``in_range(index, count)`` before a bounds test of a workgroup or private array:
where the index's interval lies below the static count, the test is provably true and is left out
(docs/semantics.md, "Bounds"). The reference interpreter never uses this: the semantics are the same.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from ..ir.nodes import (Assign, Atomic, Block, BufferDecl, BufLen, Copy, Expr, Id, IdKind, If, Let, Lit, Load, Loop, Node, Op,
                        Program, Region, Select, Store, Var, Wait)
from ..ir.types import DataType
from ..ir.walk import statements
from ..registry import OpDef, Registry
from ..registry.ranges import parse_range

__all__ = ["IndexRanges", "type_range", "law_env", "at"]

Interval = tuple[int, int]
_Value = tuple["DataType | None", "Interval | None"]  # (type, interval where the type is unsigned)


def _unsigned(t: DataType | None) -> bool:
    return t is not None and t.is_int and not t.is_signed


def type_range(t: DataType) -> Interval:
    """Every value of an unsigned type."""
    return 0, t.mask


def _join(a: Interval, b: Interval) -> Interval:
    return min(a[0], b[0]), max(a[1], b[1])


class IndexRanges:
    """The intervals of a program's unsigned expressions (by the identity of the expression node;
    a node met in several places gets the hull of its intervals there)."""

    def __init__(self, program: Program, registry: Registry) -> None:
        self.registry, self.wg = registry, program.workgroup_size
        self.buffers = {b.name: b for b in program.buffers}
        self.assigned = {n.name for n in statements(program.body) if isinstance(n, Assign)}
        self.found: dict[int, Interval] = {}
        self.types: dict[int, DataType] = {}  # of the nodes in found
        self.keep: list[Expr] = []  # the nodes whose ids are keys (alive as long as this object)
        self.body(program.body, {})

    def in_range(self, index: Expr, count: int) -> bool:
        """Whether ``index`` is provably below ``count`` wherever it is evaluated."""
        iv = self.found.get(id(index))
        return iv is not None and iv[1] < count

    def interval(self, e: Expr) -> Interval | None:
        return self.found.get(id(e))

    def unsigned(self, e: Expr) -> tuple[DataType, Interval] | None:
        """The type and interval of an unsigned expression met by the analysis, or of any unsigned
        literal (those inside an op's compose too); None otherwise."""
        if isinstance(e, Lit):
            return (e.dtype, (e.bits, e.bits)) if _unsigned(e.dtype) else None
        iv = self.found.get(id(e))
        return None if iv is None else (self.types[id(e)], iv)

    # --- statements
    def body(self, nodes: tuple[Node, ...], env: dict[str, _Value]) -> None:
        for n in nodes:
            self.stmt(n, env)

    def stmt(self, n: Node, env: dict[str, _Value]) -> None:
        if isinstance(n, Let):
            t, iv = self.expr(n.value, env)
            if n.name in self.assigned:  # changed later: any value of its type
                iv = type_range(t) if t is not None and _unsigned(t) else None
            env[n.name] = (t, iv)
        elif isinstance(n, Assign):
            self.expr(n.value, env)
        elif isinstance(n, Store):
            self.expr(n.index, env)
            self.expr(n.value, env)
        elif isinstance(n, Copy):
            self.expr(n.dst_index, env)
            self.expr(n.src_index, env)
        elif isinstance(n, If):
            self.expr(n.cond, env)
            self.body(n.then, dict(env))
            self.body(n.otherwise, dict(env))
        elif isinstance(n, Loop):
            self.loop(n, env)
        elif isinstance(n, Block):
            self.body(n.body, dict(env))
        elif isinstance(n, Region):  # its lets stay visible after it (as in the emitter)
            self.body(n.body, env)

    def loop(self, n: Loop, env: dict[str, _Value]) -> None:
        t, start = self.expr(n.start, env)
        _, end = self.expr(n.end, env)
        inner = dict(env)
        counter: Interval | None = None
        if t is not None and _unsigned(t):
            counter = type_range(t)
            if n.var not in self.assigned and start is not None and end is not None:
                counter = (start[0], max(start[0], end[1] - 1))  # the body runs only while counter < end
        inner[n.var] = (t, counter)
        self.body(n.body, inner)

    # --- expressions
    def expr(self, e: Expr, env: Mapping[str, _Value]) -> _Value:
        t, iv = self._expr(e, env)
        if iv is not None:
            key = id(e)
            old = self.found.get(key)
            self.found[key] = iv if old is None else _join(old, iv)
            if old is None:
                self.keep.append(e)
                assert t is not None
                self.types[key] = t
        return t, iv

    def _expr(self, e: Expr, env: Mapping[str, _Value]) -> _Value:
        if isinstance(e, Lit):
            return e.dtype, ((e.bits, e.bits) if _unsigned(e.dtype) else None)
        if isinstance(e, Id):
            top = type_range(DataType.U32)
            return DataType.U32, (0, self.wg[e.axis] - 1) if e.kind is IdKind.LOCAL else top
        if isinstance(e, BufLen):
            decl = self.buffers[e.buffer]
            return DataType.U32, (decl.count, decl.count) if decl.access.is_scratch else type_range(DataType.U32)
        if isinstance(e, Select):
            self.expr(e.cond, env)
            t, a = self.expr(e.if_true, env)
            _, b = self.expr(e.if_false, env)
            return t, (_join(a, b) if a is not None and b is not None else None)
        if isinstance(e, Op):
            return self.op(e, env)
        if isinstance(e, (Load, Atomic, Wait)):
            self.expr(e.index, env)
            for sub in e.args if isinstance(e, Atomic) else (e.value, e.bound) if isinstance(e, Wait) else ():
                self.expr(sub, env)
            t = self.buffers[e.buffer].dtype.value_type
            return t, (type_range(t) if _unsigned(t) else None)  # any value of the element type
        if isinstance(e, Var) and e.name in env:
            return env[e.name]
        return None, None

    def op(self, e: Op, env: Mapping[str, _Value]) -> _Value:
        args = [self.expr(a, env) for a in e.args]
        types = [t for t, _ in args]
        op = self.registry.get(e.op)
        if any(t is None for t in types):
            return None, None
        try:
            binding, out = op.signature.bind([t for t in types if t is not None], dict(e.types))
        except Exception:  # noqa: BLE001 - validation reports a bad call; here it only means "no interval"
            return None, None
        if not _unsigned(out):
            return out, None
        result = type_range(out)
        if not op.ranges or not all(_unsigned(t) for t in types):
            return out, result
        tvars = op.binding_map(binding)
        values = law_env(op, tvars, [iv if iv is not None else type_range(t) for t, iv in args if t is not None])
        operands = tuple(p.name for p in op.signature.inputs)
        for law in op.ranges:
            if not law.applies(tvars):
                continue
            formula, _ = parse_range(law.text, operands, tuple(tvars))
            bounds = formula.bounds(values)
            if bounds is not None:
                result = max(result[0], bounds[0]), min(result[1], bounds[1])
        if result[0] > result[1]:  # no value fits every law: claim nothing rather than trust an empty set
            return out, type_range(out)
        return out, result


def law_env(op: OpDef, tvars: Mapping[str, DataType], intervals: Sequence[Interval]) -> dict[str, int]:
    """What a range or rewrite law's formulas read: each operand's ``x.lo``/``x.hi`` and each type
    variable's ``T.bits``, ``T.min``, ``T.max``."""
    values: dict[str, int] = {}
    for p, (lo, hi) in zip(op.signature.inputs, intervals):
        values[f"{p.name}.lo"], values[f"{p.name}.hi"] = lo, hi
    for var, vt in tvars.items():
        values[f"{var}.bits"] = vt.bits
        values[f"{var}.min"], values[f"{var}.max"] = (int(vt.min), int(vt.max)) if vt.is_int else (0, 0)
    return values


def at(p: str) -> str:
    """The guard of an access under predicate ``p``: none where the test was proven true (``p`` empty)."""
    return f"@{p} " if p else ""


class _ProvenBounds:
    """The emitter's question: is this index of a workgroup or private array provably below
    ``count`` (its element count, or its vector count)? Asked of the program's own index nodes;
    the analysis runs once per emitter, at the first question."""

    program: Program
    registry: Registry
    _index_ranges: IndexRanges | None = None

    def proven(self, decl: BufferDecl, index: Expr, count: int | None = None) -> bool:
        if not decl.access.is_scratch:
            return False  # a global buffer's length is known only at run time
        return self.index_ranges().in_range(index, decl.count if count is None else count)

    def index_ranges(self) -> IndexRanges:
        if self._index_ranges is None:
            self._index_ranges = IndexRanges(self.program, self.registry)
        return self._index_ranges
