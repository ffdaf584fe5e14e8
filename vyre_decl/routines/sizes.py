"""Size expressions of routines: the element counts of temporaries and the grids of steps.

An expression is integer arithmetic over ``len(buffer)``, the routine's integer attributes,
``bits(V)`` (the bit width of the type bound to the type variable V), ``is_float(V)`` (1 when that
type is a float type, else 0: a step whose grid it zeroes is skipped) and literals: ``+ - * // %``,
``ceil_div(a, b)``, ``min(...)``, ``max(...)`` and parentheses; a condition (``require``) is one
comparison of two such expressions. It is parsed once when the routine file loads (names checked
there) and evaluated on the host before a call, so a bad size is reported with the file, routine
and field, never during a launch.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Callable, Final, Mapping

__all__ = ["SizeExpr", "SizeError", "DivisionByZero", "parse_size", "restore_size", "MAX_LITERAL"]

MAX_SIZE_TEXT: Final = 300
MAX_LITERAL: Final = 2**64 - 1  # the largest literal a size may write


def _divide(a: int, b: int) -> int:
    if b == 0:
        raise DivisionByZero("a division by zero")
    return a // b


def _modulo(a: int, b: int) -> int:
    if b == 0:
        raise DivisionByZero("a modulo by zero")
    return a % b


_BINOPS: Final[Mapping[type, Callable[[int, int], int]]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.FloorDiv: _divide,
    ast.Mod: _modulo,
}
_COMPARE: Final[Mapping[type, Callable[[int, int], bool]]] = {
    ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b, ast.Lt: lambda a, b: a < b,
    ast.LtE: lambda a, b: a <= b, ast.Gt: lambda a, b: a > b, ast.GtE: lambda a, b: a >= b,
}
_CALLS: Final = {"ceil_div", "min", "max", "len", "bits", "is_float"}
_OF_TYPE: Final = ("bits", "is_float")  # calls on a type variable, looked up in the attributes as "bits(V)"


class SizeError(ValueError):
    """A size expression that is not integer arithmetic over lengths and attributes."""


class DivisionByZero(SizeError):
    """A size expression divides by zero for the lengths and attributes of a call (``//``, ``%``
    or ``ceil_div`` by 0): an error, never a silent 0."""


@dataclass(frozen=True)
class SizeExpr:
    """A parsed size expression; ``lengths`` are the buffers whose length it reads."""

    text: str
    tree: ast.expr = field(compare=False)  # equal texts parse to equal trees
    lengths: frozenset[str]
    names: frozenset[str]

    def evaluate(self, lengths: Mapping[str, int], attrs: Mapping[str, int]) -> int:
        """The value for these buffer lengths and attributes (``bits(V)`` is looked up in
        ``attrs`` as ``"bits(V)"``); a condition gives 1 or 0."""
        if isinstance(self.tree, ast.Compare):
            left, right = (_eval(e, lengths, attrs) for e in (self.tree.left, self.tree.comparators[0]))
            return int(_COMPARE[type(self.tree.ops[0])](left, right))
        return _eval(self.tree, lengths, attrs)

    def __reduce__(self) -> tuple[object, ...]:  # pickled as its text (a snapshot holds no ast nodes)
        return (restore_size, (self.text, self.lengths, self.names))

    def zero_by_types(self, widths: Mapping[str, int]) -> bool:
        """True when the expression is a product with a factor that reads only literals and the
        type variables' widths (``bits``, ``is_float``) and is 0 for ``widths``: the expression is
        then 0 for every call of that binding (a step whose grid it is never launches)."""
        factors, todo = [], [self.tree]
        while todo:
            node = todo.pop()
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
                todo += [node.left, node.right]
            else:
                factors.append(node)
        try:
            return any(_types_only(f) and _eval(f, {}, widths) == 0 for f in factors)
        except DivisionByZero:
            return False

    def constant(self) -> int | None:
        """The value when the expression reads no length, attribute or width (None otherwise);
        raises DivisionByZero as ``evaluate`` does."""
        if self.lengths or self.names or any(f"{call}(" in self.text for call in _OF_TYPE):
            return None
        return self.evaluate({}, {})


def parse_size(text: str, buffers: frozenset[str], attrs: frozenset[str], type_vars: frozenset[str] = frozenset(),
               condition: bool = False) -> SizeExpr:
    """Parse ``text``; ``len()`` may name only ``buffers``, ``bits()`` only ``type_vars`` and bare
    names only ``attrs``. A ``condition`` is one comparison (``len(x) == rows * cols``)."""
    if not isinstance(text, str) or not text.strip():
        raise SizeError("a size must be a non-empty string such as \"len(x)\" or \"ceil_div(len(x), 256)\"")
    if len(text) > MAX_SIZE_TEXT:
        raise SizeError(f"a size expression is limited to {MAX_SIZE_TEXT} characters")
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as exc:
        raise SizeError(f"{text!r} is not an expression ({exc.msg})") from None
    if condition != (isinstance(tree, ast.Compare) and len(tree.ops) == 1 and type(tree.ops[0]) in _COMPARE):
        raise SizeError(f"{text!r}: a condition is one comparison (==, !=, <, <=, >, >=) of two sizes" if condition
                        else f"{text!r}: a size is integer arithmetic, not a comparison")
    lengths: set[str] = set()
    names: set[str] = set()
    operands: set[int] = set()  # the Name nodes that are len()'s or bits()'s argument
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            if node is not tree:
                raise SizeError(f"{ast.unparse(node)}: a comparison can only be the whole condition")
            continue
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name) or node.func.id not in _CALLS or node.keywords:
                raise SizeError(f"{ast.unparse(node)}: only len, bits, is_float, ceil_div, min and max can be called")
            operands.add(id(node.func))
            if node.func.id in _OF_TYPE:
                if len(node.args) != 1 or not isinstance(node.args[0], ast.Name) or node.args[0].id not in type_vars:
                    raise SizeError(f"{ast.unparse(node)}: {node.func.id}() takes one type variable of the routine: "
                                    f"{', '.join(sorted(type_vars)) or 'none'}")
                operands.add(id(node.args[0]))
            elif node.func.id == "len":
                if len(node.args) != 1 or not isinstance(node.args[0], ast.Name) or node.args[0].id not in buffers:
                    raise SizeError(f"{ast.unparse(node)}: len() takes one buffer of the routine: {', '.join(sorted(buffers))}")
                lengths.add(node.args[0].id)
                operands.add(id(node.args[0]))
            elif node.func.id == "ceil_div" and len(node.args) != 2:
                raise SizeError(f"{ast.unparse(node)}: ceil_div takes two arguments")
            elif node.func.id == "ceil_div":
                _zero_divisor(ast.FloorDiv(), node.args[1], "ceil_div(a, 0)")
            elif not node.args:
                raise SizeError(f"{ast.unparse(node)}: {node.func.id} needs arguments")
        elif isinstance(node, ast.Name):
            if id(node) in operands:
                continue
            if node.id not in attrs:
                raise SizeError(f"unknown name {node.id!r} (attributes: {', '.join(sorted(attrs)) or 'none'})")
            names.add(node.id)
        elif isinstance(node, ast.BinOp):
            if type(node.op) not in _BINOPS:
                raise SizeError(f"{ast.unparse(node)}: only + - * // % are allowed")
            _zero_divisor(node.op, node.right)
        elif isinstance(node, ast.Constant):
            if type(node.value) is not int or node.value < 0 or node.value > MAX_LITERAL:
                shown = repr(node.value)[:40]
                raise SizeError(f"{shown}: only integer literals 0 .. 2^64 - 1 are allowed")
        elif not isinstance(node, (ast.Load, ast.operator, ast.expr_context, ast.cmpop)):
            raise SizeError(f"{ast.unparse(node) if isinstance(node, ast.AST) else node}: not allowed in a size")
    return SizeExpr(text, tree, frozenset(lengths), frozenset(names))


def restore_size(text: str, lengths: frozenset[str], names: frozenset[str]) -> SizeExpr:
    """A SizeExpr from a snapshot: the text parsed again (it was checked when the file loaded)."""
    return SizeExpr(text, ast.parse(text.strip(), mode="eval").body, frozenset(lengths), frozenset(names))


def _types_only(node: ast.expr) -> bool:
    """Whether ``node`` reads only literals and widths (every name is a call's or the argument of
    ``bits``/``is_float``), so its value is known once the types are."""
    calls = [(c, c.func.id) for c in ast.walk(node) if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)]
    allowed = {id(c.func) for c, _ in calls} | {id(c.args[0]) for c, name in calls if name in _OF_TYPE}
    return all(id(n) in allowed for n in ast.walk(node) if isinstance(n, ast.Name))


def _zero_divisor(op: ast.operator, right: ast.expr, label: str = "") -> None:
    """A literal 0 after ``//``, ``%`` or as ``ceil_div``'s divisor is refused when the file loads."""
    if isinstance(op, (ast.FloorDiv, ast.Mod)) and isinstance(right, ast.Constant) and right.value == 0:
        shown = label or ("// 0" if isinstance(op, ast.FloorDiv) else "% 0")
        raise SizeError(f"{shown} divides by zero (sizes never divide by 0 silently)")


def _eval(node: ast.expr, lengths: Mapping[str, int], attrs: Mapping[str, int]) -> int:
    if isinstance(node, ast.Constant):
        assert type(node.value) is int  # checked by parse_size
        return node.value
    if isinstance(node, ast.Name):
        return int(attrs[node.id])
    if isinstance(node, ast.BinOp):
        return _BINOPS[type(node.op)](_eval(node.left, lengths, attrs), _eval(node.right, lengths, attrs))
    assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    if node.func.id == "len" or node.func.id in _OF_TYPE:
        assert isinstance(node.args[0], ast.Name)
        name = node.args[0].id
        return int(lengths[name]) if node.func.id == "len" else int(attrs[f"{node.func.id}({name})"])
    args = [_eval(a, lengths, attrs) for a in node.args]
    if node.func.id == "ceil_div":
        return -_divide(-args[0], args[1])
    return min(args) if node.func.id == "min" else max(args)
