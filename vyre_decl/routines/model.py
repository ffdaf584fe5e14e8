"""What a routine file declares, after validation: kernels, buffers, steps and known answers."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from ..ir.types import DataType
from .sizes import SizeExpr

__all__ = ["KernelDef", "BufferSpec", "StepDef", "RoutineDef", "Role"]

Role = Literal["in", "out", "temp"]


@dataclass(frozen=True)
class KernelDef:
    """A kernel in the text form, written once for every binding of the routine's type variables;
    ``$name`` in the source stands for the parameter ``name`` that each routine supplies."""

    name: str
    summary: str
    params: tuple[str, ...]
    source: str
    family: str


@dataclass(frozen=True)
class BufferSpec:
    """One buffer of a routine: an input, an output or a temporary, its element type (a type
    variable or a value type) and, unless it is an input, its element count."""

    name: str
    role: Role
    dtype: str
    size: SizeExpr | None  # None: an input, sized by the caller's array


@dataclass(frozen=True)
class StepDef:
    """One launch: a kernel, the routine buffers bound to its buffers in declaration order, and the
    number of workgroups."""

    kernel: str
    args: tuple[str, ...]
    grid: SizeExpr


@dataclass(frozen=True)
class RoutineDef:
    """A validated routine: ``types`` binds each type variable to the value types it takes."""

    id: str
    summary: str
    doc: str
    types: dict[str, tuple[DataType, ...]]
    params: dict[str, str]
    buffers: tuple[BufferSpec, ...]
    steps: tuple[StepDef, ...]
    kats: tuple[tuple[frozenset[DataType] | None, tuple[Any, ...]], ...]
    kernels: dict[str, KernelDef]
    file: str
    attrs: dict[str, int] = field(default_factory=dict)

    @property
    def inputs(self) -> tuple[BufferSpec, ...]:
        return tuple(b for b in self.buffers if b.role == "in")

    @property
    def outputs(self) -> tuple[BufferSpec, ...]:
        return tuple(b for b in self.buffers if b.role == "out")

    def bindings(self) -> list[dict[str, DataType]]:
        """Every binding of the type variables (one type variable today: a list of its types)."""
        (var, types), = self.types.items() if self.types else (("T", ()),)
        return [{var: t} for t in types] if self.types else [{}]
