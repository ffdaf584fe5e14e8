"""Every PTX template of the standard op library runs on the PTX interpreter: for each op, type
binding with a template and attribute assignment, the one-op kernel (what conformance and ``ops
check`` run: ``vyre_decl.ops.simcheck.template_units``) on the op's conformance cases (witnesses,
sweep and random bit patterns, at most 4,096 rows), compared bit for bit (all NaNs equal) with the
reference backend. Ops without a template are inlined compositions of templated ones, which the
fuzz and corpus tests run."""

from __future__ import annotations

import numpy as np
import pytest

import vyre_decl
from sim_ptx_helpers import assert_matches
from vyre_decl.backends.config import DispatchConfig
from vyre_decl.conform.cases import op_cases
from vyre_decl.ops.simcheck import template_units
from vyre_decl.registry import default_registry

REGISTRY = default_registry()
DIALECTS = sorted({op.id.rsplit(".", 1)[0] for op in REGISTRY if op.templates})


@pytest.fixture(scope="module")
def reference():
    return vyre_decl.acquire("reference")


@pytest.mark.parametrize("dialect", DIALECTS)
def test_every_template_runs_like_the_reference(dialect, reference):
    units = template_units(REGISTRY, [op for op in REGISTRY if op.id.rsplit(".", 1)[0] == dialect])
    for u in units:  # the one-op kernels ops check runs, on conformance's cases instead of its witnesses
        cols = [c[:4096] for c in op_cases(u.op, u.binding, np.random.default_rng(len(u.op.id)), 64)]
        expected = reference.dispatch(u.program, cols, DispatchConfig())
        assert_matches(u.program, cols, expected)
    assert units
