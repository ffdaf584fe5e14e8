"""Vector copies in PTX (docs/semantics.md, "Vector copies"): ``dst[i ..+ N] = src[j ..+ N]`` as
64- and 128-bit ``ld``/``st`` where it can be, element by element where it cannot.

The N elements (4 or 8 bytes each) move in pieces of at most 16 bytes (``ld{space}.v4.f32`` then
``st{space}.v4.f32``; ``.v2`` for 64-bit elements or 8-byte copies). A side in memory takes the
vector path when its index is a multiple of the piece's element count and the whole vector is in
bounds, and, for a global buffer, its base address is aligned to the piece — checked at run time, as
the vectorised map entry does (``vector.py``); workgroup and private arrays are declared
``.align 16`` by the module. A register array (``promote.py``) has its index known when the PTX is
written, so its side needs no check: its registers are the vector's (``ld.shared.v4.f32
{%f1, %f2, %f3, %f4}``). Otherwise each element is loaded and stored by the emitter's usual
predicated accesses, an index past 2^32 - 1 read as out of bounds. No arithmetic is folded here:
where other indices are constants after unrolling, ptxas folds the checks and drops the slow path.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from ..ir.nodes import Access, BufferDecl, Copy, Load, Store, Var
from ..ir.types import DataType
from ..registry.templates import immediate
from .promote import _RegisterArrays
from .registers import _MEM_TYPE, _REG

if TYPE_CHECKING:
    from ..ir.nodes import Expr

__all__: list[str] = []  # the mixin, a base of the emitter

_PIECE_BYTES: Final = 16  # the widest vector access every target has (ld.v4.b32)
_ALL_ONES: Final = 0xFFFFFFFF  # an index past every buffer (counts are below 2^32)

# one side of a copy: (buffer, index register or None, the registers of a register array's elements
# or None for a side in memory; an element past the array's end is None, whether the index counts vectors)
_Side = tuple[BufferDecl, "str | None", "list[str | None] | None", bool]


class _VectorCopy(_RegisterArrays):
    """``Copy`` statements: the run-time test for the vector path, the pieces, the element path."""

    if TYPE_CHECKING:  # the emitter's own (ptx.py)
        def expr(self, e: Expr) -> tuple[str, DataType, bool]: ...
        def load(self, e: Load) -> tuple[str, DataType, bool]: ...
        def proven(self, decl: BufferDecl, index: Expr, count: int | None = None) -> bool: ...
        def store(self, n: Store) -> None: ...

    def _side(self, buffer: str, index: Expr, width: int, units: bool) -> _Side:
        decl = self.buffers[buffer]
        if buffer in self.promoted:
            first = self.known_index(index) * (width if units else 1)
            return decl, None, [self.element(buffer, first + k) for k in range(width)], units
        return decl, self.expr(index)[0], None, units

    def vector_copy(self, n: Copy) -> None:
        dst = self._side(n.dst, n.dst_index, n.width, n.dst_units)
        src = self._side(n.src, n.src_index, n.width, n.src_units)
        size = dst[0].dtype.size
        step = min(_PIECE_BYTES // size, n.width)  # elements per piece
        whole = all(regs is None or None not in regs for _, _, regs, _ in (dst, src))
        checks = [(decl, index, units) for decl, index, regs, units in (dst, src) if regs is None]
        if whole and all(units and decl.access.is_scratch for decl, _, units in checks):
            proven = tuple(self.proven(side[0], index, side[0].count // n.width)
                           for side, index in ((dst, n.dst_index), (src, n.src_index)))
            self._predicated(dst, src, n.width, step, proven)  # every vector is whole (V047): no branch
            return
        ok = self.reg(DataType.BOOL) if whole and checks else ""
        for i, (decl, index, units) in enumerate(checks):
            assert index is not None
            if ok and not self._vector_fits(decl, index, n.width, step, ok, i == 0, units):
                whole = False
        slow, done = self.label("copy_elements"), self.label("copy_done")
        if whole:
            if ok:
                self.emit(f"@!{ok} bra {slow};")
            self._pieces(dst, src, n.width, step)
            if not ok:
                return
            self.emit(f"bra {done};")
        self.place(slow)
        self._elements(n, self._element_side(dst, n.width), self._element_side(src, n.width))
        self.place(done)

    def _predicated(self, dst: _Side, src: _Side, width: int, step: int, proven: tuple[bool, ...]) -> None:
        """Sides in workgroup or private memory counting whole vectors, the others register arrays:
        each memory side's vector is wholly in bounds or wholly out, so its access is one predicated
        vector access (an access out of bounds loads zeros and stores nothing); ``proven``: for each
        side, whether its index is provably below the vector count (ranges.py), so no test is made."""
        preds = []
        for (decl, index, regs, _), known in zip((dst, src), proven):
            if regs is None and not known:
                p = self.reg(DataType.BOOL)
                self.emit(f"setp.lt.u32 {p}, {index}, {decl.count // width};")
                preds.append(p)
            else:
                preds.append("")
        self._pieces(dst, src, width, step, preds[0], preds[1])

    def _element_side(self, side: _Side, width: int) -> _Side:
        """``side`` with an index counting elements: a memory side's vector index times ``width``
        (all ones where that passes 2^32 - 1, past every buffer)."""
        decl, index, regs, units = side
        if not units or index is None:
            return side
        e, hi, wrapped = self.reg(DataType.U32), self.reg(DataType.U32), self.reg(DataType.BOOL)
        self.emit(f"mul.lo.u32 {e}, {index}, {width};")
        self.emit(f"mul.hi.u32 {hi}, {index}, {width};")
        self.emit(f"setp.ne.u32 {wrapped}, {hi}, 0;")
        self.emit(f"selp.b32 {e}, {_ALL_ONES}, {e}, {wrapped};")
        return decl, e, regs, False

    def _vector_fits(self, decl: BufferDecl, index: str, width: int, step: int, ok: str, first: bool,
                     units: bool) -> bool:
        """``ok &=`` 'the vector at ``index`` is aligned and in bounds' (``first``: ``ok =``); False
        where it never is. An index counting vectors is aligned and compared with the vector count."""
        t = self.reg(DataType.U32)
        tests = [first]

        def test(cmp: str, a: str, b: str | int) -> None:
            self.emit(f"setp.{cmp}.u32 {ok}, {a}, {b};" if tests[0] else f"setp.{cmp}.and.u32 {ok}, {a}, {b}, {ok};")
            tests[0] = False

        if not units:
            self.emit(f"and.b32 {t}, {index}, {step - 1};")
            test("eq", t, 0)
        if decl.access.is_scratch:
            if decl.count < width:
                return False
            test("le", index, decl.count // width - 1 if units else decl.count - width)
            return True
        length = self.length[decl.name]
        if units:
            self.emit(f"shr.u32 {t}, {length}, {width.bit_length() - 1};")
            test("lt", index, t)
        else:
            test("ge", length, width)
            self.emit(f"sub.u32 {t}, {length}, {width};")
            test("le", index, t)
        low = self.reg(DataType.U32)
        self.emit(f"cvt.u32.u64 {low}, {self.base[decl.name]};")
        self.emit(f"and.b32 {low}, {low}, {step * decl.dtype.size - 1};")
        test("eq", low, 0)
        return True

    def _address(self, decl: BufferDecl, index: str, scale: int = 1) -> tuple[str, str]:
        """(address register, state space) of element ``index`` times ``scale`` (known to be in bounds)."""
        size = decl.dtype.size * scale
        if decl.access.is_scratch:
            a = self.reg(DataType.U32)
            self.emit(f"mad.lo.u32 {a}, {index}, {size}, {self.base[decl.name]};")
            return a, ".shared" if decl.access is Access.WORKGROUP else ".local"
        off, a = self.reg(DataType.U64), self.reg(DataType.U64)
        self.emit(f"mul.wide.u32 {off}, {index}, {size};")
        self.emit(f"add.u64 {a}, {self.base[decl.name]}, {off};")
        return a, ".global"

    def _pieces(self, dst: _Side, src: _Side, width: int, step: int, dst_if: str = "", src_if: str = "") -> None:
        """The vector path: the source's pieces into registers (a register array's own), then out;
        ``src_if``/``dst_if``: a predicate the load/store is under (a load not made gives zeros)."""
        t = dst[0].dtype
        kind = _MEM_TYPE[t]
        # a register array's own registers where either side is one (the checks made them all present)
        values = src[2] if src[2] is not None else dst[2] if dst[2] is not None else [self.reg(t) for _ in range(width)]
        if src[2] is None:
            assert src[1] is not None
            at, space = self._address(src[0], src[1], width if src[3] else 1)
            if src_if:
                for v in values:
                    self.emit(f"mov.{_REG[t][0]} {v}, {immediate(t, 0)};")
            for k in range(0, width, step):
                regs = ", ".join(str(r) for r in values[k:k + step])
                self.emit(f"{'@' + src_if + ' ' if src_if else ''}ld{space}.v{step}.{kind} {{{regs}}}, [{at}+{k * t.size}];")
        if dst[2] is not None:
            for r, v in zip(dst[2], values):
                if r != v:
                    self.emit(f"mov.{_REG[t][0]} {r}, {v};")
            return
        assert dst[1] is not None
        at, space = self._address(dst[0], dst[1], width if dst[3] else 1)
        for k in range(0, width, step):
            regs = ", ".join(str(r) for r in values[k:k + step])
            self.emit(f"{'@' + dst_if + ' ' if dst_if else ''}st{space}.v{step}.{kind} [{at}+{k * t.size}], {{{regs}}};")

    def _elements(self, n: Copy, dst: _Side, src: _Side) -> None:
        """Element by element: the emitter's load and store of element k at each index + k (an index
        that passes 2^32 - 1 is moved to 2^32 - 1, past every buffer)."""
        t = dst[0].dtype
        values = []
        for k in range(n.width):
            if src[2] is None:
                assert src[1] is not None
                values.append(self.load(Load(n.src, Var(self._plus(src[1], k, "%copy_src"))))[0])
            elif src[2][k] is None:
                zero = self.reg(t)
                self.emit(f"mov.{_REG[t][0]} {zero}, {immediate(t, 0)};")
                values.append(zero)
            else:
                values.append(str(src[2][k]))
        for k, value in enumerate(values):
            if dst[2] is not None:
                r = dst[2][k]
                if r is not None:
                    self.emit(f"mov.{_REG[t][0]} {r}, {value};")
                continue
            assert dst[1] is not None
            self.vars["%copy_value"] = (value, t.value_type)
            self.store(Store(n.dst, Var(self._plus(dst[1], k, "%copy_dst")), Var("%copy_value")))
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
