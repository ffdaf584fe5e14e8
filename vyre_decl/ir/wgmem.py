"""How much workgroup memory a program may declare, and where each workgroup array lies in it:
48 KiB without ``workgroup_memory(large)``, up to the largest opt-in limit of any GPU with it
(docs/semantics.md, "Large workgroup memory"). Only the arrays the body may touch are laid out (an
array named only in the branch an ``if`` on a literal never takes, or nowhere, takes no memory and
is never zeroed); the limits hold for every declared array."""

from __future__ import annotations

import functools
from typing import Final, Iterator, Sequence

from .diagnostics import Diagnostic
from .nodes import Access, Atomic, BufferDecl, BufLen, Copy, If, Lit, Load, Node, Program, Store, Wait
from .walk import own_exprs, subexprs

__all__ = ["MAX_WORKGROUP_BYTES", "MAX_LARGE_WORKGROUP_BYTES", "WORKGROUP_ALIGN", "workgroup_layout",
           "dynamic_workgroup_bytes", "workgroup_memory_problems", "live_statements", "live_workgroup_arrays"]

MAX_WORKGROUP_BYTES: Final = 48 * 1024  # static workgroup (shared) memory every CUDA GPU provides
# what a block may use on sm_90 after opting in (cudaDevAttrMaxSharedMemoryPerBlockOptin): the most
# of any GPU; a device with less refuses the program when it is compiled for it (D009)
MAX_LARGE_WORKGROUP_BYTES: Final = 227 * 1024
WORKGROUP_ALIGN: Final = 16  # every workgroup array starts 16-byte aligned (128-bit vector accesses)


def _bytes(b: BufferDecl) -> int:
    return -(-(b.count * b.dtype.size) // 4) * 4  # whole 32-bit words


def live_statements(body: Sequence[Node]) -> Iterator[Node]:
    """Every statement of ``body`` that may run, nested ones included, pre-order: of an ``if`` whose
    condition is a literal only the branch it takes (as the emitter emits it)."""
    for n in body:
        yield n
        if isinstance(n, If):
            if not isinstance(n.cond, Lit) or n.cond.bits:
                yield from live_statements(n.then)
            if not isinstance(n.cond, Lit) or not n.cond.bits:
                yield from live_statements(n.otherwise)
        else:
            yield from live_statements(getattr(n, "body", ()))  # Loop, Block, Region


@functools.lru_cache(maxsize=64)
def live_workgroup_arrays(program: Program) -> frozenset[str]:
    """The workgroup arrays a statement that may run loads, stores, copies, waits on, applies an
    atomic to or takes the length of: the ones the emitter declares, zeroes and lays out."""
    names: set[str] = set()
    for n in live_statements(program.body):
        if isinstance(n, Store):
            names.add(n.buffer)
        elif isinstance(n, Copy):
            names.update((n.dst, n.src))
        names.update(e.buffer for x in own_exprs(n) for e in subexprs(x) if isinstance(e, (Load, BufLen, Atomic, Wait)))
    return frozenset(b.name for b in program.buffers if b.access is Access.WORKGROUP and b.name in names)


def workgroup_layout(program: Program, declared: bool = False) -> tuple[dict[str, int], int]:
    """The byte offset of each workgroup array the body may touch (``declared``: of every declared
    one) in declaration order, each 16-byte aligned, and the bytes they span: the layout of a
    ``workgroup_memory(large)`` program's one dynamic array."""
    offsets: dict[str, int] = {}
    end = 0
    live = None if declared else live_workgroup_arrays(program)
    for b in program.buffers:
        if b.access is Access.WORKGROUP and isinstance(b.count, int) and (live is None or b.name in live):
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
        _, total = workgroup_layout(program, declared=True)
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
