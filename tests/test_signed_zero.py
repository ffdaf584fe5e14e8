"""The sign of a zero is checked whatever an op's ULP budget (issue 24): in comparisons within a
budget, in ``ops check`` (R030), in the conformance triage of known answers (kind ``kat``) and in
the accuracy measurement against mpmath (where a true value that is exactly zero has no sign)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from vyre_decl.backends.reference import ReferenceBackend
from vyre_decl.conform.isolation import InProcessRunner
from vyre_decl.conform.runner import Conformance
from vyre_decl.conform.values import mismatches
from vyre_decl.ir.record import replace as record_replace
from vyre_decl.ir.types import DataType
from vyre_decl.ops.check import check_semantics
from vyre_decl.reference.interpreter import op_function
from vyre_decl.registry import default_registry

REG = default_registry()
NEG_ZERO_F32 = 0x80000000


def test_a_zero_of_the_wrong_sign_is_a_mismatch_within_any_budget():
    from vyre_decl.conform.values import opposite_zero

    want = np.array([-0.0, 0.0, -5e-324, 0.0, -0.0, 1.0, np.nan], np.float64)
    got = np.array([0.0, -0.0, 0.0, 5e-324, -5e-324, np.nextafter(1.0, 2.0), -np.nan], np.float64)
    assert mismatches(DataType.F64, want, got, ulp=3).tolist() == [0, 1, 2]
    assert opposite_zero(want, got).tolist() == [True, True, True, False, False, False, False]
    assert mismatches(DataType.F64, want, want.copy(), ulp=3).size == 0


def _sin_with_positive_zero_answer():
    """primitive.float.sin with its known answer sin(-0.0) = -0.0 edited to +0.0."""
    op = REG.get("primitive.float.sin")
    kats, edited = [], 0
    for kat in op.kats:
        cases = tuple(c[:-1] + (0,) if c == (NEG_ZERO_F32, NEG_ZERO_F32) else c for c in kat.cases)
        edited += cases != kat.cases
        kats.append(record_replace(kat, cases=cases))
    assert edited == 1 and op.accuracy(DataType.F32) >= 1  # the budget would have hidden it
    return replace(op, kats=tuple(kats))


def test_ops_check_reports_a_known_answer_with_the_wrong_sign_of_zero():
    assert not check_semantics(REG, [REG.get("primitive.float.sin")])
    (diag,) = check_semantics(REG, [_sin_with_positive_zero_answer()])
    assert diag.code == "R030" and diag.severity == "error" and "sign of zero" in diag.message
    assert "primitive.float.sin(-0.0) = 0.0" in diag.message and "Fix:" in str(diag)


def test_conformance_reports_a_known_answer_with_the_wrong_sign_of_zero():
    op = _sin_with_positive_zero_answer()
    conf = Conformance(InProcessRunner(ReferenceBackend()), REG, cases=20)
    res = conf.run_op("op:primitive.float.sin[f32]", op, (DataType.F32,))
    kats = [f for f in res.failures if f.kind == "kat"]
    assert res.verdict == "fail" and len(kats) == 1 and len(res.failures) == 1
    assert "sign of zero" in kats[0].message and kats[0].details["known_answer"]["hex"] == "0x00000000"
    assert kats[0].details["reference"]["hex"] == "0x80000000"


def test_box_muller_states_the_zeros_its_steps_give():
    op = REG.get("random.box_muller")
    got = op_function(REG, op, ())([np.array([1.0, 0.5]), np.array([0.0, 0.25])])
    assert np.signbit(got).tolist() == [True, True] and (got == 0).all()
    answers = {c[:2]: c[2] for kat in op.kats for c in kat.cases}
    one, zero, half, quarter = (int(np.float64(v).view(np.uint64)) for v in (1.0, 0.0, 0.5, 0.25))
    assert answers[(one, zero)] == answers[(half, quarter)] == 1 << 63  # -0.0


def test_the_accuracy_error_counts_a_wrong_sign_of_zero():
    pytest.importorskip("mpmath")
    from vyre_decl.conform.accuracy import function_for, measure, ulp_error

    t = DataType.F64
    got, want = np.array([0.0, -0.0, 0.0]), np.array([-0.0, -0.0, 0.0])
    assert ulp_error(t, got, want).tolist() == [np.inf, 0.0, 0.0]
    assert ulp_error(t, got, want, np.array([True, False, False])).tolist() == [0.0, 0.0, 0.0]
    sin = function_for("primitive.float.sin")
    flipped = measure(lambda cols: np.where(cols[0] == 0, -cols[0], np.sin(cols[0])), sin, t, 60,
                      np.random.default_rng(1))
    assert flipped["max_ulp"] == "wrong sign of zero" and float(flipped["got"]) == 0.0


def test_an_exact_zero_true_value_takes_either_sign():
    pytest.importorskip("mpmath")
    from vyre_decl.conform.accuracy import exact_zero, function_for, measure

    fn, op = function_for("random.box_muller"), REG.get("random.box_muller")
    assert exact_zero(fn, (0.5, 0.25)) and exact_zero(fn, (1.0, 0.5)) and not exact_zero(fn, (0.5, 0.3))
    extra = [np.array([1.0, 0.5]), np.array([0.0, 0.25])]
    r = measure(op_function(REG, op, ()), fn, DataType.F64, 40, np.random.default_rng(2), extra)
    assert isinstance(r["max_ulp"], int) and r["max_ulp"] <= op.accuracy(DataType.F64)
