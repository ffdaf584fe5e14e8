"""PTX lexical matters for the parser: tokens with their lines (a '//' comment rides on the token
after it, so the emitter's comments reach the instructions they describe), integer and float
literals, and a fast path for the common line: one instruction whose operands are registers,
symbols, numbers, [reg+imm] addresses or {vector} lists."""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass

from .ptx_ast import Addr, FImm, Imm, Operand, Reg, Sym, Vec
from .ptx_types import PtxError

__all__ = ["Tok", "SIZES", "FAST", "LABEL", "line_tokens", "strip_block_comments", "parse_int", "number",
           "operands_of"]

_TOKEN = re.compile(r"""0[fF][0-9a-fA-F]{8}(?![\w$])|0[dD][0-9a-fA-F]{16}(?![\w$])|0[xX][0-9a-fA-F]+U?|0[bB][01]+U?
    |\d+\.\d*(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+|\d+U?|[%$.A-Za-z_](?:[\w$.]|::)*|"[^"\n]*"|\S""", re.X)
_PUNCT = frozenset("{}()[],;:@!<>|+-*/~&^=?")
_BLOCK_COMMENT = re.compile(r"/\*.*?\*/", re.S)

SIZES = {"b8": 1, "u8": 1, "s8": 1, "b16": 2, "u16": 2, "s16": 2, "f16": 2, "bf16": 2, "b32": 4, "u32": 4,
          "s32": 4, "f32": 4, "f16x2": 4, "bf16x2": 4, "b64": 8, "u64": 8, "s64": 8, "f64": 8, "pred": 1, "b128": 16}


@dataclass(frozen=True, slots=True)
class Tok:
    kind: str  # num, id, p, str
    text: str
    line: int
    comments: tuple[str, ...] = ()  # the '//' comments just before this token


def _kind(text: str, line: int) -> str:
    c = text[0]
    if c.isdigit():
        return "num"
    if c.isalpha() or c in "%$._":
        return "id"
    if c == '"':
        return "str"
    if c in _PUNCT:
        return "p"
    raise PtxError(line, f"unexpected character {c!r}")


def line_tokens(raw: str, line: int, comments: list[str]) -> list[Tok]:
    """The tokens of one line; a '//' comment goes to ``comments`` (it rides on the next token)."""
    cut = raw.find("//")
    if cut >= 0 and '"' not in raw[:cut]:
        comments.append(raw[cut + 2:].strip())
        raw = raw[:cut]
    toks: list[Tok] = []
    for t in _TOKEN.findall(raw):
        toks.append(Tok(_kind(t, line), t, line, tuple(comments) if comments else ()))
        comments.clear()
    return toks


def strip_block_comments(text: str) -> str:
    if "/*" not in text:
        return text
    text = _BLOCK_COMMENT.sub(lambda m: "\n" * m.group().count("\n") + " ", text)
    if "/*" in text:
        raise PtxError(text[:text.index("/*")].count("\n") + 1, "a /* comment is never closed")
    return text


def parse_int(text: str, line: int) -> int:
    t = text.rstrip("U")
    try:
        if t[:2] in ("0x", "0X"):
            return int(t[2:], 16)
        if t[:2] in ("0b", "0B"):
            return int(t[2:], 2)
        if len(t) > 1 and t[0] == "0":
            return int(t, 8)  # PTX octal literal
        return int(t)
    except ValueError:
        raise PtxError(line, f"{text!r} is not an integer literal") from None


def number(text: str, line: int, negative: bool = False) -> Imm | FImm:
    if text[:2] in ("0f", "0F") and len(text) == 10:
        return FImm(int(text[2:], 16) ^ (0x80000000 if negative else 0), 32)
    if text[:2] in ("0d", "0D") and len(text) == 18:
        return FImm(int(text[2:], 16) ^ (1 << 63 if negative else 0), 64)
    if ("." in text or "e" in text or "E" in text) and text[:2] not in ("0x", "0X"):
        value = -float(text) if negative else float(text)
        return FImm(int.from_bytes(struct.pack("<d", value), "little"), 64)
    value = parse_int(text, line)
    return Imm(-value if negative else value)


_ATOM = r"-?[%$\w.][\w$.%]*"
_ADDR = re.compile(r"\[\s*([%$\w.][\w$.%]*)?\s*(?:([+-])\s*(\w+))?\s*\]")
_ITEM = _ATOM + r"|\[[^\]]*\]|\{[^}]*\}"
_OPERAND = re.compile(r"(" + _ITEM + r")")
_OPERAND_LIST = re.compile(r"(?:" + _ITEM + r")(?:\s*,\s*(?:" + _ITEM + r"))*\Z")


def _simple(text: str, line: int) -> Operand:
    c = text[0]
    if c == "%" or text == "_":
        return Reg(text)
    if c.isdigit():
        return number(text, line)
    if c == "-":
        return number(text[1:], line, negative=True)
    if c == "[":
        m = _ADDR.fullmatch(text)
        if m is None:
            raise PtxError(line, f"unsupported address {text!r} (only [reg+imm] is modelled)")
        base, sign, off = m.groups()
        if base is not None and base[0].isdigit():
            return Addr(None, parse_int(base, line))
        value = parse_int(off, line) if off else 0
        return Addr(base, -value if sign == "-" else value)
    if c == "{":
        return Vec(tuple(_simple(t.strip(), line) for t in text[1:-1].split(",")))
    return Sym(text)


# one instruction on one line with simple operands (registers, symbols, numbers, [reg+imm], {vector}):
# most lines of a module
FAST = re.compile(r"\s*(?:@(!?)(%[\w$.]+)\s+)?([a-z][\w.:]*)(?:\s+([^;/!|]*?))?\s*;\s*(?://(.*))?$")
LABEL = re.compile(r"\s*([$A-Za-z_][\w$]*)\s*:\s*(?://(.*))?$")


def operands_of(text: str | None, line: int) -> tuple[Operand, ...] | None:
    if not text:
        return ()
    if _OPERAND_LIST.match(text) is None:
        return None
    return tuple(_simple(p, line) for p in _OPERAND.findall(text))
