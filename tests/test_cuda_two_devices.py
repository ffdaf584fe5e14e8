"""Backends of two GPUs used from one thread and from several (issue 25, item 2; marked gpu, needs
two devices). On 6baef07 the second backend's calls ran in the first's context
(``a.upload`` after creating ``b``: CUDA_ERROR_INVALID_VALUE from cuMemsetD8Async) and closing one
left the other's calls in a destroyed context (CUDA_ERROR_CONTEXT_IS_DESTROYED from cuMemFree_v2)."""

from __future__ import annotations

import gc
import threading

import numpy as np
import pytest

from vyre_decl.backends.cuda import cuda_available, cuda_device_count

from test_backends import VADD

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not cuda_available() or cuda_device_count() < 2,
                                                  reason="needs two CUDA GPUs")]

X = np.arange(10_000, dtype=np.uint32)


def _exercise(be, k: int) -> None:
    """Every kind of call of one backend: transfers, numpy and resident dispatches, graphs."""
    a = be.upload(X + k)
    assert be.download(a).tolist() == (X + k).tolist()
    np.testing.assert_array_equal(be.dispatch(VADD, [X, X + k])[0], 2 * X + k)
    pipe = be.compile(VADD)
    out = be.allocate("u32", X.size)
    pipe.dispatch_resident([a, a, out])
    np.testing.assert_array_equal(be.download(out), 2 * (X + k))
    graph = be.sequence([(pipe, [a, out, out])]).capture()
    np.testing.assert_array_equal(graph.replay_and_read([out])[0], 3 * (X + k))
    graph.close()
    be.free(a)


def test_interleaved_calls_in_one_thread():
    from vyre_decl.backends.cuda import CudaBackend

    a = CudaBackend(device=0)
    b = CudaBackend(device=1)
    a.upload(np.arange(10, dtype=np.uint32))  # the review's reproduction
    pa, pb = a.compile(VADD), b.compile(VADD)
    bufs_a = [a.upload(X), a.upload(X), a.allocate("u32", X.size)]
    bufs_b = [b.upload(X), b.upload(X), b.allocate("u32", X.size)]
    for _ in range(50):  # steady-state launches alternate between the devices
        pa.dispatch_resident(bufs_a)
        pb.dispatch_resident(bufs_b)
    bound_a, bound_b = pa.bind(bufs_a), pb.bind(bufs_b)
    for _ in range(20):
        bound_a()
        bound_b()
    for k in range(3):
        _exercise(a, k)
        _exercise(b, k + 10)
    np.testing.assert_array_equal(a.download(bufs_a[2]), 2 * X)
    np.testing.assert_array_equal(b.download(bufs_b[2]), 2 * X)
    pending = [a.dispatch_async(VADD, [X, X]), b.dispatch_async(VADD, [X, X])]
    assert all(np.array_equal(p.result()[0], 2 * X) for p in pending)
    a.close()
    b.close()


@pytest.mark.parametrize("first", [0, 1])
def test_closing_one_device_leaves_the_other_working(first):
    from vyre_decl.backends.cuda import CudaBackend

    backends = [CudaBackend(device=0), CudaBackend(device=1)]
    for be in backends:
        _exercise(be, 1)
        dropped = be.dispatch_async(VADD, [X, X])  # collected later, in whatever context is current
        del dropped
    backends[first].close()
    gc.collect()
    other = backends[1 - first]
    _exercise(other, 2)
    other.close()
    again = CudaBackend(device=first)  # the closed device's primary context comes back
    _exercise(again, 3)
    again.close()


def test_threads_share_two_devices():
    from vyre_decl.backends.cuda import CudaBackend

    backends = [CudaBackend(device=0), CudaBackend(device=1)]
    errors: list[BaseException] = []

    def work(seed: int) -> None:
        try:
            for k in range(4):
                _exercise(backends[(seed + k) % 2], seed)
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for be in backends:
        be.close()
