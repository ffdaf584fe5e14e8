"""The program generator of differential fuzzing (issue 13, item 4): 1,000 generated programs are
valid, survive print and parse, run on the reference backend, and their kernels pass ptxas; the
``--fuzz`` command runs them against a backend and counts mismatches."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from vyre_decl.conform.cli import main
from vyre_decl.conform.fuzz import FuzzOps, check_program, random_program
from vyre_decl.emit import assemble, emit, find_ptxas
from vyre_decl.ir.nodes import Atomic, If, Load, Loop, Op, Select, Store
from vyre_decl.ir.walk import body_exprs, statements
from vyre_decl.registry import default_registry

REG = default_registry()
OPS = FuzzOps(REG)
PROGRAMS = [random_program(seed, OPS) for seed in range(1000)]


def test_a_thousand_generated_programs_are_valid_round_trip_and_run_on_the_reference():
    for seed, program in enumerate(PROGRAMS):
        outputs = check_program(program, REG, seed)
        assert len(outputs) == 1 and outputs[0].size >= 1


def test_the_generator_covers_the_language_and_the_library():
    nodes = {type(n) for p in PROGRAMS for n in statements(p.body)}
    exprs = [e for p in PROGRAMS for e in body_exprs(p.body)]
    assert {If, Loop, Store} <= nodes and {Select, Load, Op} <= {type(e) for e in exprs}
    assert not any(isinstance(e, Atomic) for e in exprs)  # not generated yet: order-dependent results
    used = {e.op for e in exprs if isinstance(e, Op)}
    assert len(used) >= 100, len(used)  # of the ops whose types the generator draws
    assert random_program(5, OPS) == random_program(5, OPS)  # seeded: the same program every time


def test_generated_kernels_assemble():
    ptxas = find_ptxas()
    if ptxas is None:
        pytest.fail("ptxas not found. Fix: pip install -e '.[test]' (nvidia-cuda-nvcc ships ptxas)")

    def module(programs):
        texts = [emit(p, REG, "sm_90").text for p in programs]
        head = texts[0].split(".visible .entry")[0]
        return head + "".join(".visible .entry" + t.split(".visible .entry", 1)[1] for t in texts)

    batches = [PROGRAMS[k:k + 25] for k in range(0, 200, 25)]
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda b: assemble(module(b), "sm_90", ptxas, check=False), batches))
    assert all(r.ok for r in results), [r.log[:500] for r in results if not r.ok]


def test_the_fuzz_command_counts_mismatches(tmp_path, capsys):
    assert main(["--backend", "reference", "--fuzz", "40", "--out", str(tmp_path / "c.json"), "--quiet"]) == 0
    assert "40 programs, 0 mismatches" in capsys.readouterr().out
    assert main(["--fuzz", "-1", "--backend", "reference"]) == 2
