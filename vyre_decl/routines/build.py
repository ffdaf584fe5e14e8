"""Building the routines of one routine file from its checked shape: classes, types, buffers, steps, known answers.

``schema.py`` has checked every key and the kind of every value, so this reads what the values
mean, each part on its own: type sets, attributes, ``with`` values (one name each, and at load
held against where each kernel uses the parameter and against the registry: ``params.py``),
buffer declarations and their sizes, conditions, steps (``steps.py``), the conformance sample
and the known answers (``kats.py``). A routine with ``class = "NAME"`` takes the keys of
``[class.NAME]`` that it does not give itself, by the op files' rule (``registry/classes.py``: a
key it gives replaces the class's whole); ``then`` appends steps to ``steps``. Every problem is a
diagnostic naming the file, the routine and the field (and the class, when the value is the
class's); a routine with any problem is not built.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path
from typing import Any, Final, Mapping

from ..ir.diagnostics import Diagnostic
from ..ir.lexer import PARAM_VALUE_RE
from ..ir.types import DataType
from ..registry import Registry
from ..registry.classes import with_class
from ..registry.typesets import TypeSetError, parse_type_set
from .kats import parse_kats
from .model import BufferSpec, KernelDef, Role, RoutineDef
from .params import check_value
from .sizes import SizeError, SizeExpr, parse_size
from .steps import PARAM_NAME, TYPE_VAR, StepReader

__all__ = ["build_routines", "where", "MAX_BINDINGS"]

ID: Final = re.compile(r"[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+\Z")
BUFFER: Final = re.compile(r"\s*(in|out|temp|const)\s+([A-Za-z][A-Za-z0-9]*)\s*\[(.*)\]\s*\Z", re.S)
CONST_TYPES: Final = ("u32", "u64")
MAX_BINDINGS: Final = 256  # type combinations of one routine
MAX_BUFFERS: Final = 64
_TYPES: Final = frozenset(t.value for t in DataType)


def where(path: Path | str, rid: str | None = None, fld: str | None = None) -> str:
    """``file [routine id] field``, as op files say ``file [op id] field``."""
    return f"{path}" + (f" [routine {rid}]" if rid else "") + (f" {fld}" if fld else "")


def _expand(raw: list[dict[str, Any]], classes: Mapping[str, Mapping[str, Any]],
            report: Any) -> list[tuple[dict[str, Any], str | None, frozenset[str]]]:
    """Each routine with its class's keys under its own (``registry/classes.py``, the op files'
    rule), ``then`` appended to ``steps``; with its class and the keys taken from the class."""
    out = []
    for r in raw:
        rid = r.get("id")
        merged = with_class(r, classes)
        if merged is None:  # files.py rejects a file with an unknown class before it is built
            report("U021", rid, "class", f"unknown class {str(r.get('class'))[:60]!r}", "this is a loader bug worth reporting")
            continue
        fields, taken = merged
        if "then" in fields:  # steps run after the steps (the routine's or its class's)
            then = fields.pop("then")
            fields["steps"] = [*(fields.get("steps") or []), *then]
        out.append(({"id": rid, **fields}, r.get("class"), taken))
    return out


def build_routines(raw: list[dict[str, Any]], family: str, path: Path, kernels: Mapping[str, KernelDef],
                   registry: Registry, diags: list[Diagnostic],
                   classes: Mapping[str, Mapping[str, Any]] | None = None) -> list[RoutineDef]:
    """The routines of a file (``raw``: its [[routine]] tables, ``classes``: its [class.NAME]
    tables, shape checked); problems go to ``diags``. ``kernels``: the kernels a step may name
    (the file's, and ``family.kernel`` of accepted files)."""

    def report(code: str, rid: str | None, fld: str, message: str, fix: str) -> None:
        diags.append(Diagnostic(code, message, where(path, rid, fld), fix))

    ids: set[str] = set()
    out = []
    for r, cname, taken in _expand(raw, classes or {}, report):
        rid = r["id"]
        if rid in ids:
            report("U003", rid, "id", f"routine {rid!r} is defined twice in this file", "give the routine another id")
            continue
        ids.add(rid)
        built = _Builder(r, family, path, kernels, registry, report, (cname, taken)).build()
        if built is not None:
            out.append(built)
    return out


class _Builder:
    """One routine: each part read by its own method; ``ok`` turns false at the first problem."""

    def __init__(self, r: Mapping[str, Any], family: str, path: Path, kernels: Mapping[str, KernelDef],
                 registry: Registry, report: Any, origin: tuple[str | None, frozenset[str]] = (None, frozenset())) -> None:
        self.r, self.family, self.path, self.kernels, self.registry = r, family, path, kernels, registry
        self.rid: str = r["id"]
        self._report = report
        self.origin = origin  # the routine's class and the keys taken from it
        self.ok = True

    def bad(self, code: str, fld: str, message: str, fix: str) -> None:
        cname, taken = self.origin
        if re.split(r"[.\[]", fld, maxsplit=1)[0] in taken:  # a value the routine takes from its class
            message = f"{message} (given by [class.{cname}])"
        self._report(code, self.rid, fld, message, fix)
        self.ok = False

    def build(self) -> RoutineDef | None:
        r, rid = self.r, self.rid
        if not ID.match(rid) or not rid.startswith(self.family + "."):
            self.bad("U005", "id", f"bad routine id {rid!r}", f"give an id in the family, e.g. \"{self.family}.sum\"")
            return None
        types = self.types()
        attrs = self.attrs()
        params = self.params()
        specs = self.buffers(attrs, frozenset(types or ()))
        if types is None or attrs is None or params is None or specs is None:
            return None
        names, type_vars = frozenset(s.name for s in specs), frozenset(types)
        requires = self.requires(names, frozenset(attrs), type_vars)
        written = self.written(specs)
        sample = self.sample(specs, attrs)
        reader = StepReader(self.kernels, params, names, frozenset(attrs), type_vars,
                            lambda code, fld, msg, fix: self.bad(code, fld, msg, fix))
        if not r.get("steps"):
            self.bad("U010", "steps", "a routine needs steps", 'write steps = [{ kernel = "blocks", args = ["x", "out"], grid = "1" }]')
            return None
        steps = reader.steps(r["steps"], "steps")
        bindings = [dict(zip(types, combo)) for combo in itertools.product(*types.values())]
        ordered = [s for s in specs if s.role == "in"] + [s for s in specs if s.role == "out"]
        kats = parse_kats(r.get("kat", []), types, bindings, ordered, attrs,
                          lambda code, fld, msg, fix: self.bad(code, fld, msg, fix))
        if not self.ok or not reader.ok or kats is None or requires is None or sample is None:
            return None
        used = {step.kernel: self.kernels[step.kernel] for step in _walk(steps)}
        routine = RoutineDef(rid, r.get("summary", ""), r.get("doc", ""), types, params, tuple(specs), steps, kats, used,
                             str(self.path), tuple(attrs), requires, sample, frozenset(written))
        self.check_params(routine)
        return routine if self.ok else None

    def types(self) -> dict[str, tuple[DataType, ...]] | None:
        types: dict[str, tuple[DataType, ...]] = {}
        for var, text in (self.r.get("types") or {}).items():
            try:
                if not TYPE_VAR.match(var):
                    raise TypeSetError(f"{var!r} is not a type variable (upper case: T, K, V)")
                types[var] = parse_type_set(text)
            except TypeSetError as exc:
                self.bad("U006", f"types.{var}", str(exc).partition(" Fix:")[0],
                         'write types = { T = "numeric" } (groups: uint, sint, int, float, numeric, any)')
        count = 1
        for allowed in types.values():
            count *= len(allowed)
        if count > MAX_BINDINGS:
            self.bad("U006", "types", f"the type variables have {count} combinations, over {MAX_BINDINGS}",
                     "narrow the type sets or split the routine")
        return types if self.ok else None

    def attrs(self) -> list[str] | None:
        attrs = list(self.r.get("attrs") or [])
        if not all(PARAM_NAME.match(a) for a in attrs) or len(set(attrs)) != len(attrs) or len(attrs) > 16:
            self.bad("U016", "attrs", f"attrs = {attrs!r} is not a list of at most 16 distinct lower-case names",
                     'write attrs = ["bins"]')
            return None
        return attrs

    def params(self) -> dict[str, str] | None:
        params = dict(self.r.get("with") or {})
        for key, value in params.items():
            if not PARAM_NAME.match(key) or not PARAM_VALUE_RE.match(value):
                self.bad("U007", f"with.{key}", f"with.{key} = {value[:60]!r} is not one name (an op id, an element, "
                         "a type, true or false) or a whole number of up to 4 digits", 'write with = { combine = "primitive.math.add", identity = "zero" }')
                return None
        return params

    def buffers(self, attrs: list[str] | None, type_vars: frozenset[str]) -> list[BufferSpec] | None:
        raw = self.r.get("buffers")
        if not raw or len(raw) > MAX_BUFFERS:
            self.bad("U008", "buffers", f"buffers must be a table of 1 to {MAX_BUFFERS} buffers",
                     'write buffers = { x = "in T[]", out = "out T[1]" }')
            return None
        names, attr_names = frozenset(raw), frozenset(attrs or ())
        if names & attr_names:
            self.bad("U016", "buffers", f"{sorted(names & attr_names)[0]!r} is both a buffer and an attribute", "rename one")
        specs = [s for name, text in raw.items() if (s := self.buffer(name, text, names, attr_names, type_vars))]
        if self.ok and not any(s.role == "out" for s in specs):
            self.bad("U008", "buffers", "a routine needs at least one output buffer", 'add out = "out T[1]"')
        return specs if self.ok else None

    def buffer(self, name: str, text: str, names: frozenset[str], attrs: frozenset[str],
               type_vars: frozenset[str]) -> BufferSpec | None:
        fld = f"buffers.{name}"
        m = BUFFER.match(text)
        if not PARAM_NAME.match(name) or m is None:
            self.bad("U008", fld, f"{fld} = {text[:60]!r} is not \"in T[]\", \"out T[size]\", \"temp T[size]\" or "
                     "\"const u32[e1, ...]\"", 'write x = "in T[]" or out = "out T[len(x)]"')
            return None
        role, dtype, size_text = m.group(1), m.group(2), m.group(3).strip()
        if dtype not in type_vars and dtype not in _TYPES:
            self.bad("U008", fld, f"unknown type {dtype}", f"use a type variable ({', '.join(sorted(type_vars)) or 'none'}) or a type")
            return None
        if role == "in":
            if size_text:
                self.bad("U008", fld, "an input is sized by the caller's array", f'write {name} = "in {dtype}[]"')
                return None
            return BufferSpec(name, "in", dtype, None)
        try:
            if role == "const":
                if dtype not in CONST_TYPES:
                    raise SizeError(f"a constant holds {' or '.join(CONST_TYPES)} values, not {dtype}")
                parts = _split_args(size_text)
                if len(parts) > MAX_BUFFERS:
                    raise SizeError(f"a constant holds at most {MAX_BUFFERS} values")
                values = tuple(parse_size(v.strip(), names, attrs, type_vars) for v in parts)
                return BufferSpec(name, "const", dtype, parse_size(str(len(values)), names, attrs), values)
            size = parse_size(size_text, names, attrs, type_vars)
        except SizeError as exc:
            self.bad("U009", fld, str(exc), "write a size such as len(x), 1 or ceil_div(len(x), 256)")
            return None
        role_t: Role = "out" if role == "out" else "temp"
        return BufferSpec(name, role_t, dtype, size)

    def requires(self, names: frozenset[str], attrs: frozenset[str], type_vars: frozenset[str]) -> tuple[SizeExpr, ...] | None:
        out = []
        for i, text in enumerate(self.r.get("require") or []):
            try:
                out.append(parse_size(text, names, attrs, type_vars, condition=True))
            except SizeError as exc:
                self.bad("U009", f"require[{i}]", str(exc), 'write require = ["len(x) == rows * cols"]')
        return tuple(out) if self.ok else None

    def written(self, specs: list[BufferSpec]) -> list[str]:
        written = list(self.r.get("written") or [])
        sized = {b.name for b in specs if b.role in ("out", "temp")}
        if not set(written) <= sized:
            self.bad("U008", "written", f"written = {written!r} must list outputs and temporaries ({', '.join(sorted(sized))})",
                     'write written = ["partial", "out"] (buffers the steps fill before reading them)')
        return written

    def sample(self, specs: list[BufferSpec], attrs: list[str]) -> dict[str, SizeExpr] | None:
        """``sample``: how conformance sizes the inputs (default N elements each) and sets every
        attribute, as size expressions of the unit's size N."""
        raw = dict(self.r.get("sample") or {})
        inputs = [b.name for b in specs if b.role == "in"]
        unknown = sorted(set(raw) - set(inputs) - set(attrs))
        if unknown:
            self.bad("U018", f"sample.{unknown[0]}", f"sample keys are inputs ({', '.join(inputs)}) or attributes "
                     f"({', '.join(attrs) or 'none'})", 'write sample = { rows = "N // 7 + 1", x = "(N // 7 + 1) * 7" }')
            return None
        missing = [a for a in attrs if a not in raw]
        if missing:
            self.bad("U018", "sample", f"sample gives no value for the attribute {missing[0]}",
                     f'add sample = {{ {missing[0]} = "<size expression of N>" }} (conformance needs it)')
            return None
        out = {}
        for key, text in raw.items():
            try:
                out[key] = parse_size(text, frozenset(), frozenset({"N"}))
            except SizeError as exc:
                self.bad("U018", f"sample.{key}", str(exc), 'write an expression of N such as "N // 7 * 7"')
                return None
        return out

    def check_params(self, routine: RoutineDef) -> None:
        """Every parameter value held against where its kernel uses it and against the registry;
        a ``with`` key that none of the routine's kernels takes is an error too."""
        taken: set[str] = set()
        for step in routine.all_steps():
            kernel = routine.kernels[step.kernel]
            uses = dict(kernel.uses)
            overrides = dict(step.params)
            taken.update(kernel.params)
            for name in kernel.params:
                value = overrides.get(name, routine.params.get(name))
                problem = check_value(value, uses.get(name, frozenset()), self.registry) if value else None
                if problem is not None:
                    fld = f"{step.where}.with.{name}" if name in overrides else f"with.{name}"
                    self.bad("U007", fld, f"{fld} = {value!r} for kernel {kernel.qualified}: {problem[0]}", problem[1])
                    return
        stray = sorted(set(routine.params) - taken)
        if stray:
            self.bad("U007", f"with.{stray[0]}", f"no kernel of the routine's steps has the parameter {stray[0]!r}",
                     f"remove it, or use a parameter of the kernels: {', '.join(sorted(taken)) or 'none'}")


def _walk(steps: Any) -> list[Any]:
    out, stack = [], list(reversed(steps))
    while stack:
        s = stack.pop()
        if hasattr(s, "count"):
            stack.extend(reversed(s.steps))
        else:
            out.append(s)
    return out


def _split_args(text: str) -> list[str]:
    """``a, min(b, c)`` -> ``["a", "min(b, c)"]``: commas outside parentheses."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        depth += (ch == "(") - (ch == ")")
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    return parts + [cur] if cur.strip() or parts else []
