"""Private arrays in registers: an array the emitter can index without arithmetic gets one register
per element instead of a ``.local`` array.

An array qualifies (``promotable``) when it holds a word value type (u32 i32 f32 u64 i64 f64) and
every index of it (loads, stores, vector copies) is a literal or the counter of an enclosing
``unroll`` loop — which the emitter writes out with the counter a fresh register set to a literal,
so it knows every index by reading literals, never by evaluating an op. A load is then the
element's register, a store a ``mov`` into it (an index past the end loads 0 and stores nothing,
known when the PTX is written, so no run-time check is left), and a vector copy from workgroup or
global memory loads straight into the registers. ptxas does the same for the ``.local`` form when
it can fold the indices (docs/semantics.md); doing it here also keeps the PTX, and the simulated
device's work, small. Arrays indexed by anything else (``acc[r * 8u32 + c]``) stay ``.local``.
"""

from __future__ import annotations

from typing import Final, Sequence

from ..ir.nodes import Access, Block, BufferDecl, Copy, Expr, If, Lit, Load, Loop, Node, Program, Region, \
    Store, Var
from ..ir.types import DataType
from ..ir.walk import own_exprs, subexprs
from ..registry.templates import immediate
from .registers import _REG, _Lines

__all__ = ["promotable"]  # and the mixin of the emitter's register arrays

_WORDS: Final = frozenset({DataType.U32, DataType.I32, DataType.F32, DataType.U64, DataType.I64, DataType.F64})


def promotable(program: Program) -> frozenset[str]:
    """The private arrays of ``program`` that live in registers (see the module docstring)."""
    names = {b.name for b in program.buffers if b.access is Access.PRIVATE and b.dtype in _WORDS}
    bad: set[str] = set()

    def check(buffer: str, index: Expr, counters: frozenset[str]) -> None:
        if buffer in names and not (isinstance(index, Lit) or isinstance(index, Var) and index.name in counters):
            bad.add(buffer)

    def walk(body: Sequence[Node], counters: frozenset[str]) -> None:
        for n in body:
            for e in own_exprs(n):
                for x in subexprs(e):
                    if isinstance(x, Load):
                        check(x.buffer, x.index, counters)
            if isinstance(n, Store):
                check(n.buffer, n.index, counters)
            elif isinstance(n, Copy):
                check(n.dst, n.dst_index, counters)
                check(n.src, n.src_index, counters)
            elif isinstance(n, If):
                walk(n.then, counters)
                walk(n.otherwise, counters)
            elif isinstance(n, Loop):
                walk(n.body, counters | {n.var} if n.unroll else counters - {n.var})
            elif isinstance(n, (Block, Region)):
                walk(n.body, counters)

    if names:
        walk(program.body, frozenset())
    return frozenset(names - bad)


class _RegisterArrays(_Lines):
    """Register arrays: their zeroing, and element access at indices known when the PTX is written."""

    promoted: dict[str, list[str]] = {}  # array -> a register per element (set by promote)
    known: dict[str, int] = {}  # register -> the literal an unroll counter's register holds

    def promote(self, private: list[BufferDecl]) -> list[BufferDecl]:
        """Registers, zeroed, for the promotable arrays of ``private``; returns the others."""
        names = promotable(self.program)
        self.promoted, self.known = {}, {}
        for b in private:
            if b.name in names:
                regs = [self.reg(b.dtype) for _ in range(b.count)]
                for r in regs:
                    self.emit(f"mov.{_REG[b.dtype][0]} {r}, {immediate(b.dtype, 0)};")
                self.promoted[b.name] = regs
        return [b for b in private if b.name not in names]

    def counter(self, register: str, value: int) -> None:
        """An unroll counter's register holds ``value`` (for the indices of register arrays)."""
        if self.promoted:
            self.known[register] = value

    def known_index(self, e: Expr) -> int:
        """The value of a register array's index: a literal or an unroll counter (``promotable``)."""
        if isinstance(e, Lit):
            value = e.value
        else:
            assert isinstance(e, Var)
            value = self.known[self.vars[e.name][0]]
        assert isinstance(value, int)
        return value

    def element(self, buffer: str, index: int) -> str | None:
        """The register of element ``index`` of a register array (None past its end)."""
        regs = self.promoted[buffer]
        return regs[index] if 0 <= index < len(regs) else None

    def promoted_load(self, e: Load) -> tuple[str, DataType, bool]:
        r = self.element(e.buffer, self.known_index(e.index))
        t = self.buffers[e.buffer].dtype
        if r is not None:
            return r, t, False
        zero = self.reg(t)
        self.emit(f"mov.{_REG[t][0]} {zero}, {immediate(t, 0)};")
        return zero, t, True

    def promoted_store(self, buffer: str, index: int, value: str) -> None:
        r = self.element(buffer, index)
        if r is not None:
            self.emit(f"mov.{_REG[self.buffers[buffer].dtype][0]} {r}, {value};")
