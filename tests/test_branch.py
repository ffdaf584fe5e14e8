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
