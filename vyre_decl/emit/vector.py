"""Vectorised maps: a second entry, ``<entry>_v4``, for map-shaped programs, in which each
invocation handles four consecutive elements with 128-bit loads and stores.

A program is map-shaped (``map_shape``) when each invocation touches only its own element: a 1-D
workgroup; ``gid.x`` the only id it reads; no atomics, barriers or workgroup memory; every store
at index ``gid.x`` (directly or through a ``let`` of it that is never reassigned); the buffers
accessed there hold 4-byte elements (u32, i32, f32); any other load reads a buffer nothing
writes. Nothing here knows an op: the shape is structure only.

The vector entry, for invocation g and elements 4g .. 4g+3:

* if every buffer accessed at the element index holds more than 4g+3 elements and all of them
  start at 16-byte aligned addresses, it loads each loaded buffer's four elements with one
  ``ld.global.v4`` (``.nc`` for buffers nothing writes), runs the body once per element on
  registers (a store sets that element's register and marks it written; a later load of the
  same element reads it back), then stores each written buffer with one ``st.global.v4`` — or,
  if some element was not written and its old value was not loaded, element by element;
* otherwise it runs the scalar body for the four elements in turn (the tail, misaligned
  memory), with every bounds rule of the semantics.

The grid of the vector entry is a quarter of the scalar one (``abi.VECTOR_LANES``); a backend
uses it only for an inferred grid, or an explicit one equal to it (then the same invocations have
an effect); any other explicit grid keeps the scalar entry's meaning of gid.x.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir.nodes import (
    Assign,
    Barrier,
    Copy,
    Expr,
    Id,
    IdKind,
    Let,
    Load,
    Loop,
    Program,
    Store,
    Var,
)
from ..ir.ordering import uses_ordering
from ..ir.types import DataType
from ..ir.walk import body_exprs, statements
from .abi import VECTOR_LANES
from ..registry import Registry
from .prologue import uses_collectives
from .ptx import _Emitter
from .registers import _MEM_TYPE, _REG

__all__ = ["MapShape", "map_shape", "VectorEmitter"]

_VECTOR_TYPES = frozenset({DataType.U32, DataType.I32, DataType.F32})


@dataclass(frozen=True)
class MapShape:
    """What the vector entry needs to know: the names bound to gid.x, the buffers loaded and
    stored at the element index, and the buffers nothing writes."""

    index_names: frozenset[str]
    loaded: tuple[str, ...]
    stored: tuple[str, ...]
    read_only: frozenset[str]

    @property
    def accessed(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(self.loaded + self.stored))


def map_shape(program: Program, registry: Registry | None = None) -> MapShape | None:
    """The program's map shape, or None when it is not map-shaped (see the module docstring). With
    a registry, a program calling collective ops is not map-shaped either: an invocation handling
    four elements would change which elements share a subgroup."""
    if program.workgroup_size[1:] != (1, 1):
        return None
    if registry is not None and uses_collectives(program, registry):
        return None
    buffers = {b.name: b for b in program.buffers}
    if any(b.access.is_scratch for b in program.buffers):  # a private array is each invocation's: one per element
        return None
    exprs = list(body_exprs(program.body))
    if uses_ordering(program):  # atomics, atomic loads and stores, waits: each element's access is the program's
        return None
    if any(isinstance(e, Id) and (e.kind is not IdKind.GLOBAL or e.axis != 0) for e in exprs):
        return None
    nodes = list(statements(program.body))
    if any(isinstance(n, (Barrier, Copy)) for n in nodes):  # a vector copy moves other elements than its own
        return None
    gid = Id(IdKind.GLOBAL, 0)
    names = frozenset(n.name for n in program.body if isinstance(n, Let) and n.value == gid)
    if any(isinstance(n, (Let, Assign)) and n.name in names and not (isinstance(n, Let) and n.value == gid
                                                                       and n in program.body) for n in nodes):
        return None  # a name of the index rebound, or bound in a nested scope
    if any(isinstance(n, Loop) and n.var in names for n in nodes):
        return None

    def at_index(e: Expr) -> bool:
        return e == gid or (isinstance(e, Var) and e.name in names)

    stores = [n for n in nodes if isinstance(n, Store)]
    if not stores or not all(at_index(n.index) for n in stores):
        return None
    written = {n.buffer for n in stores}
    loads = [e for e in exprs if isinstance(e, Load)]
    if any(e.view is not None for e in loads):
        return None  # a byte view's elements are not the buffer's: not a map of its elements
    if any(not at_index(e.index) and e.buffer in written for e in loads):
        return None  # another invocation's element of a buffer being written: not a map
    loaded = tuple(dict.fromkeys(e.buffer for e in loads if at_index(e.index)))
    stored = tuple(dict.fromkeys(n.buffer for n in stores))
    if any(buffers[b].dtype not in _VECTOR_TYPES for b in loaded + stored):
        return None
    read_only = frozenset(b.name for b in program.buffers if b.name not in written)
    return MapShape(names, loaded, stored, read_only)


class VectorEmitter(_Emitter):
    """The emitter of the ``_v4`` entry: the body four times on registers, between vector loads
    and stores, with the scalar body for the tail."""

    def __init__(self, program: Program, registry: object, target: object, shape: MapShape) -> None:
        super().__init__(program, registry, target)  # type: ignore[arg-type]
        self.shape = shape
        self.lane: int | None = None  # the element being computed on registers, or None: scalar
        self.values: dict[str, list[str]] = {}  # buffer -> the four elements' registers
        self.written: dict[str, list[str]] = {}  # stored buffer -> the four "written" predicates
        self.true = ""  # a predicate register holding true

    def vector_body(self) -> None:
        shape, gid = self.shape, self.ids[(IdKind.GLOBAL, 0)]
        first, last = self.reg(DataType.U32), self.reg(DataType.U32)
        self.comment(f"invocation g handles elements 4g .. 4g+3: vector path when all {len(shape.accessed)} "
                     "buffers hold them and are 16-byte aligned")
        self.emit(f"shl.b32 {first}, {gid}, 2;")
        self.emit(f"add.u32 {last}, {first}, {VECTOR_LANES - 1};")
        scalar = self.label("scalar")
        self.emit(f"@!{self._vector_ok(last)} bra {scalar};")
        address = self._vector_load(first)
        for lane in range(VECTOR_LANES):
            self.run_element(first, lane, f"body (element 4g+{lane}, on registers)")
        self.lane = None
        self._vector_store(address)
        self.emit("bra $L_exit;")
        self.place(scalar)
        for lane in range(VECTOR_LANES):
            self.lane = None
            self.run_element(first, lane, f"body (element 4g+{lane}, scalar)", vector=False)

    def _vector_ok(self, last: str) -> str:
        """A predicate: every accessed buffer holds element ``last`` and is 16-byte aligned."""
        ok, p = self.reg(DataType.BOOL), self.reg(DataType.BOOL)
        bits = self.reg(DataType.U64)
        self.emit(f"mov.u64 {bits}, 0;")
        for i, name in enumerate(self.shape.accessed):
            self.emit(f"setp.lt.u32 {ok if i == 0 else p}, {last}, {self.length[name]};")
            if i:
                self.emit(f"and.pred {ok}, {ok}, {p};")
            self.emit(f"or.b64 {bits}, {bits}, {self.base[name]};")
        self.emit(f"and.b64 {bits}, {bits}, 15;")
        self.emit(f"setp.eq.u64 {p}, {bits}, 0;")
        self.emit(f"and.pred {ok}, {ok}, {p};")
        return ok

    def _vector_load(self, first: str) -> dict[str, str]:
        """The four elements from ``first`` of each loaded buffer into registers, and cleared
        written flags for each stored one; returns each accessed buffer's address register."""
        shape = self.shape
        offset = self.reg(DataType.U64)
        self.emit(f"mul.wide.u32 {offset}, {first}, 4;")
        address = {}
        for name in shape.accessed:
            a = self.reg(DataType.U64)
            self.emit(f"add.u64 {a}, {self.base[name]}, {offset};")
            address[name] = a
        self.true, false = self.reg(DataType.BOOL), self.reg(DataType.BOOL)
        self.emit(f"setp.eq.u32 {self.true}, {first}, {first};")
        self.emit(f"setp.ne.u32 {false}, {first}, {first};")
        for name in shape.accessed:
            t = self.buffers[name].dtype
            regs = [self.reg(t) for _ in range(VECTOR_LANES)]
            self.values[name] = regs
            if name in shape.loaded:
                nc = ".nc" if name in shape.read_only else ""
                self.emit(f"ld.global{nc}.v4.{_MEM_TYPE[t]} {{{', '.join(regs)}}}, [{address[name]}];")
        for name in shape.stored:
            flags = [self.reg(DataType.BOOL) for _ in range(VECTOR_LANES)]
            for f in flags:
                self.emit(f"mov.pred {f}, {false};")
            self.written[name] = flags
        return address

    def _vector_store(self, address: dict[str, str]) -> None:
        """Each stored buffer's four registers back: one vector store when all four were written
        (or the buffer was loaded), else each written element alone."""
        shape = self.shape
        for name in shape.stored:
            regs, t = self.values[name], self.buffers[name].dtype
            vector = f"st.global.v4.{_MEM_TYPE[t]} [{address[name]}], {{{', '.join(regs)}}};"
            if name in shape.loaded:  # unwritten elements hold their loaded value: store all four
                self.emit(vector)
                continue
            every = self.reg(DataType.BOOL)
            flags = self.written[name]
            self.emit(f"and.pred {every}, {flags[0]}, {flags[1]};")
            for f in flags[2:]:
                self.emit(f"and.pred {every}, {every}, {f};")
            self.emit(f"@{every} {vector}")
            for lane, f in enumerate(flags):  # not all four written: each written one alone
                only = self.reg(DataType.BOOL)
                self.emit(f"not.pred {only}, {every};")
                self.emit(f"and.pred {only}, {only}, {f};")
                self.emit(f"@{only} st.global.{_MEM_TYPE[t]} [{address[name]}+{4 * lane}], {regs[lane]};")

    def run_element(self, first: str, lane: int, path: str, vector: bool = True) -> None:
        """The body for element ``first + lane``; on registers when ``vector``."""
        index = self.reg(DataType.U32)
        self.emit(f"add.u32 {index}, {first}, {lane};")
        self.ids[(IdKind.GLOBAL, 0)] = index
        self.lane = lane if vector else None
        self.exit_label = self.label("element_done")
        self.body(self.program.body, path)
        self.place(self.exit_label)

    def at_index(self, e: Expr) -> bool:
        return (isinstance(e, Id) and e.kind is IdKind.GLOBAL and e.axis == 0) or (
            isinstance(e, Var) and e.name in self.shape.index_names)

    def load(self, e: Load) -> tuple[str, DataType, bool]:
        if self.lane is not None and self.at_index(e.index):
            return self.values[e.buffer][self.lane], self.buffers[e.buffer].dtype.value_type, False
        return super().load(e)

    def store(self, n: Store) -> None:
        if self.lane is None or not self.at_index(n.index):
            super().store(n)
            return
        val, t, _ = self.expr(n.value)
        self.emit(f"mov.{_REG[t][0]} {self.values[n.buffer][self.lane]}, {val};")
        self.emit(f"mov.pred {self.written[n.buffer][self.lane]}, {self.true};")
