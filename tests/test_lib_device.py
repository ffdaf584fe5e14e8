"""Device arrays in lib (issue 29 item 5): a resident buffer, a ``__cuda_array_interface__`` array and
a DLPack tensor go in without a copy and the result comes back as a resident buffer, with no upload
or download on the way, holding the reference backend's bits (simulated H100 with
VYRE_DECL_CUDA_SIM=h100, or a GPU)."""

from __future__ import annotations

import numpy as np
import pytest

import vyre_decl
from vyre_decl import lib
from vyre_decl.backends.cuda import cuda_available
from vyre_decl.backends.cuda.memory import DeviceBuffer
from lib_grid import same_bits

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not cuda_available(), reason="no CUDA GPU: libcuda.so.1 cannot be loaded or reports no device")]


class _Interface:
    """Another library's array: only ``__cuda_array_interface__`` (as Numba's or CuPy's)."""

    def __init__(self, buf):
        self.buf = buf
        self.__cuda_array_interface__ = buf.__cuda_array_interface__


class _DLPack:
    """Another library's tensor: only DLPack."""

    def __init__(self, buf):
        self.buf = buf

    def __dlpack__(self, stream=None, **kw):
        return self.buf.__dlpack__(stream=stream)

    def __dlpack_device__(self):
        return self.buf.__dlpack_device__()


def _input(dtype, name, n=5000):
    rng = np.random.default_rng(3)
    if np.dtype(dtype).kind == "f":
        x = rng.standard_normal(n).astype(dtype)
        if name in ("min", "max", "nanmax", "cummin", "cummax"):
            x[7] = np.nan  # the sums stay numbers
        return x
    return rng.integers(-1000 if np.dtype(dtype).kind == "i" else 0, 1000, n).astype(dtype)


CASES = [("sum", np.float32), ("sum", np.int64), ("prod", np.float64), ("min", np.float32), ("max", np.int32),
         ("nanmax", np.float64), ("cumsum", np.float32), ("cumsum", np.uint64), ("exclusive_cumsum", np.int64),
         ("cummin", np.float32), ("cummax", np.uint32)]


@pytest.mark.parametrize("kind", ["buffer", "interface", "dlpack"])
@pytest.mark.parametrize("name, dtype", CASES, ids=[f"{n}-{np.dtype(d).name}" for n, d in CASES])
def test_device_in_device_out(name, dtype, kind, monkeypatch):
    cuda = vyre_decl.acquire("cuda")
    x = _input(dtype, name)
    buf = cuda.upload(x)
    given = {"buffer": buf, "interface": _Interface(buf), "dlpack": _DLPack(buf)}[kind]
    want = np.asarray(getattr(lib, name)(x, backend="reference"))

    def no_copy(*args, **kw):
        raise AssertionError("a host copy during a device call")

    with monkeypatch.context() as m:
        for attr in ("upload", "download", "upload_at", "download_range"):
            m.setattr(cuda, attr, no_copy)
        got = getattr(lib, name)(given, backend=cuda)
    assert isinstance(got, DeviceBuffer)
    host = cuda.download(got)
    assert same_bits(host, np.atleast_1d(want)), (host, want)  # a reduction: a buffer of one element
    got.free()
    buf.free()


def test_device_errors_are_coded():
    cuda = vyre_decl.acquire("cuda")
    buf = cuda.upload(np.arange(6, dtype=np.int32))
    cases = [(lambda: lib.sum(buf, backend=cuda), "L021"),  # numpy's accumulator is int64
             (lambda: lib.sum(buf, keepdims=True, backend=cuda), "L022"),
             (lambda: lib.topk(buf, 2, backend=cuda), "L022"),
             (lambda: lib.sum(buf, backend="reference"), "L021"),
             (lambda: lib.min(cuda.upload(np.zeros(0, np.float32)), backend=cuda), "L005")]
    for call, code in cases:
        with pytest.raises(vyre_decl.VyreError) as info:
            call()
        assert info.value.diagnostics[0].code == code and "Fix" in str(info.value)
    buf.free()


FUSED = lib.fuse(lambda a, b: lib.sqrt(lib.absolute(a * b + 1.0)) - 0.5)


@pytest.mark.parametrize("kind", ["buffer", "interface", "dlpack"])
def test_fuse_and_elementwise_device_in_device_out(kind, monkeypatch):
    cuda = vyre_decl.acquire("cuda")
    rng = np.random.default_rng(4)
    x, y = (rng.standard_normal(3001).astype(np.float32) for _ in range(2))
    bx, by = cuda.upload(x), cuda.upload(y)
    wrap = {"buffer": lambda b: b, "interface": _Interface, "dlpack": _DLPack}[kind]
    want = FUSED(x, y, backend="reference")
    want_max = lib.maximum(x, y, backend="reference")

    def no_copy(*args, **kw):
        raise AssertionError("a host copy during a device call")

    with monkeypatch.context() as m:
        for attr in ("upload", "download", "upload_at", "download_range"):
            m.setattr(cuda, attr, no_copy)
        got = FUSED(wrap(bx), wrap(by), backend=cuda)
        got_max = lib.maximum(wrap(bx), wrap(by), backend=cuda)
    assert isinstance(got, DeviceBuffer) and isinstance(got_max, DeviceBuffer)
    assert same_bits(cuda.download(got), want) and same_bits(cuda.download(got_max), want_max)
    for buf in (got, got_max, bx, by):
        buf.free()


def test_fuse_plan_is_one_launch_a_replay():
    cuda = vyre_decl.acquire("cuda")
    x = np.linspace(-3, 3, 1000, dtype=np.float32)
    plan = FUSED.plan(x, x[::-1].copy(), backend=cuda)
    try:
        before = plan.pipeline.resident_launches
        plan.replay()
        plan.replay()
        assert plan.pipeline.resident_launches - before == 2
        assert same_bits(cuda.download(plan.outputs[0]), FUSED(x, x[::-1].copy(), backend="reference"))
    finally:
        plan.close()
    assert all(b.freed for b in plan.outputs)


def test_fuse_device_errors_are_coded():
    cuda = vyre_decl.acquire("cuda")
    buf = cuda.upload(np.arange(6, dtype=np.float32))

    class Strided(_Interface):
        def __init__(self, b):
            super().__init__(b)
            self.__cuda_array_interface__ = dict(b.__cuda_array_interface__, shape=(3,), strides=(8,))

    cases = [(lambda: FUSED(buf, np.ones(6, np.float32), backend=cuda), "L023"),  # host and device mixed
             (lambda: lib.exp(Strided(buf), backend=cuda), "L022"),
             (lambda: lib.exp(buf, backend="reference"), "L021"),
             (lambda: lib.topk(buf, 2, backend=cuda), "L022")]
    for call, code in cases:
        with pytest.raises(vyre_decl.VyreError) as info:
            call()
        assert info.value.diagnostics[0].code == code and "Fix" in str(info.value)
    buf.free()


SORTS = [np.uint32, np.int32, np.float32, np.uint64, np.int64, np.float64]


@pytest.mark.parametrize("dtype", SORTS, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name", ["sort", "argsort"])
def test_sort_device_in_device_out(name, dtype, monkeypatch):
    cuda = vyre_decl.acquire("cuda")
    rng = np.random.default_rng(6)
    x = (rng.standard_normal(2001) * 100).astype(dtype) if np.dtype(dtype).kind == "f" else \
        rng.integers(0 if np.dtype(dtype).kind == "u" else -50, 50, 2001).astype(dtype)
    if np.dtype(dtype).kind == "f":
        x[[3, 9]], x[5], x[7] = np.nan, -0.0, 0.0
    buf = cuda.upload(x)
    want = getattr(lib, name)(x, backend="reference")

    def no_copy(*args, **kw):
        raise AssertionError("a host copy during a device call")

    with monkeypatch.context() as m:
        for attr in ("upload", "download", "upload_at", "download_range"):
            m.setattr(cuda, attr, no_copy)
        got = getattr(lib, name)(_Interface(buf), backend=cuda)
    assert isinstance(got, DeviceBuffer)
    host = cuda.download(got)
    assert host.dtype == want.dtype and same_bits(host, want)
    got.free()
    buf.free()


@pytest.mark.parametrize("name", ["mean", "var"])
def test_moments_device(name):
    cuda = vyre_decl.acquire("cuda")
    x = np.random.default_rng(8).standard_normal(5000).astype(np.float32)
    buf = cuda.upload(x)
    got = getattr(lib, name)(buf, backend=cuda)
    assert same_bits(cuda.download(got), np.atleast_1d(getattr(lib, name)(x, backend="reference")))
    got.free()
    for call in (lambda: lib.var(buf, keepdims=True, backend=cuda), lambda: lib.std(buf, dtype=np.float64, backend=cuda),
                 lambda: lib.sort(buf, values=buf, backend=cuda)):
        with pytest.raises(vyre_decl.VyreError) as info:
            call()
        assert info.value.diagnostics[0].code == "L022"
    ints = cuda.upload(np.arange(5, dtype=np.int32))
    with pytest.raises(vyre_decl.VyreError) as info:
        lib.mean(ints, backend=cuda)
    assert info.value.diagnostics[0].code == "L021"
    ints.free()
    buf.free()


def test_empty_device_arrays():
    """An empty device array gives an empty resident buffer of numpy's result dtype (no launch)."""
    cuda = vyre_decl.acquire("cuda")
    buf = cuda.upload(np.zeros(0, np.float32))
    for got, dtype in [(lib.exp(buf, backend=cuda), np.float32), (FUSED(buf, buf, backend=cuda), np.float32),
                       (lib.sort(buf, backend=cuda), np.float32), (lib.argsort(buf, backend=cuda), np.int64)]:
        host = cuda.download(got)
        assert host.size == 0 and host.dtype == dtype, (host, dtype)
        got.free()
    buf.free()


class _Shaped(_Interface):
    """A C-contiguous N-D array of another library (its interface carries the shape)."""

    def __init__(self, buf, shape):
        super().__init__(buf)
        self.__cuda_array_interface__ = dict(buf.__cuda_array_interface__, shape=shape)


@pytest.mark.parametrize("name, dtype, axis", [("sum", np.float32, -1), ("sum", np.float32, (1, 2)),
                                               ("max", np.float64, 2), ("min", np.int32, (-2, -1)),
                                               ("prod", np.int64, 2), ("sum", np.float32, (0, 1, 2)),
                                               ("sum", np.float32, 0), ("sum", np.float64, 1), ("nanmax", np.float32, (0, 1)),
                                               ("min", np.uint32, 1), ("sum", np.int64, ())])
def test_axis_reductions_on_the_device(name, dtype, axis):
    """Over a run of adjacent axes of an N-D device array: the host's index-order fold per output
    (every axis: the whole-array routine), the same bits, a resident buffer of the outputs in C
    order; axes not adjacent are L022."""
    cuda = vyre_decl.acquire("cuda")
    x = _input(dtype, name, 3 * 5 * 7).reshape(3, 5, 7)
    buf = cuda.upload(x.ravel())
    got = getattr(lib, name)(_Shaped(buf, (3, 5, 7)), axis=axis, backend=cuda)
    want = np.atleast_1d(getattr(lib, name)(x, axis=axis, backend="reference"))
    assert same_bits(cuda.download(got), want.ravel())
    got.free()
    with pytest.raises(vyre_decl.VyreError) as info:
        getattr(lib, name)(_Shaped(buf, (3, 5, 7)), axis=(0, 2), backend=cuda)
    assert info.value.diagnostics[0].code == "L022"
    buf.free()


@pytest.mark.parametrize("name, dtype, shape, axis", [("cumsum", np.float32, (3, 5, 7), 0), ("cumsum", np.float64, (3, 5, 7), 1),
                                                      ("cumsum", np.int64, (3, 5, 7), 2), ("cummin", np.float32, (4, 6), 0),
                                                      ("cummax", np.int32, (4, 6), -1), ("cumsum", np.uint64, (2, 1, 3), 1)])
def test_axis_scans_on_the_device(name, dtype, shape, axis):
    """Along one axis of an N-D device array: the host's rows scan, the result in C order."""
    cuda = vyre_decl.acquire("cuda")
    x = _input(dtype, name, int(np.prod(shape))).reshape(shape)
    buf = cuda.upload(x.ravel())
    got = getattr(lib, name)(_Shaped(buf, shape), axis=axis, backend=cuda)
    want = getattr(lib, name)(x, axis=axis, backend="reference")
    assert same_bits(cuda.download(got), want.ravel())
    got.free()
    buf.free()


@pytest.mark.parametrize("name, dtype, axis, ddof", [("std", np.float32, None, 0), ("var", np.float64, None, 1),
                                                     ("mean", np.float32, 0, 0), ("var", np.float32, (1, 2), 0),
                                                     ("std", np.float64, 1, 1), ("var", np.float32, 2, 7),
                                                     ("mean", np.float64, None, 0), ("var", np.float32, None, 0)])
def test_moments_on_the_device(name, dtype, axis, ddof):
    """mean/var/std of a device array along axes and with any ddof: the host's bits (the routines
    over every axis for mean and var with ddof 0, the rows program otherwise)."""
    cuda = vyre_decl.acquire("cuda")
    x = _input(dtype, "sum", 3 * 5 * 7).reshape(3, 5, 7)
    buf = cuda.upload(x.ravel())
    kw = {} if name == "mean" else {"ddof": ddof}
    got = getattr(lib, name)(_Shaped(buf, (3, 5, 7)), axis=axis, backend=cuda, **kw)
    want = np.atleast_1d(getattr(lib, name)(x, axis=axis, backend="reference", **kw))
    assert same_bits(cuda.download(got), want.ravel())
    got.free()
    buf.free()
