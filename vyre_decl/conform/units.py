"""Conformance units and their results: what a run is cut into (an op x type, a corpus program at
one size, a routine x type at one size), in the fixed order that sharding and merging rely on,
and what each unit reports (cases, laws, known answers, failures)."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from typing import Any, Sequence

from ..ir.signature import Binding
from ..registry import OpDef, Registry
from .corpus import CorpusProgram
from .routines import routine_unit_keys

__all__ = ["Unit", "UnitResult", "Failure", "PROGRAM_SIZES", "select_units", "types_key"]

PROGRAM_SIZES = (0, 1, 7, 64, 65, 1000, 4097)


@dataclass(frozen=True)
class Unit:
    key: str
    kind: str  # "op" | "program" | "routine"
    op: OpDef | None = None
    binding: Binding = ()
    program: CorpusProgram | None = None
    size: int = 0
    routine: Any = None  # (RoutineDef, its binding) of a routine unit


@dataclass
class Failure:
    kind: str
    message: str
    details: dict[str, Any] = field(default_factory=dict)
    capsule: str | None = None

    def as_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"kind": self.kind, "message": self.message}
        if self.details:
            d["details"] = self.details
        if self.capsule:
            d["capsule"] = self.capsule
        return d


@dataclass
class UnitResult:
    key: str
    cases: int = 0
    passed: int = 0
    laws_checked: int = 0
    laws_failed: int = 0
    kats: int = 0
    failures: list[Failure] = field(default_factory=list)
    accuracy: dict[str, Any] | None = None  # --accuracy: error against the true function on a sample

    @property
    def failed(self) -> int:
        return self.cases - self.passed

    @property
    def verdict(self) -> str:
        return "fail" if self.failures or self.failed or self.laws_failed else "pass"


def types_key(binding: Binding) -> str:
    return ",".join(t.value for t in binding)


def select_units(registry: Registry, corpus: Sequence[CorpusProgram], ops: Sequence[str] = (),
                 dialects: Sequence[str] = (), programs: bool = True, routines: Sequence[str] | None = (),
                 with_ops: bool = True) -> list[Unit]:
    """Every unit, in the fixed order that sharding and merging rely on."""
    units = []
    for op in registry if with_ops else ():
        if ops and not any(fnmatch.fnmatchcase(op.id, g) for g in ops):
            continue
        if dialects and op.dialect not in dialects:
            continue
        if registry.has_trait(op.id, "collective"):
            continue  # compared lane by lane it means nothing: programs with subgroups cover these ops
        for b in op.bindings():
            units.append(Unit(f"op:{op.id}[{types_key(b)}]", "op", op=op, binding=b))
    if programs:
        for entry in corpus:
            for size in PROGRAM_SIZES:
                units.append(Unit(f"program:{entry.name}@{size}", "program", program=entry, size=size))
    if routines is not None:  # None: no routines; () every routine; else the ids matching these globs
        for key, d, binding, size in routine_unit_keys(routines):
            units.append(Unit(key, "routine", size=size, routine=(d, binding)))
    return units
