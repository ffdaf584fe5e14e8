"""Deferred execution: the simulated driver's streams, queued work and the rule that runs it.

Every copy, memset, kernel launch and event record is queued as a ``Command`` and runs only when
something waits for it. A command depends on the command queued before it on its stream, on the
commands an event wait names (``cuStreamWaitEvent`` takes the event's state when it is queued),
and, through the legacy default stream's implicit synchronisation, on the tails of the other
streams:

- a command queued on the legacy default stream (handle 0 or ``CU_STREAM_LEGACY`` = 1) waits for
  the work queued so far on every *blocking* stream of its context (streams created without
  ``CU_STREAM_NON_BLOCKING``, and the per-thread default streams);
- a command queued on a blocking stream waits for the work queued so far on the legacy stream;
- a non-blocking stream synchronises with nothing implicitly.

``force(command)`` runs a command's dependencies first (depth first, oldest first), then the
command: what runs, and in which order, depends only on the calls made, never on timing. Work
nobody waits for never runs, so a consumer that forgets to wait reads the old contents of memory
every time (stale data), where a GPU would race.

A command whose context is poisoned (a sticky fault) or destroyed is dropped, not run. A fault
while running poisons the command's context: its pending work is dropped and every later call in
it returns the fault's code.

Time is modelled, not measured: each device has a clock (nanoseconds) that each command advances
by its cost when it runs (``Work.run`` returns it): see ``driver_mem`` and ``driver_launch`` for
the costs. Event records read the clock, so ``cuEventElapsedTime`` is the modelled cost of the
work that ran between two records.
"""

from __future__ import annotations

import itertools
import traceback
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

from .driver_errors import FAULT_CODES, ILLEGAL_ADDRESS, LAUNCH_TIMEOUT, UNKNOWN

if TYPE_CHECKING:  # pragma: no cover
    from .driver_state import CtxState, DriverBase

__all__ = ["Work", "Command", "Stream", "Capture", "enqueue", "force", "flush", "poison", "run_now", "LEGACY",
           "PER_THREAD", "CREATED"]

LEGACY, PER_THREAD, CREATED = "legacy", "per_thread", "created"
_SEQ = itertools.count(1)


@dataclass
class Work:
    """What a queued command does: ``run()`` performs it (reading and writing simulated or pinned
    memory at that moment) and returns its modelled duration in nanoseconds."""

    label: str
    run: Callable[[], float]


@dataclass(eq=False)
class Command:
    """One piece of queued work on a stream."""

    work: Work
    owner: CtxState
    deps: list[Command]
    seq: int = field(default_factory=lambda: next(_SEQ))
    done: bool = False
    polled: bool = False  # a query saw it pending once (the next query runs it)


@dataclass(eq=False)
class Capture:
    """A stream capture in progress (``cuStreamBeginCapture_v2``): the work queued on the stream
    becomes graph nodes instead of commands."""

    stream: Stream
    mode: int  # CUstreamCaptureMode: 0 global, 1 thread-local, 2 relaxed
    thread: int
    nodes: list[Work] = field(default_factory=list)
    invalidated: bool = False


@dataclass(eq=False)
class Stream:
    """A CUDA stream of a context: the legacy default stream, a per-thread default stream or one
    made by ``cuStreamCreate``."""

    owner: CtxState
    kind: str  # LEGACY, PER_THREAD or CREATED
    non_blocking: bool = False
    handle: int = 0
    tail: Command | None = None
    capture: Capture | None = None
    destroyed: bool = False

    @property
    def blocking(self) -> bool:
        """Whether the legacy default stream synchronises with this stream."""
        return self.kind != LEGACY and not self.non_blocking

    def pending(self) -> Command | None:
        """The last command queued here, unless it ran already."""
        return self.tail if self.tail is not None and not self.tail.done else None


def enqueue(stream: Stream, work: Work, extra: tuple[Command, ...] = ()) -> Command | None:
    """Queue ``work`` on ``stream`` after what is queued there (and, by the legacy stream's rule,
    on other streams), and after the commands in ``extra``. A capturing stream records the work
    as a graph node instead (returns None)."""
    if stream.capture is not None:
        stream.capture.nodes.append(work)
        return None
    state = stream.owner
    deps = [c for c in (stream.tail, *extra) if c is not None and not c.done]
    if stream.kind == LEGACY:
        deps += [c for s in state.live_streams() if s.blocking and (c := s.pending()) is not None]
    elif stream.blocking and (c := state.legacy.pending()) is not None:
        deps.append(c)
    command = Command(work, state, deps)
    state.pending[command.seq] = command
    stream.tail = command
    return command


def force(command: Command | None, driver: DriverBase) -> None:
    """Run ``command`` after everything it depends on (iteratively: a stream may hold many)."""
    if command is None or command.done:
        return
    stack: list[tuple[Command, bool]] = [(command, False)]
    while stack:
        cmd, expanded = stack.pop()
        if cmd.done:
            continue
        if expanded:
            _execute(cmd, driver)
            continue
        stack.append((cmd, True))
        for dep in sorted(cmd.deps, key=lambda c: c.seq, reverse=True):  # oldest runs first
            if not dep.done:
                stack.append((dep, False))


def flush(state: CtxState, driver: DriverBase) -> None:
    """Run all work queued in ``state``'s context (``cuCtxSynchronize``)."""
    while state.pending:
        for seq in sorted(state.pending):
            command = state.pending.get(seq)
            if command is not None:
                force(command, driver)


def _execute(cmd: Command, driver: DriverBase) -> None:
    state = cmd.owner
    _retire(cmd)
    if state.poisoned or state.destroyed:
        return
    try:
        cost = cmd.work.run()
    except Exception as exc:  # a fault of the simulated device, or a defect of the model
        poison(state, _fault_code(exc, driver), f"{cmd.work.label}: {exc}")
        return
    state.device.clock_ns += max(cost, 0.0)


def _retire(cmd: Command) -> None:
    cmd.done = True
    cmd.deps = []
    cmd.owner.pending.pop(cmd.seq, None)


def _fault_code(exc: Exception, driver: DriverBase) -> int:
    kind = getattr(exc, "kind", None)
    if isinstance(kind, str) and type(exc).__name__ == "KernelFault":
        return FAULT_CODES.get(kind, 719)
    if type(exc).__name__ == "MemoryFault":
        return ILLEGAL_ADDRESS
    if type(exc).__name__ == "KernelTimeout":  # the interpreter's watchdog stopped the kernel
        return LAUNCH_TIMEOUT
    driver.errors.append("".join(traceback.format_exception(exc)))
    return UNKNOWN


def poison(state: CtxState, code: int, detail: str) -> None:
    """A sticky error in ``state``'s context: its queued work is dropped, and every later call
    that needs the context returns ``code``."""
    if not state.poisoned:
        state.poisoned = code
        state.device.faults.append((code, detail))
    for cmd in list(state.pending.values()):
        _retire(cmd)


def run_now(stream: Stream, work: Work, driver: DriverBase) -> None:
    """Queue ``work`` on ``stream`` and wait for it (a call synchronous with the host)."""
    force(enqueue(stream, work), driver)

