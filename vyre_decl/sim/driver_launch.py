"""The simulated driver's kernel launches (``cuLaunchKernel``, ``cuLaunchCooperativeKernel``).

A launch is checked against the device (grid and block limits and dimensions of at least 1:
CUDA_ERROR_INVALID_VALUE; a block larger than the kernel's registers allow:
CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES; more dynamic shared memory than the function allows:
CUDA_ERROR_INVALID_VALUE; a cooperative grid larger than can be resident at once:
CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE), then its parameters are read **at the call**, through
the ``kernelParams`` pointers (each ``Param.nbytes`` bytes, laid out at ``Param.offset`` as the
kernel's parameter buffer) or from the ``extra`` buffer (CU_LAUNCH_PARAM_BUFFER_POINTER/SIZE), as
the driver does: memory behind the pointers may change or be freed after the call returns, and a
launch made through pointers at memory already freed reads whatever is there now.

The run itself is queued (driver_queue). It calls ``Kernel.run(grid, block, params, memory,
sanitize, dynamic_shared=, deadline=, stats=)`` of the PTX interpreter; its sanitizer findings
are appended to the driver's ``findings``; a ``KernelFault`` is the sticky error of its kind
(CUDA_ERROR_ILLEGAL_ADDRESS for an illegal address, CUDA_ERROR_MISALIGNED_ADDRESS, ...). With
``watchdog_s`` set, a kernel still running after that many seconds is stopped:
CUDA_ERROR_LAUNCH_TIMEOUT, sticky (a display GPU's watchdog). Modelled duration: 2 µs plus the
lane-instructions executed at 128 per SM per clock.
"""

from __future__ import annotations

import ctypes
import time
from ctypes import c_size_t, c_void_p
from typing import Any

from .driver_errors import COOPERATIVE_LAUNCH_TOO_LARGE, INVALID_VALUE, LAUNCH_OUT_OF_RESOURCES, DriverError
from .driver_module import SimFunction, blocks_per_sm, max_threads
from .driver_queue import Work
from .driver_state import CtxState, DriverBase
from .profiles import Profile

__all__ = ["LaunchCalls", "read_params"]

_END, _BUFFER_POINTER, _BUFFER_SIZE = 0, 1, 2
_LANES_PER_SM_CLOCK = 128  # lane-instructions an SM issues per clock (4 schedulers x 32 lanes)


def read_params(kernel: Any, params: int | None, extra: int | None) -> bytes:
    """The kernel's parameter buffer, read now through ``kernelParams`` or ``extra``."""
    plist = list(getattr(kernel, "params", []))
    size = max((p.offset + p.nbytes for p in plist), default=0)
    if params and extra:
        raise DriverError(INVALID_VALUE, "kernelParams and extra are both given")
    if extra:
        return _read_extra(extra, size)
    if plist and not params:
        raise DriverError(INVALID_VALUE, f"the kernel takes {len(plist)} parameters; kernelParams is NULL")
    out = bytearray(size)
    for i, p in enumerate(plist):
        where = c_void_p.from_address((params or 0) + 8 * i).value
        if not where:
            raise DriverError(INVALID_VALUE, f"kernelParams[{i}] ({p.name}) is NULL")
        out[p.offset:p.offset + p.nbytes] = ctypes.string_at(where, p.nbytes)
    return bytes(out)


def _read_extra(extra: int, size: int) -> bytes:
    found: dict[int, int] = {}
    for i in range(0, 64, 2):  # key/value pairs up to CU_LAUNCH_PARAM_END
        key = c_void_p.from_address(extra + 8 * i).value or 0
        if key == _END:
            break
        found[key] = c_void_p.from_address(extra + 8 * (i + 1)).value or 0
    buffer, length = found.get(_BUFFER_POINTER, 0), found.get(_BUFFER_SIZE, 0)
    given = c_size_t.from_address(length).value if length else 0
    if not buffer or given < size:
        raise DriverError(INVALID_VALUE, f"extra's parameter buffer holds {given} bytes, the kernel takes {size}")
    return ctypes.string_at(buffer, size)


def _check(profile: Profile, fn: SimFunction, grid: tuple[int, int, int], block: tuple[int, int, int],
           shared: int) -> None:
    if any(not 1 <= g <= m for g, m in zip(grid, profile.max_grid)):
        raise DriverError(INVALID_VALUE, f"grid {grid} is outside 1 .. {profile.max_grid}")
    threads = block[0] * block[1] * block[2]
    if any(not 1 <= b <= m for b, m in zip(block, profile.max_block)) or threads > profile.max_threads_per_block:
        raise DriverError(INVALID_VALUE, f"block {block} is outside the limits {profile.max_block}, "
                          f"{profile.max_threads_per_block} threads")
    if threads > max_threads(fn.kernel, profile):
        raise DriverError(LAUNCH_OUT_OF_RESOURCES, f"{threads} threads; the kernel's registers allow "
                          f"{max_threads(fn.kernel, profile)}")
    if shared > fn.max_dynamic_shared:
        raise DriverError(INVALID_VALUE, f"{shared} bytes of dynamic shared memory; the function allows "
                          f"{fn.max_dynamic_shared}")


class LaunchCalls(DriverBase):
    """Kernel launches."""

    sanitize = True  # run kernels with the interpreter's sanitizer
    watchdog_s: float | None = None  # stop a kernel running longer (CUDA_ERROR_LAUNCH_TIMEOUT, sticky)

    def cuLaunchKernel(self, function: int | None, gx: int, gy: int, gz: int, bx: int, by: int, bz: int,
                       shared: int, stream: int | None, params: int | None, extra: int | None) -> int:
        self._launch(function, (gx, gy, gz), (bx, by, bz), shared, stream, params, extra, cooperative=False)
        return 0

    def cuLaunchCooperativeKernel(self, function: int | None, gx: int, gy: int, gz: int, bx: int, by: int,
                                  bz: int, shared: int, stream: int | None, params: int | None) -> int:
        self._launch(function, (gx, gy, gz), (bx, by, bz), shared, stream, params, None, cooperative=True)
        return 0

    def _launch(self, function: int | None, grid: tuple[int, int, int], block: tuple[int, int, int], shared: int,
                stream: int | None, params: int | None, extra: int | None, cooperative: bool) -> None:
        target = self.target(stream)
        state = target.owner
        fn = self.lookup(function, SimFunction, state)  # the function and the stream: one context
        profile = state.device.profile
        _check(profile, fn, grid, block, shared)
        per_sm = blocks_per_sm(fn, profile, block[0] * block[1] * block[2], shared)
        blocks = grid[0] * grid[1] * grid[2]
        if cooperative and (not profile.cooperative_launch or blocks > per_sm * profile.multiprocessors):
            raise DriverError(COOPERATIVE_LAUNCH_TOO_LARGE, f"{blocks} blocks; {per_sm} per SM can be resident")
        data = read_params(fn.kernel, params, extra)
        self.queue(target, self._work(state, fn, grid, block, data, shared))

    def _work(self, state: CtxState, fn: SimFunction, grid: tuple[int, int, int], block: tuple[int, int, int],
              data: bytes, shared: int) -> Work:
        kernel, memory, findings, profile = fn.kernel, state.device.memory, self.findings, state.device.profile
        lanes_per_ns = profile.multiprocessors * _LANES_PER_SM_CLOCK * profile.clock_khz / 1e6

        def run() -> float:
            stats: dict[str, Any] = {}
            deadline = None if self.watchdog_s is None else time.monotonic() + self.watchdog_s
            findings.extend(kernel.run(grid, block, data, memory, self.sanitize, dynamic_shared=shared,
                                       deadline=deadline, stats=stats))
            return 2000.0 + float(stats.get("lane_instructions", 0)) / lanes_per_ns

        return Work(f"kernel {fn.name} grid {grid} block {block}", run)
