"""The cuda backend on a real GPU (marked gpu; skipped with a reason where there is none):
every op x type and every corpus program against the reference, resident buffers, async, timed,
graph replay, the kernel cache across processes, poisoning after a fault, interop, threads."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import zlib
from pathlib import Path

import numpy as np
import pytest

from vyre_decl.backends.config import DispatchConfig
from vyre_decl.backends.cuda import cuda_available
from vyre_decl.conform.corpus import load_corpus, make_inputs
from vyre_decl.conform.values import buffer_mismatches, from_bits
from vyre_decl.conform.witnesses import random_bits, witnesses
from vyre_decl.ir import DataType, VyreError, parse_program
from vyre_decl.registry import default_registry

from vyre_decl.conform.oneop import one_op_program

ROOT = Path(__file__).resolve().parent.parent
HAVE_GPU = cuda_available()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU: libcuda.so.1 cannot be loaded "
                                                  "or reports no device")]
REG = default_registry()


@pytest.fixture(scope="module")
def cuda():
    from vyre_decl.backends.cuda import CudaBackend

    return CudaBackend()


@pytest.fixture(scope="module")
def ref():
    from vyre_decl.backends.reference import ReferenceBackend

    return ReferenceBackend(REG)


def _inputs_for(op, binding, rng):
    """Witness combinations plus random values for each input of the op."""
    types = op.input_types(binding)
    cols = []
    w = [witnesses(t) for t in types]
    if len(types) == 1:
        cols = [w[0]]
    else:  # all pairs of the first two inputs' witnesses, random for the rest
        a = [x for x in w[0] for _ in w[1]]
        b = [y for _ in w[0] for y in w[1]]
        cols = [a, b] + [random_bits(t, len(a), rng) for t in types[2:]]
    n = len(cols[0])
    cols = [c + random_bits(t, 256, rng) for c, t in zip(cols, types)]
    return [from_bits(t, c) for t, c in zip(types, cols)], n + 256


def _compare(program, outs_ref, outs_gpu, ulp_of=lambda d: 0, note=""):
    for decl, e, a in zip(program.outputs, outs_ref, outs_gpu):
        bad = buffer_mismatches(decl.dtype, e, a, ulp_of(decl))
        assert bad.size == 0, f"{program.name}.{decl.name}[{bad[0]}]: reference {e[bad[0]] if bad[0] < len(e) else '-'}" \
                              f", cuda {a[bad[0]] if bad[0] < len(a) else '-'} ({bad.size} mismatches){note}"


def test_device_and_auto_choice(cuda):
    import vyre_decl

    d = cuda.device
    assert d.compute_capability >= (8, 0) and d.multiprocessors > 0 and d.warp_size == 32
    assert vyre_decl.acquire("auto").name == "cuda"
    print(f"\n{d.name} cc {d.compute_capability} driver {d.driver_version} {d.target}")


# an op without inputs (subgroup.lane_id) has no cases to draw: test_subgroups and corpus 46/47 run it
OPS = [(op.id, b) for op in REG for b in op.bindings() if op.signature.inputs]


@pytest.mark.parametrize("op_id, binding", OPS, ids=[f"{o}[{','.join(t.value for t in b)}]" for o, b in OPS])
def test_every_op_matches_the_reference(cuda, ref, op_id, binding):
    from vyre_decl.ops.check import required_attrs

    op = REG.get(op_id)
    program = one_op_program(op, binding, required_attrs(op, binding) or ())
    seed = zlib.crc32(op_id.encode())  # the same in every process (hash() of a str is not)
    args, _ = _inputs_for(op, binding, np.random.default_rng(seed))
    expect = ref.dispatch(program, args)
    got = cuda.dispatch(program, args)
    _compare(program, expect, got, note=f"; inputs: _inputs_for(op, binding, np.random.default_rng({seed}))")


KATS = [(op.id, k) for op in REG for k in range(len(op.kats))]


@pytest.mark.parametrize("op_id, k", KATS, ids=[f"{o}#{k}" for o, k in KATS])
def test_known_answers_on_the_gpu(cuda, op_id, k):
    op = REG.get(op_id)
    kat = op.kats[k]
    ins, out_t = op.input_types(kat.binding), op.output_type(kat.binding)
    cols = list(zip(*kat.cases))
    args = [from_bits(t, list(c)) for t, c in zip(ins, cols[:-1])]
    want = from_bits(out_t, list(cols[-1]))
    results = cuda.dispatch(one_op_program(op, kat.binding, kat.attrs), args)
    got = results[0]  # atomic ops: in0 holds the new values
    budget = op.accuracy(out_t) if out_t.is_float else 0  # known answers are true values, rounded
    assert buffer_mismatches(out_t, want, got, budget).size == 0, (got, want)


CORPUS = load_corpus()


@pytest.mark.parametrize("entry", CORPUS, ids=[c.name for c in CORPUS])
def test_corpus_matches_the_reference(cuda, ref, entry):
    for size in (0, 1, 63, 64, 65, 1000, 4097):
        args = make_inputs(entry.program, size, np.random.default_rng(size))
        cfg = DispatchConfig(grid=entry.grid)
        _compare(entry.program, ref.dispatch(entry.program, args, cfg), cuda.dispatch(entry.program, args, cfg))


INPLACE = parse_program("""program step workgroup(64, 1, 1) {
  buffer v: read_write u32[] @0
  buffer k: uniform u32[1] @1
  let i = gid.x
  if i < len(v) { v[i] = v[i] * 2u32 + k[0u32] }
}""")


def test_resident_buffers(cuda):
    data = np.arange(1000, dtype=np.uint32)
    v = cuda.upload(data)
    k = cuda.upload(np.array([3], np.uint32))
    pipe = cuda.compile(INPLACE)
    for _ in range(3):
        pipe.dispatch_resident([v, k])
    cuda.synchronize()
    want = data.copy()
    for _ in range(3):
        want = want * 2 + 3
    assert (v.download() == want).all()
    v.upload(np.array([7, 8], np.uint32), offset=10)
    assert v.download_range(9, 3).tolist() == [int(want[9]), 7, 8]
    z = cuda.allocate("f64", 5)
    assert z.download().tolist() == [0.0] * 5  # allocations are zero-filled
    with pytest.raises(VyreError) as info:
        pipe.dispatch_resident([z, k])
    assert info.value.codes == ["D002"]
    k.free()
    with pytest.raises(VyreError) as info:
        pipe.dispatch_resident([v, k])
    assert info.value.codes == ["D011"]
    with pytest.raises(VyreError) as info:
        pipe.dispatch_resident([v, np.zeros(1, np.uint32)])
    assert info.value.codes == ["D010"]


def test_async_and_timed(cuda, ref):
    entry = next(c for c in CORPUS if c.name == "13_nested_loops_matvec")
    jobs = [make_inputs(entry.program, 2000, np.random.default_rng(s)) for s in range(4)]
    pending = [cuda.dispatch_async(entry.program, a) for a in jobs]
    for p, a in zip(pending, jobs):
        _compare(entry.program, ref.dispatch(entry.program, a), p.result())
        assert p.done()
    outs, timing = cuda.dispatch_timed(entry.program, jobs[0])
    assert 0 < timing.device_s < timing.wall_s
    print(f"\ntimed: wall {timing.wall_s * 1e6:.1f} us, device {timing.device_s * 1e6:.1f} us")


def test_graph_replay(cuda):
    v = cuda.upload(np.zeros(4096, np.uint32))
    k1, k2 = cuda.upload(np.array([1], np.uint32)), cuda.upload(np.array([5], np.uint32))
    pipe = cuda.compile(INPLACE)
    seq = cuda.sequence([(pipe, [v, k1]), (pipe, [v, k2]), (pipe, [v, k1])])
    graph = seq.capture()
    before = cuda.telemetry()["graph_launches"]
    for _ in range(3):
        graph.replay()
    cuda.synchronize()
    want = np.zeros(4096, np.uint64)
    for _ in range(3):
        want = ((want * 2 + 1) * 2 + 5) * 2 + 1
    assert (v.download() == (want & 0xFFFFFFFF).astype(np.uint32)).all()
    assert cuda.telemetry()["graph_launches"] == before + 3
    graph.close()


def test_sequences_take_a_prefix_a_repeat_and_read_back_in_the_same_call(cuda):
    v = cuda.upload(np.zeros(4096, np.uint32))
    k1, k5 = cuda.upload(np.array([1], np.uint32)), cuda.upload(np.array([5], np.uint32))
    pipe = cuda.compile(INPLACE)  # v = 2 v + k
    seq = cuda.sequence([(pipe, [v, k1])], prefix=[(pipe, [v, k5])], repeat=4)
    assert seq.launches == 5
    once = ((0 * 2 + 5) * 2 + 1) * 2 * 2 * 2 + 7  # prefix, then four steps: 95
    syncs = cuda.telemetry()["syncs"]
    head, tail = seq.run_and_read([(v, 0, 3), (v, 4090, 6)])
    assert head.tolist() == [once] * 3 and tail.tolist() == [once] * 6
    assert cuda.telemetry()["syncs"] == syncs + 1  # launches and both reads: one wait
    with seq.capture() as graph:
        assert graph.launches == 5
        (whole,) = graph.replay_and_read([v])
        assert (whole == once * 32 + once).all()
        with pytest.raises(VyreError) as e:  # checked before the replay: nothing runs
            graph.replay_and_read([(v, 4095, 2)])
        assert e.value.codes == ["D003"] and (cuda.download(v) == whole).all()
    for bad in (0, -1, 2.0, True):
        with pytest.raises(VyreError) as e:
            cuda.sequence([(pipe, [v, k1])], repeat=bad)
        assert e.value.codes == ["D008"]


CACHE_SCRIPT = r"""
import json, sys, time
import numpy as np
from vyre_decl.backends.cuda import CudaBackend
from vyre_decl.conform.corpus import load_corpus
prog = next(c for c in load_corpus() if c.name == "16_workgroup_scan").program
be = CudaBackend()
t = time.perf_counter()
pipe = be.compile(prog)
compile_ms = (time.perf_counter() - t) * 1e3
out, = pipe.dispatch([np.ones(256, np.uint32)])
print(json.dumps({"telemetry": be.telemetry(), "compile_ms": compile_ms, "ok": out.tolist()[:4] == [1, 2, 3, 4]}))
"""


def _run_cache_script(tmp_path):
    env = dict(os.environ, VYRE_DECL_CACHE_DIR=str(tmp_path / "cache"))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    proc = subprocess.run([sys.executable, "-c", CACHE_SCRIPT], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_second_process_does_not_jit(tmp_path):
    first = _run_cache_script(tmp_path)
    second = _run_cache_script(tmp_path)
    assert first["ok"] and second["ok"]
    assert first["telemetry"]["jit_compiles"] == 1 and first["telemetry"]["cubin_disk_hits"] == 0
    assert second["telemetry"]["jit_compiles"] == 0 and second["telemetry"]["cubin_disk_hits"] == 1
    for entry in (tmp_path / "cache" / "cubin").rglob("*"):
        if entry.is_file():
            entry.write_bytes(entry.read_bytes()[:-7] + b"garbage")
    third = _run_cache_script(tmp_path)  # a corrupt entry is detected and rebuilt
    assert third["ok"] and third["telemetry"]["jit_compiles"] == 1
    print(f"\nkernel: first process JIT {first['telemetry']['jit_ms']} ms + load {first['telemetry']['load_us']} us; "
          f"second process load from the disk cache {second['telemetry']['load_us']} us, no JIT; after corruption "
          f"JIT {third['telemetry']['jit_ms']} ms")


FAULT_SCRIPT = r"""
import json
from ctypes import byref, c_void_p
import numpy as np
from vyre_decl import libcuda
from vyre_decl.backends.cuda import CudaBackend, CudaPoisoned
from vyre_decl.ir import VyreError, parse_program
be = CudaBackend()
prog = parse_program('''program poke workgroup(64, 1, 1) {
  buffer o: read_write u32[] @0
  o[gid.x] = 1u32
}''')
report = {}
class Bogus:  # foreign device memory at an address nobody owns: refused before any launch
    __cuda_array_interface__ = {"shape": (1 << 20,), "typestr": "<u4", "data": (0x10, False), "version": 3}
try:
    be.wrap(Bogus())
except VyreError as e:
    report["wrap"] = e.codes
# a hand-written kernel in the same context that stores to address 16: a real fault
ptx = ".version 7.8\n.target sm_75\n.address_size 64\n.visible .entry bad()\n{\n .reg .u64 %a;\n mov.u64 %a, 16;\n st.global.u32 [%a], 0;\n ret;\n}\n"
module, _ = libcuda.load_module(ptx.encode())
fn = c_void_p()
libcuda.call("cuModuleGetFunction", byref(fn), module, b"bad")
launcher = libcuda.Launcher(fn, [], (1, 1, 1))
launcher.set_stream(c_void_p(be.stream_handle))
launcher()
try:
    be.synchronize()
except libcuda.CudaError as e:
    report["fault"] = e.name
try:
    be.dispatch(prog, [np.zeros(4, np.uint32)])
except CudaPoisoned as e:
    report["after"] = e.codes
print(json.dumps(report))
"""


def test_fault_poisons_the_backend_in_a_subprocess():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    proc = subprocess.run([sys.executable, "-c", FAULT_SCRIPT], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report == {"wrap": ["D017"], "fault": "CUDA_ERROR_ILLEGAL_ADDRESS", "after": ["C002"]}


def test_cuda_array_interface_round_trip(cuda):
    data = np.arange(100, dtype=np.float32) / 7
    buf = cuda.upload(data)
    cai = buf.__cuda_array_interface__
    assert cai["version"] == 3 and cai["shape"] == (100,) and cai["typestr"] == "<f4" and cai["data"][0] == buf.ptr
    view = cuda.wrap(buf)
    assert (view.download() == data).all()


def test_cupy_reads_a_buffer_through_the_cuda_array_interface(cuda):
    cp = pytest.importorskip("cupy", reason="CuPy is not installed: a resident buffer is not read through CuPy")
    data = np.arange(100, dtype=np.float32) / 7
    assert (cp.asnumpy(cp.asarray(cuda.upload(data))) == data).all()


def test_threads_share_one_backend(cuda, ref):
    entry = next(c for c in CORPUS if c.name == "11_if_else_chain")
    errors = []

    def work(seed):
        try:
            for s in range(10):
                a = make_inputs(entry.program, 500 + s, np.random.default_rng(seed * 100 + s))
                _compare(entry.program, ref.dispatch(entry.program, a), cuda.dispatch(entry.program, a))
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_bad_input_touches_no_device_memory(cuda):
    before = cuda.telemetry()
    prog = next(c for c in CORPUS if c.name == "01_vadd_u32").program
    with pytest.raises(VyreError, match="D002"):
        cuda.dispatch(prog, [np.zeros(4, np.int32), np.zeros(4, np.uint32)])
    big = parse_program("program big workgroup(1024, 2, 1) { buffer o: write u32[4] @0\n o[0u32] = 1u32 }")
    with pytest.raises(VyreError, match="V003"):  # no GPU launches 2048 invocations per workgroup
        cuda.dispatch(big, [], DispatchConfig(grid=(1, 1, 1)))
    wide = parse_program("program wide workgroup(1, 1, 1) { buffer o: write u32[4] @0\n o[0u32] = 1u32 }")
    with pytest.raises(VyreError, match="D009"):  # more workgroups on y than the device allows
        cuda.dispatch(wide, [], DispatchConfig(grid=(1, 70000, 1)))
    after = cuda.telemetry()
    assert after["bytes_h2d"] == before["bytes_h2d"] and after["launches"] == before["launches"]


def test_repeat(cuda, ref):
    a = np.arange(300, dtype=np.uint32)
    k = np.array([1], np.uint32)
    cfg = DispatchConfig(repeat=4)
    _compare(INPLACE, ref.dispatch(INPLACE, [a, k], cfg), cuda.dispatch(INPLACE, [a, k], cfg))


def test_jit_errors_name_the_template_and_statement(tmp_path):
    from vyre_decl.backends.cuda import CudaBackend
    from vyre_decl.registry import load

    (tmp_path / "bad.toml").write_text("""
[dialect]
name = "badjit"
version = "1.0.0"
[[op]]
id = "badjit.add"
summary = "a template with a typo"
signature = "(a: u32, b: u32) -> u32"
reference = "add"
ptx = "add.u33 {out}, {a}, {b};"
""")
    be = CudaBackend(registry=load([tmp_path], env=False))
    prog = parse_program("""program m workgroup(32, 1, 1) {
      buffer a: read u32[] @0
      buffer o: write u32[len(a)] @1
      o[gid.x] = badjit.add(a[gid.x], 1u32)
    }""")
    with pytest.raises(VyreError) as info:
        be.compile(prog)
    msg = str(info.value)
    assert "E012" in msg and "add.u33" in msg and ">>" in msg and "from op badjit.add<>" in msg


def test_resident_kernels_see_declared_sizes_and_graphs_refuse_freed_buffers(cuda, ref):
    entry = next(c for c in CORPUS if c.name == "27_oob_stores")
    a = np.arange(40, dtype=np.uint32) * 7
    expected = ref.dispatch(entry.program, [a, np.zeros(16, np.uint32)])
    bufs = [cuda.upload(a), cuda.upload(np.zeros(32, np.uint32)), cuda.allocate("u32", 32)]  # larger than declared
    pipe = cuda.compile(entry.program)
    pipe.dispatch_resident(bufs)
    cuda.synchronize()
    assert (bufs[1].download()[:16] == expected[0]).all() and not bufs[1].download()[16:].any()
    assert (bufs[2].download()[:4] == expected[1]).all() and not bufs[2].download()[4:].any()
    with pytest.raises(VyreError) as info:
        pipe.dispatch_resident([bufs[0], cuda.allocate("u32", 8), bufs[2]])  # smaller than declared
    assert info.value.codes == ["D003"]
    graph = cuda.sequence([(pipe, bufs)]).capture()
    graph.replay()
    bufs[2].free()
    with pytest.raises(VyreError) as info:
        graph.replay()
    assert info.value.codes == ["D011"]


def test_wrap_refuses_what_it_cannot_view_safely(cuda):
    buf = cuda.upload(np.arange(16, dtype=np.uint32))

    class Foreign:
        def __init__(self, **cai):
            self.__cuda_array_interface__ = {"shape": (8,), "typestr": "<u4", "data": (buf.ptr, False), "version": 3,
                                             **cai}

    assert cuda.wrap(Foreign()).download().tolist() == list(range(8))
    assert cuda.wrap(Foreign(strides=(4,))).count == 8
    for bad in (Foreign(strides=(8,)), Foreign(typestr="|b1")):
        with pytest.raises(VyreError) as info:
            cuda.wrap(bad)
        assert info.value.codes == ["D012"]
    owner = Foreign()
    assert cuda.wrap(owner).owner is owner


def test_compositions_with_typed_constants_and_steps_are_bit_identical():
    from vyre_decl.backends.cuda import CudaBackend
    from vyre_decl.backends.reference import ReferenceBackend
    from vyre_decl.registry import load

    reg = load([ROOT / "tests" / "fixtures" / "compose_ops"], env=False)
    assert reg.errors == ()
    gpu, cpu = CudaBackend(registry=reg), ReferenceBackend(reg)
    rng = np.random.default_rng(5)
    for op in (o for o in reg if o.dialect == "t.gen"):
        for b in op.bindings():
            program = one_op_program(op, b)
            args = [from_bits(t, witnesses(t) + random_bits(t, 4096 - len(witnesses(t)), rng)) for t in op.input_types(b)]
            _compare(program, cpu.dispatch(program, args), gpu.dispatch(program, args))
    program = parse_program("""program m workgroup(64, 1, 1) {
      buffer a: read f32[] @0
      buffer o: write f32[len(a)] @1
      let i = gid.x
      o[i] = t.gen.clamp01(t.gen.triple_add(a[i], 1.0f32))
    }""")
    a = from_bits(DataType.F32, random_bits(DataType.F32, 1 << 16, rng))
    _compare(program, cpu.dispatch(program, [a]), gpu.dispatch(program, [a]))


def test_sm_75_code_runs_on_this_gpu_and_agrees_with_the_reference(tmp_path):
    """VYRE_DECL_CUDA_TARGET=sm_75 emits what a Turing GPU gets (bf16 stores rounded by hand,
    the f16/bf16 pack ops from their compositions) and runs it here: conformance of the convert
    ops and of the narrow-type programs against the reference."""
    env = dict(os.environ, VYRE_DECL_CUDA_TARGET="sm_75", PYTHONPATH=str(ROOT))
    cert = tmp_path / "cert.json"
    proc = subprocess.run([sys.executable, "-m", "vyre_decl.conform", "--backend", "cuda", "--ops", "primitive.convert.*",
                           "--programs", str(ROOT / "corpus"), "--no-routines", "--cases", "4000", "--out", str(cert),
                           "--quiet"], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    got = json.loads(cert.read_text())
    assert "sm_75" in json.dumps(got["backend"]), got["backend"]


def test_an_explicit_grid_equal_to_the_inferred_one_takes_the_vectorised_entry(cuda):
    """A routine's map step gives its grid (ceil_div(len(x), 256)); the same invocations have an
    effect as under the inferred grid, so the four-element entry runs it; any other grid does not."""
    from vyre_decl.bench.kernels import add_program

    pipe = cuda.compile(add_program("u32"))
    a = np.arange(1000, dtype=np.uint32)
    b = a[::-1].copy()
    for grid, vector in (((4, 1, 1), True), ((5, 1, 1), False), ((3, 1, 1), False)):
        launcher = pipe._prepare([a, b], DispatchConfig(grid=grid))[4]
        assert (launcher is pipe.vector_launcher) is vector, grid
        (out,) = pipe.dispatch([a, b], DispatchConfig(grid=grid))
        covered = min(1000, grid[0] * 256)
        np.testing.assert_array_equal(out[:covered], (a + b)[:covered])
        assert not out[covered:].any()
    bufs = [cuda.upload(a), cuda.upload(b), cuda.allocate("u32", 1000)]
    try:
        assert pipe.bind(bufs, (4, 1, 1)).grid == (1, 1, 1)  # 1,024 elements a workgroup of the _v4 entry
        assert pipe.bind(bufs, (5, 1, 1)).grid == (5, 1, 1)
        cuda.sequence([(pipe, bufs, (4, 1, 1))]).run()
        np.testing.assert_array_equal(cuda.download(bufs[2]), a + b)
    finally:
        for buf in bufs:
            cuda.free(buf)


def test_vectorised_maps_agree_at_odd_sizes_explicit_grids_partial_stores_and_unaligned_memory(cuda):
    from vyre_decl.bench.kernels import add_program

    pipe = cuda.compile(add_program("u32"))
    assert pipe.vector_function is not None  # map-shaped: the _v4 entry is used for inferred grids
    rng = np.random.default_rng(3)
    for n in (0, 1, 2, 3, 4, 5, 7, 8, 9, 31, 1000, 4097, (1 << 20) + 3):
        a, b = rng.integers(0, 2**32, n, dtype=np.uint32), rng.integers(0, 2**32, n, dtype=np.uint32)
        np.testing.assert_array_equal(pipe.dispatch([a, b])[0], a + b, err_msg=f"n = {n}")
    a = np.arange(1000, dtype=np.uint32)
    (out,) = pipe.dispatch([a, a], DispatchConfig(grid=(1, 1, 1)))  # explicit: gid.x < 256 only, as written
    np.testing.assert_array_equal(out[:256], 2 * a[:256])
    assert not out[256:].any()
    # stores under a data-dependent condition: unwritten elements keep their value
    keep = parse_program("""program keep workgroup(64, 1, 1) {
      buffer a: read u32[] @0
      buffer out: read_write u32[len(a)] @1
      let i = gid.x
      if a[i] % 3u32 == 0u32 { out[i] = a[i] * 2u32 }
    }""")
    kp = cuda.compile(keep)
    assert kp.vector_function is not None
    old = np.full(1003, 7, np.uint32)
    x = np.arange(1003, dtype=np.uint32)
    np.testing.assert_array_equal(kp.dispatch([x, old])[0], np.where(x % 3 == 0, 2 * x, 7).astype(np.uint32))
    # memory that is not 16-byte aligned takes the scalar path
    torch = pytest.importorskip("torch", reason="torch makes a device array at an odd address")
    signed = cuda.compile(add_program("i32"))
    t = torch.arange(1001, dtype=torch.int32, device="cuda")[1:]  # 4 bytes past an aligned start
    assert t.data_ptr() % 16 == 4
    view = cuda.wrap(t)
    res = cuda.allocate("i32", 1000)
    signed.dispatch_resident([view, view, res])
    np.testing.assert_array_equal(cuda.download(res), 2 * np.arange(1, 1001, dtype=np.int32))
    unaligned_out = cuda.wrap(torch.zeros(1001, dtype=torch.int32, device="cuda")[1:])
    signed.dispatch_resident([res, res, unaligned_out])
    np.testing.assert_array_equal(cuda.download(unaligned_out), 4 * np.arange(1, 1001, dtype=np.int32))


def test_fuzz_regressions_give_the_reference_bits(cuda, ref):
    """Programs conform --fuzz found, minimised, with the inputs that showed them: the driver's JIT
    folded add.sat.s32(0, neg.s32(x)) into a saturating subtraction (2^31 - 1 for x = -2^31), and a
    64-bit rotation by 0 of a zero-extended u32 into a sign extension."""
    cases = [
        ("program t workgroup(128, 1, 1) {\n  buffer a2: read f64[] @0\n  buffer o: write i32[len(a2)] @1\n"
         "  let i = gid.x\n  o[i] = primitive.math.add_sat(0i32, -(a2[i] as i32))\n}",
         [np.array([0.0, -0.0, 0.0, -np.inf])]),
        ("program t workgroup(32, 1, 1) {\n  buffer a: read i32[] @0\n  buffer o: write i32[len(a)] @1\n"
         "  let i = gid.x\n  o[i] = primitive.math.add_sat(-a[i], 0i32)\n}",
         [np.array([0, 1, -1, -2**31, 2**31 - 1], np.int32)]),
        ("program t workgroup(64, 1, 1) {\n  buffer a0: read u32[] @0\n  buffer acc: read_write i64[8] @1\n"
         "  let v3 = atomic primitive.atomic.xor(acc[gid.x], primitive.bitwise.rotr(a0[0u32] as i64, 0i64))\n}",
         [np.array([0x9517C59B], np.uint32), np.zeros(8, np.int64)]),
    ]
    for src, inputs in cases:
        p = parse_program(src)
        expected, actual = ref.dispatch(p, inputs), cuda.dispatch(p, inputs)
        assert [e.tolist() for e in expected] == [a.tolist() for a in actual], src
        assert -2**31 in expected[0].tolist() or 0x9517C59B in expected[0].tolist()


def test_an_ordered_comparison_with_the_abs_of_a_nan_is_false(cuda, ref):
    """conform --fuzz (seed 406002454, H100): the JIT took abs.f32 for never NaN and folded
    -1.0 < abs(x) to true; float abs is now a copysign (ops/primitive.math.toml, corpus/45)."""
    p = parse_program("program t workgroup(64, 1, 1) {\n  buffer a1: read f64[] @0\n  buffer o: write bool[len(a1)] @1\n"
                      "  let i = gid.x\n  o[i] = -1i32 as f32 < primitive.math.abs(a1[i] as f32)\n}")
    inputs = [np.array([0.0, np.nan, 1.0])]
    assert ref.dispatch(p, inputs)[0].tolist() == [True, False, True]
    assert cuda.dispatch(p, inputs)[0].tolist() == [True, False, True]


def test_what_reads_the_abs_of_min_sees_a_negative_number(cuda, ref):
    """conform --fuzz (seed 614, H200): ptxas took abs.s32 (IABS) for never negative and computed
    abs(MIN) % 7 as an unsigned remainder (2, not -2); integer abs is now max(a, -a)
    (ops/primitive.math.toml, corpus/50)."""
    p = parse_program("program t workgroup(64, 1, 1) {\n  buffer a: read i32[] @0\n  buffer o: write i32[len(a)] @1\n"
                      "  let i = gid.x\n  o[i] = primitive.math.abs(a[i]) % 7i32\n}")
    inputs = [np.array([-2**31, -9, 9], np.int32)]
    assert ref.dispatch(p, inputs)[0].tolist() == [-2, 2, 2]
    assert cuda.dispatch(p, inputs)[0].tolist() == [-2, 2, 2]
