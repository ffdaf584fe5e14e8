"""PTX of a byte view load ``x.u32[i]`` (ir/byteview.py): one load of the view's width where the
element lies wholly inside the buffer and, for a view wider than the buffer's elements, the
buffer's base address is aligned to it (always so for the backend's allocations, 256-byte
aligned; a user's offset view of a byte buffer may not be); else the element's bytes one by one,
each past the end reading 0, so the result is the reference's either way.

For a wider view both conditions are one 32-bit compare per load: the prologue computes, once per
buffer and width, how many whole elements the view has when the base is aligned (0 when it is not)."""

from __future__ import annotations

from typing import Any

from ..ir.nodes import Load
from ..ir.types import DataType
from ..ir.walk import body_exprs

__all__ = ["view_load", "view_prologue"]


def view_prologue(em: Any) -> None:
    """For each (buffer, width) of a wider view the body loads: ``em.view_whole`` gets a register
    holding ``len · size(T) / S`` (whole view elements; below 2^32 as S > size(T)) when the buffer's
    base is a multiple of S, else 0."""
    wider = sorted({(e.buffer, e.view.size) for e in body_exprs(em.program.body)
                    if isinstance(e, Load) and e.view is not None and e.view.size > em.buffers[e.buffer].dtype.size})
    for name, size in wider:
        esize = em.buffers[name].dtype.size
        nbytes, low = em.reg(DataType.U64), em.reg(DataType.U64)
        whole, aligned = em.reg(DataType.U32), em.reg(DataType.BOOL)
        em.comment(f"whole {8 * size}-bit elements of {name}'s byte view (0 for a base not aligned to them)")
        em.emit(f"mul.wide.u32 {nbytes}, {em.length[name]}, {esize};")
        em.emit(f"shr.u64 {nbytes}, {nbytes}, {size.bit_length() - 1};")
        em.emit(f"cvt.u32.u64 {whole}, {nbytes};")
        em.emit(f"and.b64 {low}, {em.base[name]}, {size - 1};")
        em.emit(f"setp.eq.u64 {aligned}, {low}, 0;")
        em.emit(f"selp.u32 {whole}, {whole}, 0, {aligned};")
        em.view_whole[(name, size)] = whole


def view_load(em: Any, e: Load) -> tuple[str, DataType, bool]:
    """Emit ``e`` (a Load with a view) with emitter ``em``; returns (register, value type, True)."""
    assert e.view is not None
    decl = em.buffers[e.buffer]
    view, vt = e.view, e.view.value_type
    size, esize = view.size, decl.dtype.size
    idx, _, _ = em.expr(e.index)
    base, n = em.base[decl.name], em.length[decl.name]
    off, a = em.reg(DataType.U64), em.reg(DataType.U64)
    em.emit(f"mul.wide.u32 {off}, {idx}, {size};")  # the element's first byte
    em.emit(f"add.u64 {a}, {base}, {off};")
    out, whole = em.reg(vt), em.reg(DataType.BOOL)
    em.emit(f"mov.{'b64' if vt.size == 8 else 'b32'} {out}, 0;")
    nbytes = em.reg(DataType.U64)
    if size <= esize:  # a narrower view: every element whole and aligned, or wholly past the end
        last = em.reg(DataType.U64)
        em.emit(f"mul.wide.u32 {nbytes}, {n}, {esize};")  # the buffer's bytes (below 2^35)
        em.emit(f"add.u64 {last}, {off}, {size};")
        em.emit(f"setp.le.u64 {whole}, {last}, {nbytes};")  # the element wholly in bounds
        em.emit(f"@{whole} ld.global.u{8 * size} {out}, [{a}];")
        return out, vt, True
    em.emit(f"setp.lt.u32 {whole}, {idx}, {em.view_whole[(decl.name, size)]};")  # whole, base aligned
    done = em.label("view_done")
    em.emit(f"@{whole} ld.global.u{8 * size} {out}, [{a}];")
    em.emit(f"@{whole} bra {done};")
    em.comment("a partial last element or an unaligned base: byte by byte, past the end 0")
    em.emit(f"mul.wide.u32 {nbytes}, {n}, {esize};")  # the buffer's bytes (below 2^35)
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
