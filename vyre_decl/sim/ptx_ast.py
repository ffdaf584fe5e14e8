"""The PTX syntax tree that ``ptx_parse`` builds and ``ptx_decode`` gives meaning to."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

__all__ = ["Reg", "Imm", "FImm", "Vec", "Addr", "Sym", "Pair", "Operand", "Instr", "Label", "Var", "Entry",
           "ModuleAst"]


@dataclass(slots=True, unsafe_hash=True)
class Reg:
    name: str  # a declared register, a special register (%tid.x) or '_' (the sink)
    negated: bool = False  # '!p' as a predicate source


@dataclass(slots=True, unsafe_hash=True)
class Imm:
    value: int  # an integer literal (negative allowed)


@dataclass(slots=True, unsafe_hash=True)
class FImm:
    bits: int  # 0fXXXXXXXX (width 32) / 0dXXXXXXXXXXXXXXXX (width 64) / a decimal literal (as f64 bits)
    width: int


@dataclass(slots=True, unsafe_hash=True)
class Vec:
    items: tuple["Operand", ...]


@dataclass(slots=True, unsafe_hash=True)
class Addr:
    base: str | None  # a register or variable name; None for an absolute address
    offset: int


@dataclass(slots=True, unsafe_hash=True)
class Sym:
    name: str  # a label or variable name used as a value
    offset: int = 0


@dataclass(slots=True, unsafe_hash=True)
class Pair:
    first: str  # p|q destinations of setp
    second: str


Operand = Union[Reg, Imm, FImm, Vec, Addr, Sym, Pair]


@dataclass(slots=True, unsafe_hash=True)
class Instr:
    line: int
    guard: tuple[str, bool] | None  # (predicate register, negated)
    opcode: str
    mods: tuple[str, ...]
    operands: tuple[Operand, ...]
    text: str
    context: str


@dataclass(slots=True, unsafe_hash=True)
class Label:
    line: int
    name: str


@dataclass(slots=True, unsafe_hash=True)
class Var:
    """A variable of a state space: name, element type, alignment and size in bytes."""

    line: int
    name: str
    ptype: str
    align: int
    nbytes: int
    extern: bool = False


@dataclass
class Entry:
    name: str
    line: int
    params: list[Var] = field(default_factory=list)
    regs: dict[str, str] = field(default_factory=dict)  # register -> type
    reg_decls: list[tuple[str, int]] = field(default_factory=list)  # (type, count) per declaration
    shared: list[Var] = field(default_factory=list)
    local: list[Var] = field(default_factory=list)
    body: list[Instr | Label] = field(default_factory=list)
    directives: dict[str, tuple[int, ...]] = field(default_factory=dict)  # .maxntid, .reqntid ...


@dataclass
class ModuleAst:
    version: tuple[int, int] = (0, 0)
    target: int = 0
    target_text: str = ""
    address_size: int = 64
    entries: list[Entry] = field(default_factory=list)
    shared: list[Var] = field(default_factory=list)  # module-scope .shared variables


