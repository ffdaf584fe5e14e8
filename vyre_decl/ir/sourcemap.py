"""Where a validation problem is in the text a program was read from: node paths made ``file:line:col``.

The validator names a node by its path (``body[1].then[0].value.args[1]``), which is all a built
program has. A program parsed from a named text (``load_program``, a routine kernel) keeps that
text (``Program._source``), so ``check`` reports its problems at ``file:line:col (path)``, as
parse errors are. Positions are found only when there is a problem: the text is parsed again by
a parser that records where each node starts, and the path is followed through that copy (equal
to the program, so the path leads to the same node). A node starts where the first token of its
subtree is.
"""

from __future__ import annotations

import re
from typing import Any, Final, Sequence

from .diagnostics import Diagnostic
from .lexer import Token
from .nodes import BufferDecl, Expr, Lit, Node, Program
from .parser import Parser

__all__ = ["locate"]

_SEGMENT: Final = re.compile(r"\.?([A-Za-z_]+)|\[(\d+)\]")
_PATH: Final = re.compile(r"(body|buffers)\[\d+\]|workgroup_size\Z|buffers\Z")


class _Recording(Parser):
    """The parser, noting the position of the first token of every node it makes."""

    def __init__(self, src: str, filename: str, type_vars: Any, params: Any) -> None:
        super().__init__(src, filename, type_vars, params)
        self.positions: dict[int, int] = {}
        self.kept: list[Any] = []  # every noted node stays alive, so no id is reused

    def _note(self, node: Any, pos: int) -> Any:
        if id(node) not in self.positions:
            self.positions[id(node)] = pos
            self.kept.append(node)
        return node

    def made(self, expr: Expr, height: int, tok: Token) -> Expr:
        return self._note(super().made(expr, height, tok), tok[2])

    def literal(self, negative: bool = False) -> Lit:
        pos = self.peek()[2]
        return self._note(super().literal(negative), pos)  # type: ignore[no-any-return]

    def statement(self) -> Node:
        pos = self.peek()[2]
        return self._note(super().statement(), pos)  # type: ignore[no-any-return]

    def if_stmt(self) -> Any:
        pos = self.peek()[2]
        return self._note(super().if_stmt(), pos)

    def buffer(self) -> BufferDecl:
        pos = self.peek()[2]
        return self._note(super().buffer(), pos)  # type: ignore[no-any-return]


def _follow(root: Any, path: str) -> Any:
    """The node at ``path`` below ``root`` (None if the path leads nowhere)."""
    node = root
    for m in _SEGMENT.finditer(path):
        name, index = m.groups()
        try:
            node = getattr(node, name) if name else node[int(index)]
        except (AttributeError, IndexError, TypeError):
            return None
    return node


def _start(node: Any, positions: dict[int, int]) -> int | None:
    """The first position recorded in ``node``'s subtree (a bounded walk)."""
    best, stack, seen = None, [node], 0
    while stack and seen < 100_000:
        n = stack.pop()
        seen += 1
        pos = positions.get(id(n))
        if pos is not None and (best is None or pos < best):
            best = pos
        if isinstance(n, (tuple, list)):
            stack.extend(n)
        else:  # a record (expressions, statements) or a dataclass: its fields
            names: Any = getattr(n, "__fields__", None) or getattr(n, "__dataclass_fields__", None) or ()
            stack.extend(getattr(n, f) for f in names if not f.startswith("_"))
    return best


def locate(program: Program, diags: Sequence[Diagnostic]) -> list[Diagnostic]:
    """``diags`` of ``program`` with each node path given as ``file:line:col (path)`` when the
    program was parsed from a named text (unchanged otherwise)."""
    if not program._source or not any(_PATH.match(d.location) for d in diags):
        return list(diags)
    filename, src, type_vars, params = program._source[0]
    try:
        parser = _Recording(src, filename, type_vars, params)
        copy = parser.program()
    except Exception:  # noqa: BLE001 - the text no longer parses as it did: keep the paths
        return list(diags)
    out = []
    for d in diags:
        node = _follow(copy, d.location) if _PATH.match(d.location) else None
        pos = _start(node, parser.positions) if node is not None else None
        if d.location == "workgroup_size":
            pos = src.find("workgroup")
        if pos is None or pos < 0:
            out.append(d)
            continue
        line = src.count("\n", 0, pos) + 1
        col = pos - (src.rfind("\n", 0, pos) + 1) + 1
        out.append(Diagnostic(d.code, d.message, f"{filename}:{line}:{col} ({d.location})", d.fix, d.severity))
    return out
