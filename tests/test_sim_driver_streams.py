"""Deferred execution in the simulated driver: queued work runs only when something waits for it,
so a missing wait reads stale data every time (the wrap() race of issue 25 at the driver level),
and a wait — cuStreamWaitEvent, the legacy stream's implicit synchronisation, a blocking copy —
makes it fresh. Also queries, modelled event times, host copies, stream capture and graphs."""

from __future__ import annotations

import ctypes
import threading
from ctypes import byref, c_float, c_uint64, c_void_p

import numpy as np
import pytest

from vyre_decl import libcuda as cu

from test_sim_driver_support import alloc, code, context, device_bytes, event, pinned, read_back, stream, use_sim

N = 4096
CU_STREAM_DEFAULT = 0


@pytest.fixture
def sim(monkeypatch):
    lib = use_sim(monkeypatch)
    context()
    return lib


def _ptr(p: int) -> cu.CUdeviceptr:
    return cu.CUdeviceptr(p)


def test_queued_work_runs_only_when_waited_for(sim):
    ptr, s = alloc(N), stream()
    cu.call("cuMemsetD8Async", _ptr(ptr), 7, N, s)
    assert device_bytes(sim, ptr, N) == bytes(N)  # queued, not run
    cu.call("cuStreamSynchronize", s)
    assert device_bytes(sim, ptr, N) == b"\7" * N


def _consume(ptr: int, consumer: c_void_p, host) -> bytes:
    cu.call("cuMemcpyDtoHAsync_v2", host, _ptr(ptr), N, consumer)
    cu.call("cuStreamSynchronize", consumer)
    return bytes(host)


def test_a_consumer_that_does_not_wait_for_the_producer_reads_stale_data(sim):
    """Issue 25 item 1 at the driver level: the producer queues its write on the legacy default
    stream; our non-blocking stream reads the memory. Without a wait: the old contents, every
    time; with an event recorded on the legacy stream and waited for: the producer's values."""
    ptr, consumer, host = alloc(N), stream(), pinned(N)
    cu.call("cuMemsetD8_v2", _ptr(ptr), 3, N)  # the producer (e.g. torch on the legacy stream)
    assert _consume(ptr, consumer, host) == bytes(N)  # stale: the producer's work has not run
    cu.call("cuMemsetD8_v2", _ptr(ptr), 5, N)  # produces again; this time the consumer waits
    handoff = event(cu.CU_EVENT_DISABLE_TIMING)
    cu.call("cuEventRecord", handoff, c_void_p(cu.CU_STREAM_LEGACY))
    cu.call("cuStreamWaitEvent", consumer, handoff, 0)
    assert _consume(ptr, consumer, host) == b"\5" * N


def test_the_wait_takes_the_events_state_when_queued(sim):
    ptr, consumer, host = alloc(N), stream(), pinned(N)
    handoff = event(cu.CU_EVENT_DISABLE_TIMING)
    cu.call("cuEventRecord", handoff, c_void_p(cu.CU_STREAM_LEGACY))
    cu.call("cuStreamWaitEvent", consumer, handoff, 0)
    cu.call("cuMemsetD8_v2", _ptr(ptr), 9, N)  # queued after the record: not waited for
    assert _consume(ptr, consumer, host) == bytes(N)


def test_the_legacy_stream_synchronises_with_blocking_streams_only(sim):
    blocking, non_blocking, host = stream(CU_STREAM_DEFAULT), stream(), pinned(N)
    a, b = alloc(N), alloc(N)
    cu.call("cuMemsetD8Async", _ptr(a), 1, N, blocking)
    cu.call("cuMemsetD8Async", _ptr(b), 2, N, non_blocking)
    assert read_back(a, N) == b"\1" * N  # the legacy stream waited for the blocking stream
    assert read_back(b, N) == bytes(N)  # not for the non-blocking one
    cu.call("cuMemsetD8_v2", _ptr(a), 4, N)  # legacy, then the blocking stream reads: ordered
    assert _consume(a, blocking, host) == b"\4" * N
    cu.call("cuMemsetD8_v2", _ptr(a), 6, N)  # the per-thread default stream is blocking too
    assert _consume(a, c_void_p(cu.CU_STREAM_PER_THREAD), host) == b"\6" * N


def test_copies_follow_the_drivers_host_synchronisation_rules(sim):
    ptr, s = alloc(N), stream()
    data = np.full(N, 1, np.uint8)
    cu.call("cuMemcpyHtoDAsync_v2", _ptr(ptr), data.ctypes.data, N, s)  # pageable: staged now
    data[:] = 2
    cu.call("cuStreamSynchronize", s)
    assert device_bytes(sim, ptr, N) == b"\1" * N
    host = pinned(N)
    ctypes.memset(host, 3, N)
    cu.call("cuMemcpyHtoDAsync_v2", _ptr(ptr), host, N, s)  # pinned: read when the copy runs
    ctypes.memset(host, 4, N)
    cu.call("cuStreamSynchronize", s)
    assert device_bytes(sim, ptr, N) == b"\4" * N
    cu.call("cuMemcpyHtoD_v2", _ptr(ptr), data.ctypes.data, N)  # pageable: the DMA may not be done
    assert device_bytes(sim, ptr, N) == b"\4" * N
    assert _consume(ptr, stream(), pinned(N)) == b"\4" * N  # a non-blocking reader sees the old bytes
    assert read_back(ptr, N) == b"\2" * N  # the legacy stream is ordered after it
    out = np.zeros(N, np.uint8)
    cu.call("cuMemsetD8Async", _ptr(ptr), 8, N, s)
    cu.call("cuMemcpyDtoHAsync_v2", out.ctypes.data, _ptr(ptr), N, s)  # pageable: returns once copied
    assert (out == 8).all()


def test_queries_answer_not_ready_once_then_run_the_work(sim):
    ptr, s, e = alloc(N), stream(), event()
    assert code("cuEventQuery", e) == 0  # never recorded: complete
    cu.call("cuMemsetD8Async", _ptr(ptr), 1, N, s)
    cu.call("cuEventRecord", e, s)
    assert code("cuEventQuery", e) == cu.CUDA_ERROR_NOT_READY
    assert device_bytes(sim, ptr, N) == bytes(N)
    assert code("cuEventQuery", e) == 0
    assert device_bytes(sim, ptr, N) == b"\1" * N
    cu.call("cuMemsetD8Async", _ptr(ptr), 2, N, s)
    assert [code("cuStreamQuery", s) for _ in range(3)] == [600, 0, 0]
    assert code("cuStreamQuery", s) == 0 and device_bytes(sim, ptr, N) == b"\2" * N


def test_event_times_are_the_modelled_cost_of_the_work_between(sim):
    ptr, s = alloc(1 << 20), stream()
    t0, t1, t2, untimed = event(), event(), event(), event(cu.CU_EVENT_DISABLE_TIMING)
    cu.call("cuEventRecord", t0, s)
    cu.call("cuMemsetD8Async", _ptr(ptr), 1, 1 << 20, s)
    cu.call("cuEventRecord", t1, s)
    ms = c_float()
    assert code("cuEventElapsedTime", byref(ms), t0, t1) == cu.CUDA_ERROR_NOT_READY
    cu.call("cuMemsetD8Async", _ptr(ptr), 1, 1 << 20, s)
    cu.call("cuMemsetD8Async", _ptr(ptr), 1, 1 << 20, s)
    cu.call("cuEventRecord", t2, s)
    cu.call("cuEventSynchronize", t2)
    cu.call("cuEventElapsedTime", byref(ms), t0, t1)
    one = ms.value
    cu.call("cuEventElapsedTime", byref(ms), t1, t2)
    assert one > 0 and ms.value == pytest.approx(2 * one)
    cu.call("cuEventRecord", untimed, s)
    cu.call("cuStreamSynchronize", s)
    assert code("cuEventElapsedTime", byref(ms), t0, untimed) == 400
    assert code("cuEventElapsedTime", byref(ms), t0, event()) == 400  # never recorded


def test_a_destroyed_streams_work_still_runs_when_the_context_synchronises(sim):
    ptr, s = alloc(N), stream()
    cu.call("cuMemsetD8Async", _ptr(ptr), 5, N, s)
    cu.call("cuStreamDestroy_v2", s)
    assert code("cuStreamSynchronize", s) == 400
    assert code("cuStreamDestroy_v2", c_void_p(cu.CU_STREAM_LEGACY)) == 400
    assert device_bytes(sim, ptr, N) == bytes(N)
    cu.call("cuCtxSynchronize")
    assert device_bytes(sim, ptr, N) == b"\5" * N


def test_waits_across_devices(monkeypatch):
    lib = use_sim(monkeypatch, "h100,h100")
    c0, c1 = context(0, current=False), context(1, current=False)
    cu.call("cuCtxSetCurrent", c0)
    src, s0, done = alloc(N), stream(), event(cu.CU_EVENT_DISABLE_TIMING)
    cu.call("cuMemsetD8Async", _ptr(src), 3, N, s0)
    cu.call("cuEventRecord", done, s0)
    cu.call("cuCtxSetCurrent", c1)
    dst, s1 = alloc(N), stream()
    cu.call("cuStreamWaitEvent", s1, done, 0)  # device 1 waits for device 0's event
    cu.call("cuMemcpyDtoDAsync_v2", _ptr(dst), _ptr(src), N, s1)
    cu.call("cuStreamSynchronize", s1)
    assert device_bytes(lib, dst, N, ordinal=1) == b"\3" * N


def _capture(s: c_void_p, work, mode: int = cu.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) -> tuple[int, c_void_p]:
    cu.call("cuStreamBeginCapture_v2", s, mode)
    work()
    graph = c_void_p()
    return code("cuStreamEndCapture", s, byref(graph)), graph


def test_a_captured_graph_runs_only_when_launched_and_replays(sim):
    a, b, s = alloc(N), alloc(N), stream()

    def work() -> None:
        cu.call("cuMemsetD8Async", _ptr(a), 7, N, s)
        cu.call("cuMemcpyDtoDAsync_v2", _ptr(b), _ptr(a), N, s)

    result, graph = _capture(s, work)
    assert result == 0 and graph.value
    cu.call("cuStreamSynchronize", s)
    assert device_bytes(sim, b, N) == bytes(N)  # captured, not run
    exec_ = c_void_p()
    cu.call("cuGraphInstantiateWithFlags", byref(exec_), graph, 0)
    cu.call("cuGraphLaunch", exec_, s)
    assert device_bytes(sim, b, N) == bytes(N)  # queued
    cu.call("cuStreamSynchronize", s)
    assert device_bytes(sim, b, N) == b"\7" * N
    cu.call("cuMemsetD8_v2", _ptr(b), 0, N)
    cu.call("cuCtxSynchronize")
    cu.call("cuGraphLaunch", exec_, s)
    cu.call("cuStreamSynchronize", s)
    assert device_bytes(sim, b, N) == b"\7" * N  # replayed
    cu.call("cuGraphExecDestroy", exec_)
    cu.call("cuGraphDestroy", graph)
    assert code("cuGraphLaunch", exec_, s) == 400


def test_synchronising_a_capturing_stream_fails_and_invalidates_the_capture(sim):
    s, ptr = stream(), alloc(N)
    assert code("cuStreamBeginCapture_v2", c_void_p(cu.CU_STREAM_LEGACY), 1) == 900  # the legacy stream
    assert code("cuStreamEndCapture", s, byref(c_void_p())) == 401  # not capturing
    seen = {}

    def work() -> None:
        cu.call("cuMemsetD8Async", _ptr(ptr), 1, N, s)
        seen["sync"] = code("cuStreamSynchronize", s)
        seen["more"] = code("cuMemsetD8Async", _ptr(ptr), 1, N, s)

    result, graph = _capture(s, work)
    assert (seen, result, graph.value) == ({"sync": 900, "more": 901}, 901, None)
    assert device_bytes(sim, ptr, N) == bytes(N)


def test_a_thread_local_capture_refuses_unsafe_calls_of_its_own_thread_only(sim):
    s = stream()
    ctx = _current()
    seen = {}

    def other_thread() -> None:
        cu.call("cuCtxSetCurrent", ctx)
        seen["other"] = code("cuMemAlloc_v2", byref(c_uint64()), 64)

    def work() -> None:
        seen["here"] = code("cuMemAlloc_v2", byref(c_uint64()), 64)
        t = threading.Thread(target=other_thread)
        t.start()
        t.join()

    assert _capture(s, work)[0] == 901 and seen == {"here": 900, "other": 0}
    assert _capture(s, work, mode=2)[0] == 0 and seen == {"here": 0, "other": 0}  # relaxed: both allowed
    assert _capture(s, work, mode=0)[0] == 901 and seen == {"here": 900, "other": 900}  # global: neither


def test_legacy_stream_work_while_a_blocking_stream_captures_is_refused(sim):
    blocking, ptr = stream(CU_STREAM_DEFAULT), alloc(N)
    seen = {}

    def work() -> None:
        seen["memset"] = code("cuMemsetD8_v2", _ptr(ptr), 1, N)

    assert _capture(blocking, work)[0] == 901 and seen == {"memset": 906}
    assert _capture(stream(), work)[0] == 0 and seen == {"memset": 0}  # a non-blocking capture: allowed


def test_a_thread_local_capture_ends_in_its_own_thread(sim):
    s, ctx = stream(), _current()
    cu.call("cuStreamBeginCapture_v2", s, cu.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
    ended = {}

    def other_thread() -> None:
        cu.call("cuCtxSetCurrent", ctx)
        ended["code"] = code("cuStreamEndCapture", s, byref(c_void_p()))

    t = threading.Thread(target=other_thread)
    t.start()
    t.join()
    assert ended == {"code": 908}
    assert code("cuStreamEndCapture", s, byref(c_void_p())) == 0


def _current() -> c_void_p:
    held = c_void_p()
    cu.call("cuCtxGetCurrent", byref(held))
    return held


def test_an_event_recorded_in_a_capture_cannot_be_waited_on_by_the_host(sim):
    s, e = stream(), event()
    cu.call("cuStreamBeginCapture_v2", s, cu.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
    cu.call("cuEventRecord", e, s)
    assert code("cuEventQuery", e) == 907 and code("cuEventSynchronize", e) == 907
    graph = c_void_p()
    cu.call("cuStreamEndCapture", s, byref(graph))
    assert graph.value
