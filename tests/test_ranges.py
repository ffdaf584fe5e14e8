"""Range laws (registry/ranges.py): every declared law holds on the reference for operands drawn
from many intervals, a wrong law is caught by the same check, and malformed laws get D018-D020."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

from vyre_decl.ops.check import reference_evaluator
from vyre_decl.registry import default_registry, load
from vyre_decl.registry.model import LawDef, OpDef
from vyre_decl.registry.ranges import RangeLawError, parse_range

REG = default_registry()
EVAL = reference_evaluator(REG)
_NP = {32: np.uint32, 64: np.uint64}


def _endpoints(bits: int, rng: np.random.Generator) -> list[int]:
    top = (1 << bits) - 1
    out = {0, 1, 2, 3, 31, 32, 33, 63, 64, top, top - 1, top >> 1, (top >> 1) + 1}
    for k in rng.integers(1, bits, 6):
        out.update({(1 << int(k)) - 1, 1 << int(k), (1 << int(k)) + 1})
    out.update(int(v) for v in rng.integers(0, 1 << min(bits, 62), 6))
    out.update(int(v) for v in rng.integers(0, 300, 6))
    return sorted(v for v in out if 0 <= v <= top)


def _intervals(bits: int, rng: np.random.Generator, count: int) -> list[tuple[int, int]]:
    ends = _endpoints(bits, rng)
    pairs = [(a, b) for a, b in itertools.combinations_with_replacement(ends, 2)]
    pick = rng.choice(len(pairs), size=min(count, len(pairs)), replace=False)
    top = (1 << bits) - 1
    edges = [(0, 0), (0, 1), (1, 1), (0, top), (top, top), (31, 32), (32, 32), (0, 32),
             (2, 2), (1, 1 << (bits - 1)), (1 << bits // 2, 1 << bits // 2)]  # where laws go wrong
    return edges + [pairs[int(i)] for i in pick if pairs[int(i)] not in edges]


def _values(iv: tuple[int, int], rng: np.random.Generator) -> list[int]:
    lo, hi = iv
    inside = [lo, hi, min(hi, lo + 1), max(lo, hi - 1)]
    inside += [int(v) for v in rng.integers(0, hi - lo + 1, 2, dtype=np.uint64)] if hi - lo < 1 << 63 else []
    return sorted({v if v >= lo else lo + v for v in inside})


def counterexample(op: OpDef, law: LawDef, binding: tuple, seed: int = 0, intervals: int = 160) -> str | None:
    """The first operands (and their intervals) whose result the law's bounds miss, or None."""
    rng = np.random.default_rng(seed)
    types = op.input_types(binding)
    bits = types[0].bits
    tvars = op.binding_map(binding)
    names = tuple(p.name for p in op.signature.inputs)
    formula, _ = parse_range(law.text, names, tuple(tvars))
    rows, claims = [], []
    ivs_edges = _intervals(bits, rng, 0)  # every pair of edge intervals is tried
    for ivs in itertools.product(_intervals(bits, rng, intervals), repeat=len(types)):
        if rng.random() > 4.0 / intervals ** (len(types) - 1) and not all(iv in ivs_edges for iv in ivs):
            continue
        env = {f"{n}.{f}": v for n, iv in zip(names, ivs) for f, v in zip(("lo", "hi"), iv)}
        for var, t in tvars.items():
            env.update({f"{var}.bits": t.bits, f"{var}.min": 0, f"{var}.max": (1 << t.bits) - 1})
        bounds = formula.bounds(env)
        if bounds is None:
            continue
        for vals in itertools.product(*(_values(iv, rng) for iv in ivs)):
            rows.append(vals)
            claims.append((ivs, bounds))
    assert rows, f"{op.id} {law.text}: no case where the guard holds"
    cols = [np.array([r[i] for r in rows], dtype=_NP[bits]) for i in range(len(types))]
    got = EVAL(op.id, binding, cols)
    for vals, (ivs, (lo, hi)), r in zip(rows, claims, got.tolist()):
        if not lo <= int(r) <= hi:
            return f"{op.id}{list(vals)} = {r}, outside {lo} .. {hi} (operands in {ivs})"
    return None


def _ranged() -> list[tuple[str, str, tuple]]:
    out = []
    for op in REG:
        op_id = op.id
        for law in op.ranges:
            for b in op.bindings():
                if law.applies(op.binding_map(b)):
                    out.append((op_id, law.text, b))
    return out


RANGED = _ranged()


def test_the_integer_ops_declare_range_laws():
    ids = {op_id for op_id, _, _ in RANGED}
    for name in ("math.add", "math.sub", "math.mul", "math.div", "math.mod", "math.min", "math.max",
                 "bitwise.and", "bitwise.or", "bitwise.xor", "bitwise.shl", "bitwise.shr"):
        assert f"primitive.{name}" in ids


@pytest.mark.parametrize("op_id,text,binding", RANGED, ids=[f"{o}:{t}:{b[0].value}" for o, t, b in RANGED])
def test_every_range_law_holds_on_the_reference(op_id, text, binding):
    op = REG.get(op_id)
    law = next(law for law in op.ranges if law.text == text)
    assert counterexample(op, law, binding) is None


@pytest.mark.parametrize("op_id,text", [
    ("primitive.math.mod", "0 .. b.hi - 2 if b.lo >= 1"),  # off by one: x % b reaches b - 1
    ("primitive.math.mod", "0 .. b.hi - 1"),  # x % 0 = 0 is fine, but b.hi = 0 claims an empty set
    ("primitive.math.add", "a.lo + b.lo .. a.hi + b.hi"),  # no guard: the sum wraps
    ("primitive.math.mul", "a.lo * b.lo .. a.hi * b.hi if a.hi * b.hi <= T.max + 1"),  # the guard is one too loose
    ("primitive.math.sub", "a.lo - b.hi .. a.hi - b.lo"),  # no guard: the difference wraps
    ("primitive.math.div", "a.lo / max(b.hi, 1) .. a.hi / max(b.lo, 1)"),  # b may be 0: x / 0 = all ones
    ("primitive.bitwise.shr", "a.lo >> b.hi .. a.hi >> b.lo"),  # the amount is masked: >> 32 is >> 0
    ("primitive.bitwise.shl", "a.lo << b.lo .. a.hi << b.hi if b.hi < T.bits"),  # bits shifted out
    ("primitive.bitwise.and", "0 .. min(a.hi, b.hi) - 1"),
    ("primitive.bitwise.or", "max(a.lo, b.lo) .. max(a.hi, b.hi)"),  # 1 | 2 = 3
])
def test_a_wrong_range_law_is_caught(op_id, text):
    op = REG.get(op_id)
    binding = next(b for b in op.bindings() if b[0].value == "u32")
    assert counterexample(op, LawDef("range", text=text), binding) is not None


def _load_with(tmp_path: Path, laws: str, key: str = "ranges", standard: bool = False) -> list[tuple[str, str]]:
    """The load errors of an op file whose one op (an integer %) declares ``key = [laws]``
    (``standard``: loaded over the standard library, which the file then requires)."""
    requires = 'requires = ["primitive"]\n' if standard else ""
    (tmp_path / "my.toml").write_text(f"""
[dialect]
name = "my"
version = "1.0.0"
summary = "law tests"
{requires}
[[op]]
id = "my.rem"
summary = "a % b"
signature = "(a: T, b: T) -> T"
types = {{ T = "int" }}
reference = "int_mod"
ptx = "rem.{{T}} {{out}}, {{a}}, {{b}};"  # (x % 0 differs: not run here)
{key} = [{laws}]
""")
    reg = load([tmp_path], standard=standard, snapshot=False)
    return [(d.code, d.message) for d in reg.errors]


@pytest.mark.parametrize("ranges,code", [
    ('"0 .. b.hi - 1 if b.lo >= 1 @uint"', None),
    ('"0 b.hi"', "D018"),
    ('"0 .. b.hi -"', "D018"),
    ('"0 .. b.hi if b.lo"', "D018"),  # a guard is comparisons
    ('"0 .. __import__(1) @uint"', "D019"),
    ('"0 .. c.hi @uint"', "D019"),  # no operand c
    ('"0 .. b.mid @uint"', "D019"),
    ('"0 .. U.max @uint"', "D019"),  # no type variable U
    ('"0 .. b.hi"', "D020"),  # signed bindings too
    ('"0 .. b.hi @f32"', "D018"),  # a type the op does not take
    ('"0 .. a.hi @"', "D018"),
    ("3", "R002"),  # the schema: a list of strings
])
def test_malformed_range_laws_have_codes(tmp_path, ranges, code):
    errors = _load_with(tmp_path, ranges)
    if code is None:
        assert errors == []
    else:
        assert code in [c for c, _ in errors], errors


def test_parse_range_reports_the_fix():
    with pytest.raises(RangeLawError) as exc:
        parse_range("0 .. q.hi", ("a", "b"), ("T",))
    assert exc.value.code == "D019" and "a.lo" in exc.value.fix
