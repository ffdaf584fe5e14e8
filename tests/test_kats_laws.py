"""Every known-answer test and every declared law of the standard ops hold on the reference —
at the op level and, for KATs, through a one-op program dispatched on the reference backend."""

from __future__ import annotations

import numpy as np
import pytest

from vyre_decl.conform.laws import check_laws
from vyre_decl.conform.values import from_bits, mismatches
from vyre_decl.conform.witnesses import random_bits, witnesses
from vyre_decl.ir import DataType
from vyre_decl.reference.interpreter import op_function
from vyre_decl.registry import default_registry

from vyre_decl.conform.oneop import one_op_program

REG = default_registry()
KAT_CASES = [(op.id, i) for op in REG for i in range(len(op.kats))]
LAW_CASES = [(op.id, b) for op in REG for b in op.bindings() if any(law.applies(op.binding_map(b)) for law in op.laws)]


def _budget(op, t):
    """Known answers are true values rounded: an approximation meets them within its accuracy."""
    return op.accuracy(t) if t.is_float else 0


def _columns(op, kat):
    ins, out = op.input_types(kat.binding), op.output_type(kat.binding)
    cols = list(zip(*kat.cases))
    return [from_bits(t, list(c)) for t, c in zip(ins, cols[:-1])], from_bits(out, list(cols[-1])), out


@pytest.mark.parametrize("op_id, k", KAT_CASES, ids=[f"{o}#{k}" for o, k in KAT_CASES])
def test_kat_on_op_function(op_id, k):
    op = REG.get(op_id)
    kat = op.kats[k]
    args, want, out_t = _columns(op, kat)
    with np.errstate(all="ignore"):
        got = op_function(REG, op, kat.binding, kat.attrs)(args)
    assert mismatches(out_t, want, got, _budget(op, out_t)).size == 0, (got, want)


@pytest.mark.parametrize("op_id, k", KAT_CASES, ids=[f"{o}#{k}" for o, k in KAT_CASES])
def test_kat_through_a_program(op_id, k, backend):
    op = REG.get(op_id)
    kat = op.kats[k]
    args, want, out_t = _columns(op, kat)
    results = backend.dispatch(one_op_program(op, kat.binding, kat.attrs), args)
    if op.is_atomic:  # memory ends with the new value; the expression yields the old one
        new_mem, old = results
        assert mismatches(out_t, want, new_mem).size == 0
        assert mismatches(out_t, args[0], old).size == 0
    else:
        (got,) = results
        assert mismatches(out_t, want, got, _budget(op, out_t)).size == 0, (got, want)


def _evaluate(op_id, binding, args):
    with np.errstate(all="ignore"):
        return op_function(REG, REG.get(op_id), binding)(list(args))


@pytest.mark.parametrize("op_id, binding", LAW_CASES, ids=[f"{o}[{','.join(t.value for t in b)}]" for o, b in LAW_CASES])
def test_declared_laws_hold_on_the_reference(op_id, binding):
    op = REG.get(op_id)
    t = op.input_types(binding)[0]
    samples = witnesses(t) + random_bits(t, 24, np.random.default_rng(7))
    results = check_laws(op, binding, _evaluate, samples, REG)
    assert results
    for r in results:
        assert r.holds, r.describe()


def test_a_false_law_is_caught_with_a_counterexample():
    op = REG.get("primitive.math.sub")
    from dataclasses import replace

    from vyre_decl.registry.model import LawDef

    bogus = replace(op, laws=(LawDef("commutative"),))
    (r,) = check_laws(bogus, (DataType.U32,), _evaluate, witnesses(DataType.U32), REG)
    assert not r.holds and r.counterexample["equation"] == "f(a,b) = f(b,a)"
    assert "left" in r.counterexample and "right" in r.counterexample


def test_f16_and_bf16_rounding_compositions_agree_with_numpy_on_a_million_patterns():
    """The integer/f32 compositions of f16_bits and bf16_bits (what an sm_75 GPU runs) against
    numpy's own conversions: every edge, and a million random bit patterns."""
    rng = np.random.default_rng(7)
    bits = np.concatenate([rng.integers(0, 2**32, 1 << 20, dtype=np.uint64).astype(np.uint32),
                           np.array([0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFFFFFFF, 0x7F7FFFFF,
                                     0x477FEFFF, 0x477FF000, 0x38800000, 0x387FFFFF, 0x33000000, 0x33000001,
                                     0x00000001, 0x7F7F8000, 0x7F7F7FFF], np.uint32)])
    x = bits.view(np.float32)
    nan = np.isnan(x)
    with np.errstate(all="ignore"):
        want_f16 = np.where(nan, 0x7FFF, x.astype(np.float16).view(np.uint16).astype(np.uint32))
        # bf16: the top half rounded to nearest even, through float64 (exact) and a tie-aware split
        top, low = bits >> 16, bits & 0xFFFF
        up = (low > 0x8000) | ((low == 0x8000) & (top & 1 == 1))
        want_bf16 = np.where(nan, 0x7FFF, (top + up) & 0xFFFF)
        got_f16 = op_function(REG, REG.get("primitive.convert.f16_bits"), ())([x])
        got_bf16 = op_function(REG, REG.get("primitive.convert.bf16_bits"), ())([x])
    assert (got_f16 == want_f16).all(), bits[got_f16 != want_f16][:5]
    assert (got_bf16 == want_bf16).all(), bits[got_bf16 != want_bf16][:5]
