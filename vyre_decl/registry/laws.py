"""The law catalogue: every algebraic law an op may declare, in one place.

Each law says how many operands the op has, whether it names an element (of the operand type or
of the result type) or another op (``over``), whether the result must have the operand type,
which weaker laws it implies, and the equations that are checked. The schema, the loader, the
conformance runner, ``ops laws --suggest`` and the reference interpreter all read this table.

In an op file a law is one string::

    "commutative"                      a law without arguments
    "identity(zero) @int"              an element (symbolic, see scalars.ELEMENTS, or a literal)
    "distributive(primitive.math.add)" the op it distributes over (same dialect or any loaded one)
    "absorbing(nan) @float"            @ restricts it to a type set of the (only) type variable
    "involution @S=u32,i32; T=u32"     or, with several type variables, to a set for each

Equations are written over the op ``f``, operands ``a``, ``b``, ``c``, the element ``e`` and the
other op ``g``; ``lhs = rhs`` must hold bit for bit (all NaNs equal) on every case checked.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final, Mapping

from ..ir.types import DataType

__all__ = ["LawKind", "CATALOGUE", "LawSyntaxError", "parse_law", "format_law", "law_fits"]


@dataclass(frozen=True, slots=True)
class LawKind:
    name: str
    arity: tuple[int, ...]  # operand counts the law is defined for
    element: str | None  # None, "operand" (e has the operand type) or "result" (e has the result type)
    over: bool  # names another binary op g
    same_type: bool  # the result type must equal the operand type
    equations: Mapping[int, tuple[tuple[str, str], ...]]  # arity -> (lhs, rhs) pairs
    implies: tuple[str, ...] = ()
    summary: str = ""


def _eq(*pairs: str) -> tuple[tuple[str, str], ...]:
    return tuple(tuple(p.split(" = ")) for p in pairs)  # type: ignore[misc]


CATALOGUE: Final[Mapping[str, LawKind]] = {k.name: k for k in (
    LawKind("commutative", (2,), None, False, False, {2: _eq("f(a,b) = f(b,a)")},
            summary="the operands can be swapped"),
    LawKind("associative", (2,), None, False, True, {2: _eq("f(f(a,b),c) = f(a,f(b,c))")},
            summary="grouping does not matter"),
    LawKind("identity", (2,), "operand", False, True, {2: _eq("f(e,a) = a", "f(a,e) = a")},
            ("left_identity", "right_identity"), "e leaves the other operand unchanged on both sides"),
    LawKind("left_identity", (2,), "operand", False, True, {2: _eq("f(e,a) = a")}, summary="f(e, a) = a"),
    LawKind("right_identity", (2,), "operand", False, True, {2: _eq("f(a,e) = a")}, summary="f(a, e) = a"),
    LawKind("absorbing", (2,), "operand", False, True, {2: _eq("f(e,a) = e", "f(a,e) = e")},
            ("left_absorbing", "right_absorbing"), "e wins on both sides"),
    LawKind("left_absorbing", (2,), "operand", False, True, {2: _eq("f(e,a) = e")}, summary="f(e, a) = e"),
    LawKind("right_absorbing", (2,), "operand", False, True, {2: _eq("f(a,e) = e")}, summary="f(a, e) = e"),
    LawKind("idempotent", (1, 2), None, False, True, {1: _eq("f(f(a)) = f(a)"), 2: _eq("f(a,a) = a")},
            summary="applying it again changes nothing: f(f(a)) = f(a), or f(a, a) = a"),
    LawKind("involution", (1,), None, False, True, {1: _eq("f(f(a)) = a")}, summary="it undoes itself"),
    LawKind("self_inverse", (2,), "result", False, False, {2: _eq("f(a,a) = e")},
            summary="an operand combined with itself gives the element e"),
    LawKind("distributive", (2,), None, True, True,
            {2: _eq("f(a,g(b,c)) = g(f(a,b),f(a,c))", "f(g(b,c),a) = g(f(b,a),f(c,a))")},
            ("left_distributive", "right_distributive"), "f distributes over g on both sides"),
    LawKind("left_distributive", (2,), None, True, True, {2: _eq("f(a,g(b,c)) = g(f(a,b),f(a,c))")},
            summary="f(a, g(b, c)) = g(f(a, b), f(a, c))"),
    LawKind("right_distributive", (2,), None, True, True, {2: _eq("f(g(b,c),a) = g(f(b,a),f(c,a))")},
            summary="f(g(b, c), a) = g(f(b, a), f(c, a))"),
)}


class LawSyntaxError(ValueError):
    def __init__(self, message: str, fix: str) -> None:
        super().__init__(message)
        self.message, self.fix = message, fix


_LAW_RE: Final = re.compile(r"\s*([a-z_]+)\s*(?:\(\s*([^()@]*?)\s*\))?\s*(?:@\s*(.*?))?\s*\Z")


def parse_law(text: str) -> tuple[str, str | None, str | None]:
    """(law name, argument, when-text) of a law string; LawSyntaxError if it is malformed."""
    m = _LAW_RE.match(text) if isinstance(text, str) else None
    if m is None:
        raise LawSyntaxError(f"law {text!r} does not parse",
                             'write NAME, NAME(ARGUMENT) or either followed by @TYPES, e.g. "identity(zero) @int"')
    name, arg, when = m.groups()
    if name not in CATALOGUE:
        raise LawSyntaxError(f"unknown law {name!r}", f"use one of {', '.join(CATALOGUE)}")
    if arg == "" or when == "":
        raise LawSyntaxError(f"law {text!r} has an empty {'argument' if arg == '' else 'type restriction'}",
                             "remove the empty parentheses or @")
    return name, arg, when


def format_law(name: str, arg: str | None = None, when: str | None = None) -> str:
    """The law string of a law (the inverse of parse_law)."""
    return name + (f"({arg})" if arg else "") + (f" @{when}" if when else "")


def law_fits(kind: LawKind, operand_types: tuple[DataType, ...], result: DataType) -> str | None:
    """Why a law cannot apply to an op binding with these operand types and result type (None
    if it can)."""
    n = len(operand_types)
    if n not in kind.arity:
        return f"{kind.name} needs an op of {' or '.join(map(str, kind.arity))} operand(s), this one has {n}"
    if n == 2 and operand_types[0] is not operand_types[1]:
        return f"{kind.name} needs operands of one type, here {operand_types[0]} and {operand_types[1]}"
    if kind.same_type and operand_types and result is not operand_types[0]:
        return f"{kind.name} needs the result to have the operands' type ({operand_types[0]}, not {result})"
    return None
