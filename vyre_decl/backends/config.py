"""DispatchConfig: how one dispatch is launched; Timing: how long a timed dispatch took."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DispatchConfig", "DEFAULT_CONFIG", "Timing"]


@dataclass(frozen=True)
class Timing:
    wall_s: float  # host time of the whole dispatch, transfers included
    device_s: float  # time of the launch(es) on the device (CUDA events on a GPU)


@dataclass(frozen=True, slots=True)
class DispatchConfig:
    """Launch options.

    ``grid``: workgroups per axis (default: inferred, see ``backends.hostio.infer_grid``);
    ``workgroup``: overrides the program's workgroup size; ``repeat``: run the program that many
    times back to back on the same buffers (fixpoint iterations); ``label``: a name for the
    dispatch in its errors and, on CUDA, the NVTX range around it (Nsight Systems shows it); ``ulp_budget``: the largest error in ULP the caller
    accepts from an op: compiling a program that calls a less accurate op (for a float type it
    uses) raises D014 on every backend; ``timeout``: seconds a dispatch may take (None: the
    backend's default bound, ``VYRE_DECL_TIMEOUT`` or ``timeout=`` of the backend, else none). The reference
    backend stops between workgroups and statements; CUDA stops waiting and raises D013 while the
    kernel keeps running (the backend stays usable).
    """

    grid: tuple[int, int, int] | None = None
    workgroup: tuple[int, int, int] | None = None
    repeat: int = 1
    label: str = ""
    ulp_budget: int | None = None
    timeout: float | None = None


DEFAULT_CONFIG = DispatchConfig()
TIMEOUT_ENV = "VYRE_DECL_TIMEOUT"  # every backend's default bound, in seconds, of a wait for its work
