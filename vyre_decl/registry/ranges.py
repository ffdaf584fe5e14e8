"""Range laws: what an op file says about the interval of an integer op's result.

An op may declare ``ranges = [...]``: each entry bounds the result from the bounds of the operands
(the model is MLIR's ``InferIntRangeInterface``, written as data instead of code)::

    "0 .. b.hi - 1 if b.lo >= 1 @uint"        x % b is below b where b is never 0
    "a.lo + b.lo .. a.hi + b.hi if a.hi + b.hi <= T.max @uint"   an add that cannot wrap

``LO .. HI`` are integer formulas over ``x.lo``/``x.hi`` (the least and greatest value operand
``x`` may have), integer literals, a type variable's ``T.min``, ``T.max`` and ``T.bits``, the
operators ``+ - * / % << >>`` (``/`` and ``%`` floor on these whole numbers), ``min(..)``,
``max(..)``, ``ones(x)`` (the least 2^k - 1 >= x) and ``log2(x)`` (the greatest k with 2^k <= x;
not evaluable below 1). They are evaluated on unbounded integers, so
a formula never wraps; ``if GUARD`` (comparisons joined by ``and``) says when the law holds, and
``@types`` restricts it to bindings as a law's ``@`` does. The law promises: for every operand value
``x`` with ``x.lo <= x <= x.hi`` (each operand), where the guard holds, the op's result r has
``LO <= r <= HI``. A formula that cannot be evaluated (÷0) gives nothing. Only unsigned bindings
may have range laws (D020). The analysis that uses them is ``emit/ranges.py``; the test that
each law holds is ``tests/test_ranges.py``.
"""

from __future__ import annotations

import ast
from functools import lru_cache
from typing import Callable, Final, Mapping

__all__ = ["RangeLawError", "RangeFormula", "Formula", "parse_range", "parse_formula", "RANGE_FIELDS", "RANGE_TYPE_FIELDS"]

RANGE_FIELDS: Final = ("lo", "hi")  # of an operand
RANGE_TYPE_FIELDS: Final = ("min", "max", "bits")  # of a type variable


def _log2(x: int) -> int:
    if x < 1:
        raise ValueError("log2 of a number below 1")
    return x.bit_length() - 1


_FUNCTIONS: Final[Mapping[str, Callable[..., int]]] = {
    "min": min, "max": max, "ones": lambda x: (1 << max(0, int(x)).bit_length()) - 1, "log2": _log2,
}
_ARITY: Final[Mapping[str, int]] = {"min": 2, "max": 2, "ones": 1, "log2": 1}
_BINARY: Final[Mapping[type, Callable[[int, int], int]]] = {
    ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a // b, ast.FloorDiv: lambda a, b: a // b, ast.Mod: lambda a, b: a % b,
    ast.LShift: lambda a, b: a << b, ast.RShift: lambda a, b: a >> b,
}
_COMPARE: Final[Mapping[type, Callable[[int, int], bool]]] = {
    ast.Lt: lambda a, b: a < b, ast.LtE: lambda a, b: a <= b, ast.Gt: lambda a, b: a > b,
    ast.GtE: lambda a, b: a >= b, ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b,
}
_MAX_SHIFT: Final = 256  # no formula needs more; keeps a malformed one from building huge numbers


class RangeLawError(ValueError):
    """A malformed range law: ``code`` D018 (syntax) or D019 (a name that is not known)."""

    def __init__(self, code: str, message: str, fix: str) -> None:
        super().__init__(message)
        self.code, self.message, self.fix = code, message, fix


Env = Mapping[str, int]  # "a.lo", "a.hi", "T.max", ...: the values of the names a formula reads


class RangeFormula:
    """A parsed range law (without its ``@``): ``bounds(env)`` is (LO, HI), or None where the guard
    does not hold or a formula cannot be evaluated."""

    def __init__(self, text: str, lo: "Formula", hi: "Formula", guard: "Formula | None") -> None:
        self.text, self._lo, self._hi, self._guard = text, lo, hi, guard
        self.names = lo.names | hi.names | (guard.names if guard is not None else frozenset())

    def bounds(self, env: Env) -> tuple[int, int] | None:
        if self._guard is not None and self._guard.value(env) != 1:
            return None
        lo, hi = self._lo.value(env), self._hi.value(env)
        return None if lo is None or hi is None else (lo, hi)


def _value(node: ast.expr, env: Env) -> int | bool:
    if isinstance(node, ast.Constant):
        assert isinstance(node.value, int)
        return node.value
    if isinstance(node, ast.Attribute):
        assert isinstance(node.value, ast.Name)
        return env[f"{node.value.id}.{node.attr}"]
    if isinstance(node, ast.BinOp):
        a, b = int(_value(node.left, env)), int(_value(node.right, env))
        if isinstance(node.op, (ast.LShift, ast.RShift)) and not 0 <= b <= _MAX_SHIFT:
            raise ValueError("shift amount out of range")
        return _BINARY[type(node.op)](a, b)
    if isinstance(node, ast.UnaryOp):
        return -int(_value(node.operand, env))
    if isinstance(node, ast.Call):
        assert isinstance(node.func, ast.Name)
        return _FUNCTIONS[node.func.id](*(int(_value(a, env)) for a in node.args))
    if isinstance(node, ast.Compare):
        left = int(_value(node.left, env))
        for op, right_node in zip(node.ops, node.comparators):
            right = int(_value(right_node, env))
            if not _COMPARE[type(op)](left, right):
                return False
            left = right
        return True
    assert isinstance(node, ast.BoolOp)
    return all(_value(v, env) for v in node.values)


def _check(node: ast.expr, label: str, operands: tuple[str, ...], type_vars: tuple[str, ...],
           names: set[str], boolean: bool) -> None:
    """Raise RangeLawError unless ``node`` is a formula of the vocabulary (``boolean``: a guard)."""
    def bad(what: str) -> RangeLawError:
        return RangeLawError("D018", f"{label}: {what}",
                             'write "LO .. HI", "LO .. HI if GUARD" or either followed by @types, with formulas over '
                             "x.lo, x.hi, T.min, T.max, T.bits, integers, + - * / % << >>, min, max, ones and log2")

    if boolean:
        if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
            for v in node.values:
                _check(v, label, operands, type_vars, names, True)
            return
        if not isinstance(node, ast.Compare) or not all(type(op) in _COMPARE for op in node.ops):
            raise bad("a guard must be comparisons joined by 'and'")
        for v in (node.left, *node.comparators):
            _check(v, label, operands, type_vars, names, False)
        return
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        owner, fld = node.value.id, node.attr
        if owner in operands and fld in RANGE_FIELDS or owner in type_vars and fld in RANGE_TYPE_FIELDS:
            names.add(f"{owner}.{fld}")
            return
        known = [f"{o}.{f}" for o in operands for f in RANGE_FIELDS] + [f"{v}.{f}" for v in type_vars
                                                                         for f in RANGE_TYPE_FIELDS]
        raise RangeLawError("D019", f"{label}: {owner}.{fld} is not a bound of an operand or a type",
                            f"use one of {', '.join(known)}")
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        _check(node.left, label, operands, type_vars, names, False)
        _check(node.right, label, operands, type_vars, names, False)
        return
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        _check(node.operand, label, operands, type_vars, names, False)
        return
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
        if node.func.id not in _FUNCTIONS:
            raise RangeLawError("D019", f"{label}: no function {node.func.id!r}",
                                f"use one of {', '.join(_FUNCTIONS)}")
        if len(node.args) != _ARITY[node.func.id]:
            raise bad(f"{node.func.id} takes {_ARITY[node.func.id]} argument(s)")
        for a in node.args:
            _check(a, label, operands, type_vars, names, False)
        return
    raise bad(f"{ast.unparse(node)!r} is not a formula of the vocabulary")


def parse_range(text: str, operands: tuple[str, ...], type_vars: tuple[str, ...]) -> tuple[RangeFormula, str | None]:
    """(the formula, the text after ``@`` or None) of a range law for an op with these operand and
    type-variable names; RangeLawError (D018/D019) if it is malformed."""
    if not isinstance(text, str):
        raise RangeLawError("D018", f"range law {text!r} is not a string", 'write it as "LO .. HI"')
    body, at, when = text.partition("@")
    if at and not when.strip():
        raise RangeLawError("D018", f"range law {text!r} has an empty type restriction", "remove the @")
    return _parse_body(body.strip(), operands, type_vars), (when.strip() if at else None)


@lru_cache(maxsize=512)
def _parse_body(body: str, operands: tuple[str, ...], type_vars: tuple[str, ...]) -> RangeFormula:
    bounds, has_guard, guard_text = body.partition(" if ")
    lo_text, dots, hi_text = bounds.partition("..")
    if not dots or not lo_text.strip() or not hi_text.strip() or (has_guard and not guard_text.strip()):
        raise RangeLawError("D018", f"range law {body!r} does not parse",
                            'write "LO .. HI" or "LO .. HI if GUARD", e.g. "0 .. b.hi - 1 if b.lo >= 1 @uint"')
    label = f"range law {body!r}"
    lo, hi = (parse_formula(part, operands, type_vars, False, label) for part in (lo_text, hi_text))
    guard = parse_formula(guard_text, operands, type_vars, True, label) if has_guard else None
    return RangeFormula(body, lo, hi, guard)


class Formula:
    """One parsed formula (an integer, or a guard when parsed as one) of the range vocabulary:
    ``value(env)`` is its value, or None where it cannot be evaluated (÷0, log2 of 0)."""

    def __init__(self, text: str, node: ast.expr, names: frozenset[str]) -> None:
        self.text, self._node, self.names = text, node, names

    def value(self, env: Env) -> int | None:
        try:
            return int(_value(self._node, env))
        except (ZeroDivisionError, ValueError, OverflowError):
            return None


@lru_cache(maxsize=512)
def parse_formula(text: str, operands: tuple[str, ...], type_vars: tuple[str, ...], guard: bool,
                  label: str) -> Formula:
    """A formula (``guard``: comparisons joined by ``and``, valued 1 or 0) over the operands' bounds
    and the type constants; RangeLawError (D018/D019, its message starting with ``label``) if it is
    outside the vocabulary."""
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        raise RangeLawError("D018", f"{label}: {text.strip()!r} does not parse",
                            "write formulas such as a.hi + b.hi - 1 and guards such as b.lo >= 1") from None
    names: set[str] = set()
    _check(node, label, operands, type_vars, names, guard)
    return Formula(text, node, frozenset(names))
