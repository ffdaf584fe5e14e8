"""The simulated driver's memory calls: device allocations, pinned host memory, memsets and copies.

Device memory is a ``DeviceMemory`` per device (vyre_decl.sim.memory); an allocation belongs to
the context that made it. A stream-ordered call works in its stream's context (the current one
for the default streams): a memset needs a pointer of that context (another context's pointer is
CUDA_ERROR_INVALID_VALUE, as the driver answered on the H100 in issue 25); copies may name any
live allocation (unified addressing).

When a copy touches host memory follows the CUDA "API synchronization behavior" rules:

- ``cuMemcpyHtoD_v2``: from pageable memory, the legacy stream's queued work runs first and the
  host bytes are read at the call, but the device write stays queued on the legacy stream (the
  DMA "may not have completed"); from pinned memory the call waits for the copy.
- ``cuMemcpyDtoH_v2``: waits for the copy. ``cuMemcpyDtoD_v2`` and ``cuMemsetD8_v2``: queued on
  the legacy stream, not waited for (device memory targets).
- ``cuMemcpyHtoDAsync_v2``: pageable host bytes are read at the call (staged), pinned ones when
  the copy runs. ``cuMemcpyDtoHAsync_v2``: to pageable memory the call waits for the copy, to
  pinned memory the bytes land when the copy runs.

Pinned memory (``cuMemHostAlloc``) is real host memory, page aligned, kept alive by the model
until ``cuMemFreeHost`` releases it (queued copies that use it run first). When its context is
destroyed with pinned memory still allocated, those buffers are kept (``graveyard``) so that a
view the program still holds reads stale bytes rather than freed memory; the driver no longer
knows them.

Modelled durations: a copy costs 1 µs plus its bytes at 25 bytes/ns between host and device, or
at the device's memory bandwidth (read and write) on the device; a memset 1 µs plus its bytes at
the memory bandwidth.
"""

from __future__ import annotations

import ctypes
from ctypes import c_size_t, c_uint64, c_void_p

from .driver_errors import INVALID_VALUE, NOT_FOUND, OUT_OF_MEMORY, DriverError
from .driver_queue import Work, flush, force
from .driver_state import CtxState, DriverBase, Pinned, SimDevice, read_host, write_out

__all__ = ["MemoryCalls"]

_HOST_LINK = 25.0  # bytes per nanosecond between host and device
_PAGE = 4096
_HOST_ALLOC_FLAGS = 0x7  # CU_MEMHOSTALLOC_PORTABLE | DEVICEMAP | WRITECOMBINED


class MemoryCalls(DriverBase):
    """Allocations, pinned memory, memsets and copies."""

    def cuMemAlloc_v2(self, pointer: int | None, nbytes: int) -> int:
        state = self.ctx()
        if not pointer or nbytes == 0:
            raise DriverError(INVALID_VALUE, "cuMemAlloc needs an output pointer and a size")
        self.unsafe_during_capture()
        dev = state.device
        if dev.used + nbytes > dev.profile.total_memory:
            raise DriverError(OUT_OF_MEMORY, f"{nbytes} bytes requested, {dev.profile.total_memory - dev.used} free")
        ptr = dev.memory.allocate(nbytes)
        state.allocations[ptr] = nbytes
        dev.used += nbytes
        write_out(c_uint64, pointer, ptr)
        return 0

    def cuMemFree_v2(self, ptr: int) -> int:
        state = self.ctx()
        self.unsafe_during_capture()
        if ptr not in state.allocations:
            raise DriverError(INVALID_VALUE, f"0x{ptr:x} is not an allocation of the current context")
        flush(state, self)  # freeing waits for the device (as cudaFree does)
        self.check_healthy(state)
        state.device.memory.free(ptr)
        state.device.used -= state.allocations.pop(ptr)
        return 0

    def cuMemGetInfo_v2(self, free: int | None, total: int | None) -> int:
        dev = self.ctx().device
        write_out(c_size_t, free, dev.profile.total_memory - dev.used)
        write_out(c_size_t, total, dev.profile.total_memory)
        return 0

    def cuMemGetAddressRange_v2(self, base: int | None, size: int | None, ptr: int) -> int:
        state = self.ctx()
        found = state.device.memory.range_of(ptr)
        if found is None or found[0] not in state.allocations:
            raise DriverError(NOT_FOUND, f"0x{ptr:x} is not device memory of the current context")
        if base:
            write_out(c_uint64, base, found[0])
        if size:
            write_out(c_size_t, size, found[1])
        return 0

    def cuMemHostAlloc(self, pointer: int | None, nbytes: int, flags: int) -> int:
        state = self.ctx()
        if not pointer or nbytes == 0 or flags & ~_HOST_ALLOC_FLAGS:
            raise DriverError(INVALID_VALUE, "cuMemHostAlloc needs an output pointer, a size and known flags")
        buffer = (ctypes.c_char * (nbytes + _PAGE))()
        address = -(-ctypes.addressof(buffer) // _PAGE) * _PAGE
        state.pinned[address] = Pinned(address, nbytes, buffer, state)
        write_out(c_void_p, pointer, address)
        return 0

    def cuMemFreeHost(self, pointer: int | None) -> int:
        state = self.ctx()
        block = state.pinned.get(pointer or 0)
        if block is None:
            raise DriverError(INVALID_VALUE, "not pinned memory of the current context")
        for dev in self.devices:  # queued copies may still read or write it
            if dev.context.state is not None and not dev.context.state.poisoned:
                flush(dev.context.state, self)
        del state.pinned[block.address]  # the host memory is released, as the driver does
        return 0

    # --- memsets
    def cuMemsetD8_v2(self, ptr: int, value: int, nbytes: int) -> int:
        state = self.ctx()
        self.queue(state.legacy, self._memset(state, ptr, value, nbytes))
        return 0

    def cuMemsetD8Async(self, ptr: int, value: int, nbytes: int, stream: int | None) -> int:
        target = self.target(stream)
        self.queue(target, self._memset(target.owner, ptr, value, nbytes))
        return 0

    def _memset(self, state: CtxState, ptr: int, value: int, nbytes: int) -> Work:
        if nbytes:
            self.owned(state, ptr, nbytes)
        memory, cost = state.device.memory, 1000.0 + nbytes / state.device.profile.memory_bandwidth()

        def run() -> float:
            if nbytes:
                memory.fill(ptr, value & 0xFF, nbytes)
            return cost

        return Work(f"memset 0x{ptr:x} {nbytes} bytes", run)

    # --- copies
    def cuMemcpyHtoD_v2(self, dst: int, src: int | None, nbytes: int) -> int:
        state = self.ctx()
        pinned = self._host(src, nbytes)
        self.unsafe_during_capture()
        if pinned is None:
            force(state.legacy.pending(), self)  # a pageable source: the stream syncs first
            self.check_healthy(state)
        command = self.queue(state.legacy, self._h2d(dst, src or 0, nbytes, pinned))
        if pinned is not None:
            force(command, self)
        self.check_healthy(state)
        return 0

    def cuMemcpyDtoH_v2(self, dst: int | None, src: int, nbytes: int) -> int:
        state = self.ctx()
        self.unsafe_during_capture()
        force(self.queue(state.legacy, self._d2h(dst, src, nbytes)), self)
        self.check_healthy(state)
        return 0

    def cuMemcpyDtoD_v2(self, dst: int, src: int, nbytes: int) -> int:
        state = self.ctx()
        self.queue(state.legacy, self._d2d(dst, src, nbytes))
        return 0

    def cuMemcpyHtoDAsync_v2(self, dst: int, src: int | None, nbytes: int, stream: int | None) -> int:
        target = self.target(stream)
        self.queue(target, self._h2d(dst, src or 0, nbytes, self._host(src, nbytes)))
        return 0

    def cuMemcpyDtoHAsync_v2(self, dst: int | None, src: int, nbytes: int, stream: int | None) -> int:
        target = self.target(stream)
        pinned = self._host(dst, nbytes)
        command = self.queue(target, self._d2h(dst, src, nbytes))
        if pinned is None and target.capture is None:  # pageable memory: returns once copied
            force(command, self)
            self.check_healthy(target.owner)
        return 0

    def cuMemcpyDtoDAsync_v2(self, dst: int, src: int, nbytes: int, stream: int | None) -> int:
        target = self.target(stream)
        self.queue(target, self._d2d(dst, src, nbytes))
        return 0

    def _host(self, address: int | None, nbytes: int) -> Pinned | None:
        """The pinned block holding this host range (None: pageable memory)."""
        if nbytes and not address:
            raise DriverError(INVALID_VALUE, "NULL host pointer")
        return self.pinned_at(address or 0, nbytes) if nbytes else None

    def _h2d(self, dst: int, src: int, nbytes: int, pinned: Pinned | None) -> Work:
        dev = self._device_range(dst, nbytes)
        staged = read_host(src, nbytes) if pinned is None else None  # pageable: staged at the call

        def run() -> float:
            if nbytes and dev is not None:
                dev.memory.write(dst, staged if staged is not None else read_host(src, nbytes))
            return 1000.0 + nbytes / _HOST_LINK

        return Work(f"copy host -> 0x{dst:x} {nbytes} bytes", run)

    def _d2h(self, dst: int | None, src: int, nbytes: int) -> Work:
        self._host(dst, nbytes)
        dev = self._device_range(src, nbytes)

        def run() -> float:
            if nbytes and dev is not None and dst:
                ctypes.memmove(dst, dev.memory.read(src, nbytes), nbytes)
            return 1000.0 + nbytes / _HOST_LINK

        return Work(f"copy 0x{src:x} -> host {nbytes} bytes", run)

    def _d2d(self, dst: int, src: int, nbytes: int) -> Work:
        to, source = self._device_range(dst, nbytes), self._device_range(src, nbytes)
        cost = 1000.0 + 2 * nbytes / (to.profile.memory_bandwidth() if to is not None else 1.0)

        def run() -> float:
            if nbytes and to is not None and source is not None:
                to.memory.write(dst, source.memory.read(src, nbytes))
            return cost

        return Work(f"copy 0x{src:x} -> 0x{dst:x} {nbytes} bytes", run)

    def _device_range(self, ptr: int, nbytes: int) -> SimDevice | None:
        return self.anywhere(ptr, nbytes) if nbytes else None

