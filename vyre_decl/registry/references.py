"""The reference functions an op file may name: what exists, not how it is computed.

``reference = "add"`` names a function from this catalogue: a whitelisted numpy ufunc (never an
``eval``) or a built-in reference kernel for a rule of the semantics table that no ufunc gets
right (truncating division with the ÷0 rules, masked shifts, saturating casts, IEEE-754-2019
min/max, bit counts). Each entry lists the operand kinds it implements; the loader refuses an
entry used for other operand types. The implementations live in the reference package
(``reference/kernels.py``), which checks at import that it implements exactly this catalogue.
"""

from __future__ import annotations

from typing import Final, Mapping

__all__ = ["REFERENCES", "UFUNC", "KERNEL", "COLLECTIVE"]

UFUNC: Final = "ufunc"
KERNEL: Final = "kernel"
# data movement between the lanes of a subgroup (docs/semantics.md, "Subgroups"): the kernel sees the
# values of every lane of each subgroup at once; only an op with the "collective" trait may name one
COLLECTIVE: Final = "collective"

_ALL = frozenset({"bool", "uint", "int", "float"})
_NUM = frozenset({"uint", "int", "float"})
_INT = frozenset({"uint", "int"})
_BITS = frozenset({"bool", "uint", "int"})
_FLOAT = frozenset({"float"})
_BOOL = frozenset({"bool"})

# name -> (ufunc or kernel, operand kinds it follows the semantics table for). numpy's `minimum`
# propagates NaN, which the table forbids for min, so it is for integers only; and so on.
REFERENCES: Final[Mapping[str, tuple[str, frozenset[str]]]] = {
    **dict.fromkeys(("add", "subtract", "multiply", "negative", "positive", "absolute"), (UFUNC, _NUM)),
    **dict.fromkeys(("divide", "true_divide", "sqrt", "floor", "ceil", "rint", "trunc", "copysign"), (UFUNC, _FLOAT)),
    **dict.fromkeys(("bitwise_and", "bitwise_or", "bitwise_xor", "invert"), (UFUNC, _BITS)),
    **dict.fromkeys(("equal", "not_equal"), (UFUNC, _ALL)),
    **dict.fromkeys(("less", "less_equal", "greater", "greater_equal"), (UFUNC, _NUM)),
    **dict.fromkeys(("logical_and", "logical_or", "logical_xor", "logical_not"), (UFUNC, _BOOL)),
    **dict.fromkeys(("minimum", "maximum"), (UFUNC, _INT)),
    **dict.fromkeys(("int_div", "int_mod", "shl", "shr", "rotl", "rotr", "popcount", "clz", "ctz", "reverse_bits"),
                    (KERNEL, _INT)),
    **dict.fromkeys(("float_min", "float_max"), (KERNEL, _FLOAT)),
    "cast": (KERNEL, _ALL),
    "bitcast": (KERNEL, _NUM),
    "mulhi": (KERNEL, _INT),
    "fma": (KERNEL, _FLOAT),
    "lane_id": (COLLECTIVE, _ALL),
    "lane_shuffle": (COLLECTIVE, _ALL),
    "lane_ballot": (COLLECTIVE, _BOOL),
}
