"""Backends: the protocol every backend implements, and the registry that finds them.

Built-in backends register here by import path (so nothing heavy is imported until a backend is
acquired); third-party backends register through the ``vyre_decl.backends`` entry-point group,
whose entry points load either a ``BackendInfo`` or a zero-argument factory.
``acquire("auto")`` gives the available backend of highest precedence.
"""

from __future__ import annotations

import importlib
import inspect
import threading
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping, Protocol, Sequence, runtime_checkable

import numpy as np

from ..ir.diagnostics import VyreError
from ..ir.nodes import Program
from .config import DEFAULT_CONFIG, DispatchConfig, Timing

if TYPE_CHECKING:  # pragma: no cover - the registry loads pydantic; acquire() needs it only when given one
    from ..registry import Registry

__all__ = [
    "Backend",
    "Pipeline",
    "Pending",
    "AsyncBackend",
    "TimedBackend",
    "ResidentBackend",
    "GraphBackend",
    "Timing",
    "BackendInfo",
    "DispatchConfig",
    "DEFAULT_CONFIG",
    "register_backend",
    "list_backends",
    "backend_info",
    "acquire",
    "ENTRY_POINT_GROUP",
    "CAPABILITIES",
]

ENTRY_POINT_GROUP = "vyre_decl.backends"

# Capability flags a backend may declare.
CAPABILITIES = frozenset(
    {
        "f64",  # f64 arithmetic
        "i64",  # 64-bit integer arithmetic
        "atomics",  # atomic read-modify-write on global memory
        "workgroup_memory",  # workgroup (shared) buffers and barriers
        "workgroup_atomics",  # atomics on workgroup buffers
        "resident_buffers",  # allocate/upload/download/dispatch_resident
        "async",  # dispatch_async
        "timed",  # dispatch_timed with device time
        "graphs",  # captured dispatch sequences
        "exact_f32",  # IEEE binary32 with subnormals, no flush-to-zero
    }
)

Inputs = Sequence[Any] | Mapping[str, Any]


@runtime_checkable
class Pipeline(Protocol):
    """A program compiled for one backend; dispatch it many times with new inputs."""

    program: Program

    def dispatch(self, inputs: Inputs, config: DispatchConfig | None = None) -> list[np.ndarray]: ...


@runtime_checkable
class Backend(Protocol):
    name: str
    capabilities: frozenset[str]

    def dispatch(self, program: Program, inputs: Inputs, config: DispatchConfig | None = None) -> list[np.ndarray]: ...

    def compile(self, program: Program, config: DispatchConfig | None = None) -> Pipeline: ...


# The optional capabilities, as Protocols: a backend declaring the flag has these methods (the
# reference backend answers the resident and async ones with B006).
@runtime_checkable
class Pending(Protocol):
    """A dispatch in flight."""

    def done(self) -> bool: ...

    def result(self) -> list[np.ndarray]: ...

    def close(self) -> None: ...


@runtime_checkable
class AsyncBackend(Backend, Protocol):
    """Flag ``async``."""

    def dispatch_async(self, program: Program, inputs: Inputs, config: DispatchConfig | None = None) -> Pending: ...


@runtime_checkable
class TimedBackend(Backend, Protocol):
    """Flag ``timed``: outputs and a ``Timing`` (wall and device seconds)."""

    def dispatch_timed(self, program: Program, inputs: Inputs,
                       config: DispatchConfig | None = None) -> tuple[list[np.ndarray], Timing]: ...


@runtime_checkable
class ResidentBackend(Backend, Protocol):
    """Flag ``resident_buffers``: device buffers that stay on the device between dispatches."""

    def allocate(self, dtype: Any, count: int) -> Any: ...

    def upload(self, data: Any, dtype: Any = None) -> Any: ...

    def upload_at(self, buf: Any, offset: int, data: Any) -> None: ...

    def download(self, buf: Any) -> np.ndarray: ...

    def free(self, buf: Any) -> None: ...

    def synchronize(self) -> None: ...


@runtime_checkable
class GraphBackend(ResidentBackend, Protocol):
    """Flag ``graphs``: resident launches (a prefix once, steps repeated) run in order, read back
    in the same call, or captured once and replayed."""

    def sequence(self, steps: Sequence[Any], prefix: Sequence[Any] = (), repeat: int = 1) -> Any: ...


@dataclass(frozen=True)
class BackendInfo:
    """How to make a backend. ``factory`` is a callable or a ``"module:attribute"`` path;
    ``available`` (callable or path) says whether it can run here (e.g. a GPU is present);
    ``contained``: a fault of this backend cannot take the process down (pure Python and numpy),
    so conformance may run it in-process instead of in a worker subprocess; ``devices`` (callable
    or path) counts the devices it can run on, for a backend whose factory takes ``device=`` (one
    device per conformance task or cluster worker); ``defines_semantics``: the backend is the
    executable definition others are certified against (the reference interpreter), so agreeing
    with it proves nothing of itself and only the registry's known answers and laws check it."""

    name: str
    factory: Callable[[], Backend] | str
    precedence: int = 0
    capabilities: frozenset[str] = frozenset()
    available: Callable[[], bool] | str | None = None
    source: str = "vyre_decl"
    summary: str = ""
    contained: bool = False
    devices: Callable[[], int] | str | None = None
    defines_semantics: bool = False

    def device_count(self) -> int | None:
        """How many devices this backend can choose from here; None for a backend without devices."""
        if self.devices is None:
            return None
        try:
            return int(_resolve(self.devices)())
        except Exception:  # noqa: BLE001 - a broken probe means no devices, never a crash
            return 0

    def is_available(self) -> bool:
        check = _resolve(self.available) if self.available is not None else None
        try:
            return bool(check()) if check is not None else True
        except Exception:  # noqa: BLE001 - a broken probe means "not available", never a crash
            return False

    def make(self, registry: Registry | None = None, device: int | None = None) -> Backend:
        """A new instance (on ``registry`` and ``device`` when given: the factory must take
        ``registry=`` / ``device=``)."""
        factory = _resolve(self.factory)
        kwargs: dict[str, Any] = {}
        if registry is not None:
            kwargs["registry"] = registry
        if device is not None:
            kwargs["device"] = device
        return factory(**kwargs)


def _resolve(target: Any) -> Any:
    if isinstance(target, str):
        module, _, attr = target.partition(":")
        return getattr(importlib.import_module(module), attr)
    return target


_lock = threading.RLock()
_infos: dict[str, BackendInfo] = {}
_instances: dict[tuple[str, str | None], Backend] = {}
_entry_points_loaded = False


def register_backend(info: BackendInfo, *, replace: bool = False) -> None:
    """Add a backend. Registering a taken name is an error unless ``replace``."""
    unknown = info.capabilities - CAPABILITIES
    if unknown:
        raise VyreError.one("B002", f"unknown capability flag(s) {sorted(unknown)}", f"backend {info.name!r}",
                            f"use flags from vyre_decl.backends.CAPABILITIES: {sorted(CAPABILITIES)}")
    with _lock:
        if info.name in _infos and not replace:
            other = _infos[info.name]
            raise VyreError.one("B003", f"backend name {info.name!r} is already registered by {other.source}",
                                f"backend {info.name!r} from {info.source}", "pick another name or pass replace=True")
        _infos[info.name] = info
        for key in [k for k in _instances if k[0] == info.name]:
            del _instances[key]


def _load_entry_points() -> None:
    global _entry_points_loaded
    if _entry_points_loaded:
        return
    _entry_points_loaded = True
    from importlib.metadata import entry_points

    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            obj = ep.load()
            info = obj if isinstance(obj, BackendInfo) else BackendInfo(ep.name, obj, source=ep.value)
            register_backend(info)
        except Exception as exc:  # noqa: BLE001 - a broken plugin must not break vyre_decl
            warnings.warn(f"vyre_decl: backend entry point {ep.name!r} ({ep.value}) failed to load: {exc}",
                          RuntimeWarning, stacklevel=2)


def list_backends() -> list[BackendInfo]:
    """Every registered backend, highest precedence first."""
    with _lock:
        _load_entry_points()
        return sorted(_infos.values(), key=lambda i: (-i.precedence, i.name))


def backend_info(name: str) -> BackendInfo | None:
    """The registration of backend ``name`` (``cuda:1`` names the cuda backend's), or None."""
    base = name.partition(":")[0]
    return next((info for info in list_backends() if info.name == base), None)


def acquire(name: str = "auto", registry: Registry | None = None) -> Backend:
    """The backend called ``name`` (one instance per process, device and registry), or with
    ``"auto"`` the available backend of highest precedence. ``"cuda:1"`` is the cuda backend on
    device 1. ``registry`` (default: the standard one) is the op registry the backend validates and
    compiles against, e.g. one from ``load_registry()``."""
    with _lock:
        # a built-in name needs no plugin scan (importlib.metadata costs tens of ms at start-up)
        infos = list_backends() if name.partition(":")[0] not in _infos else list(_infos.values())
        device: int | None = None
        base, colon, ordinal = name.partition(":")
        if colon:
            if not ordinal.isascii() or not ordinal.isdigit():
                raise VyreError.one("B001", f"{name!r}: the device after ':' must be a number", "acquire",
                                    f'write "{base}:0", "{base}:1", ...')
            device = int(ordinal)
            name = base
        if name == "auto":
            for info in infos:
                if info.is_available():
                    name = info.name
                    break
        info_by_name = {i.name: i for i in infos}
        if name not in info_by_name:
            raise VyreError.one("B001", f"no backend named {name!r}", "acquire",
                                f"use one of: auto, {', '.join(info_by_name)}")
        key = (name if device is None else f"{name}:{device}", registry.fingerprint if registry is not None else None)
        if key in _instances and getattr(_instances[key], "closed", False):
            del _instances[key]  # closed by its user: make a fresh one
        if key not in _instances:
            info = info_by_name[name]
            if not info.is_available():
                raise VyreError.one("B004", f"backend {name!r} is not available on this machine", "acquire",
                                    'use acquire("auto") or acquire("reference")')
            params = inspect.signature(_resolve(info.factory)).parameters
            if registry is not None and "registry" not in params:
                raise VyreError.one("B005", f"backend {name!r} cannot take a registry", "acquire",
                                    "call acquire(name) without registry=, or give its factory a registry= parameter")
            if device is not None and "device" not in params:
                raise VyreError.one("B005", f"backend {name!r} has no devices to choose from", "acquire",
                                    f"call acquire({name!r})")
            _instances[key] = info.make(registry, device)
        return _instances[key]


register_backend(
    BackendInfo(
        "reference",
        "vyre_decl.backends.reference:ReferenceBackend",
        precedence=0,
        capabilities=frozenset({"f64", "i64", "atomics", "workgroup_memory", "workgroup_atomics", "exact_f32"}),
        summary="CPU reference interpreter (numpy); the executable semantics",
        contained=True,
        defines_semantics=True,
    )
)

register_backend(
    BackendInfo(
        "cuda",
        "vyre_decl.backends.cuda:CudaBackend",
        precedence=100,
        capabilities=frozenset({"f64", "i64", "atomics", "workgroup_memory", "workgroup_atomics", "resident_buffers",
                                "async", "timed", "graphs", "exact_f32"}),
        available="vyre_decl.backends.cuda:cuda_available",
        devices="vyre_decl.backends.cuda:cuda_device_count",
        summary="NVIDIA GPU through emitted PTX and a ctypes binding to libcuda.so.1",
    )
)
