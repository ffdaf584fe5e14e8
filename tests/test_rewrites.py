"""Rewrite laws (registry/rewrites.py, emit/rewrite.py): every declared law gives the op's own
result on the reference wherever its guard holds, a wrong law is caught by the same check, malformed
laws get D021/D022, and the emitter applies them (PTX without the division; the simulated device
agrees with the reference)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from test_ranges import _intervals, _load_with, _values
from vyre_decl.backends.cuda import cuda_available
from vyre_decl.emit import emit
from vyre_decl.ir.text import parse_program
from vyre_decl.ops.check import reference_evaluator
from vyre_decl.registry import default_registry
from vyre_decl.registry.model import LawDef, OpDef
from vyre_decl.registry.rewrites import parse_rewrite

REG = default_registry()
EVAL = reference_evaluator(REG)
_NP = {32: np.uint32, 64: np.uint64}


def counterexample(op: OpDef, law: LawDef, binding: tuple, seed: int = 0, intervals: int = 120) -> str | None:
    """The first operands (and their intervals) where the law's result differs from the op's, or None."""
    rng = np.random.default_rng(seed)
    types, tvars = op.input_types(binding), op.binding_map(binding)
    bits, names = types[0].bits, tuple(p.name for p in op.signature.inputs)
    rule, _ = parse_rewrite(law.text, names, tuple(tvars))
    cases = 0
    for ivs in itertools.product(_intervals(bits, rng, intervals), repeat=len(types)):
        env = {f"{n}.{f}": v for n, iv in zip(names, ivs) for f, v in zip(("lo", "hi"), iv)}
        for var, t in tvars.items():
            env.update({f"{var}.bits": t.bits, f"{var}.min": 0, f"{var}.max": (1 << t.bits) - 1})
        if rule.guard.value(env) != 1:
            continue
        literals = [None if isinstance(a, str) else a.value(env) for a in rule.args]
        if None in [v for a, v in zip(rule.args, literals) if not isinstance(a, str)]:
            continue  # not evaluable (log2 of 0): the emitter leaves the call as it is
        rows = list(itertools.product(*(_values(iv, rng) for iv in ivs)))
        cols = [np.array([r[i] for r in rows], dtype=_NP[bits]) for i in range(len(types))]
        args = [cols[names.index(a)] if isinstance(a, str) else np.full(len(rows), v, _NP[bits])
                for a, v in zip(rule.args, literals)]
        want = EVAL(op.id, binding, cols)
        got = args[0] if rule.op is None else EVAL(rule.op, binding, args)
        cases += len(rows)
        for vals, w, g in zip(rows, want.tolist(), got.tolist()):
            if w != g:
                return f"{op.id}{list(vals)} = {w}, the law gives {g} (operands in {ivs})"
    assert cases, f"{op.id} {law.text}: no case where the guard holds"
    return None


REWRITTEN = [(op.id, law.text, b) for op in REG for law in op.rewrites for b in op.bindings()
             if law.applies(op.binding_map(b))]


def test_unsigned_division_by_a_power_of_two_and_by_more_than_the_dividend_have_laws():
    assert {(o, b[0].value) for o, _, b in REWRITTEN} >= {(f"primitive.math.{n}", t) for n in ("div", "mod")
                                                        for t in ("u32", "u64")}


@pytest.mark.parametrize("op_id,text,binding", REWRITTEN, ids=[f"{o}:{t}:{b[0].value}" for o, t, b in REWRITTEN])
def test_every_rewrite_law_holds_on_the_reference(op_id, text, binding):
    op = REG.get(op_id)
    assert counterexample(op, next(law for law in op.rewrites if law.text == text), binding) is None


@pytest.mark.parametrize("op_id,text", [
    ("primitive.math.div", "primitive.bitwise.shr(a, log2(b.lo)) if b.lo == b.hi"),  # not only powers of two
    ("primitive.math.div", "primitive.bitwise.shr(a, log2(b.lo) + 1) if b.lo == b.hi and b.lo == 1 << log2(b.lo)"),
    ("primitive.math.mod", "primitive.bitwise.and(a, b.lo) if b.lo == b.hi and b.lo == 1 << log2(b.lo)"),
    ("primitive.math.mod", "a if a.hi <= b.lo"),  # b % b = 0
    ("primitive.math.div", "0 if a.hi <= b.lo"),
    ("primitive.math.div", "a if b.hi <= 1"),  # x / 0 is all ones
])
def test_a_wrong_rewrite_law_is_caught(op_id, text):
    op = REG.get(op_id)
    binding = next(b for b in op.bindings() if b[0].value == "u32")
    assert counterexample(op, LawDef("rewrite", text=text), binding) is not None


@pytest.mark.parametrize("rewrites,code", [
    ('"a if a.hi < b.lo @uint"', None),
    ('"primitive.bitwise.and(a, b.lo - 1) if b.lo == b.hi and b.lo == 1 << log2(b.lo) @uint"', None),
    ('"a @uint"', "D021"),  # no guard
    ('"c if a.hi < b.lo @uint"', "D021"),  # no operand c
    ('"a if a.mid < b.lo @uint"', "D021"),
    ('"a if a.hi @uint"', "D021"),  # a guard is comparisons
    ('"f(a if a.hi < b.lo @uint"', "D021"),
    ('"primitive.bitwise.and(a, b = 1) if a.hi < b.lo @uint"', "D021"),
    ('"a if a.hi < b.lo"', "D022"),  # signed bindings too
    ('"primitive.math.nothing(a, b) if a.hi < b.lo @uint"', "D022"),
    ('"primitive.compare.lt(a, b) if a.hi < b.lo @uint"', "D022"),  # a bool, not a T
])
def test_malformed_rewrite_laws_have_codes(tmp_path, rewrites, code):
    errors = [c for c, _ in _load_with(tmp_path, rewrites, "rewrites", standard=True)]
    assert errors == [] if code is None else code in errors, errors


SRC = """program t workgroup(64, 1, 1) {
  buffer a: read u32[] @0
  buffer o: write u32[len(a)] @1
  buffer wide: write u64[len(a)] @2
  let i = gid.x
  let w = 64u32
  if i < len(a) {
    o[i] = a[i] / 32u32 + a[i] % 32u32 + a[i] / w + a[i] % 1u32 + a[i] / 1u32 + lid.x % 64u32 + lid.x / 128u32 + a[i] % 3u32
    wide[i] = a[i] as u64 / 4096u64 + (a[i] as u64 << 32u64) % 9223372036854775808u64
  }
}"""


def test_the_emitter_divides_by_a_power_of_two_with_a_shift_and_a_mask():
    text = emit(parse_program(SRC)).text
    assert text.count("div.u") == 0 and text.count("rem.u") == 1  # only % 3 is left
    assert "op primitive.math.mod rewritten: lid.x\n" in text and "op primitive.math.div rewritten: 0u32" in text


def test_an_operand_with_an_effect_is_never_dropped():
    src = SRC.replace("lid.x / 128u32", "lid.x / (atomic primitive.atomic.add(wide[0u32], 1u64) as u32 | 128u32)")
    src = src.replace("buffer wide: write", "buffer wide: read_write")
    text = emit(parse_program(src)).text
    assert "atom.global.add" in text


@pytest.mark.gpu
@pytest.mark.skipif(not cuda_available(), reason="no CUDA GPU (or simulated device)")
def test_rewritten_programs_agree_with_the_reference():
    from vyre_decl.backends.cuda import CudaBackend
    from vyre_decl.backends.reference import ReferenceBackend

    cuda, ref = CudaBackend(), ReferenceBackend(REG)
    p = parse_program(SRC)
    a = np.random.default_rng(3).integers(0, 2**32, 300, dtype=np.uint64).astype(np.uint32)
    a[:4] = [0, 1, 2**32 - 1, 2**31]
    for want, got in zip(ref.dispatch(p, [a]), cuda.dispatch(p, [a])):
        assert want.tolist() == got.tolist()
