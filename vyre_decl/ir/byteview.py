"""Views of a global buffer's bytes as elements of another unsigned integer type: ``x.u32[i]``
reads bytes 4i .. 4i+3 of ``x`` (whatever ``x``'s element type) as one little-endian u32, and
``w.u8[i]`` byte i of the words of ``w``. What a view is, which are allowed, and how many
elements it has (docs/semantics.md, "Byte views")."""

from __future__ import annotations

from typing import Final

from .nodes import Access, BufferDecl, Load
from .types import DataType

__all__ = ["VIEW_TYPES", "view_type", "view_problem", "view_count"]

VIEW_TYPES: Final = (DataType.U8, DataType.U16, DataType.U32, DataType.U64)
_VIEW_BY_NAME: Final = {t.value: t for t in VIEW_TYPES}
Problem = tuple[str, str, str]


def view_type(name: str) -> DataType | None:
    """The view type spelled ``name`` after a buffer's name (``x.u32``), or None."""
    return _VIEW_BY_NAME.get(name)


def view_count(count: int, dtype: DataType, view: DataType) -> int:
    """The elements of a ``view`` of ``count`` elements of ``dtype``: the bytes over the view's
    size, rounded up (the bytes of a last partial element past the buffer read as 0)."""
    return -(-(count * dtype.size) // view.size)


def view_problem(decl: BufferDecl, e: Load) -> Problem | None:
    """V049 for a view of a type that is no view type, of bools, or of a workgroup or private
    array; V050 for an atomic load through a view; None when the view is fine."""
    view = e.view
    if view not in VIEW_TYPES:
        return ("V049", f"{decl.name}.{getattr(view, 'value', view)}: a view must be u8, u16, u32 or u64",
                "read the bytes as one of the unsigned types: x.u8[i], x.u16[i], x.u32[i], x.u64[i]")
    if decl.dtype is DataType.BOOL:
        return ("V049", f"{decl.name}.{view.value}: a bool buffer's bytes are no part of its meaning (a bool is "
                "stored as a word 1 or 0)", f"load {decl.name}[i] and convert it: select({decl.name}[i], 1u32, 0u32)")
    if decl.access in (Access.WORKGROUP, Access.PRIVATE):
        return ("V049", f"{decl.name}.{view.value}: views are of global buffers, {decl.name} is a "
                f"{decl.access.value} array", f"declare {decl.name} with the view's type and store the bytes "
                "as they should be read, or read its elements and shift: (x[i] >> 8u32) & 255u32")
    if e.order is not None:
        return ("V050", f"an atomic load through the view {decl.name}.{view.value}",
                f"load {decl.name}[i] atomically (its own element type), or drop the order")
    return None
