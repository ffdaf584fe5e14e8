"""The launches room: a launch bound to fixed resident buffers (``BoundLaunch``, one
``cuLaunchKernel`` per call) and a numpy dispatch in flight (``PendingDispatch``)."""

from __future__ import annotations

import weakref
from ctypes import c_uint32, c_uint64, c_void_p
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np

from ... import libcuda as cu
from ...ir.diagnostics import VyreError
from ...emit.abi import VECTOR_LANES
from ..hostio import check_timeout
from .memory import DeviceBuffer, Pinned

if TYPE_CHECKING:  # pragma: no cover
    from .pipeline import CudaPipeline, Layout

__all__ = ["BoundLaunch", "PendingDispatch"]


class BoundLaunch:
    """A launch over fixed resident buffers: calling it costs one cuLaunchKernel."""

    __slots__ = ("pipeline", "device", "buffers", "items", "grid_arg", "grid", "stale", "launcher", "values",
                 "empty", "launch", "args", "__weakref__")

    def __init__(self, pipeline: CudaPipeline, buffers: Sequence[DeviceBuffer] | Mapping[str, DeviceBuffer],
                 grid: tuple[int, int, int] | None) -> None:
        dev, mem, program = pipeline.device, pipeline.memory, pipeline.program
        pipeline.usable()
        decls = [b for b in program.buffers if not b.access.is_scratch]
        if isinstance(buffers, Mapping):
            missing = [d.name for d in decls if d.name not in buffers]
            if missing:
                raise VyreError.one("D001", f"no resident buffer for {missing[0]!r}", f"program {program.name!r}",
                                    f"bind every buffer: {', '.join(d.name for d in decls)}")
            items = [buffers[d.name] for d in decls]
        else:
            items = list(buffers)
            if len(items) != len(decls):
                raise VyreError.one("D001", f"expected {len(decls)} resident buffers "
                                    f"({', '.join(d.name for d in decls)}), got {len(items)}",
                                    f"program {program.name!r}", "pass one buffer per non-workgroup buffer")
        given: dict[str, int] = {}
        for d, buf in zip(decls, items):
            mem.own(buf, d.name)
            if buf.dtype.storage_dtype != d.dtype.storage_dtype:
                raise VyreError.one("D002", f"resident buffer holds {buf.dtype}, the program declares {d.dtype}",
                                    f"buffer {d.name!r}", f"allocate it as {d.dtype}")
            given[d.name] = d.count or buf.count  # the kernel sees the declared size, as on dispatch()
        counts = pipeline.plan.counts(given, exact=False)
        for d, buf in zip(decls, items):  # never let a kernel index past a buffer's memory
            if buf.count < counts[d.name]:
                raise VyreError.one("D003", f"resident buffer has {buf.count} elements, the program needs "
                                    f"{counts[d.name]}", f"buffer {d.name!r}", f"allocate at least {counts[d.name]} elements")
        function = pipeline.function
        g = pipeline.plan.grid(counts) if grid is None else (int(grid[0]), int(grid[1]), int(grid[2]))
        # an inferred grid, or an explicit one equal to it (a routine's map step): the vectorised entry
        if pipeline.vector_function is not None and (grid is None or g == pipeline.plan.grid(counts)):
            function, g = pipeline.vector_function, pipeline.plan.grid(counts, lanes=VECTOR_LANES)
        dev.check_grid(program, g)
        by_name = dict(zip((d.name for d in decls), items))
        self.pipeline, self.device = pipeline, dev
        self.buffers = tuple(items)
        # the argument as given (list, tuple or dict), to recognise the same buffers cheaply
        self.items = dict(buffers) if isinstance(buffers, Mapping) else list(items) if isinstance(buffers, list) else tuple(items)
        self.grid_arg, self.grid = grid, g
        self.stale = False  # set by the device when a buffer is freed or the device poisoned/closed
        dev.watch(self)
        # a private launcher, so several bound launches of one pipeline can coexist (graphs)
        values: list[c_uint64 | c_uint32] = [c_uint64(by_name[d.name].ptr) for d in pipeline.abi_buffers]
        values += [c_uint32(counts[d.name]) for d in pipeline.abi_buffers]
        self.values = values
        self.launcher = cu.Launcher(function, values, program.workgroup_size, pipeline.ptx.abi.dynamic_shared_bytes)
        self.launcher.set_grid(g)
        self.launcher.set_stream(dev.stream)
        self.empty = 0 in g
        self.launch, self.args = self.launcher.function_and_args()
        if self.empty:  # nothing to run: a launch that does nothing keeps the hot path branch-free
            self.launch = _no_launch

    def refresh(self) -> None:
        """Re-check the buffers (one of the device's buffers was freed since binding)."""
        self.__init__(self.pipeline, self.buffers, self.grid_arg)  # type: ignore[misc]

    def __call__(self) -> None:
        dev = self.device
        if self.stale:
            dev.alive()
            self.refresh()
        # no lock: the arguments are this object's own, and cuLaunchKernel is thread-safe
        result = self.launch(*self.args)
        if result:
            dev.relaunch(result, self.launch, self.args)
        dev.counters["launches"] += 1

    def launch_on(self, stream: c_void_p) -> int:
        """Launch once on another stream (graph capture); returns the CUresult."""
        if self.empty:
            return 0
        self.launcher.set_stream(stream)
        try:
            return int(self.launcher())
        finally:
            self.launcher.set_stream(self.device.stream)


def _no_launch(*_: Any) -> int:
    return 0


class PendingDispatch:
    """A dispatch in flight; ``done()`` polls, ``result()`` waits and returns the outputs."""

    def __init__(self, pipeline: CudaPipeline, layout: Layout, arena: tuple[int, int], staging: Pinned,
                 event: c_void_p) -> None:
        self.pipeline, self.layout = pipeline, layout
        self._staging, self._event = staging, event
        self._outputs: list[np.ndarray] | None = None
        # dropped unfinished: the arena, staging and event still go back when collected
        self._release = weakref.finalize(self, _release_dispatch, pipeline, arena, staging, event)
        self._release.atexit = False

    def done(self) -> bool:
        if self._outputs is not None or not self._release.alive:
            return True
        result = cu.function("cuEventQuery")(self._event)
        if result == cu.CUDA_ERROR_NOT_READY:
            return False
        if result:
            self.pipeline.device.fail("cuEventQuery", result)
        return True

    def result(self, timeout: float | None = None) -> list[np.ndarray]:
        """Wait for the dispatch and return its outputs (the arena and staging are released).
        ``timeout``: seconds to wait at most (default: the backend's bound); past it D013, and the
        dispatch stays pending (``result()`` may be called again)."""
        if self._outputs is None:
            if not self._release.alive:
                raise VyreError.one("C005", "this pending dispatch was closed before its result was read",
                                    f"program {self.pipeline.program.name!r}", "read result() before close()")
            check_timeout(timeout, "result(timeout=...)")
            self._outputs = self._collect(timeout)
        return self._outputs

    def close(self) -> None:
        """Release the arena, staging and event (waiting for the GPU first); the outputs, if not
        read yet, are dropped. Safe to call twice."""
        self._release()

    def __enter__(self) -> PendingDispatch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _collect(self, timeout: float | None) -> list[np.ndarray]:
        dev = self.pipeline.device
        with dev.lock:
            dev.alive()
            dev.finish(f"the dispatch of program {self.pipeline.program.name!r}", timeout, self._event)
            outputs = self.pipeline.collect(self.layout, self._staging)
            self._release()
        return outputs


def _release_dispatch(pipeline: CudaPipeline, arena: tuple[int, int], staging: Pinned, event: c_void_p) -> None:
    """Give a dispatch's arena and staging back and destroy its event, once the GPU is done with them."""
    dev = pipeline.device
    with dev.lock:
        if dev.closed or dev.poisoned is not None:
            return  # the context and everything in it is gone already
        with dev.visiting():  # maybe a finalizer, in the middle of another device's calls
            cu.call("cuEventSynchronize", event)
            pipeline.memory.give(*arena)
            pipeline.memory.give_staging(staging)
            cu.call("cuEventDestroy_v2", event)
