"""GPU cases: bandwidth of the emitted elementwise kernel against a hand-written v4 kernel, the
copy engine, PyTorch and CuPy; the fused chain against PyTorch eager and ``torch.compile``; and
the host cost of a resident launch, a graph replay and a small numpy dispatch against the raw
driver calls. Every baseline runs in this process, on this GPU, in the same run."""

from __future__ import annotations

import ctypes
import gc
import os
import statistics
from ctypes import byref, c_float, c_uint32, c_uint64, c_void_p
from typing import Any, Callable, TypeVar

import numpy as np

from .. import libcuda as cu
from .core import Row, interleaved, skipped
from .kernels import CHAIN_STEPS, TWO, add_program, chain_program, v4_add_ptx

__all__ = ["EventTimer", "RawLaunch", "bandwidth_rows", "chain_rows", "host_cost_rows", "quiet", "torch_module", "cupy_module",
           "torch_seconds", "cupy_seconds"]


class EventTimer:
    """Device time of work queued on one stream, from a pair of CUDA events (median of reps)."""

    def __init__(self, stream: int) -> None:
        self.stream = c_void_p(stream)
        self.start, self.end = c_void_p(), c_void_p()
        cu.call("cuEventCreate", byref(self.start), 0)
        cu.call("cuEventCreate", byref(self.end), 0)

    def median(self, work: Callable[[], Any], reps: int, warmup: int = 3) -> float:
        for _ in range(warmup):
            work()
        out = []
        for _ in range(reps):
            cu.call("cuEventRecord", self.start, self.stream)
            work()
            cu.call("cuEventRecord", self.end, self.stream)
            cu.call("cuEventSynchronize", self.end)
            ms = c_float()
            cu.call("cuEventElapsedTime", byref(ms), self.start, self.end)
            out.append(ms.value / 1e3)
        return statistics.median(out)


def torch_module() -> Any:
    try:
        import torch  # type: ignore[import-not-found]
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


def cupy_module() -> Any:
    try:
        import cupy  # type: ignore[import-not-found]
    except ImportError:
        return None
    return cupy


def torch_seconds(torch: Any, work: Callable[[], Any], reps: int) -> float:
    for _ in range(3):
        work()
    out = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        work()
        b.record()
        b.synchronize()
        out.append(a.elapsed_time(b) / 1e3)
    return statistics.median(out)


def cupy_seconds(cupy: Any, work: Callable[[], Any], reps: int) -> float:
    for _ in range(3):
        work()
    out = []
    for _ in range(reps):
        a, b = cupy.cuda.Event(), cupy.cuda.Event()
        a.record()
        work()
        b.record()
        b.synchronize()
        out.append(cupy.cuda.get_elapsed_time(a, b) / 1e3)
    return statistics.median(out)


def bandwidth_rows(be: Any, timer: EventTimer, dtype: str, log2n: int, reps: int) -> list[Row]:
    """out = a + b over 2^log2n elements, resident: GB/s (bytes read + written) of ours, of the
    v4 kernel, of cuMemcpyDtoD (read + written), of torch and CuPy."""
    n = 1 << log2n
    np_t = np.dtype(np.uint32 if dtype == "u32" else np.float32)
    nbytes = 3 * n * 4
    a, b, out = be.upload(np.arange(n, dtype=np_t)), be.upload(np.ones(n, np_t)), be.allocate(dtype, n)
    pipe = be.compile(add_program(dtype))
    ours = nbytes / timer.median(lambda: pipe.dispatch_resident([a, b, out]), reps) / 1e9
    # (integers first: a float arange starting high fills from a rounded step)
    assert (be.download_range(out, n - 4, 4) == np.arange(n - 4, n).astype(np_t) + np_t.type(1)).all()
    target = be.device.target
    module, _ = cu.load_module(v4_add_ptx(target.sm, target.version, dtype).encode())
    fn = c_void_p()
    cu.call("cuModuleGetFunction", byref(fn), module, b"v4add")
    values: list[Any] = [c_uint64(a.ptr), c_uint64(b.ptr), c_uint64(out.ptr), c_uint32(n // 4)]
    launcher = cu.Launcher(fn, values, (256, 1, 1))
    launcher.set_grid((-(-(n // 4) // 256), 1, 1))
    launcher.set_stream(c_void_p(be.stream_handle))
    cu.function("cuMemsetD8Async")(out.ptr, 0, n * 4, c_void_p(be.stream_handle))  # what the v4 kernel writes
    v4 = nbytes / timer.median(launcher, reps) / 1e9
    assert _sampled(be.download(out)) == _sampled(np.arange(n).astype(np_t) + np_t.type(1)), "the v4 kernel is wrong"
    copy = cu.function("cuMemcpyDtoDAsync_v2")
    dtod = 2 * n * 4 / timer.median(lambda: copy(out.ptr, a.ptr, n * 4, c_void_p(be.stream_handle)), reps) / 1e9
    assert _sampled(be.download(out)) == _sampled(np.arange(n).astype(np_t)), "the device copy is wrong"
    case = f"add {dtype} 2^{log2n}, resident (GB/s)"
    rows = [Row(case, ours, "hand-written ld/st.global.v4 PTX", v4, "GB/s", "higher", 0.97),
            Row(case, ours, "cuMemcpyDtoD (read + written)", dtod, "GB/s", "higher")]
    torch, cupy = torch_module(), cupy_module()
    if torch is not None:
        ta = torch.arange(n, device="cuda", dtype=torch.int32 if dtype == "u32" else torch.float32)
        tb, tc = torch.ones_like(ta), torch.empty_like(ta)
        t = torch_seconds(torch, lambda: torch.add(ta, tb, out=tc), reps)
        assert bool(torch.equal(tc, ta + tb)), "torch's add is wrong"
        rows.append(Row(case, ours, f"torch {torch.__version__} add(out=)", nbytes / t / 1e9, "GB/s", "higher", 1.0))
        del ta, tb, tc
    else:
        rows.append(skipped(case + " vs torch", "PyTorch with CUDA is not importable"))
    if cupy is not None:
        ca = cupy.arange(n, dtype=np_t)
        cb, cc = cupy.ones_like(ca), cupy.empty_like(ca)
        t = cupy_seconds(cupy, lambda: cupy.add(ca, cb, out=cc), reps)
        assert bool(cupy.array_equal(cc, ca + cb)), "CuPy's add is wrong"
        rows.append(Row(case, ours, f"CuPy {cupy.__version__} add(out=)", nbytes / t / 1e9, "GB/s", "higher"))
        del ca, cb, cc
    else:
        rows.append(skipped(case + " vs CuPy", "CuPy is not importable"))
    cu.call("cuModuleUnload", module)
    for buf in (a, b, out):
        be.free(buf)
    return rows


def chain_rows(be: Any, timer: EventTimer, log2n: int, reps: int, v4_gbs: float | None) -> list[Row]:
    """The fused 8-step f32 chain: ms against torch eager (8 kernels) and torch.compile (fused)."""
    n = 1 << log2n
    x = np.linspace(-4, 4, n, dtype=np.float32)
    a, out = be.upload(x), be.allocate("f32", n)
    pipe = be.compile(chain_program())
    ours = timer.median(lambda: pipe.dispatch_resident([a, out]), reps)
    want = _chain_numpy(x)  # every step is an IEEE operation rounded to f32: ours gives the same bits
    assert np.array_equal(be.download(out), want), "the fused chain is wrong"
    case = f"fused {len(CHAIN_STEPS)}-step f32 chain 2^{log2n} (ms)"
    rows = []
    if v4_gbs:
        rows.append(Row(f"fused chain 2^{log2n}, share of the v4 roof (GB/s)", 2 * n * 4 / ours / 1e9,
                        "v4 add bandwidth, this run", v4_gbs, "GB/s", "higher", 0.97))
    torch = torch_module()
    if torch is None:
        rows.append(skipped(case, "PyTorch with CUDA is not importable"))
    else:
        tx = torch.from_numpy(x).cuda()

        def eager(v: Any) -> Any:
            v = v * 1.5
            v = v + 0.25
            v = v * v
            v = v - 3.0
            v = v.abs()
            v = v.sqrt()
            v = v * 0.5
            return v + 1.0

        t_eager = torch_seconds(torch, lambda: eager(tx), reps)
        assert _chain_close(eager(tx).cpu().numpy(), want), "torch's chain is wrong"
        rows.append(Row(case, ours * 1e3, "torch eager", t_eager * 1e3, "ms", "lower", 1.0))
        try:
            compiled = torch.compile(eager)
            compiled(tx)
            t_comp = torch_seconds(torch, lambda: compiled(tx), reps)
            assert _chain_close(compiled(tx).cpu().numpy(), want), "torch.compile's chain is wrong"
            rows.append(Row(case, ours * 1e3, "torch.compile", t_comp * 1e3, "ms", "lower", 1.0))
        except Exception as exc:  # noqa: BLE001 - an unusable compiler is a skip, with its reason
            rows.append(skipped(case + " vs torch.compile", f"torch.compile failed: {type(exc).__name__}: {exc}"[:200]))
    be.free(a)
    be.free(out)
    return rows


def _sampled(values: np.ndarray) -> list[int]:
    """Every 4099th element's bits and the last four: a cheap check of a whole buffer's result."""
    bits = values.view(f"u{values.itemsize}")
    return bits[::4099].tolist() + bits[-4:].tolist()


def _chain_numpy(x: np.ndarray) -> np.ndarray:
    """The fused chain in numpy f32 (each step rounded to f32, as in the kernel)."""
    one = np.float32
    v = x * one(1.5) + one(0.25)
    v = np.sqrt(np.abs(v * v - one(3.0)))
    return v * one(0.5) + one(1.0)


def _chain_close(got: np.ndarray, want: np.ndarray) -> bool:
    """A baseline's chain against ours: compilers may contract x * x - 3 into an fma, whose
    rounding differs by an ULP of x * x (up to ~4e-6 here), which the square root of a result near
    zero turns into ~2e-3."""
    return bool(np.allclose(got, want, rtol=1e-5, atol=4e-3))


class RawLaunch:
    """The raw-driver baseline of the host-cost cases: ``cuLaunchKernel`` of ``function`` through
    ctypes over buffers at ``pointers`` of ``count`` elements each (the kernel's parameters: every
    address, then every count), ``count // 64`` workgroups of 64 on ``stream``, its arguments packed
    once and kept alive here. ``call`` launches (asynchronously); it is a plain closure, as cheap to
    call as the raw call written inline in a function, so the baseline is not made slower."""

    def __init__(self, function: Any, pointers: list[int], count: int, stream: c_void_p) -> None:
        # the array holds its values: the closure below keeps them alive (6baef07 kept only the
        # pointers, so a dropped RawLaunch left the launch reading freed memory)
        params = cu.pack_params([c_uint64(p) for p in pointers] + [c_uint32(count) for _ in pointers])
        one, zero = ctypes.c_uint(1), ctypes.c_uint(0)
        launch = self.launch = cu.raw("cuLaunchKernel")
        args = self.args = (function, ctypes.c_uint(count // 64), one, one, ctypes.c_uint(64), one, one, zero,
                            stream, params, None)

        def call() -> None:
            if launch(*args):
                raise RuntimeError("launch failed")

        self.call = call


def host_cost_rows(be: Any, batches: int, per_batch: int) -> list[Row]:
    """Host time of a resident launch, a replay of a graph of 100 launches and a small numpy
    dispatch, each against the raw driver calls doing the same work (ctypes, arguments packed
    once); the raw call timed twice gives the noise floor."""
    n = 1024
    stream = c_void_p(be.stream_handle)
    bufs = [be.upload(np.arange(n, dtype=np.uint32)) for _ in range(2)] + [be.allocate("u32", n)]
    pipe = be.compile(TWO)
    raw_launch = RawLaunch(pipe.function, [buf.ptr for buf in bufs], n, stream).call
    r, o, again = interleaved([raw_launch, lambda: pipe.dispatch_resident(bufs), raw_launch], batches, per_batch,
                              be.synchronize)
    rows = [Row("dispatch_resident host cost (us)", o * 1e6, "raw ctypes cuLaunchKernel", r * 1e6, "us", "lower", 1.05,
                note=f"raw vs raw {again / r:.3f}")]
    graph = be.sequence([(pipe, bufs)] * 100).capture()
    graph_launch = cu.raw("cuGraphLaunch")
    raw3 = (c_void_p(graph.handle), stream)

    def raw_replay() -> None:
        if graph_launch(*raw3):
            raise RuntimeError("graph launch failed")

    r, o, again = interleaved([raw_replay, graph.replay, raw_replay], batches, max(10, per_batch // 10), be.synchronize)
    rows.append(Row("graph of 100 dispatches, host per replay (us)", o * 1e6, "raw ctypes cuGraphLaunch", r * 1e6, "us",
                    "lower", 1.05, note=f"raw vs raw {again / r:.3f}"))
    graph.close()
    a, b = np.arange(n, dtype=np.uint32), np.full(n, 7, np.uint32)
    da, db, dout = (be.allocate("u32", n) for _ in range(3))
    be.synchronize()  # their zero-fill, queued on our stream, is done before the raw copies write them
    h2d, d2h = cu.function("cuMemcpyHtoD_v2"), cu.function("cuMemcpyDtoH_v2")
    # the synchronous copies run on the legacy default stream: the raw launch goes there too, so the
    # three are ordered (on our non-blocking stream nothing ordered the kernel with either copy:
    # right on hardware by timing only, wrong on the simulated driver)
    launch_on_copies = RawLaunch(pipe.function, [x.ptr for x in (da, db, dout)], n, c_void_p(None)).call

    def raw_roundtrip() -> np.ndarray:
        h2d(da.ptr, a.ctypes.data, 4 * n)
        h2d(db.ptr, b.ctypes.data, 4 * n)
        launch_on_copies()
        res = np.empty(n, np.uint32)
        d2h(res.ctypes.data, dout.ptr, 4 * n)
        return res

    assert (raw_roundtrip() == a + b).all() and (pipe.dispatch([a, b])[0] == a + b).all()
    r, o, again = interleaved([raw_roundtrip, lambda: pipe.dispatch([a, b]), raw_roundtrip], batches,
                              max(20, per_batch // 8))
    rows.append(Row("numpy -> numpy dispatch, 2 x 4 KB in (us)", o * 1e6, "raw ctypes H2D+H2D+launch+D2H", r * 1e6,
                    "us", "lower", 0.95, note=f"raw vs raw {again / r:.3f}"))
    for buf in bufs + [da, db, dout]:
        be.free(buf)
    return rows


T = TypeVar("T")


def quiet(work: Callable[[], T]) -> T:
    """Run host-time measurements on one core with the garbage collector off (no migrations or
    collections inside a timed batch), then restore both."""
    cores = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    collecting = gc.isenabled()
    try:
        if cores:
            os.sched_setaffinity(0, {max(cores)})  # the last core: core 0 takes most interrupts
        gc.disable()
        return work()
    finally:
        if collecting:
            gc.enable()
        if cores:
            os.sched_setaffinity(0, cores)
