"""Vector copies in PTX (docs/semantics.md, "Vector copies"): ``dst[i ..+ N] = src[j ..+ N]`` as
64- and 128-bit ``ld``/``st`` where it can be, element by element where it cannot.

The copy moves 32-bit words: N elements of 4 or 8 bytes are 2 to 8 words, moved in pieces of at
most four (``ld{space}.v4.b32`` then ``st{space}.v4.b32``; ``.v2`` for 64 bits). The fast path runs
when both indices are multiples of the piece's element count, both vectors lie wholly in bounds
and, for a global buffer, its base address is aligned to the piece (checked at run time, as the
vectorised map entry does in ``vector.py``); workgroup and private arrays are declared ``.align 16``
by the module. Otherwise each element is loaded and stored by the emitter's usual predicated
accesses, its index past 2^32 - 1 read as out of bounds. No arithmetic is folded here: where the
indices are constants after unrolling (private arrays, workgroup slots of unroll counters), ptxas
propagates them, the run-time checks become constants and the slow path disappears.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from ..ir.nodes import Access, BufferDecl, Copy, Load, Store, Var
from ..ir.types import DataType
from .registers import _Lines

if TYPE_CHECKING:
    from ..ir.nodes import Expr

__all__: list[str] = []  # the mixin, a base of the emitter

_PIECE_BYTES: Final = 16  # the widest vector access every target has (ld.v4.b32)
_ALL_ONES: Final = 0xFFFFFFFF  # an index past every buffer (counts are below 2^32)


class _VectorCopy(_Lines):
    """``Copy`` statements: the run-time test for the vector path, the pieces, the element path."""

    if TYPE_CHECKING:  # the emitter's own (ptx.py)
        def expr(self, e: Expr) -> tuple[str, DataType, bool]: ...
        def load(self, e: Load) -> tuple[str, DataType, bool]: ...
        def store(self, n: Store) -> None: ...

    def vector_copy(self, n: Copy) -> None:
        dst, src = self.buffers[n.dst], self.buffers[n.src]
        di, _, _ = self.expr(n.dst_index)
        si, _, _ = self.expr(n.src_index)
        size = dst.dtype.size
        step = min(_PIECE_BYTES, n.width * size) // size  # elements per piece
        ok = self.reg(DataType.BOOL)
        for decl, index in ((dst, di), (src, si)):
            if not self._vector_fits(decl, index, n.width, step, ok, decl is dst):
                ok = ""
                break
        slow, done = self.label("copy_elements"), self.label("copy_done")
        if ok:
            self.emit(f"@!{ok} bra {slow};")
            self._pieces(dst, di, src, si, n.width * size)
            self.emit(f"bra {done};")
        self.place(slow)
        self._elements(n, di, si)
        self.place(done)

    def _vector_fits(self, decl: BufferDecl, index: str, width: int, step: int, ok: str, first: bool) -> bool:
        """``ok &=`` 'the vector at ``index`` is aligned and in bounds' (``first``: ``ok =``); False
        where it never is."""
        t = self.reg(DataType.U32)
        p = self.reg(DataType.BOOL)
        self.emit(f"and.b32 {t}, {index}, {step - 1};")
        self.emit(f"setp.eq.u32 {ok}, {t}, 0;" if first else f"setp.eq.and.u32 {ok}, {t}, 0, {ok};")
        if decl.access.is_scratch:
            if decl.count < width:
                return False
            self.emit(f"setp.le.and.u32 {ok}, {index}, {decl.count - width}, {ok};")
            return True
        length = self.length[decl.name]
        self.emit(f"setp.ge.and.u32 {ok}, {length}, {width}, {ok};")
        self.emit(f"sub.u32 {t}, {length}, {width};")
        self.emit(f"setp.le.and.u32 {ok}, {index}, {t}, {ok};")
        low = self.reg(DataType.U32)
        self.emit(f"cvt.u32.u64 {low}, {self.base[decl.name]};")
        self.emit(f"and.b32 {low}, {low}, {step * decl.dtype.size - 1};")
        self.emit(f"setp.eq.u32 {p}, {low}, 0;")
        self.emit(f"and.pred {ok}, {ok}, {p};")
        return True

    def _address(self, decl: BufferDecl, index: str) -> tuple[str, str]:
        """(address register, state space) of element ``index`` (known to be in bounds)."""
        size = decl.dtype.size
        if decl.access.is_scratch:
            a = self.reg(DataType.U32)
            self.emit(f"mad.lo.u32 {a}, {index}, {size}, {self.base[decl.name]};")
            return a, ".shared" if decl.access is Access.WORKGROUP else ".local"
        off, a = self.reg(DataType.U64), self.reg(DataType.U64)
        self.emit(f"mul.wide.u32 {off}, {index}, {size};")
        self.emit(f"add.u64 {a}, {self.base[decl.name]}, {off};")
        return a, ".global"

    def _pieces(self, dst: BufferDecl, di: str, src: BufferDecl, si: str, nbytes: int) -> None:
        """The vector path: every piece loaded, then every piece stored."""
        load_at, load_space = self._address(src, si)
        store_at, store_space = self._address(dst, di)
        pieces = []
        for offset in range(0, nbytes, _PIECE_BYTES):
            words = [self.reg(("b32", "%b")) for _ in range(min(_PIECE_BYTES, nbytes - offset) // 4)]
            regs = "{" + ", ".join(words) + "}"
            self.emit(f"ld{load_space}.v{len(words)}.b32 {regs}, [{load_at}+{offset}];")
            pieces.append((offset, len(words), regs))
        for offset, count, regs in pieces:
            self.emit(f"st{store_space}.v{count}.b32 [{store_at}+{offset}], {regs};")

    def _elements(self, n: Copy, di: str, si: str) -> None:
        """Element by element: the emitter's load and store of element k at each index + k (an index
        that passes 2^32 - 1 is moved to 2^32 - 1, past every buffer)."""
        values = []
        for k in range(n.width):
            values.append(self.load(Load(n.src, Var(self._plus(si, k, "%copy_src")))))
        for k, (value, t, _) in enumerate(values):
            self.vars["%copy_value"] = (value, t)
            self.store(Store(n.dst, Var(self._plus(di, k, "%copy_dst")), Var("%copy_value")))
        for name in ("%copy_src", "%copy_dst", "%copy_value"):
            self.vars.pop(name, None)

    def _plus(self, index: str, k: int, name: str) -> str:
        """Bind ``name`` to ``index + k`` (all ones where that wraps); returns ``name``."""
        if k == 0:
            self.vars[name] = (index, DataType.U32)
            return name
        r, wrapped = self.reg(DataType.U32), self.reg(DataType.BOOL)
        self.emit(f"add.u32 {r}, {index}, {k};")
        self.emit(f"setp.lt.u32 {wrapped}, {r}, {k};")
        self.emit(f"selp.b32 {r}, {_ALL_ONES}, {r}, {wrapped};")
        self.vars[name] = (r, DataType.U32)
        return name
