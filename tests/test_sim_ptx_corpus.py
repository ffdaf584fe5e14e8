"""Differential test of the PTX interpreter on the corpus: every corpus program is emitted for
sm_90 and sm_75, run on the simulator with the CUDA backend's calling convention (the vectorised
entry too, for map-shaped programs) and compared bit for bit (all NaNs equal) with the reference
backend; the sanitizer must stay silent (they are correct programs)."""

from __future__ import annotations

import numpy as np
import pytest

import vyre_decl
from sim_ptx_helpers import assert_matches
from vyre_decl.backends.config import DispatchConfig
from vyre_decl.conform.corpus import load_corpus, make_inputs
from vyre_decl.emit import emit, vector_entry
from vyre_decl.sim import ptx_float, ptx

CORPUS = {c.name: c for c in load_corpus()}


@pytest.fixture(scope="module")
def reference():
    return vyre_decl.acquire("reference")


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_corpus_program_matches_the_reference(name, reference):
    entry = CORPUS[name]
    modules = {t: emit(entry.program, None, t) for t in ("sm_90", "sm_75")}
    vector = vector_entry(entry.program) is not None and entry.grid is None
    for size, targets in ((65, ("sm_90", "sm_75")), (1000, ("sm_90",))):
        inputs = make_inputs(entry.program, size, np.random.default_rng(size))
        expected = reference.dispatch(entry.program, inputs, DispatchConfig(grid=entry.grid))
        for target in targets:
            assert_matches(entry.program, inputs, expected, entry.grid, target=target, ptx=modules[target])
        if vector:
            assert_matches(entry.program, inputs, expected, target="sm_90", vector=True, ptx=modules["sm_90"])


def test_the_comparison_sees_a_wrong_result(reference, monkeypatch):
    """The differential check can fail: one ulp off in f32 multiplication is caught."""
    entry = CORPUS["02_saxpy_f32"]
    inputs = make_inputs(entry.program, 64, np.random.default_rng(1))
    expected = reference.dispatch(entry.program, inputs, DispatchConfig())
    mul, err = ptx_float._ARITH["mul"]
    monkeypatch.setitem(ptx_float._ARITH, "mul", (lambda x, y: np.nextafter(mul(x, y), np.inf).astype(x.dtype), err))
    ptx._cache.clear()  # decode again with the broken multiply
    try:
        with pytest.raises(AssertionError, match="simulator"):
            assert_matches(entry.program, inputs, expected)
    finally:
        ptx._cache.clear()
