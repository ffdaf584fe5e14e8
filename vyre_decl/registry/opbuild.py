"""Checking one op of an op file and building its ``OpDef``.

Everything that can be checked without the rest of the registry is checked here: the id, type
sets, the signature, temporaries, the reference or the compose definition (parsed per binding),
PTX templates (parsed into instructions, instantiated per binding), laws (syntax, fit, elements),
waivers, ULP budgets and known-answer tests. Problems become diagnostics, never exceptions;
``opsig.py`` checks the type variables, bindings and signature (this builder's base class);
``link.py`` does the cross-op checks (compose types, ``over`` ops, cycles).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Callable, Final, Mapping

from ..ir.diagnostics import Diagnostic, message_and_fix
from ..ir.nodes import Atomic, BufLen, Expr, Id, Load, Wait
from ..ir.compose import ComposeBudget, ComposeBudgetError, UnrollLimitError, parse_compose
from ..ir.lexer import ParseError
from ..ir.scalars import ScalarError
from ..ir.signature import Binding
from ..ir.types import DataType
from ..ir.validation import is_identifier
from ..ir.walk import subexprs
from .kats import kat_group
from .laws import CATALOGUE, LawSyntaxError, law_fits, parse_law
from .model import TRAITS, Compose, Kat, LawDef, OpDef, Template
from .ranges import RangeLawError, parse_range
from .rewrites import parse_rewrite
from .opsig import _OpBase, location
from .references import COLLECTIVE, REFERENCES
from .templates import ATOMIC_PLACEHOLDERS, BIT_REGISTERS, COLLECTIVE_PLACEHOLDERS, ParsedTemplate, TemplateError, instantiate, parse_template
from .typesets import TypeSetError, parse_type_set, resolve_keyed

__all__ = ["build_op", "ID_RE", "MAX_BINDINGS"]

MAX_BINDINGS: Final = 1024  # type combinations of one op (the standard cast has 49)
ID_RE: Final = re.compile(r"[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)*\Z")


def build_op(fields: Mapping[str, Any], op_id: str, dialect: str, path: Path, diags: list[Diagnostic],
             budget: ComposeBudget | None = None) -> OpDef | None:
    """The OpDef of one op (``fields``: its keys merged over its class's), or None after adding
    diagnostics to ``diags``. ``budget``: the compose work left to the op's file (R037)."""
    return _OpBuilder(fields, op_id, dialect, path, diags, budget or ComposeBudget()).build()


class _OpBuilder(_OpBase):
    """The rest of an op after its signature: temporaries, reference or compose, templates, laws,
    traits, waivers, ULP budgets and known answers."""

    def build(self) -> OpDef | None:
        f = self.f
        if not ID_RE.match(self.id) or not self.id.startswith(self.dialect + "."):
            self.err("R003", "id", f"op id {self.id!r} must be lowercase dotted and start with {self.dialect + '.'!r}",
                     f"rename it to {self.dialect}.<name>")
        for key in ("summary", "signature"):
            if f.get(key) is None:
                self.err("R002", key, f"the op has no {key}", f"add {key} = \"...\" (or take it from a class)")
        if self.failed:
            return None
        self.types()
        count = 1
        for allowed in self.type_vars.values():
            count *= len(allowed)
        if count > MAX_BINDINGS:
            self.err("R006", "types", f"the type variables have {count} combinations; an op may have at most "
                     f"{MAX_BINDINGS}", "narrow the type sets or split the op")
            return None
        combos = self.combinations()
        sig = self.signature(combos)
        if sig is None or self.failed:
            return None
        self.sig = sig
        self.bindings = list(sig.bindings())
        temps = self.temps()
        references = self.references()
        compose = self.compose()
        templates = self.templates(temps) if temps is not None else {}
        laws = self.laws()
        ranges = self.ranges()
        rewrites = self.rewrites()
        waivers = self.waivers()
        accuracy = self.accuracy()
        kats = self.kats()
        if self.failed:
            return None
        return OpDef(self.id, self.dialect, f["summary"], sig, laws, waivers, references, compose,
                     _text(f.get("compose")), templates, accuracy, kats, self.path, f.get("doc") or "",
                     self.traits(), ranges=ranges, rewrites=rewrites)

    def temps(self) -> dict[str, str] | None:
        temps = {}
        reserved = set(ATOMIC_PLACEHOLDERS) if self.sig.is_atomic else set()
        reserved |= set(COLLECTIVE_PLACEHOLDERS) if self.collective else set()
        for name, t in (self.f.get("temps") or {}).items():
            if not is_identifier(name) or name in self.names or name in self.type_vars or name in reserved:
                self.err("R022" if name in reserved else "R007", f"temps.{name}",
                         f"bad, duplicate or reserved temporary name {name!r}",
                         "give temporaries identifier names distinct from the signature's (and, in atomic ops, "
                         "from addr, space and old)")
            elif t in BIT_REGISTERS or self.type_name(t, f"temps.{name}", code="R007"):
                temps[name] = t
        return temps

    def resolve(self, value: Any, fld: str, is_leaf: Any) -> dict[Binding, tuple[Any, str]]:
        table = resolve_keyed(value, list(self.type_vars.items()), fld, is_leaf)
        for where, message, fix in table.errors:
            self.err("R008" if fld == "ptx" else "R011" if fld == "kat" else "R012", where, message, fix)
        return table.values

    # ------------------------------------------------------------------ semantics
    def references(self) -> dict[Binding, str]:
        ref, comp = self.f.get("reference"), self.f.get("compose")
        if ref is not None and comp is not None:
            self.err("R012", "reference", "the op has both a reference and a compose definition, which could disagree",
                     "keep one: compose defines composite ops; reference names the function of an intrinsic")
            return {}
        if ref is None:
            if comp is None:
                self.err("R013", "reference", "the op has neither a reference nor a compose definition",
                         'add reference = "<function>" (and ptx templates) or compose = "<expression>"')
            return {}
        found = self.resolve(ref, "reference", lambda v: isinstance(v, str))
        refs = {}
        for b in self.bindings:
            if b not in found:
                self.err("R013", "reference", f"no reference function for {self.describe(b)}",
                         "cover every binding of the type variables")
                continue
            name, fld = found[b]
            entry = REFERENCES.get(name)
            if entry is None:
                self.err("R012", fld, f"{name!r} is not a reference function",
                         f"use one of {', '.join(sorted(REFERENCES))}, or define the op with compose")
                continue
            if (entry[0] == COLLECTIVE) != self.collective:
                self.err("R012", fld, f"{name} is {'a collective' if entry[0] == COLLECTIVE else 'not a collective'} "
                         f"reference function, and the op {'does not declare' if self.collective else 'declares'} "
                         "the collective trait", 'declare traits = ["collective"] exactly when the op moves values '
                         "between the lanes of a subgroup")
                continue
            m = dict(zip(self.type_vars, b))
            kinds = {self.sig.resolve(p.type, m).kind for p in self.sig.inputs}
            if not kinds <= entry[1]:
                self.err("R012", fld, f"{name} does not implement the semantics for {self.describe(b)} "
                         f"(it covers {', '.join(sorted(entry[1]))} operands)",
                         "key the reference by type and give those types another function")
                continue
            refs[b] = name
        return refs

    def compose(self) -> dict[Binding, Compose]:
        text = self.f.get("compose")
        if text is None or self.f.get("reference") is not None:
            return {}
        found = self.resolve(text, "compose", lambda v: isinstance(v, str))
        names = frozenset(p.name for p in self.sig.inputs) | frozenset(a.name for a in self.sig.attrs)
        result = {}
        for b in self.bindings:
            if b not in found:
                self.err("R013", "compose", f"no compose definition for {self.describe(b)}",
                         "cover every binding of the type variables")
                return {}
            src, fld = found[b]
            try:
                steps, expr = parse_compose(src, dict(zip(self.type_vars, b)), location(self.path, self.id, fld), names,
                                            self.budget)
            except ParseError as exc:  # R036/R037: it parses but unrolls too far; R009: it does not parse
                d = exc.diagnostics[0]
                where = f" for {self.describe(b)}" if b else ""
                at = d.location.rpartition(' ')[2]
                if isinstance(exc, (UnrollLimitError, ComposeBudgetError)):
                    self.err("R036" if isinstance(exc, UnrollLimitError) else "R037", fld, f"at {at}{where}: {d.message}",
                             d.fix)
                else:
                    self.err("R009", fld, f"compose does not parse{where} at {at}: {d.message}", d.fix)
                return {}
            bad = next((_impure(e) for e in [v for _, v in steps] + [expr] if _impure(e)), None)
            if bad:
                self.err("R010", fld, f"compose may only combine its operands and attributes with ops, "
                         f"found {bad}", "remove buffer accesses, ids and atomics from compose")
                return {}
            result[b] = Compose(steps, expr)
        return result

    def templates(self, temps: Mapping[str, str]) -> dict[Binding, Template]:
        ptx = self.f.get("ptx")
        needed = self.f.get("reference") is not None or self.sig.is_atomic
        if ptx is None:
            if needed and self.bindings:
                self.err("R008", "ptx", "the op has no PTX template",
                         "add ptx = \"...\" (an op without templates is lowered from its compose definition)")
            return {}
        found = self.resolve(ptx, "ptx", lambda v: isinstance(v, str))
        sig = self.sig
        atomic = sig.is_atomic
        operands = frozenset(p.name for p in (sig.operands if atomic else sig.inputs))
        result_name = "old" if atomic else sig.output.name
        parsed: dict[str, ParsedTemplate | None] = {}
        out = {}
        for b in self.bindings:
            if b not in found:
                if needed:
                    self.err("R008", "ptx", f"no PTX template for {self.describe(b)}",
                             "add a template for every type the op declares")
                continue
            text, fld = found[b]
            if text not in parsed:
                try:
                    parsed[text] = parse_template(text, inputs=operands, attrs=frozenset(a.name for a in sig.attrs),
                                                  temps=frozenset(temps), result=result_name,
                                                  type_vars=frozenset(self.type_vars), atomic=atomic,
                                                  collective=self.collective)
                except TemplateError as exc:
                    parsed[text] = None
                    self.err(exc.code, fld, exc.message, exc.fix)
            tmpl = parsed[text]
            if tmpl is None:
                continue
            m = dict(zip(self.type_vars, b))
            try:
                out[b] = instantiate(tmpl, m, {n: t if t in BIT_REGISTERS else sig.resolve(t, m)
                                               for n, t in temps.items()})
            except TemplateError as exc:
                self.err(exc.code, fld, exc.message, exc.fix)
        return out

    # ------------------------------------------------------------------ laws, budgets, known answers
    def laws(self) -> tuple[LawDef, ...]:
        laws = []
        for i, text in enumerate(self.f.get("laws") or ()):
            fld = f"laws[{i}]"
            try:
                name, arg, when_text = parse_law(text)
            except LawSyntaxError as exc:
                self.err("R014", fld, exc.message, exc.fix)
                continue
            kind = CATALOGUE[name]
            when = self.when(when_text, fld) if when_text else None
            if when_text and when is None:
                continue
            if kind.element is None and not kind.over and arg is not None:
                self.err("R014", fld, f"{name} takes no argument", f'write "{name}"')
                continue
            if (kind.element is not None or kind.over) and arg is None:
                what = "an element, e.g. identity(zero)" if kind.element else "the op it distributes over"
                self.err("R014", fld, f"{name} needs {what}", f'write "{name}(...)"')
                continue
            law = LawDef(name, arg if kind.element else None, arg if kind.over else None, when, text)
            ok = False
            for b in self.bindings:
                m = dict(zip(self.type_vars, b))
                if not law.applies(m):
                    continue
                operands = tuple(self.sig.resolve(p.type, m) for p in self.sig.inputs)
                result = self.sig.resolve(self.sig.output.type, m)
                why = law_fits(kind, operands, result)
                if why:
                    self.err("R014", fld, f"{text}: for {self.describe(b)}, {why}",
                             "remove the law or restrict it with @types")
                    break
                if law.element is not None:
                    try:
                        law.element_bits(result if kind.element == "result" else operands[0])
                    except ScalarError as exc:
                        self.err("R014", fld, f"{text}: for {self.describe(b)}, " + message_and_fix(exc)[0],
                                 "restrict the law with @types or use another element")
                        break
                ok = True
            else:
                if not ok:
                    self.err("R014", fld, f"{text} applies to no binding of the op", "fix or remove the @restriction")
                    continue
                laws.append(law)
        return tuple(laws)

    def ranges(self) -> tuple[LawDef, ...]:
        """The range laws (registry/ranges.py), kept as LawDef("range", text=...) records: each
        parses (D018), names only operand bounds and type constants (D019) and applies to at least
        one binding, every one of them with unsigned operands and result (D020)."""
        return self._unsigned_laws("ranges", "range", parse_range, "D018", "D020")

    def rewrites(self) -> tuple[LawDef, ...]:
        """The rewrite laws (registry/rewrites.py), kept as LawDef("rewrite", text=...) records: each
        parses and names only operands, bounds, type constants and functions of the vocabulary
        (D021), and applies to at least one binding, every one of them unsigned (D022). That the op
        it calls exists is link.py's check."""
        return self._unsigned_laws("rewrites", "rewrite", parse_rewrite, "D021", "D022")

    def _unsigned_laws(self, key: str, kind: str, parse: Callable[[str, tuple[str, ...], tuple[str, ...]], tuple[Any, str | None]],
                       syntax: str, fit: str) -> tuple[LawDef, ...]:
        out = []
        operands = tuple(p.name for p in self.sig.inputs)
        for i, text in enumerate(self.f.get(key) or ()):
            fld = f"{key}[{i}]"
            try:
                _, when_text = parse(text, operands, tuple(self.type_vars))
            except RangeLawError as exc:
                self.err(exc.code, fld, exc.message, exc.fix)
                continue
            when = self.when(when_text, fld, code=syntax) if when_text else None
            if when_text and when is None:
                continue
            law = LawDef(kind, when=when, text=text)
            fits = [b for b in self.bindings if law.applies(dict(zip(self.type_vars, b)))]
            wrong = [b for b in fits if not all(t.is_int and not t.is_signed for t in self._types(b))]
            if not fits or wrong:
                why = "applies to no binding of the op" if not fits else f"applies to {self.describe(wrong[0])}"
                self.err(fit, fld, f"{kind} law {text!r} {why}; {kind} laws hold for unsigned integer operands "
                         "and results only", "restrict it with @uint (or the unsigned types it holds for)")
                continue
            out.append(law)
        return tuple(out)

    def _types(self, b: Binding) -> tuple[DataType, ...]:
        m = dict(zip(self.type_vars, b))
        return tuple(self.sig.resolve(p.type, m) for p in (*self.sig.inputs, self.sig.output))

    @property
    def collective(self) -> bool:
        """Whether the op declares the collective trait (its templates may talk to other lanes)."""
        return "collective" in (self.f.get("traits") or [])

    def traits(self) -> frozenset[str]:
        names = self.f.get("traits") or []
        for name in names:
            if name not in TRAITS:
                self.err("R035", "traits", f"{name!r} is not a trait", f"use one of {', '.join(TRAITS)}")
        return frozenset(names)

    def waivers(self) -> dict[str, str]:
        out = {}
        for name, why in (self.f.get("waive") or {}).items():
            if name not in CATALOGUE:
                self.err("R014", f"waive.{name}", f"{name!r} is not a law of the catalogue", f"use one of {', '.join(CATALOGUE)}")
            elif not why.strip():
                self.err("R014", f"waive.{name}", "a waiver needs its reason", "say why the law is not declared")
            else:
                out[name] = why.strip()
        return out

    def accuracy(self) -> dict[DataType, int]:
        out_types = {self.sig.resolve(self.sig.output.type, dict(zip(self.type_vars, b))) for b in self.bindings}
        result = {}
        for key, ulp in (self.f.get("ulp") or {}).items():
            try:
                types = parse_type_set(key)
            except TypeSetError as exc:
                self.err("R019", f"ulp.{key}", *message_and_fix(exc))
                continue
            if not all(t.is_float and t in out_types for t in types):
                self.err("R019", f"ulp.{key}", f"{key!r} names types that are not float results of this op",
                         "key ULP budgets by the op's float result types")
            elif not 0 <= ulp <= 1 << 20:
                self.err("R019", f"ulp.{key}", f"ULP budget {ulp} is out of range", "use 0 (exact) up to 2^20")
            else:
                result.update(dict.fromkeys(types, ulp))
        return result

    def kats(self) -> tuple[Kat, ...]:
        raw = self.f.get("kat")
        if raw is None:
            return ()
        found = self.resolve(raw, "kat", lambda v: isinstance(v, list))
        kats = []
        for b, (groups, fld) in found.items():
            if groups and all(isinstance(g, dict) for g in groups):
                entries = [(g, f"{fld}[{j}]") for j, g in enumerate(groups)]
            else:
                entries = [({"cases": groups}, fld)]
            for group, gfld in entries:
                kat = kat_group(self.sig, tuple(self.type_vars), b, group, gfld, self.err)
                if kat is not None:
                    kats.append(kat)
        return tuple(kats)


def _text(compose: Any) -> str | None:
    """The compose definition as one display text (a type-keyed table as JSON)."""
    if compose is None or isinstance(compose, str):
        return compose
    return json.dumps(compose, separators=(", ", ": "))


def _impure(e: Expr) -> str | None:
    bad = next((x for x in subexprs(e) if isinstance(x, (Load, Atomic, Wait, Id, BufLen))), None)
    return type(bad).__name__ if bad is not None else None
