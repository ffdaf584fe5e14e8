"""Size expressions of routines: the element counts of temporaries and the grids of steps.

An expression is integer arithmetic over ``len(buffer)``, the routine's integer attributes and
literals: ``+ - * //``, ``ceil_div(a, b)``, ``min(...)``, ``max(...)`` and parentheses. It is
parsed once when the routine file loads (names checked there) and evaluated on the host before a
call, so a bad size is reported with the file, routine and field, never during a launch.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Callable, Final, Mapping

__all__ = ["SizeExpr", "SizeError", "parse_size"]

MAX_SIZE_TEXT: Final = 300
_BINOPS: Final[Mapping[type, Callable[[int, int], int]]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.FloorDiv: lambda a, b: a // b if b else 0,
}
_CALLS: Final = {"ceil_div", "min", "max", "len"}


class SizeError(ValueError):
    """A size expression that is not integer arithmetic over lengths and attributes."""


@dataclass(frozen=True)
class SizeExpr:
    """A parsed size expression; ``lengths`` are the buffers whose length it reads."""

    text: str
    tree: ast.expr = field(compare=False)  # equal texts parse to equal trees
    lengths: frozenset[str]
    names: frozenset[str]

    def evaluate(self, lengths: Mapping[str, int], attrs: Mapping[str, int]) -> int:
        return _eval(self.tree, lengths, attrs)


def parse_size(text: str, buffers: frozenset[str], attrs: frozenset[str]) -> SizeExpr:
    """Parse ``text``; ``len()`` may name only ``buffers`` and bare names only ``attrs``."""
    if not isinstance(text, str) or not text.strip():
        raise SizeError("a size must be a non-empty string such as \"len(x)\" or \"ceil_div(len(x), 256)\"")
    if len(text) > MAX_SIZE_TEXT:
        raise SizeError(f"a size expression is limited to {MAX_SIZE_TEXT} characters")
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as exc:
        raise SizeError(f"{text!r} is not an expression ({exc.msg})") from None
    lengths: set[str] = set()
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name) or node.func.id not in _CALLS or node.keywords:
                raise SizeError(f"{ast.unparse(node)}: only len(b), ceil_div(a, b), min(...) and max(...) can be called")
            if node.func.id == "len":
                if len(node.args) != 1 or not isinstance(node.args[0], ast.Name) or node.args[0].id not in buffers:
                    raise SizeError(f"{ast.unparse(node)}: len() takes one buffer of the routine: {', '.join(sorted(buffers))}")
                lengths.add(node.args[0].id)
            elif node.func.id == "ceil_div" and len(node.args) != 2:
                raise SizeError(f"{ast.unparse(node)}: ceil_div takes two arguments")
            elif not node.args:
                raise SizeError(f"{ast.unparse(node)}: {node.func.id} needs arguments")
        elif isinstance(node, ast.Name):
            if node.id not in _CALLS and node.id not in buffers and node.id not in attrs:
                raise SizeError(f"unknown name {node.id!r} (attributes: {', '.join(sorted(attrs)) or 'none'})")
            if node.id in attrs:
                names.add(node.id)
        elif isinstance(node, ast.BinOp):
            if type(node.op) not in _BINOPS:
                raise SizeError(f"{ast.unparse(node)}: only + - * // are allowed")
        elif isinstance(node, ast.Constant):
            if type(node.value) is not int or node.value < 0:
                raise SizeError(f"{node.value!r}: only non-negative integer literals are allowed")
        elif not isinstance(node, (ast.Load, ast.operator, ast.expr_context)):
            raise SizeError(f"{ast.unparse(node) if isinstance(node, ast.AST) else node}: not allowed in a size")
    return SizeExpr(text, tree, frozenset(lengths), frozenset(names))


def _eval(node: ast.expr, lengths: Mapping[str, int], attrs: Mapping[str, int]) -> int:
    if isinstance(node, ast.Constant):
        assert type(node.value) is int  # checked by parse_size
        return node.value
    if isinstance(node, ast.Name):
        return int(attrs[node.id])
    if isinstance(node, ast.BinOp):
        return _BINOPS[type(node.op)](_eval(node.left, lengths, attrs), _eval(node.right, lengths, attrs))
    assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    if node.func.id == "len":
        assert isinstance(node.args[0], ast.Name)
        return int(lengths[node.args[0].id])
    args = [_eval(a, lengths, attrs) for a in node.args]
    if node.func.id == "ceil_div":
        return -(-args[0] // args[1]) if args[1] else 0
    return min(args) if node.func.id == "min" else max(args)
