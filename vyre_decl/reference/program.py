"""A program compiled for the reference interpreter, and running it: the grid in chunks of whole
workgroups (one numpy element per invocation), workgroup buffers as one row per workgroup, private
arrays as one row per invocation, the ids the program reads, and the deadline checked between
chunks."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Final, Mapping

import numpy as np

from ..ir.nodes import Access, IdKind, Program
from ..registry import Registry
from .collective import subgroup_slots
from .frame import Frame, StmtFn, check_deadline
from .interpreter import Compiler

__all__ = ["CompiledProgram", "compile_program", "CHUNK_INVOCATIONS"]

CHUNK_INVOCATIONS: Final = 1 << 20  # invocations executed together (whole workgroups)
CHUNK_PRIVATE_BYTES: Final = 64 << 20  # at most this much private-array memory per chunk (fewer invocations)


@dataclass(frozen=True)
class CompiledProgram:
    """A program ready to run on the reference interpreter."""

    program: Program
    body: StmtFn
    ids_used: frozenset[tuple[IdKind, int]]
    collective: bool = False  # the program calls collective ops: chunks know their subgroups

    def run(
        self,
        memory: Mapping[str, np.ndarray],
        counts: Mapping[str, int],
        grid: tuple[int, int, int],
        repeat: int = 1,
        timeout: float | None = None,
    ) -> None:
        """Execute the program over ``grid`` workgroups, ``repeat`` times, mutating ``memory``
        (one storage array per non-workgroup buffer; ``counts`` gives every buffer's length)."""
        prog = self.program
        wx, wy, wz = prog.workgroup_size
        gx, gy, gz = grid
        wg_size = wx * wy * wz
        total_wgs = gx * gy * gz
        if total_wgs == 0:
            return
        shared = [b for b in prog.buffers if b.access is Access.WORKGROUP]
        private = [b for b in prog.buffers if b.access is Access.PRIVATE]
        lanes = min(CHUNK_INVOCATIONS, CHUNK_PRIVATE_BYTES // max(1, sum(b.count * b.dtype.size for b in private)))
        per_chunk = max(1, lanes // wg_size)
        deadline = None if timeout is None else time.monotonic() + timeout
        one_d = wy == wz == gy == gz == 1
        with np.errstate(all="ignore"):
            for _ in range(repeat):
                for w0 in range(0, total_wgs, per_chunk):
                    nwg = min(per_chunk, total_wgs - w0)
                    n = nwg * wg_size
                    fr = Frame(n)
                    fr.deadline = deadline
                    check_deadline(fr)  # between chunks of workgroups, too: a huge grid stops in time
                    fr.mem.update(memory)
                    fr.counts.update(counts)
                    if shared:
                        fr.lane_wg = np.repeat(np.arange(nwg, dtype=np.uint64), wg_size)
                        for b in shared:
                            fr.mem[b.name] = np.zeros(nwg * b.count, b.dtype.storage_dtype)
                            fr.counts[b.name] = b.count
                    if private:  # zero in every invocation
                        fr.lane_self = np.arange(n, dtype=np.uint64)
                        for b in private:
                            fr.mem[b.name] = np.zeros(n * b.count, b.dtype.storage_dtype)
                            fr.counts[b.name] = b.count
                    if self.collective:
                        fr.subgroups = subgroup_slots(nwg, wg_size)
                    self._ids(fr, w0, grid, one_d)
                    self.body(fr, None)

    def _ids(self, fr: Frame, w0: int, grid: tuple[int, int, int], one_d: bool) -> None:
        if not self.ids_used:
            return
        (wx, wy, wz), n = self.program.workgroup_size, fr.n
        if one_d:  # only the ids the program reads, computed in u32 where nothing wraps
            start = w0 * wx
            zero = np.zeros(n, np.uint32)
            for kind, axis in self.ids_used:
                if axis != 0:
                    v = zero
                elif kind is IdKind.GLOBAL:
                    if start + n <= 1 << 32:
                        v = np.arange(start, start + n, dtype=np.uint32)
                        fr.ranges[id(v)] = start
                    else:
                        v = (np.uint64(start) + np.arange(n, dtype=np.uint64)).astype(np.uint32)
                elif kind is IdKind.LOCAL:
                    v = (np.arange(n, dtype=np.uint64) % np.uint64(wx)).astype(np.uint32)
                else:
                    v = (np.uint64(w0) + np.arange(n, dtype=np.uint64) // np.uint64(wx)).astype(np.uint32)
                fr.ids[(kind, axis)] = v
            return
        wg_size = wx * wy * wz
        lane = np.arange(n, dtype=np.uint64)
        loc = lane % np.uint64(wg_size)
        wg = np.uint64(w0) + lane // np.uint64(wg_size)
        gx, gy, _ = grid
        local_xyz = (loc % np.uint64(wx), (loc // np.uint64(wx)) % np.uint64(wy), loc // np.uint64(wx * wy))
        group_xyz = (wg % np.uint64(gx), (wg // np.uint64(gx)) % np.uint64(gy), wg // np.uint64(gx * gy))
        size = (wx, wy, wz)
        for kind, axis in self.ids_used:
            if kind is IdKind.LOCAL:
                v = local_xyz[axis]
            elif kind is IdKind.WORKGROUP:
                v = group_xyz[axis]
            else:
                v = group_xyz[axis] * np.uint64(size[axis]) + local_xyz[axis]
            fr.ids[(kind, axis)] = v.astype(np.uint32)


def compile_program(program: Program, registry: Registry) -> CompiledProgram:
    """Compile a *validated* program (validate it first: this assumes it is well-typed)."""
    buffers = {b.name: b for b in program.buffers}
    comp = Compiler(registry, buffers, {})
    body = comp.block(program.body)
    return CompiledProgram(program, body, frozenset(comp.ids_used), comp.uses_collectives)
