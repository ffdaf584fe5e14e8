"""The GPU part of the suite: one backend, one event timer, every GPU case in turn (device.py:
bandwidth, the fused chain, host costs; library.py: routines and float functions)."""

from __future__ import annotations

from .core import Row, skipped
from .device import EventTimer, bandwidth_rows, chain_rows, host_cost_rows, quiet
from .library import library_rows

__all__ = ["gpu_rows"]


def gpu_rows(quick: bool) -> tuple[list[Row], str]:
    """Every GPU case (skipped with the reason where there is no GPU), and the device's name."""
    from ..backends.cuda import CudaBackend, cuda_available

    if not cuda_available():
        why = "no CUDA GPU: libcuda.so.1 cannot be loaded or reports no device"
        return [skipped(name, why) for name in ("bandwidth (add u32/f32, v4, DtoD, torch, CuPy)", "fused chain",
                                                "routines and float functions",
                                                "launch, replay and small-dispatch host cost")], "none"
    be = CudaBackend()
    d = be.device
    device = f"{d.name}, cc {d.compute_capability[0]}.{d.compute_capability[1]}, driver {d.driver_version}, {d.target}"
    timer = EventTimer(be.stream_handle)
    reps = 5 if quick else 30
    sizes = (20,) if quick else (24, 26, 28)
    rows: list[Row] = []
    v4_26: float | None = None
    for dtype in ("u32", "f32"):
        for log2n in sizes:
            got = bandwidth_rows(be, timer, dtype, log2n, reps)
            rows += got
            if dtype == "f32" and log2n == (20 if quick else 26):
                v4_26 = got[0].baseline
    rows += chain_rows(be, timer, 20 if quick else 26, reps, v4_26)
    rows += library_rows(be, timer, reps, quick)
    rows += quiet(lambda: host_cost_rows(be, 5 if quick else 31, 50 if quick else 400))
    be.close()
    return rows, device
