"""The simulated CUDA driver (vyre_decl.sim, issue 26 item 1), driven through vyre_decl.libcuda's
own prototypes and ctypes: the library object, initialisation, the GPU profiles, error strings,
contexts per thread (wrong and destroyed contexts), device memory and its bounds, and two devices
(VYRE_DECL_CUDA_SIM=h100,h100)."""

from __future__ import annotations

import ast
import ctypes
import threading
from pathlib import Path
from ctypes import byref, c_int, c_size_t, c_uint64, c_void_p

import pytest

import vyre_decl.sim
from vyre_decl import libcuda as cu
from vyre_decl.sim import PROFILES, PROTOTYPES, Driver, SimDriverLibrary, driver_library

from test_sim_driver_support import alloc, code, context, device_bytes, event, read_back, stream, use_sim


@pytest.fixture
def sim(monkeypatch):
    return use_sim(monkeypatch)


@pytest.fixture
def two(monkeypatch):
    return use_sim(monkeypatch, "h100,h100")


def test_an_unknown_profile_is_a_value_error_naming_the_known_ones():
    for spec in ("h100,v100", "", "h100,,t4"):
        with pytest.raises(ValueError) as info:
            driver_library(spec)
        assert all(name in str(info.value) for name in ("h100", "h200", "a100", "l4", "t4"))
    assert driver_library(" H100 , t4 ").model.devices[1].profile.key == "t4"


def test_the_library_hands_out_function_pointers_as_cdll_does(sim):
    fresh, again = sim["cuInit"], sim["cuInit"]
    assert fresh is not again and fresh.argtypes is None  # __getitem__: a new pointer, no prototype
    assert sim.cuInit is sim.cuInit  # __getattr__: cached
    assert ctypes.cast(fresh, c_void_p).value == ctypes.cast(again, c_void_p).value
    with pytest.raises(AttributeError):
        sim.cuNoSuchFunction
    with pytest.raises(AttributeError):  # a PyDLL built on the handle finds no driver function
        ctypes.PyDLL(sim._name, handle=sim._handle)["cuInit"]
    version = c_int()
    assert sim.python_api()["cuDriverGetVersion"](byref(version)) == 0 and version.value == 13000  # keeps the GIL
    # the sim's own prototype table covers libcuda's, with the same arities
    assert {n: len(t) for n, t in cu._PROTOTYPES.items()} == {n: len(PROTOTYPES[n]) for n in cu._PROTOTYPES}
    assert set(PROTOTYPES) == set(cu._PROTOTYPES)


def test_calls_before_cuinit_fail_with_not_initialized(sim):
    n = c_int()
    assert code("cuDeviceGetCount", byref(n)) == 3
    assert cu.driver_version() == 13000  # no initialisation needed
    cu.call("cuInit", 0)
    assert code("cuDeviceGetCount", byref(n)) == 0 and n.value == 1
    assert code("cuInit", 1) == 1


def _attr(name: str, ordinal: int) -> int:
    v = c_int()
    cu.call("cuDeviceGetAttribute", byref(v), cu.ATTR[name], ordinal)
    return v.value


def test_profiles_report_their_gpus(monkeypatch):
    use_sim(monkeypatch, "h100,t4")
    cu.call("cuInit", 0)
    names = []
    for k in range(2):
        buf = ctypes.create_string_buffer(256)
        cu.call("cuDeviceGetName", buf, 256, k)
        names.append(buf.value.decode())
    assert names == ["NVIDIA H100 80GB HBM3 (simulated)", "Tesla T4 (simulated)"]
    h100 = {n: _attr(n, 0) for n in cu.ATTR}
    assert (h100["compute_capability_major"], h100["compute_capability_minor"]) == (9, 0)
    assert (h100["multiprocessor_count"], h100["max_threads_per_multiprocessor"], h100["warp_size"]) == (132, 2048, 32)
    assert (h100["max_grid_dim_x"], h100["max_grid_dim_y"], h100["max_block_dim_z"]) == (2**31 - 1, 65535, 64)
    assert (h100["max_shared_memory_per_block"], h100["cooperative_launch"]) == (49152, 1)
    t4 = {n: _attr(n, 1) for n in cu.ATTR}
    assert (t4["compute_capability_major"], t4["compute_capability_minor"], t4["multiprocessor_count"]) == (7, 5, 40)
    assert (t4["max_threads_per_multiprocessor"], t4["max_shared_memory_per_multiprocessor"]) == (1024, 65536)
    total = c_size_t()
    cu.call("cuDeviceTotalMem_v2", byref(total), 0)
    assert total.value == 81559 << 20
    v = c_int()
    assert code("cuDeviceGetAttribute", byref(v), 97, 0) == 0 and v.value == 227 * 1024  # opt-in shared
    assert code("cuDeviceGetAttribute", byref(v), 21, 0) == 1  # texture limits: not modelled
    assert code("cuDeviceGetAttribute", byref(v), 16, 2) == 101  # no third device


def test_error_names_and_strings_are_the_drivers(sim):
    assert cu.error_name(700) == ("CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered")
    assert cu.error_name(709) == ("CUDA_ERROR_CONTEXT_IS_DESTROYED", "context is destroyed")
    assert cu.error_name(906)[0] == "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT"
    name = ctypes.c_char_p(b"x")
    assert code("cuGetErrorName", 12345, byref(name)) == 1 and name.value is None
    assert cu.error_name(12345) == ("CUDA_ERROR_UNKNOWN", "unknown error")


def test_the_current_context_is_per_thread(sim):
    ctx = context()
    assert alloc(64)
    seen: dict[str, int] = {}

    def other() -> None:
        held, ptr = c_void_p(), c_uint64()
        seen["get"] = code("cuCtxGetCurrent", byref(held))
        seen["held"] = held.value or 0
        seen["alloc"] = code("cuMemAlloc_v2", byref(ptr), 64)
        seen["set"] = code("cuCtxSetCurrent", ctx)
        seen["alloc again"] = code("cuMemAlloc_v2", byref(ptr), 64)

    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert seen == {"get": 0, "held": 0, "alloc": 201, "set": 0, "alloc again": 0}
    held = c_void_p()
    cu.call("cuCtxGetCurrent", byref(held))
    assert held.value == ctx.value
    assert code("cuCtxSetCurrent", c_void_p(0x1234)) == 201  # not a context


def test_a_released_context_is_destroyed_with_everything_it_owned(sim):
    ctx = context()
    ptr, s, e = alloc(256), stream(), event()
    cu.call("cuDevicePrimaryCtxRelease_v2", 0)
    n = c_uint64()
    assert code("cuMemAlloc_v2", byref(n), 64) == 709  # still current: destroyed
    assert code("cuMemFree_v2", cu.CUdeviceptr(ptr)) == 709
    assert code("cuDevicePrimaryCtxRelease_v2", 0) == 201  # not retained
    again = context()
    assert again.value == ctx.value  # the primary context keeps its handle
    assert code("cuMemFree_v2", cu.CUdeviceptr(ptr)) == 1  # the old state's memory is gone
    assert code("cuStreamSynchronize", s) == 400 and code("cuEventRecord", e, s) == 400
    assert alloc(64)


def test_device_memory_has_bounds(sim):
    context()
    ptr = alloc(1000)
    base, size = c_uint64(), c_size_t()
    cu.call("cuMemGetAddressRange_v2", byref(base), byref(size), cu.CUdeviceptr(ptr + 10))
    assert (base.value, size.value) == (ptr, 1000)
    assert code("cuMemGetAddressRange_v2", byref(base), byref(size), cu.CUdeviceptr(ptr + 1000)) == 500
    assert code("cuMemsetD8_v2", cu.CUdeviceptr(ptr + 1), 1, 1000) == 1  # one byte past the end
    assert code("cuMemsetD8_v2", cu.CUdeviceptr(ptr), 1, 1000) == 0
    assert read_back(ptr, 1000) == b"\1" * 1000
    free, total = c_size_t(), c_size_t()
    cu.call("cuMemGetInfo_v2", byref(free), byref(total))
    assert total.value - free.value == 1000
    assert code("cuMemAlloc_v2", byref(c_uint64()), total.value) == 2  # out of memory
    assert code("cuMemAlloc_v2", byref(c_uint64()), 0) == 1
    cu.call("cuMemFree_v2", cu.CUdeviceptr(ptr))
    assert code("cuMemFree_v2", cu.CUdeviceptr(ptr)) == 1
    assert code("cuMemcpyDtoH_v2", ctypes.create_string_buffer(4), cu.CUdeviceptr(ptr), 4) == 1


def test_two_devices_have_their_own_contexts_and_memory(two, monkeypatch):
    c0, c1 = context(0, current=False), context(1, current=False)
    cu.call("cuCtxSetCurrent", c1)
    p1, s1 = alloc(256), stream()
    cu.call("cuCtxSetCurrent", c0)
    p0, s0 = alloc(256), stream()
    assert p1 - p0 == 1 << 40  # one unified address space, a terabyte apart
    # issue 25 item 2: one context's pointer with another context's stream (the H100 answered 1)
    assert code("cuMemsetD8Async", cu.CUdeviceptr(p1), 5, 256, s0) == 1
    assert code("cuMemsetD8Async", cu.CUdeviceptr(p0), 5, 256, s1) == 1
    assert code("cuMemsetD8_v2", cu.CUdeviceptr(p1), 5, 256) == 1  # the legacy stream: the current context's
    assert code("cuMemGetAddressRange_v2", None, byref(c_size_t()), cu.CUdeviceptr(p1)) == 500
    assert code("cuEventRecord", event(), s1) == 400  # an event of device 0, a stream of device 1
    cu.call("cuMemsetD8Async", cu.CUdeviceptr(p1), 6, 256, s1)  # a stream works in its own context
    cu.call("cuMemsetD8Async", cu.CUdeviceptr(p0), 5, 256, s0)
    cu.call("cuMemcpyDtoDAsync_v2", cu.CUdeviceptr(p1), cu.CUdeviceptr(p0), 128, s0)  # unified addressing
    cu.call("cuStreamSynchronize", s0)
    assert device_bytes(two, p1, 256, ordinal=1) == b"\5" * 128 + bytes(128)  # device 1's memset: still queued
    cu.call("cuStreamSynchronize", s1)  # then runs, after the copy: 6s everywhere
    assert device_bytes(two, p1, 256, ordinal=1) == b"\6" * 256
    assert two.model.devices[1].memory.range_of(p0) is None


def test_a_defect_of_the_model_is_cuda_error_unknown_never_an_exception_into_ctypes(monkeypatch, capsys):
    driver = Driver([PROFILES["h100"]])

    def broken(*args):
        raise RuntimeError("a bug in the model")

    monkeypatch.setattr(driver, "cuDeviceGetCount", broken)  # entries bind the methods when the library is made
    lib = SimDriverLibrary(driver, "h100")
    fn = lib.cuDeviceGetCount
    fn.argtypes = [ctypes.POINTER(c_int)]
    assert fn(byref(c_int())) == 999
    assert "a bug in the model" in driver.errors[-1]
    assert "Traceback" not in capsys.readouterr().err  # nothing printed by ctypes


def test_the_simulator_depends_on_nothing_else_in_vyre_decl():
    root = Path(vyre_decl.sim.__file__).parent
    for path in root.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
            assert not [n for n in names if n.startswith("vyre_decl") and not n.startswith("vyre_decl.sim")], path
            if isinstance(node, ast.ImportFrom) and node.level:
                assert node.level == 1, f"{path} imports from outside vyre_decl.sim"


def test_pinned_memory_is_real_and_freed_after_the_copies_that_use_it(sim):
    context()
    ptr, s = alloc(4096), stream()
    host = c_void_p()
    cu.call("cuMemHostAlloc", byref(host), 1 << 22, 0)
    assert (host.value or 0) % 4096 == 0  # page aligned
    ctypes.memset(host.value, 9, 4096)
    cu.call("cuMemcpyHtoDAsync_v2", cu.CUdeviceptr(ptr), host, 4096, s)
    cu.call("cuMemFreeHost", host)  # runs the queued copy first
    assert code("cuStreamQuery", s) == 0  # nothing left queued
    assert device_bytes(sim, ptr, 4096) == b"\t" * 4096
    state = sim.model.devices[0].context.state
    assert state.pinned == {} and sim.model.graveyard == []  # released, not kept
    assert code("cuMemFreeHost", host) == 1
