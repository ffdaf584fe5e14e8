"""Tokens of the text form: the token grammar, keywords, and errors located by line and column."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final, NoReturn

from .diagnostics import Diagnostic, VyreError
from .nodes import Access
from .scalars import LITERAL_SUFFIXES
from .types import DataType

__all__ = ["Token", "ParseError", "tokenize", "fail", "KEYWORDS", "TOKEN_RE", "SUFFIX_PATTERN"]

KEYWORDS: Final = frozenset(
    "program workgroup buffer output let if else loop in return barrier region select len "
    "atomic as true false gid lid wgid".split()
    + [t.value for t in DataType]
    + [a.value for a in Access]
)

SUFFIX_PATTERN: Final = "|".join(LITERAL_SUFFIXES)
TOKEN_RE: Final = re.compile(
    r"""
    (?P<ws>[ \t\r]+|\#[^\n]*)
  | (?P<nl>\n|;)
  | (?P<num>(?:0[xX][0-9a-fA-F]+|\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|inf|nan|bits\(0[xX][0-9a-fA-F]+\))
        _?(?:"""
    + SUFFIX_PATTERN
    + r""")(?![A-Za-z0-9_]))
  | (?P<int>\d(?:[0-9A-Za-z_.]|(?<=[eE])[+-](?=\d))*)
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)
  | (?P<str>"(?:[^"\\\n]|\\.)*")
  | (?P<punct>\.\.|==|!=|<=|>=|<<|>>|&&|\|\||[-+*/%&|^<>!~=()\[\]{},:@])
    """,
    re.VERBOSE,
)


@dataclass(frozen=True, slots=True)
class Token:
    kind: str  # num (suffixed literal), int (a number without suffix), name, str, punct, nl, eof
    text: str
    pos: int


class ParseError(VyreError):
    """A syntax error in program text, located by line and column."""


def _line_col(src: str, pos: int) -> tuple[int, int]:
    line = src.count("\n", 0, pos) + 1
    col = pos - (src.rfind("\n", 0, pos) + 1) + 1
    return line, col


def tokenize(src: str, filename: str) -> list[Token]:
    toks: list[Token] = []
    pos = 0
    while pos < len(src):
        m = TOKEN_RE.match(src, pos)
        if m is None:
            fail(src, filename, pos, "P001", f"unexpected character {src[pos]!r}", "remove it")
        kind = m.lastgroup
        assert kind is not None
        if kind != "ws":
            toks.append(Token(kind, m.group(), pos))
        pos = m.end()
    toks.append(Token("eof", "", len(src)))
    return toks


def fail(src: str, filename: str, pos: int, code: str, message: str, fix: str,
         error: type[ParseError] = ParseError) -> NoReturn:
    """Raise a ParseError (or the subclass ``error``) pointing at ``pos`` in ``src``."""
    line, col = _line_col(src, pos)
    text = src.splitlines()[line - 1] if src and line <= len(src.splitlines()) else ""
    context = f"{message}\n    {text}\n    {' ' * (col - 1)}^"
    raise error(Diagnostic(code, context, f"{filename}:{line}:{col}", fix))
