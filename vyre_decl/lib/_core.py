"""What every ``vyre_decl.lib`` function shares: coded errors, the ``backend=`` check, and the intake
of a user's array — every numeric numpy dtype, any byte order and layout — widened *exactly* to a
dtype a routine or kernel takes, or refused with a Fix that never suggests a lossy conversion."""

from __future__ import annotations

import builtins
from typing import Any, Iterable, Sequence

import numpy as np

from ..backends import acquire
from ..backends.reference import ReferenceBackend
from ..ir.diagnostics import VyreError
from ..routines import hostpath, routine

__all__ = ["fail", "check_backend", "call", "intake", "exact", "widen", "widen_to", "narrow_back", "ROUTINE_DTYPES",
           "SIGNED", "UNSIGNED", "FLOATS", "is_bf16", "dtype_name"]

U32, I32, U64, I64 = np.dtype(np.uint32), np.dtype(np.int32), np.dtype(np.uint64), np.dtype(np.int64)
F32, F64 = np.dtype(np.float32), np.dtype(np.float64)
ROUTINE_DTYPES: tuple[np.dtype, ...] = (U32, I32, U64, I64, F32, F64)  # the routines' "numeric" set
SIGNED = tuple(np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64))
UNSIGNED = tuple(np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64))
FLOATS = tuple(np.dtype(t) for t in (np.float16, np.float32, np.float64))


def fail(code: str, where: str, message: str, fix: str) -> VyreError:
    """A coded error of ``vyre_decl.lib.<where>`` (docs/errors.md, the L table)."""
    return VyreError.one(code, message, f"vyre_decl.lib.{where}", fix)


def check_backend(where: str, backend: Any) -> Any:
    """``backend`` as given (a name or an acquired backend); anything else is L003."""
    if isinstance(backend, str):
        try:
            return acquire(backend)
        except VyreError:
            raise
    if backend is None or isinstance(backend, (bool, int, float, bytes)) or not hasattr(backend, "dispatch"):
        raise fail("L003", where, f"backend={backend!r} is neither a backend name nor a backend",
                   'pass backend="auto", "reference", "cuda" (or "cuda:N"), or vyre_decl.acquire(...)')
    return backend


def call(where: str, routine_id: str, *inputs: Any, backend: Any, **attrs: Any) -> Any:
    """One routine call with a checked backend (on the reference backend through the host path,
    routines/hostpath.py, unless ``hostpath.interpreted()`` is in force)."""
    be = check_backend(where, backend)
    handle = routine(routine_id)
    fast = hostpath.run(handle, inputs, be, attrs)
    return fast if fast is not None else handle(*inputs, backend=be, **attrs)


def on_host_path(backend: Any) -> bool:
    """Whether ``backend`` (checked) runs lib's work on the host path (routines/hostpath.py): the
    reference backend, unless ``hostpath.interpreted()`` is in force."""
    return hostpath.enabled() and isinstance(backend, ReferenceBackend)


def is_bf16(dtype: np.dtype) -> bool:
    return dtype.name == "bfloat16"  # ml_dtypes' bfloat16, where it is installed


def dtype_name(dtype: np.dtype) -> str:
    return "bfloat16" if is_bf16(dtype) else np.dtype(dtype).newbyteorder("=").name


def intake(where: str, x: Any, name: str = "x") -> np.ndarray:
    """``x`` as a native-byte-order, C-contiguous numpy array of a numeric dtype (bool, integers,
    floats, bfloat16); L001 for anything else (ragged lists, objects, strings, complex)."""
    if not isinstance(x, np.ndarray):
        from ._device import is_device
        if is_device(x):
            raise fail("L022", where, f"lib.{where} takes no device arrays (on the device: the whole-array sum, "
                       "prod, min, max, nanmin, nanmax, mean, var, cumsum, exclusive_cumsum, cummin, cummax; sort, "
                       "argsort; the elementwise functions and lib.fuse)",
                       "download the array (backend.download(buf), np.asarray of the library's array) and call lib "
                       "on the host copy")
    if isinstance(x, (bytes, bytearray, memoryview, str)):
        raise fail("L001", where, f"{name} is {type(x).__name__}, not an array of numbers",
                   "pass a numpy array or a list of numbers (lib.crc32/crc32c/find/byte_histogram take bytes)")
    try:
        arr = np.asarray(x)
    except (ValueError, TypeError, OverflowError) as e:
        raise fail("L001", where, f"{name} cannot be read as an array of numbers ({e})",
                   "pass a numpy array or a rectangular (not ragged) list of numbers") from None
    if is_bf16(arr.dtype):
        return _contiguous(arr)
    if arr.dtype.kind not in "biuf" or arr.dtype.itemsize > 8:
        raise fail("L001", where, f"{name} has dtype {arr.dtype}, which is not a number vyre_decl computes with",
                   "pass bool, integer (8 to 64 bits) or float (16, 32, 64 bits) values")
    if not arr.dtype.isnative:
        arr = arr.astype(arr.dtype.newbyteorder("="))  # the same values, native byte order
    return _contiguous(arr)


def _contiguous(arr: np.ndarray) -> np.ndarray:
    """C-contiguous, keeping a 0-d array 0-d (np.ascontiguousarray makes it 1-d)."""
    return arr if arr.flags.c_contiguous else arr.copy(order="C")


def exact(src: np.dtype, dst: np.dtype) -> bool:
    """Whether every value of ``src`` is a value of ``dst`` (bfloat16 and float16 sit in float32)."""
    if is_bf16(src):
        return dst.kind == "f" and dst.itemsize >= 4
    if is_bf16(dst):
        return src.kind == "b"
    if src == dst or src.kind == "b":
        return True
    if dst.kind == "f":
        mant = {2: 11, 4: 24, 8: 53}[dst.itemsize]
        if src.kind == "f":
            return dst.itemsize >= src.itemsize
        return src.itemsize * 8 - (1 if src.kind == "i" else 0) <= mant
    if dst.kind == "u":
        return src.kind == "u" and dst.itemsize >= src.itemsize
    if dst.kind == "i":
        return (src.kind == "i" and dst.itemsize >= src.itemsize) or (src.kind == "u" and dst.itemsize > src.itemsize)
    return False


def widen_to(where: str, arr: np.ndarray, candidates: Sequence[np.dtype], what: str = "") -> np.ndarray:
    """``arr`` as the first of ``candidates`` that holds every value of its dtype exactly; L002
    naming the types taken otherwise (the Fix never names a lossy conversion)."""
    for dt in candidates:
        if exact(arr.dtype, dt):
            return arr if arr.dtype == dt else arr.astype(dt)
    taken = ", ".join(dtype_name(d) for d in candidates)
    raise fail("L002", where, f"{what or 'x'} of dtype {dtype_name(arr.dtype)} has no exact representation in a type "
               f"{where} computes with ({taken})",
               f"pass values of one of {taken} (or of a narrower type that converts to one exactly)")


def widen(where: str, arr: np.ndarray, kinds: str = "uif", what: str = "") -> np.ndarray:
    """``arr`` widened exactly to the nearest routine dtype of the given kinds (u, i, f): int8 ->
    int32, uint16 -> uint32, float16/bfloat16 -> float32, bool -> uint32 (or the first kind's)."""
    order: list[np.dtype] = []
    src = arr.dtype
    if src.kind == "b" or is_bf16(src):
        order = [d for d in ROUTINE_DTYPES if d.kind in kinds]
    else:
        same = [d for d in ROUTINE_DTYPES if d.kind == src.kind and d.kind in kinds]
        order = same + [d for d in ROUTINE_DTYPES if d.kind in kinds and d not in same]
    return widen_to(where, arr, order, what)


def narrow_back(result: Any, dtype: np.dtype) -> Any:
    """A result whose values are elements of the input (min, max, sort, take) in the input's dtype:
    exact, as every value came from an array of that dtype."""
    if isinstance(result, np.ndarray):
        return result.astype(dtype) if result.dtype != dtype else result
    return dtype.type(result)


def ints(where: str, value: Any, name: str, low: int = 0, high: int = 2**32 - 1) -> int:
    """A Python int argument in [low, high]; L016 otherwise."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or not low <= int(value) <= high:
        raise fail("L016", where, f"{name}={value!r} is not an integer in {low} .. {high}", f"pass {name} as an int in that range")
    return int(value)


def all_of(values: Iterable[bool]) -> bool:
    return builtins.all(values)
