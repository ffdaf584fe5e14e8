"""Where a kernel's workgroup arrays live in PTX: each its own static ``.shared`` array (48 KiB at
most), or, for a ``workgroup_memory(large)`` program, one module-scope ``.extern .shared`` array
(dynamic shared memory, sized at launch) in which each array has a fixed 16-byte aligned offset
(``ir/wgmem.py``). The CUDA backend opts the function in to that many bytes and passes them at
every launch (``KernelABI.dynamic_shared_bytes``)."""

from __future__ import annotations

from typing import Final

from ..ir.nodes import Access, Program
from ..ir.wgmem import WORKGROUP_ALIGN, dynamic_workgroup_bytes, live_workgroup_arrays, workgroup_layout
from .abi import shared_words

__all__ = ["DYNAMIC_SYMBOL", "module_declarations", "entry_declarations", "shared_address"]

DYNAMIC_SYMBOL: Final = "wg_dyn"  # the one dynamic shared array of a large program


def _dynamic(program: Program) -> bool:
    return dynamic_workgroup_bytes(program) > 0


def module_declarations(program: Program) -> list[str]:
    """The module-scope declaration of the dynamic array (ptxas takes ``.extern .shared`` only
    there), or nothing."""
    if not _dynamic(program):
        return []
    return [f".extern .shared .align {WORKGROUP_ALIGN} .b8 {DYNAMIC_SYMBOL}[];", ""]


def entry_declarations(program: Program) -> list[str]:
    """The entry's static ``.shared`` arrays (none for a large program): those the body may touch."""
    if _dynamic(program):
        return []
    live = live_workgroup_arrays(program)
    return [f"\t.shared .align {WORKGROUP_ALIGN} .b8 wg_{b.name}[{shared_words(b) * 4}];"
            for b in program.buffers if b.access is Access.WORKGROUP and b.name in live]


def shared_address(program: Program, name: str, reg: str) -> list[str]:
    """PTX putting workgroup array ``name``'s shared address into ``reg``."""
    if not _dynamic(program):
        return [f"mov.u32 {reg}, wg_{name};"]
    offset = workgroup_layout(program)[0][name]
    return [f"mov.u32 {reg}, {DYNAMIC_SYMBOL};"] + ([f"add.u32 {reg}, {reg}, {offset};"] if offset else [])
