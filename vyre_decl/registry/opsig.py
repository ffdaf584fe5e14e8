"""The first half of building an op: its fields, its diagnostics, and its type variables,
``bindings`` and signature checked and built (``opbuild.py`` builds the rest on this base)."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any, Callable, Final, Mapping

from ..ir.compose import ComposeBudget
from ..ir.diagnostics import Diagnostic, message_and_fix
from ..ir.scalars import ScalarError, parse_value
from ..ir.signature import AttrSig, Binding, OpSignature, Param
from ..ir.types import VALUE_TYPES, DataType
from ..ir.validation import is_identifier
from .sigtext import SignatureSyntaxError, SignatureText, parse_signature
from .templates import ATOMIC_PLACEHOLDERS
from .typesets import TypeSetError, parse_type_set

__all__ = ["location"]  # and the builder's base class, for opbuild.py

_VALUE_TYPE_NAMES: Final = {t.value: t for t in VALUE_TYPES}
_ATOMIC_TYPES: Final = (DataType.U32, DataType.I32, DataType.U64, DataType.I64)


def location(path: Path, op: str | None = None, fld: str | None = None) -> str:
    text = str(path)
    if op:
        text += f" [op {op}]"
    if fld:
        text += f" {fld}"
    return text


class _OpBase:
    """An op's fields being checked: where its diagnostics go, its type variables and signature."""

    def __init__(self, fields: Mapping[str, Any], op_id: str, dialect: str, path: Path, diags: list[Diagnostic],
                 budget: ComposeBudget) -> None:
        self.f, self.id, self.dialect, self.path, self.diags = fields, op_id, dialect, path, diags
        self.budget = budget
        self.start = len(diags)
        self.type_vars: dict[str, tuple[DataType, ...]] = {}

    def err(self, code: str, fld: str | None, message: str, fix: str) -> None:
        self.diags.append(Diagnostic(code, message, location(self.path, self.id, fld), fix))

    @property
    def failed(self) -> bool:
        return len(self.diags) > self.start

    def describe(self, binding: Binding) -> str:
        return ", ".join(f"{v}={t}" for v, t in zip(self.type_vars, binding)) or "the op"

    # ------------------------------------------------------------------ types and signature
    def types(self) -> None:
        for var, text in (self.f.get("types") or {}).items():
            if not is_identifier(var) or var in _VALUE_TYPE_NAMES:
                self.err("R006", f"types.{var}", f"bad type variable name {var!r}", "use a name such as T or S")
                continue
            try:
                self.type_vars[var] = parse_type_set(text)
            except TypeSetError as exc:
                self.err("R006", f"types.{var}", *message_and_fix(exc))

    def type_name(self, name: str, fld: str, code: str = "R006", allow_vars: bool = True) -> bool:
        if name in _VALUE_TYPE_NAMES or (allow_vars and name in self.type_vars):
            return True
        vars_ = f" or a type variable of `types` ({', '.join(self.type_vars)})" if allow_vars and self.type_vars else ""
        self.err(code, fld, f"unknown type {name!r}", f"use one of {', '.join(_VALUE_TYPE_NAMES)}{vars_}")
        return False

    def combinations(self) -> tuple[Binding, ...] | None:
        """The ``bindings`` key: the combinations it allows, in declaration order (None: all)."""
        specs = self.f.get("bindings")
        if specs is None:
            return None
        allowed = []
        for i, text in enumerate(specs):
            when = self.when(text, f"bindings[{i}]", code="R006")
            if when is not None:
                allowed.append(when)
        combos = tuple(b for b in itertools.product(*self.type_vars.values())
                       if any(all(t in w.get(v, (t,)) for v, t in zip(self.type_vars, b)) for w in allowed))
        if not combos and not self.failed:
            self.err("R006", "bindings", "the bindings allow no combination of the type variables",
                     'write e.g. bindings = ["S=u32,f32; T=u32,f32"]')
        return combos

    def signature(self, combos: tuple[Binding, ...] | None = None) -> OpSignature | None:
        try:
            st = parse_signature(self.f["signature"])
        except SignatureSyntaxError as exc:
            self.err("R006", "signature", exc.message, exc.fix)
            return None
        atomic = bool(st.inputs) and st.inputs[0][2]
        names: set[str] = set()
        reserved = set(ATOMIC_PLACEHOLDERS) if atomic else set()

        def name_ok(name: str, what: str) -> None:
            if not is_identifier(name):
                self.err("R006", "signature", f"bad {what} name {name!r}", "use an identifier that is not a keyword")
            elif name in names:
                self.err("R006", "signature", f"name {name!r} is used twice",
                         "give operands, the result, attributes and temps distinct names")
            elif name in reserved or name in self.type_vars:
                self.err("R022" if name in reserved else "R006", "signature",
                         f"{name!r} is reserved ({'an atomic template placeholder' if name in reserved else 'a type variable'})",
                         "rename it")
            names.add(name)

        inputs = self._inputs(st, name_ok)
        out_name, out_type = st.output
        name_ok(out_name, "result")
        self.type_name(out_type, "signature")
        attrs = self._attrs(st, name_ok)
        used = {p[1] for p in st.inputs} | {out_type}
        for var in self.type_vars:
            if var not in used:
                self.err("R006", f"types.{var}", f"type variable {var} is not used in the signature",
                         "remove it or use it in the signature")
        if atomic:
            self._atomic(st.inputs[0][1], out_type, len(inputs))
        self.names = names
        if self.failed:
            return None
        return OpSignature(self.id, tuple(inputs), Param(out_name, out_type), tuple(self.type_vars.items()), tuple(attrs),
                           combos)

    def _inputs(self, st: SignatureText, name_ok: Callable[[str, str], None]) -> list[Param]:
        inputs = []
        for i, (name, type_, mem) in enumerate(st.inputs):
            name_ok(name, "operand")
            self.type_name(type_, "signature")
            if mem and i:
                self.err("R022", "signature", f"{name!r}: only the first operand can be the memory operand (mem)",
                         "move the memory operand first")
            inputs.append(Param(name, type_, mem))
        return inputs

    def _attrs(self, st: SignatureText, name_ok: Callable[[str, str], None]) -> list[AttrSig]:
        attrs = []
        for name, type_, default in st.attrs:
            name_ok(name, "attribute")
            if not self.type_name(type_, "signature", code="R021", allow_vars=False):
                continue
            value = None
            if default is not None:
                try:
                    value = parse_value(DataType(type_), default)
                except ScalarError as exc:
                    self.err("R021", "signature", f"attribute {name}: " + message_and_fix(exc)[0], f"give a default that is a valid {type_}")
            attrs.append(AttrSig(name, DataType(type_), value))
        return attrs

    def _atomic(self, mem_type: str, out_type: str, n_inputs: int) -> None:
        """An atomic op's signature: the result has the memory operand's type, a word type, and
        there is a value operand."""
        if out_type != mem_type:
            self.err("R022", "signature", "an atomic op's result (the new memory value) must have the memory "
                     "operand's type", f"declare the result as {mem_type}")
        allowed = self.type_vars.get(mem_type, (DataType(mem_type),) if mem_type in _VALUE_TYPE_NAMES else ())
        bad = [t.value for t in allowed if t not in _ATOMIC_TYPES]
        if bad:
            self.err("R022", "signature", f"atomics work on u32, i32, u64 and i64 words, not {', '.join(bad)}",
                     "restrict the memory operand's types")
        if n_inputs < 2:
            self.err("R022", "signature", "an atomic op needs an operand besides the memory operand",
                     "add the value operand")

    def when(self, text: str, fld: str, code: str = "R014") -> dict[str, tuple[DataType, ...]] | None:
        """A restriction (a law's @, an entry of bindings): a type set of the only type variable,
        or VAR=set; VAR=set."""
        parts = [p.strip() for p in text.split(";")]
        result = {}
        for part in parts:
            var, eq, types = part.partition("=")
            if not eq:
                if len(self.type_vars) != 1 or len(parts) != 1:
                    self.err(code, fld, f"@{text}: the op has {len(self.type_vars)} type variables",
                             "write @VAR=types for each variable you restrict, e.g. @T=int")
                    return None
                var, types = next(iter(self.type_vars)), part
            var = var.strip()
            if var in result:
                self.err(code, fld, f"@{text}: {var} is restricted twice", f"give {var} one type set")
                return None
            if var not in self.type_vars:
                self.err(code, fld, f"@{text}: {var!r} is not a type variable of the op",
                         f"use one of {', '.join(self.type_vars) or '(none: remove the @restriction)'}")
                return None
            try:
                result[var] = parse_type_set(types, self.type_vars[var])
            except TypeSetError as exc:
                self.err(code, fld, *message_and_fix(exc))
                return None
        return result
