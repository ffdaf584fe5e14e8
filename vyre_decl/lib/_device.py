"""Device arrays in lib: a resident buffer of a CUDA backend, or a CUDA array of another library
(``__cuda_array_interface__``: CuPy, Numba, PyTorch; DLPack) taken without a copy, with the
producer's queued work ordered before ours (backends/cuda/interop.py), the routine run over
resident buffers, and its outputs returned as resident buffers: nothing goes through the host.

This covers the whole-array reductions and scans whose routine takes the buffer's type as it is
(numpy's accumulator is that type: float32/float64/int64/uint64 sums; min/max of every routine
type); other functions, dtypes or arguments are L021/L022 with a Fix that keeps the values exact."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..routines import routine
from ._core import check_backend, fail

__all__ = ["is_device", "device_call", "resident", "DEVICE_ROUTINES"]

KDL_CUDA = 2
_SAME = ("float32", "float64", "int64", "uint64")  # numpy's accumulator is the type itself
_FLOATS = ("float32", "float64")  # mean/var of integers are float64 on the host: no routine takes them as they are
_ANY = ("float32", "float64", "int32", "uint32", "int64", "uint64")
# lib function -> (routine for floats, routine for integers, the buffer types it takes)
DEVICE_ROUTINES: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "sum": ("reduce.sum", "reduce.sum", _SAME), "prod": ("reduce.prod", "reduce.prod", _SAME),
    "min": ("lib.minimum", "reduce.min", _ANY), "max": ("lib.maximum", "reduce.max", _ANY),
    "nanmin": ("lib.nanmin", "reduce.min", _ANY), "nanmax": ("lib.nanmax", "reduce.max", _ANY),
    "cumsum": ("scan.sum", "scan.sum", _SAME), "exclusive_cumsum": ("scan.exclusive_sum", "scan.exclusive_sum", _SAME),
    "cummin": ("lib.cumminimum", "scan.min", _ANY), "cummax": ("lib.cummaximum", "scan.max", _ANY),
    "mean": ("reduce.mean", "reduce.mean", _FLOATS), "var": ("reduce.var", "reduce.var", _FLOATS),  # var: ddof=0
}


def _ndim(x: Any) -> int:
    """The number of axes of a device array (a resident buffer: 1)."""
    from ..backends.cuda.memory import DeviceBuffer
    if isinstance(x, DeviceBuffer):
        return 1
    if hasattr(x, "__cuda_array_interface__"):
        return len(x.__cuda_array_interface__["shape"])
    return len(getattr(x, "shape", (0,)))


def _cuda_dlpack(x: Any) -> bool:
    try:
        return bool(hasattr(x, "__dlpack__") and int(x.__dlpack_device__()[0]) == KDL_CUDA)
    except (TypeError, ValueError, AttributeError):
        return False


def is_device(x: Any) -> bool:
    """Whether ``x`` lives on a CUDA device: a resident buffer, a ``__cuda_array_interface__``
    array or a DLPack tensor of a CUDA device (numpy's own DLPack arrays are host arrays)."""
    if isinstance(x, np.ndarray):
        return False
    from ..backends.cuda.memory import DeviceBuffer
    return isinstance(x, DeviceBuffer) or hasattr(x, "__cuda_array_interface__") or _cuda_dlpack(x)


def resident(where: str, x: Any, backend: Any) -> tuple[Any, Any]:
    """(a resident buffer of ``backend`` viewing ``x``, the backend); L021 for a buffer of
    another backend or a backend without resident buffers."""
    be = check_backend(where, "cuda" if backend == "auto" else backend)
    if not hasattr(be, "wrap") or "graphs" not in getattr(be, "capabilities", ()):
        raise fail("L021", where, f"a device array given with backend={getattr(be, 'name', be)!r}, which has no "
                   "resident buffers", "pass backend='cuda' (or the CUDA backend that owns the buffer)")
    return view(where, x, be), be


def view(where: str, x: Any, be: Any) -> Any:
    """A resident buffer of the CUDA backend ``be`` viewing the device array ``x``: ``x`` itself
    (L021 where it belongs to another backend), a wrapped ``__cuda_array_interface__`` array or an
    imported DLPack tensor."""
    from ..backends.cuda.memory import DeviceBuffer
    if isinstance(x, DeviceBuffer):
        if x.memory is not getattr(be, "_memory", None):
            raise fail("L021", where, f"{x!r} belongs to another backend than {be!r}",
                       "pass backend= the backend that allocated the buffer")
        return x
    if hasattr(x, "__cuda_array_interface__"):
        return be.wrap(x)
    return be.from_dlpack(x)


def device_call(where: str, x: Any, backend: Any, axis: Any = None, **unsupported: Any) -> Any:
    """``lib.<where>`` of a device array over every element, as resident buffers: the routine's
    output buffer (one element for a reduction, len(x) for a scan; the caller frees it)."""
    from ._devaxes import ROW_FOLDS, ROW_SCANS, axis_fold, axis_scan
    given = [k for k, v in unsupported.items() if v not in (None, False)]
    nd = _ndim(x)
    if where in ROW_FOLDS and not given and axis is not None and nd > 1:
        return axis_fold(where, x, backend, axis)
    if where in ROW_SCANS and not given and axis is not None and nd > 1:
        return axis_scan(where, x, backend, axis)
    if where not in DEVICE_ROUTINES or given or axis not in (None, 0, -1, (0,), (-1,)) or (axis is not None and nd > 1):
        what = f"{', '.join(given)}=" if given else f"axis={axis!r}" if where in DEVICE_ROUTINES else "this function"
        raise fail("L022", where, f"lib.{where} of a device array takes no {what} (device arrays: the whole-array "
                   f"{', '.join(sorted(DEVICE_ROUTINES))} without dtype/out/keepdims)",
                   "leave those arguments out, or download the array (backend.download(buf), np.asarray of the "
                   "library's array) and call lib on the host copy")
    buf, be = resident(where, x, backend)
    float_rid, int_rid, takes = DEVICE_ROUTINES[where]
    name = np.dtype(buf.dtype.storage_dtype).name
    if name not in takes or buf.dtype.value_type != buf.dtype:
        raise fail("L021", where, f"lib.{where} of a device array of {name} (numpy's accumulator or the routine's "
                   f"types differ: it takes {', '.join(takes)} on the device)",
                   "pass a device array of one of those types, or download it and call lib on the host copy "
                   "(which widens exactly)")
    if buf.count == 0 and where in ("min", "max", "nanmin", "nanmax"):
        raise fail("L005", where, f"{where} of an empty device array has no value", "pass at least one element")
    rid = float_rid if name.startswith("float") else int_rid
    return routine(rid).resident(buf, backend=be)
