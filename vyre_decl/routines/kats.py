"""Known answers of a routine file: their shape, and every value checked against the types it must fit.

``kat = [case, ...]`` applies to every binding of the routine's type variables, ``kat.<type set>
= [...]`` to the bindings whose first type variable is in the set. A case is ``[inputs...,
outputs...]`` (exactly one array per input and per output), or ``{ in = [...], attrs = {...},
out = [...] }`` for a routine with attributes. Each array is a flat list of numbers, and each
number must be a value of its buffer's type in every binding the case applies to: ``1.5`` or
``-1`` for a ``u32`` buffer, a string, a bool for a number, or an integer a float type cannot
hold exactly is a U011 naming the case, the array and the binding. Problems are reported through
``report(code, field, message, fix)``, never raised.
"""

from __future__ import annotations

from typing import Any, Callable, Final, Mapping, Sequence

from ..ir.diagnostics import message_and_fix
from ..ir.scalars import ScalarError, encode
from ..ir.types import DataType
from ..registry.typesets import TypeSetError, parse_type_set
from .model import BufferSpec, KatCase

__all__ = ["parse_kats", "MAX_KAT_CASES"]

Report = Callable[[str, str, str, str], None]
MAX_KAT_CASES: Final = 256  # per routine
MAX_ATTR = 2**32 - 1
_CASE_FIX = "write kat = [[[1, 2, 3], [6]]] (each input array, then each output array)"


def _case(case: Any, n_in: int, n_out: int, attrs: Sequence[str], fld: str, report: Report) -> KatCase | None:
    """One case's arrays and attributes, with its shape checked (values are checked later)."""
    if isinstance(case, dict):
        unknown = set(case) - {"in", "out", "attrs"}
        given = case.get("attrs", {})
        if unknown or not isinstance(case.get("in"), list) or not isinstance(case.get("out"), list) \
                or not isinstance(given, dict):
            report("U011", fld, "a case is { in = [...], attrs = {...}, out = [...] }"
                   + (f" (unknown keys {sorted(unknown)})" if unknown else ""), _CASE_FIX)
            return None
        ins, outs = case["in"], case["out"]
    elif isinstance(case, list):
        ins, outs, given = case[:n_in], case[n_in:], {}
    else:
        report("U011", fld, "a known answer is [inputs..., outputs...] or { in = [...], attrs = {...}, out = [...] }",
               _CASE_FIX)
        return None
    if len(ins) != n_in or len(outs) != n_out:
        report("U011", fld, f"a case has {n_in} input array(s) and {n_out} output array(s); this one has "
               f"{len(ins)} and {len(outs)}", _CASE_FIX)
        return None
    if set(given) != set(attrs):
        report("U011", f"{fld}.attrs", f"a case gives the attributes {sorted(attrs)}, this one {sorted(given)}",
               "give every attribute of the routine, and no other")
        return None
    for name, value in given.items():
        if type(value) is not int or not 0 <= value <= MAX_ATTR:
            report("U011", f"{fld}.attrs.{name}", f"{name} = {str(value)[:40]} is not an integer in 0 .. {MAX_ATTR}",
                   "give a non-negative integer")
            return None
    for j, arr in enumerate((*ins, *outs)):
        if not isinstance(arr, list) or not all(type(v) in (int, float) for v in arr):
            report("U011", f"{fld}[{j}]" if isinstance(case, list) else f"{fld}.{'in' if j < n_in else 'out'}",
                   "each array of a case is a flat list of numbers", "write numbers such as [1, 2, 3] or [0.5, 2.0]")
            return None
    return KatCase(None, tuple(ins), tuple(outs), dict(given))


def _fits(dtype: DataType, values: list[Any]) -> str | None:
    """Why one of ``values`` is not a value of ``dtype`` (None if all are)."""
    for v in values:
        if dtype.is_int:
            if type(v) is not int or not dtype.min <= v <= dtype.max:
                return f"{str(v)[:40]} is not a {dtype} (integers {dtype.min} .. {dtype.max})"
        elif dtype is DataType.BOOL:
            if v not in (0, 1) or type(v) is not int:
                return f"{str(v)[:40]} is not a bool (0 or 1)"
        else:
            try:
                encode(dtype.value_type, v)
            except ScalarError as exc:
                return message_and_fix(exc)[0]
    return None


def _check_values(case: KatCase, specs: Sequence[BufferSpec], bindings: Sequence[Mapping[str, DataType]],
                  fld: str, report: Report) -> bool:
    """Every array of ``case`` holds values of its buffer's type in each binding it applies to."""
    for binding in bindings:
        for j, (spec, values) in enumerate(zip(specs, (*case.inputs, *case.outputs))):
            dtype = binding.get(spec.dtype) or DataType(spec.dtype)
            problem = _fits(dtype, values)
            if problem is not None:
                shown = ", ".join(f"{k}={t.value}" for k, t in binding.items()) or "the routine"
                report("U011", f"{fld}[{j}]", f"{spec.name} for {shown}: {problem}",
                       "write values of the buffer's type, or key the case by a type set (kat.float = [...])")
                return False
    return True


def parse_kats(raw: Any, types: Mapping[str, tuple[DataType, ...]], bindings: Sequence[Mapping[str, DataType]],
               specs: Sequence[BufferSpec], attrs: Sequence[str], report: Report) -> tuple[KatCase, ...] | None:
    """The known answers of a routine (``specs``: its inputs, then its outputs), or None after
    reporting a problem."""
    n_in = sum(s.role == "in" for s in specs)
    n_out = len(specs) - n_in
    first = next(iter(types), None)
    groups = list(raw.items()) if isinstance(raw, dict) else [(None, raw)]
    out: list[KatCase] = []
    for key, cases in groups:
        gfld = "kat" if key is None else f"kat.{key}"
        within = None
        if key is not None:
            try:
                within = frozenset(parse_type_set(key))
            except TypeSetError as exc:
                report("U011", gfld, str(exc).partition(" Fix:")[0], "key known answers by a type set such as float or u32")
                return None
            if first is None or not within & set(types[first]):
                report("U011", gfld, f"kat.{key} applies to no binding of the routine", "key it by types the routine takes")
                return None
        if not isinstance(cases, list):
            report("U011", gfld, "known answers are a list of cases", _CASE_FIX)
            return None
        applies = [b for b in bindings if within is None or (first is not None and b[first] in within)]
        for i, raw_case in enumerate(cases):
            case = _case(raw_case, n_in, n_out, attrs, f"{gfld}[{i}]", report)
            if case is None or not _check_values(case, specs, applies, f"{gfld}[{i}]", report):
                return None
            out.append(KatCase(within, case.inputs, case.outputs, case.attrs, f"{gfld}[{i}]"))
            if len(out) > MAX_KAT_CASES:
                report("U011", gfld, f"a routine has at most {MAX_KAT_CASES} known answers", "keep the telling cases")
                return None
    return tuple(out)
