"""Vector copies (``dst[i ..+ N] = src[j ..+ N]``): the rules a copy between two buffers must keep
(docs/semantics.md, "Vector copies"). Validation reports these problems; what a copy means is the
reference's, how a GPU makes it one 64- or 128-bit access is ``emit/vcopy.py``'s.

Codes: V043 a width other than 2 or 4 · V044 the two sides hold different element types ·
V045 a copy within one buffer · V046 an element type that is not a 32- or 64-bit word · V047 a side
counting whole vectors (``buf[q ..* N]``) in workgroup or private memory whose count is not a
multiple of N (its last vector would be partial; every vector of such a buffer is whole, so a GPU
needs one bounds test and no alignment test for it).
"""

from __future__ import annotations

from typing import Final

from .nodes import BufferDecl, Copy
from .types import DataType

__all__ = ["VECTOR_WIDTHS", "VECTOR_TYPES", "copy_problems"]

VECTOR_WIDTHS: Final = (2, 4)
# whole 32- and 64-bit words: what a vector load moves unchanged (a bool word is read as nonzero,
# narrow elements are widened and narrowed, so a copy of them is not a move of bits)
VECTOR_TYPES: Final = frozenset({DataType.U32, DataType.I32, DataType.F32, DataType.U64, DataType.I64,
                                 DataType.F64})

_ELEMENTWISE: Final = "copy element by element in an unroll loop: loop k in 0u32 .. 4u32 unroll { dst[i + k] = src[j + k] }"


def copy_problems(n: Copy, dst: BufferDecl, src: BufferDecl) -> list[tuple[str, str, str]]:
    """(code, message, fix) for each V043-V046 problem of copy ``n`` between declared buffers."""
    out: list[tuple[str, str, str]] = []
    if type(n.width) is not int or n.width not in VECTOR_WIDTHS:
        out.append(("V043", f"a vector copy moves 2 or 4 elements, not {n.width!r}",
                    f"write dst[i ..+ 4] = src[j ..+ 4] (or ..+ 2), or {_ELEMENTWISE}"))
    if dst.name == src.name:
        out.append(("V045", f"a vector copy within one buffer ({dst.name!r}): its elements could overlap",
                    f"copy through a private array (tmp[0u32 ..+ 4] = {src.name}[j ..+ 4], then "
                    f"{dst.name}[i ..+ 4] = tmp[0u32 ..+ 4])"))
    if dst.dtype is not src.dtype:
        out.append(("V044", f"a vector copy from {src.name!r} ({src.dtype}) to {dst.name!r} ({dst.dtype}): the "
                    "element types differ", f"declare both buffers with one element type, or {_ELEMENTWISE}"
                    " with a cast"))
    for decl, units in ((dst, n.dst_units), (src, n.src_units)):
        if units and n.width in VECTOR_WIDTHS and decl.access.is_scratch and decl.count % n.width:
            out.append(("V047", f"{decl.name!r}[q ..* {n.width}] counts vectors of {n.width} elements, but its "
                        f"{decl.count} elements are not a whole number of them", f"declare {decl.name!r} with a "
                        f"multiple of {n.width} elements (e.g. {-(-decl.count // n.width) * n.width}), or index "
                        f"elements: {decl.name}[i ..+ {n.width}]"))
    for decl in (dst, src) if dst.name != src.name else (dst,):
        if decl.dtype not in VECTOR_TYPES:
            out.append(("V046", f"a vector copy of {decl.dtype} elements ({decl.name!r}): vector accesses move "
                        "32- and 64-bit words (u32 i32 f32 u64 i64 f64)", _ELEMENTWISE))
    return out
