"""Every wait for queued GPU work is bounded (issue 25, item 4; marked gpu): a kernel that spins
longer than the bound makes ``synchronize(timeout=)``, ``PendingDispatch.result(timeout=)``,
``replay_and_read(..., timeout=)``, ``run_and_read(..., timeout=)`` and — through the backend's
default bound (``CudaBackend(timeout=)``, ``VYRE_DECL_TIMEOUT``) — ``download`` and ``dispatch``
raise D013 within the bound, and the backend stays usable. On 6baef07 none of them took a bound:
each waited for the kernel."""

from __future__ import annotations

import time

import numpy as np
import pytest

from vyre_decl.backends.cuda import cuda_available
from vyre_decl.ir import VyreError

from test_cuda_lifecycle import SLOW

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not cuda_available(), reason="no CUDA GPU: libcuda.so.1 cannot be "
                                                  "loaded or reports no device"),
              pytest.mark.hardware_only("the simulated device runs queued work inside the wait for it, so no "
                                        "kernel outlives a bounded wait")]

SPIN = np.array([1 << 28], np.uint32)  # iterations of SLOW: well over a second on an H100
BOUND = 0.1


def _d013_within_bound(call):
    t0 = time.perf_counter()
    with pytest.raises(VyreError) as e:
        call()
    took = time.perf_counter() - t0
    assert e.value.codes == ["D013"] and "still running" in str(e.value), e.value
    assert took < BOUND + 0.4, took


def _spinning(be):
    pipe = be.compile(SLOW)
    n, out = be.upload(SPIN), be.allocate("u32", 1)
    return pipe, [n, out]


def _usable(be, pipe, bufs):
    be.synchronize()  # no bound: waits for the spinning kernel
    be.upload_at(bufs[0], 0, np.array([5], np.uint32))
    pipe.dispatch_resident(bufs)
    acc = 1
    for i in range(5):
        acc = (acc * 3 + i) & 0xFFFFFFFF
    assert be.download(bufs[1])[0] == acc


def test_synchronize_takes_a_bound():
    from vyre_decl.backends.cuda import CudaBackend

    with CudaBackend() as be:
        pipe, bufs = _spinning(be)
        pipe.dispatch_resident(bufs)
        _d013_within_bound(lambda: be.synchronize(timeout=BOUND))
        _usable(be, pipe, bufs)
        with pytest.raises(VyreError) as e:
            be.synchronize(timeout=-1)
        assert e.value.codes == ["D008"]


def test_a_pending_dispatch_result_takes_a_bound_and_stays_pending():
    from vyre_decl.backends.cuda import CudaBackend

    with CudaBackend() as be:
        pending = be.compile(SLOW).dispatch_async([SPIN])
        _d013_within_bound(lambda: pending.result(timeout=BOUND))
        assert not pending.done()
        (out,) = pending.result()  # waits; the same dispatch, read once it is done
        assert out.shape == (1,)
        pipe, bufs = _spinning(be)
        _usable(be, pipe, bufs)


def test_graph_replays_and_sequences_take_a_bound():
    from vyre_decl.backends.cuda import CudaBackend

    with CudaBackend() as be:
        pipe, bufs = _spinning(be)
        graph = be.sequence([(pipe, bufs)]).capture()
        _d013_within_bound(lambda: graph.replay_and_read([bufs[1]], timeout=BOUND))
        be.synchronize()
        _d013_within_bound(lambda: be.sequence([(pipe, bufs)]).run_and_read([bufs[1]], timeout=BOUND))
        _usable(be, pipe, bufs)
        graph.close()


def test_the_backend_default_bounds_downloads_and_dispatches(monkeypatch):
    from vyre_decl.backends.cuda import CudaBackend

    with CudaBackend(timeout=BOUND) as be:
        assert be.timeout == BOUND
        pipe, bufs = _spinning(be)
        pipe.dispatch_resident(bufs)
        _d013_within_bound(lambda: be.download(bufs[1]))
        be.synchronize(timeout=60)  # a bound of its own overrides the default
        _d013_within_bound(lambda: pipe.dispatch([SPIN]))
        be.synchronize(timeout=60)
        _usable(be, pipe, bufs)
    monkeypatch.setenv("VYRE_DECL_TIMEOUT", "0.1")
    with CudaBackend() as be:
        assert be.timeout == 0.1
        pipe, bufs = _spinning(be)
        pipe.dispatch_resident(bufs)
        _d013_within_bound(be.synchronize)
        be.synchronize(timeout=60)
