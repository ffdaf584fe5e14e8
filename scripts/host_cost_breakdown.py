"""Where the host time of a small numpy dispatch and of a resident launch goes, on a CUDA GPU.

Times, in interleaved batches on one core with the garbage collector off (as the benchmark
suite's host-cost rows do): the whole ``dispatch`` of a 1,024-element u32 add beside the raw
driver calls that do the same work (two pageable 4 KB copies in, a launch, a pageable copy out)
and beside each driver call on its own (a pinned 8 KB asynchronous copy in, a launch, a pinned
asynchronous copy out, a stream synchronize), so that ``dispatch`` minus the driver calls it makes
is the Python it runs; then the Python functions of ``dispatch`` by own time (cProfile); then a
resident launch and a replay of a graph of 100 launches beside the raw driver call made from a
function and from a method that does nothing else (the floor for any Python API around the call).

    python scripts/host_cost_breakdown.py [--batches 30] [--per-batch 200]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
from ctypes import byref, c_void_p
from typing import Any

import numpy as np

from vyre_decl import libcuda as cu
from vyre_decl.backends.cuda import CudaBackend
from vyre_decl.bench.core import interleaved
from vyre_decl.bench.device import RawLaunch, quiet
from vyre_decl.bench.kernels import TWO

N = 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batches", type=int, default=30)
    ap.add_argument("--per-batch", type=int, default=200)
    args = ap.parse_args()
    be = CudaBackend()
    pipe = be.compile(TWO)
    stream = c_void_p(be.stream_handle)
    a, b = np.arange(N, dtype=np.uint32), np.full(N, 7, np.uint32)
    da, db, dout = (be.allocate("u32", N) for _ in range(3))
    be.synchronize()  # their zero-fill on our stream is done before the raw copies write them
    host = c_void_p()
    cu.call("cuMemHostAlloc", byref(host), 3 * 4 * N, 0)
    h2d, d2h = cu.function("cuMemcpyHtoD_v2"), cu.function("cuMemcpyDtoH_v2")
    h2d_async, d2h_async = cu.function("cuMemcpyHtoDAsync_v2"), cu.function("cuMemcpyDtoHAsync_v2")
    sync = cu.function("cuStreamSynchronize")
    # on the legacy default stream, where the synchronous copies run: the three are ordered
    baseline = RawLaunch(pipe.function, [x.ptr for x in (da, db, dout)], N, c_void_p(None))
    launch, launch_args = baseline.launch, baseline.args
    res = np.empty(N, np.uint32)

    def raw_roundtrip() -> None:
        h2d(da.ptr, a.ctypes.data, 4 * N)
        h2d(db.ptr, b.ctypes.data, 4 * N)
        launch(*launch_args)
        d2h(res.ctypes.data, dout.ptr, 4 * N)

    pieces = {
        "dispatch (ours)": lambda: pipe.dispatch([a, b]),
        "raw: 2 pageable H2D + launch + pageable D2H": raw_roundtrip,
        "pageable H2D 4 KB": lambda: h2d(da.ptr, a.ctypes.data, 4 * N),
        "pageable D2H 4 KB": lambda: d2h(res.ctypes.data, dout.ptr, 4 * N),
        "pinned async H2D 12 KB + sync": lambda: (h2d_async(da.ptr, host, 3 * 4 * N, stream), sync(stream)),
        "pinned async D2H 4 KB + sync": lambda: (d2h_async(host, dout.ptr, 4 * N, stream), sync(stream)),
        "launch + sync": lambda: (launch(*launch_args), sync(None)),
        "sync of an idle stream": lambda: sync(stream),
    }
    medians = quiet(lambda: interleaved(list(pieces.values()), args.batches, args.per_batch, be.synchronize))
    print(f"{'host time per call, median of interleaved batches':<50} {'us':>8}")
    for name, seconds in zip(pieces, medians):
        print(f"{name:<50} {seconds * 1e6:8.2f}")
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(3000):
        pipe.dispatch([a, b])
    prof.disable()
    text = io.StringIO()
    pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(18)
    print("\nPython functions of 3,000 dispatches by own time (cProfile; ctypes calls count in their caller):")
    print("\n".join(line for line in text.getvalue().splitlines() if line.strip())[:4000])
    resident_and_graph(be, pipe, args.batches, args.per_batch)
    cu.call("cuMemFreeHost", host)
    for buf in (da, db, dout):
        be.free(buf)


class _Bare:
    """A method that only makes the driver call: the least any Python API around it can cost."""

    def __init__(self, fn: Any, fn_args: tuple[Any, ...]) -> None:
        self.fn, self.fn_args = fn, fn_args

    def call(self) -> None:
        if self.fn(*self.fn_args):
            raise RuntimeError("driver call failed")


def resident_and_graph(be: Any, pipe: Any, batches: int, per_batch: int) -> None:
    bufs = [be.upload(np.arange(N, dtype=np.uint32)) for _ in range(2)] + [be.allocate("u32", N)]
    pipe.dispatch_resident(bufs)
    baseline = RawLaunch(pipe.function, [buf.ptr for buf in bufs], N, c_void_p(be.stream_handle))
    graph = be.sequence([(pipe, bufs)] * 100).capture()
    graph_args = (c_void_p(graph.handle), c_void_p(be.stream_handle))
    for label, ours, fn, fn_args, per in (
            ("dispatch_resident", lambda: pipe.dispatch_resident(bufs), baseline.launch, baseline.args, per_batch),
            ("graph replay (100 launches)", graph.replay, cu.raw("cuGraphLaunch", hold_gil=True), graph_args,
             max(10, per_batch // 10))):
        bare = _Bare(fn, fn_args)

        def in_function() -> None:
            if fn(*fn_args):
                raise RuntimeError("driver call failed")

        got = quiet(lambda: interleaved([in_function, bare.call, ours, in_function], batches, per, be.synchronize))
        raw = got[0]
        print(f"\n{label}: host time per call (us) and ratio to the raw call from a function")
        for name, seconds in zip(("raw call in a function", "raw call in a bare method", "ours",
                                  "raw call in a function, again"), got):
            print(f"  {name:<32} {seconds * 1e6:7.3f}  {seconds / raw:6.3f}")
    graph.close()
    for buf in bufs:
        be.free(buf)


if __name__ == "__main__":
    main()
