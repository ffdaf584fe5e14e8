"""The graphs room: resident launches run back to back (``DispatchSequence``: a prefix once, then
steps repeated N times, optionally reading ranges back in the same call) and captured once as a
CUDA graph that replays them with one ``cuGraphLaunch`` (``CudaGraph``)."""

from __future__ import annotations

import threading
import weakref
from ctypes import byref, c_void_p
from typing import Any, Sequence

import numpy as np

from ... import libcuda as cu
from ...ir.diagnostics import VyreError
from ..config import Timing
from ..hostio import check_timeout
from .device import Device
from .launches import BoundLaunch
from .memory import Memory

__all__ = ["DispatchSequence", "CudaGraph"]


class DispatchSequence:
    """Resident launches run in order: ``prefix`` once, then ``steps`` ``repeat`` times.
    ``run()`` queues them; ``run_and_read(ranges)`` also reads results back in the same call (one
    synchronisation); ``capture()`` turns the whole order into a CUDA graph."""

    def __init__(self, device: Device, memory: Memory, steps: Sequence[BoundLaunch],
                 prefix: Sequence[BoundLaunch] = (), repeat: int = 1) -> None:
        if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1:
            raise VyreError.one("D008", f"repeat must be a whole number of at least 1, got {repeat!r}",
                                "sequence(repeat=...)", "use repeat=1 or more")
        self.device, self.memory = device, memory
        self.prefix, self.steps, self.repeat = list(prefix), list(steps), repeat
        self.order = self.prefix + self.steps * repeat  # every launch, in order

    @property
    def launches(self) -> int:
        return len(self.order)

    def run(self) -> None:
        """Queue every launch (asynchronously; ``backend.synchronize()`` waits)."""
        for step in self.order:
            step()

    def run_and_read(self, ranges: Sequence[Any], timeout: float | None = None) -> list[np.ndarray]:
        """Queue every launch, then copy ``ranges`` back (each a buffer or ``(buffer, offset,
        count)``), waiting once (at most ``timeout`` seconds; default: the backend's bound). The
        ranges are checked before anything runs."""
        check_timeout(timeout, "run_and_read(timeout=...)")
        return self.memory.read_after(self.run, self.memory.ranges(ranges, "run_and_read"), timeout)

    def capture(self) -> CudaGraph:
        dev = self.device
        with dev.lock:
            dev.alive()
            for step in self.prefix + self.steps:  # re-check first if buffers were freed since binding
                if step.stale:
                    step.refresh()
            # capture on a private stream: launches other threads make meanwhile run, not get recorded
            stream = dev.capture_stream()
            cu.call("cuStreamBeginCapture_v2", stream, cu.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
            graph = c_void_p()
            try:
                for step in self.order:
                    result = step.launch_on(stream)
                    if result:
                        raise cu.CudaError("cuLaunchKernel (capture)", result)
            finally:
                cu.call("cuStreamEndCapture", stream, byref(graph))
            exec_ = c_void_p()
            cu.call("cuGraphInstantiateWithFlags", byref(exec_), graph, 0)
        return CudaGraph(dev, self.memory, graph, exec_, self.prefix + self.steps, len(self.order))


class CudaGraph:
    """A captured sequence of launches; ``replay()`` runs all of them with one cuGraphLaunch."""

    def __init__(self, device: Device, memory: Memory, graph: c_void_p, exec_: c_void_p,
                 steps: list[BoundLaunch], launches: int) -> None:
        self.device, self.memory = device, memory
        self.steps, self.launches = steps, launches  # the distinct bound launches; launches per replay
        self.stale = False  # set by the device when a buffer is freed or the device poisoned/closed
        device.watch(self)
        # a graph exec must not be launched from two threads at once (CUDA graph objects are not
        # internally synchronised). The launch keeps the GIL, which serialises it where there is
        # one (and is cheaper than a lock: replay stays near a raw cuGraphLaunch); a free-threaded
        # interpreter takes a lock of this graph's instead.
        self._launch = cu.raw("cuGraphLaunch", hold_gil=True)
        self._args = (exec_, device.stream)
        self._lock = threading.Lock()
        self._serial = None if cu.gil_serialises() else self._lock
        self._counters = device.counters
        # a graph dropped without close() is destroyed when collected
        self._finalizer = weakref.finalize(self, _destroy, device, graph, exec_)
        self._finalizer.atexit = False

    @property
    def handle(self) -> int:
        """The ``CUgraphExec`` handle (for interop and raw-driver baselines; 0 once closed)."""
        return int(self._args[0].value or 0) if self._finalizer.alive else 0

    def replay(self) -> None:
        """Run the captured launches again (with the buffers they were captured with)."""
        if self.stale or self._serial is not None:
            return self._checked_replay()
        result = self._launch(*self._args)  # steady state: no Python beyond this and the count
        if result:
            self.device.relaunch(result, self._launch, self._args, "cuGraphLaunch")
        self._counters["graph_launches"] += 1

    def _checked_replay(self) -> None:
        if self.stale:  # closed, poisoned or a buffer freed since: check first
            self._recheck()
        if self._serial is None:
            result = self._launch(*self._args)
        else:
            with self._serial:
                result = self._launch(*self._args)
        if result:
            self.device.relaunch(result, self._launch, self._args, "cuGraphLaunch")
        self._counters["graph_launches"] += 1

    def _recheck(self) -> None:
        dev = self.device
        if not self._finalizer.alive:
            _closed_launch()
        dev.alive()
        for step in self.steps:  # a freed buffer must be none of ours
            for buf in step.buffers:
                self.memory.own(buf, "captured graph")
        self.stale = False

    def replay_and_read(self, ranges: Sequence[Any], timeout: float | None = None) -> list[np.ndarray]:
        """Replay, then copy ``ranges`` back (each a buffer or ``(buffer, offset, count)``),
        waiting once (at most ``timeout`` seconds; default: the backend's bound). The ranges are
        checked before the replay."""
        check_timeout(timeout, "replay_and_read(timeout=...)")
        return self.memory.read_after(self.replay, self.memory.ranges(ranges, "replay_and_read"), timeout)

    def replay_timed(self) -> Timing:
        """Replay and wait; the GPU time of the whole graph comes from CUDA events."""
        return self.device.timed(self.replay)

    def close(self) -> None:
        """Destroy the graph; replay raises afterwards. Safe to call twice; not while another
        thread replays this graph (that is garbage collection's job: a dropped graph is closed)."""
        with self._lock:
            if self._finalizer.alive:
                self._launch, self.stale = _closed_launch, True  # a replay racing close() raises C005
                self._finalizer()

    def __enter__(self) -> CudaGraph:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _destroy(device: Device, graph: c_void_p, exec_: c_void_p) -> None:
    if not device.closed and device.poisoned is None:
        with device.visiting():  # maybe a finalizer, in the middle of another device's calls
            cu.call("cuGraphExecDestroy", exec_)
            cu.call("cuGraphDestroy", graph)


def _closed_launch(*_: object) -> int:
    raise VyreError.one("C005", "this graph was closed", "CudaGraph.replay", "capture the sequence again")
