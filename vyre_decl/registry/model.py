"""Loaded op definitions: the immutable runtime view the interpreters and the emitter use.

The loader turns each validated ``OpSpec`` into an ``OpDef``: the signature the IR checks
against, laws, reference semantics, the ``compose`` expression, PTX templates keyed by type
binding, ULP budgets and known-answer tests with their values already encoded as bit patterns.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from ..ir.nodes import Expr
from ..ir.scalars import encode
from ..ir.signature import Binding, OpSignature
from ..ir.types import DataType

__all__ = ["OpDef", "LawDef", "RefDef", "Kat", "DialectInfo", "Template", "ATOMIC_PLACEHOLDERS"]

# Placeholders the emitter fills in atomic op templates besides the op's own names:
# the element address (u64), the state space (".global" / ".shared") and the old value.
ATOMIC_PLACEHOLDERS = ("addr", "space", "old")


def _matches(when: Mapping[str, tuple[DataType, ...]] | None, binding: Mapping[str, DataType]) -> bool:
    return when is None or all(binding[var] in allowed for var, allowed in when.items())


@dataclass(frozen=True, slots=True)
class LawDef:
    law: str
    element: object = None  # raw value from the op file; encode per type with element_bits
    over: str | None = None
    when: Mapping[str, tuple[DataType, ...]] | None = None

    def applies(self, binding: Mapping[str, DataType]) -> bool:
        return _matches(self.when, binding)

    def element_bits(self, dtype: DataType) -> int:
        return encode(dtype, self.element)


@dataclass(frozen=True, slots=True)
class RefDef:
    """A reference implementation: exactly one of ``ufunc`` or ``kernel``."""

    ufunc: str | None = None
    kernel: str | None = None
    when: Mapping[str, tuple[DataType, ...]] | None = None

    def applies(self, binding: Mapping[str, DataType]) -> bool:
        return _matches(self.when, binding)


@dataclass(frozen=True, slots=True)
class Kat:
    """Known-answer rows for one binding: each row is (input bits..., expected output bits)."""

    binding: Binding
    attrs: tuple[tuple[str, int], ...]
    cases: tuple[tuple[int, ...], ...]
    note: str = ""


@dataclass(frozen=True, slots=True)
class Template:
    """PTX for one binding; ``temps`` maps temporary names to their concrete types."""

    text: str
    temps: tuple[tuple[str, DataType], ...]


@dataclass(frozen=True, slots=True)
class DialectInfo:
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
    category: str  # "intrinsic" | "composite"
    signature: OpSignature
    laws: tuple[LawDef, ...]
    references: tuple[RefDef, ...]
    compose: Expr | None
    compose_text: str | None
    templates: Mapping[Binding, Template]
    tolerance_ulp: Mapping[DataType, int]
    kats: tuple[Kat, ...]
    source: Path
    doc: str = ""
    _bindings: list[Binding] = field(default_factory=list, compare=False, repr=False)

    @property
    def is_atomic(self) -> bool:
        return self.signature.is_atomic

    def bindings(self) -> tuple[Binding, ...]:
        """Every allowed assignment of types to the op's type variables (one empty binding for
        an op without type variables)."""
        if not self._bindings:
            self._bindings.extend(itertools.product(*(allowed for _, allowed in self.signature.type_vars)))
        return tuple(self._bindings)

    def binding_map(self, binding: Binding) -> dict[str, DataType]:
        return dict(zip(self.signature.type_var_names(), binding))

    def input_types(self, binding: Binding) -> tuple[DataType, ...]:
        m = self.binding_map(binding)
        return tuple(self.signature.resolve(p.type, m) for p in self.signature.inputs)

    def output_type(self, binding: Binding) -> DataType:
        return self.signature.resolve(self.signature.output.type, self.binding_map(binding))

    def reference_for(self, binding: Binding) -> RefDef | None:
        """The first reference entry that applies; None means: evaluate ``compose``."""
        m = self.binding_map(binding)
        return next((r for r in self.references if r.applies(m)), None)

    def tolerance(self, dtype: DataType) -> int:
        """ULP budget for results of type ``dtype`` (0 = exact)."""
        return self.tolerance_ulp.get(dtype, 0)
