"""Type sets and type-keyed tables of the op format.

A *type set* is a comma-separated list of value types and named groups: ``"numeric"``,
``"int,f32"``, ``"u32"``. The groups nest (``any`` > ``numeric`` > ``int`` > ``uint``/``sint``,
``numeric`` > ``float``), and a set keeps the order of the value types (bool, u32, i32, u64, i64,
f32, f64), which is the order of an op's bindings.

A *type-keyed table* gives a value per binding of an op's type variables: a plain value applies
to every binding; a table is keyed by type sets of the first type variable and nests one level
per further variable. Of the keys that contain a type, the smallest set wins (``u32`` beats
``uint`` beats ``int`` beats ``any``); two matching keys of one size are an error.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, Final, Mapping, Sequence

from ..ir.diagnostics import message_and_fix
from ..ir.types import VALUE_TYPES, DataType

__all__ = ["GROUPS", "TypeSetError", "parse_type_set", "describe_types", "KeyedTable", "resolve_keyed"]

_BY_NAME: Final = {t.value: t for t in VALUE_TYPES}
_INT: Final = (DataType.U32, DataType.I32, DataType.U64, DataType.I64)
_FLOAT: Final = (DataType.F32, DataType.F64)
GROUPS: Final[Mapping[str, tuple[DataType, ...]]] = {
    "uint": (DataType.U32, DataType.U64),
    "sint": (DataType.I32, DataType.I64),
    "int": _INT,
    "float": _FLOAT,
    "numeric": _INT + _FLOAT,
    "any": VALUE_TYPES,
}
_ORDER: Final = {t: i for i, t in enumerate(VALUE_TYPES)}


class TypeSetError(ValueError):
    """A type set that names an unknown type or group, or none at all."""


def parse_type_set(text: str, within: Sequence[DataType] | None = None) -> tuple[DataType, ...]:
    """The value types ``text`` names, in canonical order. With ``within``, a group contributes
    its members that are in ``within``, a named type must be in it, and the set may not be empty."""
    if not isinstance(text, str) or not text.strip():
        raise TypeSetError("an empty type set. Fix: name types or groups, e.g. \"int\" or \"u32,f32\"")
    found: set[DataType] = set()
    for part in text.split(","):
        name = part.strip()
        if name in GROUPS:
            found.update(t for t in GROUPS[name] if within is None or t in within)
        elif name in _BY_NAME:
            if within is not None and _BY_NAME[name] not in within:
                raise TypeSetError(f"{name} is not allowed here (only {describe_types(within)}). "
                                   f"Fix: name types among those")
            found.add(_BY_NAME[name])
        else:
            raise TypeSetError(f"unknown type or group {name!r}. Fix: use value types ({', '.join(_BY_NAME)}) "
                               f"or groups ({', '.join(GROUPS)})")
    if not found:
        raise TypeSetError(f"{text!r} names none of the allowed types ({describe_types(within or ())}). "
                           f"Fix: name types among those")
    return tuple(sorted(found, key=_ORDER.__getitem__))


def describe_types(types: Sequence[DataType]) -> str:
    """The shortest spelling of a set of types: group names where a whole group is present."""
    rest = set(types)
    parts = []
    for name, members in sorted(GROUPS.items(), key=lambda kv: -len(kv[1])):
        if set(members) <= rest and len(members) > 1:
            parts.append(name)
            rest -= set(members)
    parts += [t.value for t in sorted(rest, key=_ORDER.__getitem__)]
    return ",".join(parts)


@dataclass(frozen=True)
class KeyedTable:
    """The outcome of resolving a type-keyed table: a value per binding, and problems found."""

    values: dict[tuple[DataType, ...], tuple[Any, str]]  # binding -> (value, field path of the value)
    errors: list[tuple[str, str, str]]  # (field path, message, fix)


def resolve_keyed(
    node: Any,
    type_vars: Sequence[tuple[str, tuple[DataType, ...]]],
    field: str,
    is_leaf: Any,
) -> KeyedTable:
    """Resolve the type-keyed table ``node`` for every binding of ``type_vars``.

    ``is_leaf(value)`` says whether a value is a final value (a template string, a list of KAT
    rows ...) rather than a table keyed by the next type variable. For each binding, of the
    values whose keys contain it, the one with the smallest key sets wins (compared variable by
    variable, the first one first); a value above the last level stands for every type below.
    """
    out = KeyedTable({}, [])
    leaves: list[tuple[list[tuple[DataType, ...]], Any, str]] = []
    _flatten(node, list(type_vars), [], field, is_leaf, leaves, out)
    for binding in itertools.product(*(allowed for _, allowed in type_vars)):
        ranked = []
        for keys, value, fld in leaves:
            if all(t in k for t, k in zip(binding, keys)):
                sizes = tuple(len(keys[i]) if i < len(keys) else len(type_vars[i][1]) for i in range(len(type_vars)))
                ranked.append((sizes, fld, value))
        if not ranked:
            continue
        ranked.sort(key=lambda r: r[0])
        if len(ranked) > 1 and ranked[0][0] == ranked[1][0]:
            shown = ", ".join(f"{v}={t}" for (v, _), t in zip(type_vars, binding))
            out.errors.append((field, f"{shown} is matched by both {ranked[0][1]} and {ranked[1][1]}",
                               "make the keys disjoint, or one of them more specific"))
            continue
        out.values[binding] = (ranked[0][2], ranked[0][1])
    return out


def _flatten(node: Any, vars_: list[tuple[str, tuple[DataType, ...]]], keys: list[tuple[DataType, ...]],
             field: str, is_leaf: Any, leaves: list[tuple[list[tuple[DataType, ...]], Any, str]],
             out: KeyedTable) -> None:
    depth = len(keys)
    if is_leaf(node):
        leaves.append((keys, node, field))
        return
    if depth == len(vars_) or not isinstance(node, dict):
        what = "a value, not a table" if depth == len(vars_) else f"a value or a table keyed by types of {vars_[depth][0]}"
        out.errors.append((field, f"expected {what}", "check the nesting: one table level per type variable"))
        return
    var, allowed = vars_[depth]
    for key, sub in node.items():
        try:
            types = parse_type_set(key, allowed)
        except TypeSetError as exc:
            msg, fix = message_and_fix(exc)
            out.errors.append((f"{field}.{key}", f"{msg} (keys here name types of {var})", fix))
            continue
        _flatten(sub, vars_, keys + [types], f"{field}.{key}", is_leaf, leaves, out)
