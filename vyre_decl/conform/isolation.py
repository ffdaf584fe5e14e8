"""Running programs on the backend under test: in this process, or in a worker subprocess.

A GPU fault such as an illegal address poisons the whole CUDA context, so every backend but the
reference runs in a worker process. When a case faults (or the worker dies, or a case runs past
its timeout), the case is reported as an error carrying the message, the worker is replaced,
and the run goes on with the next case.
"""

from __future__ import annotations

import multiprocessing
import traceback
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from ..ir.canonical import dumps, loads
from ..ir.nodes import Program

__all__ = ["CaseError", "DeviceLost", "Runner", "InProcessRunner", "IsolatedRunner", "make_runner", "runs_in_process",
           "is_reference", "SELF_CONSISTENCY"]

# what a comparison of the reference with itself is called wherever it is reported
SELF_CONSISTENCY = "reference self-consistency"


@dataclass
class CaseError(Exception):
    """The backend could not run a case; ``fault`` is True when the worker had to be replaced."""

    message: str
    fault: bool = False

    def __str__(self) -> str:
        return self.message


class DeviceLost(BaseException):
    """The backend's worker cannot be started again after a fault: its device or driver is gone.
    A BaseException, so that the ``except Exception`` of a unit or a shrinker cannot take it for a
    failed case: the shard stops, and a multi-device run gives the shard to another device."""


class Runner(Protocol):
    name: str
    info: dict[str, Any]

    def run(self, program: Program, inputs: list[np.ndarray], grid: tuple[int, int, int] | None) -> list[np.ndarray]: ...

    def close(self) -> None: ...


def _describe_backend(backend: Any) -> dict[str, Any]:
    from .._version import __version__

    info: dict[str, Any] = {"id": backend.name, "version": __version__}
    device = getattr(backend, "device", None)
    if device is not None:
        cc = device.compute_capability
        info.update(device=device.name, compute_capability=f"{cc[0]}.{cc[1]}", driver_version=device.driver_version,
                    ptx_target=f"{device.target.name} (PTX ISA {device.target.version})")
    else:
        import platform

        info.update(device=f"CPU ({platform.machine()}, numpy {np.__version__})", compute_capability=None,
                    driver_version=None, ptx_target=None)
    return info


class InProcessRunner:
    """Runs on a backend object of this process (used for the reference backend)."""

    def __init__(self, backend: Any) -> None:
        self.backend, self.name = backend, backend.name
        self.info = _describe_backend(backend)

    def run(self, program: Program, inputs: list[np.ndarray], grid: tuple[int, int, int] | None) -> list[np.ndarray]:
        from ..backends.config import DispatchConfig

        try:
            return self.backend.dispatch(program, inputs, DispatchConfig(grid=grid))
        except Exception as exc:  # noqa: BLE001 - any failure is a failed case, not a crash
            raise CaseError(f"{type(exc).__name__}: {exc}") from None

    def close(self) -> None:
        pass


def _serve(conn: Any, backend_name: str) -> None:
    """Worker loop: receive (program JSON, inputs, grid), reply ("ok", outputs) or ("error", text, fatal)."""
    from ..backends import acquire
    from ..backends.config import DispatchConfig

    try:
        backend = acquire(backend_name)
        conn.send(("ready", _describe_backend(backend)))
    except Exception as exc:  # noqa: BLE001
        conn.send(("error", f"cannot start backend {backend_name!r}: {exc}", True))
        return
    while True:
        msg = conn.recv()
        if msg is None:
            return
        program_json, inputs, grid = msg
        try:
            outputs = backend.dispatch(loads(program_json), inputs, DispatchConfig(grid=grid))
            conn.send(("ok", outputs))
        except Exception as exc:  # noqa: BLE001
            sticky = bool(getattr(exc, "sticky", False))  # a driver error, or a poisoned backend
            text = f"{type(exc).__name__}: {exc}"
            if not isinstance(exc, (ValueError, RuntimeError)):
                text += "\n" + traceback.format_exc(limit=3)
            conn.send(("error", text, sticky))
            if sticky:
                return  # the context is gone; the parent starts a fresh worker


class IsolatedRunner:
    """Runs on a backend that lives in a worker subprocess, replaced after a fault. ``slot`` is
    what the worker acquires (``cuda:1``: device 1); ``name`` is the backend's name."""

    def __init__(self, slot: str, timeout: float = 120.0) -> None:
        self.slot, self.name, self.timeout = slot, slot.partition(":")[0], timeout
        self._ctx = multiprocessing.get_context("spawn")
        self._proc: Any = None
        self._conn: Any = None
        self.restarts = 0
        self.info = self._start()

    def _start(self) -> dict[str, Any]:
        parent, child = self._ctx.Pipe()
        proc = self._ctx.Process(target=_serve, args=(child, self.slot), daemon=True)
        proc.start()
        child.close()
        if not parent.poll(self.timeout):
            proc.kill()
            raise CaseError(f"the {self.slot} worker did not start within {self.timeout:.0f} s", True)
        msg = parent.recv()
        if msg[0] != "ready":
            proc.join(5)
            raise CaseError(msg[1], True)
        self._proc, self._conn = proc, parent
        return msg[1]

    def _replace(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.join(5)
        self.restarts += 1
        try:
            self._start()
        except CaseError as err:
            raise DeviceLost(f"{self.slot} cannot be started again after a fault: {err}") from None

    def run(self, program: Program, inputs: list[np.ndarray], grid: tuple[int, int, int] | None) -> list[np.ndarray]:
        try:
            self._conn.send((dumps(program), inputs, grid))
            if not self._conn.poll(self.timeout):
                self._replace()
                raise CaseError(f"the case ran past {self.timeout:.0f} s; the worker was replaced", True)
            msg = self._conn.recv()
        except (EOFError, BrokenPipeError, ConnectionResetError):
            code = self._proc.exitcode if self._proc is not None else None
            self._replace()
            raise CaseError(f"the {self.name} worker died (exit code {code}); it was replaced", True) from None
        if msg[0] == "ok":
            return msg[1]
        if msg[2]:
            self._replace()
            raise CaseError(msg[1] + "\n(the worker's GPU context was lost; a fresh worker took over)", True)
        raise CaseError(msg[1])

    def close(self) -> None:
        if self._conn is not None:
            try:
                self._conn.send(None)
            except (BrokenPipeError, OSError):
                pass
        if self._proc is not None:
            self._proc.join(10)
            if self._proc.is_alive():
                self._proc.kill()


def runs_in_process(backend_name: str) -> bool:
    """Whether conformance runs ``backend_name`` in this process (a backend whose faults are
    contained, such as the reference) rather than in a worker subprocess. ``cuda:1`` names device
    1 of the cuda backend; a device of a contained backend is left to the worker to refuse."""
    from ..backends import backend_info

    info = backend_info(backend_name)
    return info is not None and info.contained and info.name == backend_name


def is_reference(backend_name: str) -> bool:
    """Whether ``backend_name`` is the executable definition the others are certified against
    (``BackendInfo.defines_semantics``): comparing it with the reference is a self-consistency
    check, in which only the known answers and the laws can find a fault."""
    from ..backends import backend_info

    info = backend_info(backend_name)
    return info is not None and info.defines_semantics


def make_runner(backend_name: str) -> Runner:
    """In-process where ``runs_in_process``, a worker subprocess for every other backend."""
    from ..backends import acquire

    if runs_in_process(backend_name):
        return InProcessRunner(acquire(backend_name))
    return IsolatedRunner(backend_name)
