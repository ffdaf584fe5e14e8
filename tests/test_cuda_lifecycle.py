"""The CUDA backend's lifecycle (marked gpu): close() and ``with`` release the GPU resources,
everything refuses use afterwards with C005, acquire() replaces a closed backend, pending
dispatches and graphs close, and create/dispatch/close cycles keep device memory flat."""

from __future__ import annotations

import resource
from ctypes import byref, c_size_t

import numpy as np
import pytest

import vyre_decl
from vyre_decl import libcuda as cu
from vyre_decl.backends.cuda import cuda_available
from vyre_decl.ir import VyreError, parse_program

from test_backends import VADD

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not cuda_available(), reason="no CUDA GPU: libcuda.so.1 cannot be "
                                                  "loaded or reports no device")]

X = np.arange(1000, dtype=np.uint32)


def _free_device_bytes() -> int:
    vyre_decl.acquire("cuda").synchronize()  # the shared backend keeps a context current
    free, total = c_size_t(), c_size_t()
    cu.call("cuMemGetInfo_v2", byref(free), byref(total))
    return free.value


def test_close_releases_and_refuses_further_use():
    from vyre_decl.backends.cuda import CudaBackend

    with CudaBackend() as be:
        buf = be.upload(X)
        pipe = be.compile(VADD)
        np.testing.assert_array_equal(pipe.dispatch([X, X])[0], 2 * X)
        pending = be.dispatch_async(VADD, [X, X])
        out = be.allocate("u32", X.size)
        graph = be.sequence([(pipe, [buf, buf, out])]).capture()
        graph.replay()
        np.testing.assert_array_equal(be.download(out), 2 * X)
    assert be.closed and buf.freed and out.freed
    for call in (lambda: be.dispatch(VADD, [X, X]), lambda: pipe.dispatch([X, X]), lambda: be.allocate("u32", 4),
                 graph.replay, pending.result):
        with pytest.raises(VyreError) as e:
            call()
        assert e.value.codes == ["C005"] and "Fix:" in str(e.value)
    be.close()  # twice is fine
    graph.close()
    assert not vyre_decl.acquire("cuda").closed


def test_pending_dispatches_pipelines_and_graphs_close_alone():
    be = vyre_decl.acquire("cuda")
    with be.dispatch_async(VADD, [X, X]) as pending:
        np.testing.assert_array_equal(pending.result()[0], 2 * X)
    dropped = be.dispatch_async(VADD, [X, X])
    dropped.close()
    with pytest.raises(VyreError):
        dropped.result()
    pipe = be.compile(VADD)
    pipe.close()
    with pytest.raises(VyreError) as e:
        pipe.dispatch([X, X])
    assert e.value.codes == ["C005"]
    np.testing.assert_array_equal(be.compile(VADD).dispatch([X, X])[0], 2 * X)  # compile gives a fresh one


def test_acquire_replaces_a_closed_backend():
    be = vyre_decl.acquire("cuda", registry=vyre_decl.load_registry())
    be.close()
    again = vyre_decl.acquire("cuda", registry=vyre_decl.load_registry())
    assert again is not be and not again.closed
    np.testing.assert_array_equal(again.dispatch(VADD, [X, X])[0], 2 * X)
    again.close()


def test_create_dispatch_close_cycles_keep_memory_flat():
    from vyre_decl.backends.cuda import CudaBackend

    def cycle() -> None:
        with CudaBackend() as be:
            buf = be.upload(np.zeros(1 << 20, np.uint32))  # 4 MB each time
            be.dispatch(VADD, [X, X])
            del buf

    for _ in range(5):  # warm up caches, the driver and the allocator
        cycle()
    free0, rss0 = _free_device_bytes(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for _ in range(100):
        cycle()
    free1, rss1 = _free_device_bytes(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert free0 - free1 < 16 << 20, (free0, free1)  # 100 cycles x 4 MB would be 400 MB if leaked
    assert rss1 - rss0 < 64 << 10, (rss0, rss1)  # KB


SLOW = parse_program("""program slow workgroup(1, 1, 1) {
  buffer n: read u32[] @0
  buffer out: write u32[1] @1
  let acc = 1u32
  loop i in 0u32 .. n[0u32] { acc = acc * 3u32 + i }
  out[0u32] = acc
}""")


@pytest.mark.hardware_only("the simulated device runs queued work inside the wait for it, so no kernel "
                           "outlives a bounded wait")
def test_a_timeout_returns_within_its_deadline_and_the_backend_stays_usable():
    import time

    from vyre_decl.backends.config import DispatchConfig
    from vyre_decl.backends.cuda import CudaBackend

    with CudaBackend() as be:
        pipe = be.compile(SLOW)  # compiled before the clock starts
        t0 = time.perf_counter()
        with pytest.raises(VyreError) as e:
            pipe.dispatch([np.array([1 << 28], np.uint32)], DispatchConfig(timeout=0.1, label="spin"))
        took = time.perf_counter() - t0
        assert e.value.codes == ["D013"] and "still running" in str(e.value) and "spin" in str(e.value)
        assert took < 0.5, took
        be.synchronize()  # waits for the kernel; the backend is usable afterwards
        np.testing.assert_array_equal(be.dispatch(VADD, [X, X])[0], 2 * X)
        small = pipe.dispatch([np.array([5], np.uint32)], DispatchConfig(timeout=5.0))[0]
        acc = 1
        for i in range(5):
            acc = (acc * 3 + i) & 0xFFFFFFFF
        assert small[0] == acc


def test_batched_transfers_timed_resident_launches_and_device_choice():
    from vyre_decl.backends.cuda import CudaBackend

    be = vyre_decl.acquire("cuda")
    a, b = np.arange(5, dtype=np.uint32), np.arange(7, dtype=np.float64)
    bufs = be.upload_many([a, b])
    got = be.download_many(bufs)
    assert got[0].tobytes() == a.tobytes() and got[1].tobytes() == b.tobytes()
    out = be.allocate("u32", a.size)
    pipe = be.compile(VADD)
    timing = pipe.dispatch_resident_timed([bufs[0], bufs[0], out])
    assert 0 < timing.device_s <= timing.wall_s and be.download(out).tolist() == (2 * a).tolist()
    with be.sequence([(pipe, [bufs[0], bufs[0], out])] * 3).capture() as graph:
        assert 0 < graph.replay_timed().device_s
    for buf in bufs + [out]:
        be.free(buf)
    with pytest.raises(VyreError) as e:
        CudaBackend(device=1 << 20)
    assert e.value.codes == ["C006"]
    assert vyre_decl.acquire("cuda:0").device.ordinal == 0


def test_occupancy_snapshots_and_the_pool_cap():
    from vyre_decl.backends.cuda import CudaBackend

    with CudaBackend(pool_limit_mb=1, pinned_limit_mb=1) as be:
        pipe = be.compile(VADD)
        occ = pipe.occupancy()
        assert occ.threads == 64 and occ.workgroups_per_sm > 0 and 0 < occ.occupancy <= 1 and occ.registers > 0
        assert pipe.suggested_workgroup() in (64, 128, 256, 512, 1024)
        big = be.allocate("u32", 1 << 20)  # 4 MB: beyond the 1 MB pool cap
        before = be.memory()
        assert before["live_buffers"] >= 1 and before["live_bytes"] >= 4 << 20 and before["device_total_bytes"] > 0
        be.free(big)
        after = be.memory()
        assert after["pooled_bytes"] <= 1 << 20 and be.telemetry()["pool_frees"] >= 1
        cache = be.cache()
        assert cache["modules_loaded"] >= 1 and cache["pipelines"] >= 1 and "cubin" in cache["disk"]
        # pinned staging: a small transfer's area stays, one past the 1 MB cap goes after the transfer
        small = be.upload(np.arange(1000, dtype=np.uint32))
        assert 0 < be.memory()["staging_bytes"] <= 1 << 20
        large = be.upload(np.arange(1 << 20, dtype=np.uint32))  # 4 MB
        assert be.memory()["staging_bytes"] == 0 and be.memory()["pinned_limit_bytes"] == 1 << 20
        assert (be.download(large) == np.arange(1 << 20, dtype=np.uint32)).all() and be.memory()["staging_bytes"] == 0
        np.testing.assert_array_equal(be.dispatch(VADD, [be.download(large)] * 2)[0], 2 * np.arange(1 << 20, dtype=np.uint32))
        assert be.memory()["staging_bytes"] == 0 and be.download(small).tolist() == list(range(1000))


def test_cuda_dispatch_into_caller_arrays_and_reused_async_staging():
    be = vyre_decl.acquire("cuda")
    out = np.zeros(X.size, np.uint32)
    got = be.dispatch(VADD, [X, X], out=[out])
    assert got[0] is out and (out == 2 * X).all()
    with pytest.raises(VyreError) as e:
        be.dispatch(VADD, [X, X], out=[np.zeros(3, np.uint32)])
    assert e.value.codes == ["D015"]
    for _ in range(3):
        np.testing.assert_array_equal(be.dispatch_async(VADD, [X, X]).result()[0], 2 * X)


def test_dlpack_round_trip():
    be = vyre_decl.acquire("cuda")
    x = be.upload(np.arange(10, dtype=np.float32))
    assert x.__dlpack_device__() == (2, be.device.ordinal)
    torch = pytest.importorskip("torch", reason="torch is not installed: DLPack needs a consumer")
    t = torch.from_dlpack(x)  # a view of our memory
    assert t.device.type == "cuda" and t.cpu().tolist() == list(range(10))
    t.mul_(2)
    torch.cuda.synchronize()
    assert be.download(x).tolist() == [2.0 * i for i in range(10)]  # the same memory
    y = be.from_dlpack(torch.arange(5, device="cuda", dtype=torch.int64) + 7)
    assert y.dtype.value == "i64" and be.download(y).tolist() == [7, 8, 9, 10, 11]
    with pytest.raises(VyreError) as e:
        be.from_dlpack(torch.arange(4, dtype=torch.float32))  # on the CPU
    assert e.value.codes == ["D016"]


def test_an_import_of_our_own_capsule_keeps_its_tensor_until_it_is_dropped():
    """The importer holds the export record, so the managed tensor outlives the exporter's table
    (which interpreter exit may clear first: reading a freed tensor in the deleter crashed CI)."""
    import gc
    import weakref

    from vyre_decl.backends.cuda import dlpack

    be = vyre_decl.acquire("cuda")
    x = be.upload(np.arange(6, dtype=np.float32))
    capsule = x.__dlpack__()
    key, managed = next((k, rec[0]) for k, rec in dlpack._exports.items() if rec[2] is x)
    alive = weakref.ref(managed)
    del managed
    y = be.from_dlpack(capsule)
    del capsule
    with dlpack._lock:
        saved = dict(dlpack._exports)
        dlpack._exports.clear()  # as the interpreter's teardown may do before the import is dropped
        del saved[key]  # the table forgot it; only the import may keep it now
    gc.collect()
    try:
        assert alive() is not None and be.download(y).tolist() == list(range(6))
        del y
        gc.collect()
    finally:
        with dlpack._lock:
            dlpack._exports.update(saved)
    assert alive() is None  # the deleter ran and nothing else holds it


def _variant(k: int):
    """A distinct program (its own kernel) per k."""
    return parse_program(f"""program add{k} workgroup(64, 1, 1) {{
  buffer a: read u32[] @0
  buffer out: write u32[len(a)] @1
  let i = gid.x
  if i < len(out) {{ out[i] = a[i] + {k}u32 }}
}}""")


def test_kernel_caches_are_capped_and_never_unload_a_module_in_use():
    import gc

    from vyre_decl.backends.cuda import CudaBackend

    with CudaBackend(kernel_cache=2) as be:
        held = be.compile(_variant(0))  # in use all along: must keep working
        for k in range(1, 6):
            np.testing.assert_array_equal(be.dispatch(_variant(k), [X])[0], X + k)
        gc.collect()  # the evicted pipelines are garbage now: their modules are idle
        be.compile(_variant(6))
        cache = be.cache()
        # seven kernels so far; in use: the held one and the two cached pipelines' (over the limit)
        assert cache["ptx_in_memory"] == 2 and cache["pipelines"] == 2 and cache["limit"] == 2, cache
        assert cache["modules_loaded"] == cache["modules_in_use"] == 3, cache
        assert cache["evictions"] == {"ptx": 5, "modules": 4, "pipelines": 5}, cache
        np.testing.assert_array_equal(held.dispatch([X])[0], X)  # its module was never unloaded
        # every pipeline alive keeps its module: the cache goes over its limit rather than break one
        pipes = [be.compile(_variant(k)) for k in range(10, 14)]
        assert be.cache()["modules_in_use"] >= 5 and be.cache()["modules_loaded"] >= 5
        for k, p in zip(range(10, 14), pipes):
            np.testing.assert_array_equal(p.dispatch([X])[0], X + k)


def test_dropped_pending_dispatches_and_graphs_release_their_resources(monkeypatch):
    import gc

    from vyre_decl.backends.cuda import graphs

    be = vyre_decl.acquire("cuda")
    np.testing.assert_array_equal(be.dispatch_async(VADD, [X, X]).result()[0], 2 * X)
    pooled = be.memory()["pooled_bytes"]
    pending = be.dispatch_async(VADD, [X, X])
    assert be.memory()["pooled_bytes"] < pooled  # its arena is out of the pool
    del pending
    gc.collect()
    assert be.memory()["pooled_bytes"] == pooled  # and back, without close() or result()
    destroyed = []
    real = graphs._destroy
    monkeypatch.setattr(graphs, "_destroy", lambda *a: destroyed.append(a) or real(*a))
    out = be.allocate("u32", X.size)
    a = be.upload(X)
    graph = be.sequence([(be.compile(VADD), [a, a, out])]).capture()
    assert graph.handle
    graph.replay()
    del graph
    gc.collect()
    assert len(destroyed) == 1
    closed = be.sequence([(be.compile(VADD), [a, a, out])]).capture()
    closed.close()
    assert closed.handle == 0 and len(destroyed) == 2
    with pytest.raises(VyreError) as e:
        closed.replay()
    assert e.value.codes == ["C005"]


def test_a_setting_that_is_not_a_number_fails_before_the_backend_exists(monkeypatch):
    from vyre_decl.backends.cuda import CudaBackend

    monkeypatch.setenv("VYRE_DECL_KERNEL_CACHE", "lots")
    with pytest.raises(VyreError) as e:
        CudaBackend()
    assert e.value.codes == ["B008"]


def test_labels_name_errors_and_open_nvtx_ranges(monkeypatch):
    import glob
    import sys

    from vyre_decl.backends.config import DispatchConfig
    from vyre_decl.backends.cuda import nvtx

    be = vyre_decl.acquire("cuda")
    calls: list[str] = []
    monkeypatch.setattr(nvtx, "push", lambda label: calls.append(label))
    monkeypatch.setattr(nvtx, "pop", lambda: calls.append("/"))
    np.testing.assert_array_equal(be.dispatch(VADD, [X, X], DispatchConfig(label="add"))[0], 2 * X)
    be.dispatch(VADD, [X, X])
    with pytest.raises(VyreError) as e:
        be.dispatch(VADD, [X], DispatchConfig(label="short"))
    assert e.value.codes == ["D001"] and str(e.value).splitlines()[0] == "in dispatch 'short'"
    assert calls == ["add", "/", "short", "/"]  # unlabelled: nothing; a failure still closes its range
    with pytest.raises(VyreError) as e:
        be.dispatch_async(VADD, [X], DispatchConfig(label="later"))
    assert str(e.value).splitlines()[0] == "in dispatch 'later'"
    monkeypatch.undo()
    # the real library, where one is installed (PyTorch's CUDA wheels bring libnvToolsExt)
    found = [p for d in sys.path for p in glob.glob(f"{d}/nvidia/nvtx/lib/libnvToolsExt.so*")]
    if not found:
        pytest.skip("no libnvToolsExt on this machine: the labelled path above ran without NVTX")
    monkeypatch.setenv("VYRE_DECL_NVTX", found[0])
    monkeypatch.setattr(nvtx, "_tried", False)
    monkeypatch.setattr(nvtx, "_fns", None)
    assert nvtx.available()
    np.testing.assert_array_equal(be.dispatch(VADD, [X, X], DispatchConfig(label="ranged"))[0], 2 * X)


def test_wrap_refuses_memory_that_is_not_one_allocation_of_this_context():
    be = vyre_decl.acquire("cuda")

    class Fake:
        def __init__(self, ptr: int, n: int) -> None:
            self.__cuda_array_interface__ = {"shape": (n,), "typestr": "<u4", "data": (ptr, False), "version": 3}

    for fake in (Fake(0x1000, 16), Fake(1 << 47, 4)):
        with pytest.raises(VyreError) as e:
            be.wrap(fake)
        assert e.value.codes == ["D017"] and "Fix:" in str(e.value)
    real = be.allocate("u32", 64)
    with pytest.raises(VyreError) as e:  # the right allocation, a shape past its end
        be.wrap(Fake(real.ptr + 4, real.capacity // 4))
    assert e.value.codes == ["D017"]
    view = be.wrap(Fake(real.ptr + 4, 8))  # inside: fine, and usable
    assert be.download(view).tolist() == [0] * 8
    np.testing.assert_array_equal(be.dispatch(VADD, [X, X])[0], 2 * X)  # nothing was poisoned


def test_a_keyboard_interrupt_during_a_dispatch_leaves_the_backend_usable(monkeypatch):
    from vyre_decl.backends.cuda import CudaBackend

    with CudaBackend() as be:
        pipe = be.compile(VADD)
        np.testing.assert_array_equal(pipe.dispatch([X, X])[0], 2 * X)
        device = be._device  # noqa: SLF001 - the test reaches in to interrupt the wait, as Ctrl-C would
        real = device.synchronize
        calls = []

        def interrupted() -> None:
            calls.append(1)
            monkeypatch.setattr(device, "synchronize", real)
            raise KeyboardInterrupt

        monkeypatch.setattr(device, "synchronize", interrupted)
        with pytest.raises(KeyboardInterrupt):
            pipe.dispatch([X, 3 * X])
        assert calls == [1]
        for k in range(3):  # fresh arena and staging: results are right, nothing half-applied shows
            np.testing.assert_array_equal(pipe.dispatch([X, k * X])[0], (k + 1) * X)
        np.testing.assert_array_equal(be.dispatch(VADD, [X, X])[0], 2 * X)


CONCURRENT_SCRIPT = r"""
import json, sys
import numpy as np
from vyre_decl.backends.cuda import CudaBackend
from vyre_decl.ir import parse_program
k = int(sys.argv[1])
be = CudaBackend()
x = np.arange(1000, dtype=np.uint32)
got = []
for j in (0, 1, 2, k):  # three programs every process compiles, one of its own
    p = parse_program(f'''program add{j} workgroup(64, 1, 1) {{
      buffer a: read u32[] @0
      buffer o: write u32[len(a)] @1
      let i = gid.x
      if i < len(o) {{ o[i] = a[i] + {j}u32 }}
    }}''')
    got.append(bool((be.dispatch(p, [x])[0] == x + j).all()))
print(json.dumps({"ok": got, "jit": be.telemetry()["jit_compiles"]}))
"""


def test_eight_processes_compiling_into_one_cache_and_a_damaged_or_read_only_cache(tmp_path):
    import json
    import os
    import subprocess
    import sys

    root = os.pathsep.join(filter(None, [str(__import__("pathlib").Path(__file__).resolve().parent.parent),
                                         os.environ.get("PYTHONPATH")]))
    env = dict(os.environ, VYRE_DECL_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=root)
    procs = [subprocess.Popen([sys.executable, "-c", CONCURRENT_SCRIPT, str(10 + k)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env) for k in range(8)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [e[-800:] for _, e in outs]
    assert all(json.loads(o.splitlines()[-1])["ok"] == [True] * 4 for o, _ in outs)
    # damage every cached cubin and PTX (truncate half: rebuilt; flip bytes in the rest, header included: no
    # longer recognisably ours, so left alone and run uncached): right answers either way
    for i, path in enumerate(p for p in (tmp_path / "cache").rglob("*") if p.is_file() and p.parent.parent.name
                             in ("cubin", "ptx")):
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2] if i % 2 else bytes(b ^ 0x5A for b in data))
    again = subprocess.run([sys.executable, "-c", CONCURRENT_SCRIPT, "10"], capture_output=True, text=True, env=env,
                           timeout=300)
    assert again.returncode == 0, again.stderr[-800:]
    assert json.loads(again.stdout.splitlines()[-1])["ok"] == [True] * 4
    # a cache directory that cannot be made (its parent is a file: even root cannot): run uncached, still right
    blocker = tmp_path / "blocker"
    blocker.write_text("not a directory")
    done = subprocess.run([sys.executable, "-c", CONCURRENT_SCRIPT, "11"], capture_output=True, text=True,
                          env=dict(env, VYRE_DECL_CACHE_DIR=str(blocker / "cache")), timeout=300)
    assert done.returncode == 0, done.stderr[-800:]
    assert json.loads(done.stdout.splitlines()[-1])["ok"] == [True] * 4
