"""The interop room: foreign CUDA memory viewed as resident buffers without a copy, through
``__cuda_array_interface__`` (``wrap``) or DLPack (``from_dlpack``). Exports live beside the buffer
(``DeviceBuffer.__dlpack__`` and ``__cuda_array_interface__``)."""

from __future__ import annotations

from ctypes import byref, c_size_t, c_void_p
from typing import Any

import numpy as np

from ... import libcuda as cu
from ...ir.diagnostics import VyreError
from .dlpack import KDL_CUDA, import_capsule
from .memory import DeviceBuffer, Memory, dtype_of

__all__ = ["wrap", "from_dlpack"]


def wrap(memory: Memory, obj: Any) -> DeviceBuffer:
    """A resident buffer viewing foreign device memory that exposes ``__cuda_array_interface__``
    (CuPy, PyTorch, Numba, ...): no copy. ``obj`` is kept alive by the buffer; its stream is
    waited for, so work queued on it before the call is visible to our kernels."""
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
    stream = cai.get("stream")
    if stream:  # the producer's stream: wait for what it has queued
        memory.device.checked("cuStreamSynchronize", c_void_p(int(stream)))
    count = int(np.prod(shape)) if shape else 1
    ptr = int(cai["data"][0])
    check_extent(memory, ptr, count * t.size, "wrap")
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
    if hasattr(obj, "__dlpack__"):
        try:
            capsule = obj.__dlpack__(stream=memory.device.stream_handle)
        except TypeError:
            capsule = obj.__dlpack__()
    else:
        capsule = obj
    ptr, t, count, owner = import_capsule(capsule, memory.device.info.ordinal)
    check_extent(memory, ptr, count * t.size, "from_dlpack")
    return memory.adopt(ptr, t, count, owner)
