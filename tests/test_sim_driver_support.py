"""Shared helpers of the simulated-driver tests (no tests here): the ``sim`` fixture factory that
puts a simulated driver under vyre_decl.libcuda (so every call goes through libcuda's own
prototypes and ctypes, as the CUDA backend's do), small driver-call helpers, and a stand-in PTX
interpreter (``StandInPtx``) whose kernels are Python functions, so the driver model's launch path
is tested on its own. Kernel tests that need real PTX semantics use vyre_decl.sim.ptx when it is
there (``real_ptx``)."""

from __future__ import annotations

import ctypes
import importlib
import re
import struct
import sys
import types
from ctypes import byref, c_int, c_size_t, c_uint32, c_uint64, c_void_p
from dataclasses import dataclass, field
from typing import Any, Callable

import pytest

from vyre_decl import libcuda as cu
from vyre_decl.sim import driver_library

CU_STREAM_NON_BLOCKING = 1


def use_sim(monkeypatch: pytest.MonkeyPatch, spec: str = "h100") -> Any:
    """A simulated driver under vyre_decl.libcuda for this test (restored afterwards)."""
    lib = driver_library(spec)
    monkeypatch.setattr(cu, "_lib", lib)
    monkeypatch.setattr(cu, "_fns", {})
    monkeypatch.setattr(cu, "_pylib", lib.python_api())
    return lib


def code(name: str, *args: Any) -> int:
    """Call driver function ``name`` through libcuda's prototype; its CUresult."""
    return int(cu.function(name)(*args))


def context(ordinal: int = 0, current: bool = True) -> c_void_p:
    """cuInit, retain device ``ordinal``'s primary context and (by default) make it current."""
    cu.call("cuInit", 0)
    ctx = c_void_p()
    cu.call("cuDevicePrimaryCtxRetain", byref(ctx), ordinal)
    if current:
        cu.call("cuCtxSetCurrent", ctx)
    return ctx


def alloc(nbytes: int) -> int:
    ptr = c_uint64()
    cu.call("cuMemAlloc_v2", byref(ptr), nbytes)
    return ptr.value


def stream(flags: int = CU_STREAM_NON_BLOCKING) -> c_void_p:
    s = c_void_p()
    cu.call("cuStreamCreate", byref(s), flags)
    return s


def event(flags: int = 0) -> c_void_p:
    e = c_void_p()
    cu.call("cuEventCreate", byref(e), flags)
    return e


def pinned(nbytes: int) -> Any:
    """Page-locked host memory as a ctypes byte array viewing it."""
    p = c_void_p()
    cu.call("cuMemHostAlloc", byref(p), nbytes, 0)
    return (ctypes.c_ubyte * nbytes).from_address(p.value or 0)


def device_bytes(lib: Any, ptr: int, nbytes: int, ordinal: int = 0) -> bytes:
    """What simulated device memory holds now (a look from outside: runs no queued work)."""
    return bytes(lib.model.devices[ordinal].memory.read(ptr, nbytes))


def read_back(ptr: int, nbytes: int) -> bytes:
    """Device memory copied back with cuMemcpyDtoH_v2 (waits for the legacy stream)."""
    out = ctypes.create_string_buffer(nbytes)
    cu.call("cuMemcpyDtoH_v2", out, cu.CUdeviceptr(ptr), nbytes)
    return out.raw


# --- a stand-in PTX interpreter: the interface of vyre_decl.sim.ptx, kernels written in Python
_SIZES = {"u64": 8, "s64": 8, "b64": 8, "f64": 8, "u32": 4, "s32": 4, "b32": 4, "f32": 4}
_ENTRY = re.compile(r"\.entry\s+(\w+)\s*\(([^)]*)\)")
_PARAM = re.compile(r"\.param\s+\.(\w+)\s+(\w+)")
_SHARED = re.compile(r"\.shared\s+\.align\s+\d+\s+\.b8\s+\w+\[(\d+)\]")
_REGS = re.compile(r"//\s*registers\s+(\d+)")
_MAXNTID = re.compile(r"\.maxntid\s+(\d+)\s*,\s*(\d+)\s*,\s*(\d+)")


class PtxError(Exception):
    def __init__(self, line: int, message: str) -> None:
        self.line, self.message = line, message
        super().__init__(f"line {line}: {message}")


class KernelFault(Exception):
    def __init__(self, kind: str, kernel: str, line: int, detail: str) -> None:
        self.kind, self.kernel, self.line, self.detail = kind, kernel, line, detail
        super().__init__(f"{kind} in {kernel} at line {line}: {detail}")


@dataclass
class Param:
    name: str
    nbytes: int
    align: int
    offset: int


@dataclass
class Kernel:
    name: str
    params: list[Param]
    shared_bytes: int
    local_bytes: int
    registers: int
    body: Callable[..., list[Any]] | None
    directives: dict[str, tuple[int, ...]] = field(default_factory=dict)
    runs: list[tuple[Any, Any, bytes]] = field(default_factory=list)

    def run(self, grid: Any, block: Any, params: bytes, memory: Any, sanitize: bool = True, **options: Any) -> list[Any]:
        self.runs.append((grid, block, params))
        values = [struct.unpack_from("<Q" if p.nbytes == 8 else "<I", params, p.offset)[0] for p in self.params]
        return self.body(grid, block, values, memory) if self.body is not None else []


@dataclass
class Module:
    kernels: dict[str, Kernel]


class StandInPtx(types.ModuleType):
    """A module object standing in for vyre_decl.sim.ptx: ``bodies`` maps kernel names to Python
    functions ``(grid, block, param values, memory) -> findings``; a line holding ``@@bad`` is a
    syntax error; ``// registers N`` sets the kernels' register count (default 16), ``.maxntid x, y, z``
    their directive."""

    PtxError, KernelFault = PtxError, KernelFault

    def __init__(self, bodies: dict[str, Callable[..., list[Any]]]) -> None:
        super().__init__("vyre_decl.sim.ptx")
        self.bodies = bodies
        self.loaded: list[Module] = []

    def load_module(self, text: str, sm: int) -> Module:
        for n, line in enumerate(text.splitlines(), 1):
            if "@@bad" in line:
                raise PtxError(n, "syntax error at '@@bad'")
        regs = _REGS.search(text)
        shared = sum(int(m) for m in _SHARED.findall(text))
        kernels = {}
        for name, plist in _ENTRY.findall(text):
            params, offset = [], 0
            for kind, pname in _PARAM.findall(plist):
                size = _SIZES[kind]
                offset = -(-offset // size) * size
                params.append(Param(pname, size, size, offset))
                offset += size
            maxntid = _MAXNTID.search(text)
            kernels[name] = Kernel(name, params, shared, 0, int(regs.group(1)) if regs else 16, self.bodies.get(name),
                                   {"maxntid": tuple(int(g) for g in maxntid.groups())} if maxntid else {})
        module = Module(kernels)
        self.loaded.append(module)
        return module


def use_stand_in(monkeypatch: pytest.MonkeyPatch, bodies: dict[str, Callable[..., list[Any]]]) -> StandInPtx:
    standin = StandInPtx(bodies)
    monkeypatch.setitem(sys.modules, "vyre_decl.sim.ptx", standin)
    return standin


def real_ptx() -> Any:
    """vyre_decl.sim.ptx, the simulator's PTX interpreter; the test is skipped while it is not
    in the tree yet."""
    try:
        return importlib.import_module("vyre_decl.sim.ptx")
    except ImportError as exc:
        pytest.skip(f"the PTX interpreter (vyre_decl.sim.ptx) is not available: {exc}")


def fill_body(grid: Any, block: Any, values: list[int], memory: Any) -> list[Any]:
    """fill(p, n, v): p[i] = v for i < n, one u32 per thread (the stand-in of FILL_PTX)."""
    p, n, v = values
    threads = grid[0] * block[0]
    count = min(n, threads)
    if count:
        memory.write(p, struct.pack("<I", v) * count)
    return []


FILL_PTX = """.version 8.0
.target sm_75
.address_size 64
.visible .entry fill(.param .u64 p, .param .u32 n, .param .u32 v)
{
  .reg .b32 %r<7>;
  .reg .b64 %rd<4>;
  .reg .pred %p<2>;
  ld.param.u64 %rd1, [p];
  ld.param.u32 %r1, [n];
  ld.param.u32 %r2, [v];
  mov.u32 %r3, %ctaid.x;
  mov.u32 %r4, %ntid.x;
  mov.u32 %r5, %tid.x;
  mad.lo.s32 %r6, %r3, %r4, %r5;
  setp.ge.u32 %p1, %r6, %r1;
  @%p1 bra DONE;
  cvta.to.global.u64 %rd1, %rd1;
  mul.wide.u32 %rd2, %r6, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r2;
DONE:
  ret;
}
"""


def load_fill(text: str = FILL_PTX) -> tuple[c_void_p, c_void_p]:
    """(module, function) of the fill kernel, loaded in the current context."""
    module, _ = cu.load_module(text.encode())
    fn = c_void_p()
    cu.call("cuModuleGetFunction", byref(fn), module, b"fill")
    return module, fn


def launch_fill(fn: c_void_p, ptr: int, n: int, value: int, stream: Any = None, block: int = 64) -> int:
    """Launch fill over ``n`` elements through libcuda.Launcher (parameters packed as the backend
    packs them); the CUresult."""
    launcher = cu.Launcher(fn, [c_uint64(ptr), c_uint32(n), c_uint32(value)], (block, 1, 1))
    launcher.set_grid((max(1, -(-n // block)), 1, 1))
    if stream is not None:
        launcher.set_stream(stream)
    return int(launcher())


__all__ = ["use_sim", "code", "context", "alloc", "stream", "event", "pinned", "device_bytes", "read_back",
           "use_stand_in", "real_ptx", "fill_body", "FILL_PTX", "load_fill", "launch_fill", "StandInPtx", "c_int",
           "c_size_t", "Kernel"]
