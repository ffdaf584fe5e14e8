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
    times back to back on the same buffers (fixpoint iterations); ``label``: a name for logs and
    telemetry; ``ulp_budget``: the largest ULP error the caller accepts from approximate ops;
    ``timeout``: seconds before a dispatch is abandoned.
    """

    grid: tuple[int, int, int] | None = None
    workgroup: tuple[int, int, int] | None = None
    repeat: int = 1
    label: str = ""
    ulp_budget: int | None = None
    timeout: float | None = None


DEFAULT_CONFIG = DispatchConfig()
