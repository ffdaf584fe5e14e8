"""``ops laws --suggest``: catalogue laws that hold on the reference but are neither declared nor waived.

For every binding of an op, every law of the catalogue that fits it is tried: element laws with
every symbolic element (``scalars.ELEMENTS``) of the right type, distributive laws over every
binary, non-atomic op of the same dialect that maps two values of the type to one. Candidates
are screened on few cases, then confirmed on witnesses and seeded random values. A law is left
out when a stronger law that holds implies it, or when the op declares it (a declared law covers
the laws it implies; a law is also covered when all the laws it implies are), or waives it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Iterator

from ..conform.laws import check_law
from ..conform.witnesses import random_bits, witnesses
from ..ir.scalars import CANONICAL_NAN, ELEMENTS, ScalarError, decode, element_bits
from ..ir.signature import Binding, SignatureError
from ..ir.types import DataType
from ..registry import OpDef, Registry
from ..registry.laws import CATALOGUE, format_law, law_fits
from ..registry.model import LawDef
from ..registry.typesets import describe_types
from .check import reference_evaluator, seeded_rng

__all__ = ["Suggestion", "suggest_laws"]

_SCREEN_LIMIT = 600


@dataclass(frozen=True)
class Suggestion:
    op: str
    law: str  # as it would be written in the op file, with its @types
    bindings: tuple[Binding, ...]


@dataclass(frozen=True)
class _Candidate:
    law: str
    arg: str | None  # element spelling or op id
    bits: int | None  # the element's bits for this binding

    def key(self) -> tuple[str, str | int | None]:
        return (self.law, self.bits if self.bits is not None else self.arg)


def _candidates(registry: Registry, op: OpDef, binding: Binding) -> Iterator[_Candidate]:
    operands = op.input_types(binding)
    result = op.output_type(binding)
    for kind in CATALOGUE.values():
        if law_fits(kind, operands, result) is not None:
            continue
        if kind.element is not None:
            et = result if kind.element == "result" else operands[0]
            seen: set[int] = set()
            for name in ELEMENTS:
                try:
                    bits = _canonical(et, element_bits(et, name))
                except ScalarError:
                    continue
                if bits not in seen:
                    seen.add(bits)
                    nan = et.is_float and bits == CANONICAL_NAN[et]
                    yield _Candidate(kind.name, "nan" if nan else name, bits)
        elif kind.over:
            for other in registry:
                if other.dialect != op.dialect or other.is_atomic or len(other.signature.inputs) != 2 or \
                        registry.has_trait(other.id, "collective") or \
                        any(a.default is None for a in other.signature.attrs):
                    continue
                try:
                    if other.signature.bind([result, result])[1] is not result:
                        continue
                except SignatureError:
                    continue
                yield _Candidate(kind.name, other.id, None)
        else:
            yield _Candidate(kind.name, None, None)


def _canonical(dtype: DataType, bits: int) -> int:
    """Element bits with every NaN as the canonical NaN: the checks treat all NaNs as equal."""
    if dtype.is_float and math.isnan(decode(dtype, bits)):
        return CANONICAL_NAN[dtype]
    return bits


def _declared(op: OpDef, binding: Binding) -> set[tuple[str, str | int | None]]:
    """Keys of the laws the op declares for ``binding``, with the laws they imply."""
    m = op.binding_map(binding)
    operands, result = op.input_types(binding), op.output_type(binding)
    out = set()
    for law in op.laws:
        if not law.applies(m):
            continue
        kind = CATALOGUE[law.law]
        arg: str | int | None = law.over
        if law.element is not None:
            et = result if kind.element == "result" else operands[0]
            arg = _canonical(et, law.element_bits(et))
        for name in (law.law, *kind.implies):
            out.add((name, arg))
    return out


def _covered(key: tuple[str, str | int | None], declared: set[tuple[str, str | int | None]], op: OpDef) -> bool:
    name, arg = key
    if key in declared or name in op.waivers:
        return True
    implied = CATALOGUE[name].implies
    return bool(implied) and all(_covered((n, arg), declared, op) for n in implied)


def suggest_for_binding(registry: Registry, op: OpDef, binding: Binding, seed: int = 1) -> list[_Candidate]:
    types = op.input_types(binding)
    if not types or any(a.default is None for a in op.signature.attrs):
        return []
    evaluate = reference_evaluator(registry)
    key = f"{op.id}[{','.join(t.value for t in binding)}]"
    samples = witnesses(types[0]) + random_bits(types[0], 16, seeded_rng(seed, key))
    holding = []
    for cand in _candidates(registry, op, binding):
        law = LawDef(cand.law, cand.arg if cand.bits is not None else None,
                     cand.arg if cand.bits is None else None, None, format_law(cand.law, cand.arg))
        if not check_law(op, binding, law, evaluate, samples, registry, _SCREEN_LIMIT).holds:
            continue
        if check_law(op, binding, law, evaluate, samples, registry).holds:
            holding.append(cand)
    keys = {c.key() for c in holding}
    declared = _declared(op, binding)
    out = []
    for c in holding:
        stronger = any(c.law in CATALOGUE[k[0]].implies and k[1] == c.key()[1] for k in keys)
        if not stronger and not _covered(c.key(), declared, op):
            out.append(c)
    return out


def suggest_laws(registry: Registry, ops: Iterable[OpDef], seed: int = 1) -> list[Suggestion]:
    """Every law of the catalogue that holds for ``ops`` on the reference and is not declared."""
    result = []
    for op in ops:
        if registry.has_trait(op.id, "collective"):
            continue  # laws of a collective op hold over subgroups, not lane by lane
        found: dict[tuple[str, str | None], list[Binding]] = {}
        for b in op.bindings():
            for c in suggest_for_binding(registry, op, b, seed):
                found.setdefault((c.law, c.arg), []).append(b)
        names = op.signature.type_var_names()
        for (law, arg), bindings in found.items():
            if set(bindings) == set(op.bindings()):
                result.append(Suggestion(op.id, format_law(law, arg), tuple(bindings)))
            elif len(names) == 1:
                result.append(Suggestion(op.id, format_law(law, arg, describe_types([b[0] for b in bindings])),
                                         tuple(bindings)))
            else:  # several type variables: one restriction per binding
                for b in bindings:
                    when = "; ".join(f"{v}={t.value}" for v, t in zip(names, b))
                    result.append(Suggestion(op.id, format_law(law, arg, when), (b,)))
    return result
