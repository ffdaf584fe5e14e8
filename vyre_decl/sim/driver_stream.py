"""The simulated driver's streams, events, stream captures and graphs.

Waiting (see driver_queue for what runs): ``cuStreamSynchronize`` runs the stream's queued work
(and what it depends on), ``cuEventSynchronize`` the work up to the event's last record.
Queries are deterministic: ``cuStreamQuery``/``cuEventQuery`` of pending work answer
CUDA_ERROR_NOT_READY once; the next query of the same work runs it and answers CUDA_SUCCESS (or
the sticky error it ran into). So a polling loop finishes, and a caller that polls once and
moves on sees the work still running.

Events record the modelled device clock when their record runs; ``cuEventElapsedTime`` is the
difference in milliseconds. An event never recorded counts as complete (as in CUDA).

Captures: ``cuStreamBeginCapture_v2`` makes the work queued on a (non-legacy) stream graph nodes;
a kernel node holds the parameter values read at capture. The capture rules of the modes are
kept: a potentially unsafe call (a synchronisation, a synchronous copy, an allocation) during a
global capture, or during a thread-local one from its own thread, fails with
CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and invalidates the capture; so does a query or
synchronisation of the capturing stream, and legacy-stream work while a blocking stream captures
(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT); ``cuStreamEndCapture`` of an invalidated capture returns
CUDA_ERROR_STREAM_CAPTURE_INVALIDATED and no graph, from another thread (not relaxed mode)
CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD. Not modelled: captures spanning several streams (an event
recorded in a capture waited for by another stream is CUDA_ERROR_NOT_SUPPORTED).
"""

from __future__ import annotations

import threading
from ctypes import c_float, c_void_p
from dataclasses import dataclass, field

from .driver_errors import (CAPTURE_INVALIDATED, CAPTURE_ISOLATION, CAPTURE_UNSUPPORTED, CAPTURE_WRONG_THREAD,
                            CAPTURED_EVENT, ILLEGAL_STATE, INVALID_HANDLE, INVALID_VALUE, NOT_READY, NOT_SUPPORTED,
                            DriverError)
from .driver_queue import CREATED, LEGACY, Capture, Command, Stream, Work, force
from .driver_state import CtxState, DriverBase, write_out

__all__ = ["StreamCalls", "Event", "Graph", "GraphExec"]

_DISABLE_TIMING = 2
_EVENT_FLAGS = 0x7  # CU_EVENT_BLOCKING_SYNC | DISABLE_TIMING | INTERPROCESS


@dataclass(eq=False)
class Event:
    owner: CtxState
    timing: bool
    handle: int = 0
    command: Command | None = None  # the last record, queued
    records: int = 0  # records queued so far (a record's run sets the time only if it is the last)
    time_ns: float | None = None
    captured: Capture | None = None  # last recorded in this capture


@dataclass(eq=False)
class Graph:
    owner: CtxState
    nodes: list[Work] = field(default_factory=list)
    handle: int = 0


@dataclass(eq=False)
class GraphExec:
    owner: CtxState
    nodes: list[Work] = field(default_factory=list)
    handle: int = 0


class StreamCalls(DriverBase):
    """Streams, events, waits, captures and graphs."""

    # --- streams
    def cuStreamCreate(self, stream: int | None, flags: int) -> int:
        state = self.ctx()
        if not stream or flags not in (0, 1):
            raise DriverError(INVALID_VALUE, "cuStreamCreate needs an output pointer and flags 0 or 1")
        created = Stream(state, CREATED, non_blocking=bool(flags))
        state.streams.append(created)
        write_out(c_void_p, stream, self.register(created))
        return 0

    def cuStreamDestroy_v2(self, stream: int | None) -> int:
        self.ctx()
        if (stream or 0) in (0, 1, 2):
            raise DriverError(INVALID_HANDLE, "a default stream cannot be destroyed")
        found = self.lookup(stream, Stream)
        if found.capture is not None:
            found.capture.invalidated = True
            found.owner.captures.remove(found.capture)
            found.capture = None
        found.destroyed = True  # its queued work stays queued (and runs when waited for)
        found.owner.streams.remove(found)
        self.forget(found.handle)
        return 0

    def _not_capturing(self, stream: Stream) -> None:
        if stream.capture is not None:
            stream.capture.invalidated = True
            raise DriverError(CAPTURE_UNSUPPORTED, "the stream is capturing")

    def cuStreamSynchronize(self, stream: int | None) -> int:
        found = self.target(stream)
        self._not_capturing(found)
        force(found.pending(), self)
        self.check_healthy(found.owner)
        return 0

    def cuStreamQuery(self, stream: int | None) -> int:
        found = self.target(stream)
        self._not_capturing(found)
        return self._query(found.pending(), found.owner)

    def _query(self, command: Command | None, owner: CtxState) -> int:
        if command is not None and not command.done:
            if not command.polled:
                command.polled = True
                return NOT_READY
            force(command, self)
        return owner.poisoned

    # --- events
    def cuEventCreate(self, event: int | None, flags: int) -> int:
        state = self.ctx()
        if not event or flags & ~_EVENT_FLAGS or (flags & 4 and not flags & _DISABLE_TIMING):
            raise DriverError(INVALID_VALUE, f"cuEventCreate flags {flags}")
        write_out(c_void_p, event, self.register(Event(state, timing=not flags & _DISABLE_TIMING)))
        return 0

    def cuEventDestroy_v2(self, event: int | None) -> int:
        self.require_init()
        self.forget(self.lookup(event, Event).handle)
        return 0

    def cuEventRecord(self, event: int | None, stream: int | None) -> int:
        target = self.target(stream)
        state = target.owner
        ev = self.lookup(event, Event, state)  # the event and the stream: one context
        ev.records += 1
        number, device = ev.records, state.device

        def run() -> float:
            if ev.records == number:
                ev.time_ns = device.clock_ns
            return 0.0

        command = self.queue(target, Work("event record", run))
        ev.command, ev.captured = command, target.capture
        if command is not None:
            ev.time_ns = None
        return 0

    def cuStreamWaitEvent(self, stream: int | None, event: int | None, flags: int) -> int:
        target = self.target(stream)
        ev = self.lookup(event, Event)  # may be another context's (a wait across devices)
        if flags not in (0, 1):
            raise DriverError(INVALID_VALUE, f"cuStreamWaitEvent flags {flags}")
        if ev.captured is not None:
            if ev.captured is target.capture:
                return 0  # ordered already: one capture sequence on one stream
            raise DriverError(NOT_SUPPORTED, "captures across streams are not modelled")
        pending = ev.command if ev.command is not None and not ev.command.done else None
        if target.capture is not None:
            if pending is not None:
                target.capture.invalidated = True
                raise DriverError(CAPTURE_ISOLATION, "the captured stream would wait for uncaptured work")
            return 0
        if pending is not None:
            self.queue(target, Work("wait for event", lambda: 0.0), (pending,))
        return 0

    def _event(self, handle: int | None) -> Event:
        self.require_init()
        ev = self.lookup(handle, Event)
        if ev.captured is not None:
            raise DriverError(CAPTURED_EVENT, "the event was last recorded in a capturing stream")
        return ev

    def cuEventSynchronize(self, event: int | None) -> int:
        ev = self._event(event)
        force(ev.command, self)
        self.check_healthy(ev.owner)
        return 0

    def cuEventQuery(self, event: int | None) -> int:
        ev = self._event(event)
        return self._query(ev.command, ev.owner)

    def cuEventElapsedTime(self, ms: int | None, start: int | None, end: int | None) -> int:
        first, last = self._event(start), self._event(end)
        if not (first.timing and last.timing) or first.command is None or last.command is None:
            raise DriverError(INVALID_HANDLE, "both events must be recorded, with timing")
        if not (first.command.done and last.command.done):
            return NOT_READY
        for ev in (first, last):
            self.check_healthy(ev.owner)
        if first.time_ns is None or last.time_ns is None:
            raise DriverError(INVALID_HANDLE, "an event's record did not run")
        write_out(c_float, ms, (last.time_ns - first.time_ns) / 1e6)
        return 0

    # --- capture and graphs
    def cuStreamBeginCapture_v2(self, stream: int | None, mode: int) -> int:
        target = self.target(stream)
        state = target.owner
        if target.kind == LEGACY:
            raise DriverError(CAPTURE_UNSUPPORTED, "the legacy stream cannot be captured")
        if mode not in (0, 1, 2):
            raise DriverError(INVALID_VALUE, f"capture mode {mode}")
        if target.capture is not None:
            raise DriverError(ILLEGAL_STATE, "the stream is capturing already")
        target.capture = Capture(target, mode, threading.get_ident())
        state.captures.append(target.capture)
        return 0

    def cuStreamEndCapture(self, stream: int | None, graph: int | None) -> int:
        target = self.target(stream)
        state = target.owner
        cap = target.capture
        if cap is None:
            raise DriverError(ILLEGAL_STATE, "the stream is not capturing")
        if not graph:
            raise DriverError(INVALID_VALUE, "NULL graph pointer")
        if cap.mode != 2 and cap.thread != threading.get_ident():
            raise DriverError(CAPTURE_WRONG_THREAD, "the capture began in another thread")
        target.capture = None
        state.captures.remove(cap)
        if cap.invalidated:
            write_out(c_void_p, graph, None)
            return CAPTURE_INVALIDATED
        write_out(c_void_p, graph, self.register(Graph(state, list(cap.nodes))))
        return 0

    def cuGraphInstantiateWithFlags(self, graph_exec: int | None, graph: int | None, flags: int) -> int:
        state = self.ctx()
        found = self.lookup(graph, Graph, state)
        if not graph_exec or flags & ~0xF:
            raise DriverError(INVALID_VALUE, f"instantiate flags {flags}")
        write_out(c_void_p, graph_exec, self.register(GraphExec(state, list(found.nodes))))
        return 0

    def cuGraphLaunch(self, graph_exec: int | None, stream: int | None) -> int:
        target = self.target(stream)
        found = self.lookup(graph_exec, GraphExec, target.owner)  # the graph and the stream: one context
        for node in found.nodes:
            self.queue(target, node)
        return 0

    def cuGraphExecDestroy(self, graph_exec: int | None) -> int:
        self.require_init()
        self.forget(self.lookup(graph_exec, GraphExec).handle)
        return 0

    def cuGraphDestroy(self, graph: int | None) -> int:
        self.require_init()
        self.forget(self.lookup(graph, Graph).handle)
        return 0

