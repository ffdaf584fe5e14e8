"""A hand-written ctypes binding to the CUDA driver API (``libcuda.so.1``).

Nothing happens at import: the library is opened on the first call, so importing vyre_decl on
a machine without a driver costs nothing. Prototypes are one table (``_PROTOTYPES``); every call
goes through ``call(name, *args)`` or a thin wrapper, and every non-zero ``CUresult`` raises
``CudaError`` naming the call, the error's name and description, and a Fix.

The launch path is different on purpose: ``raw("cuLaunchKernel")`` returns a function pointer
*without* ``argtypes`` (ctypes' argument conversion costs 1-2 µs per call), to be called with
pre-built ctypes objects only (see ``Launcher``).
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading
from ctypes import (
    POINTER,
    byref,
    c_char_p,
    c_float,
    c_int,
    c_size_t,
    c_uint,
    c_ulonglong,
    c_void_p,
)
from typing import Any, Final

__all__ = [
    "CudaError",
    "available",
    "call",
    "raw",
    "lib",
    "driver_version",
    "error_name",
    "Launcher",
    "load_module",
    "load_cubin",
    "jit_ptx",
    "ModuleLoadError",
    "STICKY_ERRORS",
    "ATTR",
    "function",
    "CU_STREAM_NON_BLOCKING",
    "SIM_ENV",
    "is_simulated",
    "CU_STREAM_LEGACY",
    "CU_STREAM_PER_THREAD",
    "CUDA_ERROR_INVALID_CONTEXT",
    "pack_params",
    "CU_EVENT_DISABLE_TIMING",
    "CU_STREAM_CAPTURE_MODE_THREAD_LOCAL",
    "CUDA_ERROR_NOT_READY",
    "CU_JIT_INPUT_PTX",
]

CUresult = c_int
CUdeviceptr = c_ulonglong
_h = c_void_p  # opaque handles: CUcontext, CUmodule, CUfunction, CUstream, CUevent, CUgraph, CUgraphExec

# name -> argument types (every function returns CUresult)
_PROTOTYPES: Final[dict[str, tuple[Any, ...]]] = {
    "cuInit": (c_uint,),
    "cuDriverGetVersion": (POINTER(c_int),),
    "cuGetErrorName": (c_int, POINTER(c_char_p)),
    "cuGetErrorString": (c_int, POINTER(c_char_p)),
    "cuDeviceGetCount": (POINTER(c_int),),
    "cuDeviceGet": (POINTER(c_int), c_int),
    "cuDeviceGetName": (c_char_p, c_int, c_int),
    "cuDeviceGetAttribute": (POINTER(c_int), c_int, c_int),
    "cuDeviceTotalMem_v2": (POINTER(c_size_t), c_int),
    "cuDevicePrimaryCtxRetain": (POINTER(_h), c_int),
    "cuDevicePrimaryCtxRelease_v2": (c_int,),
    "cuCtxSetCurrent": (_h,),
    "cuCtxGetCurrent": (POINTER(_h),),
    "cuCtxSynchronize": (),
    "cuModuleLoadDataEx": (POINTER(_h), c_void_p, c_uint, POINTER(c_int), POINTER(c_void_p)),
    "cuModuleLoadData": (POINTER(_h), c_void_p),
    "cuModuleUnload": (_h,),
    "cuLinkCreate_v2": (c_uint, POINTER(c_int), POINTER(c_void_p), POINTER(_h)),
    "cuLinkAddData_v2": (_h, c_int, c_void_p, c_size_t, c_char_p, c_uint, POINTER(c_int), POINTER(c_void_p)),
    "cuLinkComplete": (_h, POINTER(c_void_p), POINTER(c_size_t)),
    "cuLinkDestroy": (_h,),
    "cuModuleGetFunction": (POINTER(_h), _h, c_char_p),
    "cuFuncGetAttribute": (POINTER(c_int), c_int, _h),
    "cuFuncSetAttribute": (_h, c_int, c_int),
    "cuMemAlloc_v2": (POINTER(CUdeviceptr), c_size_t),
    "cuMemFree_v2": (CUdeviceptr,),
    "cuMemGetInfo_v2": (POINTER(c_size_t), POINTER(c_size_t)),
    "cuMemGetAddressRange_v2": (POINTER(CUdeviceptr), POINTER(c_size_t), CUdeviceptr),
    "cuMemHostAlloc": (POINTER(c_void_p), c_size_t, c_uint),
    "cuMemFreeHost": (c_void_p,),
    "cuMemsetD8_v2": (CUdeviceptr, ctypes.c_ubyte, c_size_t),
    "cuMemsetD8Async": (CUdeviceptr, ctypes.c_ubyte, c_size_t, _h),
    "cuMemcpyHtoD_v2": (CUdeviceptr, c_void_p, c_size_t),
    "cuMemcpyDtoH_v2": (c_void_p, CUdeviceptr, c_size_t),
    "cuMemcpyDtoD_v2": (CUdeviceptr, CUdeviceptr, c_size_t),
    "cuMemcpyHtoDAsync_v2": (CUdeviceptr, c_void_p, c_size_t, _h),
    "cuMemcpyDtoHAsync_v2": (c_void_p, CUdeviceptr, c_size_t, _h),
    "cuMemcpyDtoDAsync_v2": (CUdeviceptr, CUdeviceptr, c_size_t, _h),
    "cuStreamCreate": (POINTER(_h), c_uint),
    "cuStreamDestroy_v2": (_h,),
    "cuStreamSynchronize": (_h,),
    "cuStreamQuery": (_h,),
    "cuEventCreate": (POINTER(_h), c_uint),
    "cuEventDestroy_v2": (_h,),
    "cuEventRecord": (_h, _h),
    "cuStreamWaitEvent": (_h, _h, c_uint),
    "cuEventSynchronize": (_h,),
    "cuEventQuery": (_h,),
    "cuEventElapsedTime": (POINTER(c_float), _h, _h),
    "cuLaunchKernel": (_h, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, _h, POINTER(c_void_p), POINTER(c_void_p)),
    "cuLaunchCooperativeKernel": (_h, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, _h, POINTER(c_void_p)),
    "cuOccupancyMaxActiveBlocksPerMultiprocessor": (POINTER(c_int), _h, c_int, c_size_t),
    "cuStreamBeginCapture_v2": (_h, c_int),
    "cuStreamEndCapture": (_h, POINTER(_h)),
    "cuGraphInstantiateWithFlags": (POINTER(_h), _h, c_ulonglong),
    "cuGraphLaunch": (_h, _h),
    "cuGraphExecDestroy": (_h,),
    "cuGraphDestroy": (_h,),
}

# CUdevice_attribute values used by the backend
ATTR: Final = {
    "max_threads_per_block": 1,
    "max_block_dim_x": 2,
    "max_block_dim_y": 3,
    "max_block_dim_z": 4,
    "max_grid_dim_x": 5,
    "max_grid_dim_y": 6,
    "max_grid_dim_z": 7,
    "max_shared_memory_per_block": 8,
    "max_shared_memory_per_block_optin": 97,
    "warp_size": 10,
    "clock_rate_khz": 13,
    "multiprocessor_count": 16,
    "memory_clock_rate_khz": 36,
    "global_memory_bus_width": 37,
    "compute_capability_major": 75,
    "compute_capability_minor": 76,
    "max_shared_memory_per_multiprocessor": 81,
    "cooperative_launch": 95,
    "max_threads_per_multiprocessor": 39,
    "unified_addressing": 41,
}

# Errors after which the context is unusable: the process must restart.
# (illegal address, launch timeout, device assert, hardware stack error, illegal instruction,
# misaligned address, invalid address space, invalid PC, launch failure, unknown)
STICKY_ERRORS: Final = frozenset({700, 702, 710, 714, 715, 716, 717, 718, 719, 999})
# flags and codes of the driver API (cuda.h)
SIM_ENV: Final = "VYRE_DECL_CUDA_SIM"  # simulated GPUs instead of the driver: profile names, e.g. h100,t4
CU_STREAM_NON_BLOCKING: Final = 1
CU_STREAM_LEGACY: Final = 1  # the handle of the legacy default stream (CUDA's "stream 0")
CU_STREAM_PER_THREAD: Final = 2  # the handle of the calling thread's per-thread default stream
CUDA_ERROR_INVALID_CONTEXT: Final = 201
CU_EVENT_DISABLE_TIMING: Final = 2
CU_STREAM_CAPTURE_MODE_THREAD_LOCAL: Final = 1
CUDA_ERROR_NOT_READY: Final = 600
CU_JIT_INPUT_PTX: Final = 1

_FIXES: Final = {
    100: "no CUDA device is visible: check CUDA_VISIBLE_DEVICES and the driver (nvidia-smi)",
    2: "the device ran out of memory: free resident buffers or dispatch smaller inputs",
    3: "the driver could not initialise: check the NVIDIA driver installation (nvidia-smi)",
    35: "the driver is older than the CUDA runtime expects: update the NVIDIA driver",
    218: "the PTX does not assemble: see the JIT log above (an emitter or op-template bug)",
    222: "the driver is too old for this PTX version: update the driver or force an older target",
    209: "no kernel image for this GPU: emit PTX for its compute capability",
    700: "a kernel accessed an illegal address; the CUDA context is now unusable: restart the process",
    701: "a launch used too many resources (registers or shared memory): use a smaller workgroup",
    702: "a kernel ran too long and was stopped: shorten the kernel or disable the display watchdog",
    719: "a kernel failed; the CUDA context is now unusable: restart the process",
}


class CudaError(RuntimeError):
    """A CUDA driver call that returned an error."""

    def __init__(self, call: str, code: int, detail: str = "") -> None:
        self.call, self.code = call, code
        self.name, self.description = error_name(code)
        self.sticky = code in STICKY_ERRORS
        fix = _FIXES.get(code, "check the arguments of this call; see the CUDA driver API documentation")
        text = f"{call} failed: {self.name} ({code}): {self.description}"
        if detail:
            text += f"\n{detail}"
        super().__init__(f"{text}\nFix: {fix}")


class ModuleLoadError(CudaError):
    """cuModuleLoadDataEx failed; ``log`` is the JIT compiler's error log."""

    def __init__(self, code: int, log: str, call: str = "cuModuleLoadDataEx") -> None:
        self.log = log
        super().__init__(call, code, log)


_lock = threading.Lock()
_lib: ctypes.CDLL | None = None
_pylib: Any = None  # a ctypes.PyDLL over the driver, or the simulated driver's python_api()
_fns: dict[str, Any] = {}


def lib() -> ctypes.CDLL:
    """The driver library, opened on first use (OSError if there is none): the simulated driver
    when ``VYRE_DECL_CUDA_SIM`` names simulated GPUs (``h100``, ``h100,t4``), else libcuda.so.1
    (or the library ``VYRE_DECL_LIBCUDA`` names)."""
    global _lib
    if _lib is None:
        with _lock:
            if _lib is None:
                spec = os.environ.get(SIM_ENV, "").strip()
                _lib = _simulated(spec) if spec else ctypes.CDLL(os.environ.get("VYRE_DECL_LIBCUDA", "libcuda.so.1"))
    return _lib


def _simulated(spec: str) -> ctypes.CDLL:
    from .sim import driver_library  # vyre_decl/sim: imported only when asked for

    try:
        simulated = driver_library(spec)
    except ValueError as exc:  # a misspelt profile: no driver, said like a missing library
        raise OSError(str(exc)) from None
    simulated.report_at_exit()  # the sanitizer's findings, on stderr when the process ends
    return simulated


def is_simulated() -> bool:
    """Whether the driver is the simulated one (its kernels and cubins are not a GPU's)."""
    return hasattr(lib(), "python_api")


def device_count() -> int:
    """How many devices the driver shows this process (0 when there is no driver)."""
    try:
        call("cuInit", 0)
        n = c_int()
        call("cuDeviceGetCount", byref(n))
        return n.value
    except (OSError, CudaError):
        return 0


def available() -> bool:
    """Whether libcuda.so.1 can be opened and reports at least one device."""
    return device_count() > 0


def function(name: str) -> Any:
    """The driver function ``name`` with its declared prototype (argument types checked by
    ctypes), cached; it returns the CUresult (0 on success). ``call`` raises on failure;
    ``raw`` gives an unprototyped pointer for the launch hot path."""
    fn = _fns.get(name)
    if fn is None:
        fn = getattr(lib(), name)
        fn.restype = CUresult
        fn.argtypes = list(_PROTOTYPES[name])
        _fns[name] = fn
    return fn


def call(name: str, *args: Any) -> None:
    """Call driver function ``name``; raise CudaError on failure."""
    result = function(name)(*args)
    if result:
        raise CudaError(name, result)


def raw(name: str, hold_gil: bool = False) -> Any:
    """A separate function pointer for ``name`` with no argtypes (for the launch hot path).
    ``hold_gil``: the call keeps the GIL (a ``PyDLL`` pointer), which saves releasing and taking
    it again and, where the interpreter has a GIL, serialises the calls of all Python threads."""
    global _pylib
    if hold_gil and _pylib is None:
        api = getattr(lib(), "python_api", None)  # the simulated driver's own GIL-keeping pointers
        _pylib = api() if api is not None else ctypes.PyDLL(lib()._name, handle=lib()._handle)
    fn = (_pylib if hold_gil else lib())[name]  # type: ignore[index]
    fn.restype = CUresult
    return fn


def gil_serialises() -> bool:
    """Whether the interpreter runs one Python thread at a time (not a free-threaded build)."""
    return bool(getattr(sys, "_is_gil_enabled", lambda: True)())


def error_name(code: int) -> tuple[str, str]:
    """(CUDA_ERROR_..., description) for a CUresult."""
    name, text = c_char_p(), c_char_p()
    try:
        f_name, f_text = function("cuGetErrorName"), function("cuGetErrorString")
        f_name(code, byref(name))
        f_text(code, byref(text))
    except OSError:
        pass
    return (name.value or b"CUDA_ERROR_UNKNOWN").decode(), (text.value or b"unknown error").decode()


def driver_version() -> int:
    v = c_int()
    call("cuDriverGetVersion", byref(v))
    return v.value


# JIT options for cuModuleLoadDataEx
_JIT_INFO_LOG_BUFFER, _JIT_INFO_LOG_BUFFER_SIZE_BYTES = 3, 4
_JIT_ERROR_LOG_BUFFER, _JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 5, 6
_JIT_LOG_VERBOSE = 12
_LOG_BYTES = 16384
_LOG_OPTIONS = 5  # the five JIT log options below, in order


def _log_options() -> tuple[Any, Any, Any, Any]:
    info = ctypes.create_string_buffer(_LOG_BYTES)
    err = ctypes.create_string_buffer(_LOG_BYTES)
    opts = (c_int * _LOG_OPTIONS)(_JIT_INFO_LOG_BUFFER, _JIT_INFO_LOG_BUFFER_SIZE_BYTES, _JIT_ERROR_LOG_BUFFER,
                       _JIT_ERROR_LOG_BUFFER_SIZE_BYTES, _JIT_LOG_VERBOSE)
    vals = (c_void_p * _LOG_OPTIONS)(ctypes.cast(info, c_void_p), c_void_p(_LOG_BYTES), ctypes.cast(err, c_void_p),
                          c_void_p(_LOG_BYTES), c_void_p(1))
    return info, err, opts, vals


def jit_ptx(ptx: bytes) -> tuple[bytes, str]:
    """Compile PTX to a cubin for the current context's device with the driver's JIT linker;
    returns (cubin, info log). On failure raises ModuleLoadError carrying the JIT error log."""
    info, err, opts, vals = _log_options()
    state = c_void_p()
    call("cuLinkCreate_v2", _LOG_OPTIONS, opts, vals, byref(state))
    try:
        data = ctypes.create_string_buffer(ptx if ptx.endswith(b"\0") else ptx + b"\0")
        result = function("cuLinkAddData_v2")(state, CU_JIT_INPUT_PTX, data, len(data), b"vyre_decl.ptx", 0, None, None)
        if result:
            raise ModuleLoadError(result, err.value.decode(errors="replace"), "cuLinkAddData_v2")
        cubin, size = c_void_p(), c_size_t()
        result = function("cuLinkComplete")(state, byref(cubin), byref(size))
        if result:
            raise ModuleLoadError(result, err.value.decode(errors="replace"), "cuLinkComplete")
        return ctypes.string_at(cubin, size.value), info.value.decode(errors="replace")
    finally:
        function("cuLinkDestroy")(state)


def load_cubin(cubin: bytes) -> c_void_p:
    """Load a compiled module image (no JIT)."""
    module = c_void_p()
    call("cuModuleLoadData", byref(module), ctypes.create_string_buffer(cubin, len(cubin)))
    return module


def load_module(image: bytes) -> tuple[c_void_p, str]:
    """Load a PTX (NUL-terminated) or cubin image; returns (module, JIT info log). On failure
    raises ModuleLoadError carrying the JIT error log."""
    info, err, opts, vals = _log_options()
    module = c_void_p()
    buf = ctypes.create_string_buffer(image if image.endswith(b"\0") else image + b"\0")
    result = function("cuModuleLoadDataEx")(byref(module), buf, _LOG_OPTIONS, opts, vals)
    if result:
        raise ModuleLoadError(result, err.value.decode(errors="replace"))
    return module, info.value.decode(errors="replace")


def pack_params(values: list[Any]) -> Any:
    """The ``kernelParams`` array of ``cuLaunchKernel``: a pointer to each ctypes value. The array
    holds the values (``_values``), so they live as long as anything holding the array: an
    argument tuple kept without its launcher cannot point at freed memory."""
    params = (c_void_p * max(1, len(values)))(*[ctypes.cast(byref(v), c_void_p) for v in values])
    params._values = tuple(values)  # type: ignore[attr-defined]
    return params


class Launcher:
    """One kernel launch with pre-built arguments: calling it costs one cuLaunchKernel.

    ``values`` holds one ctypes object per kernel parameter (c_uint64 for pointers, c_uint32 for
    counts); rebinding a buffer is ``launcher.values[i].value = new_pointer`` — no new objects.
    """

    __slots__ = ("_launch", "function", "values", "params", "grid", "block", "shared", "stream", "_args")

    def __init__(self, function: c_void_p, values: list[Any], block: tuple[int, int, int], shared: int = 0) -> None:
        self._launch = raw("cuLaunchKernel")
        self.function = function
        self.values = values
        self.params = pack_params(values)
        self.grid = [c_uint(1), c_uint(1), c_uint(1)]
        self.block = [c_uint(b) for b in block]
        self.shared = c_uint(shared)
        self.stream = c_void_p()
        self._args = (function, *self.grid, *self.block, self.shared, self.stream, self.params, None)

    def set_grid(self, grid: tuple[int, int, int]) -> None:
        for slot, g in zip(self.grid, grid):
            slot.value = g

    def set_stream(self, stream: c_void_p) -> None:
        self.stream.value = stream.value

    def function_and_args(self) -> tuple[Any, tuple[Any, ...]]:
        """The raw cuLaunchKernel and its argument tuple, for callers that inline the call."""
        return self._launch, self._args

    def __call__(self) -> int:
        """Launch; returns the CUresult (0 on success) for the caller to check."""
        return self._launch(*self._args)
