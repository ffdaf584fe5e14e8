"""The interop room: foreign CUDA memory viewed as resident buffers without a copy, through
``__cuda_array_interface__`` (``wrap``) or DLPack (``from_dlpack``), ordered after the producer's
queued work on the device. Exports live beside the buffer (``DeviceBuffer.__dlpack__`` and
``__cuda_array_interface__``).

The producer's stream: the one named by ``stream=``; else the interface's own (version 3: its
``stream``, None meaning "no wait needed"); else — version 2, no ``stream`` key (PyTorch), or a
DLPack producer that takes no stream — the legacy default stream and this thread's per-thread
default stream, where such producers queue their work unless told otherwise. Our stream waits for
an event recorded there: the GPU orders the work, the host does not wait.
"""

from __future__ import annotations

from ctypes import byref, c_size_t
from typing import Any

import numpy as np

from ... import libcuda as cu
from ...ir.diagnostics import VyreError
from .dlpack import KDL_CUDA, import_capsule
from .memory import DeviceBuffer, Memory, dtype_of

__all__ = ["wrap", "from_dlpack"]


_DEFAULT_STREAMS = (cu.CU_STREAM_LEGACY, cu.CU_STREAM_PER_THREAD)


def stream_handle(stream: Any, where: str) -> int:
    """The CUstream handle of ``stream``: an int, or a stream object of PyTorch (``cuda_stream``),
    CuPy (``ptr``) or the CUDA stream protocol (``__cuda_stream__``)."""
    if hasattr(stream, "__cuda_stream__"):
        stream = stream.__cuda_stream__()[1]
    else:
        stream = getattr(stream, "cuda_stream", getattr(stream, "ptr", stream))
    if isinstance(stream, bool) or not isinstance(stream, int) or stream < 0:
        raise VyreError.one("D012", f"{stream!r} is not a CUDA stream", where,
                            "pass the producer's stream: a CUstream handle (int), torch.cuda.Stream or "
                            "cupy.cuda.Stream")
    return stream


def _producer_streams(cai: dict[str, Any], stream: Any) -> tuple[int, ...]:
    """The streams whose queued work must finish before ours reads ``cai``'s memory."""
    if stream is not None:
        return (stream_handle(stream, "wrap(stream=...)"),)
    if int(cai.get("version", 0)) >= 3 and "stream" in cai:
        given = cai["stream"]
        if given is None:  # the producer says no wait is needed
            return ()
        if given != 0:  # 0 is ambiguous (the interface forbids it): wait for both defaults
            return (stream_handle(given, "__cuda_array_interface__['stream']"),)
    return _DEFAULT_STREAMS


def wrap(memory: Memory, obj: Any, stream: Any = None) -> DeviceBuffer:
    """A resident buffer viewing foreign device memory that exposes ``__cuda_array_interface__``
    (CuPy, PyTorch, Numba, ...): no copy. ``obj`` is kept alive by the buffer. Our later work waits
    on the GPU for the work queued so far on the producer's stream (``stream``, else the
    interface's, else the default streams: see the module docstring)."""
    memory.device.alive()
    cai = obj.__cuda_array_interface__
    shape = tuple(int(n) for n in cai["shape"])
    dtype = np.dtype(cai["typestr"])
    where = "wrap"
    if dtype == np.bool_:
        raise VyreError.one("D012", "bool arrays hold 1-byte elements; vyre bool buffers hold 4-byte words",
                            where, "convert it to uint32 (0/1) first")
    strides = cai.get("strides")
    if strides is not None:
        want: list[int] = []
        step = dtype.itemsize
        for n in reversed(shape):
            want.insert(0, step)
            step *= n
        if tuple(int(x) for x in strides) != tuple(want) and int(np.prod(shape)) > 1:
            raise VyreError.one("D012", f"only C-contiguous device arrays can be wrapped (strides {tuple(strides)})",
                                where, "make it contiguous (e.g. .contiguous() / cupy.ascontiguousarray)")
    t = dtype_of(np.empty(0, dtype))
    producers = _producer_streams(cai, stream)
    count = int(np.prod(shape)) if shape else 1
    ptr = int(cai["data"][0])
    check_extent(memory, ptr, count * t.size, "wrap")
    for handle in producers:
        memory.device.order_after(handle)
    return memory.adopt(ptr, t, count, obj)


def check_extent(memory: Memory, ptr: int, nbytes: int, where: str) -> None:
    """Refuse (D017) foreign memory that is not one allocation of this backend's context: a bad
    address would otherwise fault the next kernel and poison the context."""
    if nbytes == 0:
        return
    base, size = cu.CUdeviceptr(), c_size_t()
    result = cu.function("cuMemGetAddressRange_v2")(byref(base), byref(size), cu.CUdeviceptr(ptr))
    if result or not (base.value <= ptr and ptr + nbytes <= base.value + size.value):
        what = "is not device memory of this backend's context" if result else \
            f"runs past its allocation ({ptr - base.value} + {nbytes} bytes of {size.value})"
        raise VyreError.one("D017", f"the foreign array at 0x{ptr:x} {what}", where,
                            "pass an array allocated on this backend's GPU (the same process and device) whose "
                            "shape and strides lie inside its memory")


def from_dlpack(memory: Memory, obj: Any) -> DeviceBuffer:
    """A resident buffer viewing a CUDA tensor of this device through DLPack (an object with
    ``__dlpack__`` or a capsule): no copy; the producer's queued work is ordered before ours."""
    memory.device.alive()
    ordinal = memory.device.info.ordinal
    if hasattr(obj, "__dlpack_device__"):
        kind, index = obj.__dlpack_device__()
        if (int(kind), int(index)) != (KDL_CUDA, ordinal):
            raise VyreError.one("D016", f"the tensor lives on DLPack device ({int(kind)}, {int(index)}), not CUDA "
                                f"device {ordinal}", "from_dlpack", "move it to this backend's GPU first")
    producers: tuple[int, ...] = ()  # the producer orders its work before our stream itself
    if hasattr(obj, "__dlpack__"):
        try:
            capsule = obj.__dlpack__(stream=memory.device.stream_handle)
        except TypeError:  # a producer that takes no stream: wait for the default streams
            capsule, producers = obj.__dlpack__(), _DEFAULT_STREAMS
        memory.device.forget_current()  # the producer's code may have made another context current
    else:  # a bare capsule: whoever made it queued on the default streams, as far as we know
        capsule, producers = obj, _DEFAULT_STREAMS
    memory.device.alive()
    ptr, t, count, owner = import_capsule(capsule, memory.device.info.ordinal)
    check_extent(memory, ptr, count * t.size, "from_dlpack")
    for handle in producers:
        memory.device.order_after(handle)
    return memory.adopt(ptr, t, count, owner)
