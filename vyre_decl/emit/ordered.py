"""Ordered atomics and bounded waits in PTX (docs/semantics.md, "Ordered atomics", "Bounded waits").

An order and a scope become the PTX memory-consistency qualifiers ``.sem.scope`` placed before the
state space: ``relaxed``, ``acquire``, ``release``, ``acq_rel`` and ``.cta`` (workgroup) or ``.gpu``
(device). So an atomic load is ``ld.acquire.gpu.global.u32``, an atomic store
``st.release.gpu.global.u32`` and an atomic op's template gets ``atom.acq_rel.gpu.global...`` through
its ``{space}`` placeholder. An atomic op without an order or scope keeps ``atom.global...``: an atom
without qualifiers is relaxed at .gpu scope (PTX ISA 6.0 on), so the PTX of every program written
before orders existed is unchanged. A load or store always carries them, since one without them is
a weak access that ptxas may merge or hoist out of a loop. Every target we emit for (sm_75 on, PTX
ISA 7.0 on) has them: they need sm_70 and PTX ISA 6.0, so no fallback (``ld.volatile`` and
``membar``) is needed.

A wait is a counted loop: the word read with ``ld.SEM.SCOPE`` until it differs from the value or
the bound's count of reads was made, the last value read its result (0 without a read when the
index is out of bounds). The simulator runs that loop as written, so it ends after at most the bound
however the blocks are scheduled.
"""

from __future__ import annotations

from typing import Final

from ..ir.nodes import MemoryOrder, MemoryScope
from ..ir.types import DataType
from .registers import _MEM_TYPE, _REG, _Lines

__all__ = ["qualifiers", "atom_qualifiers"]  # and the mixin with the wait loop (the emitter's base)

_SEM: Final = {MemoryOrder.RELAXED: ".relaxed", MemoryOrder.ACQUIRE: ".acquire", MemoryOrder.RELEASE: ".release",
               MemoryOrder.ACQ_REL: ".acq_rel"}
_SCOPE: Final = {MemoryScope.WORKGROUP: ".cta", MemoryScope.DEVICE: ".gpu"}


def qualifiers(order: MemoryOrder, scope: MemoryScope) -> str:
    """``.sem.scope`` for an atomic load, store or wait: always written."""
    return _SEM[order] + _SCOPE[scope]


def atom_qualifiers(order: MemoryOrder, scope: MemoryScope) -> str:
    """``.sem.scope`` for an atom instruction: nothing for relaxed at device scope (PTX's default)."""
    if order is MemoryOrder.RELAXED and scope is MemoryScope.DEVICE:
        return ""
    return qualifiers(order, scope)


class _OrderedMemory(_Lines):
    """The wait loop."""

    def wait_loop(self, ok: str, addr: str, space: str, t: DataType, value: str, bound: int,
                  order: MemoryOrder, scope: MemoryScope) -> str:
        """Read the ``t`` word at ``addr`` (when ``ok``) until it differs from the register ``value``,
        at most ``bound`` times; returns the register holding the last value read (0 without a read)."""
        out, left, again = self.reg(t), self.reg(DataType.U32), self.reg(DataType.BOOL)
        top, done = self.label("wait"), self.label("wait_end")
        kind = _REG[t][0]
        self.emit(f"mov.{kind} {out}, 0;")
        self.emit(f"@!{ok} bra {done};")
        self.emit(f"mov.u32 {left}, {bound};")
        self.place(top)
        self.emit(f"ld{qualifiers(order, scope)}{space}.{_MEM_TYPE[t]} {out}, [{addr}];")
        self.emit(f"setp.ne.{kind} {again}, {out}, {value};")
        self.emit(f"@{again} bra {done};")
        self.emit(f"sub.u32 {left}, {left}, 1;")
        self.emit(f"setp.ne.u32 {again}, {left}, 0;")
        self.emit(f"@{again} bra {top};")
        self.place(done)
        return out
