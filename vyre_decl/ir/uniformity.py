"""Uniformity: which values and control flow are the same in every invocation of a workgroup, and
so which barriers (V014) and collective op calls (V027, V028) run where the workgroup or the
subgroup does not run them together."""

from __future__ import annotations

from typing import Callable, Mapping

from .nodes import (
    Access,
    Assign,
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
    Program,
    Region,
    Return,
    Select,
    Store,
    Var,
)
from .walk import subexprs

__all__ = ["divergent_barriers"]


def _uniform(e: Expr, varying: set[str], buffers: Mapping[str, BufferDecl],
             collective: Callable[[str], bool] | None = None) -> bool:
    """Whether ``e`` has the same value in every invocation of a workgroup (conservatively): no
    part of it is a per-invocation id, a varying variable, an atomic, a collective op (the lane id,
    a shuffle; even a ballot differs between subgroups) or a load from memory that invocations
    write."""
    for x in subexprs(e):
        if isinstance(x, Op) and collective is not None and collective(x.op):
            return False
        if isinstance(x, (Lit, BufLen, Op, Select)):
            continue
        if isinstance(x, Id):
            if x.kind is not IdKind.WORKGROUP:
                return False
        elif isinstance(x, Var):
            if x.name in varying:
                return False
        elif isinstance(x, Load):
            decl = buffers.get(x.buffer)
            if decl is None or decl.access not in (Access.READ, Access.UNIFORM):
                return False
        else:
            return False
    return True


def _collectives(n: Node, path: str, collective: Callable[[str], bool]) -> list[tuple[str, str, bool]]:
    """The collective op calls in the expressions of statement ``n`` itself: (path, op id, whether
    it is in an arm of a lazy branch)."""
    fields = {Let: ("value",), Assign: ("value",), Store: ("index", "value"), If: ("cond",), Loop: ("start", "end"),
              Copy: ("dst_index", "src_index")}
    found = []
    for name in fields.get(type(n), ()):
        lazy_arms = {id(x) for e in subexprs(getattr(n, name)) if isinstance(e, Select) and e.lazy
                     for arm in (e.if_true, e.if_false) for x in subexprs(arm)}
        for x in subexprs(getattr(n, name)):
            if isinstance(x, Op) and collective(x.op):
                found.append((f"{path}.{name}", x.op, id(x) in lazy_arms))
    return found


def divergent_barriers(program: Program, collective: Callable[[str], bool] | None = None
                        ) -> tuple[list[str], list[tuple[str, str, bool]]]:
    """Barriers in non-uniform control flow (or after an early return), and collective ops in
    non-uniform control flow or in a lazy branch's arm (an early return before them is allowed).

    A ``break`` in non-uniform control flow makes the rest of its loop non-uniform: the statements
    after it and, by a second walk of the body, the whole body (later iterations, and the variables
    the loop assigns, which differ between invocations that left at different iterations)."""
    buffers = {b.name: b for b in program.buffers}
    varying: set[str] = set()
    broke: list[bool] = []  # per enclosing loop, innermost last: whether a non-uniform break was walked
    found: dict[str, None] = {}
    calls: dict[tuple[str, str, bool], None] = {}

    def walk(body: tuple[Node, ...], path: str, divergent: bool, returned: bool) -> bool:
        """Returns whether some invocations may have returned early by the end of ``body``."""
        for i, n in enumerate(body):
            here = f"{path}[{i}]"
            divergent = divergent or bool(broke and broke[-1])
            if collective is not None:
                calls.update(dict.fromkeys(c for c in _collectives(n, here, collective) if divergent or c[2]))
            if isinstance(n, (Let, Assign)):
                if divergent or not _uniform(n.value, varying, buffers, collective):
                    varying.add(n.name)
            elif isinstance(n, If):
                d = divergent or not _uniform(n.cond, varying, buffers, collective)
                r1 = walk(n.then, f"{here}.then", d, returned)
                r2 = walk(n.otherwise, f"{here}.otherwise", d, returned)
                returned = r1 or r2
            elif isinstance(n, Loop):
                d = divergent or not (_uniform(n.start, varying, buffers, collective) and _uniform(n.end, varying, buffers, collective))
                if d:
                    varying.add(n.var)
                # an early return late in the body makes the next iteration's barriers divergent: walk
                # it again then (only then: walking every loop twice is exponential in the nesting)
                broke.append(False)
                r = walk(n.body, f"{here}.body", d, returned)
                again = broke.pop()
                if again or (r and not returned):
                    broke.append(again)
                    r = walk(n.body, f"{here}.body", d or again, r)
                    broke.pop()
                returned = r
            elif isinstance(n, (Block, Region)):
                returned = walk(n.body, f"{here}.body", divergent, returned)
            elif isinstance(n, Return):
                returned = returned or divergent
            elif isinstance(n, Break) and divergent and broke:
                broke[-1] = True
            elif isinstance(n, Barrier) and (divergent or returned):
                found[here] = None
        return returned

    while True:  # grow the varying set to a fixpoint (loops feed values back)
        before = len(varying)
        found.clear()
        calls.clear()
        walk(program.body, "body", False, False)
        if len(varying) == before:
            return list(found), list(calls)
