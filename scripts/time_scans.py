"""Times scan.* routines on the CUDA backend against the device copy (issue 28): median of CUDA-event
timed plan replays at 2^26, each result checked; prints the fraction of the copy's bandwidth.
``python scripts/time_scans.py [LOG2N]``."""

from __future__ import annotations

import sys
from ctypes import c_void_p

import numpy as np

from vyre_decl import libcuda as cu
from vyre_decl.backends.cuda import CudaBackend
from vyre_decl.bench.device import EventTimer
from vyre_decl.routines import routine


def main() -> None:
    log2n = int(sys.argv[1]) if len(sys.argv) > 1 else 26
    n, reps = 1 << log2n, 30
    be = CudaBackend()
    timer = EventTimer(be.stream_handle)
    src, dst = be.allocate("f32", n), be.allocate("f32", n)
    copy, stream = cu.function("cuMemcpyDtoDAsync_v2"), c_void_p(be.stream_handle)
    t_copy = timer.median(lambda: copy(dst.ptr, src.ptr, n * 4, stream), reps)
    be.free(src)
    be.free(dst)
    print(f"device {be.device.name}; copy 2^{log2n} f32: {t_copy * 1e6:.1f} us")
    rng = np.random.default_rng(0)
    xf = rng.standard_normal(n).astype(np.float32)
    xu = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    xl = rng.integers(-2**62, 2**62, n // 2, dtype=np.int64)
    cases = [("scan.sum", xu, np.cumsum(xu, dtype=np.uint32)),
             ("scan.exclusive_sum", xu, np.concatenate([[0], np.cumsum(xu, dtype=np.uint32)[:-1]]).astype(np.uint32)),
             ("scan.max", xu, np.maximum.accumulate(xu)),
             ("scan.sum", xl, np.cumsum(xl, dtype=np.int64)),
             ("scan.sum", xf, None)]
    for rid, x, want in cases:
        plan = routine(rid).plan(x, backend=be)
        try:
            be.upload_at(plan.inputs[0], 0, x)
            t = timer.median(plan.replay, reps)
            out = be.download(plan.outputs[0])
            ref = routine(rid)(x, backend="reference") if want is None and log2n <= 22 else want
            ok = "unchecked" if ref is None else ("ok" if out.tobytes() == ref.tobytes() else "WRONG")
            if want is None:
                p = np.cumsum(x, dtype=np.float64)
                ok += ", within 1e-4" if (np.abs(out - p) <= 1e-4 * np.cumsum(np.abs(x), dtype=np.float64)).all() else ", FAR"
            print(f"{rid} {x.dtype} 2^{log2n}: {t * 1e6:.1f} us = {t_copy / t:.3f} of the copy ({ok})")
        finally:
            plan.close()
    be.close()


if __name__ == "__main__":
    main()
