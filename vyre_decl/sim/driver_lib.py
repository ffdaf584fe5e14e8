"""The simulated driver as a shared library: ``SimDriverLibrary`` stands in for
``ctypes.CDLL("libcuda.so.1")``.

Each driver function is a ctypes callback (``CFUNCTYPE(c_int, *PROTOTYPES[name])``) around the
model's method of that name, so a caller goes through ctypes exactly as with the real library:
``lib.cuMemAlloc_v2`` (cached, like ``CDLL.__getattr__``) and ``lib["cuLaunchKernel"]`` (a fresh
function pointer without ``argtypes``, like ``CDLL.__getitem__``) are C function pointers whose
``restype``/``argtypes`` the caller sets; ctypes converts the arguments on the caller's side as it
would for libcuda.so.1, and the callback receives them as C passes them (pointers as integers).
``lib.python_api()[name]`` gives pointers that keep the GIL during the call (what
``ctypes.PyDLL`` gives for a real library).

``PROTOTYPES`` is the simulator's own description of the driver API (cuda.h), independent of
vyre_decl.libcuda: pointers are ``c_void_p``, ``CUdeviceptr`` is ``c_uint64``.

Every call takes the model's lock; a ``DriverError`` becomes its code; any other exception (a
defect of the model) is recorded in ``model.errors`` and returned as CUDA_ERROR_UNKNOWN (999),
never raised into ctypes (which would print it and return 0).
"""

from __future__ import annotations

import atexit
import ctypes
import ctypes.util
import sys
import traceback
from _ctypes import FUNCFLAG_CDECL, FUNCFLAG_PYTHONAPI, CFuncPtr
from ctypes import c_int, c_size_t, c_ubyte, c_uint, c_uint64, c_void_p
from typing import Any, Callable, Final

from .driver_ctx import ContextCalls
from .driver_errors import UNKNOWN, DriverError
from .driver_launch import LaunchCalls
from .driver_mem import MemoryCalls
from .driver_module import ModuleCalls
from .driver_stream import StreamCalls

__all__ = ["Driver", "SimDriverLibrary", "PROTOTYPES"]

_P, _U64, _I, _U, _SZ = c_void_p, c_uint64, c_int, c_uint, c_size_t

PROTOTYPES: Final[dict[str, tuple[Any, ...]]] = {
    "cuInit": (_U,),
    "cuDriverGetVersion": (_P,),
    "cuGetErrorName": (_I, _P),
    "cuGetErrorString": (_I, _P),
    "cuDeviceGetCount": (_P,),
    "cuDeviceGet": (_P, _I),
    "cuDeviceGetName": (_P, _I, _I),
    "cuDeviceGetAttribute": (_P, _I, _I),
    "cuDeviceTotalMem_v2": (_P, _I),
    "cuDevicePrimaryCtxRetain": (_P, _I),
    "cuDevicePrimaryCtxRelease_v2": (_I,),
    "cuCtxSetCurrent": (_P,),
    "cuCtxGetCurrent": (_P,),
    "cuCtxSynchronize": (),
    "cuModuleLoadDataEx": (_P, _P, _U, _P, _P),
    "cuModuleLoadData": (_P, _P),
    "cuModuleUnload": (_P,),
    "cuModuleGetFunction": (_P, _P, _P),
    "cuLinkCreate_v2": (_U, _P, _P, _P),
    "cuLinkAddData_v2": (_P, _I, _P, _SZ, _P, _U, _P, _P),
    "cuLinkComplete": (_P, _P, _P),
    "cuLinkDestroy": (_P,),
    "cuFuncGetAttribute": (_P, _I, _P),
    "cuFuncSetAttribute": (_P, _I, _I),
    "cuOccupancyMaxActiveBlocksPerMultiprocessor": (_P, _P, _I, _SZ),
    "cuMemAlloc_v2": (_P, _SZ),
    "cuMemFree_v2": (_U64,),
    "cuMemGetInfo_v2": (_P, _P),
    "cuMemGetAddressRange_v2": (_P, _P, _U64),
    "cuMemHostAlloc": (_P, _SZ, _U),
    "cuMemFreeHost": (_P,),
    "cuMemsetD8_v2": (_U64, c_ubyte, _SZ),
    "cuMemsetD8Async": (_U64, c_ubyte, _SZ, _P),
    "cuMemcpyHtoD_v2": (_U64, _P, _SZ),
    "cuMemcpyDtoH_v2": (_P, _U64, _SZ),
    "cuMemcpyDtoD_v2": (_U64, _U64, _SZ),
    "cuMemcpyHtoDAsync_v2": (_U64, _P, _SZ, _P),
    "cuMemcpyDtoHAsync_v2": (_P, _U64, _SZ, _P),
    "cuMemcpyDtoDAsync_v2": (_U64, _U64, _SZ, _P),
    "cuStreamCreate": (_P, _U),
    "cuStreamDestroy_v2": (_P,),
    "cuStreamSynchronize": (_P,),
    "cuStreamQuery": (_P,),
    "cuStreamWaitEvent": (_P, _P, _U),
    "cuEventCreate": (_P, _U),
    "cuEventDestroy_v2": (_P,),
    "cuEventRecord": (_P, _P),
    "cuEventSynchronize": (_P,),
    "cuEventQuery": (_P,),
    "cuEventElapsedTime": (_P, _P, _P),
    "cuLaunchKernel": (_P, _U, _U, _U, _U, _U, _U, _U, _P, _P, _P),
    "cuLaunchCooperativeKernel": (_P, _U, _U, _U, _U, _U, _U, _U, _P, _P),
    "cuStreamBeginCapture_v2": (_P, _I),
    "cuStreamEndCapture": (_P, _P),
    "cuGraphInstantiateWithFlags": (_P, _P, _U64),
    "cuGraphLaunch": (_P, _P),
    "cuGraphExecDestroy": (_P,),
    "cuGraphDestroy": (_P,),
}


class Driver(ContextCalls, MemoryCalls, StreamCalls, ModuleCalls, LaunchCalls):
    """The model of the CUDA driver: one method per driver function (see the mixins)."""

    def entry(self, name: str) -> Callable[..., int]:
        """The callback body for driver function ``name``: the lock, the error mapping."""
        method = getattr(self, name)

        def call(*args: Any) -> int:
            with self.lock:
                self.calls[name] += 1
                try:
                    return int(method(*args))
                except DriverError as exc:
                    self.returned.append((name, exc.code, exc.detail))
                    return exc.code
                except BaseException as exc:  # a defect of the model: never into ctypes
                    self.errors.append(f"{name}: " + "".join(traceback.format_exception(exc)))
                    return UNKNOWN

        return call


class _FuncPtr(CFuncPtr):  # what CDLL hands out: cdecl, returns int, no argtypes
    _flags_ = FUNCFLAG_CDECL
    _restype_ = c_int


class _PyFuncPtr(CFuncPtr):  # what PyDLL hands out: the call keeps the GIL
    _flags_ = FUNCFLAG_CDECL | FUNCFLAG_PYTHONAPI
    _restype_ = c_int


class _Pointers:
    """``obj[name]``: a fresh function pointer of class ``kind`` at the callback's address."""

    def __init__(self, addresses: dict[str, int], kind: type[CFuncPtr], owner: str) -> None:
        self._addresses, self._kind, self._owner = addresses, kind, owner

    def __getitem__(self, name: str) -> Any:
        address = self._addresses.get(name)
        if address is None:
            raise AttributeError(f"{self._owner}: undefined symbol: {name}")
        fn: Any = self._kind(address)
        fn.__name__ = name
        return fn


class SimDriverLibrary(ctypes.CDLL):
    """The simulated ``libcuda.so.1``; ``model`` is the Driver behind it."""

    def __init__(self, driver: Driver, spec: str) -> None:  # nothing to open: no CDLL.__init__
        self._name = f"vyre_decl.sim[{spec}]"
        # a handle under which dlsym finds no driver function (the C library's), so that code
        # building a ctypes.PyDLL on it fails loudly instead of reaching a real libcuda
        self._handle = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")._handle
        self.model = driver
        self._thunks = {name: ctypes.CFUNCTYPE(c_int, *types)(driver.entry(name)) for name, types in PROTOTYPES.items()}
        addresses = {name: ctypes.cast(t, c_void_p).value or 0 for name, t in self._thunks.items()}
        self._plain, self._python = _Pointers(addresses, _FuncPtr, self._name), _Pointers(addresses, _PyFuncPtr,
                                                                                         self._name)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        fn = self[name]
        setattr(self, name, fn)
        return fn

    def __getitem__(self, name: str) -> Any:  # type: ignore[override]
        return self._plain[name]

    def python_api(self) -> _Pointers:
        """Function pointers that keep the GIL during the call (``ctypes.PyDLL``'s kind)."""
        return self._python

    @property
    def ptx_findings(self) -> list[Any]:
        """The sanitizer findings of every kernel run so far (vyre_decl.sim.ptx.Finding)."""
        return self.model.findings

    def findings_report(self, limit: int = 20) -> str:
        """The sanitizer's findings so far ('approx' results aside), one line per kernel, PTX line and
        kind with its count, at most ``limit`` lines; '' when there are none."""
        seen: dict[tuple[str, str, int], list[Any]] = {}
        for f in self.model.findings:
            if f.kind != "approx":
                seen.setdefault((f.kernel, f.kind, f.line), []).append(f)
        if not seen:
            return ""
        lines = [f"{sum(map(len, seen.values()))} sanitizer findings on the simulated device ({self._name}):"]
        lines += [f"  {group[0]}" + (f" (x{len(group)})" if len(group) > 1 else "")
                  for group in list(seen.values())[:limit]]
        if len(seen) > limit:
            lines.append(f"  ... and {len(seen) - limit} more places")
        return "\n".join(lines)

    def report_at_exit(self) -> None:
        """Print ``findings_report()`` on stderr when the process ends (the driver's user's view)."""
        def report() -> None:
            text = self.findings_report()
            if text:
                print(text, file=sys.stderr)

        atexit.register(report)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self._name}>"
