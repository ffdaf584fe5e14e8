"""The device room: one GPU's context, stream and lock, its limits, poisoning after a sticky error,
events, transfers on the stream and synchronisation.

Every other room of the CUDA backend talks to the GPU through a ``Device``: it makes the context
current on the calling thread (``alive``), turns a failed driver call into an error and poisons
itself on a sticky one (``fail``), and counts what happened (``counters``). When a resident buffer
is freed, or the device is poisoned or closed, every watched object (pre-bound launches and
graphs, ``watch``) is marked ``stale`` so that its next launch checks everything again: the steady
state reads one flag.
"""

from __future__ import annotations

import ctypes
import os
import threading
import time
import weakref
from contextlib import contextmanager
from ctypes import byref, c_int, c_size_t, c_uint64, c_void_p
from dataclasses import dataclass
from typing import Any, Callable, Iterator, NoReturn

from ... import libcuda as cu
from ...cachedir import driver_jit_dir
from ...emit import PtxModule, Target
from ...emit.target import parse_target, pick_target, probe_module
from ...ir.diagnostics import Diagnostic, VyreError
from ...ir.nodes import Program
from ...settings import env_int
from ..config import Timing

__all__ = ["Device", "DeviceInfo", "Occupancy", "CudaPoisoned", "COUNTERS", "prepare_environment", "cuda_available",
           "cuda_device_count"]

COUNTERS = ("launches", "graph_launches", "bytes_h2d", "bytes_d2h", "syncs", "ptx_memory_hits", "ptx_disk_hits",
            "cubin_disk_hits", "module_hits", "jit_compiles", "jit_ms", "load_us", "allocations", "pool_hits",
            "pool_frees", "dispatches")
TARGET_ENV = "VYRE_DECL_CUDA_TARGET"  # the newest PTX target to use (default: the device's own)


class _ThreadContext(threading.local):
    """The device whose context this thread made current last, for every device alike: a call
    costs a driver call only when it differs (another device, or none yet in this thread)."""

    device: Device | None = None


_CURRENT = _ThreadContext()


def prepare_environment() -> None:
    """Point the driver's JIT cache into our cache directory (before cuInit; user settings win),
    when that directory is ours: never into a directory the cache refuses (B009)."""
    if any(k.startswith("CUDA_CACHE_") for k in os.environ):
        return
    jit = driver_jit_dir()
    if jit is not None:
        os.environ["CUDA_CACHE_PATH"] = str(jit)
        os.environ["CUDA_CACHE_MAXSIZE"] = str(1 << 30)


def cuda_available() -> bool:
    """Whether a CUDA driver and at least one device are present."""
    prepare_environment()
    return cu.available()


def cuda_device_count() -> int:
    """How many CUDA devices this process sees (0 without a driver)."""
    prepare_environment()
    return cu.device_count()


def _loads_within(ceiling: str) -> Callable[[Target], bool]:
    """The test load of a candidate target, refusing targets above ``ceiling`` (``sm_75``; empty:
    none). A ceiling runs a newer GPU with an older target's PTX, e.g. to test sm_75 code paths."""
    top = parse_target(ceiling) if ceiling.strip() else None
    return lambda target: (top is None or target.sm <= top) and _loads(target)


def _loads(target: Target) -> bool:
    """Whether the driver JIT-compiles and loads a module of ``target`` (context current)."""
    try:
        module, _ = cu.load_module(probe_module(target).encode())
    except cu.ModuleLoadError:
        return False
    cu.call("cuModuleUnload", module)
    return True


class CudaPoisoned(VyreError):
    """The CUDA context hit a sticky error; nothing more can run in this process."""

    sticky = True  # like the driver error that caused it: callers test the attribute, not the class name


@dataclass(frozen=True)
class Occupancy:
    """How a kernel fills the device's multiprocessors at a workgroup size: workgroups resident
    per multiprocessor, the fraction of the multiprocessor's thread slots they use, and the
    kernel's resources per invocation/workgroup that set the limit."""

    threads: int
    workgroups_per_sm: int
    occupancy: float
    registers: int
    shared_bytes: int
    local_bytes: int


# CU_FUNC_ATTRIBUTE_* (cuda.h)
_FUNC_SHARED_SIZE_BYTES, _FUNC_LOCAL_SIZE_BYTES, _FUNC_NUM_REGS = 1, 3, 4


@dataclass(frozen=True)
class DeviceInfo:
    ordinal: int
    name: str
    compute_capability: tuple[int, int]
    multiprocessors: int
    warp_size: int
    max_threads_per_block: int
    max_block: tuple[int, int, int]
    max_grid: tuple[int, int, int]
    max_shared_per_block: int
    max_threads_per_sm: int
    total_memory: int
    cooperative_launch: bool
    driver_version: int
    target: Target
    max_shared_per_block_optin: int = 0  # with cuFuncSetAttribute (workgroup_memory(large) programs)


class Device:
    """One GPU: its primary context, a non-blocking stream, a lock for the stream's state, and the
    poisoned flag. ``info`` describes it; ``counters`` are the backend's telemetry."""

    def __init__(self, ordinal: int | None = None, timeout: float | None = None) -> None:
        """Device ``ordinal``; ``timeout``: the default bound, in seconds, of every wait for queued
        work (None: as long as it takes)."""
        prepare_environment()
        self.timeout = timeout
        self.lock = threading.RLock()
        self.poisoned: cu.CudaError | None = None
        self.closed = False
        self._watchers: weakref.WeakSet[Any] = weakref.WeakSet()
        self.counters: dict[str, int] = dict.fromkeys(COUNTERS, 0)
        try:
            cu.call("cuInit", 0)
        except OSError as exc:
            raise VyreError.one("C001", f"cannot load the CUDA driver library: {exc}", "libcuda.so.1",
                                "install the NVIDIA driver, or use the reference backend") from None
        ordinal = env_int("VYRE_DECL_CUDA_DEVICE", 0) if ordinal is None else ordinal
        count = c_int()
        cu.call("cuDeviceGetCount", byref(count))
        if not 0 <= ordinal < count.value:
            raise VyreError.one("C006", f"there is no CUDA device {ordinal}: this machine has {count.value}",
                                "CudaBackend(device=...)", f"use a device from 0 to {count.value - 1}")
        dev = c_int()
        cu.call("cuDeviceGet", byref(dev), ordinal)
        self._handle = dev.value
        ctx = c_void_p()
        cu.call("cuDevicePrimaryCtxRetain", byref(ctx), self._handle)
        self._ctx = ctx
        cu.call("cuCtxSetCurrent", ctx)
        _CURRENT.device = self
        try:
            self.info = self._probe(ordinal)
        except BaseException:
            cu.call("cuDevicePrimaryCtxRelease_v2", self._handle)
            raise
        stream = c_void_p()
        cu.call("cuStreamCreate", byref(stream), cu.CU_STREAM_NON_BLOCKING)
        self.stream = stream
        self._capture: c_void_p | None = None
        self._t0, self._t1 = self.new_event(timing=True), self.new_event(timing=True)
        # re-recorded for each hand-over between streams: a wait takes the event's state when queued
        self._handoff = self.new_event(timing=False)
        # the transfers of every dispatch: unprototyped pointers with argument objects made once
        # (filled in place under the lock), which costs less per call than ctypes conversions
        self._h2d, self._d2h = cu.raw("cuMemcpyHtoDAsync_v2"), cu.raw("cuMemcpyDtoHAsync_v2")
        self._copy_args = (c_uint64(), c_uint64(), c_size_t(), stream)
        self._memset, self._sync = cu.function("cuMemsetD8Async"), cu.raw("cuStreamSynchronize")

    @property
    def stream_handle(self) -> int:
        return self.stream.value or 0

    # --- state and errors
    def alive(self) -> None:
        """Raise if the device is closed or its context poisoned; make the context current on
        this thread."""
        if self.closed:
            raise VyreError.one("C005", "this CUDA backend was closed", f"device {self.info.ordinal} ({self.info.name})",
                                "create a new backend (CudaBackend(), or acquire('cuda') again)")
        if _CURRENT.device is not self:
            self.make_current()
        if self.poisoned is not None:
            e = self.poisoned
            raise CudaPoisoned(Diagnostic(
                "C002", f"the CUDA context is unusable after {e.name} from {e.call}; no more GPU work can run in "
                "this process", f"device {self.info.ordinal} ({self.info.name})",
                "restart the process (run GPU work in a subprocess to survive faults)"))

    def make_current(self) -> None:
        """This device's context current on the calling thread (recorded for every device)."""
        cu.call("cuCtxSetCurrent", self._ctx)
        _CURRENT.device = self

    @staticmethod
    def forget_current() -> None:
        """Code outside vyre_decl may have made another context current in this thread (a
        foreign library's calls): the next call of any device sets its own again."""
        _CURRENT.device = None

    @contextmanager
    def visiting(self) -> Iterator[None]:
        """This device's context current for clean-up that may interrupt other code of this
        thread (a finalizer run by the garbage collector, a close): the context that was current
        before is current again afterwards."""
        held = c_void_p()
        cu.call("cuCtxGetCurrent", byref(held))
        before, owner = held.value, _CURRENT.device
        if before != self._ctx.value:
            self.make_current()
        try:
            yield
        finally:
            if before != self._ctx.value:  # (a context released meanwhile cannot be restored)
                ok = cu.function("cuCtxSetCurrent")(c_void_p(before)) == 0
                _CURRENT.device = owner if ok and owner is not None and owner._ctx.value == before else None

    def fail(self, call: str, code: int) -> NoReturn:
        """Raise the driver error of ``call``; a sticky one poisons the device first."""
        err = cu.CudaError(call, code)
        if err.sticky:
            self.poisoned = err
            self.changed()
        raise err

    def checked(self, name: str, *args: Any) -> None:
        """Call driver function ``name``; on failure, ``fail``."""
        result = cu.function(name)(*args)
        if result:
            self.fail(name, result)

    def close(self) -> None:
        """Wait for queued work, destroy the streams and events and release the context. Safe to
        call twice; after it every call raises C005."""
        with self.lock:
            if self.closed:
                return
            self.closed = True
            self.changed()
            with self.visiting():
                if self.poisoned is None:
                    try:
                        cu.call("cuStreamSynchronize", self.stream)
                        for event in (self._t0, self._t1, self._handoff):
                            cu.call("cuEventDestroy_v2", event)
                        for stream in (self.stream, self._capture):
                            if stream is not None:
                                cu.call("cuStreamDestroy_v2", stream)
                    except cu.CudaError:  # a fault while closing: the context goes anyway
                        pass
                cu.call("cuDevicePrimaryCtxRelease_v2", self._handle)
            if _CURRENT.device is self:
                _CURRENT.device = None

    def watch(self, obj: Any) -> None:
        """Mark ``obj`` (anything with a ``stale`` attribute) stale on every ``changed()``."""
        with self.lock:
            self._watchers.add(obj)

    def changed(self) -> None:
        """A resident buffer was freed, or the device poisoned or closed: watched launches and
        graphs must check again before their next launch."""
        with self.lock:
            for obj in list(self._watchers):
                obj.stale = True

    def relaunch(self, result: int, launch: Any, args: Any, call: str = "cuLaunchKernel") -> None:
        """A launch failed: if because this thread had another context current (or none: the
        launch paths skip the per-thread record to stay one driver call), make ours current and
        launch again; otherwise raise (and poison on a sticky error)."""
        if result not in cu.STICKY_ERRORS and not self.is_current():
            self.make_current()
            self.alive()
            result = launch(*args)
        if result:
            self.fail(call, result)

    def is_current(self) -> bool:
        """Whether the driver has this device's context current on the calling thread."""
        held = c_void_p()
        return cu.function("cuCtxGetCurrent")(byref(held)) == 0 and held.value == self._ctx.value

    # --- limits
    def _probe(self, ordinal: int) -> DeviceInfo:
        def attr(name: str) -> int:
            v = c_int()
            cu.call("cuDeviceGetAttribute", byref(v), cu.ATTR[name], self._handle)
            return v.value

        raw_name = ctypes.create_string_buffer(256)
        cu.call("cuDeviceGetName", raw_name, 256, self._handle)
        total = c_size_t()
        cu.call("cuDeviceTotalMem_v2", byref(total), self._handle)
        cc = (attr("compute_capability_major"), attr("compute_capability_minor"))
        driver = cu.driver_version()
        return DeviceInfo(
            ordinal, raw_name.value.decode(), cc, attr("multiprocessor_count"), attr("warp_size"),
            attr("max_threads_per_block"),
            (attr("max_block_dim_x"), attr("max_block_dim_y"), attr("max_block_dim_z")),
            (attr("max_grid_dim_x"), attr("max_grid_dim_y"), attr("max_grid_dim_z")),
            attr("max_shared_memory_per_block"), attr("max_threads_per_multiprocessor"), total.value,
            bool(attr("cooperative_launch")), driver,
            pick_target(driver, cc, _loads_within(os.environ.get(TARGET_ENV, ""))),
            attr("max_shared_memory_per_block_optin"),
        )

    def check_static(self, program: Program, module: PtxModule) -> None:
        """Launch limits that depend on the program alone (checked once, at compile time)."""
        d, wg = self.info, program.workgroup_size
        where = f"program {program.name!r}"
        if wg[0] * wg[1] * wg[2] > d.max_threads_per_block or any(w > m for w, m in zip(wg, d.max_block)):
            raise VyreError.one("D009", f"workgroup {wg} exceeds the device's limits ({d.max_threads_per_block} "
                                f"threads, {d.max_block} per axis)", where, "use a smaller workgroup size")
        if module.abi.shared_bytes > d.max_shared_per_block:
            raise VyreError.one("D009", f"{module.abi.shared_bytes} bytes of workgroup memory exceed the "
                                f"device's {d.max_shared_per_block}", where, "use smaller workgroup buffers")
        dynamic = module.abi.dynamic_shared_bytes
        if dynamic > d.max_shared_per_block_optin:
            raise VyreError.one("D009", f"{dynamic} bytes of workgroup memory (workgroup_memory(large)) exceed the "
                                f"{d.max_shared_per_block_optin} a workgroup of {d.name} (sm_{d.compute_capability[0]}"
                                f"{d.compute_capability[1]}) may opt in to", where,
                                "use smaller workgroup buffers, or run the program on a GPU with more shared memory "
                                "per block (227 KiB on sm_90)")

    def check_grid(self, program: Program, grid: tuple[int, int, int]) -> None:
        m = self.info.max_grid
        if len(grid) != 3 or grid[0] > m[0] or grid[1] > m[1] or grid[2] > m[2]:
            raise VyreError.one("D009", f"grid {grid} exceeds the device's limits {m}",
                                f"program {program.name!r}", "split the dispatch or use larger workgroups")

    def occupancy(self, function: c_void_p, threads: int, dynamic_shared: int = 0) -> Occupancy:
        """How ``function`` fills a multiprocessor with workgroups of ``threads`` invocations (each
        with ``dynamic_shared`` bytes of dynamic workgroup memory)."""
        def attr(which: int) -> int:
            v = c_int()
            cu.call("cuFuncGetAttribute", byref(v), which, function)
            return v.value

        blocks = c_int()
        cu.call("cuOccupancyMaxActiveBlocksPerMultiprocessor", byref(blocks), function, threads, dynamic_shared)
        return Occupancy(threads, blocks.value, blocks.value * threads / self.info.max_threads_per_sm,
                         attr(_FUNC_NUM_REGS), attr(_FUNC_SHARED_SIZE_BYTES) + dynamic_shared,
                         attr(_FUNC_LOCAL_SIZE_BYTES))

    # --- work on the stream (lock held by the caller where state is shared)
    def copy_in(self, device_ptr: int, host_ptr: int, nbytes: int) -> None:
        args = self._copy_args
        args[0].value, args[1].value, args[2].value = device_ptr, host_ptr, nbytes
        result = self._h2d(*args)
        if result:
            self.fail("cuMemcpyHtoDAsync_v2", result)
        self.counters["bytes_h2d"] += nbytes

    def copy_out(self, host_ptr: int, device_ptr: int, nbytes: int) -> None:
        args = self._copy_args
        args[0].value, args[1].value, args[2].value = host_ptr, device_ptr, nbytes
        result = self._d2h(*args)
        if result:
            self.fail("cuMemcpyDtoHAsync_v2", result)
        self.counters["bytes_d2h"] += nbytes

    def zero(self, device_ptr: int, nbytes: int) -> None:
        result = self._memset(device_ptr, 0, nbytes, self.stream)
        if result:
            self.fail("cuMemsetD8Async", result)

    def synchronize(self) -> None:
        """Wait for all queued GPU work on the stream."""
        result = self._sync(self.stream)
        if result:
            self.fail("cuStreamSynchronize", result)
        self.counters["syncs"] += 1

    def finish(self, what: str, timeout: float | None = None, event: c_void_p | None = None) -> None:
        """Wait for the queued work (up to ``event`` when given) for at most ``timeout`` seconds,
        else the backend's default bound (``self.timeout``), else as long as it takes; past the
        bound, D013 naming ``what``."""
        bound = self.timeout if timeout is None else timeout
        if bound is not None:
            self.wait(bound, what, event)
        elif event is None:
            self.synchronize()
        else:
            result = cu.function("cuEventSynchronize")(event)
            if result:
                self.fail("cuEventSynchronize", result)
            self.counters["syncs"] += 1

    def wait(self, timeout: float, what: str, until: c_void_p | None = None) -> None:
        """Wait for the queued work (up to event ``until``) like ``synchronize``, but give up
        after ``timeout`` seconds with D013 (the work keeps running: the stream stays busy, later
        work queues behind it)."""
        event = until if until is not None else self.new_event(timing=False)
        if until is None:
            self.record(event)
        query = cu.function("cuEventQuery")
        deadline = time.monotonic() + timeout
        pause = 20e-6
        try:
            while True:
                result = query(event)
                if result != cu.CUDA_ERROR_NOT_READY:
                    if result:
                        self.fail("cuEventQuery", result)
                    self.counters["syncs"] += 1
                    return
                if time.monotonic() >= deadline:
                    raise VyreError.one(
                        "D013", f"{what} did not finish within {timeout:g} s; it is still running on the GPU. The "
                        "backend stays usable: later work queues behind it (synchronize() waits for it); only "
                        "ending the process stops it", f"device {self.info.ordinal} ({self.info.name})",
                        "raise timeout=, make the kernel finish sooner, or run untrusted programs in a subprocess")
                time.sleep(pause)
                pause = min(pause * 2, 1e-3)
        finally:
            if until is None:
                cu.call("cuEventDestroy_v2", event)

    def capture_stream(self) -> c_void_p:
        """A private stream to capture graphs on (launches of other threads are not recorded)."""
        if self._capture is None:
            stream = c_void_p()
            cu.call("cuStreamCreate", byref(stream), cu.CU_STREAM_NON_BLOCKING)
            self._capture = stream
        return self._capture

    # --- order with other streams (on the device: no host wait)
    def order_after(self, stream: int) -> None:
        """Our later work waits for the work queued on ``stream`` so far (a CUstream handle of this
        context; CU_STREAM_LEGACY, CU_STREAM_PER_THREAD)."""
        with self.lock:
            self.alive()
            self.checked("cuEventRecord", self._handoff, c_void_p(stream))
            self.checked("cuStreamWaitEvent", self.stream, self._handoff, 0)

    def order_before(self, stream: int) -> None:
        """The work queued on ``stream`` from now on waits for the work queued on ours so far."""
        with self.lock:
            self.alive()
            self.checked("cuEventRecord", self._handoff, self.stream)
            self.checked("cuStreamWaitEvent", c_void_p(stream), self._handoff, 0)

    # --- events
    def new_event(self, timing: bool) -> c_void_p:
        e = c_void_p()
        cu.call("cuEventCreate", byref(e), 0 if timing else cu.CU_EVENT_DISABLE_TIMING)
        return e

    def record(self, event: c_void_p) -> None:
        self.checked("cuEventRecord", event, self.stream)

    def mark_start(self) -> None:
        self.record(self._t0)

    def mark_end(self) -> None:
        self.record(self._t1)

    def timed(self, work: Callable[[], None]) -> Timing:
        """Queue ``work`` between two events and wait: host seconds and the GPU seconds between
        the events."""
        with self.lock:
            t0 = time.perf_counter()
            self.mark_start()
            work()
            self.mark_end()
            self.finish("the timed work")
            return Timing(time.perf_counter() - t0, self.elapsed())

    def elapsed(self) -> float:
        """Seconds between the last ``mark_start`` and ``mark_end`` (after a synchronize)."""
        ms = ctypes.c_float()
        cu.call("cuEventElapsedTime", byref(ms), self._t0, self._t1)
        return ms.value / 1000.0
