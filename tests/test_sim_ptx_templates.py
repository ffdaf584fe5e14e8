"""Every PTX template of the standard op library runs on the PTX interpreter: for each op and
type binding with a template, the one-op kernel (what conformance runs) on the op's conformance
cases (witnesses, sweep and random bit patterns, at most 4,096 rows), compared bit for bit (all
NaNs equal) with the reference backend. Ops without a template are inlined compositions of
templated ones, which the fuzz and corpus tests run."""

from __future__ import annotations

import numpy as np
import pytest

import vyre_decl
from sim_ptx_helpers import assert_matches
from vyre_decl.backends.config import DispatchConfig
from vyre_decl.conform.cases import attr_sets, op_cases
from vyre_decl.conform.oneop import one_op_program
from vyre_decl.registry import default_registry

REGISTRY = default_registry()
DIALECTS = sorted({op.id.rsplit(".", 1)[0] for op in REGISTRY if op.templates})


@pytest.fixture(scope="module")
def reference():
    return vyre_decl.acquire("reference")


@pytest.mark.parametrize("dialect", DIALECTS)
def test_every_template_runs_like_the_reference(dialect, reference):
    ran = 0
    for op in REGISTRY:
        if op.id.rsplit(".", 1)[0] != dialect:
            continue
        for binding in op.templates:
            program = one_op_program(op, binding, (attr_sets(op, binding) or [()])[0])
            cols = [c[:4096] for c in op_cases(op, binding, np.random.default_rng(len(op.id)), 64)]
            expected = reference.dispatch(program, cols, DispatchConfig())
            assert_matches(program, cols, expected)
            ran += 1
    assert ran > 0
