"""ProgramBuilder: write programs in Python with operator sugar.

```python
b = ProgramBuilder("saxpy", workgroup=(64, 1, 1))
x, y = b.input("x", "f32"), b.input("y", "f32")
out = b.output("out", "f32", like=x)
i = b.let("i", b.gid.x)
with b.if_(i < out.len):
    out[i] = x[i] * 2.0 + y[i]
program = b.build()
```

Builder values (``Val``) carry their type where the builder can know it, so Python numbers
next to them become literals of that type (``x[i] * 2.0`` is f32). Operators map to op ids
through the sugar table; ``b.op(id, ...)`` calls any op of the registry.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator

from . import sugar
from .nodes import (
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
    MemoryOrder,
    MemoryScope,
    Node,
    Op,
    Program,
    Region,
    Return,
    Select,
    Store,
    Var,
    Wait,
)
from .diagnostics import VyreError
from .ordering import ORDERS, SCOPES
from .types import DataType, parse_type

__all__ = ["ProgramBuilder", "Val", "Buf"]

_COMPARISONS = {"==", "!=", "<", "<=", ">", ">="}
_LOGICAL = {"&&", "||"}


def _dtype(t: DataType | str) -> DataType:
    return t if isinstance(t, DataType) else parse_type(t)


class Val:
    """An expression under construction, with its type when known."""

    __slots__ = ("expr", "dtype")
    __hash__ = None  # type: ignore[assignment]  # == builds an expression

    def __init__(self, expr: Expr, dtype: DataType | None = None) -> None:
        self.expr, self.dtype = expr, dtype

    def __repr__(self) -> str:
        from .text import print_expr

        return f"Val({print_expr(self.expr)}: {self.dtype or '?'})"

    def __bool__(self) -> bool:
        raise TypeError(
            "a vyre expression has no Python truth value. Fix: use b.if_(cond) / b.select(...), "
            "or && and || via a.and_(b) / a.or_(b)"
        )

    # --- helpers
    def _other(self, other: Any) -> Val:
        return lift(other, self.dtype)

    def _binary(self, sym: str, other: Any, reverse: bool = False) -> Val:
        o = self._other(other)
        a, b = (o, self) if reverse else (self, o)
        t = a.dtype or b.dtype
        if sym in _COMPARISONS or sym in _LOGICAL:
            t = DataType.BOOL
        return Val(Op(sugar.BINARY[sym], (a.expr, b.expr)), t)

    # --- arithmetic and bitwise
    def __add__(self, o: Any) -> Val: return self._binary("+", o)
    def __radd__(self, o: Any) -> Val: return self._binary("+", o, True)
    def __sub__(self, o: Any) -> Val: return self._binary("-", o)
    def __rsub__(self, o: Any) -> Val: return self._binary("-", o, True)
    def __mul__(self, o: Any) -> Val: return self._binary("*", o)
    def __rmul__(self, o: Any) -> Val: return self._binary("*", o, True)
    def __truediv__(self, o: Any) -> Val: return self._binary("/", o)
    def __rtruediv__(self, o: Any) -> Val: return self._binary("/", o, True)
    def __mod__(self, o: Any) -> Val: return self._binary("%", o)
    def __rmod__(self, o: Any) -> Val: return self._binary("%", o, True)
    def __and__(self, o: Any) -> Val: return self._binary("&", o)
    def __rand__(self, o: Any) -> Val: return self._binary("&", o, True)
    def __or__(self, o: Any) -> Val: return self._binary("|", o)
    def __ror__(self, o: Any) -> Val: return self._binary("|", o, True)
    def __xor__(self, o: Any) -> Val: return self._binary("^", o)
    def __rxor__(self, o: Any) -> Val: return self._binary("^", o, True)
    def __lshift__(self, o: Any) -> Val: return self._binary("<<", o)
    def __rshift__(self, o: Any) -> Val: return self._binary(">>", o)

    # --- comparisons (bool results)
    def __eq__(self, o: Any) -> Val: return self._binary("==", o)  # type: ignore[override]
    def __ne__(self, o: Any) -> Val: return self._binary("!=", o)  # type: ignore[override]
    def __lt__(self, o: Any) -> Val: return self._binary("<", o)
    def __le__(self, o: Any) -> Val: return self._binary("<=", o)
    def __gt__(self, o: Any) -> Val: return self._binary(">", o)
    def __ge__(self, o: Any) -> Val: return self._binary(">=", o)

    # --- unary
    def __neg__(self) -> Val: return Val(Op(sugar.UNARY["-"], (self.expr,)), self.dtype)
    def __invert__(self) -> Val: return Val(Op(sugar.UNARY["~"], (self.expr,)), self.dtype)

    def not_(self) -> Val:
        return Val(Op(sugar.UNARY["!"], (self.expr,)), DataType.BOOL)

    def and_(self, o: Any) -> Val:
        return self._binary("&&", lift(o, DataType.BOOL))

    def or_(self, o: Any) -> Val:
        return self._binary("||", lift(o, DataType.BOOL))

    def cast(self, dtype: DataType | str) -> Val:
        """``self as dtype`` (primitive.convert.cast)."""
        t = _dtype(dtype)
        return Val(Op(sugar.CAST_OP, (self.expr,), types=((sugar.CAST_TYPE_VAR, t),)), t)

    as_ = cast


def _ordering(order: MemoryOrder | str, scope: MemoryScope | str) -> tuple[MemoryOrder, MemoryScope]:
    """An access's order and scope from enum members or their names (V035 for anything else)."""
    o = ORDERS.get(order) if isinstance(order, str) else order
    sc = SCOPES.get(scope) if isinstance(scope, str) else scope
    if not isinstance(o, MemoryOrder) or not isinstance(sc, MemoryScope):
        raise VyreError.one("V035", f"the memory order {order!r} or scope {scope!r} is not one", "ProgramBuilder",
                            f"use an order of {', '.join(ORDERS)} and a scope of {', '.join(SCOPES)}")
    return o, sc


def lift(value: Any, dtype: DataType | None = None) -> Val:
    """A Val from a Val, an IR expression or a Python number (typed like ``dtype``)."""
    if isinstance(value, Val):
        return value
    if isinstance(value, Expr):
        return Val(value, value.dtype if isinstance(value, Lit) else None)
    if isinstance(value, bool):
        return Val(Lit.of(DataType.BOOL, value), DataType.BOOL)
    if isinstance(value, (int, float)):
        if dtype is None:
            raise TypeError(
                f"cannot tell the type of the Python number {value!r} here. "
                f"Fix: write b.lit({value!r}, 'u32') (or the type you mean)"
            )
        return Val(Lit.of(dtype, value), dtype)
    raise TypeError(f"{value!r} is not a vyre expression. Fix: use builder values, buffers' [i], or numbers")


class Buf:
    """A declared buffer: ``buf[i]`` loads, ``buf[i] = v`` stores, ``buf.len`` is its length."""

    __slots__ = ("decl", "_builder")

    def __init__(self, decl: BufferDecl, builder: ProgramBuilder) -> None:
        self.decl, self._builder = decl, builder

    @property
    def name(self) -> str:
        return self.decl.name

    @property
    def len(self) -> Val:
        return Val(BufLen(self.decl.name), DataType.U32)

    def __getitem__(self, index: Any) -> Val:
        return Val(Load(self.decl.name, lift(index, DataType.U32).expr), self.decl.dtype.value_type)

    def view(self, dtype: DataType | str, index: Any) -> Val:
        """Element ``index`` of this buffer's bytes read as ``dtype`` (u8, u16, u32 or u64), little-endian:
        the text's ``x.u32[i]`` (docs/semantics.md, "Byte views")."""
        t = dtype if isinstance(dtype, DataType) else DataType(dtype)
        return Val(Load(self.decl.name, lift(index, DataType.U32).expr, view=t), t.value_type)

    def __setitem__(self, index: Any, value: Any) -> None:
        v = lift(value, self.decl.dtype.value_type)
        self._builder._emit(Store(self.decl.name, lift(index, DataType.U32).expr, v.expr))

    def copy_from(self, index: Any, src: Buf, src_index: Any, width: int, *, units: bool = False,
                  src_units: bool = False) -> None:
        """``buf[index ..+ width] = src[src_index ..+ width]``: a vector copy of ``width`` (2 or 4)
        elements, one 64- or 128-bit access on a GPU where it can be; ``units``/``src_units``: that
        side's index counts whole vectors (``buf[index ..* width]``)."""
        self._builder._emit(Copy(self.decl.name, lift(index, DataType.U32).expr, src.decl.name,
                                 lift(src_index, DataType.U32).expr, width, units, src_units))

    def atomic(self, op: str, index: Any, *operands: Any, order: MemoryOrder | str = "relaxed",
               scope: MemoryScope | str = "device") -> Val:
        """``atomic.ORDER.SCOPE OP(buf[index], operands...)``; ``op`` is an id or a primitive.atomic
        name, ``order`` relaxed, acquire, release or acq_rel, ``scope`` workgroup or device."""
        op_id = op if "." in op else f"primitive.atomic.{op}"
        t = self.decl.dtype
        args = tuple(lift(v, t).expr for v in operands)
        return Val(Atomic(op_id, self.decl.name, lift(index, DataType.U32).expr, args, *_ordering(order, scope)), t)

    def atomic_load(self, index: Any, *, order: MemoryOrder | str = "relaxed", scope: MemoryScope | str = "device") -> Val:
        """``atomic.ORDER.SCOPE buf[index]``: an atomic load (order relaxed or acquire)."""
        return Val(Load(self.decl.name, lift(index, DataType.U32).expr, *_ordering(order, scope)),
                   self.decl.dtype.value_type)

    def atomic_store(self, index: Any, value: Any, *, order: MemoryOrder | str = "relaxed",
                     scope: MemoryScope | str = "device") -> None:
        """``atomic.ORDER.SCOPE buf[index] = value``: an atomic store (order relaxed or release)."""
        v = lift(value, self.decl.dtype.value_type)
        self._builder._emit(Store(self.decl.name, lift(index, DataType.U32).expr, v.expr, *_ordering(order, scope)))

    def wait(self, index: Any, value: Any, bound: int, *, order: MemoryOrder | str = "relaxed",
             scope: MemoryScope | str = "device") -> Val:
        """``atomic.ORDER.SCOPE wait(buf[index], value, bound)``: read ``buf[index]`` until it differs
        from ``value``, at most ``bound`` times; the last value read (``value`` if the bound ran out)."""
        t = self.decl.dtype
        return Val(Wait(self.decl.name, lift(index, DataType.U32).expr, lift(value, t).expr,
                        lift(bound, DataType.U32).expr, *_ordering(order, scope)), t)

    def atomic_add(self, index: Any, value: Any) -> Val:
        return self.atomic("add", index, value)

    def atomic_min(self, index: Any, value: Any) -> Val:
        return self.atomic("min", index, value)

    def atomic_max(self, index: Any, value: Any) -> Val:
        return self.atomic("max", index, value)

    def atomic_exchange(self, index: Any, value: Any) -> Val:
        return self.atomic("exchange", index, value)

    def compare_exchange(self, index: Any, expected: Any, value: Any) -> Val:
        return self.atomic("compare_exchange", index, expected, value)


class _Ids:
    def __init__(self, kind: IdKind) -> None:
        self.x, self.y, self.z = (Val(Id(kind, axis), DataType.U32) for axis in range(3))


class ProgramBuilder:
    """Builds a Program statement by statement (see the module docstring)."""

    def __init__(self, name: str = "main", workgroup: tuple[int, int, int] = (64, 1, 1), *,
                 large_workgroup_memory: bool = False, resident: int = 0) -> None:
        """``large_workgroup_memory``: the text's ``workgroup_memory(large)`` (over 48 KiB of
        workgroup arrays, up to the device's opt-in limit); ``resident``: the text's
        ``resident(N)`` (a hint: N workgroups a multiprocessor; 0 for none)."""
        self.name, self.large_workgroup_memory, self.resident = name, large_workgroup_memory, resident
        self.workgroup = tuple(workgroup)
        self._buffers: list[BufferDecl] = []
        self._stack: list[list[Node]] = [[]]
        self._fresh = 0
        self._types: dict[str, DataType | None] = {}
        self.gid, self.lid, self.wgid = _Ids(IdKind.GLOBAL), _Ids(IdKind.LOCAL), _Ids(IdKind.WORKGROUP)

    # --- buffers
    def buffer(
        self,
        name: str,
        dtype: DataType | str,
        access: Access | str = Access.READ,
        count: int = 0,
        *,
        like: Buf | str | None = None,
        output: bool = False,
        binding: int | None = None,
    ) -> Buf:
        acc = access if isinstance(access, Access) else Access(access)
        if binding is None and not acc.is_scratch:
            used = [b.binding for b in self._buffers if b.binding is not None]
            binding = max(used, default=-1) + 1
        like_name = like.name if isinstance(like, Buf) else like
        decl = BufferDecl(name, acc, _dtype(dtype), count, binding, output, like_name)
        self._buffers.append(decl)
        return Buf(decl, self)

    def input(self, name: str, dtype: DataType | str, count: int = 0) -> Buf:
        return self.buffer(name, dtype, Access.READ, count)

    def uniform(self, name: str, dtype: DataType | str, count: int = 0) -> Buf:
        return self.buffer(name, dtype, Access.UNIFORM, count)

    def inout(self, name: str, dtype: DataType | str, count: int = 0) -> Buf:
        return self.buffer(name, dtype, Access.READ_WRITE, count)

    def output(self, name: str, dtype: DataType | str, count: int = 0, *, like: Buf | str | None = None) -> Buf:
        return self.buffer(name, dtype, Access.WRITE, count, like=like)

    def shared(self, name: str, dtype: DataType | str, count: int) -> Buf:
        return self.buffer(name, dtype, Access.WORKGROUP, count)

    def private(self, name: str, dtype: DataType | str, count: int) -> Buf:
        """A per-invocation array of ``count`` elements, zero at the start of each invocation; index
        it with constants after unrolling (literals, counters of ``loop(..., unroll=True)``)."""
        return self.buffer(name, dtype, Access.PRIVATE, count)

    # --- expressions
    def lit(self, value: Any, dtype: DataType | str) -> Val:
        t = _dtype(dtype)
        return Val(Lit.of(t, value), t)

    def var(self, name: str) -> Val:
        return Val(Var(name), self._types.get(name))

    def select(self, cond: Any, if_true: Any, if_false: Any) -> Val:
        a = lift(if_true, getattr(if_false, "dtype", None))
        b = lift(if_false, a.dtype)
        return Val(Select(lift(cond, DataType.BOOL).expr, a.expr, b.expr), a.dtype)

    def op(self, op_id: str, *args: Any, types: dict[str, DataType | str] | None = None, result: DataType | str | None = None, **attrs: Any) -> Val:
        """Any registry op by id. ``types`` binds type variables the arguments do not
        determine; keyword arguments are attributes (Lit or ``(value, type)``)."""
        known = next((a.dtype for a in args if isinstance(a, Val) and a.dtype), None)
        exprs = tuple(lift(a, known).expr for a in args)
        attr_lits = tuple((k, v if isinstance(v, Lit) else Lit.of(_dtype(v[1]), v[0])) for k, v in attrs.items())
        type_args = tuple((k, _dtype(v)) for k, v in (types or {}).items())
        return Val(Op(op_id, exprs, attr_lits, type_args), _dtype(result) if result else None)

    # --- statements
    def _emit(self, node: Node) -> None:
        self._stack[-1].append(node)

    def let(self, name: str, value: Any, dtype: DataType | str | None = None) -> Val:
        v = lift(value, _dtype(dtype) if dtype else None)
        self._emit(Let(name, v.expr))
        self._types[name] = v.dtype
        return Val(Var(name), v.dtype)

    def assign(self, target: Val | str, value: Any) -> None:
        name = target if isinstance(target, str) else target.expr.name if isinstance(target.expr, Var) else None
        if name is None:
            raise TypeError("assign needs a variable (the Val returned by let). Fix: b.assign(x, value)")
        self._emit(Assign(name, lift(value, self._types.get(name)).expr))

    def do(self, value: Val) -> Val:
        """Evaluate ``value`` for its effect (e.g. an atomic whose old value is unused)."""
        self._fresh += 1
        return self.let(f"_v{self._fresh}", value)

    def ret(self) -> None:
        self._emit(Return())

    def collective(self, kind: str, name: str, *operands: Any, op: str | None = None,
                   scratch: Buf | str | None = None) -> Val:
        """``let name = workgroup.KIND(...)`` (ir/wgcollect.py; docs/semantics.md, "Workgroup
        collectives"): ``op`` (an op id) for reduce and the scans; operands v, (exclusive_scan) v and
        first, (broadcast) v and k. Raises VyreError: V051 a malformed call, V052 its scratch array."""
        from .diagnostics import Diagnostic, VyreError
        from .wgcollect import KINDS, collective_problem, expand

        where = f"workgroup.{kind}"
        ok = kind in KINDS and KINDS[kind][0] == (op is not None) and len(operands) == KINDS[kind][1]
        if not ok or (op is not None and "." not in op):
            raise VyreError(Diagnostic("V051", f"{where} with op={op!r} and {len(operands)} operand(s) is no workgroup "
                                       "collective", where, "call reduce/inclusive_scan(op=ID, v), exclusive_scan("
                                       "op=ID, v, first) or broadcast(v, k) with scratch=a workgroup array"))
        sname = scratch.name if isinstance(scratch, Buf) else scratch
        decl = next((b for b in self._buffers if b.name == sname), None)
        problem = collective_problem(kind, sname, decl, self.workgroup)
        if problem is not None:
            raise VyreError(Diagnostic(problem[0], problem[1], where, problem[2]))
        vals = [lift(v) for v in operands]
        self._emit(expand(kind, name, True, op, [v.expr for v in vals], sname, self.workgroup, decl.count if decl else 0))
        self._types[name] = vals[0].dtype
        return Val(Var(name), vals[0].dtype)

    def barrier(self) -> None:
        self._emit(Barrier())

    def break_(self) -> None:
        """Leave the innermost enclosing loop (``break``; not in an unroll loop)."""
        self._emit(Break())

    @contextmanager
    def _nested(self) -> Iterator[list[Node]]:
        body: list[Node] = []
        self._stack.append(body)
        try:
            yield body
        finally:
            self._stack.pop()

    @contextmanager
    def if_(self, cond: Any) -> Iterator[None]:
        with self._nested() as body:
            yield
        self._emit(If(lift(cond, DataType.BOOL).expr, tuple(body)))

    @contextmanager
    def else_(self) -> Iterator[None]:
        parent = self._stack[-1]
        if not parent or not isinstance(parent[-1], If) or parent[-1].otherwise:
            raise SyntaxError("else_() must directly follow an if_() block. Fix: put it right after the if_")
        with self._nested() as body:
            yield
        last = parent[-1]
        assert isinstance(last, If)
        parent[-1] = If(last.cond, last.then, tuple(body))

    @contextmanager
    def loop(self, var: str, start: Any, end: Any, *, unroll: bool = False) -> Iterator[Val]:
        """``for var in start..end`` (half-open); yields the loop variable. ``unroll`` (literal
        bounds) emits one copy of the body per iteration, with the variable a constant in each."""
        s = lift(start, getattr(end, "dtype", None) or DataType.U32)
        e = lift(end, s.dtype)
        self._types[var] = s.dtype
        with self._nested() as body:
            yield Val(Var(var), s.dtype)
        self._emit(Loop(var, s.expr, e.expr, tuple(body), unroll))

    @contextmanager
    def block(self) -> Iterator[None]:
        with self._nested() as body:
            yield
        self._emit(Block(tuple(body)))

    @contextmanager
    def region(self, generator: str) -> Iterator[None]:
        with self._nested() as body:
            yield
        self._emit(Region(generator, tuple(body)))

    def build(self) -> Program:
        if len(self._stack) != 1:
            raise SyntaxError("build() inside an open block. Fix: close every with-block first")
        return Program(tuple(self._buffers), self.workgroup, tuple(self._stack[0]), name=self.name,  # type: ignore[arg-type]
                       large_workgroup_memory=self.large_workgroup_memory, resident=self.resident)
