"""The simulated driver's state: devices, primary contexts, the per-thread current context,
handles, and the checks every call makes (initialised, a live current context, handles and device
pointers that belong to it).

Ownership: every object a context makes (allocations, pinned host memory, streams, events,
modules, functions, graphs) belongs to that context's *state* (``CtxState``). Releasing a primary
context's last reference destroys the state: its work is finished, its allocations freed, and
its handles become invalid (CUDA_ERROR_INVALID_HANDLE); a thread that still has the context
current gets CUDA_ERROR_CONTEXT_IS_DESTROYED from calls that need a context. Retaining the
context again gives the same context handle with a fresh state (as the driver's primary context
keeps its handle).
"""

from __future__ import annotations

import ctypes
import itertools
import threading
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Any, TypeVar

from .driver_errors import (CAPTURE_IMPLICIT, CAPTURE_INVALIDATED, CAPTURE_UNSUPPORTED, CONTEXT_IS_DESTROYED,
                            INVALID_CONTEXT, INVALID_DEVICE, INVALID_HANDLE, INVALID_VALUE, NOT_INITIALIZED,
                            DriverError)
from .driver_queue import LEGACY, PER_THREAD, Capture, Command, Stream, Work, enqueue, flush
from .memory import DeviceMemory
from .profiles import Profile

__all__ = ["DriverBase", "SimDevice", "PrimaryContext", "CtxState", "Pinned", "device_base", "write_out", "read_host"]

_T = TypeVar("_T")


def device_base(ordinal: int) -> int:
    """The first address of device ``ordinal``'s memory (one unified address space)."""
    return 0x7F00_0000_0000 + (ordinal << 40)


@dataclass(eq=False)
class Pinned:
    """Page-locked host memory from ``cuMemHostAlloc``: a real host buffer the model keeps alive."""

    address: int
    size: int
    buffer: Any  # the ctypes array holding the memory
    owner: CtxState


@dataclass(eq=False)
class SimDevice:
    """One simulated GPU."""

    ordinal: int
    profile: Profile
    memory: DeviceMemory
    context: PrimaryContext = field(init=False)
    used: int = 0  # bytes allocated
    clock_ns: float = 0.0  # the modelled device clock (see driver_queue)
    faults: list[tuple[int, str]] = field(default_factory=list)  # sticky errors: (code, what)


@dataclass(eq=False)
class CtxState:
    """The live state of a primary context between its first retain and its last release."""

    context: PrimaryContext
    device: SimDevice
    poisoned: int = 0  # the sticky error, 0 while healthy
    destroyed: bool = False
    legacy: Stream = field(init=False)
    per_thread: dict[int, Stream] = field(default_factory=dict)
    streams: list[Stream] = field(default_factory=list)  # made by cuStreamCreate, live
    allocations: dict[int, int] = field(default_factory=dict)  # device pointer -> bytes
    pinned: dict[int, Pinned] = field(default_factory=dict)
    pending: dict[int, Command] = field(default_factory=dict)  # queued, not yet run (by sequence)
    captures: list[Capture] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.legacy = Stream(self, LEGACY, handle=1)

    def live_streams(self) -> list[Stream]:
        return [self.legacy, *self.per_thread.values(), *self.streams]


@dataclass(eq=False)
class PrimaryContext:
    """A device's primary context: a fixed handle, a reference count and, while retained, a state."""

    handle: int
    device: SimDevice
    refs: int = 0
    state: CtxState | None = None


class _Current(threading.local):
    context: PrimaryContext | None = None


def write_out(ctype: Any, address: int | None, value: Any) -> None:
    """Store ``value`` as ``ctype`` at ``address`` (an output argument); a NULL pointer is
    CUDA_ERROR_INVALID_VALUE."""
    if not address:
        raise DriverError(INVALID_VALUE, "NULL output pointer")
    ctype.from_address(address).value = value


class DriverBase:
    """Devices, contexts, handles and the checks shared by every modelled driver function."""

    def __init__(self, profiles: list[Profile]) -> None:
        self.initialized = False
        self._handles: dict[int, object] = {}
        self._next = itertools.count(1)
        self.devices: list[SimDevice] = []
        for k, p in enumerate(profiles):
            dev = SimDevice(k, p, DeviceMemory(device_base(k)))
            dev.context = PrimaryContext(self._handle_for(None), dev)
            self.devices.append(dev)
        self._current = _Current()
        self.lock = threading.RLock()
        self.findings: list[Any] = []  # sanitizer findings of every kernel run (vyre_decl.sim.ptx.Finding)
        self.errors: list[str] = []  # tracebacks of defects of the model itself (returned as CUDA_ERROR_UNKNOWN)
        self.calls: Counter[str] = Counter()  # driver calls made, by name
        self.returned: deque[tuple[str, int, str]] = deque(maxlen=256)  # the last errors: (call, code, why)
        self.graveyard: list[Any] = []  # host buffers of destroyed contexts, kept so no view dangles

    # --- handles
    def _handle_for(self, obj: object | None) -> int:
        handle = 0x5C00_0000 + 0x40 * next(self._next)
        if obj is not None:
            self._handles[handle] = obj
        return handle

    def register(self, obj: Any) -> int:
        """A new opaque handle for ``obj`` (also stored as ``obj.handle``)."""
        handle = self._handle_for(obj)
        obj.handle = handle
        return handle

    def forget(self, handle: int) -> None:
        self._handles.pop(handle, None)

    def lookup(self, handle: int | None, kind: type[_T], state: CtxState | None = None) -> _T:
        """The live object of type ``kind`` behind ``handle`` (of ``state``'s context when given);
        CUDA_ERROR_INVALID_HANDLE otherwise."""
        obj = self._handles.get(handle or 0)
        if not isinstance(obj, kind):
            raise DriverError(INVALID_HANDLE, f"0x{handle or 0:x} is not a live {kind.__name__} handle")
        owner = getattr(obj, "owner", None)
        if owner is not None and (owner.destroyed or (state is not None and owner is not state)):
            raise DriverError(INVALID_HANDLE, f"the {kind.__name__} 0x{handle:x} belongs to another context")
        return obj

    # --- initialisation, devices, contexts
    def require_init(self) -> None:
        if not self.initialized:
            raise DriverError(NOT_INITIALIZED, "cuInit was not called")

    def device(self, ordinal: int) -> SimDevice:
        self.require_init()
        if not 0 <= ordinal < len(self.devices):
            raise DriverError(INVALID_DEVICE, f"device {ordinal} of {len(self.devices)}")
        return self.devices[ordinal]

    def context_by_handle(self, handle: int) -> PrimaryContext:
        for dev in self.devices:
            if dev.context.handle == handle:
                return dev.context
        raise DriverError(INVALID_CONTEXT, f"0x{handle:x} is not a context")

    @property
    def current(self) -> PrimaryContext | None:
        return self._current.context

    @current.setter
    def current(self, context: PrimaryContext | None) -> None:
        self._current.context = context

    def ctx(self, allow_poisoned: bool = False) -> CtxState:
        """The calling thread's current context's live state: CUDA_ERROR_INVALID_CONTEXT without
        one, CONTEXT_IS_DESTROYED for a released one, the sticky error of a poisoned one."""
        self.require_init()
        context = self._current.context
        if context is None:
            raise DriverError(INVALID_CONTEXT, "no context is current in this thread")
        state = context.state
        if state is None:
            raise DriverError(CONTEXT_IS_DESTROYED, f"the context of device {context.device.ordinal} was released")
        if state.poisoned and not allow_poisoned:
            raise DriverError(state.poisoned, "the context hit a sticky error")
        return state

    def check_healthy(self, state: CtxState) -> None:
        """After waiting: the sticky error the wait ran into, if any."""
        if state.poisoned:
            raise DriverError(state.poisoned, "the context hit a sticky error")

    def destroy(self, state: CtxState) -> None:
        """The last release of a primary context: finish its work, free what it owns."""
        if not state.poisoned:
            flush(state, self)
        state.destroyed = True
        state.pending.clear()
        for ptr in state.allocations:
            state.device.memory.free(ptr)
        state.device.used -= sum(state.allocations.values())
        state.allocations.clear()
        self.graveyard += [p.buffer for p in state.pinned.values()]
        state.pinned.clear()
        for handle, obj in list(self._handles.items()):
            if getattr(obj, "owner", None) is state:
                self.forget(handle)
        state.context.state = None

    # --- streams
    @staticmethod
    def default_stream(handle: int | None, state: CtxState) -> Stream:
        """A default stream of ``state``'s context: 0/NULL and CU_STREAM_LEGACY (1) the legacy
        default stream, CU_STREAM_PER_THREAD (2) this thread's default stream."""
        if handle != 2:
            return state.legacy
        key = threading.get_ident()
        found = state.per_thread.get(key)
        if found is None:
            found = state.per_thread[key] = Stream(state, PER_THREAD, handle=2)
        return found

    def target(self, handle: int | None) -> Stream:
        """The stream a stream-ordered call names. A created stream carries its context, and the
        call works in that one (its pointers, functions and events must be of it: the driver
        answers CUDA_ERROR_INVALID_VALUE for a pointer of the current context used with another
        context's stream); the default streams are the current context's. A current context is
        needed either way."""
        current = self.ctx(allow_poisoned=True)
        if (handle or 0) in (0, 1, 2):
            self.check_healthy(current)
            return self.default_stream(handle, current)
        found = self.lookup(handle, Stream)
        if found.destroyed:
            raise DriverError(INVALID_HANDLE, "the stream was destroyed")
        self.check_healthy(found.owner)
        return found

    def queue(self, stream: Stream, work: Work, extra: tuple[Command, ...] = ()) -> Command | None:
        """``enqueue`` with the capture rules: work for the legacy stream while a blocking stream
        of the context captures invalidates that capture (CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
        work for an invalidated capture is refused (CUDA_ERROR_STREAM_CAPTURE_INVALIDATED)."""
        if stream.capture is not None and stream.capture.invalidated:
            raise DriverError(CAPTURE_INVALIDATED, "the stream's capture was invalidated")
        if stream.kind == LEGACY:
            for other in stream.owner.live_streams():
                if other.capture is not None and other.blocking:
                    other.capture.invalidated = True
                    raise DriverError(CAPTURE_IMPLICIT, "a blocking stream of the context is capturing")
        return enqueue(stream, work, extra)

    def unsafe_during_capture(self) -> None:
        """A potentially unsafe call (one that may synchronise or allocate) is refused with
        CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED while a capture forbids it: any global-mode
        capture, or a thread-local one of this thread; that capture is invalidated."""
        me = threading.get_ident()
        for dev in self.devices:
            live = dev.context.state
            for cap in (live.captures if live is not None else ()):
                if cap.mode == 0 or (cap.mode == 1 and cap.thread == me):
                    cap.invalidated = True
                    raise DriverError(CAPTURE_UNSUPPORTED, "a stream capture forbids this call")

    # --- memory
    def owned(self, state: CtxState, ptr: int, nbytes: int) -> None:
        """``ptr .. ptr + nbytes`` lies in one allocation of ``state``'s context (else
        CUDA_ERROR_INVALID_VALUE, as the driver answers for another context's pointer)."""
        found = state.device.memory.range_of(ptr)
        if found is None or found[0] not in state.allocations or ptr + nbytes > found[0] + found[1]:
            raise DriverError(INVALID_VALUE, f"0x{ptr:x} + {nbytes} is not device memory of the current context")

    def anywhere(self, ptr: int, nbytes: int) -> SimDevice:
        """The device whose live allocation holds ``ptr .. ptr + nbytes`` (unified addressing: a
        copy may name any context's memory); CUDA_ERROR_INVALID_VALUE if none does."""
        for dev in self.devices:
            found = dev.memory.range_of(ptr)
            state = dev.context.state
            if found is not None and state is not None and found[0] in state.allocations:
                if ptr + nbytes <= found[0] + found[1]:
                    return dev
        raise DriverError(INVALID_VALUE, f"0x{ptr:x} + {nbytes} is not in a live device allocation")

    def pinned_at(self, ptr: int, nbytes: int) -> Pinned | None:
        """The pinned host allocation holding ``ptr .. ptr + nbytes`` entirely, if any."""
        for dev in self.devices:
            state = dev.context.state
            for block in (state.pinned.values() if state is not None else ()):
                if block.address <= ptr and ptr + nbytes <= block.address + block.size:
                    return block
        return None


def read_host(address: int, nbytes: int) -> bytes:
    """``nbytes`` of host memory at ``address``."""
    return ctypes.string_at(address, nbytes) if nbytes else b""

