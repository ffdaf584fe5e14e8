"""What a routine file declares, after validation: kernels, buffers, steps and known answers."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Iterator, Literal

from ..ir.types import DataType
from .sizes import SizeExpr

__all__ = ["KernelDef", "BufferSpec", "StepDef", "RepeatDef", "KatCase", "RoutineDef", "Role"]

Role = Literal["in", "out", "temp", "const"]


@dataclass(frozen=True)
class KernelDef:
    """A kernel in the text form, written once for every binding of the routine's type variables;
    ``$name`` in the source stands for the parameter ``name`` that each routine supplies."""

    name: str
    summary: str
    params: tuple[str, ...]
    source: str
    family: str
    file: str = ""
    line: int = 1  # the line of the file where the source starts (kernel errors give file:line:col)
    # each parameter's uses in the source (params.KINDS: op, atomic, element, type, value)
    uses: tuple[tuple[str, frozenset[str]], ...] = ()

    @property
    def qualified(self) -> str:
        return f"{self.family}.{self.name}"


@dataclass(frozen=True)
class BufferSpec:
    """One buffer of a routine: an input, an output, a temporary or a constant, its element type (a
    type variable or a value type) and, unless it is an input, its element count. A constant holds
    the values of its expressions (``values``), evaluated before the call."""

    name: str
    role: Role
    dtype: str
    size: SizeExpr | None  # None: an input, sized by the caller's array
    values: tuple[SizeExpr, ...] = ()


@dataclass(frozen=True)
class StepDef:
    """One launch: a kernel (of the file, or ``family.kernel``), the routine buffers bound to its
    buffers in declaration order, the number of workgroups, and the kernel's type variables bound
    to a routine type variable or a type where they differ from the routine's (``types``), and
    parameters that differ from the routine's ``with`` (``params``)."""

    kernel: str
    args: tuple[str, ...]
    grid: SizeExpr
    types: tuple[tuple[str, str], ...] = ()
    params: tuple[tuple[str, str], ...] = ()
    where: str = field(default="", compare=False)  # the field of the file: steps[2], steps[1].steps[0], ...


@dataclass(frozen=True)
class RepeatDef:
    """Steps run ``count`` times in a row (the passes of a radix sort)."""

    count: SizeExpr
    steps: tuple[StepDef | RepeatDef, ...]
    where: str = field(default="", compare=False)


@dataclass(frozen=True)
class KatCase:
    """A known answer: input and expected output arrays (as lists), the attributes of the call,
    and the types of the first type variable it applies to (None: every binding)."""

    within: frozenset[DataType] | None
    inputs: tuple[Any, ...]
    outputs: tuple[Any, ...]
    attrs: dict[str, int]
    where: str = field(default="", compare=False)  # the field of the file: kat[2], kat.float[0], ...


@dataclass(frozen=True)
class RoutineDef:
    """A validated routine: ``types`` binds each type variable to the value types it takes;
    ``attrs`` are the integer attributes a caller gives by keyword; each of ``requires`` must hold
    (be nonzero) for a call; the steps write every element of the ``written`` buffers before
    reading it, so a replay need not zero them."""

    id: str
    summary: str
    doc: str
    types: dict[str, tuple[DataType, ...]]
    params: dict[str, str]
    buffers: tuple[BufferSpec, ...]
    steps: tuple[StepDef | RepeatDef, ...]
    kats: tuple[KatCase, ...]
    kernels: dict[str, KernelDef]
    file: str
    attrs: tuple[str, ...] = ()
    requires: tuple[SizeExpr, ...] = ()
    sample: dict[str, SizeExpr] = field(default_factory=dict)  # conformance: input lengths and attributes from N
    written: frozenset[str] = frozenset()  # outputs/temporaries the steps fill before reading: not zeroed on replay

    @property
    def inputs(self) -> tuple[BufferSpec, ...]:
        return tuple(b for b in self.buffers if b.role == "in")

    @property
    def outputs(self) -> tuple[BufferSpec, ...]:
        return tuple(b for b in self.buffers if b.role == "out")

    def bindings(self) -> list[dict[str, DataType]]:
        """Every binding of the type variables (the product of their type sets)."""
        names = list(self.types)
        return [dict(zip(names, combo)) for combo in itertools.product(*(self.types[v] for v in names))]

    def all_steps(self) -> Iterator[StepDef]:
        """Every step declared, each once (repeats not unrolled)."""
        stack = list(reversed(self.steps))
        while stack:
            s = stack.pop()
            if isinstance(s, RepeatDef):
                stack.extend(reversed(s.steps))
            else:
                yield s

