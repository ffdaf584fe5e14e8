"""Ordered atomics and bounded waits in the IR: the qualifiers of the text form
(``atomic.acquire.workgroup``) and the rules validation applies to an ordered access (docs/semantics.md,
"Ordered atomics" and "Bounded waits").

An ordered access is an ``Atomic`` (a read-modify-write), a ``Load`` or ``Store`` with an ``order``
(an atomic load or store) or a ``Wait``. The problems are returned as ``(code, message, fix)`` for
``validation.py`` to place:

V012 an atomic load or wait on a buffer nothing writes (read, uniform)
V033 an atomic load, store or wait on a private array
V035 an order the access cannot have (acquire on a store, release on a load or wait, acq_rel on
     either), a scope on a plain load or store, or a value that is no memory order or scope
V036 an order stronger than relaxed at device scope on workgroup memory (only its workgroup sees it)
V037 an atomic load or store of a buffer that is not of 32- or 64-bit words, a wait on one that is
     not of integer words
V038 a wait's bound that is not a positive u32 literal
"""

from __future__ import annotations

from typing import Final

from .nodes import Access, Atomic, BufferDecl, Expr, Lit, Load, MemoryOrder, MemoryScope, Program, Store, Wait
from .types import DataType
from .walk import body_exprs, statements

__all__ = ["ORDERS", "SCOPES", "parse_qualifiers", "qualifier_text", "access_problem", "wait_problem",
           "bound_problem", "is_ordered", "uses_ordering", "Problem"]

ORDERS: Final = {o.value: o for o in MemoryOrder}
SCOPES: Final = {s.value: s for s in MemoryScope}
Problem = tuple[str, str, str]  # (code, message, fix)

# which orders each kind of access may have
_ALLOWED: Final = {
    "atomic": frozenset(MemoryOrder),
    "load": frozenset((MemoryOrder.RELAXED, MemoryOrder.ACQUIRE)),
    "wait": frozenset((MemoryOrder.RELAXED, MemoryOrder.ACQUIRE)),
    "store": frozenset((MemoryOrder.RELAXED, MemoryOrder.RELEASE)),
}
_WORDS: Final = (DataType.U32, DataType.I32, DataType.U64, DataType.I64, DataType.F32, DataType.F64)
_INT_WORDS: Final = (DataType.U32, DataType.I32, DataType.U64, DataType.I64)


def parse_qualifiers(text: str) -> tuple[MemoryOrder, MemoryScope] | str:
    """The order and scope of ``atomic``, ``atomic.acquire``, ``atomic.workgroup``,
    ``atomic.acq_rel.device`` ... (an order, then a scope, each optional); a message when malformed."""
    parts = text.split(".")[1:]
    order, scope = MemoryOrder.RELAXED, MemoryScope.DEVICE
    if parts and parts[0] in ORDERS:
        order = ORDERS[parts.pop(0)]
    if parts and parts[0] in SCOPES:
        scope = SCOPES[parts.pop(0)]
    if parts:
        return (f"{text!r} has the qualifier {parts[0]!r}, which is no memory order or scope in its place (an order "
                f"first: {', '.join(ORDERS)}; then a scope: {', '.join(SCOPES)})")
    return order, scope


def qualifier_text(order: MemoryOrder, scope: MemoryScope) -> str:
    """``atomic`` with the qualifiers that are not the defaults (relaxed, device)."""
    text = "atomic"
    if order is not MemoryOrder.RELAXED:
        text += f".{order.value}"
    if scope is not MemoryScope.DEVICE:
        text += f".{scope.value}"
    return text


def access_problem(kind: str, decl: BufferDecl, order: object, scope: object) -> Problem | None:
    """What is wrong with an ordered access of ``kind`` (atomic, load, store, wait) to ``decl``
    with ``order`` and ``scope`` (a load or store without an order is plain), or None."""
    if not isinstance(scope, MemoryScope) or not (order is None or isinstance(order, MemoryOrder)):
        return ("V035", f"the memory order {order!r} or scope {scope!r} is not one",
                "use a MemoryOrder (relaxed, acquire, release, acq_rel) and a MemoryScope (workgroup, device)")
    if order is None:
        if scope is MemoryScope.DEVICE:
            return None
        return ("V035", f"a plain {kind} has a scope ({scope.value}) but no memory order",
                f"make it atomic (order relaxed: `atomic.{scope.value} {decl.name}[i]`) or drop the scope")
    if order not in _ALLOWED[kind]:
        allowed = ", ".join(o.value for o in MemoryOrder if o in _ALLOWED[kind])
        what = {"load": "an atomic load reads", "wait": "a wait reads", "store": "an atomic store writes"}[kind]
        return ("V035", f"{what}, so it cannot be {order.value}", f"use one of: {allowed}")
    if kind != "atomic":
        problem = _buffer_problem(kind, decl)
        if problem is not None:
            return problem
    if order is not MemoryOrder.RELAXED and scope is MemoryScope.DEVICE and decl.access is Access.WORKGROUP:
        return ("V036", f"{order.value} at device scope on workgroup buffer {decl.name!r}: only its own workgroup "
                "can see it, so there is nothing to order across the device",
                f"write atomic.{order.value}.workgroup")
    return None


def _buffer_problem(kind: str, decl: BufferDecl) -> Problem | None:
    """Where an atomic load, store or wait cannot go: a private array, a buffer nothing writes, a
    buffer not of whole 32- or 64-bit words (integer words for a wait)."""
    if decl.access is Access.PRIVATE:
        return ("V033", f"atomic {kind} on private array {decl.name!r}: it belongs to one invocation",
                f"use a plain {kind}")
    if kind != "store" and not decl.access.writable:
        return ("V012", f"atomic {kind} of {decl.access.value} buffer {decl.name!r}: nothing writes it while the "
                "program runs", f"use a plain load, or declare {decl.name!r} read_write")
    words = _INT_WORDS if kind == "wait" else _WORDS
    if decl.dtype not in words:
        what = "integer words (u32, i32, u64, i64)" if kind == "wait" else "32- or 64-bit words (u32, i32, u64, i64, f32, f64)"
        return ("V037", f"an atomic {kind} needs {what}; {decl.name!r} holds {decl.dtype}",
                "keep the flag or value in a buffer of such words (bits of other types through primitive.convert.bitcast)")
    return None


def wait_problem(e: Wait, decl: BufferDecl, value: DataType, bound: DataType) -> Problem | None:
    """What is wrong with wait ``e`` on ``decl`` whose value and bound have the types given, or None."""
    problem = access_problem("wait", decl, e.order, e.scope)
    if problem is None and value is not decl.dtype:
        problem = ("V007", f"the wait compares {decl.name!r}'s {decl.dtype} words with a {value} value",
                   f"cast the value: `... as {decl.dtype}`")
    return problem or bound_problem(e.bound)


def bound_problem(bound: Expr) -> Problem | None:
    """V038 unless ``bound`` is a u32 literal of at least 1."""
    if isinstance(bound, Lit) and bound.dtype is DataType.U32 and type(bound.bits) is int and 1 <= bound.bits <= bound.dtype.mask:
        return None
    return ("V038", "the bound of a wait must be a u32 literal of at least 1 (the most reads it makes)",
            "write a literal such as 1024u32")


def is_ordered(e: object) -> bool:
    """Whether ``e`` is an ordered access: an atomic, an atomic load or store, or a wait."""
    return isinstance(e, (Atomic, Wait)) or (isinstance(e, (Load, Store)) and e.order is not None)


def uses_ordering(program: Program) -> bool:
    """Whether ``program`` makes any atomic access: an atomic read-modify-write, an atomic load or
    store, or a wait (what asks a backend for its ``atomics`` capability)."""
    return any(is_ordered(e) for e in body_exprs(program.body)) or \
        any(is_ordered(n) for n in statements(program.body))
