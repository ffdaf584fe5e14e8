"""The interval analysis (emit/ranges.py) and the bounds tests it lets the emitter leave out: every
interval holds for the values the reference computes, an index that can reach the array's length
keeps its test, and the simulated device still agrees with the reference bit for bit."""

from __future__ import annotations

import re

import numpy as np
import pytest

import vyre_decl
from vyre_decl.emit import emit
from vyre_decl.emit.ranges import IndexRanges
from vyre_decl.ir import parse_program
from vyre_decl.ir.nodes import Store
from vyre_decl.ir.walk import statements
from vyre_decl.registry import default_registry

from sim_ptx_helpers import assert_matches

REG = default_registry()
REF = vyre_decl.acquire("reference")
_PRED = re.compile(r"@%p\d+ (ld|st)\.shared")


def _body_tests(ptx: str) -> int:
    """The predicated shared accesses of the body (after the prologue, whose zero-fill stores the
    last words % 4 words of an array under a predicate: not a bounds test)."""
    return len(_PRED.findall(ptx[ptx.index("// body["):]))


def _ranges(program) -> IndexRanges:
    return IndexRanges(program, REG)


# --- soundness: random unsigned expressions, their intervals against the reference's values
_LEAVES = ["lid.x", "i", "l0", "l1", "0u32", "1u32", "3u32", "31u32", "32u32", "63u32", "64u32", "1000u32",
           "4294967295u32", "x[gid.x]"]
_BINARY = ["+", "-", "*", "/", "%", "&", "|", "^", "<<", ">>"]
_CALLS = ["primitive.math.min", "primitive.math.max"]


def _expr(rng: np.random.Generator, depth: int, leaves: list[str]) -> str:
    if depth == 0 or rng.random() < 0.25:
        return leaves[int(rng.integers(len(leaves)))]
    a, b = _expr(rng, depth - 1, leaves), _expr(rng, depth - 1, leaves)
    k = int(rng.integers(len(_BINARY) + len(_CALLS) + 1))
    if k < len(_BINARY):
        return f"({a} {_BINARY[k]} {b})"
    if k < len(_BINARY) + len(_CALLS):
        return f"{_CALLS[k - len(_BINARY)]}({a}, {b})"
    return f"select({a} < {b}, {a}, {b})"


K = 12  # expressions per program


def _random_program(seed: int):
    rng = np.random.default_rng(seed)
    outer = [x for x in _LEAVES if x not in ("i", "l0", "l1")]
    lets = [_expr(rng, 2, outer) for _ in range(2)]
    inner = [x for x in _LEAVES if x != "l1"]
    lines = [f"    let l0 = {lets[0]}", f"    let l1 = {_expr(rng, 2, inner)}"]
    lines += [f"    out[lid.x * {3 * K}u32 + (i - 2u32) * {K}u32 + {k}u32] = {_expr(rng, 3, _LEAVES)}" for k in range(K)]
    text = "program fuzz workgroup(64, 1, 1) {\n  buffer x: read u32[] @0\n  buffer out: write u32[len(x)] @1\n"
    text += "  if wgid.x == 0u32 {\n  loop i in 2u32 .. 5u32 {\n" + "\n".join(lines) + "\n  }\n  }\n}\n"
    return parse_program(text)


@pytest.mark.parametrize("seed", range(12))
def test_every_interval_holds_for_the_reference_values(seed):
    program = _random_program(seed)
    x = np.random.default_rng(seed).integers(0, 1 << 32, 64 * 3 * K, dtype=np.uint64).astype(np.uint32)
    out = REF.dispatch(program, [x])[0].reshape(64, 3, K)
    found = _ranges(program)
    stores = [n for n in statements(program.body) if isinstance(n, Store)]
    narrow = 0
    for k, st in enumerate(stores):
        iv = found.interval(st.value)
        assert iv is not None
        lo, hi = iv
        got = out[:, :, k].astype(np.int64)
        assert lo <= got.min() and got.max() <= hi, f"expression {k}: values {got.min()}..{got.max()} outside {iv}"
        narrow += hi < 0xFFFFFFFF
    assert narrow > 0  # the analysis proved something


# --- the emitter: which bounds tests stay
def _access_program(index: str, count: int, body: str = "") -> str:
    inner = body or f"s[{index}] = x[gid.x]\n  barrier\n  out[gid.x] = s[{index}]"
    return f"""program acc workgroup(64, 1, 1) {{
  buffer x: read u32[] @0
  buffer out: write u32[len(x)] @1
  buffer s: workgroup u32[{count}]
  {inner}
}}
"""


CASES = [  # (index, array count, whether the test can go)
    ("lid.x", 64, True), ("lid.x", 63, False), ("lid.x + 1u32", 64, False), ("lid.x + 1u32", 65, True),
    ("(lid.x + 1u32) % 64u32", 64, True), ("lid.x % 65u32", 64, True), ("(lid.x + 1u32) % 65u32", 64, False), ("lid.x & 31u32", 32, True),
    ("lid.x | 1u32", 64, True), ("lid.x ^ 64u32", 127, False), ("lid.x ^ 64u32", 128, True),
    ("lid.x >> 1u32", 32, True), ("lid.x << 1u32", 126, False), ("lid.x << 1u32", 127, True),
    ("lid.x * 2u32", 126, False), ("lid.x - 1u32", 64, False), ("63u32 - lid.x", 64, True),
    ("64u32 - lid.x", 64, False), ("lid.x / 2u32", 32, True), ("lid.x / 2u32", 31, False),
    ("primitive.math.min(lid.x, 10u32)", 11, True), ("primitive.math.min(lid.x, 10u32)", 10, False),
    ("primitive.math.max(lid.x, 10u32)", 64, True), ("gid.x % 64u32", 64, True), ("gid.x", 64, False),
    ("wgid.x", 64, False), ("x[gid.x] % 64u32", 64, True), ("x[gid.x]", 64, False),
    ("select(lid.x < 3u32, lid.x % 4u32, 5u32)", 6, True), ("select(lid.x < 3u32, lid.x % 4u32, 6u32)", 6, False),
    ("select(lid.x < 3u32, lid.x, 5u32)", 6, False),  # no refinement by the condition (sound, not precise)
    ("(lid.x + 4294967295u32) % 64u32", 64, True), ("lid.x + 4294967295u32", 64, False),
    ("(lid.x + 4294967295u32) / 64u32", 1, False),
]


@pytest.mark.parametrize("index,count,drops", CASES, ids=[f"{i}<{c}" for i, c, _ in CASES])
def test_a_bounds_test_goes_only_where_it_is_provably_true(index, count, drops):
    ptx = emit(parse_program(_access_program(index, count)), REG).text
    assert _body_tests(ptx) == (0 if drops else 2), ptx


@pytest.mark.parametrize("body,count,drops", [
    ("loop i in 0u32 .. 64u32 { s[i] = i }", 64, True),
    ("loop i in 0u32 .. 65u32 { s[i] = i }", 64, False),
    ("loop i in 1u32 .. 65u32 { s[i - 1u32] = i }", 64, True),
    ("loop i in 0u32 .. x[0u32] { s[i] = i }", 64, False),  # the end is not known
    ("loop i in 0u32 .. 8u32 unroll { s[lid.x * 8u32 + i] = i }", 512, True),
    ("loop i in 0u32 .. 8u32 unroll { s[lid.x * 8u32 + i] = i }", 511, False),
    ("let j = lid.x\n  s[j] = 1u32", 64, True),
    ("let j = lid.x\n  j = j + 1u32\n  s[j] = 1u32", 64, False),  # an assigned variable may be anything
    ("let j = lid.x\n  if j < 100u32 { let k = j + 1u32\n s[k] = 1u32 }\n  s[j] = 2u32", 64, False),
    ("let j = 0u32\n  loop i in 0u32 .. 64u32 { s[j] = i\n j = j + 1u32 }", 64, False),  # assigned in a loop
])
def test_loop_counters_lets_and_assignments(body, count, drops):
    ptx = emit(parse_program(_access_program("", count, body + "\n  out[gid.x] = 0u32")), REG).text
    assert (_body_tests(ptx) == 0) == drops, ptx


@pytest.mark.parametrize("index,drops", [("lid.x % 16u32", True), ("lid.x % 17u32", False), ("lid.x / 4u32", True),
                                         ("lid.x / 3u32", False)])
def test_vector_copies_of_workgroup_memory(index, drops):
    text = f"""program vec workgroup(64, 1, 1) {{
  buffer x: read u32[] @0
  buffer out: write u32[len(x)] @1
  buffer s: workgroup u32[64]
  buffer r: private u32[4]
  s[lid.x] = x[gid.x]
  barrier
  r[0u32 ..+ 4] = s[{index} ..* 4]
  out[gid.x] = r[0u32] + r[1u32] * 3u32 + r[2u32] * 5u32 + r[3u32] * 7u32
}}
"""
    program = parse_program(text)
    ptx = emit(program, REG).text
    assert bool(re.search(r"@%p\d+ ld\.shared\.v4", ptx)) != drops
    x = (np.arange(300, dtype=np.uint64) * 2654435761 % (1 << 32)).astype(np.uint32)
    assert_matches(program, [x], REF.dispatch(program, [x]))


SIM_CASES = ["lid.x + 1u32", "(lid.x + 1u32) % 64u32", "lid.x ^ 64u32", "63u32 - lid.x", "lid.x - 1u32",
             "x[gid.x] % 64u32", "x[gid.x] % 70u32", "primitive.math.min(lid.x, 10u32)"]


@pytest.mark.parametrize("index", SIM_CASES)
def test_the_simulated_device_agrees_with_the_reference(index):
    """Indices that reach past the array (read as 0, stores dropped) next to proven ones."""
    body = f"s[lid.x] = x[gid.x] * 7u32 + 1u32\n  barrier\n  out[gid.x] = s[{index}]"
    program = parse_program(_access_program(index, 64, body))
    for n in (1, 64, 200):
        x = (np.arange(n, dtype=np.uint64) * 2654435761 % (1 << 32)).astype(np.uint32)
        assert_matches(program, [x], REF.dispatch(program, [x]))


def test_the_matmul_kernel_has_no_workgroup_bounds_tests():
    from vyre_decl.ir.types import DataType
    from vyre_decl.routines.kernels import kernel_program
    from vyre_decl.routines.loader import load_routines

    routines, _ = load_routines(REG)
    program = kernel_program(routines["linalg.matmul"].kernels["matmul"], {"T": DataType.F32}, {}, REG, "test")
    ptx = emit(program, REG).text
    assert ptx.count("ld.shared.v4") == 32 and not _body_tests(ptx)


@pytest.mark.parametrize("index,count,drops", [("lid.x", 64, True), ("lid.x", 63, False), ("lid.x % 32u32", 32, True),
                                               ("x[gid.x] % 70u32", 64, False)])
def test_a_workgroup_atomic_loses_a_proven_test(index, count, drops):
    """Out of bounds an atomic has no effect and its old value reads 0; in bounds by proof it needs
    no test. The simulated device agrees with the reference either way."""
    body = (f"if lid.x < {count}u32 {{ s[lid.x] = 0u32 }}\n  barrier\n"
            f"  let o = atomic.workgroup primitive.atomic.add(s[{index}], x[gid.x] | 1u32)\n"
            f"  barrier\n  out[gid.x] = s[lid.x % {count}u32] + o")
    program = parse_program(_access_program(index, count, body))
    ptx = emit(program, REG).text
    assert ("atomic_oob" not in ptx) == drops, ptx
    for n in (1, 64, 200):
        x = (np.arange(n, dtype=np.uint64) * 2654435761 % (1 << 32)).astype(np.uint32)
        assert_matches(program, [x], REF.dispatch(program, [x]))
