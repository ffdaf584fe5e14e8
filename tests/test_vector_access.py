"""Vector copies (issue 28): ``dst[i ..+ N] = src[j ..+ N]`` in the text form, the builder and the
canonical JSON; validation V043-V046; the reference's element-by-element meaning at the edges (past
the end, past 2^32 - 1, every space); the PTX (128-bit ld/st, register arrays without .local
memory, ptxas keeping vector-filled private arrays in registers); and the simulated device and the
CUDA backend against the reference bit for bit."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import vyre_decl
from vyre_decl.backends.cuda import cuda_available
from vyre_decl.emit import emit
from vyre_decl.emit.promote import promotable
from vyre_decl.emit.ptxas import find_ptxas
from vyre_decl.ir import Copy, ParseError, VyreError, dumps, loads, parse_program, print_program, validate
from vyre_decl.ir.builder import ProgramBuilder
from vyre_decl.registry import default_registry

from sim_ptx_helpers import assert_matches, ptxas_verbose

REF = vyre_decl.acquire("reference")


def _program(body: str, buffers: str, wg: int = 32) -> str:
    return f"program v workgroup({wg}, 1, 1) {{\n{buffers}{body}}}\n"


# a copy through every space: global -> private -> workgroup -> global, with a shifted window so
# that some lanes read another lane's slot, vectors past the end and unaligned starts
SPACES = parse_program("""program spaces workgroup(8, 1, 1) {
  buffer a: read T[] @0
  buffer o: write T[len(a)] @1
  buffer p: private T[6]
  buffer w: workgroup T[32]
  let i = gid.x
  p[1u32 ..+ 4] = a[i * 4u32 + 1u32 ..+ 4]
  w[lid.x * 4u32 ..+ 4] = p[0u32 ..+ 4]
  barrier
  o[i * 4u32 ..+ 4] = w[(lid.x * 4u32 + 4u32) % 32u32 ..+ 4]
  o[i * 4u32 + 2u32 ..+ 2] = p[4u32 ..+ 2]
}""".replace("T", "f32"))


def _spaces_oracle(a: np.ndarray) -> np.ndarray:
    """SPACES by hand, one invocation at a time, in the order the statements run."""
    n = len(a)
    grid = -(-n // 8) * 8 if n else 0
    at = lambda k: a[k] if k < n else 0  # noqa: E731
    priv = [[0] + [at(i * 4 + 1 + q) for q in range(4)] + [0] for i in range(grid)]
    out = np.zeros(n, a.dtype)
    for i in range(grid):
        wg, lid = divmod(i, 8)
        src = priv[wg * 8 + (lid + 1) % 8]
        for q in range(4):
            if i * 4 + q < n:
                out[i * 4 + q] = src[q]
    for i in range(grid):
        for q in range(2):
            if i * 4 + 2 + q < n:
                out[i * 4 + 2 + q] = priv[i][4 + q]
    return out


# ----------------------------------------------------------------------------- text form, builder, JSON


def test_the_text_form_prints_and_parses_back_and_the_json_round_trips():
    text = print_program(SPACES)
    assert "  p[1u32 ..+ 4] = a[i * 4u32 + 1u32 ..+ 4]\n" in text and "o[i * 4u32 + 2u32 ..+ 2] = p[4u32 ..+ 2]" in text
    assert parse_program(text) == SPACES
    assert loads(dumps(SPACES)) == SPACES and '"k":"copy"' in dumps(SPACES)
    copies = [n for n in SPACES.body if isinstance(n, Copy)]
    assert [(c.dst, c.src, c.width) for c in copies] == [("p", "a", 4), ("w", "p", 4), ("o", "w", 4), ("o", "p", 2)]


def test_the_builder_writes_the_same_copy():
    b = ProgramBuilder("v", workgroup=(32, 1, 1))
    a = b.input("a", "u32")
    o = b.output("o", "u32", like=a)
    i = b.let("i", b.gid.x)
    o.copy_from(i * 2, a, i * 2 + 1, 2)
    built = b.build()
    parsed = parse_program(print_program(built))
    assert parsed == built and "o[i * 2u32 ..+ 2] = a[i * 2u32 + 1u32 ..+ 2]" in print_program(built)


@pytest.mark.parametrize("text, where", [
    ("o[0u32 ..+ 4] = a[0u32 ..+ 2]", "different widths"),
    ("o[0u32 ..+ 4] = a[0u32]", "'..'"),
    ("o[0u32 ..+ 4] = a[0u32] + 1u32", "'..'"),
    ("o[0u32 ..+ x] = a[0u32 ..+ 4]", "a vector width"),
])
def test_malformed_copies_are_parse_errors(text, where):
    src = _program(f"  {text}\n", "  buffer a: read u32[] @0\n  buffer o: write u32[len(a)] @1\n")
    with pytest.raises(ParseError) as e:
        parse_program(src)
    assert e.value.diagnostics[0].code == "P002" and where in str(e.value)


# a side written [q ..* N] counts whole vectors: elements N q .. N q + N - 1
UNITS = parse_program("""program units workgroup(8, 1, 1) {
  buffer a: read T[] @0
  buffer o: write T[len(a)] @1
  buffer p: private T[8]
  buffer q: private T[8]
  buffer w: workgroup T[32]
  let i = gid.x
  let h = 1u32
  p[0u32 ..* 4] = a[i ..* 4]
  q[h ..* 4] = a[i + 1u32 ..* 4]
  w[lid.x ..* 4] = p[0u32 ..+ 4]
  barrier
  p[1u32 ..* 4] = w[lid.x + 1u32 ..* 4]
  o[i * 2u32 ..* 4] = p[4u32 ..+ 4]
  o[i * 2u32 + 1u32 ..* 4] = q[h ..* 4]
}""".replace("T", "f32"))


def test_vector_units_print_parse_and_round_trip_and_leave_other_copies_json_alone():
    text = print_program(UNITS)
    assert "  p[1u32 ..* 4] = w[lid.x + 1u32 ..* 4]\n" in text and "w[lid.x ..* 4] = p[0u32 ..+ 4]" in text
    assert parse_program(text) == UNITS and loads(dumps(UNITS)) == UNITS
    assert '"dst_units":true' in dumps(UNITS) and '"src_units":true' in dumps(UNITS)
    assert "units" not in dumps(SPACES)  # copies counting elements keep their JSON (and hashes)
    copies = [n for n in UNITS.body if isinstance(n, Copy)]
    assert [(c.dst_units, c.src_units) for c in copies] == [(True, True), (True, True), (True, False),
                                                            (True, True), (True, False), (True, True)]
    b = ProgramBuilder("v", workgroup=(32, 1, 1))
    a = b.input("a", "u32")
    o = b.output("o", "u32", like=a)
    o.copy_from(b.gid.x, a, b.gid.x + 1, 4, units=True, src_units=True)
    assert "o[gid.x ..* 4] = a[gid.x + 1u32 ..* 4]" in print_program(b.build())


# ----------------------------------------------------------------------------- validation

_BUFS = ("  buffer a: read u32[] @0\n  buffer o: write u32[len(a)] @1\n  buffer f: read f32[] @2\n"
         "  buffer n: read u8[] @3\n  buffer no: write u8[len(n)] @4\n  buffer p: private u32[8]\n"
         "  buffer w: workgroup u32[64]\n  buffer w6: workgroup u32[6]\n")


@pytest.mark.parametrize("stmt, codes", [
    ("o[0u32 ..+ 3] = a[0u32 ..+ 3]", ["V043"]),
    ("o[0u32 ..+ 8] = a[0u32 ..+ 8]", ["V043"]),
    ("o[0u32 ..+ 1] = a[0u32 ..+ 1]", ["V043"]),
    ("o[0u32 ..+ 4] = f[0u32 ..+ 4]", ["V044"]),
    ("w[0u32 ..+ 4] = w[4u32 ..+ 4]", ["V045"]),
    ("no[0u32 ..+ 4] = n[0u32 ..+ 4]", ["V046", "V046"]),
    ("a[0u32 ..+ 4] = o[0u32 ..+ 4]", ["V011"]),
    ("o[1i32 ..+ 4] = a[0u32 ..+ 4]", ["V023"]),
    ("o[0u32 ..+ 4] = q[0u32 ..+ 4]", ["V004"]),
    ("p[gid.x ..+ 4] = a[0u32 ..+ 4]", ["V030"]),
    ("o[0u32 ..+ 4] = p[a[0u32] ..+ 4]", ["V030"]),
    ("o[0u32 ..+ 4] = w6[1u32 ..* 4]", ["V047"]),
    ("w6[gid.x ..* 2] = a[0u32 ..* 2]", []),
    ("o[gid.x ..* 4] = w[1u32 ..* 4]", []),
])
def test_validation_codes(stmt, codes):
    p = parse_program(_program(f"  {stmt}\n", _BUFS))
    diags = validate(p, default_registry())
    assert sorted(d.code for d in diags) == codes, [str(d) for d in diags]
    for d in diags:
        assert d.location.startswith("body[0]") and d.fix


def test_a_valid_copy_of_every_word_type_and_both_widths():
    for t in ("u32", "i32", "f32", "u64", "i64", "f64"):
        for w in (2, 4):
            src = _program(f"  o[gid.x ..+ {w}] = a[gid.x * 2u32 ..+ {w}]\n",
                           f"  buffer a: read {t}[] @0\n  buffer o: write {t}[len(a)] @1\n")
            assert validate(parse_program(src), default_registry()) == []


def test_check_raises_a_vyre_error_with_the_code_and_a_fix():
    p = parse_program(_program("  o[0u32 ..+ 3] = a[0u32 ..+ 3]\n", _BUFS))
    with pytest.raises(VyreError) as e:
        REF.dispatch(p, [np.zeros(4, np.uint32)] * 2 + [np.zeros(4, np.float32), np.zeros(4, np.uint8)])
    assert "V043" in str(e.value) and "Fix:" in str(e.value)


# ----------------------------------------------------------------------------- the reference


@pytest.mark.parametrize("n", [0, 1, 3, 4, 5, 31, 32, 33, 67])
def test_the_reference_copies_element_by_element_with_the_bounds_rules(n):
    a = np.arange(1, n + 1, dtype=np.float32) * 1.5
    (got,) = REF.dispatch(SPACES, [a])
    np.testing.assert_array_equal(got, _spaces_oracle(a))


def test_indices_near_2_to_the_32_never_wrap():
    p = parse_program(_program("  o[4294967294u32 ..+ 4] = a[0u32 ..+ 4]\n  o[1u32 ..+ 4] = a[4294967294u32 ..+ 4]\n"
                               "  o[5u32 ..+ 2] = a[4294967295u32 ..+ 2]\n",
                               "  buffer a: read u32[] @0\n  buffer o: read_write u32[] @1\n", wg=1))
    a, o = np.arange(10, 20, dtype=np.uint32), np.full(10, 7, np.uint32)
    (got,) = REF.dispatch(p, [a, o])
    assert got.tolist() == [7, 0, 0, 0, 0, 0, 0, 7, 7, 7]  # nothing lands on 0 or 1; past-the-end loads give 0


@pytest.mark.parametrize("n", [0, 3, 4, 33, 64, 67, 130])
def test_vector_units_mean_the_element_copy_at_n_times_the_index(n):
    elements = parse_program(print_program(UNITS)
                             .replace("a[i ..* 4]", "a[i * 4u32 ..+ 4]").replace("a[i + 1u32 ..* 4]", "a[i * 4u32 + 4u32 ..+ 4]")
                             .replace("o[i * 2u32 ..* 4]", "o[i * 8u32 ..+ 4]").replace("o[i * 2u32 + 1u32 ..* 4]", "o[i * 8u32 + 4u32 ..+ 4]")
                             .replace("w[lid.x ..* 4]", "w[lid.x * 4u32 ..+ 4]").replace("w[lid.x + 1u32 ..* 4]", "w[lid.x * 4u32 + 4u32 ..+ 4]")
                             .replace("p[0u32 ..* 4]", "p[0u32 ..+ 4]").replace("p[1u32 ..* 4]", "p[4u32 ..+ 4]")
                             .replace("q[h ..* 4]", "q[h * 4u32 ..+ 4]"))
    assert "..*" not in print_program(elements)
    a = np.arange(1, n + 1, dtype=np.float32) * 1.25
    (got,) = REF.dispatch(UNITS, [a])
    np.testing.assert_array_equal(got, REF.dispatch(elements, [a])[0])
    if n >= 64:  # lane 7's w[8 ..* 4] is past the workgroup array: zeros, in its o[2 * 7 ..* 4]
        assert got[56:60].tolist() == [0, 0, 0, 0] and got[0:8].tolist() == a[4:8].tolist() * 2


def test_a_vector_index_past_2_to_the_32_elements_never_wraps():
    p = parse_program(_program("  o[1073741824u32 ..* 4] = a[0u32 ..* 4]\n  o[1u32 ..* 2] = a[2147483648u32 ..* 2]\n"
                               "  o[4u32 ..* 2] = a[1u32 ..* 2]\n",
                               "  buffer a: read u32[] @0\n  buffer o: read_write u32[] @1\n", wg=1))
    a, o = np.arange(10, 20, dtype=np.uint32), np.full(10, 7, np.uint32)
    (got,) = REF.dispatch(p, [a, o])
    assert got.tolist() == [7, 7, 0, 0, 7, 7, 7, 7, 12, 13]


def test_the_copy_moves_bits_unchanged():
    p = parse_program(_program("  o[gid.x * 2u32 ..+ 2] = a[gid.x * 2u32 ..+ 2]\n",
                               "  buffer a: read f64[] @0\n  buffer o: write f64[len(a)] @1\n"))
    bits = np.array([0x7FF0000000000001, 0xFFF8000000000123, 0x8000000000000000, 1], np.uint64)
    (got,) = REF.dispatch(p, [bits.view(np.float64)])
    assert got.view(np.uint64).tolist() == bits.tolist()


def test_lanes_masked_by_an_if_or_a_return_copy_nothing():
    p = parse_program(_program("  if gid.x % 3u32 == 1u32 { return }\n"
                               "  if gid.x % 2u32 == 0u32 { o[gid.x * 4u32 ..+ 4] = a[gid.x * 4u32 ..+ 4] }\n",
                               "  buffer a: read i32[] @0\n  buffer o: write i32[len(a)] @1\n", wg=4))
    a = np.arange(1, 41, dtype=np.int32)
    (got,) = REF.dispatch(p, [a])
    want = np.zeros(40, np.int32)
    for g in range(10):
        if g % 3 != 1 and g % 2 == 0:
            want[g * 4:g * 4 + 4] = a[g * 4:g * 4 + 4]
    assert got.tolist() == want.tolist()


# ----------------------------------------------------------------------------- PTX


# fragments filled by 128-bit workgroup loads at a run-time index, multiplied in an unrolled loop:
# the matmul's inner step
FRAGMENTS = parse_program("""program frag workgroup(64, 1, 1) {
  buffer a: read f32[] @0
  buffer o: write f32[len(a)] @1
  buffer w: workgroup f32[512]
  buffer fa: private f32[8]
  buffer acc: private f32[8]
  w[lid.x * 4u32 ..+ 4] = a[gid.x * 4u32 ..+ 4]
  w[lid.x * 4u32 + 256u32 ..+ 4] = a[gid.x * 4u32 + 256u32 ..+ 4]
  barrier
  loop k in 0u32 .. 4u32 {
    fa[0u32 ..+ 4] = w[k * 128u32 + (lid.x % 16u32) * 4u32 ..+ 4]
    fa[4u32 ..+ 4] = w[k * 128u32 + (lid.x % 16u32) * 4u32 + 64u32 ..+ 4]
    loop j in 0u32 .. 8u32 unroll { acc[7u32 - j] = primitive.math.fma(fa[j], fa[j], acc[7u32 - j]) }
  }
  o[gid.x * 8u32 ..+ 4] = acc[0u32 ..+ 4]
  o[gid.x * 8u32 + 4u32 ..+ 4] = acc[4u32 ..+ 4]
}""")


def test_vector_copies_emit_128_bit_accesses_and_register_arrays_need_no_local_memory():
    assert promotable(FRAGMENTS) == {"fa"}  # acc is indexed by 7u32 - j, an op: a .local array
    text = emit(FRAGMENTS).text
    assert "ld.global.v4.f32" in text and "st.shared.v4.f32" in text and "ld.shared.v4.f32" in text
    assert "st.global.v4.f32" in text
    assert "pv_fa" not in text and "pv_acc" in text and "ld.local.v4.f32" in text


def test_a_register_array_is_loaded_straight_into_its_registers():
    text = emit(SPACES).text
    assert "pv_p" not in text and ".local" not in text
    loads = re.findall(r"ld\.global\.v4\.f32 \{([^}]*)\}", text)
    assert len(loads) == 1
    # the registers zeroed for p[1] .. p[4] are the ones loaded: no copy through temporaries
    zeroed = re.findall(r"mov\.f32 (%f\d+), 0f00000000;", text[:text.index("// body[0]")])
    assert [r.strip() for r in loads[0].split(",")] == zeroed[1:5]


def test_vector_units_in_workgroup_and_private_memory_are_predicated_accesses_without_a_branch():
    """Every vector of a scratch buffer is whole (V047), so a side counting vectors there needs one
    bounds predicate; copies with a global side keep the element path (a partial last vector)."""
    text = emit(UNITS).text
    assert re.search(r"@%p\d+ ld\.shared\.v4\.f32", text)  # lid.x + 1 reaches the vector count, 8
    assert re.search(r"\tst\.shared\.v4\.f32", text)  # lid.x < 8: a test proven true is left out (emit/ranges.py)
    assert len(re.findall(r"_copy_elements:", text)) == 4  # the four copies with a global side
    assert "setp.lt.u32" in text and "mul.lo.u32" in text


@pytest.mark.skipif(find_ptxas() is None, reason="ptxas not installed")
@pytest.mark.parametrize("target", ["sm_90", "sm_75"])
def test_ptxas_keeps_private_arrays_filled_by_vector_copies_in_registers(target):
    for p in (FRAGMENTS, SPACES, UNITS):
        log = ptxas_verbose(emit(p, target=target).text, target)
        assert "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads" in log, log


def test_the_matmul_kernel_keeps_its_tile_in_registers():
    """linalg.matmul: every private array is a register array (no .local), 128-bit workgroup loads
    counting whole vectors (sa[q ..* 4])."""
    from vyre_decl.ir import DataType
    import tomllib

    src = tomllib.loads((Path(__file__).parents[1] / "routines" / "linalg.routines.toml").read_text())
    p = parse_program(src["kernel"]["matmul"]["source"], type_vars={"T": DataType.F32})
    text = emit(p).text
    assert ".local" not in text and "ld.global.v4.f32" in text
    # the fragments: 4 vector loads a step, 8 steps unrolled, no branch, and no bounds predicate: each
    # index is provably below the vector count (emit/ranges.py, from the range laws of %, *, + and /)
    assert not re.findall(r"@%p\d+ (ld|st)\.shared", text) and text.count("ld.shared.v4.f32") == 32
    if find_ptxas() is not None:
        assert "0 bytes stack frame" in ptxas_verbose(text)


# ----------------------------------------------------------------------------- the simulated device


@pytest.mark.parametrize("target", ["sm_90", "sm_75"])
def test_the_simulator_matches_the_reference_bit_for_bit(target):
    for n in (1, 5, 32, 33, 67):
        a = np.random.default_rng(n).standard_normal(n).astype(np.float32)
        assert_matches(SPACES, [a], REF.dispatch(SPACES, [a]), target=target)
    for n in (64, 300, 512, 515):
        a = np.random.default_rng(n).standard_normal(n).astype(np.float32)
        assert_matches(FRAGMENTS, [a], REF.dispatch(FRAGMENTS, [a]), target=target)
    for n in (0, 3, 33, 64, 67):
        a = np.random.default_rng(n).standard_normal(n).astype(np.float32)
        assert_matches(UNITS, [a], REF.dispatch(UNITS, [a]), target=target)


@pytest.mark.parametrize("t", ["u32", "i64", "f64"])
def test_unaligned_and_partial_vectors_on_the_simulator(t):
    """Odd offsets (the element path), vectors past the end, 64-bit elements in two 128-bit pieces."""
    p = parse_program(_program("  o[gid.x * 5u32 + gid.x % 2u32 ..+ 4] = a[gid.x * 4u32 + 1u32 ..+ 4]\n"
                               "  q[gid.x * 2u32 ..+ 2] = a[gid.x * 2u32 + gid.x % 2u32 ..+ 2]\n",
                               f"  buffer a: read {t}[] @0\n  buffer o: read_write {t}[] @1\n"
                               f"  buffer q: write {t}[len(a)] @2\n", wg=4))
    for n in (3, 8, 13, 40):
        a = (np.arange(n) * 7 + 1).astype({"u32": np.uint32, "i64": np.int64, "f64": np.float64}[t])
        o = np.full(5 * n // 4 + 3, 9, a.dtype)  # the invocations' windows do not overlap: no race
        assert_matches(p, [a, o], REF.dispatch(p, [a, o]))


@pytest.mark.gpu
@pytest.mark.skipif(not cuda_available(), reason="no CUDA GPU: libcuda.so.1 cannot be loaded or reports no device")
def test_the_cuda_backend_matches_the_reference_bit_for_bit():
    cuda = vyre_decl.acquire("cuda")
    for n in (1, 33, 1000, 4099):
        a = np.random.default_rng(n).standard_normal(n).astype(np.float32)
        for p in (SPACES, FRAGMENTS, UNITS):
            assert cuda.dispatch(p, [a])[0].tobytes() == REF.dispatch(p, [a])[0].tobytes(), (p.name, n)


# ----------------------------------------------------------------------------- the fuzzer


def test_the_fuzzer_generates_vector_copies_and_leaves_other_programs_alone(monkeypatch):
    """Seeds 0-299: programs with vector copies (valid; through every path of the emitter), and every
    other program the same as with the feature switched off."""
    from vyre_decl.conform import fuzz
    from vyre_decl.ir.walk import statements

    reg = default_registry()
    ops = fuzz.FuzzOps(reg)
    real = fuzz.vector_copies
    copies, changed, kinds = [], 0, set()
    for seed in range(300):
        p = fuzz.random_program(seed, ops)
        monkeypatch.setattr(fuzz, "vector_copies", lambda s: False)
        plain = fuzz.random_program(seed, ops)
        monkeypatch.setattr(fuzz, "vector_copies", real)
        found = [n for n in statements(p.body) if isinstance(n, Copy)]
        copies += found
        if p != plain:
            changed += 1
            assert real(seed) and any(b.name == "pv" for b in p.buffers), seed
        if found:
            assert validate(p, reg) == []
            kinds.add("pv" in promotable(p))  # a register array, or a .local one (a counter plus a literal)
    assert len(copies) >= 20 and changed >= 10
    assert {c.width for c in copies} == {2, 4} and "sh" in {c.src for c in copies} and kinds == {True, False}
    units = [c for c in copies if c.src_units or c.dst_units]  # sides counting whole vectors
    assert any(c.src_units and c.src == "sh" for c in units) and any(c.src_units and c.src != "sh" for c in units)
    assert any(c.dst_units for c in units) and len(units) < len(copies)
