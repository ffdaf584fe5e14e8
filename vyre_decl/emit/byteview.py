"""PTX of a byte view load ``x.u32[i]`` (ir/byteview.py): one load of the view's width where the
element lies wholly inside the buffer and, for a view wider than the buffer's elements, the
buffer's base address is aligned to it (always so for the backend's allocations, 256-byte
aligned; a user's offset view of a byte buffer may not be); else the element's bytes one by one,
each past the end reading 0, so the result is the reference's either way."""

from __future__ import annotations

from typing import Any

from ..ir.nodes import Load
from ..ir.types import DataType

__all__ = ["view_load"]


def view_load(em: Any, e: Load) -> tuple[str, DataType, bool]:
    """Emit ``e`` (a Load with a view) with emitter ``em``; returns (register, value type, True)."""
    assert e.view is not None
    decl = em.buffers[e.buffer]
    view, vt = e.view, e.view.value_type
    size, esize = view.size, decl.dtype.size
    idx, _, _ = em.expr(e.index)
    base, n = em.base[decl.name], em.length[decl.name]
    nbytes, off, a = em.reg(DataType.U64), em.reg(DataType.U64), em.reg(DataType.U64)
    em.emit(f"mul.wide.u32 {nbytes}, {n}, {esize};")  # the buffer's bytes (below 2^35)
    em.emit(f"mul.wide.u32 {off}, {idx}, {size};")  # the element's first byte
    em.emit(f"add.u64 {a}, {base}, {off};")
    whole, last = em.reg(DataType.BOOL), em.reg(DataType.U64)
    em.emit(f"add.u64 {last}, {off}, {size};")
    em.emit(f"setp.le.u64 {whole}, {last}, {nbytes};")  # the element wholly in bounds
    out = em.reg(vt)
    em.emit(f"mov.{'b64' if vt.size == 8 else 'b32'} {out}, 0;")
    if size <= esize:  # a narrower view: every element whole and aligned, or wholly past the end
        em.emit(f"@{whole} ld.global.u{8 * size} {out}, [{a}];")
        return out, vt, True
    low = em.reg(DataType.U64)
    em.emit(f"and.b64 {low}, {base}, {size - 1};")
    em.emit(f"setp.eq.and.u64 {whole}, {low}, 0, {whole};")  # and the base aligned to the view's size
    done = em.label("view_done")
    em.emit(f"@{whole} ld.global.u{8 * size} {out}, [{a}];")
    em.emit(f"@{whole} bra {done};")
    em.comment("a partial last element or an unaligned base: byte by byte, past the end 0")
    for k in range(size):
        at, ok, byte = em.reg(DataType.U64), em.reg(DataType.BOOL), em.reg(DataType.U32)
        em.emit(f"add.u64 {at}, {off}, {k};")
        em.emit(f"setp.lt.u64 {ok}, {at}, {nbytes};")
        em.emit(f"add.u64 {at}, {base}, {at};")
        em.emit(f"mov.b32 {byte}, 0;")
        em.emit(f"@{ok} ld.global.u8 {byte}, [{at}];")
        if vt.size == 8:
            wide = em.reg(DataType.U64)
            em.emit(f"cvt.u64.u32 {wide}, {byte};")
            em.emit(f"shl.b64 {wide}, {wide}, {8 * k};")
            em.emit(f"or.b64 {out}, {out}, {wide};")
        else:
            em.emit(f"shl.b32 {byte}, {byte}, {8 * k};")
            em.emit(f"or.b32 {out}, {out}, {byte};")
    em.place(done)
    return out, vt, True
