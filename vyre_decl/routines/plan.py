"""A routine prepared on a device for fixed input lengths: buffers allocated once, steps replayed.

``RoutinePlan`` holds the device buffers of one call shape (inputs, outputs, temporaries,
constants) and the routine's launches captured as one CUDA graph that first zeroes the outputs and
temporaries, so every replay starts from the state a fresh call would. A routine called again
with the same lengths and attributes reuses its plan: upload, one graph launch, download.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Hashable, Mapping, Sequence

import numpy as np

from .runner import CompiledRoutine

__all__ = ["RoutinePlan", "PlanCache"]


class RoutinePlan:
    """One routine, one backend with resident buffers and graphs, one set of input lengths and
    attributes. ``inputs`` and ``outputs`` are the device buffers; ``replay()`` runs the routine
    on whatever the inputs hold; ``run(*arrays)`` uploads, replays and downloads."""

    def __init__(self, compiled: CompiledRoutine, backend: Any, lengths: Sequence[int], attrs: Mapping[str, int]) -> None:
        self.compiled, self.backend = compiled, backend
        routine = compiled.routine
        self.inputs = [backend.allocate(compiled.dtypes[s.name], n) for s, n in zip(routine.inputs, lengths)]
        try:
            sequence, self._env = compiled.resident_steps(backend, self.inputs, attrs, zero_fill=True)
        except BaseException:
            for buf in self.inputs:
                backend.free(buf)
            raise
        self.outputs = [self._env[s.name] for s in routine.outputs]
        self.launches = sequence.launches
        self._graph = sequence.capture() if self.launches else None
        self._lock = threading.Lock()

    def replay(self) -> None:
        """Run the routine's launches (queued on the backend's stream)."""
        if self._graph is not None:
            self._graph.replay()

    def run(self, arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Upload ``arrays`` into the inputs, replay, and return the outputs as host arrays."""
        with self._lock:
            for buf, arr in zip(self.inputs, arrays):
                if arr.size:
                    self.backend.upload_at(buf, 0, arr)
            self.replay()
            return [self.backend.download(b) for b in self.outputs]

    def close(self) -> None:
        """Free the device buffers and the graph."""
        with self._lock:
            if self._graph is not None:
                self._graph.close()
                self._graph = None
            allocated = [self._env[s.name] for s in self.compiled.routine.buffers if s.role != "in"]
            for buf in self.inputs + allocated:
                if not buf.freed:
                    self.backend.free(buf)
            self._env = {}


class PlanCache:
    """The most recently used plans of one routine (a few call shapes), closed when evicted."""

    def __init__(self, capacity: int = 4) -> None:
        self.capacity = capacity
        self._plans: OrderedDict[Hashable, RoutinePlan] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable, make: Any, backend: Any = None) -> RoutinePlan:
        """The plan for ``key`` (made by ``make()`` when missing, or when the one kept belongs to
        another or a closed backend)."""
        with self._lock:
            plan = self._plans.get(key)
            if plan is not None and (plan.backend is not backend or getattr(backend, "closed", False)):
                del self._plans[key]
                plan = None
            if plan is not None:
                self._plans.move_to_end(key)
                return plan
            plan = self._plans[key] = make()
            while len(self._plans) > self.capacity:
                self._plans.popitem(last=False)[1].close()
            return plan

    def clear(self) -> None:
        with self._lock:
            for plan in self._plans.values():
                plan.close()
            self._plans.clear()
