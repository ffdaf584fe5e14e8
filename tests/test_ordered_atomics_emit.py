"""Ordered atomics and bounded waits on the GPU path (issue 28): the emitted PTX (.sem.scope
qualifiers, atom without them where an atomic is relaxed at device scope, the counted wait loop) on
every target, ptxas accepting it, the simulator's decoding of orders, scopes and fences as ptxas
checks them, the simulated device against the reference bit for bit (its waits end after their
bound, with the outcome its schedule gives), and the CUDA backend (marked gpu: the simulated H100
under VYRE_DECL_CUDA_SIM, a real GPU elsewhere)."""

from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest

import vyre_decl
from vyre_decl.backends.config import DispatchConfig
from vyre_decl.backends.cuda import cuda_available
from vyre_decl.conform.corpus import load_corpus, make_inputs
from vyre_decl.emit import emit
from vyre_decl.emit.ptxas import find_ptxas
from vyre_decl.ir import MemoryOrder, MemoryScope, parse_program
from vyre_decl.ops.simcheck import run_program
from vyre_decl.sim.ptx import load_module
from vyre_decl.sim.ptx_types import PtxError

from sim_ptx_helpers import assert_matches

REF = vyre_decl.acquire("reference")
TARGETS = ["sm_75", "sm_80", "sm_90"]
CORPUS = {c.name: c.program for c in load_corpus()}
LOOKBACK = CORPUS["49_lookback_scan"]
_SEM = {"relaxed": ".relaxed", "acquire": ".acquire", "release": ".release", "acq_rel": ".acq_rel"}
_SCOPE = {"workgroup": ".cta", "device": ".gpu"}


def _program(body: str, wg: int = 64) -> vyre_decl.ir.Program:
    return parse_program(f"program t workgroup({wg}, 1, 1) {{\n  buffer f: read_write u32[] @0\n"
                         f"  buffer w: read_write i64[] @1\n  buffer part: workgroup u32[8]\n{body}\n}}\n")


def _lines(text: str) -> list[str]:
    return [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.strip().startswith("//")]


# ----------------------------------------------------------------------------- the emitted PTX


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("order", list(MemoryOrder))
@pytest.mark.parametrize("scope", list(MemoryScope))
def test_an_atomic_carries_its_order_and_scope(target, order, scope):
    qual = f"atomic.{order.value}.{scope.value}"
    space = "global" if scope is MemoryScope.DEVICE or order is MemoryOrder.RELAXED else "shared"
    buf, idx = ("f", "gid.x") if space == "global" else ("part", "lid.x")
    text = emit(_program(f"  let v = {qual} primitive.atomic.add({buf}[{idx}], 1u32)\n  f[gid.x] = v"),
                target=target).text
    quals = "" if (order, scope) == (MemoryOrder.RELAXED, MemoryScope.DEVICE) else _SEM[order.value] + _SCOPE[scope.value]
    assert f"atom{quals}.{space}.add.u32 " in text, _lines(text)


@pytest.mark.parametrize("target", TARGETS)
def test_atomic_loads_and_stores_always_carry_theirs(target):
    text = emit(_program("  let a = atomic f[gid.x]\n  let b = atomic.acquire.workgroup part[lid.x]\n"
                         "  let c = atomic.acquire w[gid.x]\n  atomic.release f[gid.x] = a + b\n"
                         "  atomic w[gid.x] = c\n  atomic.release.workgroup part[lid.x] = a"), target=target).text
    for instr in ("ld.relaxed.gpu.global.u32 ", "ld.acquire.cta.shared.u32 ", "ld.acquire.gpu.global.s64 ",
                  "st.release.gpu.global.u32 ", "st.relaxed.gpu.global.s64 ", "st.release.cta.shared.u32 "):
        assert len(re.findall(r"@%p\d+ " + re.escape(instr), text)) == 1, (instr, _lines(text))  # under the bounds predicate


def test_a_wait_is_a_counted_loop_of_reads():
    text = emit(_program("  f[gid.x] = atomic.acquire wait(f[gid.x + 1u32], 7u32, 33u32)")).text
    body = _lines(text[text.index("body[0]"):])
    start = next(i for i, ln in enumerate(body) if ln.startswith("mov.u32") and ln.endswith(", 0;") and "bra" in body[i + 1])
    out, done = body[start].split()[1].rstrip(","), body[start + 1].split()[-1].rstrip(";")
    top = body[start + 3].rstrip(":")
    assert re.fullmatch(r"@!%p\d+ bra \$L\d+_wait_end;", body[start + 1])
    assert re.fullmatch(r"mov\.u32 %r\d+, 33;", body[start + 2]) and top.endswith("_wait")
    assert body[start + 4] == f"ld.acquire.gpu.global.u32 {out}, [{body[start + 4].split('[')[1]}"
    assert re.fullmatch(rf"setp\.ne\.u32 (%p\d+), {re.escape(out)}, %r\d+;", body[start + 5])
    assert body[start + 6].endswith(f"bra {done};") and body[start + 7].startswith("sub.u32")
    assert body[start + 9].endswith(f"bra {top};") and body[start + 10] == f"{done}:"


def test_programs_without_orders_emit_no_qualifiers():
    for name, program in CORPUS.items():
        if name == "49_lookback_scan":
            continue
        text = emit(program).text
        assert not re.search(r"\.(relaxed|acquire|release|acq_rel|cta|gpu)\b", text), name
    assert "atom.global.add.u32" in emit(CORPUS["20_histogram_global"]).text


def test_no_vectorised_entry_for_an_atomic_load_or_store():
    plain = parse_program("program m workgroup(64, 1, 1) {\n  buffer x: read_write u32[] @0\n  buffer o: write u32[len(x)] @1\n"
                          "  let i = gid.x\n  o[i] = x[i]\n}")
    assert emit(plain).vector_entry is not None
    for body in ("o[i] = atomic.acquire x[i]", "atomic.release o[i] = x[i]", "o[i] = atomic wait(x[i], 0u32, 2u32)"):
        p = parse_program("program m workgroup(64, 1, 1) {\n  buffer x: read_write u32[] @0\n"
                          f"  buffer o: write u32[len(x)] @1\n  let i = gid.x\n  {body}\n}}")
        assert emit(p).vector_entry is None, body


@pytest.mark.skipif(find_ptxas() is None, reason="ptxas not found (pip install '.[test]' ships it)")
@pytest.mark.parametrize("target", TARGETS)
def test_ptxas_assembles_every_form(target):
    from vyre_decl.emit.ptxas import assemble

    forms = [f"  let v{k} = atomic.{o.value}.{s.value} primitive.atomic.{op}(f[gid.x], 1u32)"
             for k, (o, s, op) in enumerate((o, s, op) for o in MemoryOrder for s in MemoryScope
                                             for op in ("add", "exchange"))]
    forms += ["  let a = atomic.acquire wait(w[gid.x], -1i64, 1000u32)", "  let b = atomic.relaxed.workgroup wait(part[lid.x], 0u32, 4u32)",
              "  atomic.release.workgroup part[lid.x] = b", "  atomic.release w[gid.x] = a", "  let c = atomic.acquire.workgroup f[0u32]"]
    assert assemble(emit(_program("\n".join(forms)), target=target).text, target).ok
    assert assemble(emit(LOOKBACK, target=target).text, target).ok


# ----------------------------------------------------------------------------- the simulator decodes as ptxas checks

# (instruction, accepted) as CUDA 13's ptxas answers for .target sm_90, PTX ISA 7.8
PTXAS = [
    ("ld.acquire.gpu.global.u32 %r0, [%rd0];", True), ("ld.global.acquire.gpu.u32 %r0, [%rd0];", True),
    ("ld.relaxed.cta.shared.u32 %r0, [sh];", True), ("ld.acquire.sys.global.u32 %r0, [%rd0];", True),
    ("ld.relaxed.gpu.global.v4.u32 {%r0, %r1, %r2, %r3}, [%rd0];", True), ("ld.volatile.global.u32 %r0, [%rd0];", True),
    ("ld.weak.local.u32 %r0, [lo];", True), ("ld.global.nc.u32 %r0, [%rd0];", True),
    ("st.release.gpu.global.u32 [%rd0], %r1;", True), ("st.relaxed.cta.shared.u32 [sh], %r1;", True),
    ("atom.acq_rel.cta.shared.cas.b32 %r0, [sh], %r1, %r1;", True), ("atom.gpu.global.add.u32 %r0, [%rd0], %r1;", True),
    ("atom.acquire.global.add.u32 %r0, [%rd0], %r1;", True), ("red.release.gpu.global.add.u32 [%rd0], %r1;", True),
    ("fence.sc.gpu;", True), ("fence.acq_rel.cta;", True), ("fence.gpu;", True), ("membar.gl;", True),
    ("ld.acquire.global.u32 %r0, [%rd0];", False), ("ld.gpu.global.u32 %r0, [%rd0];", False),
    ("ld.release.gpu.global.u32 %r0, [%rd0];", False), ("ld.acq_rel.gpu.global.u32 %r0, [%rd0];", False),
    ("ld.volatile.gpu.global.u32 %r0, [%rd0];", False), ("ld.relaxed.gpu.local.u32 %r0, [lo];", False),
    ("ld.acquire.gpu.global.nc.u32 %r0, [%rd0];", False), ("ld.acquire.gpu.cta.global.u32 %r0, [%rd0];", False),
    ("ld.acquire.acquire.gpu.global.u32 %r0, [%rd0];", False), ("ld.volatile.local.u32 %r0, [lo];", False),
    ("st.acquire.gpu.global.u32 [%rd0], %r1;", False), ("st.release.global.u32 [%rd0], %r1;", False),
    ("st.release.gpu.global.wb.u32 [%rd0], %r1;", False), ("atom.sc.gpu.global.add.u32 %r0, [%rd0], %r1;", False),
    ("atom.volatile.global.add.u32 %r0, [%rd0], %r1;", False), ("red.acquire.gpu.global.add.u32 [%rd0], %r1;", False),
    ("fence.acq_rel;", False), ("fence.relaxed.gpu;", False), ("fence.acquire.gpu;", False), ("fence.gpu.cta;", False),
    ("membar.gpu;", False), ("membar;", False),
]
_KERNEL = """.version {ver}
.target {sm}
.address_size 64
.visible .entry k(.param .u64 p)
{{
 .reg .u64 %rd<4>; .reg .u32 %r<4>; .reg .pred %p<2>; .shared .align 4 .b8 sh[64]; .local .align 4 .b8 lo[16];
 ld.param.u64 %rd0, [p];
 mov.u32 %r1, 1;
 {instr}
 ret;
}}
"""


def _sim_accepts(instr: str, sm: int = 90, ver: str = "7.8") -> bool:
    try:
        load_module(_KERNEL.format(ver=ver, sm=f"sm_{sm}", instr=instr), sm)
    except PtxError:
        return False
    return True


@pytest.mark.parametrize("instr,accepted", PTXAS)
def test_the_simulator_accepts_exactly_what_ptxas_accepts(instr, accepted):
    assert _sim_accepts(instr) == accepted


def test_orders_need_their_targets_and_versions():
    assert _sim_accepts("fence.acquire.gpu;", 90, "8.6") and not _sim_accepts("fence.acquire.gpu;", 80, "8.6")
    assert not _sim_accepts("ld.acquire.cluster.global.u32 %r0, [%rd0];", 80, "7.0")
    assert _sim_accepts("ld.acquire.gpu.global.u32 %r0, [%rd0];", 75, "7.0")
    assert not _sim_accepts("ld.acquire.gpu.global.u32 %r0, [%rd0];", 61, "5.0")
    assert not _sim_accepts("atom.cta.global.add.u32 %r0, [%rd0], %r1;", 52, "4.1")
    assert _sim_accepts("atom.cta.global.add.u32 %r0, [%rd0], %r1;", 61, "5.0")


@pytest.mark.skipif(find_ptxas() is None, reason="ptxas not found (pip install '.[test]' ships it)")
def test_the_table_is_what_ptxas_says():
    exe = find_ptxas()
    assert exe is not None
    with tempfile.TemporaryDirectory() as tmp:
        for instr, accepted in PTXAS:
            src = Path(tmp) / "k.ptx"
            src.write_text(_KERNEL.format(ver="7.8", sm="sm_90", instr=instr))
            proc = subprocess.run([exe, "-arch=sm_90", str(src), "-o", str(Path(tmp) / "k.cubin")], capture_output=True)
            assert (proc.returncode == 0) == accepted, instr


# ----------------------------------------------------------------------------- the simulated device


@pytest.mark.parametrize("target", ["sm_90", "sm_75"])
@pytest.mark.parametrize("n", [1, 65, 1000, 4097])
def test_the_look_back_scan_matches_the_reference_on_the_simulator(target, n):
    x = np.random.default_rng(n).integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    assert_matches(LOOKBACK, [x], REF.dispatch(LOOKBACK, [x]), target=target)
    got, _ = run_program(LOOKBACK, [x], target=target)
    np.testing.assert_array_equal(got[0], np.cumsum(x.astype(np.uint64)).astype(np.uint32))


def test_a_block_per_group_makes_waits_on_later_blocks_run_out(monkeypatch):
    """The simulator's schedule, as the reference's: with a block per group (a chunk per workgroup),
    a wait on a later block's flag times out, one on an earlier block's succeeds; in one group both
    see flags stored before the wait in program order. Outcomes agree, and corpus 49 is right."""
    p = parse_program("program t workgroup(32, 1, 1) {\n  buffer f: read_write u32[] @0\n  buffer out: write u32[8] @1\n"
                      "  let w = wgid.x\n  if lid.x == 0u32 {\n    atomic.release f[w] = w + 1u32\n"
                      "    out[w] = atomic.acquire wait(f[w + 1u32], 0u32, 4u32)\n"
                      "    out[w + 4u32] = atomic.acquire wait(f[w - 1u32], 0u32, 4u32)\n  }\n}\n")
    f, cfg = np.zeros(4, np.uint32), DispatchConfig(grid=(4, 1, 1))
    for chunk, want in ((1 << 20, [2, 3, 4, 0, 0, 1, 2, 3]), (32, [0, 0, 0, 0, 0, 1, 2, 3])):
        monkeypatch.setattr("vyre_decl.reference.program.CHUNK_INVOCATIONS", chunk)
        monkeypatch.setattr("vyre_decl.sim.ptx_exec.LANES_PER_GROUP", chunk)
        expected = REF.dispatch(p, [f], cfg)
        np.testing.assert_array_equal(expected[1], want)
        assert_matches(p, [f], expected, grid=(4, 1, 1))
        x = np.arange(300, dtype=np.uint32) * 7
        assert_matches(LOOKBACK, [x], REF.dispatch(LOOKBACK, [x]))


def test_workgroup_memory_flags_and_wide_words_match_the_reference_without_race_findings():
    """Strong accesses to workgroup memory (a release store, acquire waits and loads, no barrier
    between them) are no race; i64 and f32 words are loaded and stored whole."""
    p = parse_program("program t workgroup(64, 1, 1) {\n  buffer x: read_write i64[] @0\n  buffer y: read_write f32[] @1\n"
                      "  buffer out: write u32[len(x)] @2\n  buffer part: workgroup u32[2]\n  let l = lid.x\n"
                      "  if l == 0u32 {\n    atomic.release.workgroup part[0u32] = wgid.x + 7u32\n  }\n"
                      "  let seen = atomic.acquire.workgroup wait(part[0u32], 0u32, 16u32)\n"
                      "  let again = atomic.acquire.workgroup part[0u32]\n"
                      "  atomic.release x[gid.x] = atomic.acquire x[gid.x] * -3i64\n"
                      "  atomic y[gid.x] = atomic.acquire.workgroup y[gid.x] + 0.5f32\n"
                      "  out[gid.x] = seen + again\n}\n")
    rng = np.random.default_rng(3)
    x = rng.integers(-2**62, 2**62, 200, dtype=np.int64)
    y = rng.standard_normal(200).astype(np.float32)
    for target in ("sm_90", "sm_75"):
        want = REF.dispatch(p, [x, y])
        np.testing.assert_array_equal(want[2], 2 * (np.arange(200) // 64 + 7))
        assert_matches(p, [x, y], want, target=target)  # and no sanitizer finding
    racy = parse_program("program t workgroup(64, 1, 1) {\n  buffer out: write u32[64] @0\n  buffer part: workgroup u32[1]\n"
                         "  if lid.x == 0u32 {\n    part[0u32] = 5u32\n  }\n  out[lid.x] = part[0u32]\n}\n")
    _, findings = run_program(racy, [], grid=(1, 1, 1))
    assert [f.kind for f in findings] == ["shared_race"]  # plain accesses are still tracked


def test_a_wait_that_runs_out_makes_exactly_its_bound_of_reads():
    def lane_instructions(bound: int) -> tuple[int, int]:
        p = parse_program("program t workgroup(1, 1, 1) {\n  buffer f: read_write u32[] @0\n"
                          f"  f[1u32] = atomic.acquire wait(f[0u32], 5u32, {bound}u32)\n}}\n")
        stats: dict[str, int] = {}
        (f,), findings = run_program(p, [np.array([5, 9], np.uint32)], grid=(1, 1, 1), stats=stats)
        assert not findings and f[1] == 5  # it timed out: the value itself
        return stats["lane_instructions"], int(f[1])

    one, two, many = lane_instructions(1)[0], lane_instructions(2)[0], lane_instructions(1001)[0]
    per_read = two - one
    assert per_read == 6 and many - one == 1000 * per_read  # ld, setp, bra, sub, setp, bra


# ----------------------------------------------------------------------------- the CUDA backend


@pytest.mark.gpu
@pytest.mark.skipif(not cuda_available(), reason="no CUDA GPU: libcuda.so.1 cannot be loaded or reports no device")
def test_ordered_atomics_on_the_cuda_backend():
    from vyre_decl import libcuda

    cuda = vyre_decl.acquire("cuda")
    sizes = (1, 64, 65, 1000, 4097) + (() if libcuda.is_simulated() else (1 << 16, (1 << 20) + 3))  # real concurrency
    for n in sizes:
        x = np.random.default_rng(n).integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
        got = cuda.dispatch(LOOKBACK, [x])
        np.testing.assert_array_equal(got[0], np.cumsum(x.astype(np.uint64)).astype(np.uint32))
        if n <= 4097:  # the reference runs the larger sizes slowly; their outputs are checked against numpy
            want = REF.dispatch(LOOKBACK, [x])
            assert [a.tobytes() for a in got] == [a.tobytes() for a in want], n
    # outcomes every schedule agrees on: a flag nobody sets (a timeout), one the waiter set itself
    p = parse_program("program t workgroup(64, 1, 1) {\n  buffer f: read_write u32[] @0\n  buffer count: read_write u32[1] @1\n"
                      "  buffer out: write u32[len(f)] @2\n  let i = gid.x\n  if i < len(f) {\n"
                      "    atomic.release f[i] = i + 1u32\n    let own = atomic.acquire wait(f[i], 0u32, 1000u32)\n"
                      "    let never = atomic.acquire.workgroup wait(out[i], 0u32, 100u32)\n"
                      "    let c = atomic.acq_rel primitive.atomic.add(count[0u32], 1u32)\n    out[i] = own + never\n  }\n}\n")
    f = np.zeros(5000, np.uint32)
    got, want = cuda.dispatch(p, [f, np.zeros(1, np.uint32)]), REF.dispatch(p, [f, np.zeros(1, np.uint32)])
    assert [a.tobytes() for a in got] == [a.tobytes() for a in want]
    np.testing.assert_array_equal(got[2], np.arange(5000) + 1)
    assert got[1][0] == 5000
    for entry in load_corpus():
        if entry.name == "49_lookback_scan":
            inputs = make_inputs(entry.program, 777, np.random.default_rng(4))
            assert [a.tobytes() for a in cuda.dispatch(entry.program, inputs)] == \
                [a.tobytes() for a in REF.dispatch(entry.program, inputs)]
