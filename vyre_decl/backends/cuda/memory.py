"""The memory room: device allocations (a pool of power-of-two blocks), page-locked staging for
transfers, and resident buffers (``DeviceBuffer``) with their uploads, downloads and frees.

A ``Memory`` belongs to one ``Device``. Arenas for numpy dispatches come from the same pool
(``take``/``give``); ``staging`` is the shared pinned area the synchronous paths copy through.
"""

from __future__ import annotations

import ctypes
import weakref
from ctypes import byref, c_size_t, c_uint64, c_void_p
from typing import Any, Callable

import numpy as np

from ... import libcuda as cu
from ...ir.diagnostics import VyreError
from ...ir.nodes import Access, BufferDecl
from ...ir.types import DataType
from ..hostio import as_storage
from .device import Device
from .dlpack import KDL_CUDA, export_capsule

__all__ = ["Memory", "DeviceBuffer", "Pinned", "ALIGN", "aligned"]

ALIGN = 256
_SPARE_STAGING = 4  # pinned areas kept for dispatches in flight
_OUT_OF_MEMORY = 2  # CUDA_ERROR_OUT_OF_MEMORY
_NUMPY_TO_TYPE = {
    np.dtype(np.uint8): DataType.U8, np.dtype(np.int8): DataType.I8, np.dtype(np.uint16): DataType.U16,
    np.dtype(np.int16): DataType.I16, np.dtype(np.uint32): DataType.U32, np.dtype(np.int32): DataType.I32,
    np.dtype(np.uint64): DataType.U64, np.dtype(np.int64): DataType.I64, np.dtype(np.float16): DataType.F16,
    np.dtype(np.float32): DataType.F32, np.dtype(np.float64): DataType.F64, np.dtype(np.bool_): DataType.BOOL,
}


def aligned(n: int) -> int:
    return -(-max(n, 1) // ALIGN) * ALIGN


def _packed(sizes: list[int]) -> tuple[list[int], int]:
    """Offsets of blocks of these sizes laid end to end (each aligned), and the total."""
    offsets, total = [], 0
    for n in sizes:
        offsets.append(total)
        total += aligned(n)
    return offsets, total


def dtype_of(arr: np.ndarray) -> DataType:
    try:
        return _NUMPY_TO_TYPE[arr.dtype]
    except KeyError:
        raise VyreError.one("D002", f"no vyre type for numpy dtype {arr.dtype}", "upload",
                            "pass dtype=... explicitly (e.g. 'bf16' for uint16 bit patterns)") from None


class DeviceBuffer:
    """Device memory owned by one CUDA backend, holding ``count`` elements of ``dtype``."""

    __slots__ = ("memory", "ptr", "nbytes", "dtype", "count", "capacity", "freed", "owned", "owner", "__weakref__")

    def __init__(self, memory: Memory, ptr: int, dtype: DataType, count: int, capacity: int, owned: bool = True):
        self.memory, self.ptr, self.dtype, self.count = memory, ptr, dtype, count
        self.nbytes = count * dtype.size
        self.capacity, self.freed, self.owned = capacity, False, owned
        self.owner: Any = None  # the foreign array a wrapped buffer views

    def __repr__(self) -> str:
        state = "freed" if self.freed else f"0x{self.ptr:x}"
        return f"<DeviceBuffer {self.count} x {self.dtype} at {state}>"

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        if self.freed:
            raise VyreError.one("C004", "this device buffer was freed", repr(self), "allocate a new buffer")
        return {
            "shape": (self.count,),
            "typestr": self.dtype.storage_dtype.str,
            "data": (self.ptr, False),
            "version": 3,
            "strides": None,
            "stream": self.memory.device.stream_handle,
        }

    def download(self) -> np.ndarray:
        return self.memory.download(self)

    def download_range(self, offset: int, count: int) -> np.ndarray:
        return self.memory.download_range(self, offset, count)

    def upload(self, data: Any, offset: int = 0) -> None:
        self.memory.upload_at(self, offset, data)

    def free(self) -> None:
        self.memory.free(self)

    def __dlpack_device__(self) -> tuple[int, int]:
        return (KDL_CUDA, self.memory.device.info.ordinal)

    def __dlpack__(self, stream: Any = None, **_: Any) -> Any:
        """A DLPack capsule viewing this buffer (PyTorch, CuPy, JAX: ``torch.from_dlpack(buf)``).
        The consumer's ``stream`` (the DLPack rule: None is the legacy default stream, -1 asks for
        no ordering, 1 and 2 name the default streams) waits on the GPU for the work queued on
        this backend so far."""
        if self.freed:
            raise VyreError.one("C004", "this device buffer was freed", repr(self), "allocate a new buffer")
        if stream != -1:
            target = cu.CU_STREAM_LEGACY if stream is None else stream
            if isinstance(target, bool) or not isinstance(target, int) or target < 0:
                raise VyreError.one("D012", f"__dlpack__(stream={stream!r}) is not a CUDA stream handle", repr(self),
                                    "pass the consumer's CUstream handle as an int (None: the legacy default stream)")
            self.memory.device.order_before(target)
        return export_capsule(self, self.memory.device.info.ordinal)


class Pinned:
    """A growable page-locked host buffer for transfers."""

    def __init__(self) -> None:
        self.ptr, self.size, self.view = 0, 0, np.zeros(0, np.uint8)

    def ensure(self, nbytes: int) -> None:
        if nbytes <= self.size:
            return
        size = max(1 << 16, 1 << (nbytes - 1).bit_length())
        p = c_void_p()
        cu.call("cuMemHostAlloc", byref(p), size, 0)
        if self.ptr:
            cu.call("cuMemFreeHost", c_void_p(self.ptr))
        self.ptr, self.size = p.value or 0, size
        self.view = np.ctypeslib.as_array((ctypes.c_ubyte * size).from_address(self.ptr))

    def close(self) -> None:
        if self.ptr:
            cu.call("cuMemFreeHost", c_void_p(self.ptr))
            self.ptr, self.size, self.view = 0, 0, np.zeros(0, np.uint8)


class Memory:
    """Allocations and transfers of one device. Blocks are pooled in power-of-two buckets and
    reused instead of cuMemAlloc/cuMemFree."""

    def __init__(self, device: Device, pool_limit: int = 1 << 30, pinned_limit: int = 256 << 20) -> None:
        self.device = device
        self.pool_limit = pool_limit  # bytes kept pooled at most; a block beyond it is freed
        self.pinned_limit = pinned_limit  # bytes of page-locked staging kept between transfers
        self.staging = Pinned()
        self._free: dict[int, list[int]] = {}
        self._pooled = 0
        # live owned buffers: a buffer dropped without free() gives its block back to the pool
        self._live: dict[int, weakref.finalize] = {}
        self._abandoned: list[Pinned] = []
        self._spare: list[Pinned] = []

    def take_staging(self, nbytes: int) -> Pinned:
        """A pinned area of at least ``nbytes`` for a dispatch in flight (reused, not re-allocated)."""
        staging = self._spare.pop() if self._spare else Pinned()
        staging.ensure(nbytes)
        return staging

    def give_staging(self, staging: Pinned) -> None:
        """Return an area from ``take_staging``; a few within the pinned limit are kept, the rest
        released."""
        if len(self._spare) < _SPARE_STAGING and staging.size <= self.pinned_limit:
            self._spare.append(staging)
        else:
            staging.close()

    def _finish(self, what: str, timeout: float | None = None) -> None:
        """Wait for the queued transfers through the staging area (lock held). Past the bound
        (D013) they may still use it: a fresh one serves from now on."""
        try:
            self.device.finish(what, timeout)
        except BaseException:
            self.abandon_staging()
            raise

    def done_with_staging(self) -> None:
        """A synchronous transfer is over: a staging area grown past the pinned limit is released
        (the next transfer allocates what it needs). Lock held."""
        if self.staging.size > self.pinned_limit:
            self.staging.close()

    def abandon_staging(self) -> None:
        """Queued work still writes into the staging area (a dispatch timed out): use a fresh
        one from now on; the old one is released when the backend closes."""
        self._abandoned.append(self.staging)
        self.staging = Pinned()

    # --- the pool
    def take(self, nbytes: int) -> tuple[int, int]:
        """A device block of at least ``nbytes``: (pointer, capacity). Lock held by the caller."""
        cap = max(ALIGN, 1 << (max(nbytes, 1) - 1).bit_length())
        bucket = self._free.get(cap)
        counters = self.device.counters
        if bucket:
            counters["pool_hits"] += 1
            self._pooled -= cap
            return bucket.pop(), cap
        ptr = c_uint64()
        try:
            cu.call("cuMemAlloc_v2", byref(ptr), cap)
        except cu.CudaError as exc:
            if exc.code != _OUT_OF_MEMORY or not any(self._free.values()):
                raise
            self.trim()  # out of memory: give cached blocks back and try once more
            cu.call("cuMemAlloc_v2", byref(ptr), cap)
        counters["allocations"] += 1
        return ptr.value, cap

    def give(self, ptr: int, cap: int) -> None:
        """Return a block taken with ``take`` to the pool (freed instead when the pool is full)."""
        if self._pooled + cap > self.pool_limit:
            cu.call("cuMemFree_v2", ptr)
            self.device.counters["pool_frees"] += 1
            return
        self._free.setdefault(cap, []).append(ptr)
        self._pooled += cap

    def trim(self) -> None:
        """Free every pooled block."""
        for bucket in self._free.values():
            for ptr in bucket:
                cu.call("cuMemFree_v2", ptr)
        self._free.clear()
        self._pooled = 0

    def snapshot(self) -> dict[str, int]:
        """Pooled, live and staging bytes, and the device's free and total memory."""
        free, total = c_size_t(), c_size_t()
        if not self.device.closed:
            self.device.alive()
            cu.call("cuMemGetInfo_v2", byref(free), byref(total))
        live = [fin.peek() for fin in self._live.values()]
        return {
            "pooled_bytes": self._pooled, "pooled_blocks": sum(len(b) for b in self._free.values()),
            "pool_limit_bytes": self.pool_limit,
            "live_buffers": sum(1 for x in live if x is not None),
            "live_bytes": sum(x[2][1] for x in live if x is not None),
            "staging_bytes": self.staging.size + sum(p.size for p in self._spare),
            "pinned_limit_bytes": self.pinned_limit, "device_free_bytes": free.value, "device_total_bytes": total.value,
        }

    # --- resident buffers
    def own(self, buf: Any, where: str) -> None:
        """Raise unless ``buf`` is a live buffer of this memory."""
        if not isinstance(buf, DeviceBuffer) or buf.memory is not self:
            raise VyreError.one("D010", f"{buf!r} is not a resident buffer of this CUDA backend", f"buffer {where!r}",
                                "allocate it with this backend's allocate() (or wrap() foreign device memory)")
        if buf.freed:
            raise VyreError.one("D011", "the resident buffer was freed", f"buffer {where!r}", "allocate a new one")

    def allocate(self, dtype: DataType | str, count: int) -> DeviceBuffer:
        """Device memory for ``count`` elements of ``dtype``, zero-filled."""
        dev = self.device
        dev.alive()
        t = dtype if isinstance(dtype, DataType) else DataType(dtype)
        if count < 0 or count > 2**32 - 1:
            raise VyreError.one("D007", f"cannot allocate {count} elements", "allocate", "use 0 .. 2^32-1 elements")
        with dev.lock:
            ptr, cap = self.take(count * t.size)
            dev.zero(ptr, cap)
        buf = DeviceBuffer(self, ptr, t, count, cap)
        fin = self._live[ptr] = weakref.finalize(buf, self._dropped, ptr, cap)
        fin.atexit = False  # at exit the process gives everything back
        return buf

    def _dropped(self, ptr: int, cap: int) -> None:
        """A live buffer was garbage-collected without free(): its block goes back to the pool
        (no driver call, so this is safe from any thread)."""
        if self._live.pop(ptr, None) is not None and not self.device.closed:
            self._free.setdefault(cap, []).append(ptr)

    def upload(self, data: Any, dtype: DataType | str | None = None) -> DeviceBuffer:
        """A new resident buffer holding ``data`` (a numpy array; ``dtype`` defaults to its own)."""
        arr = np.ascontiguousarray(data)
        t = dtype if isinstance(dtype, DataType) else DataType(dtype) if dtype else dtype_of(arr)
        buf = self.allocate(t, arr.size)
        self.upload_at(buf, 0, arr)
        return buf

    def upload_at(self, buf: DeviceBuffer, offset: int, data: Any) -> None:
        """Copy ``data`` into ``buf`` starting at element ``offset``."""
        self.own(buf, "upload")
        decl = BufferDecl("upload", Access.READ, buf.dtype, 0, 0)
        arr = as_storage(decl, data)
        if offset < 0 or offset + arr.size > buf.count:
            raise VyreError.one("D003", f"writing {arr.size} elements at {offset} overflows the buffer of {buf.count}",
                                repr(buf), "write inside the buffer")
        dev = self.device
        with dev.lock:
            dev.alive()
            self.staging.ensure(arr.nbytes)
            ctypes.memmove(self.staging.ptr, arr.ctypes.data, arr.nbytes)
            dev.copy_in(buf.ptr + offset * buf.dtype.size, self.staging.ptr, arr.nbytes)
            self._finish("the upload")  # the staging area is reused by the next transfer
            self.done_with_staging()

    def upload_many(self, arrays: Any) -> list[DeviceBuffer]:
        """A new resident buffer for each array, all copied with one synchronisation."""
        arrs = [np.ascontiguousarray(a) for a in arrays]
        bufs = [self.allocate(dtype_of(a), a.size) for a in arrs]
        offsets, total = _packed([a.nbytes for a in arrs])
        dev = self.device
        with dev.lock:
            dev.alive()
            self.staging.ensure(total)
            for a, off, buf in zip(arrs, offsets, bufs):
                if a.nbytes:
                    ctypes.memmove(self.staging.ptr + off, a.ctypes.data, a.nbytes)
                    dev.copy_in(buf.ptr, self.staging.ptr + off, a.nbytes)
            self._finish("the upload")
            self.done_with_staging()
        return bufs

    def download_many(self, bufs: Any) -> list[np.ndarray]:
        """The contents of each buffer, all copied with one synchronisation."""
        items = list(bufs)
        return self.read_after(None, self.ranges([(b, 0, b.count if isinstance(b, DeviceBuffer) else 0)
                                                  for b in items], "download_many"))

    def download(self, buf: DeviceBuffer) -> np.ndarray:
        """Every element of ``buf`` (waits for queued work)."""
        return self.download_range(buf, 0, buf.count if isinstance(buf, DeviceBuffer) else 0)

    def download_range(self, buf: DeviceBuffer, offset: int, count: int) -> np.ndarray:
        """Elements ``offset .. offset + count`` of ``buf`` (waits for queued work)."""
        return self.read_after(None, self.ranges([(buf, offset, count)], "download"))[0]

    def ranges(self, reads: Any, where: str) -> list[tuple[DeviceBuffer, int, int]]:
        """Read-back ranges checked before anything runs: each a buffer (all of it) or
        ``(buffer, offset, count)`` inside it."""
        out = []
        for i, item in enumerate(reads):
            buf, offset, count = (item, 0, item.count) if isinstance(item, DeviceBuffer) else \
                tuple(item) if isinstance(item, (tuple, list)) and len(item) == 3 else (item, 0, 0)
            self.own(buf, f"{where}[{i}]")
            if not all(isinstance(v, int) and not isinstance(v, bool) for v in (offset, count)) or \
                    offset < 0 or count < 0 or offset + count > buf.count:
                raise VyreError.one("D003", f"range {offset!r}..+{count!r} is outside the buffer of {buf.count}",
                                    f"{where}[{i}]", "read inside the buffer: (buffer, offset, count)")
            out.append((buf, offset, count))
        return out

    def read_after(self, work: Callable[[], None] | None, reads: list[tuple[DeviceBuffer, int, int]],
                   timeout: float | None = None) -> list[np.ndarray]:
        """Queue ``work``, then the copies of ``reads`` (checked by ``ranges``), wait once (at most
        ``timeout`` seconds, default: the backend's bound) and return the ranges' contents."""
        offsets, total = _packed([count * buf.dtype.size for buf, _, count in reads])
        dev = self.device
        with dev.lock:
            dev.alive()
            if work is not None:
                work()
            self.staging.ensure(total)
            for (buf, offset, count), off in zip(reads, offsets):
                if count:
                    dev.copy_out(self.staging.ptr + off, buf.ptr + offset * buf.dtype.size, count * buf.dtype.size)
            self._finish("the read-back", timeout)
            out = [self.staging.view[off: off + count * buf.dtype.size].view(buf.dtype.storage_dtype).copy()
                   for (buf, _, count), off in zip(reads, offsets)]
            self.done_with_staging()
            return out

    def free(self, buf: DeviceBuffer) -> None:
        self.own(buf, "free")
        dev = self.device
        with dev.lock:
            buf.freed = True
            dev.changed()
            gone = self._live.pop(buf.ptr, None)
            if gone is not None:
                gone.detach()
            if buf.owned and dev.poisoned is None:
                dev.alive()
                dev.finish("the work queued before free()")  # it may still use the block
                self.give(buf.ptr, buf.capacity)

    def close(self) -> None:
        """Free every block: live buffers (they read as freed afterwards), the pool, the staging
        area. The device is closed after this."""
        with self.device.lock:
            for ptr, fin in list(self._live.items()):
                alive = fin.peek()
                if alive is not None:
                    alive[0].freed = True
                fin.detach()
                if self.device.poisoned is None:
                    cu.call("cuMemFree_v2", ptr)
            self._live.clear()
            if self.device.poisoned is None:
                self.trim()
            self.staging.close()
            for staging in self._abandoned + self._spare:
                staging.close()
            self._spare.clear()

    def adopt(self, ptr: int, t: DataType, count: int, owner: Any) -> DeviceBuffer:
        """A resident buffer viewing foreign device memory (not freed by us; ``owner`` kept alive)."""
        buf = DeviceBuffer(self, ptr, t, count, count * t.size, owned=False)
        buf.owner = owner
        return buf
