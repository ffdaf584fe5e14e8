"""The ``cuda`` backend: programs run on an NVIDIA GPU through PTX we emit and our libcuda binding.

* Device capabilities are probed once; the PTX target follows the driver and compute capability.
* Kernels are cached three ways: PTX text and the compiled cubin in memory and on disk (key:
  program hash, registry fingerprint, emitter contract, target, driver version), loaded modules in
  memory; a second process loads the cubin and never JITs. The driver's own JIT cache points at
  our cache directory (unless the user set ``CUDA_CACHE_*``).
* ``dispatch`` (numpy in, numpy out) lays all buffers of a dispatch out in one device arena and
  one pinned staging area: one host-to-device copy for the inputs, one memset for the outputs,
  the launch, one device-to-host copy for the results, one synchronize.
* Resident buffers (``allocate``/``upload``/``download``/``free``, ``__cuda_array_interface__``)
  and ``Pipeline.dispatch_resident``, whose steady state is one ``cuLaunchKernel`` with
  pre-built arguments; sequences of resident dispatches can be captured as a CUDA graph.
* A sticky error (illegal address, ...) poisons the backend: every later call raises instead of
  hanging or returning garbage.
"""

from __future__ import annotations

import ctypes
import dataclasses
import hashlib
import os
import threading
import time
from ctypes import byref, c_int, c_size_t, c_uint32, c_uint64, c_void_p
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from .. import libcuda as cu
from .._version import __version__
from ..emit import EMITTER_CONTRACT, PtxModule, Target, choose_target, emit, explain, kernel_abi
from ..ir.diagnostics import Diagnostic, VyreError
from ..ir.nodes import Access, BufferDecl, Program
from ..ir.types import DataType
from ..ir.validation import check
from ..registry import Registry, default_registry
from ..diskcache import DiskCache, cache_dir
from .config import DEFAULT_CONFIG, DispatchConfig
from .hostio import (
    MAX_ELEMENTS,
    as_storage,
    check_repeat,
    check_workgroup,
    grid_basis,
    host_output,
    infer_grid,
    prepare,
    xyz,
)

__all__ = ["CudaBackend", "CudaPipeline", "DeviceBuffer", "PendingDispatch", "Timing", "DispatchSequence",
           "CudaGraph", "DeviceInfo", "CudaPoisoned", "cuda_available"]

_ALIGN = 256
_STREAM_NON_BLOCKING = 1
_EVENT_DISABLE_TIMING = 2
_CAPTURE_THREAD_LOCAL = 1
_NOT_READY = 600
_ZERO_BY_COPY = 1 << 16  # outputs up to this many bytes are zeroed through the input copy


def _prepare_environment() -> None:
    """Point the driver's JIT cache at our cache directory (before cuInit; user settings win)."""
    if not any(k.startswith("CUDA_CACHE_") for k in os.environ):
        os.environ["CUDA_CACHE_PATH"] = str(cache_dir() / "driver-jit")
        os.environ["CUDA_CACHE_MAXSIZE"] = str(1 << 30)


def cuda_available() -> bool:
    """Whether a CUDA driver and at least one device are present."""
    _prepare_environment()
    return cu.available()


class CudaPoisoned(VyreError):
    """The CUDA context hit a sticky error; nothing more can run in this process."""


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
    total_memory: int
    cooperative_launch: bool
    driver_version: int
    target: Target


@dataclass(frozen=True)
class Timing:
    wall_s: float  # host time of the whole dispatch, transfers included
    device_s: float  # GPU time of the launch(es), from CUDA events


def _aligned(n: int) -> int:
    return -(-max(n, 1) // _ALIGN) * _ALIGN


class DeviceBuffer:
    """Device memory owned by one CudaBackend, holding ``count`` elements of ``dtype``."""

    __slots__ = ("backend", "ptr", "nbytes", "dtype", "count", "capacity", "freed", "owned", "owner", "__weakref__")

    def __init__(self, backend: CudaBackend, ptr: int, dtype: DataType, count: int, capacity: int, owned: bool = True):
        self.backend, self.ptr, self.dtype, self.count = backend, ptr, dtype, count
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
            "stream": self.backend.stream_handle,
        }

    def download(self) -> np.ndarray:
        return self.backend.download(self)

    def download_range(self, offset: int, count: int) -> np.ndarray:
        return self.backend.download_range(self, offset, count)

    def upload(self, data: Any, offset: int = 0) -> None:
        self.backend.upload_at(self, offset, data)

    def free(self) -> None:
        self.backend.free(self)


class _Pool:
    """Power-of-two buckets of device allocations, reused instead of cuMemAlloc/cuMemFree."""

    def __init__(self, telemetry: dict[str, int]) -> None:
        self.free: dict[int, list[int]] = {}
        self.telemetry = telemetry

    def take(self, nbytes: int) -> tuple[int, int]:
        cap = max(_ALIGN, 1 << (max(nbytes, 1) - 1).bit_length())
        bucket = self.free.get(cap)
        if bucket:
            self.telemetry["pool_hits"] += 1
            return bucket.pop(), cap
        ptr = c_uint64()
        try:
            cu.call("cuMemAlloc_v2", byref(ptr), cap)
        except cu.CudaError as exc:
            if exc.code != 2 or not any(self.free.values()):
                raise
            self.trim()  # out of memory: give cached blocks back and try once more
            cu.call("cuMemAlloc_v2", byref(ptr), cap)
        self.telemetry["allocations"] += 1
        return ptr.value, cap

    def give(self, ptr: int, cap: int) -> None:
        self.free.setdefault(cap, []).append(ptr)

    def trim(self) -> None:
        for bucket in self.free.values():
            for ptr in bucket:
                cu.call("cuMemFree_v2", ptr)
        self.free.clear()


class _Pinned:
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
            self.ptr, self.size = 0, 0


@dataclass
class _Layout:
    """Where the buffers of one dispatch live in the device arena and the staging area."""

    offsets: list[int]  # per ABI buffer
    inputs: list[tuple[int, int]]  # (offset, bytes) per program input, in input order
    outputs: list[tuple[BufferDecl, int, int]]  # (decl, offset, count) per returned buffer, in output order
    returned_start: int  # [returned_start, total): device -> host
    outputs_start: int  # [0, outputs_start): host -> device; [outputs_start, total): zero-filled
    total: int


class CudaPipeline:
    """A program compiled for the GPU: a loaded kernel and its pre-built launch arguments."""

    def __init__(self, backend: CudaBackend, program: Program, module: PtxModule, function: c_void_p,
                 config: DispatchConfig) -> None:
        self.backend, self.program, self.ptx, self.config = backend, program, module, config
        self.function = function
        by_name = {b.name: b for b in program.buffers}
        abi_names = [p.buffer for p in module.abi.params if p.kind == "ptr"]
        self.abi_buffers: list[BufferDecl] = [by_name[n] for n in abi_names]
        # device layout: pure inputs, then read_write inputs, then outputs (so one copy moves all
        # inputs, one memset zeroes all outputs and one copy brings back everything returned)
        self._category = [2 if d.is_output else 1 if d.is_returned else 0 for d in self.abi_buffers]
        self._order = sorted(range(len(self.abi_buffers)), key=lambda i: (self._category[i], i))
        self._ptr_values = [c_uint64(0) for _ in abi_names]
        self._len_values = [c_uint32(0) for _ in abi_names]
        self.launcher = cu.Launcher(function, self._ptr_values + self._len_values, program.workgroup_size)
        self._inputs = program.inputs
        self._outputs = program.outputs
        self._arena: tuple[int, int] | None = None
        self._bound: _Bound | None = None
        self._grid_basis = grid_basis(program)
        # precomputed for the dispatch fast path
        self._specs = [(d.name, d.dtype.storage_dtype, d.count, d) for d in self._inputs]
        self._static = {d.name: d.count for d in program.buffers if not d.is_input and d.count_like is None}
        self._likes = [(d.name, d.count_like, d.is_input) for d in program.buffers if d.count_like is not None]
        self._fast_config = config.grid is None
        self._layouts: dict[tuple[int, ...], _Layout] = {}
        self.resident_launches = 0  # counted here, not in the backend's dict: it is the hot path

    # --- numpy in, numpy out
    def _host_arrays(self, inputs: Sequence[Any] | Mapping[str, Any],
                     cfg: DispatchConfig) -> tuple[list[np.ndarray], dict[str, int], tuple[int, int, int]]:
        """Input arrays (in input order), every buffer's count, and the grid."""
        if type(inputs) in (list, tuple) and len(inputs) == len(self._specs) and cfg.grid is None:
            counts = dict(self._static)
            arrays = []
            ok = True
            for (name, st, fixed, decl), a in zip(self._specs, inputs):
                if type(a) is not np.ndarray or a.dtype is not st or not a.flags.c_contiguous:
                    a = as_storage(decl, a)
                n = a.size
                if (fixed and n != fixed) or n > MAX_ELEMENTS:
                    ok = False
                    break
                counts[name] = n
                arrays.append(a)
            for name, like, is_input in self._likes if ok else ():
                if is_input and counts[name] != counts[like]:
                    ok = False
                counts[name] = counts[like]
            if ok:
                grid = (-(-max((counts[n] for n in self._grid_basis), default=0) // self.program.workgroup_size[0]), 1, 1) \
                    if self.program.workgroup_size[1:] == (1, 1) else infer_grid(self.program, counts,
                                                                                 self.program.workgroup_size)
                return arrays, counts, grid
        launch = prepare(self.program, inputs, cfg)  # the general path, with every check and error
        return [launch.memory[d.name] for d in self._inputs], launch.counts, launch.grid

    def _layout(self, counts: Mapping[str, int]) -> _Layout:
        key = tuple(counts[d.name] for d in self.abi_buffers)
        layout = self._layouts.get(key)
        if layout is not None:
            return layout
        offsets = [0] * len(self.abi_buffers)
        first = [-1, -1, -1]  # first offset of each category
        pos = 0
        for i in self._order:
            d, cat = self.abi_buffers[i], self._category[i]
            if first[cat] < 0:
                first[cat] = pos
            offsets[i] = pos
            pos += _aligned(counts[d.name] * d.dtype.size)
        outputs_start = first[2] if first[2] >= 0 else pos
        returned_start = first[1] if first[1] >= 0 else outputs_start
        at = {d.name: offsets[i] for i, d in enumerate(self.abi_buffers)}
        layout = _Layout(offsets, [(at[d.name], counts[d.name] * d.dtype.size) for d in self._inputs],
                         [(d, at[d.name], counts[d.name]) for d in self._outputs], returned_start, outputs_start, pos)
        if len(self._layouts) < 64:
            self._layouts[key] = layout
        return layout

    def dispatch(self, inputs: Sequence[Any] | Mapping[str, Any], config: DispatchConfig | None = None) -> list[np.ndarray]:
        """Run once on ``inputs`` (numpy arrays, bytes or lists); returns the outputs."""
        return self._dispatch(inputs, config or self.config, False)[0]

    def _dispatch(self, inputs: Sequence[Any] | Mapping[str, Any], cfg: DispatchConfig,
                  timed: bool) -> tuple[list[np.ndarray], float]:
        be = self.backend
        be._alive()
        if cfg is not self.config:
            check_workgroup(self.program, cfg)
        check_repeat(cfg)
        arrays, counts, grid = self._host_arrays(inputs, cfg)
        be._check_grid(self, grid)
        layout = self._layout(counts)
        with be._lock:
            be._alive()
            if self._arena is None or self._arena[1] < layout.total:
                if self._arena is not None:
                    be._pool.give(*self._arena)
                self._arena = be._pool.take(layout.total)
            be._enqueue(self, arrays, counts, grid, layout, self._arena[0], be._pinned, cfg.repeat, timed)
            be.synchronize()
            device_s = be._elapsed() if timed else 0.0
            return be._collect(layout, be._pinned), device_s

    def dispatch_async(self, inputs: Sequence[Any] | Mapping[str, Any], config: DispatchConfig | None = None) -> PendingDispatch:
        """Start a dispatch and return at once; ``.result()`` waits and gives the outputs."""
        cfg = config or self.config
        be = self.backend
        be._alive()
        check_workgroup(self.program, cfg)
        check_repeat(cfg)
        arrays, counts, grid = self._host_arrays(inputs, cfg)
        be._check_grid(self, grid)
        layout = self._layout(counts)
        with be._lock:
            arena = be._pool.take(layout.total)
            staging = _Pinned()
            staging.ensure(layout.total)
            be._enqueue(self, arrays, counts, grid, layout, arena[0], staging, cfg.repeat, False)
            event = be._event(timing=False)
            be._record(event)
        return PendingDispatch(be, layout, arena, staging, event)

    def dispatch_timed(self, inputs: Sequence[Any] | Mapping[str, Any], config: DispatchConfig | None = None) -> tuple[list[np.ndarray], Timing]:
        """Like ``dispatch``, also returning wall time and the GPU time of the launches."""
        t0 = time.perf_counter()
        outputs, device_s = self._dispatch(inputs, config or self.config, True)
        return outputs, Timing(time.perf_counter() - t0, device_s)

    # --- resident buffers
    def bind(self, buffers: Sequence[DeviceBuffer] | Mapping[str, DeviceBuffer],
             grid: tuple[int, int, int] | None = None) -> _Bound:
        """Pre-build a launch over resident buffers (every non-workgroup buffer, in declaration
        order, or by name). Calling the result launches the kernel (asynchronously)."""
        return _Bound(self, buffers, grid)

    def dispatch_resident(self, buffers: Sequence[DeviceBuffer] | Mapping[str, DeviceBuffer],
                          grid: tuple[int, int, int] | None = None) -> None:
        """Launch over resident buffers, asynchronously (``backend.synchronize()`` waits). Buffers
        are not zero-filled: they hold what ``allocate``/``upload`` and earlier dispatches left."""
        b = self._bound
        if b is None or b.epoch != self.backend._epoch or b.grid_arg != grid or b.items != buffers:
            b = self._bound = _Bound(self, buffers, grid)  # checks everything; raises if poisoned
        # steady state: the same buffers as last time, nothing freed, context healthy
        result = b.launch(*b.args)
        if result:
            self.backend._relaunch(result, b)
        self.resident_launches += 1


class _Bound:
    """A launch over fixed resident buffers: calling it costs one cuLaunchKernel."""

    __slots__ = ("pipeline", "backend", "buffers", "items", "grid_arg", "grid", "epoch", "launcher", "values",
                 "empty", "launch", "args")

    def __init__(self, pipeline: CudaPipeline, buffers: Sequence[DeviceBuffer] | Mapping[str, DeviceBuffer],
                 grid: tuple[int, int, int] | None) -> None:
        be = pipeline.backend
        be._alive()
        decls = [b for b in pipeline.program.buffers if b.access is not Access.WORKGROUP]
        if isinstance(buffers, Mapping):
            missing = [d.name for d in decls if d.name not in buffers]
            if missing:
                raise VyreError.one("D001", f"no resident buffer for {missing[0]!r}", f"program {pipeline.program.name!r}",
                                    f"bind every buffer: {', '.join(d.name for d in decls)}")
            items = [buffers[d.name] for d in decls]
        else:
            items = list(buffers)
            if len(items) != len(decls):
                raise VyreError.one("D001", f"expected {len(decls)} resident buffers "
                                    f"({', '.join(d.name for d in decls)}), got {len(items)}",
                                    f"program {pipeline.program.name!r}", "pass one buffer per non-workgroup buffer")
        counts: dict[str, int] = {}
        for d, buf in zip(decls, items):
            be._own(buf, d.name)
            if buf.dtype.storage_dtype != d.dtype.storage_dtype:
                raise VyreError.one("D002", f"resident buffer holds {buf.dtype}, the program declares {d.dtype}",
                                    f"buffer {d.name!r}", f"allocate it as {d.dtype}")
            counts[d.name] = d.count or buf.count  # the kernel sees the declared size, as on dispatch()
        for d in pipeline.program.buffers:
            if d.count_like is not None:
                counts[d.name] = counts[d.count_like]
            counts.setdefault(d.name, d.count)
        for d, buf in zip(decls, items):  # never let a kernel index past a buffer's memory
            if buf.count < counts[d.name]:
                raise VyreError.one("D003", f"resident buffer has {buf.count} elements, the program needs "
                                    f"{counts[d.name]}", f"buffer {d.name!r}", f"allocate at least {counts[d.name]} elements")
        g = tuple(grid) if grid is not None else infer_grid(pipeline.program, counts, pipeline.program.workgroup_size,
                                                             pipeline._grid_basis)
        be._check_grid(pipeline, g)  # type: ignore[arg-type]
        by_name = dict(zip((d.name for d in decls), items))
        self.pipeline, self.backend = pipeline, be
        self.buffers = tuple(items)
        # the argument as given (list, tuple or dict), to recognise the same buffers cheaply
        self.items = dict(buffers) if isinstance(buffers, Mapping) else list(items) if isinstance(buffers, list) else tuple(items)
        self.grid_arg, self.grid = grid, g
        self.epoch = be._epoch
        # a private launcher, so several bound launches of one pipeline can coexist (graphs)
        values: list[c_uint64 | c_uint32] = [c_uint64(by_name[d.name].ptr) for d in pipeline.abi_buffers]
        values += [c_uint32(counts[d.name]) for d in pipeline.abi_buffers]
        self.values = values
        self.launcher = cu.Launcher(pipeline.function, values, pipeline.program.workgroup_size)
        self.launcher.set_grid(g)  # type: ignore[arg-type]
        self.launcher.set_stream(be._stream)
        self.empty = 0 in g
        self.launch, self.args = self.launcher.function_and_args()
        if self.empty:  # nothing to run: a launch that does nothing keeps the hot path branch-free
            self.launch = _no_launch

    def refresh(self) -> None:
        """Re-check the buffers (one of the backend's buffers was freed since binding)."""
        self.__init__(self.pipeline, self.buffers, self.grid_arg)  # type: ignore[misc]

    def __call__(self) -> None:
        be = self.backend
        if self.epoch != be._epoch:
            be._alive()
            self.refresh()
        # no lock: the arguments are this object's own, and cuLaunchKernel is thread-safe
        result = self.launch(*self.args)
        if result:
            be._relaunch(result, self)
        be.counters["launches"] += 1


def _no_launch(*_: Any) -> int:
    return 0


class PendingDispatch:
    """A dispatch in flight; ``done()`` polls, ``result()`` waits and returns the outputs."""

    def __init__(self, backend: CudaBackend, layout: _Layout, arena: tuple[int, int], staging: _Pinned,
                 event: c_void_p) -> None:
        self.backend, self.layout = backend, layout
        self._arena, self._staging, self._event = arena, staging, event
        self._outputs: list[np.ndarray] | None = None

    def done(self) -> bool:
        if self._outputs is not None:
            return True
        result = cu._fn("cuEventQuery")(self._event)
        if result == _NOT_READY:
            return False
        if result:
            self.backend._fail("cuEventQuery", result)
        return True

    def result(self) -> list[np.ndarray]:
        if self._outputs is None:
            be = self.backend
            with be._lock:
                be._alive()
                result = cu._fn("cuEventSynchronize")(self._event)
                if result:
                    be._fail("cuEventSynchronize", result)
                be.counters["syncs"] += 1
                self._outputs = be._collect(self.layout, self._staging)
                be._pool.give(*self._arena)
                self._staging.close()
                cu.call("cuEventDestroy_v2", self._event)
        return self._outputs


class DispatchSequence:
    """Resident dispatches run back to back in order; ``capture()`` turns them into a CUDA graph."""

    def __init__(self, backend: CudaBackend, steps: Sequence[_Bound]) -> None:
        self.backend, self.steps = backend, list(steps)

    def run(self) -> None:
        for step in self.steps:
            step()

    def capture(self) -> CudaGraph:
        be = self.backend
        with be._lock:
            be._alive()
            for step in self.steps:  # re-check first if buffers were freed since binding
                if step.epoch != be._epoch:
                    step.refresh()
            # capture on a private stream: launches other threads make meanwhile run, not get recorded
            stream = be._capture_stream()
            cu.call("cuStreamBeginCapture_v2", stream, _CAPTURE_THREAD_LOCAL)
            graph = c_void_p()
            try:
                for step in self.steps:
                    if not step.empty:
                        step.launcher.set_stream(stream)
                        try:
                            result = step.launcher()
                        finally:
                            step.launcher.set_stream(be._stream)
                        if result:
                            raise cu.CudaError("cuLaunchKernel (capture)", result)
            finally:
                cu.call("cuStreamEndCapture", stream, byref(graph))
            exec_ = c_void_p()
            cu.call("cuGraphInstantiateWithFlags", byref(exec_), graph, 0)
        return CudaGraph(be, graph, exec_, self.steps)


class CudaGraph:
    """A captured sequence of launches; ``replay()`` runs all of them with one cuGraphLaunch."""

    def __init__(self, backend: CudaBackend, graph: c_void_p, exec_: c_void_p, steps: list[_Bound]) -> None:
        self.backend, self._graph, self._exec = backend, graph, exec_
        self.steps, self.launches = steps, len(steps)
        self._epoch = backend._epoch
        self._launch = cu.raw("cuGraphLaunch")
        self._args = (exec_, backend._stream)

    def replay(self) -> None:
        """Run the captured launches again (with the buffers they were captured with)."""
        be = self.backend
        be._alive()
        if self._epoch != be._epoch:  # a buffer was freed since: make sure it is none of ours
            for step in self.steps:
                for buf in step.buffers:
                    be._own(buf, "captured graph")
            self._epoch = be._epoch
        with be._lock:
            result = self._launch(*self._args)
        if result:
            be._fail("cuGraphLaunch", result)
        be.counters["graph_launches"] += 1

    def close(self) -> None:
        if self._exec:
            cu.call("cuGraphExecDestroy", self._exec)
            cu.call("cuGraphDestroy", self._graph)
            self._exec = self._graph = None  # type: ignore[assignment]


_COUNTERS = ("launches", "graph_launches", "bytes_h2d", "bytes_d2h", "syncs", "ptx_memory_hits", "ptx_disk_hits",
             "cubin_disk_hits", "module_hits", "jit_compiles", "jit_ms", "load_us", "allocations", "pool_hits",
             "dispatches")


class CudaBackend:
    """The GPU backend (see the module docstring)."""

    name = "cuda"
    capabilities = frozenset({"f64", "i64", "atomics", "workgroup_memory", "workgroup_atomics", "resident_buffers",
                              "async", "timed", "graphs", "exact_f32"})

    def __init__(self, device: int | None = None, registry: Registry | None = None) -> None:
        _prepare_environment()
        self._lock = threading.RLock()
        self._tls = threading.local()
        self._registry = registry
        self._poisoned: cu.CudaError | None = None
        self._epoch = 0  # bumped when a resident buffer is freed or the context is poisoned: bound launches re-check
        self.counters: dict[str, int] = dict.fromkeys(_COUNTERS, 0)
        try:
            cu.call("cuInit", 0)
        except OSError as exc:
            raise VyreError.one("C001", f"cannot load the CUDA driver library: {exc}", "libcuda.so.1",
                                "install the NVIDIA driver, or use the reference backend") from None
        ordinal = int(os.environ.get("VYRE_DECL_CUDA_DEVICE", "0")) if device is None else device
        dev = c_int()
        cu.call("cuDeviceGet", byref(dev), ordinal)
        self._device = dev.value
        self.device = self._probe(ordinal)
        ctx = c_void_p()
        cu.call("cuDevicePrimaryCtxRetain", byref(ctx), self._device)
        self._ctx = ctx
        cu.call("cuCtxSetCurrent", ctx)
        self._tls.current = True
        stream = c_void_p()
        cu.call("cuStreamCreate", byref(stream), _STREAM_NON_BLOCKING)
        self._stream = stream
        self._capture: c_void_p | None = None
        self._pool = _Pool(self.counters)
        self._pinned = _Pinned()
        self._ptx: dict[str, PtxModule] = {}
        self._modules: dict[str, tuple[c_void_p, c_void_p, int]] = {}
        self._pipelines: dict[tuple[str, str], CudaPipeline] = {}
        root = cache_dir()
        self._ptx_disk, self._cubin_disk = DiskCache(root, "ptx"), DiskCache(root, "cubin")
        self._t0, self._t1 = self._event(timing=True), self._event(timing=True)
        self._h2d, self._d2h = cu._fn("cuMemcpyHtoDAsync_v2"), cu._fn("cuMemcpyDtoHAsync_v2")
        self._memset, self._sync = cu._fn("cuMemsetD8Async"), cu._fn("cuStreamSynchronize")

    # --- state and errors
    @property
    def registry(self) -> Registry:
        return self._registry or default_registry()

    @property
    def stream_handle(self) -> int:
        return self._stream.value or 0

    def _alive(self) -> None:
        """Raise if the context is poisoned; make it current on this thread."""
        if not getattr(self._tls, "current", False):
            cu.call("cuCtxSetCurrent", self._ctx)
            self._tls.current = True
        if self._poisoned is not None:
            e = self._poisoned
            raise CudaPoisoned(Diagnostic(
                "C002", f"the CUDA context is unusable after {e.name} from {e.call}; no more GPU work can run in "
                "this process", f"device {self.device.ordinal} ({self.device.name})",
                "restart the process (run GPU work in a subprocess to survive faults)"))

    def _fail(self, call: str, code: int) -> None:
        err = cu.CudaError(call, code)
        if err.sticky:
            self._poisoned = err
            self._epoch += 1
        raise err

    def _checked(self, name: str, *args: Any) -> None:
        result = cu._fn(name)(*args)
        if result:
            self._fail(name, result)

    def _own(self, buf: Any, where: str) -> None:
        if not isinstance(buf, DeviceBuffer) or buf.backend is not self:
            raise VyreError.one("D010", f"{buf!r} is not a resident buffer of this CUDA backend", f"buffer {where!r}",
                                "allocate it with this backend's allocate() (or wrap() foreign device memory)")
        if buf.freed:
            raise VyreError.one("D011", "the resident buffer was freed", f"buffer {where!r}", "allocate a new one")

    def _probe(self, ordinal: int) -> DeviceInfo:
        def attr(name: str) -> int:
            v = c_int()
            cu.call("cuDeviceGetAttribute", byref(v), cu.ATTR[name], self._device)
            return v.value

        raw_name = ctypes.create_string_buffer(256)
        cu.call("cuDeviceGetName", raw_name, 256, self._device)
        total = c_size_t()
        cu.call("cuDeviceTotalMem_v2", byref(total), self._device)
        cc = (attr("compute_capability_major"), attr("compute_capability_minor"))
        driver = cu.driver_version()
        return DeviceInfo(
            ordinal, raw_name.value.decode(), cc, attr("multiprocessor_count"), attr("warp_size"),
            attr("max_threads_per_block"),
            (attr("max_block_dim_x"), attr("max_block_dim_y"), attr("max_block_dim_z")),
            (attr("max_grid_dim_x"), attr("max_grid_dim_y"), attr("max_grid_dim_z")),
            attr("max_shared_memory_per_block"), total.value, bool(attr("cooperative_launch")), driver,
            choose_target(driver, cc),
        )

    def _check_static(self, program: Program, module: PtxModule) -> None:
        """Launch limits that depend on the program alone (checked once, at compile time)."""
        d, wg = self.device, program.workgroup_size
        where = f"program {program.name!r}"
        if wg[0] * wg[1] * wg[2] > d.max_threads_per_block or any(w > m for w, m in zip(wg, d.max_block)):
            raise VyreError.one("D009", f"workgroup {wg} exceeds the device's limits ({d.max_threads_per_block} "
                                f"threads, {d.max_block} per axis)", where, "use a smaller workgroup size")
        if module.abi.shared_bytes > d.max_shared_per_block:
            raise VyreError.one("D009", f"{module.abi.shared_bytes} bytes of workgroup memory exceed the "
                                f"device's {d.max_shared_per_block}", where, "use smaller workgroup buffers")

    def _check_grid(self, pipeline: CudaPipeline, grid: tuple[int, int, int]) -> None:
        m = self.device.max_grid
        if grid[0] > m[0] or grid[1] > m[1] or grid[2] > m[2] or len(grid) != 3:
            raise VyreError.one("D009", f"grid {grid} exceeds the device's limits {m}",
                                f"program {pipeline.program.name!r}", "split the dispatch or use larger workgroups")

    def _relaunch(self, result: int, bound: _Bound) -> None:
        """A launch failed: if only because this thread had no current context, fix that and
        launch again; otherwise raise (and poison on a sticky error)."""
        if result == 201:  # CUDA_ERROR_INVALID_CONTEXT
            self._tls.current = False
            self._alive()
            result = bound.launch(*bound.args)
        if result:
            self._fail("cuLaunchKernel", result)

    # --- compilation and caches
    def emit(self, program: Program) -> str:
        """The PTX this backend runs for ``program``."""
        return self._module_for(program)[0].text

    def _module_for(self, program: Program) -> tuple[PtxModule, str]:
        reg = self.registry
        target = self.device.target
        cc = self.device.compute_capability
        key = hashlib.sha256("|".join([program.content_hash(), reg.fingerprint, EMITTER_CONTRACT, __version__,
                                       str(target.sm), target.version, f"{cc[0]}.{cc[1]}",
                                       str(self.device.driver_version)]).encode()).hexdigest()
        module = self._ptx.get(key)
        if module is not None:
            self.counters["ptx_memory_hits"] += 1
            return module, key
        check(program, reg)
        text = self._ptx_disk.get(key)
        if text is not None:
            self.counters["ptx_disk_hits"] += 1
            module = PtxModule(text.decode(), kernel_abi(program), target, EMITTER_CONTRACT, program.content_hash())
        else:
            module = emit(program, reg, target, validated=True)
            self._ptx_disk.put(key, module.text.encode())
        self._ptx[key] = module
        return module, key

    def compile(self, program: Program, config: DispatchConfig | None = None) -> CudaPipeline:
        """Validate, emit, JIT (or load from cache) and bind ``program`` for this GPU."""
        self._alive()
        cfg = config or DEFAULT_CONFIG
        if cfg.workgroup is not None and tuple(cfg.workgroup) != program.workgroup_size:
            program = dataclasses.replace(program, workgroup_size=xyz(cfg.workgroup))
        module, key = self._module_for(program)
        self._check_static(program, module)
        with self._lock:
            cached = self._pipelines.get((key, repr(cfg)))
            if cached is not None:
                return cached
            loaded = self._modules.get(key)
            if loaded is None:
                loaded = self._load(module, key)
                self._modules[key] = loaded
            else:
                self.counters["module_hits"] += 1
            wg = program.workgroup_size
            if wg[0] * wg[1] * wg[2] > loaded[2]:  # registers per thread limit this kernel's workgroups
                raise VyreError.one("D009", f"this kernel can run at most {loaded[2]} invocations per workgroup on "
                                    f"this GPU, the workgroup {wg} has {wg[0] * wg[1] * wg[2]}",
                                    f"program {program.name!r}", "use a smaller workgroup size")
            pipeline = CudaPipeline(self, program, module, loaded[1], cfg)
            pipeline.launcher.set_stream(self._stream)
            self._pipelines[(key, repr(cfg))] = pipeline
            return pipeline

    def _load(self, module: PtxModule, key: str) -> tuple[c_void_p, c_void_p, int]:
        cubin = self._cubin_disk.get(key)
        if cubin is not None:
            self.counters["cubin_disk_hits"] += 1
            try:
                return self._load_cubin(cubin, module)
            except cu.CudaError as exc:  # e.g. built for another GPU of the same target: build it again
                if exc.sticky:
                    raise
        t0 = time.perf_counter()
        try:
            cubin, _info = cu.jit_ptx(module.text.encode())
        except cu.ModuleLoadError as exc:
            raise VyreError(Diagnostic("E012", f"the driver's JIT rejected the PTX ({exc.name}):\n"
                                       + explain(module.text, exc.log), f"program {module.entry}",
                                       "this is an emitter or op-template bug: report it with the PTX above")) from None
        self.counters["jit_compiles"] += 1
        self.counters["jit_ms"] += int((time.perf_counter() - t0) * 1000)
        self._cubin_disk.put(key, cubin)
        return self._load_cubin(cubin, module)

    def _load_cubin(self, cubin: bytes, module: PtxModule) -> tuple[c_void_p, c_void_p, int]:
        t0 = time.perf_counter()
        mod = cu.load_cubin(cubin)
        fn = c_void_p()
        cu.call("cuModuleGetFunction", byref(fn), mod, module.entry.encode())
        limit = c_int()
        cu.call("cuFuncGetAttribute", byref(limit), 0, fn)  # CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK
        self.counters["load_us"] += int((time.perf_counter() - t0) * 1e6)
        return mod, fn, limit.value

    # --- dispatch (numpy)
    def dispatch(self, program: Program, inputs: Sequence[Any] | Mapping[str, Any],
                 config: DispatchConfig | None = None) -> list[np.ndarray]:
        """Run ``program`` once on ``inputs``; returns the outputs in declaration order."""
        return self.compile(program, config).dispatch(inputs, config)

    def dispatch_async(self, program: Program, inputs: Sequence[Any] | Mapping[str, Any],
                       config: DispatchConfig | None = None) -> PendingDispatch:
        return self.compile(program, config).dispatch_async(inputs, config)

    def dispatch_timed(self, program: Program, inputs: Sequence[Any] | Mapping[str, Any],
                       config: DispatchConfig | None = None) -> tuple[list[np.ndarray], Timing]:
        return self.compile(program, config).dispatch_timed(inputs, config)

    def _enqueue(self, pipeline: CudaPipeline, arrays: Sequence[np.ndarray], counts: Mapping[str, int],
                 grid: tuple[int, int, int], layout: _Layout, base: int, staging: _Pinned, repeat: int,
                 timed: bool) -> None:
        """Queue the input copy, the output zero-fill, the launch(es) and the result copy on the
        stream (lock held)."""
        staging.ensure(layout.total)
        view = staging.view
        for (off, nbytes), a in zip(layout.inputs, arrays):
            if nbytes:
                view[off: off + nbytes] = a.reshape(-1).view(np.uint8)
        stream = self._stream
        # small outputs are zeroed in the staging area and ride along with the input copy (one
        # driver call instead of two); large ones are zero-filled on the device
        ride = layout.total - layout.outputs_start <= _ZERO_BY_COPY
        upto = layout.total if ride else layout.outputs_start
        if ride:
            view[layout.outputs_start: layout.total] = 0
        if upto:
            result = self._h2d(base, staging.ptr, upto, stream)
            if result:
                self._fail("cuMemcpyHtoDAsync_v2", result)
            self.counters["bytes_h2d"] += upto
        if not ride:
            result = self._memset(base + layout.outputs_start, 0, layout.total - layout.outputs_start, stream)
            if result:
                self._fail("cuMemsetD8Async", result)
        for slot, off in zip(pipeline._ptr_values, layout.offsets):
            slot.value = base + off
        for length, d in zip(pipeline._len_values, pipeline.abi_buffers):
            length.value = counts[d.name]
        launcher = pipeline.launcher
        launcher.set_grid(grid)
        if timed:
            self._record(self._t0)
        if 0 not in grid:
            for _ in range(repeat):
                result = launcher()
                if result:
                    self._fail("cuLaunchKernel", result)
            self.counters["launches"] += repeat
        if timed:
            self._record(self._t1)
        if layout.total > layout.returned_start:
            result = self._d2h(staging.ptr + layout.returned_start, base + layout.returned_start,
                               layout.total - layout.returned_start, stream)
            if result:
                self._fail("cuMemcpyDtoHAsync_v2", result)
            self.counters["bytes_d2h"] += layout.total - layout.returned_start
        self.counters["dispatches"] += 1

    def _collect(self, layout: _Layout, staging: _Pinned) -> list[np.ndarray]:
        view = staging.view
        out = []
        for d, off, n in layout.outputs:
            raw = view[off: off + n * d.dtype.size].view(d.dtype.storage_dtype).copy()
            out.append(host_output(d, raw))
        return out

    def _elapsed(self) -> float:
        ms = ctypes.c_float()
        cu.call("cuEventElapsedTime", byref(ms), self._t0, self._t1)
        return ms.value / 1000.0

    def synchronize(self) -> None:
        """Wait for all queued GPU work of this backend."""
        result = self._sync(self._stream)
        if result:
            self._fail("cuStreamSynchronize", result)
        self.counters["syncs"] += 1

    def _capture_stream(self) -> c_void_p:
        if self._capture is None:
            stream = c_void_p()
            cu.call("cuStreamCreate", byref(stream), _STREAM_NON_BLOCKING)
            self._capture = stream
        return self._capture

    def _event(self, timing: bool) -> c_void_p:
        e = c_void_p()
        cu.call("cuEventCreate", byref(e), 0 if timing else _EVENT_DISABLE_TIMING)
        return e

    def _record(self, event: c_void_p) -> None:
        self._checked("cuEventRecord", event, self._stream)

    # --- resident buffers
    def allocate(self, dtype: DataType | str, count: int) -> DeviceBuffer:
        """Device memory for ``count`` elements of ``dtype``, zero-filled."""
        self._alive()
        t = dtype if isinstance(dtype, DataType) else DataType(dtype)
        if count < 0 or count > 2**32 - 1:
            raise VyreError.one("D007", f"cannot allocate {count} elements", "allocate", "use 0 .. 2^32-1 elements")
        with self._lock:
            ptr, cap = self._pool.take(count * t.size)
            self._checked("cuMemsetD8Async", ptr, 0, cap, self._stream)
        return DeviceBuffer(self, ptr, t, count, cap)

    def upload(self, data: Any, dtype: DataType | str | None = None) -> DeviceBuffer:
        """A new resident buffer holding ``data`` (a numpy array; ``dtype`` defaults to its own)."""
        arr = np.ascontiguousarray(data)
        t = dtype if isinstance(dtype, DataType) else DataType(dtype) if dtype else _dtype_of(arr)
        buf = self.allocate(t, arr.size)
        self.upload_at(buf, 0, arr)
        return buf

    def upload_at(self, buf: DeviceBuffer, offset: int, data: Any) -> None:
        """Copy ``data`` into ``buf`` starting at element ``offset``."""
        self._own(buf, "upload")
        decl = BufferDecl("upload", Access.READ, buf.dtype, 0, 0)
        arr = as_storage(decl, data)
        if offset < 0 or offset + arr.size > buf.count:
            raise VyreError.one("D003", f"writing {arr.size} elements at {offset} overflows the buffer of {buf.count}",
                                repr(buf), "write inside the buffer")
        with self._lock:
            self._alive()
            self._pinned.ensure(arr.nbytes)
            ctypes.memmove(self._pinned.ptr, arr.ctypes.data, arr.nbytes)
            self._checked("cuMemcpyHtoDAsync_v2", buf.ptr + offset * buf.dtype.size, self._pinned.ptr, arr.nbytes,
                          self._stream)
            self.synchronize()  # the staging area is reused by the next transfer
            self.counters["bytes_h2d"] += arr.nbytes

    def download(self, buf: DeviceBuffer) -> np.ndarray:
        return self.download_range(buf, 0, buf.count)

    def download_range(self, buf: DeviceBuffer, offset: int, count: int) -> np.ndarray:
        """Elements ``offset .. offset + count`` of ``buf`` (waits for queued work)."""
        self._own(buf, "download")
        if offset < 0 or count < 0 or offset + count > buf.count:
            raise VyreError.one("D003", f"range {offset}..{offset + count} is outside the buffer of {buf.count}",
                                repr(buf), "read inside the buffer")
        nbytes = count * buf.dtype.size
        with self._lock:
            self._alive()
            self._pinned.ensure(nbytes)
            if nbytes:
                self._checked("cuMemcpyDtoHAsync_v2", self._pinned.ptr, buf.ptr + offset * buf.dtype.size, nbytes,
                              self._stream)
            self.synchronize()
            self.counters["bytes_d2h"] += nbytes
            return self._pinned.view[:nbytes].view(buf.dtype.storage_dtype).copy()

    def free(self, buf: DeviceBuffer) -> None:
        self._own(buf, "free")
        with self._lock:
            buf.freed = True
            self._epoch += 1
            if buf.owned and self._poisoned is None:
                self._alive()
                self.synchronize()  # queued work may still use it
                self._pool.give(buf.ptr, buf.capacity)

    def wrap(self, obj: Any) -> DeviceBuffer:
        """A resident buffer viewing foreign device memory that exposes ``__cuda_array_interface__``
        (CuPy, PyTorch, Numba, ...): no copy. ``obj`` is kept alive by the buffer; its stream is
        waited for, so work queued on it before the call is visible to our kernels."""
        self._alive()
        cai = obj.__cuda_array_interface__
        shape = tuple(int(n) for n in cai["shape"])
        dtype = np.dtype(cai["typestr"])
        where = "wrap"
        if dtype == np.bool_:
            raise VyreError.one("D012", "bool arrays hold 1-byte elements; vyre bool buffers hold 4-byte words",
                                where, "convert it to uint32 (0/1) first")
        strides = cai.get("strides")
        if strides is not None:
            want: list[int] = []
            step = dtype.itemsize
            for n in reversed(shape):
                want.insert(0, step)
                step *= n
            if tuple(int(x) for x in strides) != tuple(want) and int(np.prod(shape)) > 1:
                raise VyreError.one("D012", f"only C-contiguous device arrays can be wrapped (strides {tuple(strides)})",
                                    where, "make it contiguous (e.g. .contiguous() / cupy.ascontiguousarray)")
        t = _dtype_of(np.empty(0, dtype))
        stream = cai.get("stream")
        if stream:  # the producer's stream: wait for what it has queued
            self._checked("cuStreamSynchronize", c_void_p(int(stream)))
        count = int(np.prod(shape)) if shape else 1
        buf = DeviceBuffer(self, int(cai["data"][0]), t, count, count * t.size, owned=False)
        buf.owner = obj
        return buf

    def sequence(self, steps: Sequence[tuple[CudaPipeline, Any] | tuple[CudaPipeline, Any, tuple[int, int, int]]]) -> DispatchSequence:
        """Resident dispatches ``(pipeline, buffers[, grid])`` to run in order (``run()``) or to
        capture once as a CUDA graph and replay (``capture().replay()``)."""
        bound = []
        for pipeline, buffers, *grid in steps:
            bound.append(pipeline.bind(buffers, grid[0] if grid else None))
        return DispatchSequence(self, bound)

    def telemetry(self) -> dict[str, int]:
        """Counters since the backend was created."""
        counters = dict(self.counters)
        counters["launches"] += sum(p.resident_launches for p in self._pipelines.values())
        return counters

    def __repr__(self) -> str:
        d = self.device
        return f"<CudaBackend {d.name} sm_{d.compute_capability[0]}{d.compute_capability[1]} {d.target}>"


_NUMPY_TO_TYPE = {
    np.dtype(np.uint8): DataType.U8, np.dtype(np.int8): DataType.I8, np.dtype(np.uint16): DataType.U16,
    np.dtype(np.int16): DataType.I16, np.dtype(np.uint32): DataType.U32, np.dtype(np.int32): DataType.I32,
    np.dtype(np.uint64): DataType.U64, np.dtype(np.int64): DataType.I64, np.dtype(np.float16): DataType.F16,
    np.dtype(np.float32): DataType.F32, np.dtype(np.float64): DataType.F64, np.dtype(np.bool_): DataType.BOOL,
}


def _dtype_of(arr: np.ndarray) -> DataType:
    try:
        return _NUMPY_TO_TYPE[arr.dtype]
    except KeyError:
        raise VyreError.one("D002", f"no vyre type for numpy dtype {arr.dtype}", "upload",
                            "pass dtype=... explicitly (e.g. 'bf16' for uint16 bit patterns)") from None
