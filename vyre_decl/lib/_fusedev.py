"""lib's generated elementwise and fused programs over resident buffers: a device array's dtype and
shape for the trace, and a prepared launch (``FusedPlan``) whose inputs are resident buffers (device
arrays taken without a copy, or host arrays uploaded once) and whose outputs are resident buffers;
replaying it is one launch and nothing goes through the host."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ._core import check_backend, fail
from ._device import is_device, view

__all__ = ["DeviceInput", "device_leaf", "FusedPlan", "prepare", "any_device"]


def _contiguous(shape: tuple[int, ...], strides: Any, itemsize: int) -> bool:
    if strides is None or int(np.prod(shape, dtype=np.int64)) <= 1:
        return True
    want: list[int] = []
    step = itemsize
    for n in reversed(shape):
        want.insert(0, step)
        step *= n
    return tuple(int(s) for s in strides) == tuple(want)


def device_leaf(where: str, x: Any, backend: Any) -> tuple[Any, np.dtype, tuple[int, ...]]:
    """(what a plan binds, the numpy dtype, the shape) of a device array in a trace: a resident
    buffer is 1-D; a ``__cuda_array_interface__`` array must be C-contiguous (L022 otherwise); a
    DLPack tensor is imported now (its ``shape`` where it tells one, else 1-D)."""
    from ..backends.cuda.memory import DeviceBuffer
    if not isinstance(x, DeviceBuffer) and not hasattr(x, "__cuda_array_interface__"):
        be = check_backend(where, "cuda" if backend in ("auto", None) else backend)
        if not hasattr(be, "from_dlpack"):
            raise fail("L021", where, f"a DLPack tensor given with backend={getattr(be, 'name', be)!r}, which has no "
                       "resident buffers", "pass backend='cuda' (or the CUDA backend of the tensor's GPU)")
        shape = tuple(int(n) for n in getattr(x, "shape", ()))
        buf = be.from_dlpack(x)
        return buf, device_leaf(where, buf, backend)[1], shape if int(np.prod(shape)) == buf.count else (buf.count,)
    if isinstance(x, DeviceBuffer):
        if x.dtype.name.lower() in ("bool", "bf16"):
            raise fail("L021", where, f"a device buffer of {x.dtype} (4-byte bool words or bfloat16 bits, not a numpy "
                       "dtype lib computes with on the device)", "pass a buffer of an integer or float type, or "
                       "download it and call lib on the host copy")
        return x, np.dtype(x.dtype.storage_dtype), (x.count,)
    cai = x.__cuda_array_interface__
    dtype, shape = np.dtype(cai["typestr"]), tuple(int(n) for n in cai["shape"])
    if not _contiguous(shape, cai.get("strides"), dtype.itemsize):
        raise fail("L022", where, f"a device array with strides {tuple(cai['strides'])} (lib's device path takes "
                   "C-contiguous arrays)", "make it contiguous on the device first (.contiguous(), "
                   "cupy.ascontiguousarray)")
    return x, dtype.newbyteorder("="), shape


@dataclass(frozen=True)
class DeviceInput:
    """A device array among a trace's inputs: what a plan binds, and its dtype."""
    value: Any
    dtype: np.dtype


class FusedPlan:
    """One generated program bound to resident buffers: ``replay()`` launches it (asynchronously,
    on the backend's stream), ``outputs`` hold the results, ``close()`` frees what the plan owns
    (the outputs it allocated unless handed out with ``release_outputs``, the inputs it uploaded)."""

    def __init__(self, backend: Any, pipeline: Any, inputs: list[Any], outputs: list[Any], owned: list[Any]) -> None:
        self.backend, self.pipeline, self.inputs, self.outputs = backend, pipeline, inputs, outputs
        self._owned = owned + outputs

    def replay(self) -> None:
        if self.outputs and self.outputs[0].count:
            self.pipeline.dispatch_resident(self.inputs + self.outputs)

    def release_outputs(self) -> list[Any]:
        """The outputs, which the caller frees from now on."""
        self._owned = [b for b in self._owned if all(b is not o for o in self.outputs)]
        return self.outputs

    def close(self) -> None:
        for buf in self._owned:
            if not buf.freed:
                buf.free()
        self._owned = []


def _resident(where: str, x: Any, be: Any, owned: list[Any]) -> Any:
    if isinstance(x, np.ndarray):
        buf = be.upload(np.ascontiguousarray(x).ravel())
        owned.append(buf)
        return buf
    return view(where, x, be)


def prepare(where: str, program: Any, inputs: Sequence[Any], out_types: Sequence[str], count: int,
            backend: Any) -> FusedPlan:
    """``program`` (inputs then outputs of ``count`` elements of ``out_types``) bound on the CUDA
    backend ``backend`` to resident buffers for ``inputs`` (device arrays or host arrays)."""
    be = check_backend(where, "cuda" if backend == "auto" else backend)
    if not hasattr(be, "wrap") or "graphs" not in getattr(be, "capabilities", ()):
        raise fail("L021", where, f"device arrays given with backend={getattr(be, 'name', be)!r}, which has no "
                   "resident buffers", "pass backend='cuda' (or the CUDA backend that owns the buffers)")
    owned: list[Any] = []
    try:
        bufs = [_resident(where, x, be, owned) for x in inputs]
        pipeline = be.compile(program) if count else None  # nothing to launch for an empty result
        outs = [be.allocate(t, count) for t in out_types]
    except BaseException:
        for buf in owned:
            buf.free()
        raise
    return FusedPlan(be, pipeline, bufs, outs, owned)


def any_device(values: Sequence[Any]) -> bool:
    return any(is_device(v) for v in values)
