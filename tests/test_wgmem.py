"""More than 48 KiB of workgroup memory (issue 28): ``workgroup_memory(large)`` in the text form,
the builder and the canonical JSON; P015, V019 without it, V048 past 227 KiB with it; the PTX (one
module-scope ``.extern .shared`` array, ptxas accepting it); the simulated device against the
reference bit for bit; the CUDA backend opting in (D009 on a device with less)."""

from __future__ import annotations

import numpy as np
import pytest

import vyre_decl
from vyre_decl.backends.cuda import cuda_available
from vyre_decl.emit import emit, kernel_abi
from vyre_decl.emit.ptxas import find_ptxas
from vyre_decl import validate
from vyre_decl.ir import ParseError, VyreError, dumps, loads, parse_program
from vyre_decl.ir.builder import ProgramBuilder
from vyre_decl.ir.types import DataType
from vyre_decl.ir.wgmem import workgroup_layout

from sim_ptx_helpers import assert_matches, ptxas_verbose

REF = vyre_decl.acquire("reference")

# 64 KiB + 3 bytes + 32 KiB of workgroup arrays, each filled whole by the workgroup and read back at
# another lane's place after the barrier: arrays laid over each other would change the result
BIG = """program big workgroup(256, 1, 1)ATTR {
  buffer x: read u32[] @0
  buffer out: write u32[len(x)] @1
  buffer a: workgroup u32[16384]
  buffer b: workgroup u8[3]
  buffer c: workgroup f64[4096]
  let i = gid.x
  let v = select(i < len(x), x[i], 7u32)
  loop k in 0u32 .. 64u32 { a[lid.x * 64u32 + k] = v + k }
  loop k in 0u32 .. 16u32 { c[lid.x * 16u32 + k] = (v * 3u32 + k) as f64 }
  if lid.x < 3u32 { b[lid.x] = v + 200u32 }
  barrier
  let j = (lid.x + 1u32) % 256u32
  if i < len(x) {
    out[i] = a[j * 64u32 + 63u32] + c[4095u32 - lid.x] as u32 * 1000u32 + b[lid.x % 3u32] as u32 * 7u32
  }
}
"""
LARGE = parse_program(BIG.replace("ATTR", " workgroup_memory(large)"))


def _diag_codes(text: str) -> list[str]:
    return [d.code for d in validate(parse_program(text))]


def test_text_json_and_builder_round_trip():
    assert LARGE.large_workgroup_memory
    assert parse_program(LARGE.to_text()) == LARGE
    assert "workgroup(256, 1, 1) workgroup_memory(large) {" in LARGE.to_text()
    assert loads(dumps(LARGE)) == LARGE
    small = parse_program(BIG.replace("ATTR", "").replace("u32[16384]", "u32[64]").replace("64u32", "1u32"))
    assert "workgroup_memory" not in dumps(small)  # other programs keep their hashes
    assert not loads(dumps(small)).large_workgroup_memory
    b = ProgramBuilder("w", (64, 1, 1), large_workgroup_memory=True)
    b.buffer("s", DataType.U32, "workgroup", 20000)
    built = b.build()
    assert built.large_workgroup_memory and "workgroup_memory(large)" in built.to_text()
    assert validate(built) == []
    assert LARGE.content_hash() != parse_program(BIG.replace("ATTR", "")).content_hash()


def test_p015_and_the_limits():
    with pytest.raises(ParseError) as exc:
        parse_program(BIG.replace("ATTR", " workgroup_memory(huge)"))
    assert exc.value.diagnostics[0].code == "P015"
    assert _diag_codes(BIG.replace("ATTR", "")) == ["V019"]  # 96 KiB without the attribute
    assert validate(LARGE) == []
    over = BIG.replace("ATTR", " workgroup_memory(large)")
    # laid out: a at 0 (65,536 bytes), b at 65,536 (3 bytes, a word), c at 65,552 (16-byte aligned)
    offsets, end = workgroup_layout(parse_program(over.replace("f64[4096]", "f64[20862]")))
    assert offsets == {"a": 0, "b": 65536, "c": 65552} and end == 65552 + 20862 * 8 == 232448 == 227 * 1024
    assert validate(parse_program(over.replace("f64[4096]", "f64[20862]"))) == []
    assert _diag_codes(over.replace("f64[4096]", "f64[20863]")) == ["V048"]


def test_the_ptx_has_one_dynamic_array():
    text = emit(LARGE).text
    assert text.count(".extern .shared .align 16 .b8 wg_dyn[];") == 1
    assert "\t.shared" not in text  # no static workgroup arrays
    assert "add.u32" in text and "65552;" in text  # c's offset after a (65,536) and b (4, aligned to 16)
    assert kernel_abi(LARGE).dynamic_shared_bytes == 65552 + 4096 * 8 and kernel_abi(LARGE).shared_bytes == 0
    small = parse_program(BIG.replace("ATTR", "").replace("u32[16384]", "u32[64]").replace("64u32", "1u32"))
    assert "wg_dyn" not in emit(small).text and kernel_abi(small).dynamic_shared_bytes == 0
    if find_ptxas() is not None:
        assert "0 bytes stack frame" in ptxas_verbose(text)


@pytest.mark.parametrize("target", ["sm_90", "sm_75"])
def test_the_simulator_matches_the_reference_bit_for_bit(target):
    for n in (1, 300, 600):
        x = (np.arange(n, dtype=np.uint32) * 2654435761).astype(np.uint32)
        assert_matches(LARGE, [x], REF.dispatch(LARGE, [x]), target=target)


@pytest.mark.gpu
@pytest.mark.skipif(not cuda_available(), reason="no CUDA GPU: libcuda.so.1 cannot be loaded or reports no device")
def test_the_cuda_backend_opts_in_and_matches_the_reference():
    cuda = vyre_decl.acquire("cuda")
    info = cuda._device.info  # type: ignore[attr-defined]
    if info.max_shared_per_block_optin < kernel_abi(LARGE).dynamic_shared_bytes:
        with pytest.raises(VyreError) as exc:
            cuda.compile(LARGE)
        assert exc.value.diagnostics[0].code == "D009"
        return
    for n in (1, 513, 5000):
        x = (np.arange(n, dtype=np.uint32) * 2654435761).astype(np.uint32)
        assert cuda.dispatch(LARGE, [x])[0].tobytes() == REF.dispatch(LARGE, [x])[0].tobytes(), n
    pipeline = cuda.compile(LARGE)
    assert pipeline.occupancy().shared_bytes >= kernel_abi(LARGE).dynamic_shared_bytes
    assert pipeline.occupancy().workgroups_per_sm >= 1


def test_the_fuzzer_declares_large_workgroup_memory_and_leaves_other_programs_alone(monkeypatch):
    """Seeds 0-299: some programs with workgroup arrays declare workgroup_memory(large) (valid; one
    dynamic array); every other program the same with the feature off; the first three with a
    workgroup array on the simulator = reference."""
    from vyre_decl.backends import DispatchConfig
    from vyre_decl.conform import fuzz
    from vyre_decl.ir.nodes import Access
    from vyre_decl.registry import default_registry

    ops = fuzz.FuzzOps(default_registry())
    large = []
    for seed in range(300):
        p = fuzz.random_program(seed, ops)
        if fuzz.large_memory(seed):
            assert p.large_workgroup_memory and validate(p) == [], seed
            if any(b.access is Access.WORKGROUP for b in p.buffers):
                large.append((seed, p))
        else:
            monkeypatch.setattr(fuzz, "large_memory", lambda s: False)
            assert fuzz.random_program(seed, ops) == p, seed
            monkeypatch.undo()
    assert len(large) >= 5
    for seed, p in large[:3]:
        assert "wg_dyn" in emit(p).text
        inputs = fuzz.random_inputs(p, seed)
        assert_matches(p, inputs, REF.dispatch(p, inputs, DispatchConfig(timeout=10.0)))
