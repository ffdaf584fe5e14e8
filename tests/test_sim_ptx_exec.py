"""The PTX interpreter as a machine: malformed PTX (PtxError naming the line), control flow with
divergence and reconvergence, barriers and shared memory, atomics in lane order, special
registers, parameters, vector and generic memory access, faults, and the sanitizer's findings
(each planted in a small kernel, and absent from the correct one)."""

from __future__ import annotations

import struct
import time

import numpy as np
import pytest

from sim_ptx_helpers import BASE, HEADER, launch
from vyre_decl.sim import ptx_exec
from vyre_decl.sim.memory import DeviceMemory
from vyre_decl.sim.ptx import KernelFault, KernelTimeout, PtxError, load_module


def kernel(body: str, params: str = ".param .u64 pout", regs: str = "", name: str = "k", header: str = HEADER) -> str:
    decls = "\t.reg .u32 %r<32>;\n\t.reg .u64 %rd<16>;\n\t.reg .pred %p<8>;\n\t.reg .f32 %f<8>;\n" + regs
    return f"{header}.visible .entry {name}({params})\n{{\n{decls}{body}\n}}\n"


# a lane's own u32 slot of the output: %rd1 = pout + 4 * (ctaid.x * ntid.x + tid.x), %r0 = that index
PROLOGUE = """\tld.param.u64 %rd0, [pout];
\tmov.u32 %r1, %ctaid.x;
\tmov.u32 %r2, %ntid.x;
\tmov.u32 %r0, %tid.x;
\tmad.lo.u32 %r0, %r1, %r2, %r0;
\tmul.wide.u32 %rd1, %r0, 4;
\tadd.u64 %rd1, %rd0, %rd1;
"""


def run_u32(body: str, n: int, block: int = 64, **kw) -> tuple[np.ndarray, list]:
    (out,), findings = launch(kernel(PROLOGUE + body), "k", (-(-n // block), 1, 1), (block, 1, 1),
                              [np.zeros(-(-n // block) * block, dtype=np.uint32)], **kw)
    return out[:n], findings


# ============================================================================ malformed PTX
@pytest.mark.parametrize("text, line, words", [
    (kernel("\tadd.u32 %r1, %r2, %r3\n\tret;"), 10, "expected ';'"),
    (kernel("\tfrobnicate.u32 %r1, %r2;"), 10, "unknown instruction"),
    (kernel("\tadd.u32.rz %r1, %r2, %r3;"), 10, "modifier .rz"),
    (kernel("\tadd.u32 %r1, %r2, %x9;"), 10, "not a declared register"),
    (kernel("\tadd.u32 %r1, %r2, %rd3;"), 10, "64 bits"),
    (kernel("\tadd.u32 %r1, %f2, %r3;"), 10, "cannot take"),
    (kernel("\tbra $L_nowhere;"), 10, "not defined"),
    (kernel("\tactivemask.b32 %r1;"), 10, "does not model"),
    (kernel("\tcvt.rn.bf16.f32 %h1, %f1;", regs="\t.reg .b16 %h<2>;\n",
            header=".version 7.0\n.target sm_75\n.address_size 64\n"), 11, "sm_80"),
    (kernel("\tcvt.s32.f32 %r1, %f1;"), 10, ".rni, .rzi"),
    (kernel("\tld.global.u32 %r1, %r2;"), 10, "address"),
    (kernel("", regs="\t.reg .u32 %r5;\n"), 10, "declared twice"),
    (HEADER + ".func f()\n{\n}\n", 4, ".func"),
    (".version 9.9\n.target sm_90\n.address_size 64\n", 1, "newer than"),
    (".version 8.0\n.target sm_100\n.address_size 64\n", 1, "newer than the device"),
    (".version 6.0\n.target sm_90\n.address_size 64\n", 1, "does not know"),
    (".target sm_90\n", 1, ".version"),
    (HEADER + ".visible .entry k()\n{\n\tret;\n", 4, "never closed"),
])
def test_malformed_ptx_is_a_ptx_error_naming_the_line(text, line, words):
    with pytest.raises(PtxError) as info:
        load_module(text, 90)
    assert info.value.line == line and words in info.value.message, info.value


def test_modules_are_cached_and_carry_attributes():
    text = kernel(PROLOGUE + "\tst.global.u32 [%rd1], %r0;\n\tret;",
                  params=".param .u64 pout, .param .u8 pa, .param .align 8 .b8 pb[12], .param .u32 pc",
                  regs="\t.shared .align 16 .b8 sh[100];\n\t.local .align 8 .b8 lo[24];\n")
    m = load_module(text, 90)
    assert load_module(text, 90) is m and load_module(text, 100) is not m
    k = m.kernels["k"]
    assert [(p.name, p.nbytes, p.align, p.offset) for p in k.params] == [
        ("pout", 8, 8, 0), ("pa", 1, 1, 8), ("pb", 12, 8, 16), ("pc", 4, 4, 28)]
    assert (k.shared_bytes, k.local_bytes) == (100, 24)
    assert k.registers == 32 + 2 * 16 + 8  # u32 + 2 * u64 + f32 words; predicates not counted


# ============================================================================ control flow
def test_divergent_branches_reconverge_and_loops_run_per_lane():
    body = """\tand.b32 %r3, %r0, 1;
\tsetp.eq.u32 %p0, %r3, 0;
\t@%p0 bra $EVEN;
\tmov.u32 %r4, 1000;
\tbra.uni $JOIN;
$EVEN:
\tmov.u32 %r4, 2000;
$JOIN:
\tmov.u32 %r5, 0;
\tmov.u32 %r6, 0;
$LOOP:
\tsetp.ge.u32 %p1, %r6, %r0;
\t@%p1 bra $DONE;
\tadd.u32 %r5, %r5, %r6;
\tadd.u32 %r6, %r6, 1;
\tbra $LOOP;
$DONE:
\tadd.u32 %r4, %r4, %r5;
\tst.global.u32 [%rd1], %r4;
\tret;"""
    out, findings = run_u32(body, 200)
    i = np.arange(200)
    assert out.tolist() == (np.where(i % 2 == 0, 2000, 1000) + i * (i - 1) // 2).tolist() and not findings


def test_guarded_ret_and_exit_leave_some_lanes():
    body = """\tsetp.gt.u32 %p0, %r0, 9;
\t@%p0 ret;
\tsetp.lt.u32 %p1, %r0, 3;
\t@%p1 exit;
\tst.global.u32 [%rd1], %r2;"""  # no final ret: falling off the end exits too
    out, _ = run_u32(body, 64)
    assert out.tolist() == [0, 0, 0] + [64] * 7 + [0] * 54


def test_trap_is_a_fault():
    with pytest.raises(KernelFault) as info:
        run_u32("\tsetp.eq.u32 %p0, %r0, 5;\n\t@%p0 trap;\n\tret;", 64)
    assert info.value.kind == "trap" and info.value.kernel == "k" and info.value.line == 18


# ============================================================================ memory
def test_global_out_of_bounds_is_an_illegal_address_fault():
    with pytest.raises(KernelFault) as info:
        run_u32("\tst.global.u32 [%rd1+4096], %r0;\n\tret;", 64)  # one past the 256-byte buffer and beyond
    assert info.value.kind == "illegal_address" and f"{BASE + 4096:#x}" in info.value.detail
    assert info.value.line == 17
    with pytest.raises(KernelFault) as info:
        run_u32("\tld.global.u32 %r3, [%rd1+2];\n\tret;", 64)
    assert info.value.kind == "misaligned_address"


def test_vector_nc_generic_local_and_param_access():
    text = kernel("""\tld.param.u64 %rd0, [pout];
\tld.param.u16 %r9, [ph];
\tld.param.v2.u32 {%r10, %r11}, [pv];
\tld.global.nc.v4.u32 {%r1, %r2, %r3, %r4}, [%rd0];
\tmov.u64 %rd2, wg;
\tcvta.shared.u64 %rd2, %rd2;
\tst.v2.u32 [%rd2+8], {%r4, %r3};
\tmov.u64 %rd3, lo;
\tcvta.local.u64 %rd3, %rd3;
\tst.u32 [%rd3+4], %r9;
\tld.local.u32 %r12, [lo+4];
\tbar.sync 0;
\tld.shared.v2.u32 {%r5, %r6}, [wg+8];
\tadd.u32 %r5, %r5, %r12;
\tadd.u32 %r6, %r6, %r10;
\tst.global.v4.u32 [%rd0+16], {%r5, %r6, %r11, %r1};
\tret;""", params=".param .u64 pout, .param .u16 ph, .param .align 8 .b8 pv[8]",
                  regs="\t.shared .align 16 .b8 wg[16];\n\t.local .align 4 .b8 lo[8];\n")
    k = load_module(text, 90).kernels["k"]
    mem = DeviceMemory(BASE)
    out = mem.allocate(32)
    mem.write(out, np.array([1, 2, 3, 4, 0, 0, 0, 0], dtype=np.uint32).tobytes())
    params = bytearray(k.param_bytes)
    struct.pack_into("<QH", params, 0, out, 700)
    struct.pack_into("<II", params, k.params[2].offset, 50, 60)
    findings = k.run((1, 1, 1), (1, 1, 1), bytes(params), mem)
    assert np.frombuffer(mem.read(out + 16, 16), dtype=np.uint32).tolist() == [4 + 700, 3 + 50, 60, 1]
    assert not findings


def test_atomics_apply_in_lane_order():
    body = """\tmov.u64 %rd2, %rd0;
\tatom.global.add.u32 %r3, [%rd2+2048], 1;
\tst.global.u32 [%rd1], %r3;
\tatom.global.cas.b32 %r4, [%rd2+2052], %r0, %r0;
\tadd.u32 %r5, %r0, 1;
\tatom.global.cas.b32 %r4, [%rd2+2056], %r0, %r5;
\tatom.global.max.s32 %r6, [%rd2+2060], %r0;
\tatom.global.exch.b32 %r7, [%rd2+2064], %r0;
\tret;"""
    n = 512
    (out,), findings = launch(kernel(PROLOGUE + body), "k", (4, 1, 1), (128, 1, 1), [np.zeros(n + 8, np.uint32)])
    assert out[:n].tolist() == list(range(n))  # each lane's old value counts the lanes before it
    assert out[n] == n  # the add's total
    assert out[n + 2] == n  # cas chain: lane i sets i+1 only when the value is i
    assert out[n + 3] == n - 1 and out[n + 4] == n - 1 and not findings


def test_shared_memory_per_block_with_a_barrier_and_shared_atomics():
    body = """\tmov.u32 %r3, %tid.x;
\tmov.u32 %r4, sh;
\tmad.lo.u32 %r5, %r3, 4, %r4;
\tst.shared.u32 [%r5], %r0;
\tsetp.eq.u32 %p0, %r3, 0;
\t@%p0 st.shared.u32 [sh+256], 0;
\tbar.sync 0;
\tatom.shared.add.u32 %r6, [sh+256], %r3;
\tbar.sync 0;
\tsub.u32 %r7, 63, %r3;
\tmad.lo.u32 %r8, %r7, 4, %r4;
\tld.shared.u32 %r9, [%r8];
\tld.shared.u32 %r10, [sh+256];
\tadd.u32 %r9, %r9, %r10;
\tst.global.u32 [%rd1], %r9;
\tret;"""
    (out,), findings = launch(kernel(PROLOGUE + body, regs="\t.shared .align 4 .b8 sh[260];\n"), "k",
                              (3, 1, 1), (64, 1, 1), [np.zeros(192, np.uint32)])
    i = np.arange(192)
    assert out.tolist() == ((i // 64) * 64 + 63 - i % 64 + 2016).tolist() and not findings


def test_special_registers_in_three_dimensions():
    body = """\tmov.u32 %r3, %tid.x;\n\tmov.u32 %r4, %tid.y;\n\tmov.u32 %r5, %tid.z;\n\tmov.u32 %r6, %ctaid.y;
\tmov.u32 %r7, %ctaid.z;\n\tmov.u32 %r8, %nctaid.y;\n\tmov.u32 %r9, %laneid;\n\tmov.u32 %r10, %warpid;
\tmov.u32 %r11, %ntid.y;\n\tmov.u32 %r12, %ntid.z;
\tmad.lo.u32 %r13, %r5, %r11, %r4;\n\tmad.lo.u32 %r13, %r13, %r2, %r3;
\tmov.u32 %r14, %nctaid.x;\n\tmad.lo.u32 %r15, %r7, %r8, %r6;\n\tmad.lo.u32 %r15, %r15, %r14, %r1;
\tmul.lo.u32 %r16, %r2, %r11;\n\tmul.lo.u32 %r16, %r16, %r12;\n\tmad.lo.u32 %r17, %r15, %r16, %r13;
\tmul.wide.u32 %rd2, %r17, 8;\n\tadd.u64 %rd2, %rd0, %rd2;
\tshl.b32 %r18, %r10, 8;\n\tor.b32 %r18, %r18, %r9;\n\tst.global.v2.u32 [%rd2], {%r17, %r18};\n\tret;"""
    grid, block = (2, 3, 2), (4, 5, 3)
    (out,), _ = launch(kernel(PROLOGUE + body), "k", grid, block, [np.zeros(2 * 12 * 60, np.uint32)])
    pairs = out.reshape(-1, 2)
    assert pairs[:, 0].tolist() == list(range(720))  # every thread once, at its linear index
    t = np.arange(720) % 60
    assert pairs[:, 1].tolist() == ((t // 32) << 8 | t % 32).tolist()


def test_groups_of_blocks_run_in_grid_order(monkeypatch):
    monkeypatch.setattr(ptx_exec, "LANES_PER_GROUP", 256)  # many groups of blocks
    body = PROLOGUE + "\tatom.global.add.u32 %r3, [%rd0+4096], 1;\n\tst.global.u32 [%rd1], %r3;\n\tret;"
    (out,), _ = launch(kernel(body), "k", (8, 1, 1), (128, 1, 1), [np.zeros(1025, np.uint32)])
    assert out.tolist() == list(range(1025))


def test_a_deadline_stops_a_spinning_kernel():
    text = kernel("$SPIN:\n\tbra $SPIN;")
    k = load_module(text, 90).kernels["k"]
    mem = DeviceMemory(BASE)
    with pytest.raises(KernelTimeout):
        k.run((1, 1, 1), (32, 1, 1), struct.pack("<Q", mem.allocate(8)), mem, deadline=time.monotonic() + 0.2)


# ============================================================================ the sanitizer
CTX = "\t// body[1].then[0]: out[i] = sh[i + 1u32]\n\t// op primitive.math.add<u32>\n"


def shared_kernel(body: str) -> str:
    return kernel(PROLOGUE + "\tmov.u32 %r3, %tid.x;\n\tmov.u32 %r4, sh;\n\tmad.lo.u32 %r5, %r3, 4, %r4;\n" + body,
                  regs="\t.shared .align 4 .b8 sh[256];\n")


def run_sanitized(text: str, sanitize: bool = True) -> list:
    _, findings = launch(text, "k", (2, 1, 1), (64, 1, 1), [np.zeros(128, np.uint32)], sanitize=sanitize)
    return findings


CORRECT = "\tst.shared.u32 [%r5], %r0;\n\tbar.sync 0;\n\tld.shared.u32 %r6, [%r5+4];\n\tbar.sync 0;\n" \
          "\tst.shared.u32 [%r5], %r6;\n\tst.global.u32 [%rd1], %r6;\n\tret;"


def test_the_correct_kernel_has_no_findings():
    text = shared_kernel(CORRECT.replace("[%r5+4]", "[%r5]"))
    assert run_sanitized(text) == []


def test_out_of_bounds_shared_access_is_found_or_faults():
    text = shared_kernel(CTX + CORRECT)  # lane 63 reads sh[256..259]
    (f,) = run_sanitized(text)
    assert f.kind == "oob_shared" and f.kernel == "k" and "ld.shared.u32 %r6, [%r5+4]" in f.instruction
    assert f.context == "body[1].then[0]: out[i] = sh[i + 1u32] | op primitive.math.add<u32>"
    assert f.line == text.splitlines().index("\tld.shared.u32 %r6, [%r5+4];") + 1
    with pytest.raises(KernelFault) as info:
        run_sanitized(text, sanitize=False)
    assert info.value.kind == "illegal_address"


@pytest.mark.parametrize("body", [
    "\tst.shared.u32 [%r4], %r0;\n\tret;",  # every lane writes sh[0]
    "\tst.shared.u32 [%r5], %r0;\n\tld.shared.u32 %r6, [%r5+4];\n\tst.global.u32 [%rd1], %r6;\n\tret;",  # no barrier
    "\tld.shared.u32 %r6, [%r5+4];\n\tst.shared.u32 [%r5], %r0;\n\tst.global.u32 [%rd1], %r6;\n\tret;",  # read, write
])
def test_shared_races_between_barriers_are_found(body):
    (f,) = [f for f in run_sanitized(shared_kernel(body)) if f.kind == "shared_race"]
    assert "no bar.sync between them" in f.message and f.kernel == "k"


def test_divergent_barriers_are_found():
    half = "\tsetp.lt.u32 %p0, %r3, 32;\n\t@%p0 bra $SKIP;\n\tbar.sync 0;\n$SKIP:\n\tbar.sync 0;\n\tret;"
    exited = "\tsetp.lt.u32 %p0, %r3, 32;\n\t@%p0 ret;\n\tbar.sync 0;\n\tret;"
    for body, why in ((half, "different barriers"), (exited, "have exited")):
        found = run_sanitized(shared_kernel(body))
        assert {f.kind for f in found} == {"divergent_barrier"} and why in found[0].message
    both = shared_kernel("\tsetp.lt.u32 %p0, %r3, 32;\n\t@%p0 bra $A;\n\tbar.sync 0;\n\tbra $B;\n$A:\n\tbar.sync 0;\n"
                         "$B:\n\tret;")
    assert [f.kind for f in run_sanitized(both)] == ["divergent_barrier"]
    assert run_sanitized(both, sanitize=False) == []  # the hardware counts arrivals: it runs on


def test_reads_of_unwritten_registers_are_found():
    never = shared_kernel("\tadd.u32 %r6, %r20, 1;\n\tst.global.u32 [%rd1], %r6;\n\tret;")
    (f,) = run_sanitized(never)
    assert f.kind == "uninitialised_register" and "%r20" in f.message
    partly = shared_kernel("\tsetp.lt.u32 %p0, %r3, 10;\n\t@%p0 mov.u32 %r21, 5;\n\tst.global.u32 [%rd1], %r21;\n\tret;")
    (f,) = run_sanitized(partly)
    assert f.kind == "uninitialised_register" and "some of the lanes" in f.message
    guarded = shared_kernel("\tsetp.lt.u32 %p0, %r3, 10;\n\t@%p0 mov.u32 %r21, 5;\n\t@%p0 st.global.u32 [%rd1], %r21;"
                            "\n\tret;")
    assert run_sanitized(guarded) == []
    assert run_sanitized(never, sanitize=False) == []


def test_every_atomic_operation_in_lane_order():
    """Each lane applies its atomic to one word after the lanes before it (checked by replaying the
    lanes in order in Python); red is atom without the old value."""
    ops = [("add.u32", lambda o, v: (o + v) & 0xFFFFFFFF), ("and.b32", lambda o, v: o & v), ("or.b32", lambda o, v: o | v),
           ("xor.b32", lambda o, v: o ^ v), ("exch.b32", lambda o, v: v), ("min.u32", min), ("max.u32", max),
           ("inc.u32", lambda o, v: 0 if o >= v else o + 1), ("dec.u32", lambda o, v: v if o == 0 or o > v else o - 1)]
    rng = np.random.default_rng(3)
    for space in ("global", "shared"):
        for op, f in ops:
            vals = rng.integers(0, 2**32, 96, dtype=np.uint64).astype(np.uint32) if op[:3] not in ("inc", "dec") \
                else rng.integers(0, 40, 96).astype(np.uint32)
            if space == "global":
                body = f"\tld.global.u32 %r3, [%rd1];\n\tatom.global.{op} %r4, [%rd0+384], %r3;\n" \
                       "\tst.global.u32 [%rd1], %r4;\n\tret;"
                regs = ""
            else:
                # shared memory starts undefined (as on hardware): lane 0 zeroes the word first
                body = "\tmov.u32 %r6, %tid.x;\n\tsetp.eq.u32 %p0, %r6, 0;\n\t@%p0 st.shared.u32 [sh], 0;\n" \
                       f"\tbar.sync 0;\n\tld.global.u32 %r3, [%rd1];\n\tatom.shared.{op} %r4, [sh], %r3;\n\tbar.sync 0;\n" \
                       "\tld.shared.u32 %r5, [sh];\n\tst.global.u32 [%rd1], %r4;\n\tst.global.u32 [%rd0+384], %r5;\n\tret;"
                regs = "\t.shared .align 4 .b8 sh[4];\n"
            start = 7
            buf = np.concatenate([vals, np.array([start if space == "global" else 0], np.uint32)])
            (out,), findings = launch(kernel(PROLOGUE + body, regs=regs), "k", (1, 1, 1), (96, 1, 1), [buf])
            word, olds = (start if space == "global" else 0), []
            for v in vals.tolist():
                olds.append(word)
                word = f(word, v)
            assert out[:96].tolist() == olds and int(out[96]) == word and not findings, (space, op)
    (out,), _ = launch(kernel(PROLOGUE + "\tred.global.add.u32 [%rd0+256], %r0;\n\tret;"), "k", (1, 1, 1), (64, 1, 1),
                       [np.zeros(65, np.uint32)])
    assert int(out[64]) == sum(range(64))


def test_hand_written_kernels_of_the_benchmarks_and_gpu_tests():
    from vyre_decl.bench.kernels import v4_add_ptx

    n4 = 40
    for ty, dt in (("f32", np.float32), ("u32", np.uint32)):
        a, b = np.arange(4 * n4).astype(dt), (np.arange(4 * n4) * 3 + 1).astype(dt)
        (ra, rb, rc), findings = launch(v4_add_ptx(90, "8.0", ty), "v4add", (2, 1, 1), (32, 1, 1),
                                        [a, b, np.zeros(4 * n4, dt)], scalars=[n4])
        assert np.array_equal(rc, a + b) and not findings
    bad = ".version 7.8\n.target sm_75\n.address_size 64\n.visible .entry bad()\n{\n .reg .u64 %a;\n mov.u64 %a, 16;\n" \
          " st.global.u32 [%a], 0;\n ret;\n}\n"  # tests/test_cuda.py's sticky-fault kernel
    with pytest.raises(KernelFault) as info:
        load_module(bad, 90).kernels["bad"].run((1, 1, 1), (1, 1, 1), b"", DeviceMemory(BASE))
    assert info.value.kind == "illegal_address" and "0x10" in info.value.detail and info.value.line == 8


def test_multiword_multiply_with_madc():
    """A 64 x 64 -> 128-bit product from 32-bit limbs with mad.lo.cc / madc.hi.cc / madc."""
    rng = np.random.default_rng(5)
    x, y = (rng.integers(0, 2**63, 64, dtype=np.uint64) * np.uint64(2) + np.uint64(1) for _ in range(2))
    body = """\tmul.wide.u32 %rd2, %r0, 8;
\tadd.u64 %rd3, %rd0, %rd2;
\tld.global.v2.u32 {%r3, %r4}, [%rd3];
\tld.global.v2.u32 {%r5, %r6}, [%rd3+512];
\tmul.lo.u32 %r7, %r3, %r5;
\tmul.hi.u32 %r8, %r3, %r5;
\tmad.lo.cc.u32 %r8, %r3, %r6, %r8;
\tmadc.hi.u32 %r9, %r3, %r6, 0;
\tmad.lo.cc.u32 %r8, %r4, %r5, %r8;
\tmadc.hi.cc.u32 %r9, %r4, %r5, %r9;
\taddc.u32 %r10, 0, 0;
\tmad.lo.cc.u32 %r9, %r4, %r6, %r9;
\tmadc.hi.u32 %r10, %r4, %r6, %r10;
\tmul.wide.u32 %rd4, %r0, 16;
\tadd.u64 %rd4, %rd0, %rd4;
\tst.global.v4.u32 [%rd4+1024], {%r7, %r8, %r9, %r10};
\tret;"""
    buf = np.concatenate([x.view(np.uint32), y.view(np.uint32), np.zeros(256, np.uint32)])
    (out,), _ = launch(kernel(PROLOGUE.replace("%rd1", "%rd15") + body), "k", (1, 1, 1), (64, 1, 1), [buf])
    words = out[256:].astype(np.uint64).reshape(64, 4)
    got = [int(w[0]) | int(w[1]) << 32 | int(w[2]) << 64 | int(w[3]) << 96 for w in words]
    assert got == [int(a) * int(b) for a, b in zip(x, y)]
    fl, _ = launch(kernel(PROLOGUE + "\tcvt.rn.f32.u32 %f1, %r0;\n\tmad.rn.f32 %f2, %f1, %f1, 0f3F800000;\n"
                          "\tst.global.f32 [%rd1], %f2;\n\tret;"), "k", (1, 1, 1), (64, 1, 1), [np.zeros(64, np.float32)])
    assert fl[0].tolist() == [float(i * i + 1) for i in range(64)]


def test_literals_of_every_form():
    body = """\tmov.f32 %f1, 0f3FC00000;
\tadd.rn.f32 %f1, %f1, 2;
\tmov.f32 %f2, 0.25;
\tadd.rn.f32 %f1, %f1, %f2;
\tmov.u32 %r3, 0x10;
\tadd.u32 %r3, %r3, 010;
\tadd.u32 %r3, %r3, 0b11;
\tadd.u32 %r3, %r3, -1;
\tadd.u32 %r3, %r3, 5U;
\tcvt.rzi.u32.f32 %r4, %f1;
\tmad.lo.u32 %r4, %r3, 100, %r4;
\tst.global.u32 [%rd1], %r4;
\tret;"""
    out, _ = run_u32(body, 1)
    assert out.tolist() == [(16 + 8 + 3 - 1 + 5) * 100 + 3]  # 1.5 + 2 + 0.25 truncates to 3
    with pytest.raises(PtxError, match="too large"):
        load_module(kernel("\tadd.rn.f32 %f1, %f1, " + "9" * 400 + ";"), 90)
