"""The CUDA backend's facade: ``CudaBackend`` wires the rooms together (device, memory, kernels,
pipelines, graphs) and offers the backend API — compile, dispatch (numpy, async, timed), resident
buffers, sequences and graphs, telemetry."""

from __future__ import annotations

import dataclasses
import functools
import threading
import weakref
from collections import OrderedDict
from typing import Any, Mapping, Sequence

import numpy as np

from ...ir.diagnostics import VyreError
from ...ir.nodes import Program
from ...ir.types import DataType
from ...registry import Registry, default_registry
from ...settings import env_int, env_seconds
from ..config import DEFAULT_CONFIG, TIMEOUT_ENV, DispatchConfig, Timing
from ..hostio import check_capabilities, check_config, check_timeout, check_ulp_budget, xyz
from . import interop
from .device import Device, DeviceInfo
from .graphs import DispatchSequence
from .kernels import KernelCache
from .launches import BoundLaunch, PendingDispatch
from .memory import DeviceBuffer, Memory
from .pipeline import CudaPipeline

Step = tuple[CudaPipeline, Any] | tuple[CudaPipeline, Any, tuple[int, int, int]]
"""One resident dispatch of a sequence: a pipeline, its buffers (a list or a dict by name) and an
optional grid."""

__all__ = ["CudaBackend"]


class CudaBackend:
    """The GPU backend: programs run on an NVIDIA GPU through PTX we emit and our libcuda binding.

    A sticky error (illegal address, ...) poisons the backend: every later call raises instead of
    hanging or returning garbage."""

    name = "cuda"
    capabilities = frozenset({"f64", "i64", "atomics", "workgroup_memory", "workgroup_atomics", "resident_buffers",
                              "async", "timed", "graphs", "exact_f32"})

    def __init__(self, device: int | None = None, registry: Registry | None = None,
                 pool_limit_mb: int | None = None, kernel_cache: int | None = None,
                 pinned_limit_mb: int | None = None, timeout: float | None = None) -> None:
        """A backend on GPU ``device`` (default: VYRE_DECL_CUDA_DEVICE, else 0). ``pool_limit_mb``
        caps the device memory kept pooled for reuse (default: VYRE_DECL_POOL_MB, else 1024);
        ``pinned_limit_mb`` the page-locked staging kept between transfers (VYRE_DECL_PINNED_MB,
        else 256: a larger transfer gets a staging area released after it);
        ``kernel_cache`` caps the PTX texts, loaded modules and pipelines kept in memory, each
        (default: VYRE_DECL_KERNEL_CACHE, else 256; least recently used go first);
        ``timeout`` bounds, in seconds, every wait for queued GPU work (dispatch, synchronize,
        downloads, ``result()``, ``replay_and_read``) that names no bound of its own (default:
        VYRE_DECL_TIMEOUT, else none); past it D013, and the backend stays usable."""
        check_timeout(timeout, "CudaBackend(timeout=...)")
        self._registry = registry
        pool_mb = env_int("VYRE_DECL_POOL_MB", 1024) if pool_limit_mb is None else max(pool_limit_mb, 0)
        pinned_mb = env_int("VYRE_DECL_PINNED_MB", 256) if pinned_limit_mb is None else max(pinned_limit_mb, 0)
        self._cache_limit = max(env_int("VYRE_DECL_KERNEL_CACHE", 256) if kernel_cache is None else kernel_cache, 1)
        self._device = Device(device, env_seconds(TIMEOUT_ENV) if timeout is None else timeout)
        self.device: DeviceInfo = self._device.info
        self._memory = Memory(self._device, pool_mb << 20, pinned_mb << 20)
        self._kernels = KernelCache(self._device, lambda: self.registry, self._cache_limit)
        self._pipelines: OrderedDict[tuple[str, str], CudaPipeline] = OrderedDict()
        self._pipeline_evictions = 0
        self._evicted_launches = 0
        self._lock = threading.Lock()
        # dropped without close(): release the GPU resources (not at interpreter exit, when the
        # process gives them back anyway)
        self._finalizer = weakref.finalize(self, _close_rooms, self._device, self._memory, self._kernels, self._pipelines)
        self._finalizer.atexit = False

    # --- lifecycle
    def close(self) -> None:
        """Release everything this backend holds on the GPU: pipelines, buffers (they read as
        freed), pooled memory, modules, the stream and the context. Safe to call twice; afterwards
        every call raises C005."""
        self._finalizer()

    @property
    def closed(self) -> bool:
        return self._device.closed

    def __enter__(self) -> CudaBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- state
    @property
    def registry(self) -> Registry:
        return self._registry or default_registry()

    @property
    def stream_handle(self) -> int:
        """The CUstream this backend queues its work on."""
        return self._device.stream_handle

    @property
    def counters(self) -> dict[str, int]:
        return self._device.counters

    @property
    def timeout(self) -> float | None:
        """The default bound, in seconds, of a wait for queued work (None: none)."""
        return self._device.timeout

    def synchronize(self, timeout: float | None = None) -> None:
        """Wait for all queued GPU work of this backend: at most ``timeout`` seconds (default: the
        backend's bound), then D013 (the work keeps running; the backend stays usable)."""
        check_timeout(timeout, "synchronize(timeout=...)")
        self._device.finish("the queued work", timeout)

    def order_after(self, stream: Any) -> None:
        """The work this backend queues from now on waits, on the GPU, for the work queued on
        ``stream`` so far (a CUstream handle, torch.cuda.Stream or cupy.cuda.Stream of this GPU;
        1: the legacy default stream, 2: the per-thread one). The host does not wait."""
        self._device.order_after(interop.stream_handle(stream, "order_after"))

    def order_before(self, stream: Any) -> None:
        """The work queued on ``stream`` from now on waits, on the GPU, for the work this backend
        queued so far (e.g. before torch reads a buffer our kernels wrote through ``wrap``)."""
        self._device.order_before(interop.stream_handle(stream, "order_before"))

    def telemetry(self) -> dict[str, int]:
        """Counters since the backend was created."""
        counters = dict(self._device.counters)
        with self._lock:
            counters["launches"] += self._evicted_launches + sum(p.resident_launches for p in self._pipelines.values())
        return counters

    def memory(self) -> dict[str, int]:
        """Device memory this backend holds: pooled and live bytes, the pool's cap, the staging
        area, and the device's free and total memory."""
        return self._memory.snapshot()

    def cache(self) -> dict[str, Any]:
        """Compiled-kernel caches: the in-memory limit, PTX entries and bytes, loaded modules (and
        how many live pipelines use), pipelines, evictions, and the disk caches' hits, misses and
        evictions in this process (memory hits are in ``telemetry()``)."""
        snap = self._kernels.snapshot()
        snap["evictions"]["pipelines"] = self._pipeline_evictions
        return {**snap, "pipelines": len(self._pipelines)}

    # --- compilation
    def emit(self, program: Program) -> str:
        """The PTX this backend runs for ``program``."""
        return self._kernels.module_for(program)[0].text

    def compile(self, program: Program, config: DispatchConfig | None = None) -> CudaPipeline:
        """Validate, emit, JIT (or load from cache) and bind ``program`` for this GPU."""
        dev = self._device
        dev.alive()
        cfg = config or DEFAULT_CONFIG
        check_config(cfg)
        if cfg.workgroup is not None and tuple(cfg.workgroup) != program.workgroup_size:
            program = dataclasses.replace(program, workgroup_size=xyz(cfg.workgroup))
        module, key = self._kernels.module_for(program)
        check_ulp_budget(program, self.registry, cfg)
        dev.check_static(program, module)
        with dev.lock:
            cached = self._pipelines.get((key, repr(cfg)))
            if cached is not None and not cached.closed:
                self._pipelines.move_to_end((key, repr(cfg)))
                return cached
            check_capabilities(program, self.registry, self.capabilities, self.name)
            loaded = self._kernels.use(module, key)
            wg = program.workgroup_size
            if wg[0] * wg[1] * wg[2] > loaded.max_threads:  # registers per thread limit this kernel's workgroups
                raise VyreError.one("D009", f"this kernel can run at most {loaded.max_threads} invocations per "
                                    f"workgroup on this GPU, the workgroup {wg} has {wg[0] * wg[1] * wg[2]}",
                                    f"program {program.name!r}", "use a smaller workgroup size")
            try:
                pipeline = CudaPipeline(dev, self._memory, program, module, loaded.function, cfg,
                                        functools.partial(self._kernels.release, key), loaded.vector_function)
            except BaseException:
                self._kernels.release(key)
                raise
            with self._lock:
                self._pipelines[(key, repr(cfg))] = pipeline
                while len(self._pipelines) > self._cache_limit:  # dropped here, closed when garbage
                    _, old = self._pipelines.popitem(last=False)
                    self._evicted_launches += old.resident_launches
                    old.resident_launches = 0
                    self._pipeline_evictions += 1
            return pipeline

    # --- dispatch (numpy)
    def dispatch(self, program: Program, inputs: Sequence[Any] | Mapping[str, Any],
                 config: DispatchConfig | None = None, out: Sequence[np.ndarray] | None = None) -> list[np.ndarray]:
        """Run ``program`` once on ``inputs``; returns the outputs in declaration order (written
        into the caller's arrays ``out`` when given)."""
        return self.compile(program, config).dispatch(inputs, config, out)

    def dispatch_async(self, program: Program, inputs: Sequence[Any] | Mapping[str, Any],
                       config: DispatchConfig | None = None) -> PendingDispatch:
        return self.compile(program, config).dispatch_async(inputs, config)

    def dispatch_timed(self, program: Program, inputs: Sequence[Any] | Mapping[str, Any],
                       config: DispatchConfig | None = None) -> tuple[list[np.ndarray], Timing]:
        return self.compile(program, config).dispatch_timed(inputs, config)

    # --- resident buffers
    def allocate(self, dtype: DataType | str, count: int) -> DeviceBuffer:
        """Device memory for ``count`` elements of ``dtype``, zero-filled."""
        return self._memory.allocate(dtype, count)

    def upload(self, data: Any, dtype: DataType | str | None = None) -> DeviceBuffer:
        """A new resident buffer holding ``data`` (a numpy array; ``dtype`` defaults to its own)."""
        return self._memory.upload(data, dtype)

    def upload_at(self, buf: DeviceBuffer, offset: int, data: Any) -> None:
        """Copy ``data`` into ``buf`` starting at element ``offset``."""
        self._memory.upload_at(buf, offset, data)

    def download(self, buf: DeviceBuffer) -> np.ndarray:
        """Every element of ``buf`` (waits for queued work)."""
        return self._memory.download(buf)

    def download_range(self, buf: DeviceBuffer, offset: int, count: int) -> np.ndarray:
        """Elements ``offset .. offset + count`` of ``buf`` (waits for queued work)."""
        return self._memory.download_range(buf, offset, count)

    def free(self, buf: DeviceBuffer) -> None:
        self._memory.free(buf)

    def upload_many(self, arrays: Sequence[Any]) -> list[DeviceBuffer]:
        """A new resident buffer for each numpy array, all copied with one synchronisation."""
        return self._memory.upload_many(arrays)

    def download_many(self, buffers: Sequence[DeviceBuffer]) -> list[np.ndarray]:
        """The contents of each resident buffer, copied with one synchronisation."""
        return self._memory.download_many(buffers)

    def wrap(self, obj: Any, stream: Any = None) -> DeviceBuffer:
        """A resident buffer viewing foreign device memory that exposes ``__cuda_array_interface__``
        (CuPy, PyTorch, Numba, ...): no copy. ``obj`` is kept alive by the buffer. The work queued
        on the producer's stream before the call is ordered before ours on the GPU: ``stream``
        (when the producer queued on another stream than it says), else the interface's own,
        else (no stream in the interface, as PyTorch's) the default streams."""
        return interop.wrap(self._memory, obj, stream)

    def from_dlpack(self, obj: Any) -> DeviceBuffer:
        """A resident buffer viewing a CUDA tensor of this GPU through DLPack (PyTorch, CuPy,
        JAX, ...): no copy. ``DeviceBuffer.__dlpack__`` goes the other way."""
        return interop.from_dlpack(self._memory, obj)

    def sequence(self, steps: Sequence[Step], prefix: Sequence[Step] = (), repeat: int = 1) -> DispatchSequence:
        """Resident dispatches ``(pipeline, buffers[, grid])``: ``prefix`` once, then ``steps``
        ``repeat`` times, run in order (``run()``, ``run_and_read(ranges)``) or captured once as a
        CUDA graph and replayed (``capture().replay()``). Every step is checked here."""
        def bind(items: Sequence[Step]) -> list[BoundLaunch]:
            return [pipeline.bind(buffers, grid[0] if grid else None) for pipeline, buffers, *grid in items]

        return DispatchSequence(self._device, self._memory, bind(steps), bind(prefix), repeat)

    def __repr__(self) -> str:
        d = self.device
        return f"<CudaBackend {d.name} sm_{d.compute_capability[0]}{d.compute_capability[1]} {d.target}>"


def _close_rooms(device: Device, memory: Memory, kernels: KernelCache, pipelines: dict[tuple[str, str], CudaPipeline]) -> None:
    if device.closed:
        return
    with device.visiting():  # every driver call in this device's context, whichever was current
        for pipeline in list(pipelines.values()):
            pipeline.close()
        pipelines.clear()
        memory.close()
        kernels.close()
        device.close()

