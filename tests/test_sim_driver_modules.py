"""Modules, functions and launches in the simulated driver, through vyre_decl.libcuda: PTX that
does not assemble fails like the JIT (with its log naming the line), versions and targets are
checked against the driver and the device, cubins are bound to their compute capability,
function attributes and occupancy follow the profile, launches are checked against the limits
and read their parameters at the call (the RawLaunch bug of issue 25 fails), and a kernel's
illegal address is a sticky error. Kernels run on a stand-in interpreter (Python bodies) and,
where it is in the tree, on vyre_decl.sim.ptx as well."""

from __future__ import annotations

import ctypes
import gc
import struct
import sys
from ctypes import byref, c_int, c_size_t, c_uint32, c_uint64, c_void_p

import numpy as np
import pytest

from vyre_decl import libcuda as cu
from vyre_decl.bench import device as bench_device

from test_sim_driver_support import (FILL_PTX, alloc, code, context, device_bytes, fill_body, launch_fill, load_fill,
                                     read_back, real_ptx, stream, use_sim, use_stand_in)

N = 1024
ADD3_PTX = """.version 8.0
.target sm_75
.address_size 64
.visible .entry add3(.param .u64 a, .param .u64 b, .param .u64 c, .param .u32 na, .param .u32 nb, .param .u32 nc)
{
  .reg .b32 %r<8>;
  .reg .b64 %rd<8>;
  .reg .pred %p<2>;
  ld.param.u64 %rd1, [a];
  ld.param.u64 %rd2, [b];
  ld.param.u64 %rd3, [c];
  ld.param.u32 %r1, [nc];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mad.lo.s32 %r5, %r2, %r3, %r4;
  setp.ge.u32 %p1, %r5, %r1;
  @%p1 bra DONE;
  mul.wide.u32 %rd4, %r5, 4;
  add.s64 %rd5, %rd1, %rd4;
  add.s64 %rd6, %rd2, %rd4;
  add.s64 %rd7, %rd3, %rd4;
  ld.global.u32 %r6, [%rd5];
  ld.global.u32 %r7, [%rd6];
  add.u32 %r6, %r6, %r7;
  st.global.u32 [%rd7], %r6;
DONE:
  ret;
}
"""


def add3_body(grid, block, values, memory):
    a, b, c, _, _, n = values
    n = min(n, grid[0] * block[0])
    x = np.frombuffer(memory.read(a, 4 * n), np.uint32)
    y = np.frombuffer(memory.read(b, 4 * n), np.uint32)
    memory.write(c, (x + y).tobytes())
    return []


@pytest.fixture
def sim(monkeypatch):
    lib = use_sim(monkeypatch)
    context()
    return lib


@pytest.fixture
def standin(monkeypatch):
    return use_stand_in(monkeypatch, {"fill": fill_body, "add3": add3_body})


@pytest.fixture(params=["stand-in", "vyre_decl.sim.ptx"])
def interpreter(request, monkeypatch):
    """Kernels run on the stand-in, then on the simulator's PTX interpreter (when there)."""
    if request.param == "stand-in":
        return use_stand_in(monkeypatch, {"fill": fill_body, "add3": add3_body})
    return real_ptx()


def _words(data: bytes) -> list[int]:
    return list(np.frombuffer(data, np.uint32))


def test_ptx_that_does_not_assemble_fails_like_the_jit_with_the_line(sim, standin):
    bad = FILL_PTX.replace("  mov.u32 %r3, %ctaid.x;", "  @@bad")
    with pytest.raises(cu.ModuleLoadError) as info:
        cu.load_module(bad.encode())
    assert info.value.code == 218 and "ptxas application ptx input, line 12; error" in info.value.log
    with pytest.raises(cu.ModuleLoadError) as info:
        cu.jit_ptx(bad.encode())
    assert (info.value.call, info.value.code) == ("cuLinkAddData_v2", 218) and "line 12" in info.value.log


def test_a_malformed_instruction_fails_on_the_interpreter_too(sim):
    real_ptx()
    with pytest.raises(cu.ModuleLoadError) as info:
        cu.load_module(FILL_PTX.replace("  mov.u32 %r3, %ctaid.x;", "  mov.u32 %r3, ;").encode())
    assert info.value.code == 218 and "line 12" in info.value.log


def test_versions_and_targets_are_checked_against_the_driver_and_the_device(monkeypatch, standin):
    use_sim(monkeypatch, "h100,t4")
    context(0)
    with pytest.raises(cu.ModuleLoadError) as info:
        cu.load_module(FILL_PTX.replace(".version 8.0", ".version 9.1").encode())
    assert info.value.code == 222 and "Unsupported .version 9.1; current version is '9.0'" in info.value.log
    with pytest.raises(cu.ModuleLoadError) as info:
        cu.load_module(FILL_PTX.replace("sm_75", "sm_100").encode())
    assert info.value.code == 218 and "line 2" in info.value.log
    cu.load_module(FILL_PTX.replace("sm_75", "sm_90a").encode())
    context(1)  # the T4
    with pytest.raises(cu.ModuleLoadError) as info:
        cu.load_module(FILL_PTX.replace("sm_75", "sm_90").encode())
    assert info.value.code == 218


def test_without_the_interpreter_the_jit_is_not_found(sim, monkeypatch):
    monkeypatch.setitem(sys.modules, "vyre_decl.sim.ptx", None)  # import fails
    with pytest.raises(cu.ModuleLoadError) as info:
        cu.load_module(FILL_PTX.encode())
    assert info.value.code == 221 and "interpreter" in info.value.log


def test_cubins_are_bound_to_their_compute_capability(monkeypatch, standin):
    use_sim(monkeypatch, "h100,t4")
    context(0)
    cubin, log = cu.jit_ptx(FILL_PTX.encode())
    assert cubin.startswith(b"VYRESIM-CUBIN") and "'fill' for 'sm_90'" in log
    module = cu.load_cubin(cubin)
    fn = c_void_p()
    cu.call("cuModuleGetFunction", byref(fn), module, b"fill")
    with pytest.raises(cu.CudaError) as info:
        cu.load_cubin(b"\x7fELF\x02\x01\x01" + bytes(64))  # a real cubin
    assert info.value.code == 209
    context(1)
    with pytest.raises(cu.CudaError) as info:
        cu.load_cubin(cubin)  # linked for sm_90, loaded on sm_75
    assert info.value.code == 209
    cu.load_cubin(cu.jit_ptx(FILL_PTX.encode())[0])


def test_functions_and_their_attributes(sim, standin):
    module, fn = load_fill()
    assert code("cuModuleGetFunction", byref(c_void_p()), module, b"nope") == 500
    attrs = {}
    for which in (0, 1, 3, 4, 5, 6, 8):
        v = c_int()
        cu.call("cuFuncGetAttribute", byref(v), which, fn)
        attrs[which] = v.value
    assert attrs == {0: 1024, 1: 0, 3: 0, 4: 16, 5: 80, 6: 90, 8: 48 * 1024}
    _, heavy = load_fill(FILL_PTX + "// registers 128\n")
    _, bounded = load_fill(FILL_PTX.replace("{", ".maxntid 256, 1, 1\n{", 1))
    limit, regs = c_int(), c_int()
    cu.call("cuFuncGetAttribute", byref(limit), 0, heavy)
    cu.call("cuFuncGetAttribute", byref(regs), 4, heavy)
    assert (limit.value, regs.value) == (1024, 32)  # declared registers are capped: ptxas is not modelled
    cu.call("cuFuncGetAttribute", byref(limit), 0, bounded)
    assert limit.value == 256
    blocks = c_int()
    for threads, shared, expected in [(256, 0, 8), (1024, 0, 2), (64, 0, 32), (256, 48 * 1024, 4)]:
        cu.call("cuOccupancyMaxActiveBlocksPerMultiprocessor", byref(blocks), fn, threads, shared)
        assert blocks.value == expected, (threads, shared)  # threads, blocks, then shared memory per SM
    cu.call("cuOccupancyMaxActiveBlocksPerMultiprocessor", byref(blocks), bounded, 512, 0)
    assert blocks.value == 0
    cu.call("cuModuleUnload", module)
    assert code("cuFuncGetAttribute", byref(limit), 0, fn) == 400
    assert code("cuModuleUnload", module) == 400


def _launch(fn, grid, block, shared=0, values=(0, 0, 0)) -> int:
    params = cu.pack_params([c_uint64(values[0]), c_uint32(values[1]), c_uint32(values[2])])
    return code("cuLaunchKernel", fn, *grid, *block, shared, None, params, None)


def test_launches_are_checked_against_the_device_and_the_kernel(sim, standin):
    _, fn = load_fill()
    _, bounded = load_fill(FILL_PTX.replace("{", ".maxntid 512, 1, 1\n{", 1))
    ptr = alloc(4)
    ok = (ptr, 1, 5)
    assert _launch(fn, (1, 1, 1), (1, 1, 1), values=ok) == 0
    for grid, block in [((0, 1, 1), (1, 1, 1)), ((1, 65536, 1), (1, 1, 1)), ((1, 1, 1), (1025, 1, 1)),
                        ((1, 1, 1), (1, 1, 65)), ((1, 1, 1), (64, 32, 1)), ((2**31, 1, 1), (1, 1, 1))]:
        assert _launch(fn, grid, block, values=ok) == 1, (grid, block)
    assert _launch(fn, (2**31 - 1, 65535, 65535), (1024, 1, 1), values=ok) == 0  # at the limits: accepted
    assert _launch(bounded, (1, 1, 1), (1024, 1, 1), values=ok) == 701  # .maxntid 512
    assert _launch(fn, (1, 1, 1), (1, 1, 1), shared=48 * 1024 + 1, values=ok) == 1
    cu.call("cuFuncSetAttribute", fn, 8, 100_000)  # opt in to more dynamic shared memory
    assert _launch(fn, (1, 1, 1), (1, 1, 1), shared=100_000, values=ok) == 0
    assert code("cuFuncSetAttribute", fn, 8, 227 * 1024 + 1) == 1
    assert code("cuLaunchKernel", fn, 1, 1, 1, 1, 1, 1, 0, None, None, None) == 1  # no parameters


def test_a_launch_reads_its_parameters_at_the_call(sim, interpreter):
    _, fn = load_fill()
    ptr, s = alloc(4 * N), stream()
    values = [c_uint64(ptr), c_uint32(N), c_uint32(5)]
    launcher = cu.Launcher(fn, values, (64, 1, 1))
    launcher.set_grid((N // 64, 1, 1))
    launcher.set_stream(s)
    assert launcher() == 0
    values[2].value = 9  # after the call, before the kernel runs
    cu.call("cuStreamSynchronize", s)
    assert _words(device_bytes(sim, ptr, 4 * N)) == [5] * N
    assert launcher() == 0
    cu.call("cuStreamSynchronize", s)
    assert _words(device_bytes(sim, ptr, 4 * N)) == [9] * N


def test_extra_passes_the_parameter_buffer(sim, interpreter):
    _, fn = load_fill()
    ptr = alloc(4 * 64)
    buffer = ctypes.create_string_buffer(struct.pack("<QII", ptr, 64, 3))
    size = c_size_t(16)
    extra = (c_void_p * 5)(1, ctypes.addressof(buffer), 2, ctypes.addressof(size), 0)
    cu.call("cuLaunchKernel", fn, 1, 1, 1, 64, 1, 1, 0, None, None, extra)
    assert _words(read_back(ptr, 4 * 64)) == [3] * 64
    size.value = 12
    assert code("cuLaunchKernel", fn, 1, 1, 1, 64, 1, 1, 0, None, None, extra) == 1  # too short


class OldRawLaunch:
    """bench.device.RawLaunch as it was at 6baef07: the parameter array is kept (by the closure),
    the values its pointers point to are not."""

    def __init__(self, function, pointers, count, stream):
        self._values = [c_uint64(p) for p in pointers] + [c_uint32(count) for _ in pointers]
        self._params = (c_void_p * len(self._values))(*[ctypes.cast(byref(v), c_void_p) for v in self._values])
        one, zero = ctypes.c_uint(1), ctypes.c_uint(0)
        launch = cu.raw("cuLaunchKernel")
        args = (function, ctypes.c_uint(count // 64), one, one, ctypes.c_uint(64), one, one, zero, stream,
                self._params, None)

        def call() -> None:
            if launch(*args):
                raise RuntimeError("launch failed")

        self.call = call


def _spray() -> list:
    """Reuse freed memory: c_uint64s whose value is an aligned address outside every allocation and
    whose low word, read as a count, covers the grid."""
    gc.collect()
    return [c_uint64(0x0BAD_BEEF_0000_1000) for _ in range(20000)] + [c_uint32(0xBAD) for _ in range(20000)]


@pytest.mark.parametrize("raw_launch", [bench_device.RawLaunch, OldRawLaunch], ids=["fixed", "6baef07"])
def test_a_launch_through_freed_parameter_memory_faults(sim, interpreter, raw_launch):
    """Issue 25 item 3 under the simulator: the bench's RawLaunch with its instance dropped at
    once. Fixed, the launch adds the buffers; at 6baef07 its parameters were freed memory, now
    garbage, and the kernel's access is CUDA_ERROR_ILLEGAL_ADDRESS (sticky), as on the H100."""
    module, _ = cu.load_module(ADD3_PTX.encode())
    fn = c_void_p()
    cu.call("cuModuleGetFunction", byref(fn), module, b"add3")
    bufs, hosts = [alloc(4 * N) for _ in range(3)], [np.full(N, v, np.uint32) for v in (1, 2, 0)]
    for buf, host in zip(bufs, hosts):
        cu.call("cuMemcpyHtoD_v2", cu.CUdeviceptr(buf), host.ctypes.data, 4 * N)
    cu.call("cuCtxSynchronize")  # the copies' DMA may still be queued on the legacy stream
    s = stream()
    call = raw_launch(fn, bufs, N, s).call  # the instance is dropped at once
    spray = _spray()
    call()
    del spray
    result = code("cuStreamSynchronize", s)
    if raw_launch is OldRawLaunch:
        assert result == 700
        assert code("cuMemAlloc_v2", byref(c_uint64()), 64) == 700  # sticky
    else:
        assert result == 0 and _words(read_back(bufs[2], 4 * N)) == [3] * N


def test_an_illegal_address_is_sticky(sim, interpreter):
    _, fn = load_fill()
    ptr, s = alloc(4 * N), stream()
    assert launch_fill(fn, ptr + 4, N, 1, s) == 0  # one element past the end: faults when it runs
    cu.call("cuMemsetD8Async", cu.CUdeviceptr(ptr), 2, 4, s)  # queued after it: never runs
    with pytest.raises(cu.CudaError) as info:
        cu.call("cuStreamSynchronize", s)
    assert info.value.code == 700 and info.value.sticky
    assert sim.model.devices[0].faults[0][0] == 700
    for name, args in [("cuMemAlloc_v2", (byref(c_uint64()), 64)), ("cuCtxSynchronize", ()),
                       ("cuMemsetD8_v2", (cu.CUdeviceptr(ptr), 0, 4)), ("cuStreamSynchronize", (s,))]:
        assert code(name, *args) == 700, name
    assert code("cuCtxGetCurrent", byref(c_void_p())) == 0
    cu.call("cuDevicePrimaryCtxRelease_v2", 0)  # released: the next retain starts afresh
    context()
    assert alloc(64)


def test_a_captured_launch_keeps_the_parameters_of_the_capture(sim, interpreter):
    _, fn = load_fill()
    ptr, s = alloc(4 * N), stream()
    values = [c_uint64(ptr), c_uint32(N), c_uint32(1)]
    launcher = cu.Launcher(fn, values, (64, 1, 1))
    launcher.set_grid((N // 64, 1, 1))
    launcher.set_stream(s)
    cu.call("cuStreamBeginCapture_v2", s, cu.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
    assert launcher() == 0
    graph, exec_ = c_void_p(), c_void_p()
    cu.call("cuStreamEndCapture", s, byref(graph))
    cu.call("cuGraphInstantiateWithFlags", byref(exec_), graph, 0)
    values[2].value = 2
    assert launcher() == 0  # a plain launch with the new value
    cu.call("cuStreamSynchronize", s)
    assert _words(device_bytes(sim, ptr, 4 * N)) == [2] * N
    cu.call("cuGraphLaunch", exec_, s)
    cu.call("cuStreamSynchronize", s)
    assert _words(device_bytes(sim, ptr, 4 * N)) == [1] * N


def test_sanitizer_findings_are_collected(sim, monkeypatch):
    use_stand_in(monkeypatch, {"fill": lambda grid, block, values, memory: [("race", values[2])]})
    _, fn = load_fill()
    ptr = alloc(4)
    assert launch_fill(fn, ptr, 1, 7) == 0
    assert sim.ptx_findings == []
    cu.call("cuCtxSynchronize")
    assert sim.ptx_findings == [("race", 7)]


def test_a_cooperative_grid_must_fit_on_the_device_at_once(sim, standin):
    _, fn = load_fill()
    ptr = alloc(4)
    params = cu.pack_params([c_uint64(ptr), c_uint32(1), c_uint32(1)])
    coop = cu.function("cuLaunchCooperativeKernel")
    assert coop(fn, 264, 1, 1, 1024, 1, 1, 0, None, params) == 0  # 2 blocks of 1024 per SM x 132 SMs
    assert coop(fn, 265, 1, 1, 1024, 1, 1, 0, None, params) == 720
    cu.call("cuCtxSynchronize")


def test_the_watchdog_stops_a_kernel_that_does_not_finish(sim, monkeypatch):
    real_ptx()
    spin = ".version 8.0\n.target sm_75\n.address_size 64\n.visible .entry spin()\n{\nLOOP:\n  bra LOOP;\n}\n"
    module, _ = cu.load_module(spin.encode())
    fn = c_void_p()
    cu.call("cuModuleGetFunction", byref(fn), module, b"spin")
    monkeypatch.setattr(sim.model, "watchdog_s", 0.2)
    cu.call("cuLaunchKernel", fn, 1, 1, 1, 32, 1, 1, 0, None, None, None)
    assert code("cuCtxSynchronize") == 702  # CUDA_ERROR_LAUNCH_TIMEOUT, sticky
    assert code("cuMemAlloc_v2", byref(c_uint64()), 64) == 702


def test_maxntid_and_reqntid_bound_the_block_on_the_interpreter(sim):
    """The interpreter keeps an entry's directives under their PTX names (``.maxntid``): the
    driver's limits read them there (they were read under ``maxntid`` alone, so on the interpreter
    a .maxntid kernel took 1024 threads)."""
    real_ptx()
    limit = c_int()
    for directive, bound in ((".maxntid 512, 1, 1", 512), (".reqntid 64, 2, 1", 128)):
        _, fn = load_fill(FILL_PTX.replace("{", directive + "\n{", 1))
        cu.call("cuFuncGetAttribute", byref(limit), 0, fn)
        assert limit.value == bound, directive
        assert _launch(fn, (1, 1, 1), (1024, 1, 1), values=(alloc(4), 1, 5)) == 701
