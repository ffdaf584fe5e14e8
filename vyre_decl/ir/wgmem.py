"""How much workgroup memory a program may declare, and where each workgroup array lies in it:
48 KiB without ``workgroup_memory(large)``, up to the largest opt-in limit of any GPU with it
(docs/semantics.md, "Large workgroup memory")."""

from __future__ import annotations

from typing import Final

from .diagnostics import Diagnostic
from .nodes import Access, BufferDecl, Program

__all__ = ["MAX_WORKGROUP_BYTES", "MAX_LARGE_WORKGROUP_BYTES", "WORKGROUP_ALIGN", "workgroup_layout",
           "dynamic_workgroup_bytes", "workgroup_memory_problems"]

MAX_WORKGROUP_BYTES: Final = 48 * 1024  # static workgroup (shared) memory every CUDA GPU provides
# what a block may use on sm_90 after opting in (cudaDevAttrMaxSharedMemoryPerBlockOptin): the most
# of any GPU; a device with less refuses the program when it is compiled for it (D009)
MAX_LARGE_WORKGROUP_BYTES: Final = 227 * 1024
WORKGROUP_ALIGN: Final = 16  # every workgroup array starts 16-byte aligned (128-bit vector accesses)


def _bytes(b: BufferDecl) -> int:
    return -(-(b.count * b.dtype.size) // 4) * 4  # whole 32-bit words


def workgroup_layout(program: Program) -> tuple[dict[str, int], int]:
    """The byte offset of each workgroup array in declaration order (each 16-byte aligned) and the
    bytes they span: the layout of a ``workgroup_memory(large)`` program's one dynamic array."""
    offsets: dict[str, int] = {}
    end = 0
    for b in program.buffers:
        if b.access is Access.WORKGROUP and isinstance(b.count, int):
            end = -(-end // WORKGROUP_ALIGN) * WORKGROUP_ALIGN
            offsets[b.name] = end
            end += _bytes(b)
    return offsets, end


def dynamic_workgroup_bytes(program: Program) -> int:
    """The bytes of a ``workgroup_memory(large)`` program's one dynamic array, sized at launch
    (0: the program has the 48 KiB kind, its arrays static)."""
    return workgroup_layout(program)[1] if program.large_workgroup_memory is True else 0


def workgroup_memory_problems(program: Program) -> list[Diagnostic]:
    """V019 for more than 48 KiB without ``workgroup_memory(large)``; V048 for more than
    ``MAX_LARGE_WORKGROUP_BYTES`` (as laid out: each array 16-byte aligned) with it."""
    if program.large_workgroup_memory not in (True, False):
        return [Diagnostic("V048", f"large_workgroup_memory must be True or False, not "
                           f"{program.large_workgroup_memory!r}", "large_workgroup_memory",
                           "pass a bool (the text's workgroup_memory(large) is True)")]
    if program.large_workgroup_memory:
        _, total = workgroup_layout(program)
        if total <= MAX_LARGE_WORKGROUP_BYTES:
            return []
        return [Diagnostic("V048", f"the workgroup buffers need {total} bytes (each array 16-byte aligned), more "
                           f"than {MAX_LARGE_WORKGROUP_BYTES}, the most any GPU gives a workgroup", "buffers",
                           "use smaller workgroup buffers, or split the work over more workgroups")]
    shared = sum(b.count * b.dtype.size for b in program.buffers
                 if b.access is Access.WORKGROUP and isinstance(b.count, int))
    if shared <= MAX_WORKGROUP_BYTES:
        return []
    return [Diagnostic("V019", f"the workgroup buffers need {shared} bytes, more than {MAX_WORKGROUP_BYTES}",
                       "buffers", "use smaller workgroup buffers, or declare workgroup_memory(large) after the "
                       "workgroup size (up to the device's opt-in limit: 227 KiB on sm_90)")]
