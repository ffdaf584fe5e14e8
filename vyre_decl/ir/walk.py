"""Generic traversal: every sub-expression of an expression, every statement and expression of a body."""

from __future__ import annotations

from .record import replace
from typing import Iterator, Mapping, Sequence

from .nodes import Assign, Atomic, Block, Copy, Expr, If, Let, Load, Loop, Node, Op, Region, Select, Store, Var, Wait

__all__ = ["children", "subexprs", "statements", "own_exprs", "body_exprs", "substitute"]


def children(e: Expr) -> tuple[Expr, ...]:
    """The direct sub-expressions of ``e``."""
    if isinstance(e, Op):
        return e.args
    if isinstance(e, Select):
        return (e.cond, e.if_true, e.if_false)
    if isinstance(e, Load):
        return (e.index,)
    if isinstance(e, Atomic):
        return (e.index, *e.args)
    if isinstance(e, Wait):
        return (e.index, e.value, e.bound)
    return ()


def substitute(e: Expr, names: Mapping[str, Expr]) -> Expr:
    """``e`` with every ``Var`` named in ``names`` replaced by its expression."""
    if isinstance(e, Var):
        return names.get(e.name, e)
    if isinstance(e, Op):
        return replace(e, args=tuple(substitute(a, names) for a in e.args))
    if isinstance(e, Select):
        return Select(substitute(e.cond, names), substitute(e.if_true, names), substitute(e.if_false, names), e.lazy)
    if isinstance(e, Load):
        return replace(e, index=substitute(e.index, names))
    if isinstance(e, Atomic):
        return replace(e, index=substitute(e.index, names), args=tuple(substitute(a, names) for a in e.args))
    if isinstance(e, Wait):
        return replace(e, index=substitute(e.index, names), value=substitute(e.value, names),
                       bound=substitute(e.bound, names))
    return e


def subexprs(e: Expr) -> Iterator[Expr]:
    """``e`` and all its sub-expressions, pre-order."""
    stack = [e]
    while stack:
        x = stack.pop()
        yield x
        stack.extend(reversed(children(x)))


def statements(body: Sequence[Node]) -> Iterator[Node]:
    """Every statement of ``body``, nested ones included, pre-order."""
    for n in body:
        yield n
        if isinstance(n, If):
            yield from statements(n.then)
            yield from statements(n.otherwise)
        elif isinstance(n, (Loop, Block, Region)):
            yield from statements(n.body)


def own_exprs(n: Node) -> tuple[Expr, ...]:
    """The expressions a statement holds itself (not those of the statements nested in it)."""
    if isinstance(n, (Let, Assign)):
        return (n.value,)
    if isinstance(n, Store):
        return (n.index, n.value)
    if isinstance(n, Copy):
        return (n.dst_index, n.src_index)
    if isinstance(n, If):
        return (n.cond,)
    if isinstance(n, Loop):
        return (n.start, n.end)
    return ()


def body_exprs(body: Sequence[Node]) -> Iterator[Expr]:
    """Every expression and sub-expression appearing anywhere in ``body``."""
    for n in statements(body):
        for e in own_exprs(n):
            yield from subexprs(e)
