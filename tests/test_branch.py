"""branch(c, a, b): a select whose chosen arm alone runs on a GPU; same value as select."""

from __future__ import annotations

import numpy as np
import pytest

import vyre_decl
from vyre_decl.backends.cuda import cuda_available
from vyre_decl.emit import emit
from vyre_decl.ir import parse_program
from vyre_decl.ir.canonical import from_json, to_json
from vyre_decl.ir.printer import print_program

SOURCE = """program lazy workgroup(64, 1, 1) {
  buffer x: read f64[] @0
  buffer o: write f64[len(x)] @1
  let i = gid.x
  let big = primitive.math.abs(x[i]) > 1e6f64
  o[i] = branch(big, primitive.float.sin(x[i]), primitive.float.exp(x[i]) + select(big, 1.0f64, 2.0f64))
}"""

BACKENDS = ["reference", pytest.param("cuda", marks=[pytest.mark.gpu, pytest.mark.skipif(
    not cuda_available(), reason="no CUDA GPU: libcuda.so.1 cannot be loaded or reports no device")])]


def test_branch_round_trips_and_differs_from_select_in_its_hash():
    program = parse_program(SOURCE)
    assert "branch(big, " in print_program(program)
    assert from_json(to_json(program)) == program
    eager = parse_program(SOURCE.replace("branch(big", "select(big"))
    assert eager.content_hash() != program.content_hash()


def test_only_the_chosen_arm_runs_on_the_gpu():
    ptx = emit(parse_program(SOURCE)).text
    body = ptx[ptx.index("branch_else"):]
    assert "bra" in ptx and "branch_end" in body
    eager = emit(parse_program(SOURCE.replace("branch(big", "select(big"))).text
    assert "branch_else" not in eager


@pytest.mark.parametrize("backend", BACKENDS)
def test_branch_gives_the_select_value(backend):
    x = np.array([0.5, -3.0, 2e6, -1e300, 7.0, np.nan, np.inf, 1e7], np.float64)
    with np.errstate(all="ignore"):
        want = np.where(np.abs(x) > 1e6, np.sin(x), np.exp(x) + 2.0)
    (got,) = vyre_decl.acquire(backend).dispatch(parse_program(SOURCE), [x])
    lazy_ref = vyre_decl.acquire("reference").dispatch(parse_program(SOURCE.replace("branch(big", "select(big")), [x])[0]
    assert np.array_equal(got, lazy_ref, equal_nan=True)
    assert np.allclose(got, want, rtol=1e-15, equal_nan=True)


# The outside review's program: on 6baef07 the reference ran the arm not taken (rw[0] = 64), a GPU did not (0).
EFFECT_IN_ARM = """program f30 workgroup(64, 1, 1) {
  buffer rw: read_write u32[] @0
  buffer o: write u32[len(rw)] @1
  o[gid.x] = branch(false, atomic primitive.atomic.add(rw[0u32], 1u32), 7u32)
}"""


@pytest.mark.parametrize("arm", ["if_true", "if_false"])
def test_an_atomic_in_an_arm_of_a_branch_is_refused(arm):
    source = EFFECT_IN_ARM if arm == "if_true" else EFFECT_IN_ARM.replace(
        "branch(false, atomic primitive.atomic.add(rw[0u32], 1u32), 7u32)",
        "branch(true, 7u32, 1u32 + atomic primitive.atomic.add(rw[0u32], 1u32))")
    with pytest.raises(vyre_decl.VyreError) as err:
        vyre_decl.acquire("reference").dispatch(parse_program(source), [np.zeros(64, np.uint32)])
    (d,) = err.value.diagnostics
    assert d.code == "V026" and d.location.endswith(arm) and "select(" in d.fix
    eager = source.replace("branch(", "select(")  # select runs both arms everywhere: legal
    vyre_decl.acquire("reference").dispatch(parse_program(eager), [np.zeros(64, np.uint32)])


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_atomic_in_the_condition_of_a_branch_runs_once_on_every_backend(backend):
    source = """program once workgroup(64, 1, 1) {
  buffer rw: read_write u32[] @0
  buffer o: write u32[len(rw)] @1
  let i = gid.x
  if i < len(o) {
    o[i] = branch((atomic primitive.atomic.add(rw[0u32], 1u32)) < 1000000u32, i * 3u32, 5u32)
  }
}"""
    rw, o = vyre_decl.acquire(backend).dispatch(parse_program(source), [np.zeros(200, np.uint32)])
    assert rw[0] == 200 and not rw[1:].any()
    assert np.array_equal(o, np.arange(200, dtype=np.uint32) * 3)
