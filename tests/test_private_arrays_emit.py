"""Private arrays and unroll loops on the GPU path (issue 28): the emitted PTX (.local arrays zeroed
per invocation, unroll loops written out), ptxas keeping a register-blocked tile of 64
accumulators in registers (no stack frame), the simulated device against the reference bit for
bit, its sanitizer's local-memory findings, and the CUDA backend (marked gpu: the simulated H100
under VYRE_DECL_CUDA_SIM, a real GPU elsewhere)."""

from __future__ import annotations

import re

import numpy as np
import pytest

import vyre_decl
from vyre_decl.backends.config import DispatchConfig
from vyre_decl.backends.cuda import cuda_available
from vyre_decl.emit import emit
from vyre_decl.emit.prologue import _Prologue
from vyre_decl.emit.ptxas import find_ptxas
from vyre_decl.ir import DataType, parse_program
from vyre_decl.ops.simcheck import run_program
from vyre_decl.sim.ptx import KernelFault

from sim_ptx_helpers import HEADER, assert_matches, launch, ptxas_verbose

REF = vyre_decl.acquire("reference")

# a register-blocked tile: each invocation accumulates an 8 x 8 block of 64 f32 values over 4 steps
# (256 unrolled copies), then narrow private arrays (u8 wrapping, f16 rounding, bool), constant
# indices past the end, an early return and partial data at the grid's edge
TILE = parse_program("""program tile workgroup(32, 1, 1) {
  buffer a: read f32[] @0
  buffer b: read f32[32] @1
  buffer out: read_write f32[] @2
  buffer col: private f32[8]
  buffer acc: private f32[64]
  buffer count: private u8[4]
  buffer half: private f16[2]
  buffer flag: private bool[1]
  let i = gid.x
  if i % 7u32 == 5u32 {
    return
  }
  let base = i * 8u32
  loop r in 0u32 .. 8u32 unroll {
    col[r] = a[base + r]
  }
  loop k in 0u32 .. 4u32 unroll {
    loop r in 0u32 .. 8u32 unroll {
      loop c in 0u32 .. 8u32 unroll {
        acc[r * 8u32 + c] = acc[r * 8u32 + c] + col[(r + k) & 7u32] * b[k * 8u32 + c]
      }
    }
  }
  loop j in 0u32 .. 4u32 unroll {
    count[j] = count[3u32 - j] + 100u32 * (j + 1u32)
  }
  flag[0u32] = acc[0u32] > acc[63u32]
  loop h in -1i32 .. 1i32 unroll {
    half[(h + 1i32) as u32] = acc[((h + 1i32) * 9i32) as u32] * 1000.0f32
  }
  loop r in 0u32 .. 8u32 unroll {
    loop c in 0u32 .. 8u32 unroll {
      out[base * 8u32 + r * 8u32 + c] = select(flag[0u32], acc[r * 8u32 + c], -acc[c * 8u32 + r]) + half[c & 1u32] + count[c & 3u32] as f32 + acc[64u32]
    }
  }
}
""", "tile.vyre")


def _tile_inputs(rows: int, seed: int) -> tuple[list[np.ndarray], DispatchConfig]:
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(8 * rows - (3 if rows else 0)).astype(np.float32)  # a partial last row
    b = rng.standard_normal(32).astype(np.float32)
    out = np.zeros(64 * rows, np.float32)
    return [a, b, out], DispatchConfig(grid=(max(1, -(-rows // 32)), 1, 1))


# ----------------------------------------------------------------------------- the emitted PTX


def test_a_private_array_is_a_local_array_zeroed_by_each_invocation():
    text = emit(TILE).text
    assert "\t.local .align 16 .b8 pv_acc[256];" in text and "\t.local .align 16 .b8 pv_half[4];" in text
    # ptxas keeps no array of bytes in registers: a private u8 element is a word holding its value
    assert "\t.local .align 16 .b8 pv_count[16];" in text and "cvt.u32.u8 " in text and "ld.local.u32" in text
    zero = text[text.index("// zero the private arrays"):text.index("// body[0]")]
    assert zero.count("st.local.b32 [") == 64 + 8 + 4 + 1 and zero.count("st.local.b16 [") == 2
    assert "ld.local.f32" in text and "st.local.f32" in text and "ld.shared" not in text and ".local.u8" not in text


def test_an_unroll_loop_is_written_out_once_per_iteration():
    text = emit(TILE).text
    copies = re.findall(r"// body\[4\]\.body\[0\]: loop r in 0u32 \.\. 8u32 unroll: r = (\d+)u32", text)
    assert copies == [str(r) for r in range(8)] * 4
    assert len(re.findall(r"// body\[7\]: loop h in -1i32 \.\. 1i32 unroll: h = (-?\d+)i32", text)) == 2
    assert "_loop:" not in text and "_endloop:" not in text  # no counted loop is left


def test_no_vectorised_entry_for_a_program_with_a_private_array():
    p = parse_program("program m workgroup(64, 1, 1) {\n  buffer x: read u32[] @0\n  buffer o: write u32[len(x)] @1\n"
                      "  buffer t: private u32[1]\n  let i = gid.x\n  t[0u32] = x[i]\n  o[i] = t[0u32]\n}")
    assert emit(p).vector_entry is None
    assert emit(parse_program("program m workgroup(64, 1, 1) {\n  buffer x: read u32[] @0\n"
                              "  buffer o: write u32[len(x)] @1\n  let i = gid.x\n  o[i] = x[i]\n}")).vector_entry


def test_programs_without_the_new_features_emit_no_local_memory():
    from vyre_decl.conform.corpus import load_corpus

    plain = [e for e in load_corpus() if "private" not in e.path.read_text()]
    assert len(plain) >= 47
    for entry in plain:
        assert ".local" not in emit(entry.program).text and '"unroll"' not in vyre_decl.ir.dumps(entry.program)


# ----------------------------------------------------------------------------- ptxas: registers


@pytest.mark.skipif(find_ptxas() is None, reason="ptxas not found (pip install '.[test]' ships it)")
@pytest.mark.parametrize("target", ["sm_90", "sm_75"])
def test_ptxas_keeps_the_tile_of_64_accumulators_in_registers(target):
    log = ptxas_verbose(emit(TILE, target=target).text, target)
    assert "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads" in log, log
    assert "lmem" not in log and "cumulative stack" not in log, log


@pytest.mark.skipif(find_ptxas() is None, reason="ptxas not found (pip install '.[test]' ships it)")
def test_ptxas_reports_a_stack_frame_where_an_index_is_not_constant():
    """The control: validation refuses this program (V030); emitted anyway, its array stays in memory,
    so the measurement above tells the two apart."""
    p = parse_program("""program ctl workgroup(64, 1, 1) {
  buffer x: read u32[] @0
  buffer out: write u32[len(x)] @1
  buffer acc: private u32[64]
  loop k in 0u32 .. len(x) { acc[x[k] & 63u32] = acc[x[k] & 63u32] + 1u32 }
  out[gid.x] = acc[x[gid.x] & 63u32]
}""")
    assert [d.code for d in vyre_decl.ir.validate(p, vyre_decl.default_registry())] == ["V030"] * 3
    log = ptxas_verbose(emit(p, validated=True).text, "sm_90")
    assert "256 bytes stack frame" in log, log


# ----------------------------------------------------------------------------- the simulated device


@pytest.mark.parametrize("target", ["sm_90", "sm_75"])
def test_the_tile_on_the_simulator_matches_the_reference_bit_for_bit(target):
    for rows in (0, 1, 33, 70):
        inputs, config = _tile_inputs(rows, rows)
        want = REF.dispatch(TILE, inputs, config)
        assert_matches(TILE, inputs, want, grid=config.grid, target=target)
        if rows == 70:
            assert np.count_nonzero(want[0]) == 60 * 64  # 70 rows, 10 of which return early


@pytest.mark.parametrize("target", ["sm_90", "sm_75"])
def test_narrow_private_elements_wrap_and_round_as_the_reference_says(target):
    p = parse_program("""program narrow workgroup(32, 1, 1) {
  buffer x: read i32[] @0
  buffer o: write i32[len(x)] @1
  buffer s: private i8[2]
  buffer u: private u8[2]
  buffer w: private i16[1]
  buffer b: private bf16[1]
  s[1u32] = x[gid.x]
  u[0u32] = x[gid.x] as u32
  w[0u32] = x[gid.x] * 3i32
  b[0u32] = x[gid.x] as f32 * 1.1f32
  o[gid.x] = s[1u32] + (u[0u32] as i32) * 1000i32 + w[0u32] + s[0u32] + u[1u32] as i32 + b[0u32] as i32
}""")
    edges = [0, 1, -1, 127, 128, -128, -129, 255, 256, 32767, 32768, -32769, 2**31 - 1, -2**31]
    x = np.concatenate([edges, np.random.default_rng(7).integers(-2**31, 2**31, 100)]).astype(np.int32)
    want = REF.dispatch(p, [x])
    assert want[0][:4].tolist() == [0, 1 + 1000 + 3 + 1, -1 + 255000 - 3 - 1, 127 + 127000 + 381 + 140]  # 139.7 is 140 in bf16
    assert_matches(p, [x], want, target=target)


_VALUE = {"u8": "u32", "u16": "u32", "u32": "u32", "i8": "i32", "i16": "i32", "i32": "i32", "u64": "u64", "i64": "i64",
          "f16": "f32", "bf16": "f32", "f32": "f32", "f64": "f64"}


def _every_type() -> str:
    """A private array of every storage type, written and read at constant indices (one past the end too)."""
    arrays = "".join(f"  buffer a_{t}: private {t}[3]\n" for t in [*_VALUE, "bool"])
    stores = "".join(f"    a_{t}[k] = (v * 37.5f64 - (k as f64) * 1000.0f64) as {vt}\n" for t, vt in _VALUE.items())
    reads = " + ".join(f"a_{t}[k] as f64" for t in _VALUE)
    return f"""program every_type workgroup(32, 1, 1) {{
  buffer x: read f64[] @0
  buffer o: write f64[len(x)] @1
{arrays}  let v = x[gid.x]
  loop k in 0u32 .. 3u32 unroll {{
{stores}    a_bool[k] = v > (k as f64)
  }}
  let s = 0.0f64
  loop k in 0u32 .. 4u32 unroll {{
    s = s * 3.0f64 + {reads} + select(a_bool[k], 1.0f64, 0.5f64)
  }}
  o[gid.x] = s
}}"""


@pytest.mark.parametrize("target", ["sm_90", "sm_75"])
def test_a_private_array_of_every_storage_type_matches_the_reference_and_lives_in_registers(target):
    p = parse_program(_every_type())
    x = np.concatenate([[0.0, -0.0, 1.0, -1.0, 3.4, 1e10, -1e10, np.inf, np.nan, 1e-40],
                        np.random.default_rng(8).standard_normal(90) * 10.0 ** np.arange(90) % 1e12])
    want = REF.dispatch(p, [x])
    assert np.isfinite(want[0][2]) and want[0][2] != 0
    assert_matches(p, [x], want, target=target)
    if find_ptxas() is not None:  # 8-bit elements are 32-bit words, 64-bit ones two (emit/private.py)
        assert "0 bytes stack frame" in ptxas_verbose(emit(p, target=target).text, target)


def test_the_sanitizer_reports_a_private_array_read_before_it_is_zeroed(monkeypatch):
    """Local memory starts undefined on hardware: without the emitter's zeroing the simulator says so."""
    def no_zeroing(self: _Prologue, private: list) -> None:
        for b in private:
            self.base[b.name] = self.reg(DataType.U32)
            self.emit(f"mov.u32 {self.base[b.name]}, pv_{b.name};")

    monkeypatch.setattr(_Prologue, "_zero_private", no_zeroing)
    p = parse_program("program z workgroup(32, 1, 1) {\n  buffer o: write u32[32] @0\n  buffer t: private u32[2]\n"
                      "  o[gid.x] = t[1u32]\n}")
    (out,), findings = run_program(p, [])
    assert out.tolist() == [0] * 32
    assert [f.kind for f in findings] == ["uninitialised_local"] and "local offset 0x4" in findings[0].message


_LOCAL = HEADER + """.visible .entry k(.param .u64 pout)
{
\t.reg .u32 %r<4>;
\t.reg .u64 %rd<2>;
\t.local .align 4 .b8 lo[8];
\tld.param.u64 %rd0, [pout];
\tmov.u32 %r0, %tid.x;
\tmul.wide.u32 %rd1, %r0, 4;
\tadd.u64 %rd0, %rd0, %rd1;
\tmov.u32 %r1, lo;
\tst.local.u32 [%r1+4], %r0;
\tld.local.u32 %r2, [%r1+OFFSET];
\tst.global.u32 [%rd0], %r2;
\tret;
}
"""


def test_the_sanitizer_reports_local_accesses_out_of_bounds():
    out = np.full(4, 7, np.uint32)
    (got,), findings = launch(_LOCAL.replace("OFFSET", "8"), "k", (1, 1, 1), (4, 1, 1), [out])
    assert got.tolist() == [0, 0, 0, 0] and [f.kind for f in findings] == ["oob_local"]
    with pytest.raises(KernelFault) as e:
        launch(_LOCAL.replace("OFFSET", "8"), "k", (1, 1, 1), (4, 1, 1), [out], sanitize=False)
    assert e.value.kind == "illegal_address"
    (got,), findings = launch(_LOCAL.replace("OFFSET", "4"), "k", (1, 1, 1), (4, 1, 1), [out])
    assert got.tolist() == [0, 1, 2, 3] and findings == []
    (got,), findings = launch(_LOCAL.replace("OFFSET", "0"), "k", (1, 1, 1), (4, 1, 1), [out])
    assert got.tolist() == [0, 0, 0, 0] and [f.kind for f in findings] == ["uninitialised_local"]


# ----------------------------------------------------------------------------- the CUDA backend


@pytest.mark.gpu
@pytest.mark.skipif(not cuda_available(), reason="no CUDA GPU: libcuda.so.1 cannot be loaded or reports no device")
def test_the_tile_on_the_cuda_backend_matches_the_reference_bit_for_bit():
    from vyre_decl import libcuda

    cuda = vyre_decl.acquire("cuda")
    for rows in (1, 64, 129):
        inputs, config = _tile_inputs(rows, 100 + rows)
        want, got = REF.dispatch(TILE, inputs, config), cuda.dispatch(TILE, inputs, config)
        assert len(got) == 1 and got[0].tobytes() == want[0].tobytes(), rows
    p = parse_program(_every_type())
    x = np.random.default_rng(9).standard_normal(1000) * 1000
    assert cuda.dispatch(p, [x])[0].tobytes() == REF.dispatch(p, [x])[0].tobytes()
    if not libcuda.is_simulated():  # the driver's JIT keeps the arrays in registers too
        assert cuda.compile(TILE).occupancy().local_bytes == 0 and cuda.compile(p).occupancy().local_bytes == 0
