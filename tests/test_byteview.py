"""Byte views (issue 28): ``x.u32[i]`` reads bytes 4i .. 4i+3 of any global buffer little-endian,
``w.u8[i]`` byte i of wider words; text form, builder, canonical JSON, V049/V050, the reference
against numpy's bytes (a partial last element zero-padded, past the end 0), the PTX (one load of
the view's width, a byte path for the edge and for an unaligned base), the simulated device and
the CUDA backend (an offset byte buffer: the unaligned path) bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

import vyre_decl
from vyre_decl import validate
from vyre_decl.backends.cuda import cuda_available
from vyre_decl.emit import emit, vector_entry
from vyre_decl.emit.ptxas import find_ptxas
from vyre_decl.ir import dumps, loads, parse_program
from vyre_decl.ir.builder import ProgramBuilder
from vyre_decl.ir.types import DataType

from sim_ptx_helpers import assert_matches, ptxas_verbose

REF = vyre_decl.acquire("reference")

VIEWS = parse_program("""program views workgroup(64, 1, 1) {
  buffer x: read u8[] @0
  buffer w: read u32[] @1
  buffer out: write u32[len(w)] @2
  buffer o8: write u32[len(x)] @3
  buffer o64: write u64[len(w)] @4
  let i = gid.x
  out[i] = x.u32[i] ^ x.u16[i] << 7u32
  o8[i] = w.u8[i] + w.u16[i] * 1000u32 + (x.u64[i] >> 40u64) as u32
  o64[i] = x.u64[i] + w.u64[i]
}""")


def _le(b: bytes, i: int, size: int) -> int:
    """Element i of a view of size ``size`` over bytes ``b``: little-endian, past the end 0."""
    return int.from_bytes(b[i * size: i * size + size].ljust(size, b"\0"), "little")


def _oracle(x: np.ndarray, w: np.ndarray) -> list[np.ndarray]:
    xb, wb = x.tobytes(), w.astype("<u4").tobytes()
    out = [(_le(xb, i, 4) ^ (_le(xb, i, 2) << 7)) & 0xFFFFFFFF for i in range(len(w))]
    o8 = [(_le(wb, i, 1) + _le(wb, i, 2) * 1000 + (_le(xb, i, 8) >> 40)) & 0xFFFFFFFF for i in range(len(x))]
    o64 = [(_le(xb, i, 8) + _le(wb, i, 8)) % 2**64 for i in range(len(w))]
    return [np.array(out, np.uint32), np.array(o8, np.uint32), np.array(o64, np.uint64)]


def _inputs(n: int) -> list[np.ndarray]:
    rng = np.random.default_rng(n)
    return [rng.integers(0, 256, n).astype(np.uint8), rng.integers(0, 2**32, max(1, n // 3)).astype(np.uint32)]


def test_text_json_builder_and_validation():
    assert parse_program(VIEWS.to_text()) == VIEWS and loads(dumps(VIEWS)) == VIEWS
    assert "x.u32[i]" in VIEWS.to_text() and '"view":"u32"' in dumps(VIEWS)
    plain = "program p workgroup(1, 1, 1) {\n  buffer w: read u32[] @0\n  buffer o: write u32[len(w)] @1\n  o[gid.x] = w[gid.x]\n}"
    assert '"view"' not in dumps(parse_program(plain))  # other loads keep their hashes
    assert validate(VIEWS) == []
    b = ProgramBuilder("bv", (64, 1, 1))
    x = b.buffer("x", DataType.U8)
    out = b.buffer("out", DataType.U32, "write", like=x)
    out[b.gid.x] = x.view("u32", b.gid.x)
    built = b.build()
    assert "out[gid.x] = x.u32[gid.x]" in built.to_text() and validate(built) == []

    def codes(decl: str, expr: str) -> list[str]:
        text = f"program v workgroup(64, 1, 1) {{\n{decl}\n  buffer o: write u32[4] @1\n  o[gid.x] = {expr}\n}}"
        return [d.code for d in validate(parse_program(text))]

    assert codes("  buffer f: read bool[] @0", "f.u32[gid.x]") == ["V049"]
    assert codes("  buffer f: read u32[] @0\n  buffer s: workgroup u8[64]", "s.u32[gid.x] + f[0u32]") == ["V049"]
    atomic = dumps(parse_program("program a workgroup(1, 1, 1) {\n  buffer f: read_write u32[] @0\n"
                                 "  f[1u32] = atomic f[0u32]\n}"))
    assert [d.code for d in validate(loads(atomic.replace('"k":"load"', '"k":"load","view":"u32"')))] == ["V050"]
    assert codes("  buffer f: read f32[] @0", "f.u32[gid.x]") == []  # a float's bits
    assert codes("  buffer f: read u8[] @0", "f.u32[gid.x] as u64") == ["V007"]  # u32 to u64: the type of a u32 view


@pytest.mark.parametrize("n", [0, 1, 3, 8, 61, 1003])
def test_the_reference_reads_little_endian_bytes(n):
    x, w = _inputs(n)
    got = REF.dispatch(VIEWS, [x, w])
    for g, e in zip(got, _oracle(x, w)):
        assert g.tobytes() == e.tobytes(), n


def test_the_ptx_loads_whole_words_and_is_no_map():
    text = emit(VIEWS).text
    assert "ld.global.u32" in text and "ld.global.u64" in text and "ld.global.u16" in text
    assert "and.b64" in text  # the base's alignment, for the views wider than the elements
    assert vector_entry(VIEWS) is None
    if find_ptxas() is not None:
        assert "0 bytes stack frame" in ptxas_verbose(text)


@pytest.mark.parametrize("target", ["sm_90", "sm_75"])
def test_the_simulator_matches_the_reference_bit_for_bit(target):
    for n in (0, 1, 5, 250, 1003):
        x, w = _inputs(n)
        assert_matches(VIEWS, [x, w], REF.dispatch(VIEWS, [x, w]), target=target)


class _Offset:
    """A byte buffer starting ``skip`` bytes into a resident buffer (``__cuda_array_interface__``)."""

    def __init__(self, buf: object, skip: int, n: int) -> None:
        self.buf = buf
        self.__cuda_array_interface__ = {"shape": (n,), "typestr": "|u1", "version": 3,
                                         "data": (buf.ptr + skip, True), "strides": None}  # type: ignore[attr-defined]


@pytest.mark.gpu
@pytest.mark.skipif(not cuda_available(), reason="no CUDA GPU: libcuda.so.1 cannot be loaded or reports no device")
def test_the_cuda_backend_matches_the_reference_also_unaligned():
    cuda = vyre_decl.acquire("cuda")
    for n in (1, 7, 1003, 70001):
        x, w = _inputs(n)
        assert [a.tobytes() for a in cuda.dispatch(VIEWS, [x, w])] == [a.tobytes() for a in _oracle(x, w)], n
    pipeline = cuda.compile(VIEWS)
    for skip in (1, 2, 3):  # the byte buffer's base not aligned: the byte path, same results
        x, w = _inputs(1003)
        raw = cuda.upload(np.concatenate([np.zeros(skip, np.uint8), x, np.zeros(8, np.uint8)]))
        xs = cuda.wrap(_Offset(raw, skip, len(x)))
        outs = [cuda.allocate(t, c) for t, c in (("u32", len(w)), ("u32", len(x)), ("u64", len(w)))]
        pipeline.dispatch_resident([xs, cuda.upload(w), *outs])
        cuda.synchronize()
        assert [cuda.download(o).tobytes() for o in outs] == [a.tobytes() for a in _oracle(x, w)], skip


# ----------------------------------------------------------------------------- bytes.histogram on words


def _histogram_inputs() -> list[np.ndarray]:
    """Tails of 0-3 bytes, a subgroup's words of one repeated byte (the one-atomic path) beside
    words of four equal bytes that differ between lanes, and spread bytes."""
    rng = np.random.default_rng(5)
    runs = np.repeat(rng.integers(0, 256, 40), 4096).astype(np.uint8)  # 32 words of a lane group alike
    lanes = np.repeat(rng.integers(0, 256, 9000), 4).astype(np.uint8)  # a word of one byte, lanes differ
    return [np.zeros(70001, np.uint8), runs, lanes[:36001], rng.integers(0, 256, 65538).astype(np.uint8),
            np.full(5, 7, np.uint8), np.zeros(0, np.uint8)]


def test_the_byte_histogram_counts_every_byte_once():
    from vyre_decl.routines import routine
    for x in _histogram_inputs():
        got = routine("bytes.histogram")(x, backend="reference")
        assert got.tobytes() == np.bincount(x, minlength=256).astype(np.uint32).tobytes(), len(x)


@pytest.mark.gpu
@pytest.mark.skipif(not cuda_available(), reason="no CUDA GPU: libcuda.so.1 cannot be loaded or reports no device")
def test_the_byte_histogram_on_cuda_is_numpy_s():
    from vyre_decl.routines import routine
    for x in _histogram_inputs():
        got = routine("bytes.histogram")(x, backend="cuda")
        assert got.tobytes() == np.bincount(x, minlength=256).astype(np.uint32).tobytes(), len(x)


# ----------------------------------------------------------------------------- the fuzzer


def test_the_fuzzer_reads_through_views_and_leaves_other_programs_alone(monkeypatch):
    """Seeds 0-299: programs with byte views of every width (valid), every other program the same
    as with the feature switched off; the first few view programs on the simulator = reference."""
    from vyre_decl.backends import DispatchConfig
    from vyre_decl.conform import fuzz
    from vyre_decl.ir.nodes import Load
    from vyre_decl.ir.walk import body_exprs
    from vyre_decl.registry import default_registry

    ops = fuzz.FuzzOps(default_registry())
    with_views, widths = [], set()
    for seed in range(300):
        p = fuzz.random_program(seed, ops)
        views = [e.view for e in body_exprs(p.body) if isinstance(e, Load) and e.view is not None]
        if fuzz.byte_views(seed):  # the feature's own draw (a program may still have no view)
            assert validate(p) == [], seed
            with_views += [(seed, p)] if views else []
            widths.update(views)
        else:
            monkeypatch.setattr(fuzz, "byte_views", lambda s: False)
            assert fuzz.random_program(seed, ops) == p, seed
            monkeypatch.undo()
    assert 20 <= len(with_views) <= 100 and widths == {DataType.U8, DataType.U16, DataType.U32, DataType.U64}
    for seed, p in with_views[:4]:
        inputs = fuzz.random_inputs(p, seed)
        assert_matches(p, inputs, REF.dispatch(p, inputs, DispatchConfig(timeout=10.0)))
