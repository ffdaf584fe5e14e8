"""Differential test of the PTX interpreter on 100 seeded fuzz programs (vyre_decl.conform.fuzz:
every op and storage type, every statement kind, loads at any index, stores in and far out of
bounds, workgroup memory behind barriers, order-free atomics): each is emitted, run on the
simulator (scalar and, when map-shaped, vectorised entry) and compared bit for bit (all NaNs
equal) with the reference backend; the sanitizer must stay silent."""

from __future__ import annotations

import pytest

import vyre_decl
from sim_ptx_helpers import assert_matches
from vyre_decl.backends.config import DispatchConfig
from vyre_decl.conform.fuzz import FuzzOps, random_inputs, random_program
from vyre_decl.emit import emit
from vyre_decl.registry import default_registry

SEEDS = range(100)


@pytest.fixture(scope="module")
def reference():
    return vyre_decl.acquire("reference")


@pytest.fixture(scope="module")
def fuzz_ops():
    return FuzzOps(default_registry())


@pytest.mark.parametrize("first", range(SEEDS.start, SEEDS.stop, 10))
def test_fuzz_programs_match_the_reference(first, reference, fuzz_ops):
    for seed in range(first, first + 10):
        program = random_program(seed, fuzz_ops)
        inputs = random_inputs(program, seed)
        expected = reference.dispatch(program, inputs, DispatchConfig(timeout=10.0))
        module = emit(program)
        assert_matches(program, inputs, expected, ptx=module)
        if module.vector_entry is not None:
            assert_matches(program, inputs, expected, vector=True, ptx=module)
