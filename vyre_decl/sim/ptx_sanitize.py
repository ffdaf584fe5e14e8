"""The sanitizer's checks on shared and local memory: bounds (findings 'oob_shared' and
'oob_local', or without the sanitizer a KernelFault 'illegal_address'), races between barriers
(finding 'shared_race': two lanes of one block touch the same byte, at least one writing, with no
bar.sync between them) and local bytes read before their thread wrote them (finding
'uninitialised_local': a thread's local memory starts undefined on hardware; here it reads 0).
Atomics, and loads and stores that are .relaxed, .acquire, .release or .volatile, are not tracked
(strong accesses do not race with one another). Barrier divergence and unwritten
registers are checked where they happen (ptx_exec, ptx_machine)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .ptx_machine import Machine

__all__ = ["RaceTracker", "shared_access", "local_access"]


class RaceTracker:
    """For each shared byte of every block, since the last barrier: the lane that wrote it (-1:
    none) and the lane that read it (-1: none, -2: several lanes)."""

    def __init__(self, nbytes: int) -> None:
        self.writer = np.full(nbytes, -1, dtype=np.int64)
        self.reader = np.full(nbytes, -1, dtype=np.int64)
        # scratch of _touched_twice: only the cells an access just wrote are read back, so it is never reset
        self.first = np.empty(nbytes, dtype=np.int64)
        self.last = np.empty(nbytes, dtype=np.int64)
        self.dirty = False

    def reset(self) -> None:
        if self.dirty:
            self.writer.fill(-1)
            self.reader.fill(-1)
            self.dirty = False

    def _touched_twice(self, byte: np.ndarray) -> np.ndarray:
        """For each element of ``byte``: whether another element names the same byte (O(n), no sort)."""
        order = np.arange(byte.size)
        self.last[byte] = order  # numpy stores in order: the last occurrence stays
        self.first[byte[::-1]] = order[::-1]  # ... and here the first
        return self.first[byte] != self.last[byte]

    def access(self, m: Machine, flat: np.ndarray, lanes: np.ndarray, width: int, write: bool) -> None:
        if flat.size == 0:
            return
        self.dirty = True
        byte = (flat[:, None] + np.arange(width)).ravel() if width > 1 else flat.astype(np.int64, copy=False)
        lane = np.repeat(lanes, width) if width > 1 else lanes
        w, r = self.writer[byte], self.reader[byte]
        clash = (w >= 0) & (w != lane)
        if write:
            clash |= (r == -2) | ((r >= 0) & (r != lane))
        twice = self._touched_twice(byte)  # several lanes of this instruction touch the byte
        if write:
            clash |= twice
        if clash.any():
            k = int(np.flatnonzero(clash)[0])
            other = int(w[k]) if w[k] >= 0 and w[k] != lane[k] else int(r[k])
            _report(m, int(byte[k]), int(lane[k]), other, write)
        if write:
            self.writer[byte] = lane
        else:
            # every occurrence of a byte read by several lanes writes -2, so the order does not matter
            many = twice | ((r >= 0) & (r != lane)) | (r == -2)
            self.reader[byte] = np.where(many, -2, lane)

def _report(m: Machine, byte: int, lane: int, other: int, write: bool) -> None:
    size = m.shared.shape[1]
    block, offset = divmod(byte, size) if size else (0, byte)
    who = f"thread {lane % m.threads}"
    if other >= 0:
        who += f" and thread {other % m.threads}"
    else:
        who += " and other threads"
    m.report("shared_race", f"{who} of block {block + m.block_base} access shared byte {offset} "
             f"({'a write' if write else 'a read'} meets {'an access' if write else 'a write'}) with no "
             "bar.sync between them")


def _in_bounds(m: Machine, addr: np.ndarray, width: int, write: bool, size: int, space: str, owner: str
               ) -> np.ndarray:
    """Which accesses of ``width`` bytes at ``addr`` fit the ``size`` bytes of ``space`` memory each
    ``owner`` (block or thread) has; the first that does not is a finding 'oob_<space>' (the
    access is dropped), or without the sanitizer a fault."""
    ok = addr + np.uint64(width) <= np.uint64(size)
    if not ok.all():
        bad = int(addr[np.flatnonzero(~ok)[0]])
        what = f"{'write' if write else 'read'} of {width} bytes at {space} offset {bad:#x}"
        if not m.sanitize:
            raise m.fault("illegal_address", f"{what}: the {owner} has {size} bytes of {space} memory")
        m.report(f"oob_{space}", f"{what}, past the {owner}'s {size} bytes of {space} memory (the access is dropped)")
    return ok


def shared_access(m: Machine, addr: np.ndarray, idx: Any, width: int, write: bool) -> tuple[np.ndarray, np.ndarray]:
    """Flat indices into the chunk's shared bytes for each active lane, and which are in bounds."""
    size = m.shared.shape[1]
    lanes = np.arange(m.n)[idx]
    ok = _in_bounds(m, addr, width, write, size, "shared", "block")
    flat = m.block_of[lanes] * size + np.where(ok, addr, 0).astype(np.int64)
    if m.race is not None:
        good = np.flatnonzero(ok)
        m.race.access(m, flat[good], lanes[good], width, write)
    return flat, ok


def local_access(m: Machine, addr: np.ndarray, idx: Any, width: int, write: bool
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each active lane: its lane number, the columns of its local bytes, and whether the
    access is in bounds (an access out of bounds is a finding and dropped, or without the sanitizer
    a fault). A read of bytes the lane never wrote is a finding; a write marks them written."""
    size = m.local.shape[1]
    lanes = np.arange(m.n)[idx]
    ok = _in_bounds(m, addr, width, write, size, "local", "thread")
    cols = np.where(ok, addr, 0).astype(np.int64)[:, None] + np.arange(width)
    seen = m.local_written
    if seen is not None:
        good = np.flatnonzero(ok)
        if write:
            seen[lanes[good, None], cols[good]] = True
        elif good.size and not seen[lanes[good, None], cols[good]].all():
            k = good[np.flatnonzero(~seen[lanes[good, None], cols[good]].all(axis=1))[0]]
            lane = int(lanes[k])
            m.report("uninitialised_local", f"thread {lane % m.threads} of block {lane // m.threads + m.block_base} "
                     f"reads {width} bytes at local offset {int(addr[k]):#x} before it wrote them (local memory "
                     "starts undefined on hardware; here it reads 0)")
    return lanes, cols, ok
