"""Private arrays in PTX: each invocation's ``.local`` array, zeroed before the body runs, and the
loads and stores of its elements.

The layout is chosen so that ptxas can keep an array in registers once every index has become a
constant: ptxas (measured with CUDA 13.0's and 13.5's, sm_75 and sm_90) promotes a local array accessed in 16-
and 32-bit words, and keeps in memory (a stack frame) one accessed in bytes or in 64-bit words. So
an element of 8 bits is a 32-bit word holding its value widened (narrowed first, as a store
narrows), and an element of 64 bits two 32-bit words, low word first; every other element is
accessed as itself. The meaning is the buffer's (docs/semantics.md): only the layout differs.
An array of a word type indexed only by literals and unroll counters takes no ``.local`` memory:
``promote.py`` gives it a register per element (zeroed here, with the others).
"""

from __future__ import annotations

from typing import Final

from ..ir.nodes import BufferDecl
from ..ir.types import DataType
from ..ir.unrolling import MAX_UNROLL_COPIES
from .promote import _RegisterArrays
from .ranges import at
from .registers import _MEM_TYPE, _REG

__all__ = ["private_slot", "private_bytes"]  # and the mixin of the emitter's private-array code

_WIDENED: Final = (DataType.U8, DataType.I8)  # kept in a 32-bit word of their value type
_SPLIT: Final = (DataType.U64, DataType.I64, DataType.F64)  # kept as two 32-bit words


def private_slot(b: BufferDecl) -> DataType:
    """The type one element of private array ``b`` is kept as: a word of its value type for an 8-bit
    element, else its storage type (a 64-bit one is then accessed as two 32-bit words)."""
    return b.dtype.value_type if b.dtype in _WIDENED else b.dtype


def private_bytes(b: BufferDecl) -> int:
    """The size of private array ``b``'s ``.local`` array, in whole 32-bit words."""
    return -(-(b.count * private_slot(b).size) // 4) * 4


class _PrivateMemory(_RegisterArrays):
    """Zeroing private arrays, and the loads and stores whose layout differs from the buffer's."""

    def _zero_private(self, private: list[BufferDecl]) -> None:
        """Each private array zeroed by its own invocation: a small one (at most MAX_UNROLL_COPIES
        elements) by stores at constant offsets, in the words it is accessed in, so that it can live
        in registers; a larger one by a loop over its 32-bit words."""
        self.comment("zero the private arrays (each invocation its own)")
        private = self.promote(private)  # those indexed by literals and unroll counters: registers (promote.py)
        for b in private:
            base = self.reg(DataType.U32)
            self.emit(f"mov.u32 {base}, pv_{b.name};")
            self.base[b.name] = base
            if b.count <= MAX_UNROLL_COPIES:
                unit = 2 if private_slot(b).size == 2 else 4
                for offset in range(0, private_bytes(b), unit):
                    self.emit(f"st.local.b{unit * 8} [{base}+{offset}], 0;")
                continue
            i, p, a = self.reg(DataType.U32), self.reg(DataType.BOOL), self.reg(DataType.U32)
            top, done = self.label("zero_private"), self.label("zeroed_private")
            self.emit(f"mov.u32 {i}, 0;")
            self.place(top)
            self.emit(f"setp.ge.u32 {p}, {i}, {private_bytes(b)};")
            self.emit(f"@{p} bra {done};")
            self.emit(f"add.u32 {a}, {base}, {i};")
            self.emit(f"st.local.u32 [{a}], 0;")
            self.emit(f"add.u32 {i}, {i}, 4;")
            self.emit(f"bra {top};")
            self.place(done)

    def private_load(self, decl: BufferDecl, p: str, a: str) -> str | None:
        """The register loaded from element address ``a`` under predicate ``p`` (0 where it does not
        hold), or None where the element is accessed as itself (the emitter's usual load)."""
        st, vt = decl.dtype, decl.dtype.value_type
        if st in _WIDENED:
            out = self.reg(vt)
            self.emit(f"mov.{_REG[vt][0]} {out}, 0;")
            self.emit(f"{at(p)}ld.local.{_MEM_TYPE[vt]} {out}, [{a}];")
            return out
        if st not in _SPLIT:
            return None
        lo, hi, out = self.reg(DataType.U32), self.reg(DataType.U32), self.reg(vt)
        self.emit(f"mov.u32 {lo}, 0;")
        self.emit(f"mov.u32 {hi}, 0;")
        self.emit(f"{at(p)}ld.local.u32 {lo}, [{a}];")
        self.emit(f"{at(p)}ld.local.u32 {hi}, [{a}+4];")
        self.emit(f"mov.b64 {out}, {{{lo}, {hi}}};")
        return out

    def private_store(self, decl: BufferDecl, p: str, a: str, val: str) -> bool:
        """Store ``val`` to element address ``a`` under ``p`` where the element is not accessed as
        itself; False where it is (the emitter's usual store)."""
        st = decl.dtype
        if st in _WIDENED:  # the word holds the value narrowed to 8 bits, widened back
            vt = st.value_type
            w = self.reg(vt)
            self.emit(f"cvt.{_MEM_TYPE[vt]}.{_MEM_TYPE[st]} {w}, {val};")
            self.emit(f"{at(p)}st.local.{_MEM_TYPE[vt]} [{a}], {w};")
            return True
        if st not in _SPLIT:
            return False
        lo, hi = self.reg(DataType.U32), self.reg(DataType.U32)
        self.emit(f"mov.b64 {{{lo}, {hi}}}, {val};")
        self.emit(f"{at(p)}st.local.u32 [{a}], {lo};")
        self.emit(f"{at(p)}st.local.u32 [{a}+4], {hi};")
        return True
