"""The steps of a routine: kernels named, buffers bound, grids and repeat counts parsed, at load.

The schema (``schema.py``) has already checked each step's keys and their kinds; this checks what
the values mean: the kernel exists (of the file, or ``family.kernel`` of an accepted file), the
arguments name the routine's buffers, as many as the kernel's non-workgroup buffers, the grid and
repeat count parse as sizes (a constant one within the limits of ``limits.py``), the step's type
variables and ``with`` values are well formed, and every parameter of the kernel has a value.
Problems go through ``report(code, field, message, fix)``.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Final, Mapping

from ..ir.types import DataType
from .limits import MAX_GRID, MAX_LAUNCHES
from .model import KernelDef, RepeatDef, StepDef
from .sizes import SizeError, SizeExpr, parse_size

__all__ = ["StepReader", "MAX_STEPS", "TYPE_VAR", "PARAM_NAME"]

Report = Callable[[str, str, str, str], None]
MAX_STEPS: Final = 64  # declared steps per routine (a repeat counts its steps once)
TYPE_VAR: Final = re.compile(r"[A-Z][A-Z0-9]*\Z")
PARAM_NAME: Final = re.compile(r"[a-z_][a-z0-9_]*\Z")
_TYPES: Final = frozenset(t.value for t in DataType)


class StepReader:
    """Reads a routine's ``steps`` (and nested ``{ repeat, steps }`` groups) into StepDefs."""

    def __init__(self, kernels: Mapping[str, KernelDef], params: Mapping[str, str], names: frozenset[str],
                 attrs: frozenset[str], type_vars: frozenset[str], report: Report) -> None:
        self.kernels, self.params, self.names, self.attrs, self.type_vars = kernels, params, names, attrs, type_vars
        self.report, self.ok, self.count = report, True, 0

    def fail(self, code: str, fld: str, message: str, fix: str) -> None:
        self.report(code, fld, message, fix)
        self.ok = False

    def size(self, text: str, fld: str, what: str, fix: str) -> SizeExpr | None:
        try:
            expr = parse_size(text, self.names, self.attrs, self.type_vars)
            value = expr.constant()
        except SizeError as exc:
            self.fail("U009", fld, f"{what}: {exc}", fix)
            return None
        bound = MAX_GRID if what == "grid" else MAX_LAUNCHES
        if value is not None and value > bound:
            self.fail("U009", fld, f"{what} = {value} is over the limit of {bound:,}", fix)
            return None
        return expr

    def steps(self, raw: list[Any], where: str) -> tuple[StepDef | RepeatDef, ...]:
        out: list[StepDef | RepeatDef] = []
        for i, s in enumerate(raw):
            fld = f"{where}[{i}]"
            self.count += 1
            if self.count > MAX_STEPS:
                self.fail("U010", fld, f"more than {MAX_STEPS} steps", "use { repeat, steps } for passes")
                break
            if "repeat" in s:
                count = self.size(s["repeat"], f"{fld}.repeat", "repeat", 'write repeat = "bits(K) // 4"')
                inner = self.steps(s["steps"], f"{fld}.steps")
                if count is not None:
                    out.append(RepeatDef(count, inner, fld))
                continue
            step = self.step(s, fld)
            if step is not None:
                out.append(step)
        return tuple(out)

    def step(self, s: Mapping[str, Any], fld: str) -> StepDef | None:
        kernel = self.kernels.get(s["kernel"])
        if kernel is None:
            self.fail("U010", f"{fld}.kernel", f"unknown kernel {s['kernel']!r}",
                      f"define [kernel.{s['kernel']}] or use one of {', '.join(sorted(self.kernels)) or 'none'}")
            return None
        own = s.get("with", {})
        bad = [k for k in own if k not in kernel.params]
        if bad:
            self.fail("U007", f"{fld}.with.{bad[0]}", f"kernel {s['kernel']} has no parameter {bad[0]!r}",
                      f"use its parameters: {', '.join(kernel.params) or 'none'}")
            return None
        missing = [p for p in kernel.params if p not in self.params and p not in own]
        if missing:
            self.fail("U007", f"{fld}.with", f"kernel {s['kernel']} needs with.{missing[0]}",
                      f"give with = {{ {missing[0]} = ... }} in the routine or the step")
        args = s["args"]
        unknown = [a for a in args if a not in self.names]
        if unknown:
            self.fail("U010", f"{fld}.args", f"{unknown[0]!r} is no buffer of the routine",
                      f"use the routine's buffers: {', '.join(sorted(self.names))}")
            return None
        grid = self.size(s["grid"], f"{fld}.grid", "grid", 'write grid = "ceil_div(len(x), 256)"')
        types = s.get("types", {})
        wrong = [k for k, v in types.items() if not TYPE_VAR.match(k) or (v not in _TYPES and v not in self.type_vars)]
        if wrong:
            self.fail("U006", f"{fld}.types.{wrong[0]}", f"{wrong[0]} = {types[wrong[0]]!r}: a step binds a kernel type "
                      "variable (upper case) to a routine type variable or a type",
                      'write types = { T = "u32" } or types = { T = "A" }')
            return None
        if grid is None:
            return None
        return StepDef(s["kernel"], tuple(args), grid, tuple(sorted(types.items())), tuple(sorted(own.items())), fld)
