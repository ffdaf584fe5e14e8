"""The DLPack room: resident buffers exported as DLPack capsules (``DeviceBuffer.__dlpack__``) and
foreign DLPack capsules read (``import_capsule``, used by ``interop.from_dlpack``).

DLPack is the tensor exchange ABI of PyTorch, CuPy, JAX and NumPy: a ``DLManagedTensor`` in a
PyCapsule named ``"dltensor"``; the consumer renames it ``"used_dltensor"`` and calls its deleter
when done. Exports stay alive (with the buffer they view) until that deleter runs.
"""

from __future__ import annotations

import ctypes
import sys
import threading
from ctypes import POINTER, Structure, c_char_p, c_int32, c_int64, c_uint8, c_uint16, c_uint64, c_void_p, py_object
from typing import Any

import numpy as np

from ...ir.diagnostics import VyreError
from ...ir.types import DataType

__all__ = ["export_capsule", "import_capsule", "KDL_CUDA"]

KDL_CUDA = 2  # DLDeviceType kDLCUDA
_CODES = {"i": 0, "u": 1, "f": 2}  # DLDataTypeCode: kDLInt, kDLUInt, kDLFloat
_BFLOAT = 4
_USED = b"used_dltensor"
_NAME = b"dltensor"


class _DLDevice(Structure):
    _fields_ = [("device_type", c_int32), ("device_id", c_int32)]


class _DLDataType(Structure):
    _fields_ = [("code", c_uint8), ("bits", c_uint8), ("lanes", c_uint16)]


class _DLTensor(Structure):
    _fields_ = [("data", c_void_p), ("device", _DLDevice), ("ndim", c_int32), ("dtype", _DLDataType),
                ("shape", POINTER(c_int64)), ("strides", POINTER(c_int64)), ("byte_offset", c_uint64)]


class _DLManagedTensor(Structure):
    pass


_DELETER = ctypes.CFUNCTYPE(None, POINTER(_DLManagedTensor))
_DLManagedTensor._fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", c_void_p), ("deleter", _DELETER)]

_api = ctypes.pythonapi
_api.PyCapsule_New.restype, _api.PyCapsule_New.argtypes = py_object, [c_void_p, c_char_p, c_void_p]
_api.PyCapsule_GetPointer.restype, _api.PyCapsule_GetPointer.argtypes = c_void_p, [py_object, c_char_p]
_api.PyCapsule_IsValid.restype, _api.PyCapsule_IsValid.argtypes = ctypes.c_int, [py_object, c_char_p]
_api.PyCapsule_SetName.restype, _api.PyCapsule_SetName.argtypes = ctypes.c_int, [py_object, c_char_p]

_lock = threading.Lock()
_exports: dict[int, tuple[Any, ...]] = {}  # managed tensor address -> what must stay alive


@_DELETER
def _delete(managed: Any) -> None:
    with _lock:
        _exports.pop(ctypes.addressof(managed.contents), None)


_CAPSULE_DESTRUCTOR = ctypes.CFUNCTYPE(None, c_void_p)


# the same C functions taking the raw PyObject* (a capsule being destroyed must not be re-wrapped)
_raw_valid = _api["PyCapsule_IsValid"]
_raw_valid.restype, _raw_valid.argtypes = ctypes.c_int, [c_void_p, c_char_p]
_raw_pointer = _api["PyCapsule_GetPointer"]
_raw_pointer.restype, _raw_pointer.argtypes = c_void_p, [c_void_p, c_char_p]


@_CAPSULE_DESTRUCTOR
def _capsule_gone(capsule: int) -> None:
    # a capsule nobody consumed still owns its tensor: run the deleter (a consumed one was renamed)
    if _raw_valid(capsule, _NAME):
        _delete(ctypes.cast(_raw_pointer(capsule, _NAME), POINTER(_DLManagedTensor)))


def export_capsule(buf: Any, device_id: int) -> Any:
    """A DLPack capsule viewing ``buf`` (1-D, its element type); ``buf`` stays alive with it."""
    t: DataType = buf.dtype
    if not t.is_value_type and t not in (DataType.BF16, DataType.F16, DataType.U8, DataType.I8, DataType.U16,
                                         DataType.I16):
        raise VyreError.one("D016", f"{t} buffers have no DLPack type", repr(buf), "export a numeric buffer")
    kind = np.dtype(t.numpy_dtype).kind if t is not DataType.BF16 else "b"
    if t is DataType.BOOL:
        raise VyreError.one("D016", "bool buffers hold 32-bit words, which DLPack's bool cannot describe", repr(buf),
                            "export it as u32 (the words are 0 or 1)")
    code = _BFLOAT if kind == "b" else _CODES[kind]
    shape = (c_int64 * 1)(buf.count)
    managed = _DLManagedTensor()
    managed.dl_tensor = _DLTensor(c_void_p(buf.ptr), _DLDevice(KDL_CUDA, device_id), 1,
                                  _DLDataType(code, t.size * 8, 1), shape, None, 0)
    managed.manager_ctx = None
    managed.deleter = _delete
    with _lock:
        _exports[ctypes.addressof(managed)] = (managed, shape, buf)
    return _api.PyCapsule_New(ctypes.addressof(managed), _NAME, ctypes.cast(_capsule_gone, c_void_p))


_TYPES = {(0, 8): DataType.I8, (0, 16): DataType.I16, (0, 32): DataType.I32, (0, 64): DataType.I64,
          (1, 8): DataType.U8, (1, 16): DataType.U16, (1, 32): DataType.U32, (1, 64): DataType.U64,
          (2, 16): DataType.F16, (2, 32): DataType.F32, (2, 64): DataType.F64, (_BFLOAT, 16): DataType.BF16}


class _Imported:
    """Keeps an imported tensor alive; its deleter runs when the buffer viewing it is dropped.

    A capsule we exported ourselves is held through its export record too, so the managed tensor
    outlives this object. At interpreter exit the deleter is skipped: the exporter's bookkeeping
    (ours, or another library's) may already be gone, and the process frees the memory anyway."""

    def __init__(self, capsule: Any, managed: Any) -> None:
        self.capsule, self.managed = capsule, managed
        with _lock:
            self.export = _exports.get(ctypes.addressof(managed.contents))

    def __del__(self, finalizing: Any = sys.is_finalizing) -> None:
        if finalizing():
            return
        deleter = self.managed.contents.deleter
        if deleter:
            deleter(self.managed)


def import_capsule(capsule: Any, device_id: int) -> tuple[int, DataType, int, Any]:
    """(pointer, element type, element count, keep-alive owner) of a DLPack capsule of a
    C-contiguous CUDA tensor on device ``device_id``; the capsule is consumed."""
    where = "from_dlpack"
    if not _api.PyCapsule_IsValid(capsule, _NAME):
        raise VyreError.one("D016", "not an unused DLPack capsule", where, "pass a tensor (or a fresh __dlpack__() capsule)")
    managed = ctypes.cast(_api.PyCapsule_GetPointer(capsule, _NAME), POINTER(_DLManagedTensor))
    t = managed.contents.dl_tensor
    if t.device.device_type != KDL_CUDA or t.device.device_id != device_id:
        raise VyreError.one("D016", f"the tensor lives on DLPack device ({t.device.device_type}, {t.device.device_id}), "
                            f"not CUDA device {device_id}", where, "move it to this backend's GPU first")
    dtype = _TYPES.get((t.dtype.code, t.dtype.bits))
    if dtype is None or t.dtype.lanes != 1:
        raise VyreError.one("D016", f"DLPack type (code {t.dtype.code}, {t.dtype.bits} bits, {t.dtype.lanes} lanes) "
                            "has no vyre type", where, "convert the tensor to a numeric type first")
    shape = [t.shape[i] for i in range(t.ndim)]
    if t.strides:
        want: list[int] = []
        step = 1
        for n in reversed(shape):
            want.insert(0, step)
            step *= n
        if [t.strides[i] for i in range(t.ndim)] != want and int(np.prod(shape)) > 1:
            raise VyreError.one("D016", "only C-contiguous tensors can be imported", where,
                                "make it contiguous first (.contiguous() / cupy.ascontiguousarray)")
    _api.PyCapsule_SetName(capsule, _USED)
    count = int(np.prod(shape)) if shape else 1
    return int(t.data or 0) + int(t.byte_offset), dtype, count, _Imported(capsule, managed)
