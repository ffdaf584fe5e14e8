"""Private arrays and unroll loops (issue 28): the text form and the builder, the canonical form,
every validation error (V029-V033) with its path and Fix, and the reference semantics (each
invocation its own zeroed copy, out-of-bounds constants, narrow types, unroll changes nothing).
Emission, ptxas, the simulator and the GPU: tests/test_private_arrays_emit.py."""

from __future__ import annotations

import numpy as np
import pytest

import vyre_decl
from vyre_decl import ProgramBuilder
from vyre_decl.ir import Access, BufferDecl, DataType, Loop, Program, parse_program, print_program, validate
from vyre_decl.ir.canonical import dumps, from_json, to_json
from vyre_decl.ir.lexer import ParseError
from vyre_decl.ir.unrolling import MAX_PRIVATE_BYTES, MAX_UNROLL_COPIES

HEAD = "program m workgroup(64, 1, 1) {\n"
REF = vyre_decl.acquire("reference")

ROWS = """program rows workgroup(32, 1, 1) {
  buffer x: read f32[] @0
  buffer m: read f32[16] @1
  buffer out: write f32[len(x)] @2
  buffer row: private f32[4]
  buffer acc: private f32[4]
  let base = gid.x * 4u32
  loop k in 0u32 .. 4u32 unroll {
    row[k] = x[base + k]
  }
  loop k in 0u32 .. 4u32 unroll {
    loop j in 0u32 .. 4u32 unroll {
      acc[j] = acc[j] + row[k] * m[k * 4u32 + j]
    }
  }
  loop j in 0u32 .. 4u32 unroll {
    out[base + j] = acc[j]
  }
}
"""


def _diags(body: str, registry, buffers: str = "buffer x: read u32[] @0\nbuffer o: write u32[len(x)] @1\n"):
    return validate(parse_program(HEAD + buffers + body + "}\n"), registry)


# ----------------------------------------------------------------------------- text, builder, JSON


def test_the_text_form_round_trips_and_prints_private_and_unroll():
    p = parse_program(ROWS)
    assert print_program(p) == ROWS
    assert parse_program(print_program(p)) == p
    assert p.buffer("acc") == BufferDecl("acc", Access.PRIVATE, DataType.F32, 4)
    loops = [n for n in p.body if isinstance(n, Loop)]
    assert len(loops) == 3 and all(n.unroll for n in loops) and loops[1].body[0].unroll


def test_the_builder_makes_the_same_program():
    b = ProgramBuilder("rows", workgroup=(32, 1, 1))
    x, m = b.input("x", "f32"), b.input("m", "f32", 16)
    out = b.output("out", "f32", like=x)
    row, acc = b.private("row", "f32", 4), b.private("acc", "f32", 4)
    base = b.let("base", b.gid.x * 4)
    with b.loop("k", 0, 4, unroll=True) as k:
        row[k] = x[base + k]
    with b.loop("k", 0, 4, unroll=True) as k:
        with b.loop("j", 0, 4, unroll=True) as j:
            acc[j] = acc[j] + row[k] * m[k * 4 + j]
    with b.loop("j", 0, 4, unroll=True) as j:
        out[base + j] = acc[j]
    assert b.build() == parse_program(ROWS)
    assert row.decl.binding is None and acc.decl.binding is None and out.decl.binding == 2


def test_the_canonical_form_has_unroll_only_when_set():
    p = parse_program(ROWS)
    plain = parse_program(ROWS.replace(" unroll", ""))
    assert '"unroll":true' in dumps(p) and '"unroll"' not in dumps(plain)
    assert from_json(to_json(p)) == p and from_json(to_json(plain)) == plain
    assert p.content_hash() != plain.content_hash()
    assert '"access":"private"' in dumps(p)


@pytest.mark.parametrize("text", ["let unroll = 1u32", "let private = 1u32", "buffer private: read u32[] @0"])
def test_unroll_and_private_are_keywords(text):
    with pytest.raises(ParseError) as e:
        parse_program(HEAD + text + "\n}")
    assert e.value.diagnostics[0].code == "P002"


def test_a_misplaced_unroll_is_a_syntax_error():
    for text in ("loop k in 0u32 .. 4u32 unroll unroll { return }", "loop k unroll in 0u32 .. 4u32 { return }"):
        with pytest.raises(ParseError) as e:
            parse_program(HEAD + text + "\n}")
        assert e.value.diagnostics[0].code == "P002" and "Fix" in str(e.value)


def test_a_private_array_is_no_input_no_output_and_no_kernel_parameter():
    p = parse_program(ROWS)
    assert [b.name for b in p.inputs] == ["x", "m"] and [b.name for b in p.outputs] == ["out"]
    from vyre_decl.emit.abi import kernel_abi

    assert {prm.buffer for prm in kernel_abi(p).params} == {"x", "m", "out"}


# ----------------------------------------------------------------------------- validation

PRIVATE = "buffer acc: private u32[8]\n"


@pytest.mark.parametrize("code,path,buffers", [
    ("V029", "buffers[0]", "buffer acc: private u32[]\n"),
    ("V029", "buffers[0]", "buffer acc: private u32[4] @0\n"),
    ("V029", "buffers[0]", "buffer acc: private u32[4] output\n"),
    ("V029", "buffers[1]", "buffer x: read u32[] @0\nbuffer acc: private u32[len(x)]\n"),
    ("V029", "buffers[0]", f"buffer acc: private f64[{MAX_PRIVATE_BYTES // 8 + 1}]\n"),
    ("V029", "buffers", f"buffer a: private u32[{MAX_PRIVATE_BYTES // 8}]\nbuffer b: private u32[{MAX_PRIVATE_BYTES // 8 + 1}]\n"),
])
def test_bad_private_declarations(code, path, buffers, registry):
    (d,) = validate(parse_program(HEAD + buffers + "}\n"), registry)
    assert (d.code, d.location) == (code, path) and d.fix


@pytest.mark.parametrize("count", [0, -1, 2**40])
def test_a_private_count_that_is_not_positive_and_small_is_v029(count, registry):
    p = Program((BufferDecl("acc", Access.PRIVATE, DataType.U32, count),), (64, 1, 1), ())
    assert [d.code for d in validate(p, registry)] == ["V029"]


@pytest.mark.parametrize("body,path,what", [
    ("o[0u32] = acc[gid.x]\n", "body[0].value.index", "gid.x"),
    ("acc[x[0u32]] = 1u32\n", "body[0].index", "a load from x"),
    ("acc[len(x)] = 1u32\n", "body[0].index", "len(x)"),
    ("let i = 0u32\ni = 1u32\nacc[i] = 1u32\n", "body[2].index", "assigned after its let"),
    ("loop k in 0u32 .. 8u32 { acc[k] = 1u32 }\n", "body[0].body[0].index", "the variable k"),
    ("loop k in 0u32 .. 8u32 unroll { loop j in 0u32 .. 2u32 { acc[k + j] = 1u32 } }\n",
     "body[0].body[0].body[0].index", "the variable j"),
    ("acc[subgroup.lane_id()] = 1u32\n", "body[0].index", "the collective op subgroup.lane_id"),
    ("acc[atomic primitive.atomic.add(o[0u32], 1u32)] = 1u32\n", "body[0].index", "an atomic"),
    ("acc[acc[0u32]] = 1u32\n", "body[0].index", "a load from acc"),
    ("let c = gid.x & 7u32\nlet d = c + 1u32\no[0u32] = select(true, acc[d], 0u32)\n", "body[2].value.if_true.index",
     "the variable d"),
])
def test_a_private_index_that_is_not_constant_is_v030(body, path, what, registry):
    found = [d for d in _diags(body, registry, "buffer x: read u32[] @0\nbuffer o: read_write u32[] @1\n" + PRIVATE)
             if d.code == "V030"]
    assert len(found) == 1, found
    assert found[0].location == path and what in found[0].message and "unroll" in found[0].fix


def test_constant_indices_are_accepted(registry):
    body = """let two = 2u32
let last = two * 4u32 - 1u32
acc[last] = 5u32
acc[9u32] = 1u32
loop k in 0u32 .. 4u32 unroll {
  let twice = k * 2u32
  loop j in 0u32 .. 2u32 unroll { acc[twice + j] = acc[7u32 - (k ^ j)] + select(k < 2u32, acc[k], acc[j]) }
}
loop h in -2i32 .. 2i32 unroll { acc[(h + 2i32) as u32] = acc[primitive.math.min(h as u32, 3u32)] }
o[gid.x] = acc[last] + len(acc) + acc[len(acc) - 1u32]
"""
    assert _diags(body, registry, "buffer o: write u32[64] @0\n" + PRIVATE) == []


@pytest.mark.parametrize("loop,path", [
    ("loop k in 0u32 .. len(x) unroll { o[k] = 1u32 }", "body[0]"),
    ("let n = 4u32\nloop k in 0u32 .. n unroll { o[k] = 1u32 }", "body[1]"),
    ("loop k in 0u32 + 0u32 .. 4u32 unroll { o[k] = 1u32 }", "body[0]"),
])
def test_unroll_needs_literal_bounds_v031(loop, path, registry):
    (d,) = _diags(loop + "\n", registry)
    assert (d.code, d.location) == ("V031", path) and "literal" in d.fix


@pytest.mark.parametrize("loop,path", [
    (f"loop k in 0u32 .. {MAX_UNROLL_COPIES + 1}u32 unroll {{ o[k] = 1u32 }}", "body[0]"),
    ("loop k in 0u32 .. 16u32 unroll { loop j in 0u32 .. 17u32 unroll { o[k] = j } }", "body[0].body[0]"),
    ("loop k in -200i32 .. 100i32 unroll { o[0u32] = 1u32 }", "body[0]"),
    ("loop k in 0u64 .. 18446744073709551615u64 unroll { o[0u32] = 1u32 }", "body[0]"),
])
def test_unrolling_more_than_256_copies_is_v032(loop, path, registry):
    (d,) = _diags(loop + "\n", registry)
    assert (d.code, d.location) == ("V032", path) and d.fix


def test_unrolling_more_than_65536_statements_in_all_is_v032(registry):
    lets = "".join(f"let v{i} = k\n" for i in range(256))
    (d,) = _diags(f"loop k in 0u32 .. 256u32 unroll {{\n{lets}}}\n", registry)
    assert (d.code, d.location) == ("V032", "body") and "65,537" in d.message


def test_an_empty_or_reversed_unroll_loop_is_fine(registry):
    assert _diags("loop k in 4u32 .. 0u32 unroll { o[k] = 1u32 }\nloop j in 3i32 .. 3i32 unroll { return }\n",
                  registry) == []


def test_an_atomic_on_a_private_array_is_v033(registry):
    (d,) = _diags("let old = atomic primitive.atomic.add(acc[0u32], 1u32)\n", registry, PRIVATE)
    assert (d.code, d.location) == ("V033", "body[0].value") and "acc[k] = acc[k] + v" in d.fix


def test_the_errors_reach_the_user_as_one_vyre_error_with_a_fix():
    p = parse_program(HEAD + "buffer x: read u32[] @0\nbuffer acc: private u32[2]\nacc[x[0u32]] = 1u32\n}\n", "k.vyre")
    with pytest.raises(vyre_decl.VyreError) as e:
        REF.dispatch(p, [np.zeros(1, np.uint32)])
    assert e.value.codes == ["V030"] and "k.vyre:4:" in str(e.value) and "Fix:" in str(e.value)


# ----------------------------------------------------------------------------- reference semantics


def test_rows_computes_a_small_matrix_product_in_the_programs_order():
    x = np.random.default_rng(3).standard_normal(4 * 37 + 3).astype(np.float32)  # a partial last row
    m = np.random.default_rng(4).standard_normal(16).astype(np.float32)
    (out,) = REF.dispatch(parse_program(ROWS), [x, m])
    padded = np.concatenate([x, np.zeros(1, np.float32)]).reshape(-1, 4)
    acc = np.zeros_like(padded)
    for k in range(4):
        acc = acc + padded[:, k:k + 1] * m.reshape(4, 4)[k]
    assert out.tobytes() == acc.reshape(-1)[: len(x)].tobytes()


def test_each_invocation_has_its_own_zeroed_copy():
    p = parse_program("""program own workgroup(8, 1, 1) {
  buffer o: write u32[24] @0
  buffer acc: private u32[2]
  let before = acc[0u32] + acc[1u32]
  if gid.x % 3u32 == 0u32 { acc[0u32] = gid.x + 100u32 }
  acc[1u32] = acc[1u32] + gid.x
  o[gid.x] = before * 1000u32 + acc[0u32] + acc[1u32]
}""")
    (o,) = REF.dispatch(p, [])
    i = np.arange(24, dtype=np.uint32)
    assert o.tolist() == (np.where(i % 3 == 0, i + 100, 0) + i).tolist()


def test_out_of_bounds_constants_load_zero_and_store_nothing():
    p = parse_program("""program oob workgroup(4, 1, 1) {
  buffer o: write u32[8] @0
  buffer acc: private u32[2]
  acc[2u32] = 7u32
  acc[4294967295u32] = 7u32
  acc[1u32] = 5u32
  o[gid.x] = acc[0u32] + acc[1u32] + acc[2u32] + acc[3u32] + len(acc)
}""")
    (o,) = REF.dispatch(p, [])
    assert o.tolist() == [7] * 8


def test_narrow_private_arrays_narrow_on_store_and_widen_on_load():
    p = parse_program("""program narrow workgroup(4, 1, 1) {
  buffer x: read f32[] @0
  buffer o: write f32[len(x)] @1
  buffer n: write i32[len(x)] @2
  buffer h: private f16[1]
  buffer b: private u8[2]
  buffer s: private i16[1]
  buffer f: private bool[1]
  h[0u32] = x[gid.x]
  b[1u32] = 300u32
  s[0u32] = -40000i32
  f[0u32] = x[gid.x] > 0.0f32
  o[gid.x] = h[0u32]
  n[gid.x] = (b[1u32] as i32) + s[0u32] + select(f[0u32], 1000000i32, 0i32)
}""")
    x = np.array([1.0 / 3.0, -2.5, 70000.0, 1e-8], np.float32)
    o, n = REF.dispatch(p, [x])
    with np.errstate(over="ignore"):  # 70000 rounds to inf in f16
        want = x.astype(np.float16).astype(np.float32)
    assert o.tobytes() == want.tobytes()
    assert n.tolist() == [44 + 25536 + 1000000, 44 + 25536, 44 + 25536 + 1000000, 44 + 25536 + 1000000]


def test_unroll_changes_no_result_on_the_reference():
    src = """program same workgroup(16, 1, 1) {
  buffer x: read u32[] @0
  buffer o: write u32[len(x)] @1
  let acc = 0u32
  loop k in -3i32 .. 5i32 unroll {
    if gid.x % 4u32 == 1u32 && k == 2i32 { return }
    acc = acc * 31u32 + x[gid.x] + (k as u32)
  }
  o[gid.x] = acc
}"""
    x = np.arange(77, dtype=np.uint32) * 2654435761
    (a,), (b,) = REF.dispatch(parse_program(src), [x]), REF.dispatch(parse_program(src.replace(" unroll", "")), [x])
    assert a.tobytes() == b.tobytes() and a[1] == 0 and a[0] != 0


def test_a_program_with_private_arrays_runs_in_smaller_chunks(monkeypatch):
    from vyre_decl.reference import program as ref_program

    monkeypatch.setattr(ref_program, "CHUNK_PRIVATE_BYTES", 32 * 32)  # one workgroup of 32 per chunk
    x = np.random.default_rng(5).standard_normal(4 * 1000).astype(np.float32)
    m = np.random.default_rng(6).standard_normal(16).astype(np.float32)
    (small,) = REF.dispatch(parse_program(ROWS), [x, m])
    monkeypatch.undo()
    (whole,) = REF.dispatch(parse_program(ROWS), [x, m])
    assert small.tobytes() == whole.tobytes() and np.any(whole != 0)

