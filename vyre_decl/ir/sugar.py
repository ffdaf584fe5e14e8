"""Operator sugar: the one table mapping infix/prefix operators and ``as`` casts to op ids.

The builder (``a + b``) and the text form (``a + b``) both read this table, so the sugar means
the same thing everywhere; the ops themselves are defined in ``ops/*.toml``. Precedence follows
Rust: ``as`` binds tighter than ``*``, bitwise ops bind tighter than comparisons.
"""

from __future__ import annotations

from typing import Final

__all__ = ["BINARY", "UNARY", "CAST_OP", "CAST_TYPE_VAR", "BINARY_PRECEDENCE", "BINARY_BY_OP", "UNARY_BY_OP"]

BINARY: Final = {
    "||": "primitive.logical.or",
    "&&": "primitive.logical.and",
    "==": "primitive.compare.eq",
    "!=": "primitive.compare.ne",
    "<": "primitive.compare.lt",
    "<=": "primitive.compare.le",
    ">": "primitive.compare.gt",
    ">=": "primitive.compare.ge",
    "|": "primitive.bitwise.or",
    "^": "primitive.bitwise.xor",
    "&": "primitive.bitwise.and",
    "<<": "primitive.bitwise.shl",
    ">>": "primitive.bitwise.shr",
    "+": "primitive.math.add",
    "-": "primitive.math.sub",
    "*": "primitive.math.mul",
    "/": "primitive.math.div",
    "%": "primitive.math.mod",
}

BINARY_PRECEDENCE: Final = {
    "||": 1,
    "&&": 2,
    "==": 3,
    "!=": 3,
    "<": 3,
    "<=": 3,
    ">": 3,
    ">=": 3,
    "|": 4,
    "^": 5,
    "&": 6,
    "<<": 7,
    ">>": 7,
    "+": 8,
    "-": 8,
    "*": 9,
    "/": 9,
    "%": 9,
}
CAST_PRECEDENCE: Final = 10
UNARY_PRECEDENCE: Final = 11
PRIMARY_PRECEDENCE: Final = 12

UNARY: Final = {
    "-": "primitive.math.neg",
    "!": "primitive.logical.not",
    "~": "primitive.bitwise.not",
}

CAST_OP: Final = "primitive.convert.cast"
CAST_TYPE_VAR: Final = "T"

BINARY_BY_OP: Final = {op: sym for sym, op in BINARY.items()}
UNARY_BY_OP: Final = {op: sym for sym, op in UNARY.items()}
