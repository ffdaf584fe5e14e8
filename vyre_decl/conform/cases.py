"""Case generation for an op unit: boundary witnesses, an exhaustive small-domain sweep and seeded
random bit patterns, one column per operand, plus the attribute values to test with."""

from __future__ import annotations

import hashlib

import numpy as np

from ..ir.signature import Binding
from ..registry import OpDef
from .values import from_bits
from .witnesses import random_bits, sweep, witnesses

__all__ = ["unit_rng", "op_cases", "test_attrs"]


def unit_rng(seed: int, key: str) -> np.random.Generator:
    """The random generator of one unit: the same for a seed and a unit key in every run and shard."""
    digest = hashlib.sha256(f"{seed}|{key}".encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "little"))


def op_cases(op: OpDef, binding: Binding, rng: np.random.Generator, n_random: int) -> list[np.ndarray]:
    """One column of values per operand: every combination of the witnesses (a seeded sample of
    40,000 where there are more), the sweep, then ``n_random`` random bit patterns."""
    types = op.input_types(binding)
    k = len(types)
    if k == 0:
        return []
    if all(t is types[0] for t in types):
        w = witnesses(types[0])
        grid = np.indices((len(w),) * k).reshape(k, -1) if len(w) ** k <= 40000 else \
            rng.integers(0, len(w), (k, 40000))
        wit = [np.array(w, dtype=np.uint64)[row] for row in grid]
        sw = sweep(types[0], k)
    else:  # mixed operand types (e.g. casts have one): each type's values, cycled to one length
        n = max(len(witnesses(t)) for t in types)
        wit = [np.resize(np.array(witnesses(t), dtype=np.uint64), n) for t in types]
        sweeps = [sweep(t, 1)[0] for t in types]
        m = max(len(x) for x in sweeps)
        sw = [np.resize(x, m) for x in sweeps]
    rnd = [np.array(random_bits(t, n_random, rng), dtype=np.uint64) for t in types]
    return [from_bits(t, np.concatenate([a, b, c])) for t, a, b, c in zip(types, wit, sw, rnd)]


def test_attrs(op: OpDef, binding: Binding) -> tuple[tuple[str, int], ...] | None:
    """Attribute values to test with: defaults, and for required attributes the first KAT's (None
    when a required attribute has no KAT giving it a value)."""
    required = [a.name for a in op.signature.attrs if a.default is None]
    if not required:
        return ()
    kat = next((k for k in op.kats if k.binding == binding), None)
    given = dict(kat.attrs) if kat else {}
    if any(r not in given for r in required):
        return None
    return tuple(sorted((r, given[r]) for r in required))
