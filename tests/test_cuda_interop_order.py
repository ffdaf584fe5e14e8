"""Foreign memory is ordered with its producer's queued work on the GPU (issue 25, item 1; marked
gpu, needs PyTorch; CuPy for the CAI consumer case). In each test the other side's work is
provably still running when the memory changes hands (torch.cuda._sleep spins the producer's
stream first; our side spins SLOW), and 2^27 elements are handed over. On 6baef07 ``wrap()`` of a
PyTorch tensor (``__cuda_array_interface__`` version 2, no stream) did not wait: every output
read the values torch had not written yet."""

from __future__ import annotations

import numpy as np
import pytest

from vyre_decl import libcuda as cu
from vyre_decl.backends.cuda import cuda_available
from vyre_decl.ir import parse_program

from test_cuda_lifecycle import SLOW

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not cuda_available(), reason="no CUDA GPU: libcuda.so.1 cannot be "
                                                  "loaded or reports no device")]

N = 1 << 27
PLUS_ONE = parse_program("""program plus_one workgroup(256, 1, 1) {
  buffer x: read f32[] @0
  buffer y: write f32[len(x)] @1
  let i = gid.x
  if i < len(y) { y[i] = x[i] + 1.0f32 }
}""")
FILL = parse_program("""program fill workgroup(256, 1, 1) {
  buffer n: read u32[] @0
  buffer y: read_write f32[] @1
  let i = gid.x
  let acc = 1u32
  if i == 0u32 { loop k in 0u32 .. n[0u32] { acc = acc * 3u32 + k } }
  if i < len(y) { y[i] = (i % 7u32) as f32 + (acc & 0u32) as f32 }
}""")  # invocation 0 spins first: the whole grid is not done before it


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch", reason="PyTorch produces and consumes the foreign memory")


@pytest.fixture(scope="module")
def cuda(torch):
    from vyre_decl.backends.cuda import CudaBackend

    with CudaBackend() as be:
        torch.zeros(1, device="cuda")  # torch's context: the device's primary context, as ours
        yield be


@pytest.fixture(scope="module")
def pipes(cuda):
    """The kernels, loaded before any test queues work: loading a module, like allocating memory,
    may wait for the whole device, which would hide a missing wait."""
    return cuda.compile(PLUS_ONE), cuda.compile(FILL)


def _busy(stream: int) -> bool:
    """Whether work queued on ``stream`` (a CUstream handle) is still running."""
    return cu.function("cuStreamQuery")(stream) == cu.CUDA_ERROR_NOT_READY


def _torch_sleeps(torch):
    torch.cuda._sleep(1 << 31)  # about a second of spinning on torch's current stream


def test_wrap_of_a_tensor_without_a_stream_waits_for_torchs_queued_work(torch, cuda, pipes):
    x = torch.zeros(N, device="cuda")
    y = torch.full_like(x, 7.0)
    torch.cuda.synchronize()
    _torch_sleeps(torch)
    x.fill_(3.0)
    y.fill_(5.0)  # would overwrite our output if it ran after our kernel
    assert "stream" not in x.__cuda_array_interface__  # PyTorch: version 2, no stream
    pipes[0].dispatch_resident([cuda.wrap(x), cuda.wrap(y)])
    assert not torch.cuda.current_stream().query()  # torch was still writing when our kernel was queued
    cuda.synchronize()
    assert int((y == 4.0).sum()) == N


def test_wrap_honours_a_named_stream_and_a_version_3_stream(torch, cuda, pipes):
    side = torch.cuda.Stream()
    x = torch.zeros(N, device="cuda")
    y = cuda.allocate("f32", N)
    torch.cuda.synchronize()
    with torch.cuda.stream(side):
        _torch_sleeps(torch)
        x.fill_(2.0)
    pipes[0].dispatch_resident([cuda.wrap(x, stream=side), y])
    assert not side.query()  # torch is still writing on its side stream
    assert int((torch.from_dlpack(y) == 3.0).sum()) == N

    class Version3:
        def __init__(self, t, stream):
            self.__cuda_array_interface__ = {**t.__cuda_array_interface__, "version": 3, "stream": stream}

    torch.cuda.synchronize()
    with torch.cuda.stream(side):
        _torch_sleeps(torch)
        x.fill_(9.0)
    pipes[0].dispatch_resident([cuda.wrap(Version3(x, side.cuda_stream)), y])
    assert not side.query()
    assert int((torch.from_dlpack(y) == 10.0).sum()) == N


def test_from_dlpack_waits_for_torchs_queued_work(torch, cuda, pipes):
    x = torch.zeros(N, device="cuda")
    y = cuda.allocate("f32", N)
    torch.cuda.synchronize()
    _torch_sleeps(torch)
    x.fill_(6.0)
    pipes[0].dispatch_resident([cuda.from_dlpack(x), y])
    assert not torch.cuda.current_stream().query()
    assert int(np.count_nonzero(cuda.download(y) == 7.0)) == N


def _spinning_fill(cuda, pipes, y):
    """Queue FILL into ``y``: invocation 0 spins first, so the kernel is still running afterwards."""
    n = cuda.upload(np.array([1 << 26], np.uint32))
    pipes[1].dispatch_resident([n, y])
    assert _busy(cuda.stream_handle)


def test_torch_reads_our_output_after_our_kernel_through_dlpack(torch, cuda, pipes):
    y = cuda.allocate("f32", N)
    want = (torch.arange(N, device="cuda") % 7).float()
    torch.cuda.synchronize()
    _spinning_fill(cuda, pipes, y)
    t = torch.from_dlpack(y)  # torch's current stream waits for ours on the GPU
    assert bool(torch.equal(t, want))


def test_torch_reads_a_wrapped_tensor_we_wrote_after_order_before(torch, cuda, pipes):
    y = torch.full((N,), -1.0, device="cuda")
    want = (torch.arange(N, device="cuda") % 7).float()
    torch.cuda.synchronize()
    _spinning_fill(cuda, pipes, cuda.wrap(y))
    cuda.order_before(torch.cuda.current_stream())
    assert bool(torch.equal(y, want))


def test_cupy_reads_our_output_through_its_version_3_stream(cuda, pipes):
    cupy = pytest.importorskip("cupy", reason="CuPy consumes __cuda_array_interface__ with its stream")
    y = cuda.allocate("f32", N)
    want = (cupy.arange(N) % 7).astype(cupy.float32)
    cupy.cuda.Device().synchronize()
    _spinning_fill(cuda, pipes, y)
    assert y.__cuda_array_interface__["stream"] == cuda.stream_handle
    c = cupy.asarray(y)  # CuPy waits on the interface's stream
    assert int((c == want).sum()) == N
