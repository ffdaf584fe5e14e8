"""The graphs room: resident launches run back to back (``DispatchSequence``) and captured once as
a CUDA graph that replays them with one ``cuGraphLaunch`` (``CudaGraph``)."""

from __future__ import annotations

import threading
import weakref
from ctypes import byref, c_void_p
from typing import Sequence

from ... import libcuda as cu
from ...ir.diagnostics import VyreError
from ..config import Timing
from .device import Device
from .launches import BoundLaunch
from .memory import Memory

__all__ = ["DispatchSequence", "CudaGraph"]


class DispatchSequence:
    """Resident dispatches run back to back in order; ``capture()`` turns them into a CUDA graph."""

    def __init__(self, device: Device, memory: Memory, steps: Sequence[BoundLaunch]) -> None:
        self.device, self.memory, self.steps = device, memory, list(steps)

    def run(self) -> None:
        for step in self.steps:
            step()

    def capture(self) -> CudaGraph:
        dev = self.device
        with dev.lock:
            dev.alive()
            for step in self.steps:  # re-check first if buffers were freed since binding
                if step.epoch != dev.epoch:
                    step.refresh()
            # capture on a private stream: launches other threads make meanwhile run, not get recorded
            stream = dev.capture_stream()
            cu.call("cuStreamBeginCapture_v2", stream, cu.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
            graph = c_void_p()
            try:
                for step in self.steps:
                    result = step.launch_on(stream)
                    if result:
                        raise cu.CudaError("cuLaunchKernel (capture)", result)
            finally:
                cu.call("cuStreamEndCapture", stream, byref(graph))
            exec_ = c_void_p()
            cu.call("cuGraphInstantiateWithFlags", byref(exec_), graph, 0)
        return CudaGraph(dev, self.memory, graph, exec_, self.steps)


class CudaGraph:
    """A captured sequence of launches; ``replay()`` runs all of them with one cuGraphLaunch."""

    def __init__(self, device: Device, memory: Memory, graph: c_void_p, exec_: c_void_p,
                 steps: list[BoundLaunch]) -> None:
        self.device, self.memory = device, memory
        self.steps, self.launches = steps, len(steps)
        self._epoch = device.epoch
        self._launch = cu.raw("cuGraphLaunch")
        self._args = (exec_, device.stream)
        # a graph exec must not be launched from two threads at once (CUDA objects are not
        # internally synchronised); a lock of its own keeps launches of other work unblocked
        self._lock = threading.Lock()
        # a graph dropped without close() is destroyed when collected
        self._finalizer = weakref.finalize(self, _destroy, device, graph, exec_)
        self._finalizer.atexit = False

    @property
    def handle(self) -> int:
        """The ``CUgraphExec`` handle (for interop and raw-driver baselines; 0 once closed)."""
        return int(self._args[0].value or 0) if self._finalizer.alive else 0

    def replay(self) -> None:
        """Run the captured launches again (with the buffers they were captured with)."""
        dev = self.device
        if self._epoch != dev.epoch:  # closed, poisoned or a buffer freed since: check first
            self._recheck()
        with self._lock:
            result = self._launch(*self._args)
        if result:
            dev.relaunch(result, self._launch, self._args, "cuGraphLaunch")
        dev.counters["graph_launches"] += 1

    def _recheck(self) -> None:
        dev = self.device
        if not self._finalizer.alive:
            _closed_launch()
        dev.alive()
        for step in self.steps:  # a freed buffer must be none of ours
            for buf in step.buffers:
                self.memory.own(buf, "captured graph")
        self._epoch = dev.epoch

    def replay_timed(self) -> Timing:
        """Replay and wait; the GPU time of the whole graph comes from CUDA events."""
        return self.device.timed(self.replay)

    def close(self) -> None:
        """Destroy the graph; replay raises afterwards. Safe to call twice."""
        with self._lock:
            if self._finalizer.alive:
                self._launch, self._epoch = _closed_launch, -1  # a replay racing close() raises C005
                self._finalizer()

    def __enter__(self) -> CudaGraph:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _destroy(device: Device, graph: c_void_p, exec_: c_void_p) -> None:
    if not device.closed and device.poisoned is None:
        cu.call("cuGraphExecDestroy", exec_)
        cu.call("cuGraphDestroy", graph)


def _closed_launch(*_: object) -> int:
    raise VyreError.one("C005", "this graph was closed", "CudaGraph.replay", "capture the sequence again")
