"""Known-answer tests of an op file: one group's rows (inputs, then the expected result), attributes
and note, checked and encoded in the types of a binding. Problems are reported, never raised."""

from __future__ import annotations

from typing import Any, Callable, Mapping

from ..ir.diagnostics import message_and_fix
from ..ir.scalars import ScalarError, encode
from ..ir.signature import Binding, OpSignature
from .model import Kat

__all__ = ["kat_group", "Report"]

Report = Callable[[str, "str | None", str, str], None]  # err(code, field, message, fix)


def kat_group(sig: OpSignature, type_vars: tuple[str, ...], b: Binding, group: Mapping[str, Any], fld: str,
              err: Report) -> Kat | None:
    """One group of an op's known-answer tests for binding ``b`` (its rows encoded in the types of
    the binding, its attributes, its note), or None when the group is malformed; every problem is
    an R011 reported through ``err(code, field, message, fix)``."""
    unknown = set(group) - {"cases", "attrs", "note"}
    if unknown or not isinstance(group.get("cases"), list):
        err("R011", fld, f"a KAT group is {{ cases = [[...]], attrs = {{...}}, note = \"...\" }}"
            + (f"; unknown keys {sorted(unknown)}" if unknown else ""), "write rows as [inputs..., expected]")
        return None
    attr_sigs = {a.name: a for a in sig.attrs}
    attrs = []
    given = group.get("attrs") or {}
    if not isinstance(given, dict):
        err("R011", f"{fld}.attrs", "attrs is a table of attribute values", "write attrs = { k = 3 }")
        return None
    for name, value in given.items():
        a = attr_sigs.get(name)
        if a is None:
            err("R011", f"{fld}.attrs.{name}", f"the op has no attribute {name!r}", "remove it")
            continue
        try:
            attrs.append((name, encode(a.dtype, value)))
        except ScalarError as exc:
            err("R011", f"{fld}.attrs.{name}", message_and_fix(exc)[0], f"give a valid {a.dtype}")
    missing = [a for a in sig.attrs if a.default is None and a.name not in given]
    if missing:
        err("R011", f"{fld}.attrs", f"attribute {missing[0].name!r} has no default and is not given",
            f"add attrs = {{ {missing[0].name} = ... }}")
    m = dict(zip(type_vars, b))
    types = [sig.resolve(p.type, m) for p in sig.inputs] + [sig.resolve(sig.output.type, m)]
    rows = []
    for j, row in enumerate(group["cases"]):
        if not isinstance(row, list) or len(row) != len(types):
            n = len(row) if isinstance(row, list) else "not a list"
            err("R011", f"{fld}[{j}]", f"a case has {len(types)} values (inputs then the expected result), this one has {n}",
                "write [input, ..., expected]")
            continue
        try:
            rows.append(tuple(encode(t, v) for t, v in zip(types, row)))
        except (ScalarError, OverflowError) as exc:
            err("R011", f"{fld}[{j}]", message_and_fix(exc)[0], "write values of the case's types")
    note = group.get("note") or ""
    return Kat(b, tuple(sorted(attrs)), tuple(rows), note if isinstance(note, str) else "")
