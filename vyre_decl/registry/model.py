"""Loaded op definitions: the immutable runtime view the interpreters and the emitter use.

``opbuild`` turns each op of a file into an ``OpDef``: the signature the IR checks against, the
laws, the reference function or the ``compose`` definition per binding, the PTX templates
instantiated per binding, ULP budgets and known-answer tests with their values already encoded
as bit patterns. Nothing here imports numpy or pydantic, so a registry snapshot loads fast.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Final, Mapping

from ..ir.nodes import Expr
from ..ir.record import Record, record
from ..ir.signature import Binding, OpSignature
from ..ir.scalars import element_bits
from ..ir.types import DataType

if TYPE_CHECKING:
    from .laws import LawKind

__all__ = ["OpDef", "LawDef", "Kat", "DialectInfo", "Template", "Compose", "TRAITS"]

# traits an op may declare (``traits = [...]``), and what each means
TRAITS: Final[Mapping[str, str]] = {
    "nan-bits": "the result depends on the payload or sign of a NaN operand; arithmetic leaves those bits open, so "
                "a program that feeds the op a computed NaN may differ between backends",
    "collective": "the result depends on the operands of every lane of the invocation's subgroup (docs/semantics.md, "
                  "Subgroups): the op must be called in uniform control flow, its reference sees a subgroup at a time "
                  "and its templates may use shfl/vote/match/redux .sync and the {lane} and {members} placeholders. "
                  "A composite that calls such an op has the trait too, without saying so",
}


@record
class LawDef(Record):
    """A declared law: its kind, its argument (element spelling or op id) and where it applies."""

    law: str
    element: str | None = None
    over: str | None = None
    when: Mapping[str, tuple[DataType, ...]] | None = None
    text: str = ""  # as written in the op file

    def applies(self, binding: Mapping[str, DataType]) -> bool:
        return self.when is None or all(binding[var] in allowed for var, allowed in self.when.items())

    def element_bits(self, dtype: DataType) -> int:
        assert self.element is not None
        return element_bits(dtype, self.element)

    @property
    def kind(self) -> LawKind:
        from .laws import CATALOGUE

        return CATALOGUE[self.law]


@record
class Template(Record):
    """A template instantiated for one binding. Each line alternates literal text and the names
    of the operands the emitter fills (registers, attribute immediates, address and space)."""

    text: str
    lines: tuple[tuple[str, ...], ...]
    temps: tuple[tuple[str, DataType | str], ...]  # a value type, or an untyped register ("b32", "b64")
    min_sm: int = 0  # the oldest compute capability whose PTX has every instruction (templates.NEEDS_SM)

    def fill(self, names: Mapping[str, str]) -> list[str]:
        out = []
        for line in self.lines:
            parts = list(line)
            parts[1::2] = [names[n] for n in line[1::2]]
            out.append("".join(parts))
        return out


@record
class Kat(Record):
    """Known-answer rows for one binding: each row is (input bits..., expected output bits)."""

    binding: Binding
    attrs: tuple[tuple[str, int], ...]
    cases: tuple[tuple[int, ...], ...]
    note: str = ""


@record
class Compose(Record):
    """A composite op's definition for one binding: named steps in order, then the result.
    Constants of type variables are already concrete literals."""

    steps: tuple[tuple[str, Expr], ...]
    result: Expr


@record
class DialectInfo(Record):
    name: str
    version: str
    summary: str
    requires: tuple[str, ...]
    source: Path


@dataclass(frozen=True)
class OpDef:
    id: str
    dialect: str
    summary: str
    signature: OpSignature
    laws: tuple[LawDef, ...]
    waivers: Mapping[str, str]  # law name -> why it is not declared although it holds
    references: Mapping[Binding, str]  # binding -> reference function (empty for composites)
    compose: Mapping[Binding, Compose]  # binding -> definition (empty for ops with a reference)
    compose_text: str | None
    templates: Mapping[Binding, Template]
    accuracy_ulp: Mapping[DataType, int]  # max error against the correctly rounded result, per float type
    kats: tuple[Kat, ...]
    source: Path
    doc: str = ""
    traits: frozenset[str] = frozenset()  # names from TRAITS
    ranges: tuple[LawDef, ...] = ()  # range laws: LawDef("range", when=..., text=...) (registry/ranges.py)
    rewrites: tuple[LawDef, ...] = ()  # rewrite laws: LawDef("rewrite", when=..., text=...) (registry/rewrites.py)
    _bindings: list[Binding] = field(default_factory=list, compare=False, repr=False)

    @property
    def is_atomic(self) -> bool:
        return self.signature.is_atomic

    @property
    def category(self) -> str:
        """``composite`` (defined by compose) or ``intrinsic`` (defined by a reference function)."""
        return "composite" if self.compose_text is not None else "intrinsic"

    def bindings(self) -> tuple[Binding, ...]:
        """Every allowed assignment of types to the op's type variables (one empty binding for
        an op without type variables)."""
        if not self._bindings:
            self._bindings.extend(self.signature.bindings())
        return tuple(self._bindings)

    def binding_map(self, binding: Binding) -> dict[str, DataType]:
        return dict(zip(self.signature.type_var_names(), binding))

    def input_types(self, binding: Binding) -> tuple[DataType, ...]:
        m = self.binding_map(binding)
        return tuple(self.signature.resolve(p.type, m) for p in self.signature.inputs)

    def output_type(self, binding: Binding) -> DataType:
        return self.signature.resolve(self.signature.output.type, self.binding_map(binding))

    def reference_for(self, binding: Binding) -> str | None:
        """The reference function for ``binding``; None means: evaluate ``compose_for``."""
        return self.references.get(binding)

    def compose_for(self, binding: Binding) -> Compose | None:
        return self.compose.get(binding)

    def accuracy(self, dtype: DataType) -> int:
        """The declared accuracy for results of type ``dtype``: the largest error in ULP against the
        correctly rounded result (0 = correctly rounded). Backends always agree bit for bit."""
        return self.accuracy_ulp.get(dtype, 0)
