"""The signature shorthand of the op format: ``"(a: T, b: T; k: f32 = 3.0) -> out: T"``.

Operands come first, separated by commas; ``mem`` before the first one makes the op atomic (that
operand is the memory word). Compile-time attributes follow a ``;``, each with a concrete type and
an optional default (a literal). The result name is optional and defaults to ``out``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

__all__ = ["SignatureText", "SignatureSyntaxError", "parse_signature"]

_NAME: Final = r"[A-Za-z_][A-Za-z0-9_]*"
_WHOLE_RE: Final = re.compile(r"\s*\((.*)\)\s*->\s*(?:(" + _NAME + r")\s*:\s*)?(" + _NAME + r")\s*\Z", re.S)
_PORT_RE: Final = re.compile(r"\s*(mem\s+)?(" + _NAME + r")\s*:\s*(" + _NAME + r")\s*\Z")
_ATTR_RE: Final = re.compile(r"\s*(" + _NAME + r")\s*:\s*(" + _NAME + r")\s*(?:=\s*(\S(?:.*\S)?))?\s*\Z")


class SignatureSyntaxError(ValueError):
    def __init__(self, message: str, fix: str) -> None:
        super().__init__(message)
        self.message, self.fix = message, fix


@dataclass(frozen=True)
class SignatureText:
    inputs: tuple[tuple[str, str, bool], ...]  # (name, type, memory operand)
    attrs: tuple[tuple[str, str, str | None], ...]  # (name, type, default literal or None)
    output: tuple[str, str]  # (name, type)


def parse_signature(text: str) -> SignatureText:
    m = _WHOLE_RE.match(text)
    if m is None:
        raise SignatureSyntaxError(f"signature {text!r} does not parse",
                                   'write "(a: T, b: T) -> T", "(x: S) -> out: T" or "(a: f32; k: f32 = 1.0) -> f32"')
    body, out_name, out_type = m.group(1), m.group(2) or "out", m.group(3)
    ports_text, semi, attrs_text = body.partition(";")
    if ";" in attrs_text:
        raise SignatureSyntaxError("a signature has at most one ';' (operands; attributes)", "remove the extra ';'")
    inputs = []
    for part in ports_text.split(",") if ports_text.strip() else ():
        pm = _PORT_RE.match(part)
        if pm is None:
            raise SignatureSyntaxError(f"operand {part.strip()!r} does not parse", "write name: type (or mem name: type)")
        inputs.append((pm.group(2), pm.group(3), pm.group(1) is not None))
    attrs = []
    for part in attrs_text.split(",") if semi and attrs_text.strip() else ():
        am = _ATTR_RE.match(part)
        if am is None:
            raise SignatureSyntaxError(f"attribute {part.strip()!r} does not parse", "write name: type or name: type = value")
        attrs.append((am.group(1), am.group(2), am.group(3)))
    if semi and not attrs:
        raise SignatureSyntaxError("nothing follows the ';'", "declare attributes after ';' or remove it")
    return SignatureText(tuple(inputs), tuple(attrs), (out_name, out_type))
