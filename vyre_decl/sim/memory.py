"""One simulated device's global memory: real allocations with bounds, so that a pointer outside
every live allocation is a fault (the driver turns it into a sticky ``CUDA_ERROR_ILLEGAL_ADDRESS``).

Interface (the driver model and the PTX interpreter rely on exactly this)::

    class MemoryFault(Exception): address: int; nbytes: int; write: bool
    class DeviceMemory:
        def __init__(self, base: int)   # allocations at 256-aligned addresses from base upward
        def allocate(self, nbytes: int) -> int
        def free(self, address: int) -> bool          # False: not the start of a live allocation
        def range_of(self, address: int) -> tuple[int, int] | None   # (base, size) holding address
        def read(self, address: int, nbytes: int) -> bytes
        def write(self, address: int, data: bytes | memoryview) -> None
        def fill(self, address: int, byte: int, nbytes: int) -> None
        def gather(self, addresses: np.ndarray, width: int) -> np.ndarray   # uint8 (n, width)
        def scatter(self, addresses: np.ndarray, data: np.ndarray) -> None  # lanes in order

``read``/``write``/``fill``/``gather``/``scatter`` raise ``MemoryFault`` when any byte lies outside
the live allocations (for the vector forms, naming the first bad lane's address). Every access
stays inside one allocation: allocations are never adjacent (a 256-byte gap follows each one) and
addresses are never reused after ``free``, so an access just past the end of a buffer, or through
a pointer to freed memory, always faults. ``load``/``store`` are typed forms of gather/scatter for
the interpreter (aligned elements of a numpy dtype).
"""

from __future__ import annotations

import bisect

import numpy as np

__all__ = ["DeviceMemory", "MemoryFault", "ALIGNMENT"]

ALIGNMENT = 256  # cuMemAlloc's alignment
_GAP = 256  # unmapped bytes after each allocation


class MemoryFault(Exception):
    """An access to bytes outside every live allocation."""

    def __init__(self, address: int, nbytes: int, write: bool) -> None:
        self.address, self.nbytes, self.write = address, nbytes, write
        what = "write" if write else "read"
        super().__init__(f"{what} of {nbytes} byte(s) at {address:#x} is outside every live allocation")


class DeviceMemory:
    """Global memory of one simulated device: a bump allocator over numpy byte arrays."""

    def __init__(self, base: int) -> None:
        if base < 0 or base % ALIGNMENT:
            raise ValueError(f"base {base:#x} must be a non-negative multiple of {ALIGNMENT}")
        self.base = base
        self._next = base
        self._bases: list[int] = []  # sorted starts of live allocations
        self._blocks: dict[int, np.ndarray] = {}
        self._table: tuple[np.ndarray, np.ndarray] | None = None  # (starts, ends) for vector lookups

    # --- allocation
    def allocate(self, nbytes: int) -> int:
        """The address of ``nbytes`` new bytes (zero-filled, 256-aligned); ValueError for nbytes <= 0."""
        if nbytes <= 0:
            raise ValueError(f"cannot allocate {nbytes} bytes")
        address = self._next
        self._next = address + -(-(nbytes + _GAP) // ALIGNMENT) * ALIGNMENT
        self._blocks[address] = np.zeros(nbytes, dtype=np.uint8)
        bisect.insort(self._bases, address)
        self._table = None
        return address

    def free(self, address: int) -> bool:
        if address not in self._blocks:
            return False
        del self._blocks[address]
        self._bases.pop(bisect.bisect_left(self._bases, address))
        self._table = None
        return True

    @property
    def allocations(self) -> dict[int, int]:
        """Live allocations: base -> size."""
        return {b: int(a.size) for b, a in self._blocks.items()}

    def range_of(self, address: int) -> tuple[int, int] | None:
        i = bisect.bisect_right(self._bases, address) - 1
        if i < 0:
            return None
        start = self._bases[i]
        size = int(self._blocks[start].size)
        return (start, size) if address < start + size else None

    # --- scalar (host-side) access
    def _span(self, address: int, nbytes: int, write: bool) -> tuple[np.ndarray, int]:
        found = self.range_of(address)
        if found is None or nbytes < 0 or address + nbytes > found[0] + found[1]:
            raise MemoryFault(address, nbytes, write)
        return self._blocks[found[0]], address - found[0]

    def read(self, address: int, nbytes: int) -> bytes:
        if nbytes == 0:
            return b""
        block, off = self._span(address, nbytes, False)
        return block[off:off + nbytes].tobytes()

    def write(self, address: int, data: bytes | memoryview) -> None:
        raw = np.frombuffer(memoryview(data).cast("B"), dtype=np.uint8)
        if raw.size == 0:
            return
        block, off = self._span(address, raw.size, True)
        block[off:off + raw.size] = raw

    def fill(self, address: int, byte: int, nbytes: int) -> None:
        if nbytes == 0:
            return
        block, off = self._span(address, nbytes, True)
        block[off:off + nbytes] = byte & 0xFF

    # --- vector (kernel-side) access
    def _lookup(self, addresses: np.ndarray, width: int, write: bool) -> tuple[np.ndarray, np.ndarray]:
        """For each address, the index of its allocation in ``_bases`` and its offset in it."""
        if self._table is None:
            starts = np.array(self._bases, dtype=np.uint64)
            ends = np.array([b + self._blocks[b].size for b in self._bases], dtype=np.uint64)
            self._table = (starts, ends)
        starts, ends = self._table
        addr = np.asarray(addresses, dtype=np.uint64)
        which = np.searchsorted(starts, addr, side="right").astype(np.int64) - 1
        ok = which >= 0
        safe = np.where(ok, which, 0)
        if starts.size:
            ok &= addr + np.uint64(width) <= ends[safe]
            ok &= addr + np.uint64(width) > addr  # no wrap past 2^64
        else:
            ok[:] = False
        if not ok.all():
            bad = int(np.flatnonzero(~ok)[0])
            raise MemoryFault(int(addr[bad]), width, write)
        return safe, (addr - starts[safe]).astype(np.int64)

    def _groups(self, which: np.ndarray) -> list[tuple[np.ndarray, slice | np.ndarray]]:
        """(allocation, lane selector) pairs; one pair (all lanes) in the common one-buffer case."""
        first = int(which[0]) if which.size else 0
        if which.size == 0 or (which == first).all():
            return [(self._blocks[self._bases[first]], slice(None))] if which.size else []
        return [(self._blocks[self._bases[int(w)]], np.flatnonzero(which == w)) for w in np.unique(which)]

    def gather(self, addresses: np.ndarray, width: int) -> np.ndarray:
        which, off = self._lookup(addresses, width, False)
        out = np.empty((off.size, width), dtype=np.uint8)
        cols = np.arange(width, dtype=np.int64)
        for block, sel in self._groups(which):
            out[sel] = block[off[sel][:, None] + cols]
        return out

    def scatter(self, addresses: np.ndarray, data: np.ndarray) -> None:
        data = np.asarray(data, dtype=np.uint8)
        width = data.shape[1]
        which, off = self._lookup(addresses, width, True)
        cols = np.arange(width, dtype=np.int64)
        for block, sel in self._groups(which):
            o, d = off[sel], data[sel]
            if not _increasing(o):  # overlapping lanes: byte by byte, the later lane wins
                flat = (o[:, None] + cols).ravel()
                keep = _last_of_each(flat)
                block[flat[keep]] = d.ravel()[keep]
            else:
                block[o[:, None] + cols] = d

    def load(self, addresses: np.ndarray, dtype: np.dtype) -> np.ndarray:
        """Elements of ``dtype`` at ``addresses`` (each aligned to its size)."""
        dt = np.dtype(dtype)
        which, off = self._lookup(addresses, dt.itemsize, False)
        out = np.empty(off.size, dtype=dt)
        for block, sel in self._groups(which):
            out[sel] = block.view(dt)[off[sel] // dt.itemsize] if block.size % dt.itemsize == 0 else \
                block[off[sel][:, None] + np.arange(dt.itemsize)].view(dt)[:, 0]
        return out

    def store(self, addresses: np.ndarray, values: np.ndarray) -> None:
        """Store ``values`` (one per lane, aligned elements); a later lane wins."""
        dt = values.dtype
        which, off = self._lookup(addresses, dt.itemsize, True)
        for block, sel in self._groups(which):
            o, v = off[sel], values[sel]
            if not _increasing(o):
                keep = _last_of_each(o)
                o, v = o[keep], v[keep]
            if block.size % dt.itemsize == 0:
                block.view(dt)[o // dt.itemsize] = v
            else:
                block[o[:, None] + np.arange(dt.itemsize)] = v.view(np.uint8).reshape(-1, dt.itemsize)


def _increasing(offsets: np.ndarray) -> bool:
    """True when the offsets strictly increase (no two lanes share an element)."""
    return offsets.size < 2 or bool((offsets[1:] > offsets[:-1]).all())


def _last_of_each(offsets: np.ndarray) -> np.ndarray:
    """Indices of the last occurrence of each distinct offset (numpy leaves the winner of a
    repeated fancy-index assignment unspecified, so a defined order needs this)."""
    _, first_from_end = np.unique(offsets[::-1], return_index=True)
    return offsets.size - 1 - first_from_end
