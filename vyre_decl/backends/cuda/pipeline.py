"""The pipeline room: a program compiled for one GPU and every way to launch it.

``CudaPipeline.dispatch`` (numpy in, numpy out) lays all buffers of a dispatch out in one device
arena and one pinned staging area: one host-to-device copy for the inputs, one memset for the
outputs, the launch, one device-to-host copy for the results, one synchronize. A pipeline owns
that enqueue and the collection of its results. ``bind`` pre-builds a launch over resident
buffers (``BoundLaunch``), whose steady state is one ``cuLaunchKernel`` with pre-built arguments.
"""

from __future__ import annotations

import time
import weakref
from ctypes import c_uint32, c_uint64, c_void_p
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ... import libcuda as cu
from ...emit import PtxModule
from ...emit.abi import VECTOR_LANES
from ...ir.diagnostics import VyreError
from ...ir.nodes import BufferDecl, Program
from ..config import DispatchConfig, Timing
from ..hostio import CallPlan, check_config, check_out, check_workgroup, deliver, labelled, prepare
from . import nvtx
from .device import Device, Occupancy
from .launches import BoundLaunch, PendingDispatch
from .memory import DeviceBuffer, Memory, Pinned, aligned

__all__ = ["CudaPipeline", "Layout"]

_ZERO_BY_COPY = 1 << 16  # outputs up to this many bytes are zeroed through the input copy
_LAYOUTS_KEPT = 64


@dataclass(eq=False)  # compared by identity: a layout is cached per set of sizes
class Layout:
    """Where the buffers of one dispatch live in the device arena and the staging area."""

    offsets: list[int]  # per ABI buffer
    inputs: list[tuple[int, int]]  # (offset, bytes) per program input, in input order
    outputs: list[tuple[BufferDecl, int, int]]  # (decl, offset, count) per returned buffer, in output order
    returned_start: int  # [returned_start, total): device -> host
    outputs_start: int  # [0, outputs_start): host -> device; [outputs_start, total): zero-filled
    total: int
    # views of one staging area (its whole view first): each input and output as its storage
    # dtype, and the output region to zero; rebuilt when the staging area changes
    views: tuple[np.ndarray, list[np.ndarray], list[np.ndarray], np.ndarray] | None = None

    def views_of(self, staging: Pinned, input_dtypes: Sequence[np.dtype]
                 ) -> tuple[np.ndarray, list[np.ndarray], list[np.ndarray], np.ndarray]:
        if self.views is None or self.views[0] is not staging.view:
            view = staging.view
            self.views = (view, [view[off: off + n].view(t) for (off, n), t in zip(self.inputs, input_dtypes)],
                          [view[off: off + n * d.dtype.size].view(d.dtype.storage_dtype) for d, off, n in self.outputs],
                          view[self.outputs_start: self.total])
        return self.views


class CudaPipeline:
    """A program compiled for the GPU: a loaded kernel and its pre-built launch arguments."""

    def __init__(self, device: Device, memory: Memory, program: Program, module: PtxModule, function: c_void_p,
                 config: DispatchConfig, release: Callable[[], None] = lambda: None,
                 vector_function: c_void_p | None = None) -> None:
        """``release`` is called once this pipeline is garbage: its module may be unloaded then
        (not at ``close()``, since graphs captured from it keep launching its function).
        ``vector_function``: the vectorised entry of a map-shaped program, launched (on a grid
        VECTOR_LANES times smaller) whenever the grid is inferred. ``config`` was checked by
        ``CudaBackend.compile``."""
        self.device, self.memory = device, memory
        self.program, self.ptx, self.config = program, module, config
        self.function, self.vector_function = function, vector_function
        by_name = {b.name: b for b in program.buffers}
        abi_names = [p.buffer for p in module.abi.params if p.kind == "ptr"]
        self.abi_buffers: list[BufferDecl] = [by_name[n] for n in abi_names]
        # device layout: pure inputs, then read_write inputs, then outputs (so one copy moves all
        # inputs, one memset zeroes all outputs and one copy brings back everything returned)
        self._category = [2 if d.is_output else 1 if d.is_returned else 0 for d in self.abi_buffers]
        self._order = sorted(range(len(self.abi_buffers)), key=lambda i: (self._category[i], i))
        self._ptr_values = [c_uint64(0) for _ in abi_names]
        self._len_values = [c_uint32(0) for _ in abi_names]
        dynamic = module.abi.dynamic_shared_bytes  # workgroup_memory(large): the bytes of every launch
        self.launcher = cu.Launcher(function, self._ptr_values + self._len_values, program.workgroup_size, dynamic)
        self.launcher.set_stream(device.stream)
        self.vector_launcher: cu.Launcher | None = None
        if vector_function is not None:  # the same argument slots, the other entry
            self.vector_launcher = cu.Launcher(vector_function, self._ptr_values + self._len_values,
                                               program.workgroup_size, dynamic)
            self.vector_launcher.set_stream(device.stream)
        self._inputs = program.inputs
        self._input_dtypes = [d.dtype.storage_dtype for d in self._inputs]
        self._outputs = program.outputs
        self._lease = _Lease()  # the device arena of numpy dispatches, grown on demand
        # (arena, layout, grid, entry) the argument slots and that entry's grid hold now
        self._bound_to: tuple[int, Layout, tuple[int, int, int], cu.Launcher] | None = None
        self._finalizer = weakref.finalize(self, _release_pipeline, memory, self._lease, release)
        self._finalizer.atexit = False
        self._bound: BoundLaunch | None = None
        self.plan = CallPlan(program)  # the calling convention, shared with the reference backend
        self._layouts: dict[tuple[int, ...], Layout] = {}
        self.resident_launches = 0  # counted here, not in the device's dict: it is the hot path
        self._what = f"the dispatch of program {program.name!r}"  # named by a D013
        self.closed = False

    def close(self) -> None:
        """Give the dispatch arena back and refuse further use (C005). Safe to call twice."""
        with self.device.lock:
            self._lease.give_back(self.memory)
            self._bound, self.closed = None, True

    def __enter__(self) -> CudaPipeline:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def usable(self) -> None:
        """Raise C005 if the pipeline or its device was closed (C002 if poisoned)."""
        self.device.alive()
        if self.closed:
            raise VyreError.one("C005", "this pipeline was closed", f"program {self.program.name!r}",
                                "compile the program again (backend.compile)")

    # --- numpy in, numpy out
    def _layout(self, counts: Mapping[str, int]) -> Layout:
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
            pos += aligned(counts[d.name] * d.dtype.size)
        outputs_start = first[2] if first[2] >= 0 else pos
        returned_start = first[1] if first[1] >= 0 else outputs_start
        at = {d.name: offsets[i] for i, d in enumerate(self.abi_buffers)}
        layout = Layout(offsets, [(at[d.name], counts[d.name] * d.dtype.size) for d in self._inputs],
                        [(d, at[d.name], counts[d.name]) for d in self._outputs], returned_start, outputs_start, pos)
        if len(self._layouts) < _LAYOUTS_KEPT:
            self._layouts[key] = layout
        return layout

    def _prepare(self, inputs: Sequence[Any] | Mapping[str, Any], cfg: DispatchConfig
                 ) -> tuple[list[np.ndarray], dict[str, int], tuple[int, int, int], Layout, cu.Launcher]:
        if cfg is not self.config:  # the pipeline's own config was checked at compile
            check_workgroup(self.program, cfg)
        vector = self.vector_launcher is not None and cfg.grid is None  # inferred grid: vectorised entry
        fast = self.plan.fast(inputs, cfg, VECTOR_LANES if vector else 1)
        if fast is None:  # the general path, with every check and error
            launch = prepare(self.program, inputs, cfg, self.plan)
            # an explicit grid equal to the inferred one is the inferred grid (a routine's map step)
            vector = vector or (self.vector_launcher is not None and launch.grid == self.plan.grid(launch.counts))
            grid = self.plan.grid(launch.counts, lanes=VECTOR_LANES) if vector else launch.grid
            fast = [launch.memory[d.name] for d in self._inputs], launch.counts, grid
        arrays, counts, grid = fast
        launcher = self.vector_launcher if vector else self.launcher
        assert launcher is not None
        self.device.check_grid(self.program, grid)
        return arrays, counts, grid, self._layout(counts), launcher

    def dispatch(self, inputs: Sequence[Any] | Mapping[str, Any], config: DispatchConfig | None = None,
                 out: Sequence[np.ndarray] | None = None) -> list[np.ndarray]:
        """Run once on ``inputs`` (numpy arrays, bytes or lists); returns the outputs (copied
        straight into the caller's arrays ``out`` when given: see hostio.check_out)."""
        return self._dispatch(inputs, config or self.config, False, out)[0]

    def _dispatch(self, inputs: Sequence[Any] | Mapping[str, Any], cfg: DispatchConfig,
                  timed: bool, out: Sequence[np.ndarray] | None = None) -> tuple[list[np.ndarray], float]:
        if cfg is not self.config:
            check_config(cfg)
        if cfg.label:
            nvtx.push(cfg.label)
        try:
            return self._run(inputs, cfg, timed, out)
        except VyreError as exc:
            raise labelled(exc, cfg) from None
        finally:
            if cfg.label:
                nvtx.pop()

    def _run(self, inputs: Sequence[Any] | Mapping[str, Any], cfg: DispatchConfig,
             timed: bool, out: Sequence[np.ndarray] | None) -> tuple[list[np.ndarray], float]:
        dev, mem = self.device, self.memory
        self.usable()
        arrays, counts, grid, layout, launcher = self._prepare(inputs, cfg)
        into = check_out(self.program, counts, out) if out is not None else None
        with dev.lock:
            self.usable()
            base = self._lease.at_least(mem, layout.total)
            try:
                self._enqueue(arrays, counts, grid, layout, base, mem.staging, cfg.repeat, timed, launcher)
                dev.finish(self._what, cfg.timeout)
            except BaseException:
                # a timeout, a Ctrl-C or a fault with work queued: that work may still use the arena
                # and the staging area, so neither is handed out again (the backend stays usable)
                self._lease.block = None
                mem.abandon_staging()
                raise
            device_s = dev.elapsed() if timed else 0.0
            outputs = self.collect(layout, mem.staging, into)
            mem.done_with_staging()
            return outputs, device_s

    def dispatch_async(self, inputs: Sequence[Any] | Mapping[str, Any], config: DispatchConfig | None = None) -> PendingDispatch:
        """Start a dispatch and return at once; ``.result()`` waits and gives the outputs."""
        cfg = config or self.config
        dev, mem = self.device, self.memory
        try:
            if cfg is not self.config:
                check_config(cfg)
            self.usable()
            arrays, counts, grid, layout, launcher = self._prepare(inputs, cfg)
        except VyreError as exc:
            raise labelled(exc, cfg) from None
        with dev.lock:
            arena = mem.take(layout.total)
            staging = mem.take_staging(layout.total)
            self._enqueue(arrays, counts, grid, layout, arena[0], staging, cfg.repeat, False, launcher)
            event = dev.new_event(timing=False)
            dev.record(event)
        return PendingDispatch(self, layout, arena, staging, event)

    def dispatch_timed(self, inputs: Sequence[Any] | Mapping[str, Any], config: DispatchConfig | None = None) -> tuple[list[np.ndarray], Timing]:
        """Like ``dispatch``, also returning wall time and the GPU time of the launches."""
        t0 = time.perf_counter()
        outputs, device_s = self._dispatch(inputs, config or self.config, True)
        return outputs, Timing(time.perf_counter() - t0, device_s)

    def _enqueue(self, arrays: Sequence[np.ndarray], counts: Mapping[str, int], grid: tuple[int, int, int],
                 layout: Layout, base: int, staging: Pinned, repeat: int, timed: bool, launcher: cu.Launcher) -> None:
        """Queue the input copy, the output zero-fill, the launch(es) and the result copy on the
        stream (the device lock held)."""
        dev = self.device
        staging.ensure(layout.total)
        _, inputs, _, zeros = layout.views_of(staging, self._input_dtypes)
        for dest, a in zip(inputs, arrays):
            dest[:] = a.reshape(-1)
        # small outputs are zeroed in the staging area and ride along with the input copy (one
        # driver call instead of two); large ones are zero-filled on the device
        ride = layout.total - layout.outputs_start <= _ZERO_BY_COPY
        upto = layout.total if ride else layout.outputs_start
        if ride:
            zeros.fill(0)
        if upto:
            dev.copy_in(base, staging.ptr, upto)
        if not ride:
            dev.zero(base + layout.outputs_start, layout.total - layout.outputs_start)
        bound = (base, layout, grid, launcher)
        if self._bound_to != bound:  # the same arena, sizes, grid and entry as last time: all set
            for slot, off in zip(self._ptr_values, layout.offsets):
                slot.value = base + off
            for length, d in zip(self._len_values, self.abi_buffers):
                length.value = counts[d.name]
            launcher.set_grid(grid)
            self._bound_to = bound
        if timed:
            dev.mark_start()
        if 0 not in grid:
            for _ in range(repeat):
                result = launcher()
                if result:
                    dev.fail("cuLaunchKernel", result)
            dev.counters["launches"] += repeat
        if timed:
            dev.mark_end()
        if layout.total > layout.returned_start:
            dev.copy_out(staging.ptr + layout.returned_start, base + layout.returned_start,
                         layout.total - layout.returned_start)
        dev.counters["dispatches"] += 1

    def collect(self, layout: Layout, staging: Pinned, into: list[np.ndarray] | None = None) -> list[np.ndarray]:
        """The outputs of a finished dispatch, copied out of ``staging`` (into ``into`` when given)."""
        _, _, outputs, _ = layout.views_of(staging, self._input_dtypes)
        if into is None:
            return [deliver(d, raw, None) for (d, _, _), raw in zip(layout.outputs, outputs)]
        return [deliver(d, raw, dest) for (d, _, _), raw, dest in zip(layout.outputs, outputs, into)]

    # --- launch help
    def occupancy(self) -> Occupancy:
        """How this kernel fills a multiprocessor at its workgroup size (registers, workgroup
        memory and resident workgroups per multiprocessor)."""
        wg = self.program.workgroup_size
        return self.device.occupancy(self.function, wg[0] * wg[1] * wg[2], self.ptx.abi.dynamic_shared_bytes)

    def suggested_workgroup(self) -> int:
        """The invocations per workgroup (a power of two from 64 to 1024) that keep the most
        threads resident per multiprocessor for this kernel's resource use (ties: the smaller);
        compile with ``DispatchConfig(workgroup=(n, 1, 1))`` to use it."""
        dynamic = self.ptx.abi.dynamic_shared_bytes
        best = max((self.device.occupancy(self.function, n, dynamic) for n in (64, 128, 256, 512, 1024)),
                   key=lambda o: (o.workgroups_per_sm * o.threads, -o.threads))
        return best.threads

    # --- resident buffers
    def bind(self, buffers: Sequence[DeviceBuffer] | Mapping[str, DeviceBuffer],
             grid: tuple[int, int, int] | None = None) -> BoundLaunch:
        """Pre-build a launch over resident buffers (every non-workgroup buffer, in declaration
        order, or by name). Calling the result launches the kernel (asynchronously)."""
        return BoundLaunch(self, buffers, grid)

    def dispatch_resident(self, buffers: Sequence[DeviceBuffer] | Mapping[str, DeviceBuffer],
                          grid: tuple[int, int, int] | None = None) -> None:
        """Launch over resident buffers, asynchronously (``backend.synchronize()`` waits). Buffers
        are not zero-filled: they hold what ``allocate``/``upload`` and earlier dispatches left."""
        b = self._bound
        if b is None or b.stale or b.grid_arg != grid or b.items != buffers:
            b = self._bound = BoundLaunch(self, buffers, grid)  # checks everything; raises if poisoned
        # steady state: the same buffers as last time, nothing freed, context healthy
        result = b.launch(*b.args)
        if result:
            self.device.relaunch(result, b.launch, b.args)
        self.resident_launches += 1


    def dispatch_resident_timed(self, buffers: Sequence[DeviceBuffer] | Mapping[str, DeviceBuffer],
                                grid: tuple[int, int, int] | None = None) -> Timing:
        """Launch over resident buffers and wait; the GPU time comes from CUDA events."""
        return self.device.timed(lambda: self.dispatch_resident(buffers, grid))


class _Lease:
    """A pipeline's device arena: grown on demand, given back on close or when the pipeline dies."""

    __slots__ = ("block",)

    def __init__(self) -> None:
        self.block: tuple[int, int] | None = None

    def at_least(self, memory: Memory, nbytes: int) -> int:
        """The arena's address, grown to ``nbytes`` first if smaller. Lock held."""
        if self.block is None or self.block[1] < nbytes:
            self.give_back(memory)
            self.block = memory.take(nbytes)
        return self.block[0]

    def give_back(self, memory: Memory) -> None:
        if self.block is not None and not memory.device.closed:
            memory.give(*self.block)
        self.block = None


def _release_pipeline(memory: Memory, lease: _Lease, release: Callable[[], None]) -> None:
    dev = memory.device
    if dev.closed:  # the backend's close gave everything back
        release()
        return
    with dev.lock, dev.visiting():  # maybe a finalizer, in the middle of another device's calls
        lease.give_back(memory)
        release()
