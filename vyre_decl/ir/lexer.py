"""Tokens of the text form: the token grammar, keywords, errors located by line and column, and
the cursor through which the parsers read tokens.

A token is a plain ``(kind, text, pos)`` tuple: a 13 MB program is 3.6 million of them, and a
tuple is made three times faster than an instance of a class.
"""

from __future__ import annotations

import re
from typing import Final, Mapping, NoReturn

from .diagnostics import Diagnostic, VyreError
from .nodes import Access
from .scalars import LITERAL_SUFFIXES
from .types import DataType

__all__ = ["Token", "ParseError", "TokenCursor", "tokenize", "fill_params", "fail", "KEYWORDS", "TOKEN_RE",
           "SUFFIX_PATTERN", "PARAM_VALUE_RE"]

KEYWORDS: Final = frozenset(
    "program workgroup buffer output let if else loop in return barrier region select len "
    "atomic as true false gid lid wgid unroll break".split()
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
  | (?P<name>(?:[A-Za-z_][A-Za-z0-9_]*|\$[a-z_][a-z0-9_]*)(?:\.(?:[A-Za-z_][A-Za-z0-9_]*|\$[a-z_][a-z0-9_]*))*)
  | (?P<str>"(?:[^"\\\n]|\\.)*")
  | (?P<punct>\.\.|==|!=|<=|>=|<<|>>|&&|\|\||[-+*/%&|^<>!~=()\[\]{},:@])
    """,
    re.VERBOSE,
)

# what a routine kernel's ``$name`` parameter may stand for: one name (an op id, an element such as
# ``zero``, a type, ``true``/``false``) or a whole number of up to 4 digits (``resident($res)``),
# so a value is always exactly one name or integer token
PARAM_VALUE_RE: Final = re.compile(r"(?:[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*|[0-9]{1,4})\Z")

Token = tuple[str, str, int]
"""kind (num: a suffixed literal, int: a number without suffix, name, str, punct, nl, eof), text,
position in the source."""


class ParseError(VyreError):
    """A syntax error in program text, located by line and column."""


_CONTEXT: Final = 60  # characters of the line shown either side of an error


def _line_col(src: str, pos: int) -> tuple[int, int]:
    line = src.count("\n", 0, pos) + 1
    col = pos - (src.rfind("\n", 0, pos) + 1) + 1
    return line, col


def tokenize(src: str, filename: str) -> list[Token]:
    """The tokens of ``src`` (no whitespace or comments), ending with an ``eof`` token; P001 at
    the first character no token matches."""
    toks: list[Token] = []
    append = toks.append
    expected = 0
    for m in TOKEN_RE.finditer(src):
        start, end = m.span()
        if start != expected:  # finditer skipped a character that no token matches
            break
        expected = end
        kind = m.lastgroup
        if kind != "ws":
            append((kind, src[start:end], start))  # type: ignore[arg-type]
    if expected < len(src):
        fail(src, filename, expected, "P001", f"unexpected character {src[expected]!r}", "remove it")
    append(("eof", "", len(src)))
    return toks


def fill_params(toks: list[Token], src: str, filename: str, params: Mapping[str, str] | None) -> None:
    """Resolve the ``$name`` segments of name tokens (routine kernels) in place: each becomes the
    parameter's value, which is one name, so the token stays one name token (``$combine`` an op
    id, ``T.$identity`` an element constant such as ``T.zero``, ``$exclusive`` ``true``), or a
    whole number, which only a whole ``$name`` token may take and which makes it an integer token
    (``resident($res)``). Outside a routine kernel (``params`` None), or for a parameter not
    given, a ``$`` is P001."""
    for i, (kind, text, pos) in enumerate(toks):
        if kind != "name" or "$" not in text:
            continue
        value = params.get(text[1:], "") if params is not None and text.startswith("$") else ""
        if value.isdigit() and PARAM_VALUE_RE.match(value):
            toks[i] = ("int", value, pos)  # a whole number: an integer token where the kernel writes $name
            continue
        parts = []
        for seg in text.split("."):
            name = seg[1:] if seg.startswith("$") else None
            at = pos + text.find(seg)
            if name is None:
                parts.append(seg)
            elif params is None:
                fail(src, filename, at, "P001", "unexpected character '$' ($name parameters exist only in the "
                     "kernels of routine files)", "remove it")
            elif name not in params or not PARAM_VALUE_RE.match(params[name]):
                fail(src, filename, at, "P001", f"${name} is not a parameter given to this kernel",
                     "declare it in the kernel's params and give it in the routine's with")
            elif params[name].isdigit():
                fail(src, filename, at, "P001", f"${name} is the whole number {params[name]}, which stands only "
                     "alone (resident($name)), not as part of a dotted name", "give it a name, or use it alone")
            else:
                parts.append(params[name])
        toks[i] = (kind, ".".join(parts), pos)


def fail(src: str, filename: str, pos: int, code: str, message: str, fix: str,
         error: type[ParseError] = ParseError) -> NoReturn:
    """Raise a ParseError (or the subclass ``error``) pointing at ``pos`` in ``src``."""
    line, col = _line_col(src, pos)
    start = src.rfind("\n", 0, pos) + 1
    end = src.find("\n", pos)
    text = src[start:len(src) if end < 0 else end].rstrip("\r")
    caret = col - 1
    if len(text) > 2 * _CONTEXT:  # a long line is shown around the column
        left = max(0, caret - _CONTEXT)
        text, caret = ("..." if left else "") + text[left:caret + _CONTEXT] + "...", caret - left + (3 if left else 0)
    context = f"{message}\n    {text}\n    {' ' * caret}^"
    raise error(Diagnostic(code, context, f"{filename}:{line}:{col}", fix))


class TokenCursor:
    """Reading tokens: look ahead, consume, expect, and fail with a located P code."""

    def __init__(self, src: str, filename: str, type_names: Mapping[str, DataType],
                 params: Mapping[str, str] | None = None) -> None:
        self.src, self.filename = src, filename
        self.toks = tokenize(src, filename)
        if params is not None or "$" in src:
            fill_params(self.toks, src, filename, params)
        self.i = 0
        self.type_names = type_names

    def peek(self, skip_nl: bool = True) -> Token:
        if skip_nl:
            while self.toks[self.i][0] == "nl":
                self.i += 1
        return self.toks[self.i]

    def next(self) -> Token:
        tok = self.peek()
        self.i += 1
        return tok

    def at(self, text: str) -> bool:
        kind, tok_text, _ = self.peek()
        return tok_text == text and kind in ("punct", "name")

    def accept(self, text: str) -> bool:
        if self.at(text):
            self.i += 1
            return True
        return False

    def expect(self, text: str, fix: str = "") -> Token:
        tok = self.peek()
        if not self.at(text):
            self.error(tok, "P002", f"expected {text!r}, found {self.describe(tok)}", fix or f"insert {text!r}")
        self.i += 1
        return tok

    def error(self, tok: Token, code: str, message: str, fix: str) -> NoReturn:
        fail(self.src, self.filename, tok[2], code, message, fix)

    @staticmethod
    def describe(tok: Token) -> str:
        return "end of input" if tok[0] == "eof" else repr(tok[1])

    def ident(self, what: str) -> str:
        tok = kind, text, _ = self.next()
        if kind != "name" or "." in text or text in KEYWORDS:
            self.error(tok, "P002", f"expected {what} (an identifier), found {self.describe(tok)}",
                       "write a name such as x or my_buf (not a keyword)")
        return text

    def integer(self, what: str) -> int:
        tok = kind, text, _ = self.next()
        if kind != "int" or not (text.isascii() and text.isdigit()):
            self.error(tok, "P002", f"expected {what} (a plain integer), found {self.describe(tok)}",
                       "write a decimal integer such as 64")
        if len(text) > 12:  # every size here fits in 32 bits: refuse before converting
            self.error(tok, "P003", f"{what} {text[:16]}... ({len(text)} digits) is out of range",
                       "use a size below 2^32")
        return int(text)

    def dtype(self) -> DataType:
        tok = kind, text, _ = self.next()
        if kind != "name" or text not in self.type_names:
            self.error(tok, "P005", f"unknown type {self.describe(tok)}", f"use one of {', '.join(self.type_names)}")
        return self.type_names[text]
