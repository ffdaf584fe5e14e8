"""The unchanged CUDA backend over the simulated driver (vyre_decl.libcuda's library replaced by
vyre_decl.sim's for each test): it starts, reports the simulated GPU, moves data, orders foreign
memory after its producer (the wrap() race of issue 25 item 1 reproduced when the ordering is
taken out), runs two devices from one thread (issue 25 item 2 reproduced with 6baef07's context
handling), and — where the PTX interpreter is in the tree — compiles and dispatches programs."""

from __future__ import annotations

import threading
from ctypes import byref, c_uint64

import numpy as np
import pytest

import vyre_decl
from vyre_decl import backends
from vyre_decl import libcuda as cu
from vyre_decl.backends.cuda import CudaBackend, interop
from vyre_decl.backends.cuda.device import Device
from vyre_decl.ir import parse_program

from test_sim_driver_support import real_ptx, use_sim, use_stand_in

N = 1 << 12


@pytest.fixture
def sim(monkeypatch):
    lib = use_sim(monkeypatch)
    use_stand_in(monkeypatch, {})  # the backend's probe module loads; no kernel runs
    return lib


@pytest.fixture
def be(sim):
    backend = CudaBackend()
    yield backend
    backend.close()


def test_the_cuda_backend_starts_on_the_simulated_gpu(be, sim):
    info = be.device
    assert (info.name, info.compute_capability, info.multiprocessors) == ("NVIDIA H100 80GB HBM3 (simulated)", (9, 0), 132)
    assert (info.driver_version, info.max_threads_per_sm, info.max_grid) == (13000, 2048, (2**31 - 1, 65535, 65535))
    assert info.target.name == "sm_90"
    x = np.arange(N, dtype=np.uint32)
    buf = be.upload(x)
    np.testing.assert_array_equal(buf.download(), x)
    np.testing.assert_array_equal(be.download_many([buf])[0], x)
    assert sim.model.calls["cuMemcpyHtoDAsync_v2"] >= 1 and not sim.model.errors


class Foreign:
    """Device memory of another library (PyTorch-like: interface version 2, no stream), written
    by its producer on the legacy default stream and not finished when handed over."""

    def __init__(self, value: int) -> None:
        ptr = c_uint64()
        cu.call("cuMemAlloc_v2", byref(ptr), 4 * N)
        cu.call("cuMemsetD8_v2", cu.CUdeviceptr(ptr.value), value, 4 * N)  # queued on the legacy stream
        self.__cuda_array_interface__ = {"shape": (N,), "typestr": "<u4", "data": (ptr.value, False), "version": 2}


@pytest.mark.parametrize("ordered", [True, False], ids=["as-is", "without-the-wait"])
def test_wrap_orders_foreign_memory_after_its_producer(be, monkeypatch, ordered):
    if not ordered:  # 6baef07: an interface without a stream was not waited for
        monkeypatch.setattr(interop, "_producer_streams", lambda cai, stream: ())
    be._device.alive()
    buf = be.wrap(Foreign(0x11))
    got = buf.download()  # our non-blocking stream reads the foreign memory
    assert (got == 0x11111111).all() if ordered else (got == 0).all()


def _old_alive(self: Device) -> None:
    """Device.alive as it was at 6baef07: a per-device, per-thread flag 'my context is current'."""
    tls = self.__dict__.setdefault("_old_tls", threading.local())
    if not getattr(tls, "current", False):
        cu.call("cuCtxSetCurrent", self._ctx)
        tls.current = True


def test_two_backends_in_one_thread(monkeypatch):
    use_sim(monkeypatch, "h100,h100")
    use_stand_in(monkeypatch, {})
    a, b = CudaBackend(device=0), CudaBackend(device=1)
    x = np.arange(10, dtype=np.uint32)
    bufs = [a.upload(x), b.upload(x + 1), a.upload(x + 2)]
    np.testing.assert_array_equal(np.concatenate([buf.download() for buf in bufs]), np.concatenate([x, x + 1, x + 2]))
    b.close()
    np.testing.assert_array_equal(a.upload(x).download(), x)
    a.close()


def test_two_backends_with_6baef07s_context_handling_fail_as_on_the_h100(monkeypatch):
    """Issue 25 item 2: with the per-device flag, a's calls after b's creation ran in b's context:
    'cuMemsetD8Async failed: CUDA_ERROR_INVALID_VALUE' on two H100s, and on the simulator."""
    use_sim(monkeypatch, "h100,h100")
    use_stand_in(monkeypatch, {})
    monkeypatch.setattr(Device, "alive", lambda self: _old_alive(self))
    a = CudaBackend(device=0)
    a._device.alive()
    CudaBackend(device=1)._device.alive()
    with pytest.raises(cu.CudaError) as info:
        a.upload(np.arange(10, dtype=np.uint32))
    assert (info.value.call, info.value.name) == ("cuMemsetD8Async", "CUDA_ERROR_INVALID_VALUE")


def test_acquire_gives_the_cuda_backend_over_the_simulator(sim, monkeypatch):
    monkeypatch.setattr(backends, "_instances", {})
    be = vyre_decl.acquire("cuda")
    try:
        assert be.device.name == "NVIDIA H100 80GB HBM3 (simulated)"
    finally:
        be.close()


SAXPY = parse_program("""program saxpy workgroup(64, 1, 1) {
  buffer x: read f32[] @0
  buffer y: read f32[] @1
  buffer out: write f32[len(x)] @2
  let i = gid.x
  if i < len(out) {
    out[i] = x[i] * 2.0f32 + y[i]
  }
}""")


@pytest.fixture
def interpreted(monkeypatch):
    real_ptx()
    use_sim(monkeypatch)
    backend = CudaBackend()
    yield backend
    backend.close()


def test_a_program_runs_end_to_end_on_the_simulator(interpreted):
    x, y = np.arange(1000, dtype=np.float32), np.ones(1000, np.float32)
    (out,) = interpreted.dispatch(SAXPY, [x, y])
    np.testing.assert_array_equal(out, x * 2 + y)


def test_resident_dispatches_and_a_graph_replay_on_the_simulator(interpreted):
    x, y = np.arange(1000, dtype=np.float32), np.ones(1000, np.float32)
    bx, by, bout = interpreted.upload(x), interpreted.upload(y), interpreted.allocate("f32", 1000)
    pipe = interpreted.compile(SAXPY)
    pipe.dispatch_resident([bx, by, bout])
    np.testing.assert_array_equal(bout.download(), x * 2 + y)
    graph = interpreted.sequence([(pipe, [bx, by, bout])]).capture()
    by.upload(np.full(1000, 3, np.float32))
    graph.replay()
    np.testing.assert_array_equal(bout.download(), x * 2 + 3)
    graph.close()

