"""The kernel's prologue in PTX: buffer addresses and lengths from the parameters, the invocation
ids the body reads, zeroed private arrays and workgroup memory, and the subgroup registers (lane
id, the warp's existing lanes) of a program that calls collective ops."""

from __future__ import annotations

from typing import Final

from ..ir.diagnostics import VyreError
from ..ir.nodes import AXES, Access, Atomic, BufferDecl, BufLen, Copy, Id, IdKind, Load, Op, Program, Store, Wait
from ..ir.subgroup import SUBGROUP_SIZE
from ..ir.wgmem import live_workgroup_arrays
from ..ir.types import DataType
from ..ir.walk import body_exprs, statements
from ..registry import Registry
from .abi import kernel_abi, shared_words
from .byteview import view_prologue
from .private import _PrivateMemory
from .wgmem import shared_address

__all__ = ["uses_collectives"]  # and the prologue class, the emitter's base (emit/ptx.py)

FULL_MASK: Final = "0xffffffff"  # the member mask of a whole warp, as a PTX literal


def uses_collectives(program: Program, registry: Registry) -> bool:
    """Whether ``program`` calls a collective op (docs/semantics.md, "Subgroups")."""
    ids = {e.op for e in body_exprs(program.body) if isinstance(e, Op)}
    return any(registry.has_trait(i, "collective") for i in ids if i in registry)


class _Prologue(_PrivateMemory):
    """The entry's first lines, before the body: what every statement of the body reads."""

    # --- prologue: addresses, lengths, ids, zeroed workgroup memory
    def prologue(self) -> None:
        self._buffer_params()
        view_prologue(self)
        self._ids()
        if uses_collectives(self.program, self.registry):
            self.subgroup_prologue()
        private = [b for b in self.program.buffers if b.access is Access.PRIVATE]
        if private:
            self._zero_private(private)
        live = live_workgroup_arrays(self.program)  # an array nothing that may run touches is left out
        shared = [b for b in self.program.buffers if b.access is Access.WORKGROUP and b.name in live]
        if shared:
            self._zero_shared(shared)

    def _buffer_params(self) -> None:
        """The address (global) and element count of each buffer the body uses, from the parameters."""
        used = {b for b in self._buffers_used()}
        for param in kernel_abi(self.program).params:
            decl = self.buffers[param.buffer]
            if param.kind != "ptr" or decl.name not in used:
                continue
            base = self.reg(DataType.U64)
            self.emit(f"ld.param.u64 {base}, [p_{decl.name}];")
            self.emit(f"cvta.to.global.u64 {base}, {base};")
            n = self.reg(DataType.U32)
            self.emit(f"ld.param.u32 {n}, [n_{decl.name}];")
            self.base[decl.name], self.length[decl.name] = base, n

    def _ids(self) -> None:
        """A register for each (kind, axis) of invocation id the body reads."""
        ids = sorted({(e.kind, e.axis) for e in body_exprs(self.program.body) if isinstance(e, Id)},
                     key=lambda k: (k[0].value, k[1]))
        for kind, axis in ids:
            ax = AXES[axis]
            r = self.reg(DataType.U32)
            if kind is IdKind.LOCAL:
                self.emit(f"mov.u32 {r}, %tid.{ax};")
            elif kind is IdKind.WORKGROUP:
                self.emit(f"mov.u32 {r}, %ctaid.{ax};")
            else:
                c, n = self.reg(DataType.U32), self.reg(DataType.U32)
                self.emit(f"mov.u32 {c}, %ctaid.{ax};")
                self.emit(f"mov.u32 {n}, %ntid.{ax};")
                self.emit(f"mov.u32 {r}, %tid.{ax};")
                self.emit(f"mad.lo.u32 {r}, {c}, {n}, {r};")
            self.ids[(kind, axis)] = r

    def _zero_shared(self, shared: list[BufferDecl]) -> None:
        """Every word of the workgroup buffers zeroed by the workgroup's threads, then a barrier."""
        self.comment("zero the workgroup buffers, then wait for the whole workgroup")
        lin, size, t = self.reg(DataType.U32), self.reg(DataType.U32), self.reg(DataType.U32)
        self.emit(f"mov.u32 {lin}, %tid.z;")
        self.emit(f"mov.u32 {t}, %ntid.y;")
        self.emit(f"mov.u32 {size}, %tid.y;")
        self.emit(f"mad.lo.u32 {lin}, {lin}, {t}, {size};")
        self.emit(f"mov.u32 {t}, %ntid.x;")
        self.emit(f"mov.u32 {size}, %tid.x;")
        self.emit(f"mad.lo.u32 {lin}, {lin}, {t}, {size};")
        self.emit(f"mov.u32 {size}, %ntid.x;")
        self.emit(f"mov.u32 {t}, %ntid.y;")
        self.emit(f"mul.lo.u32 {size}, {size}, {t};")
        self.emit(f"mov.u32 {t}, %ntid.z;")
        self.emit(f"mul.lo.u32 {size}, {size}, {t};")
        zero = self.reg(DataType.U32)
        self.emit(f"mov.u32 {zero}, 0;")
        for b in shared:
            addr = self.reg(DataType.U32)
            for line in shared_address(self.program, b.name, addr):  # static, or in the dynamic array
                self.emit(line)
            self.base[b.name] = addr
            self._zero_words(addr, shared_words(b), lin, size, zero)
        self.emit("bar.sync 0;")

    def _zero_words(self, addr: str, words: int, lin: str, size: str, zero: str) -> None:
        """Zero ``words`` 32-bit words at shared address ``addr`` (16-byte aligned: every workgroup
        array is): thread ``lin`` of ``size`` stores 16-byte vectors lin, lin + size, ..., then the
        last words % 4 words one each (a quarter of the stores and loop steps of word stores)."""
        i, p, a = self.reg(DataType.U32), self.reg(DataType.BOOL), self.reg(DataType.U32)
        top, done = self.label("zero"), self.label("zeroed")
        self.emit(f"mov.u32 {i}, {lin};")
        self.place(top)
        self.emit(f"setp.ge.u32 {p}, {i}, {words // 4};")
        self.emit(f"@{p} bra {done};")
        self.emit(f"mad.lo.u32 {a}, {i}, 16, {addr};")
        self.emit(f"st.shared.v4.u32 [{a}], {{{zero}, {zero}, {zero}, {zero}}};")
        self.emit(f"add.u32 {i}, {i}, {size};")
        self.emit(f"bra {top};")
        self.place(done)
        if words % 4:
            self.emit(f"setp.lt.u32 {p}, {lin}, {words % 4};")
            self.emit(f"mad.lo.u32 {a}, {lin}, 4, {addr};")
            self.emit(f"@{p} st.shared.u32 [{a}+{words // 4 * 16}], {zero};")

    def subgroup_prologue(self) -> None:
        """The lane id and the mask of the lanes that exist in this invocation's warp (a partial last
        warp of the block has fewer): the membermask from which the present lanes are voted."""
        if self.target.subgroup_size != SUBGROUP_SIZE:
            raise VyreError.one("E006", f"{self.target.name} has subgroups of {self.target.subgroup_size} lanes, the IR "
                                f"{SUBGROUP_SIZE}", f"program {self.program.name!r}",
                                "run programs with subgroup ops on a target whose subgroup size is the IR's")
        self.comment(f"subgroups: lane id, and the lanes of this warp that exist (warps of {SUBGROUP_SIZE} threads)")
        lane = self.reg(DataType.U32)
        self.emit(f"mov.u32 {lane}, %laneid;")
        self.true_reg = self.reg(DataType.BOOL)
        self.emit(f"mov.pred {self.true_reg}, 1;")
        if self.full_warps:  # every warp whole (the entry says .reqntid): all lanes exist, a literal mask
            self.lane_reg, self.exist_reg = lane, FULL_MASK
            return
        lin, t, u = (self.reg(DataType.U32) for _ in range(3))
        self.emit(f"mov.u32 {lin}, %tid.z;")
        self.emit(f"mov.u32 {t}, %ntid.y;")
        self.emit(f"mov.u32 {u}, %tid.y;")
        self.emit(f"mad.lo.u32 {lin}, {lin}, {t}, {u};")
        self.emit(f"mov.u32 {t}, %ntid.x;")
        self.emit(f"mov.u32 {u}, %tid.x;")
        self.emit(f"mad.lo.u32 {lin}, {lin}, {t}, {u};")
        self.emit(f"mov.u32 {u}, %ntid.y;")
        self.emit(f"mul.lo.u32 {t}, {t}, {u};")
        self.emit(f"mov.u32 {u}, %ntid.z;")
        self.emit(f"mul.lo.u32 {t}, {t}, {u};")  # threads in the block
        self.emit(f"and.b32 {lin}, {lin}, {-SUBGROUP_SIZE & 0xFFFFFFFF};")  # the warp's first thread
        self.emit(f"sub.u32 {t}, {t}, {lin};")
        self.emit(f"min.u32 {t}, {t}, {SUBGROUP_SIZE};")
        exist = self.reg(DataType.U32)
        self.emit(f"shl.b32 {exist}, 1, {t};")  # 1 << 32 is 0: all ones after the subtraction
        self.emit(f"sub.u32 {exist}, {exist}, 1;")
        self.lane_reg, self.exist_reg = lane, exist

    def entry_directives(self) -> list[str]:
        """``.reqntid`` where the subgroup code assumed whole warps (the literal member mask): a
        launch with another block size then fails instead of reading lanes that do not exist.
        ``resident(N)``: ``.minnctapersm N`` with the block size as ``.maxntid`` (unless
        ``.reqntid`` gives it), so that ptxas budgets registers for N blocks a multiprocessor."""
        size = ", ".join(str(w) for w in self.program.workgroup_size)
        out = [f".reqntid {size}"] if self.exist_reg == FULL_MASK else []
        if self.program.resident:
            out = (out or [f".maxntid {size}"]) + [f".minnctapersm {self.program.resident}"]
        return out

    def members(self) -> str:
        """The present lanes of the subgroup: those that exist, less any that returned (voted)."""
        if not self.returns:
            return self.exist_reg
        m = self.reg(DataType.U32)
        self.emit(f"vote.sync.ballot.b32 {m}, {self.true_reg}, {self.exist_reg};")
        return m

    def _buffers_used(self) -> set[str]:
        names: set[str] = set()
        for e in body_exprs(self.program.body):
            if isinstance(e, (Load, BufLen, Atomic, Wait)):
                names.add(e.buffer)
        names.update(n.buffer for n in statements(self.program.body) if isinstance(n, Store))
        names.update(b for n in statements(self.program.body) if isinstance(n, Copy) for b in (n.dst, n.src))
        return names
