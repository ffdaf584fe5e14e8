"""Rewrite laws: where the bounds of an op's operands make it equal to a cheaper expression.

An op may declare ``rewrites = ["RESULT if GUARD @types", ...]``::

    "primitive.bitwise.shr(a, log2(b.lo)) if b.lo == b.hi and b.lo == 1 << log2(b.lo) @uint"   a / 2^k
    "a if a.hi < b.lo @uint"                                                                   a % b, a < b

RESULT is an operand's name, an integer formula (a literal of the op's result type), or a call of
another op whose arguments are operand names or formulas (literals of the result type). GUARD and
the formulas are the range-law vocabulary (``registry/ranges.py``: ``x.lo``, ``x.hi``, ``T.max``,
``log2``...). The promise: for all operand values within their bounds where the guard holds, the
op's result equals RESULT's. A guard is required: without one the law would be a second definition.

The emitter applies the first law whose guard holds on the intervals that ``emit/ranges.py`` finds
(a literal operand has lo = hi): ptxas does not strength-reduce a division by a constant, not even
by a power of two. The reference never rewrites (the semantics are the same); ``tests/test_rewrites.py``
checks every declared law on the reference.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from functools import lru_cache

from .ranges import Formula, RangeLawError, parse_formula

__all__ = ["Rewrite", "parse_rewrite"]

_CALL = re.compile(r"([a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)+)\((.*)\)\Z")
_FIX = ('write "RESULT if GUARD", RESULT an operand, a formula or op.id(operand or formula, ...), e.g. '
        '"primitive.bitwise.shr(a, log2(b.lo)) if b.lo == b.hi and b.lo == 1 << log2(b.lo) @uint"')


@dataclass(frozen=True)
class Rewrite:
    """A parsed rewrite law (without its ``@``): ``op`` is the op RESULT calls (None for an operand
    or a formula), ``args`` its arguments (operand names or formulas; one of them without a call)."""

    text: str
    guard: Formula
    op: str | None
    args: tuple[str | Formula, ...]


def parse_rewrite(text: str, operands: tuple[str, ...], type_vars: tuple[str, ...]) -> tuple[Rewrite, str | None]:
    """(the law, the text after ``@`` or None) of a rewrite law for an op with these operand and
    type-variable names; RangeLawError with code D021 if it is malformed."""
    if not isinstance(text, str):
        raise RangeLawError("D021", f"rewrite law {text!r} is not a string", _FIX)
    body, at, when = text.partition("@")
    if at and not when.strip():
        raise RangeLawError("D021", f"rewrite law {text!r} has an empty type restriction", "remove the @")
    try:
        return _parse_body(body.strip(), operands, type_vars), (when.strip() if at else None)
    except RangeLawError as exc:
        raise RangeLawError("D021", exc.message, exc.fix) from None


@lru_cache(maxsize=256)
def _parse_body(body: str, operands: tuple[str, ...], type_vars: tuple[str, ...]) -> Rewrite:
    label = f"rewrite law {body!r}"
    result, has_guard, guard = body.partition(" if ")
    if not has_guard or not guard.strip() or not result.strip():
        raise RangeLawError("D021", f"{label} needs a result and a guard", _FIX)
    call = _CALL.match(result.strip())  # an op id may be a Python keyword (primitive.bitwise.and)
    try:
        node = ast.parse(f"f({call.group(2)})" if call else result.strip(), mode="eval").body
    except SyntaxError:
        raise RangeLawError("D021", f"{label}: {result.strip()!r} does not parse", _FIX) from None
    parsed_guard = parse_formula(guard, operands, type_vars, True, label)

    def arg(n: ast.expr) -> str | Formula:
        if isinstance(n, ast.Name):
            if n.id not in operands:
                raise RangeLawError("D021", f"{label}: {n.id!r} is not an operand", f"use one of {', '.join(operands)}")
            return n.id
        return parse_formula(ast.unparse(n), operands, type_vars, False, label)

    if call:
        assert isinstance(node, ast.Call)
        if node.keywords:
            raise RangeLawError("D021", f"{label}: an op takes its arguments in order, without names", _FIX)
        return Rewrite(body, parsed_guard, call.group(1), tuple(arg(a) for a in node.args))
    return Rewrite(body, parsed_guard, None, (arg(node),))
