"""``break`` (issue 28): the text form, builder and canonical form, validation (V039 outside a loop,
V040 in an unroll loop, V014/V027 in a loop a non-uniform break makes divergent), the reference's
semantics against a Python model (partial breaks, nested loops, loops with per-invocation bounds,
returns), the emitted PTX (a branch to the loop's end) assembled by ptxas, the simulated device
against the reference bit for bit, and the CUDA backend (marked gpu)."""

from __future__ import annotations

import numpy as np
import pytest

import vyre_decl
from vyre_decl.backends.cuda import cuda_available
from vyre_decl.emit import emit
from vyre_decl.emit.ptxas import assemble, find_ptxas
from vyre_decl.ir import Break, DataType, Loop, dumps, from_json, parse_program, print_program, to_json, validate
from vyre_decl.ir.builder import ProgramBuilder

from sim_ptx_helpers import assert_matches

REF = vyre_decl.acquire("reference")
REG = vyre_decl.default_registry()

# every invocation leaves the outer loop at its own iteration (x[i] % 23: some never do, some at
# once); the inner loop breaks at the first j with j * j > k (a break per outer iteration); the
# third loop has per-invocation bounds and breaks at (k + i) % 5 == 3; invocations with i % 11 == 4
# return inside a loop when k reaches 6
NESTED = """program nested workgroup(64, 1, 1) {
  buffer x: read u32[] @0
  buffer out: write u32[len(x)] @1
  buffer cnt: write u32[len(x)] @2
  buffer last: write u32[len(x)] @3
  let i = gid.x
  if i >= len(x) {
    return
  }
  let stop = x[i] % 23u32
  let s = 0u32
  let c = 0u32
  loop k in 0u32 .. 20u32 {
    if k == stop {
      break
    }
    s = s + k
    loop j in 0u32 .. k {
      if j * j > k {
        break
      }
      c = c + 1u32
    }
  }
  out[i] = s
  let at = 99u32
  loop k in 0u32 .. x[i] % 13u32 {
    if (k + i) % 5u32 == 3u32 {
      at = k
      break
    }
    if k == 6u32 && i % 11u32 == 4u32 {
      return
    }
    c = c + 100u32
  }
  cnt[i] = c
  last[i] = at
}"""


def _nested_model(x: np.ndarray) -> list[np.ndarray]:
    out, cnt, last = (np.zeros(len(x), np.uint32) for _ in range(3))
    for i, v in enumerate(x.tolist()):
        s = c = 0
        for k in range(20):
            if k == v % 23:
                break
            s += k
            for j in range(k):
                if j * j > k:
                    break
                c += 1
        out[i] = s
        at, returned = 99, False
        for k in range(v % 13):
            if (k + i) % 5 == 3:
                at = k
                break
            if k == 6 and i % 11 == 4:
                returned = True
                break
            c += 100
        if not returned:
            cnt[i], last[i] = c, at
    return [out, cnt, last]


def _inputs(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 1000, n).astype(np.uint32)


# ----------------------------------------------------------------------------- text, builder, JSON


def test_break_prints_parses_and_round_trips_through_json():
    p = parse_program(NESTED)
    assert parse_program(print_program(p)) == p and from_json(to_json(p)) == p
    assert '{"k":"break"}' in dumps(p)
    loop = next(n for n in p.body if isinstance(n, Loop))
    assert loop.body[0].then == (Break(),)


def test_the_builder_writes_a_break():
    b = ProgramBuilder("b", (32, 1, 1))
    out = b.output("out", DataType.U32, 32)
    acc = b.let("acc", b.lit(0, DataType.U32))
    with b.loop("k", 0, b.lit(10, DataType.U32)) as k:
        with b.if_(k == b.gid.x):
            b.break_()
        b.assign(acc, acc + k)
    out[b.gid.x] = acc
    p = b.build()
    assert "break" in print_program(p) and parse_program(print_program(p)) == p
    got = REF.dispatch(p, [])[0]
    assert got.tolist() == [sum(range(min(i, 10))) for i in range(32)]


# ----------------------------------------------------------------------------- validation


def _codes(body: str, decls: str = "") -> list[str]:
    p = parse_program(f"program v workgroup(64, 1, 1) {{\n  buffer o: write u32[64] @0\n{decls}  {body}\n}}")
    return [d.code for d in validate(p, REG)]


@pytest.mark.parametrize("body, code", [
    ("break", "V039"),
    ("if lid.x == 0u32 { break }", "V039"),
    ("{ break }", "V039"),
    ("loop k in 0u32 .. 4u32 unroll { if k == lid.x { break } }", "V040"),
    ("loop k in 0u32 .. 4u32 { loop j in 0u32 .. 2u32 unroll { break } }", "V040"),
    # a break that depends on the invocation makes the rest of the loop, and its next iterations, divergent
    ("loop k in 0u32 .. 4u32 { if k == lid.x { break }\n barrier }", "V014"),
    ("loop k in 0u32 .. 4u32 { barrier\n if k == lid.x { break } }", "V014"),
    ("loop k in 0u32 .. 4u32 { if k == lid.x { break }\n o[k] = subgroup.reduce_add(k) }", "V027"),
    ("loop k in 0u32 .. 4u32 { o[k] = subgroup.reduce_add(k)\n if k == lid.x { break } }", "V027"),
    # ... and what the loop assigns differs between invocations after it
    ("let a = 0u32\n loop k in 0u32 .. 4u32 { a = k\n if k == lid.x { break } }\n if a == 2u32 { barrier }", "V014"),
])
def test_refused_breaks(body, code):
    assert code in _codes(body), body


@pytest.mark.parametrize("body", [
    "loop k in 0u32 .. 4u32 { if k == 2u32 { break }\n barrier\n o[k] = subgroup.reduce_add(k) }",
    "loop k in 0u32 .. len(o) { if k == wgid.x { break }\n barrier }",
    "loop k in 0u32 .. 4u32 unroll { loop j in 0u32 .. 9u32 { if j == lid.x { break } } }",
    "loop k in 0u32 .. 4u32 { if k == lid.x { break } }\n barrier\n o[lid.x] = subgroup.reduce_add(lid.x)",
    "loop k in 0u32 .. 4u32 { loop j in 0u32 .. 4u32 { if j == lid.x { break } }\n barrier }",
])
def test_accepted_breaks(body):
    assert _codes(body) == [], body


def test_v039_names_the_statement_and_a_fix():
    p = parse_program("program v workgroup(1, 1, 1) {\n  buffer o: write u32[1] @0\n  if true { break }\n}")
    (d,) = validate(p, REG)
    assert d.code == "V039" and d.location == "body[0].then[0]" and "loop" in d.fix


# ----------------------------------------------------------------------------- reference semantics


@pytest.mark.parametrize("n", [1, 63, 64, 200, 1000])
def test_the_reference_matches_the_model(n):
    x = _inputs(n, n)
    got = REF.dispatch(parse_program(NESTED), [x])
    want = _nested_model(x)
    for g, w in zip(got, want):
        assert g.tolist() == w.tolist()


def test_a_break_with_uniform_bounds_leaves_the_other_invocations_looping():
    p = parse_program("""program p workgroup(8, 1, 1) {
  buffer o: write u32[8] @0
  let n = 0u32
  loop k in 0u32 .. 100u32 {
    n = n + 1u32
    if k == lid.x * 3u32 { break }
  }
  o[lid.x] = n
}""")
    assert REF.dispatch(p, [])[0].tolist() == [3 * t + 1 for t in range(8)]


# ----------------------------------------------------------------------------- PTX, simulator, GPU


def test_a_break_is_a_branch_to_the_end_of_its_loop():
    text = emit(parse_program(NESTED)).text
    lines = [ln.strip() for ln in text.splitlines()]
    at = [k for k, ln in enumerate(lines) if ln.startswith("// ") and ln.endswith(": break")]
    assert at and len(at) % 3 == 0  # each entry (scalar, vectorised) has the three
    for k in at:
        target = lines[k + 1]
        assert target.startswith("bra ") and "endloop" in target, target
        assert f"{target[4:-1]}:" in lines


@pytest.mark.skipif(find_ptxas() is None, reason="ptxas not found (pip install '.[test]' ships it)")
@pytest.mark.parametrize("target", ["sm_75", "sm_90"])
def test_ptxas_assembles_breaks(target):
    result = assemble(emit(parse_program(NESTED), target=target).text, target, check=False)
    assert result.ok, result.log[:2000]


@pytest.mark.parametrize("target", ["sm_90", "sm_75"])
def test_the_simulator_matches_the_reference_bit_for_bit(target):
    p = parse_program(NESTED)
    assert emit(p).vector_entry is not None  # a map: the four-element entry copies each loop, breaks included
    for n in (1, 64, 130, 1003):
        x = _inputs(n, 7 + n)
        want = REF.dispatch(p, [x])
        assert_matches(p, [x], want, target=target)
        assert_matches(p, [x], want, target=target, vector=True)


@pytest.mark.gpu
@pytest.mark.skipif(not cuda_available(), reason="no CUDA GPU: libcuda.so.1 cannot be loaded or reports no device")
def test_the_cuda_backend_matches_the_reference_bit_for_bit():
    cuda = vyre_decl.acquire("cuda")
    p = parse_program(NESTED)
    for n in (1, 64, 1000, 5000):
        x = _inputs(n, 3 * n)
        want, got = REF.dispatch(p, [x]), cuda.dispatch(p, [x])
        assert [g.tobytes() for g in got] == [w.tobytes() for w in want], n
