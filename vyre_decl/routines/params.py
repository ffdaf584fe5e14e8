"""Kernel parameters: where a kernel's source uses each ``$name``, and whether a routine's value fits there.

A parameter is one name token of the kernel (``lexer.fill_params`` resolves it when the kernel is
parsed), so what it may stand for follows from where it stands: before ``(`` it is an op the
kernel calls (``$combine(a, b)``), after ``atomic`` an atomic op, after a type and a dot an
element (``T.$identity``), after ``as`` or an access mode a type, in ``resident(...)`` a count
(a whole number of workgroups), and anywhere else a value (``true``/``false``). ``check_value`` holds a routine's ``with`` value against those uses and the
registry at load, so a misspelt op id, an atomic op where a kernel calls a plain one, or
``gid.x`` for an op is reported naming the file, the routine and ``with.<name>``, with a
did-you-mean, before any kernel is parsed for a binding.
"""

from __future__ import annotations

import difflib
from typing import Final, Mapping

from ..ir.lexer import tokenize
from ..ir.nodes import MAX_RESIDENT, Access
from ..ir.scalars import ELEMENTS
from ..ir.types import DataType
from ..registry import Registry

__all__ = ["param_uses", "check_value", "mixed_uses", "KINDS"]

KINDS: Final = ("op", "atomic", "element", "type", "count", "value")
_TYPE_BEFORE: Final = frozenset({"as", ":"} | {a.value for a in Access})
_TYPES: Final = tuple(t.value for t in DataType)
_VALUES: Final = ("true", "false")


def param_uses(source: str, where: str) -> dict[str, frozenset[str]]:
    """Each ``$name`` of ``source`` with the kinds of place it stands in (``KINDS``). Raises
    ParseError (P001) where the source has a character no token takes."""
    uses: dict[str, set[str]] = {}
    toks = tokenize(source, where)
    for i, (kind, text, _) in enumerate(toks):
        if kind != "name" or "$" not in text:
            continue
        segs = text.split(".")
        nxt = toks[i + 1][1] if i + 1 < len(toks) else ""
        prev = toks[i - 1][1] if i else ""
        for j, seg in enumerate(segs):
            if not seg.startswith("$"):
                continue
            if j > 0:
                use = "element"
            elif len(segs) > 1:
                use = "type"  # $t.zero: the head of a typed constant
            elif nxt in ("(", "<"):
                use = "atomic" if prev == "atomic" or prev.startswith("atomic.") else "op"  # atomic.acq_rel $op(...)
            elif prev == "(" and i > 1 and toks[i - 2][1].startswith("workgroup."):
                use = "op"  # workgroup.reduce($combine, v, part): a collective's OP (ir/wgcollect.py)
            elif prev == "(" and i > 1 and toks[i - 2][1] == "resident":
                use = "count"  # resident($res): workgroups a multiprocessor (docs/semantics.md, "Residency")
            elif prev in _TYPE_BEFORE:
                use = "type"
            else:
                use = "value"
            uses.setdefault(seg[1:], set()).add(use)
    return {name: frozenset(kinds) for name, kinds in uses.items()}


def _near(value: str, choices: list[str] | tuple[str, ...]) -> str:
    found = difflib.get_close_matches(value, choices, n=1, cutoff=0.6)
    return f"did you mean {found[0]!r}? " if found else ""


def _op_problem(value: str, atomic: bool, registry: Registry) -> tuple[str, str] | None:
    sig = registry.signature(value)
    if sig is None:
        ids = [op.id for op in registry]
        hint = _near(value, ids) or (registry.unknown_op_hint(value) + "; ")
        return f"{value!r} is not an op of the registry", f"{hint}write an op id such as primitive.math.add"
    if sig.is_atomic != atomic:
        what = "an atomic op" if sig.is_atomic else "not an atomic op"
        use = "the kernel calls it as atomic $name(buf[i], ...)" if atomic else "the kernel calls it as $name(a, b)"
        return f"{value} is {what}, but {use}", "give an op of the kind the kernel calls"
    return None


def check_value(value: str, uses: frozenset[str], registry: Registry) -> tuple[str, str] | None:
    """Why ``value`` cannot stand where a kernel uses its parameter (message, fix), or None."""
    for use in sorted(uses):
        if use in ("op", "atomic"):
            problem = _op_problem(value, use == "atomic", registry)
            if problem is not None:
                return problem
        elif use == "element" and value not in ELEMENTS:
            return (f"{value!r} is not an element (the kernel writes T.$name)",
                    f"{_near(value, ELEMENTS)}use one of {', '.join(ELEMENTS)}")
        elif use == "type" and value not in _TYPES:
            return f"{value!r} is not a type (the kernel uses it as one)", f"{_near(value, _TYPES)}use one of {', '.join(_TYPES)}"
        elif use == "count" and not (value.isascii() and value.isdigit() and 1 <= int(value) <= MAX_RESIDENT):
            return (f"{value!r} is not a whole number of workgroups from 1 to {MAX_RESIDENT} (the kernel writes "
                    "resident($name))", 'write a whole number such as "4" (docs/semantics.md, "Residency")')
        elif use == "value" and value not in _VALUES:
            return f"{value!r} is not true or false (the kernel uses it as a value)", "write \"true\" or \"false\""
    return None


def mixed_uses(uses: Mapping[str, frozenset[str]]) -> str | None:
    """A parameter the source uses as two kinds of thing (no value can be both), or None."""
    for name, kinds in sorted(uses.items()):
        if len(kinds) > 1:
            return f"${name} is used as {' and as '.join(sorted(kinds))}"
    return None

