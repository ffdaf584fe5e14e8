"""Reading op files: discovery, parsing, schema and structural checks, cross-file resolution.

A file is accepted whole or rejected whole: any error in it means none of its ops is
registered. Diagnostics name the file, the op id and the field, and end with a Fix.

Codes:
R001 TOML syntax / not UTF-8          R002 schema violation (unknown/missing key, wrong type)
R003 bad dialect or op id             R004 op id declared twice in one file
R005 op id or dialect version twice   R006 bad signature (types, type variables, ports)
R007 bad template placeholder         R008 missing/misplaced PTX template
R009 compose does not parse           R010 compose does not type-check
R011 bad known-answer test            R012 unknown ufunc/kernel or bad reference entry
R013 a binding has no reference       R014 law does not fit the op
R015 file larger than 1 MiB           R016 unreadable file or op directory
R017 bad semantic version             R018 note: dialect shadowed by a higher version
R019 bad tolerance_ulp                R020 category requirements unmet
R021 bad attribute                    R022 bad atomic op shape
R023 compose cycle
"""

from __future__ import annotations

import hashlib
import itertools
import os
import re
import string
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Iterable, Mapping, Sequence

from ..ir.diagnostics import Diagnostic
from ..ir.nodes import Atomic, BufLen, Expr, Id, Load, Op
from ..ir.scalars import ScalarError, encode
from ..ir.signature import AttrSig, OpSignature, Param, SignatureError
from ..ir.text import ParseError, parse_expr
from ..ir.types import VALUE_TYPES, DataType
from ..ir.validate import ExprFault, infer_type, is_identifier
from ..ir.walk import subexprs
from .model import ATOMIC_PLACEHOLDERS, DialectInfo, Kat, LawDef, OpDef, RefDef, Template
from .registry import Registry
from .semantics import KERNEL_KINDS, KERNELS, UFUNC_KINDS, UFUNCS

__all__ = ["load", "load_file", "standard_ops_dir", "env_ops_dirs", "MAX_FILE_BYTES", "ENV_VAR"]

MAX_FILE_BYTES: Final = 1 << 20
ENV_VAR: Final = "VYRE_DECL_OPS_PATH"
_ID_RE: Final = re.compile(r"[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)*\Z")
_SEMVER_RE: Final = re.compile(r"(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?\Z")
_VALUE_TYPE_NAMES: Final = {t.value: t for t in VALUE_TYPES}
_ATOMIC_TYPES: Final = (DataType.U32, DataType.I32, DataType.U64, DataType.I64)
_BINARY_LAWS: Final = {"commutative", "associative", "identity", "left_identity", "right_identity",
                       "absorbing", "left_absorbing", "right_absorbing", "self_inverse", "distributive"}
_ELEMENT_LAWS: Final = {"identity", "left_identity", "right_identity", "absorbing", "left_absorbing",
                        "right_absorbing", "self_inverse"}


def standard_ops_dir() -> Path:
    """The directory of the standard op files: inside the installed package (``_ops``) or, in a
    source checkout / editable install, ``ops/`` at the repository root."""
    pkg = Path(__file__).resolve().parent.parent
    for candidate in (pkg / "_ops", pkg.parent / "ops"):
        if candidate.is_dir():
            return candidate
    return pkg / "_ops"


def semver_key(version: str) -> tuple[Any, ...] | None:
    """Sort key of a semantic version (pre-releases sort before their release); None if invalid."""
    m = _SEMVER_RE.match(version)
    if not m:
        return None
    major, minor, patch, pre = m.groups()
    if pre is None:
        return (int(major), int(minor), int(patch), 1, ())
    ids = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in pre.split("."))
    return (int(major), int(minor), int(patch), 0, ids)


def _loc(path: Path, op: str | None = None, fld: str | None = None) -> str:
    text = str(path)
    if op:
        text += f" [op {op}]"
    if fld:
        text += f" {fld}"
    return text


# ============================================================================ one file


@dataclass
class _FileResult:
    path: Path
    digest: bytes = b""
    dialect: DialectInfo | None = None
    ops: dict[str, OpDef] = field(default_factory=dict)
    declared: list[str] = field(default_factory=list)
    diags: list[Diagnostic] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not any(d.severity == "error" for d in self.diags)


class _OpBuilder:
    """Checks one op spec and builds its OpDef; collects diagnostics instead of raising."""

    def __init__(self, spec: Any, dialect: str, path: Path, diags: list[Diagnostic]) -> None:
        self.spec, self.dialect, self.path, self.diags = spec, dialect, path, diags
        self.start = len(diags)

    def err(self, code: str, fld: str | None, message: str, fix: str) -> None:
        self.diags.append(Diagnostic(code, message, _loc(self.path, self.spec.id, fld), fix))

    @property
    def failed(self) -> bool:
        return len(self.diags) > self.start

    def value_type(self, name: str, fld: str, code: str = "R006", allow_vars: bool = True) -> str | None:
        if name in _VALUE_TYPE_NAMES or (allow_vars and name in self.type_vars):
            return name
        valid = ", ".join(_VALUE_TYPE_NAMES)
        vars_ = f" or a type variable ({', '.join(self.type_vars)})" if allow_vars and self.type_vars else ""
        self.err(code, fld, f"unknown type {name!r}", f"use one of {valid}{vars_}")
        return None

    def build(self) -> OpDef | None:
        s = self.spec
        if not _ID_RE.match(s.id) or not s.id.startswith(self.dialect + "."):
            self.err("R003", "id", f"op id {s.id!r} must be lowercase dotted and start with {self.dialect + '.'!r}",
                     f"rename it to {self.dialect}.<name>")
        self.type_vars: dict[str, tuple[DataType, ...]] = {}
        for var, types in s.type_vars.items():
            if not is_identifier(var) or var in _VALUE_TYPE_NAMES:
                self.err("R006", f"type_vars.{var}", f"bad type variable name {var!r}", "use a name such as T or S")
                continue
            resolved = [self.value_type(t, f"type_vars.{var}", allow_vars=False) for t in types]
            if not types or len(set(types)) != len(types):
                self.err("R006", f"type_vars.{var}", "a type variable needs a non-empty list of distinct types",
                         "list each allowed type once")
            self.type_vars[var] = tuple(DataType(t) for t in resolved if t)
        sig = self.signature()
        temps = self.temps()
        if self.failed or sig is None:
            return None
        self.sig = sig
        bindings = list(itertools.product(*self.type_vars.values()))
        self.bindings = bindings
        templates = self.templates(temps)
        references = self.references()
        compose, compose_text = self.compose()
        if s.category == "composite" and s.compose is None:
            self.err("R020", "compose", "a composite op is defined by its compose expression, and it has none",
                     "add compose = \"<expression over the inputs>\" or make the op intrinsic")
        if s.category == "intrinsic":
            missing = [b for b in bindings if b not in templates]
            if missing:
                self.err("R008", "ptx", f"no PTX template for {', '.join(self.describe(b) for b in missing)}",
                         "add a template for every type the op declares")
        if references and s.compose is not None:
            self.err("R012", "reference", "the op has both a reference and a compose expression, which could disagree",
                     "keep one: compose defines composite ops; reference (ufunc/kernel) defines intrinsics")
        for b in bindings:
            m = dict(zip(self.type_vars, b))
            ref = next((r for r in references if r.applies(m)), None)
            if s.compose is None and ref is None:
                self.err("R013", "reference", f"no reference semantics for {self.describe(b)}",
                         "add a reference entry (ufunc/kernel) covering it, or a compose expression")
            elif ref is not None:
                name, kinds = (ref.ufunc, UFUNC_KINDS.get(ref.ufunc or "")) if ref.ufunc else (
                    ref.kernel, KERNEL_KINDS.get(ref.kernel or ""))
                arg_kinds = {self.sig.resolve(p.type, m).kind for p in self.sig.inputs}
                if kinds is not None and not arg_kinds <= kinds:
                    self.err("R012", "reference", f"{name} does not implement the semantics for {self.describe(b)} "
                             f"(it covers {', '.join(sorted(kinds))} operands)",
                             "restrict the entry with when = {...} and give those types another reference")
        laws = self.laws()
        tolerance = self.tolerance()
        kats = self.kats()
        if self.failed:
            return None
        return OpDef(
            id=s.id,
            dialect=self.dialect,
            summary=s.summary,
            category=s.category,
            signature=sig,
            laws=laws,
            references=references,
            compose=compose,
            compose_text=compose_text,
            templates=templates,
            tolerance_ulp=tolerance,
            kats=kats,
            source=self.path,
            doc=s.doc,
        )

    def describe(self, binding: tuple[DataType, ...]) -> str:
        if not binding:
            return "the op"
        return ", ".join(f"{v}={t}" for v, t in zip(self.type_vars, binding))

    def signature(self) -> OpSignature | None:
        s = self.spec
        names: set[str] = set()
        reserved = set(ATOMIC_PLACEHOLDERS) if any(p.memory for p in s.inputs) else set()

        def name_ok(name: str, fld: str) -> None:
            if not is_identifier(name):
                self.err("R006", fld, f"bad name {name!r}", "use an identifier that is not a keyword")
            elif name in names:
                self.err("R006", fld, f"name {name!r} is used twice", "give inputs, outputs, attrs and temps distinct names")
            elif name in reserved:
                self.err("R022", fld, f"{name!r} is reserved in atomic op templates", "rename it")
            names.add(name)

        inputs = []
        for i, p in enumerate(s.inputs):
            name_ok(p.name, f"inputs[{i}].name")
            self.value_type(p.type, f"inputs[{i}].type")
            if p.memory and i != 0:
                self.err("R022", f"inputs[{i}].memory", "only the first input can be the memory operand",
                         "move the memory operand first")
            inputs.append(Param(p.name, p.type, p.memory))
        if len(s.outputs) != 1:
            self.err("R006", "outputs", f"an op has exactly one output, this one declares {len(s.outputs)}",
                     "declare one output (split the op if it computes several values)")
            return None
        out = s.outputs[0]
        name_ok(out.name, "outputs[0].name")
        self.value_type(out.type, "outputs[0].type")
        if out.memory:
            self.err("R022", "outputs[0].memory", "outputs cannot be memory operands", "remove memory = true")
        used = {p.type for p in s.inputs} | {out.type}
        for var in self.type_vars:
            if var not in used:
                self.err("R006", f"type_vars.{var}", f"type variable {var} is not used by any input or output",
                         "remove it or use it in the signature")
        if inputs and inputs[0].memory:
            mem = inputs[0]
            if out.type != mem.type:
                self.err("R022", "outputs[0].type", "an atomic op's output (the new memory value) must have the memory "
                         "operand's type", f"declare the output as {mem.type}")
            allowed = self.type_vars.get(mem.type, (DataType(mem.type),) if mem.type in _VALUE_TYPE_NAMES else ())
            bad = [t.value for t in allowed if t not in _ATOMIC_TYPES]
            if bad:
                self.err("R022", "inputs[0].type", f"atomics work on u32, i32, u64 and i64 words, not {', '.join(bad)}",
                         "restrict the memory operand's types")
            if len(inputs) < 2:
                self.err("R022", "inputs", "an atomic op needs an operand besides the memory operand",
                         "add the value input")
        attrs = []
        for i, a in enumerate(s.attrs):
            name_ok(a.name, f"attrs[{i}].name")
            if self.value_type(a.type, f"attrs[{i}].type", code="R021", allow_vars=False) is None:
                continue
            default = None
            if a.default is not None:
                try:
                    default = encode(DataType(a.type), a.default)
                except ScalarError as exc:
                    self.err("R021", f"attrs[{i}].default", str(exc).split(". Fix:")[0],
                             f"give a default that is a valid {a.type}")
            attrs.append(AttrSig(a.name, DataType(a.type), default))
        for name in s.temps:
            name_ok(name, f"temps.{name}")
        self.port_names = names
        return OpSignature(s.id, tuple(inputs), Param(out.name, out.type), tuple(self.type_vars.items()), tuple(attrs))

    def temps(self) -> dict[str, str]:
        temps = {}
        for name, t in self.spec.temps.items():
            if self.value_type(t, f"temps.{name}", code="R007"):
                temps[name] = t
        return temps

    # --- templates
    def templates(self, temps: dict[str, str]) -> dict[tuple[DataType, ...], Template]:
        s = self.spec
        if s.ptx is None:
            return {}
        flat: dict[tuple[DataType, ...], tuple[str, str]] = {}
        self.flatten(s.ptx, list(self.type_vars.items()), (), "ptx", flat)
        allowed = set(self.port_names)
        if self.sig.is_atomic:  # memory operand and new value are not registers; the old value is
            allowed = (allowed - {self.sig.inputs[0].name, s.outputs[0].name}) | set(ATOMIC_PLACEHOLDERS)
        result = {}
        for binding, (text, fld) in flat.items():
            try:
                fields = [f for _, f, spec, conv in string.Formatter().parse(text) if f is not None or spec or conv]
            except ValueError as exc:
                self.err("R007", fld, f"template does not parse ({exc})", "balance the braces; write {{ and }} for literal braces")
                continue
            for name in fields:
                if name not in allowed:
                    self.err("R007", fld, f"placeholder {{{name}}} names no input, output, attr or temp",
                             f"use one of {', '.join('{' + n + '}' for n in sorted(allowed))} or declare it in temps")
            result_name = "old" if self.sig.is_atomic else s.outputs[0].name
            if result_name not in fields:
                self.err("R007", fld, f"the template never writes its result {{{result_name}}}",
                         f"write the result to {{{result_name}}}")
            m = dict(zip(self.type_vars, binding))
            resolved = tuple((n, m[t] if t in m else DataType(t)) for n, t in temps.items())
            result[binding] = Template(text, resolved)
        return result

    def flatten(self, node: Any, vars_: list, prefix: tuple, fld: str, out: dict) -> None:
        if not vars_:
            if isinstance(node, str):
                out[prefix] = (node, fld)
            else:
                self.err("R008", fld, "expected a template string here", "nest templates one table level per type variable")
            return
        var, allowed = vars_[0]
        if not isinstance(node, dict):
            self.err("R008", fld, f"expected a table keyed by the type of {var}",
                     f"write {fld}.<type> = \"...\" for each type of {var}")
            return
        for key, sub in node.items():
            t = _VALUE_TYPE_NAMES.get(key)
            if t is None or t not in allowed:
                self.err("R008", f"{fld}.{key}", f"{key!r} is not a type {var} allows",
                         f"key templates by {', '.join(a.value for a in allowed)}")
                continue
            self.flatten(sub, vars_[1:], prefix + (t,), f"{fld}.{key}", out)

    # --- references, compose, laws, tolerance, kats
    def when(self, when: dict[str, list[str]] | None, fld: str) -> dict[str, tuple[DataType, ...]] | None:
        if when is None:
            return None
        result = {}
        for var, types in when.items():
            if var not in self.type_vars:
                self.err("R006", f"{fld}.when", f"{var!r} is not a type variable of the op",
                         f"use one of {', '.join(self.type_vars) or '(none: remove when)'}")
                continue
            chosen = []
            for t in types:
                dt = _VALUE_TYPE_NAMES.get(t)
                if dt is None or dt not in self.type_vars[var]:
                    self.err("R006", f"{fld}.when", f"{t!r} is not a type {var} allows",
                             f"use types among {', '.join(a.value for a in self.type_vars[var])}")
                else:
                    chosen.append(dt)
            result[var] = tuple(chosen)
        return result

    def references(self) -> tuple[RefDef, ...]:
        ref = self.spec.reference
        entries = [] if ref is None else ref if isinstance(ref, list) else [ref]
        refs = []
        for i, r in enumerate(entries):
            fld = f"reference[{i}]" if isinstance(ref, list) else "reference"
            if (r.ufunc is None) == (r.kernel is None):
                self.err("R012", fld, "a reference entry names exactly one of ufunc or kernel",
                         'write { ufunc = "add" } or { kernel = "int_div" }')
                continue
            if r.ufunc is not None and r.ufunc not in UFUNCS:
                self.err("R012", f"{fld}.ufunc", f"{r.ufunc!r} is not a whitelisted numpy ufunc",
                         f"use one of {', '.join(sorted(UFUNCS))}, or a kernel")
            if r.kernel is not None and r.kernel not in KERNELS:
                self.err("R012", f"{fld}.kernel", f"no built-in reference kernel {r.kernel!r}",
                         f"use one of {', '.join(sorted(KERNELS))}, or define the op with compose")
            refs.append(RefDef(r.ufunc, r.kernel, self.when(r.when, fld)))
        return tuple(refs)

    def compose(self) -> tuple[Expr | None, str | None]:
        text = self.spec.compose
        if text is None:
            return None, None
        try:
            expr = parse_expr(text, filename=_loc(self.path, self.spec.id, "compose"))
        except ParseError as exc:
            d = exc.diagnostics[0]
            self.err("R009", "compose", f"compose does not parse at {d.location.rpartition(' ')[2]}: {d.message}", d.fix)
            return None, None
        bad = _impure(expr)
        if bad:
            self.err("R010", "compose", f"compose may only combine its inputs and attributes with ops, found {bad}",
                     "remove buffer accesses, ids and atomics from compose")
            return None, None
        return expr, text

    def laws(self) -> tuple[LawDef, ...]:
        sig, laws = self.sig, []
        ins = [p.type for p in sig.inputs]
        out = sig.output.type
        for i, law in enumerate(self.spec.laws):
            fld = f"laws[{i}]"
            kind = law.law
            when = self.when(law.when, fld)
            binary_same = len(ins) == 2 and ins[0] == ins[1]
            ok = True
            if kind in _BINARY_LAWS and not binary_same:
                ok = False
                self.err("R014", fld, f"{kind} needs two inputs of one type", "remove the law")
            elif kind in ("associative", "identity", "left_identity", "right_identity", "absorbing",
                          "left_absorbing", "right_absorbing", "distributive") and ins[0] != out:
                ok = False
                self.err("R014", fld, f"{kind} needs the output to have the inputs' type", "remove the law")
            elif kind == "involution" and not (len(ins) == 1 and ins[0] == out):
                ok = False
                self.err("R014", fld, "involution needs one input of the output's type", "remove the law")
            elif kind == "idempotent" and not ((len(ins) == 1 and ins[0] == out) or (binary_same and ins[0] == out)):
                ok = False
                self.err("R014", fld, "idempotent needs f(x) or f(x, x) with the output's type", "remove the law")
            if kind in _ELEMENT_LAWS:
                if law.element is None:
                    ok = False
                    self.err("R014", f"{fld}.element", f"{kind} needs an element", "add element = <value>")
                else:
                    for b in self.bindings:
                        m = dict(zip(self.type_vars, b))
                        if when is not None and not all(m[v] in a for v, a in when.items()):
                            continue
                        t = sig.resolve(out, m)
                        try:
                            encode(t, law.element)
                        except ScalarError as exc:
                            ok = False
                            self.err("R014", f"{fld}.element", f"element {law.element!r} is not a {t}: "
                                     f"{str(exc).split('. Fix:')[0]}", "restrict the law with when = {...} or fix the element")
            elif law.element is not None:
                self.err("R014", f"{fld}.element", f"{kind} takes no element", "remove element")
            if (kind == "distributive") != (law.over is not None):
                ok = False
                self.err("R014", f"{fld}.over", "distributive (and only it) names the op it distributes over",
                         'write over = "<op id>" on distributive laws only')
            if ok:
                laws.append(LawDef(kind, law.element, law.over, when))
        return tuple(laws)

    def tolerance(self) -> dict[DataType, int]:
        out_types = {self.sig.resolve(self.sig.output.type, dict(zip(self.type_vars, b))) for b in self.bindings}
        result = {}
        for key, ulp in self.spec.tolerance_ulp.items():
            t = _VALUE_TYPE_NAMES.get(key)
            if t is None or not t.is_float or t not in out_types:
                self.err("R019", f"tolerance_ulp.{key}", f"{key!r} is not a float type this op produces",
                         "key tolerances by the op's float output types")
            elif ulp < 0:
                self.err("R019", f"tolerance_ulp.{key}", "a ULP budget cannot be negative", "use 0 for exact ops")
            else:
                result[t] = ulp
        return result

    def kats(self) -> tuple[Kat, ...]:
        sig, kats = self.sig, []
        for i, k in enumerate(self.spec.kat):
            fld = f"kat[{i}]"
            if set(k.types) != set(self.type_vars):
                self.err("R011", f"{fld}.types", f"a KAT must bind exactly the type variables "
                         f"({', '.join(self.type_vars) or 'none'}), it binds {', '.join(k.types) or 'none'}",
                         "write types = { T = \"u32\" } with every type variable")
                continue
            m = {}
            for var, t in k.types.items():
                dt = _VALUE_TYPE_NAMES.get(t)
                if dt is None or dt not in self.type_vars[var]:
                    self.err("R011", f"{fld}.types.{var}", f"{t!r} is not a type {var} allows",
                             f"use one of {', '.join(a.value for a in self.type_vars[var])}")
                else:
                    m[var] = dt
            if len(m) != len(self.type_vars):
                continue
            attr_sigs = {a.name: a for a in sig.attrs}
            attrs = []
            for name, value in k.attrs.items():
                a = attr_sigs.get(name)
                if a is None:
                    self.err("R011", f"{fld}.attrs.{name}", f"the op has no attribute {name!r}", "remove it")
                    continue
                try:
                    attrs.append((name, encode(a.dtype, value)))
                except ScalarError as exc:
                    self.err("R011", f"{fld}.attrs.{name}", str(exc).split(". Fix:")[0], f"give a valid {a.dtype}")
            missing = [a for a in sig.attrs if a.default is None and a.name not in k.attrs]
            if missing:
                self.err("R011", f"{fld}.attrs", f"attribute {missing[0].name!r} has no default and is not given",
                         f"add attrs = {{ {missing[0].name} = ... }}")
            types = [sig.resolve(p.type, m) for p in sig.inputs] + [sig.resolve(sig.output.type, m)]
            rows = []
            for j, row in enumerate(k.cases):
                if len(row) != len(types):
                    self.err("R011", f"{fld}.cases[{j}]", f"a case has {len(types)} values (inputs then the expected "
                             f"output), this one has {len(row)}", "write [input, ..., expected]")
                    continue
                try:
                    rows.append(tuple(encode(t, v) for t, v in zip(types, row)))
                except ScalarError as exc:
                    self.err("R011", f"{fld}.cases[{j}]", str(exc).split(". Fix:")[0], "write values of the case's types")
            kats.append(Kat(tuple(m[v] for v in self.type_vars), tuple(sorted(attrs)), tuple(rows), k.note))
        return tuple(kats)


def _impure(e: Expr) -> str | None:
    bad = next((x for x in subexprs(e) if isinstance(x, (Load, Atomic, Id, BufLen))), None)
    return type(bad).__name__ if bad is not None else None


_UNION_TAGS: Final = {"str", "int", "float", "bool", "dict", "list"}


def _field_path(loc: list[Any]) -> str:
    """``laws[0].law`` from pydantic's ('laws', 0, 'law'), without union-member tags."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif "[" in part or part in _UNION_TAGS or part[:1].isupper():
            continue
        else:
            out += ("." if out else "") + part
    return out


def _schema_diags(exc: Any, raw: Mapping[str, Any], path: Path) -> list[Diagnostic]:
    diags = []
    ops = raw.get("op") if isinstance(raw.get("op"), list) else []
    for e in exc.errors():
        loc = list(e["loc"])
        op_id = None
        if len(loc) >= 2 and loc[0] == "op" and isinstance(loc[1], int) and loc[1] < len(ops):
            entry = ops[loc[1]]
            op_id = entry.get("id") if isinstance(entry, dict) else None
            loc = loc[2:] if op_id else loc
        fld = _field_path(loc)
        kind = e["type"]
        if kind == "extra_forbidden":
            fix = f"remove {loc[-1]!r} (unknown key; see `python -m vyre_decl.ops schema`)"
        elif kind == "missing":
            fix = f"add {loc[-1]!r}"
        elif kind == "literal_error":
            fix = f"use {e.get('ctx', {}).get('expected', 'an allowed value')}"
        else:
            fix = "give a value of the expected type (see `python -m vyre_decl.ops schema`)"
        diags.append(Diagnostic("R002", e["msg"], _loc(path, op_id, fld or None), fix))
    return diags


def load_file(path: Path) -> _FileResult:
    """Parse and check one op file on its own (cross-file checks come later)."""
    res = _FileResult(path)
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        res.diags.append(Diagnostic("R016", f"cannot read the file: {exc.strerror}", _loc(path), "check the path and permissions"))
        return res
    if len(data) > MAX_FILE_BYTES:
        res.diags.append(Diagnostic("R015", "the file is larger than 1 MiB", _loc(path), "split the dialect into several files"))
        return res
    res.digest = hashlib.sha256(data).digest()
    try:
        raw = tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        res.diags.append(Diagnostic("R001", "the file is not UTF-8", _loc(path), "save it as UTF-8"))
        return res
    except tomllib.TOMLDecodeError as exc:
        res.diags.append(Diagnostic("R001", f"TOML syntax error: {exc}", _loc(path), "fix the TOML syntax at that line"))
        return res
    ops_raw = raw.get("op")
    if isinstance(ops_raw, list):
        res.declared = [o["id"] for o in ops_raw if isinstance(o, dict) and isinstance(o.get("id"), str)]
    from pydantic import ValidationError

    from .schema import OpFile

    try:
        spec = OpFile.model_validate(raw)
    except ValidationError as exc:
        res.diags.extend(_schema_diags(exc, raw, path))
        return res
    d = spec.dialect
    if not _ID_RE.match(d.name):
        res.diags.append(Diagnostic("R003", f"dialect name {d.name!r} must be lowercase and dotted",
                                    _loc(path, None, "dialect.name"), "use a name such as my_project.math"))
    if semver_key(d.version) is None:
        res.diags.append(Diagnostic("R017", f"version {d.version!r} is not a semantic version",
                                    _loc(path, None, "dialect.version"), "write MAJOR.MINOR.PATCH, e.g. 1.0.0"))
    res.dialect = DialectInfo(d.name, d.version, d.summary, tuple(d.requires), path)
    seen: set[str] = set()
    for op in spec.op:
        if op.id in seen:
            res.diags.append(Diagnostic("R004", f"op {op.id!r} is declared twice in this file", _loc(path, op.id, "id"),
                                        "remove or rename one of them"))
            continue
        seen.add(op.id)
        built = _OpBuilder(op, d.name, path, res.diags).build()
        if built is not None:
            res.ops[op.id] = built
    return res


# ============================================================================ whole registry


def env_ops_dirs(diags: list[Diagnostic] | None = None) -> list[Path]:
    """Directories named by VYRE_DECL_OPS_PATH (os.pathsep-separated)."""
    value = os.environ.get(ENV_VAR, "")
    if not value:
        return []
    dirs = []
    for entry in value.split(os.pathsep):
        if not entry.strip():
            if diags is not None:
                diags.append(Diagnostic("R016", f"{ENV_VAR} has an empty entry", ENV_VAR,
                                        f"remove the stray {os.pathsep!r} from {ENV_VAR}", "warning"))
            continue
        dirs.append(Path(entry))
    return dirs


def _files(sources: Iterable[Path], diags: list[Diagnostic]) -> list[Path]:
    files: list[Path] = []
    for src in sources:
        if src.is_dir():
            files.extend(sorted(p for p in src.glob("*.toml") if p.is_file()))
        elif src.is_file():
            files.append(src)
        else:
            diags.append(Diagnostic("R016", "no such op file or directory", str(src),
                                    f"create it or remove it from {ENV_VAR} / the load call"))
    seen: set[Path] = set()
    unique = []
    for f in files:
        key = f.resolve()
        if key not in seen:
            seen.add(key)
            unique.append(f)
    return unique


def _check_composes(ops: Mapping[str, OpDef], table: Any) -> dict[str, list[Diagnostic]]:
    """Type-check every compose expression and `distributive over` against the whole candidate
    registry; detect compose cycles. Returns diagnostics per op id."""
    problems: dict[str, list[Diagnostic]] = {}

    def fail(op: OpDef, code: str, fld: str, message: str, fix: str) -> None:
        problems.setdefault(op.id, []).append(Diagnostic(code, message, _loc(op.source, op.id, fld), fix))

    for op in ops.values():
        if op.compose is not None:
            for binding in op.bindings():
                m = op.binding_map(binding)
                variables = {p.name: op.signature.resolve(p.type, m) for p in op.signature.inputs}
                variables.update({a.name: a.dtype for a in op.signature.attrs})
                try:
                    got = infer_type(op.compose, "compose", variables, {}, table)
                except ExprFault as fault:
                    where = ", ".join(f"{v}={t}" for v, t in m.items()) or "the op"
                    fail(op, "R010", "compose", f"for {where}: {fault.message} (at {fault.path})", fault.fix)
                    break
                want = op.output_type(binding)
                if got is not want:
                    fail(op, "R010", "compose", f"compose yields {got} where the output is {want}",
                         f"make the expression produce {want}")
                    break
        for law in op.laws:
            if law.over is None:
                continue
            other = ops.get(law.over)
            if other is None or len(other.signature.inputs) != 2 or other.is_atomic:
                fail(op, "R014", "laws.over", f"distributive over {law.over!r}: no such binary op",
                     "name a registered binary op")
                continue
            for binding in op.bindings():
                if not law.applies(op.binding_map(binding)):
                    continue
                t = op.output_type(binding)
                try:
                    ok = other.signature.bind([t, t])[1] is t
                except SignatureError:
                    ok = False
                if not ok:
                    fail(op, "R014", "laws.over", f"distributive over {law.over}: it does not map two {t} values "
                         f"to a {t}", "name an op of the same type, or restrict the law with when = {...}")
                    break

    # compose cycles: op -> ops its compose calls
    calls = {op.id: _called_ops(op.compose) for op in ops.values() if op.compose is not None}
    state: dict[str, int] = {}

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for nxt in calls.get(node, ()):
            if state.get(nxt) == 1:
                cycle = stack[stack.index(nxt):] + [nxt] if nxt in stack else [node, nxt]
                fail(ops[node], "R023", "compose", f"compose calls itself through {' -> '.join(cycle)}",
                     "define one of the ops without calling the others")
            elif nxt not in state:
                visit(nxt, stack + [nxt])
        state[node] = 2

    for op_id in calls:
        if op_id not in state:
            visit(op_id, [op_id])
    return problems


def _called_ops(e: Expr | None) -> set[str]:
    return set() if e is None else {x.op for x in subexprs(e) if isinstance(x, Op)}


class _Table:
    def __init__(self, ops: Mapping[str, OpDef]) -> None:
        self.ops = ops

    def signature(self, op_id: str) -> Any:
        op = self.ops.get(op_id)
        return op.signature if op else None

    def unknown_op_hint(self, op_id: str) -> str:
        return "define that op (in this or another loaded op file) or fix the id"


def load(
    paths: Sequence[str | os.PathLike[str]] = (),
    *,
    standard: bool = True,
    env: bool = True,
) -> Registry:
    """Load the standard ops, the directories in VYRE_DECL_OPS_PATH and ``paths`` (directories
    or files). Bad files are rejected whole and reported in ``Registry.diagnostics``."""
    diags: list[Diagnostic] = []
    sources: list[Path] = [standard_ops_dir()] if standard else []
    if env:
        sources += env_ops_dirs(diags)
    sources += [Path(p) for p in paths]
    results = [load_file(f) for f in _files(sources, diags)]
    for r in results:
        diags.extend(r.diags)
    live = [r for r in results if r.ok and r.dialect is not None]

    # one file per dialect: the higher semantic version wins
    by_dialect: dict[str, _FileResult] = {}
    for r in live:
        assert r.dialect is not None
        name = r.dialect.name
        other = by_dialect.get(name)
        if other is None:
            by_dialect[name] = r
            continue
        assert other.dialect is not None
        new_key, old_key = semver_key(r.dialect.version), semver_key(other.dialect.version)
        if new_key == old_key:
            diags.append(Diagnostic("R005", f"dialect {name} {r.dialect.version} is also defined by {other.path}",
                                    _loc(r.path, None, "dialect.version"),
                                    "remove one file or give them different versions"))
            continue
        win, lose = (r, other) if new_key > old_key else (other, r)  # type: ignore[operator]
        assert win.dialect is not None and lose.dialect is not None
        by_dialect[name] = win
        diags.append(Diagnostic("R018", f"dialect {name} {lose.dialect.version} is shadowed by version "
                                f"{win.dialect.version} from {win.path}", _loc(lose.path),
                                "remove the older file if it is no longer needed", "note"))
    accepted = list(by_dialect.values())

    # duplicate op ids across files (dialects whose names nest, e.g. a and a.b)
    owner: dict[str, _FileResult] = {}
    kept: list[_FileResult] = []
    for r in sorted(accepted, key=lambda r: results.index(r)):
        clash = next((i for i in r.ops if i in owner), None)
        if clash is not None:
            diags.append(Diagnostic("R005", f"op {clash!r} is already defined in {owner[clash].path}",
                                    _loc(r.path, clash, "id"), "rename one of the two ops"))
            continue
        for i in r.ops:
            owner[i] = r
        kept.append(r)

    # cross-file checks; rejecting a file can break others, so repeat until stable
    while True:
        ops = {i: op for r in kept for i, op in r.ops.items()}
        problems = _check_composes(ops, _Table(ops))
        bad = [r for r in kept if any(i in problems for i in r.ops)]
        if not bad:
            break
        for r in bad:
            for i in r.ops:
                diags.extend(problems.get(i, []))
            diags.append(Diagnostic("R020", "the file is rejected: none of its ops is registered", _loc(r.path),
                                    "fix the errors reported for it"))
            kept.remove(r)
    rejected = {i: r.path for r in results if r not in kept for i in r.declared}
    dialects = {r.dialect.name: r.dialect for r in kept if r.dialect is not None}
    return Registry(ops, dialects, tuple(diags), {r.path: r.digest for r in kept}, rejected)
