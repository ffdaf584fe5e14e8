"""Case generation for an op unit: boundary witnesses, an exhaustive small-domain sweep and seeded
random bit patterns, one column per operand, plus the attribute values to test with."""

from __future__ import annotations

import hashlib

import numpy as np

from ..ir.signature import Binding
from ..registry import OpDef
from .values import from_bits
from .witnesses import random_bits, sweep, witnesses

__all__ = ["unit_rng", "op_cases", "attr_sets"]


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


def attr_sets(op: OpDef, binding: Binding) -> list[tuple[tuple[str, int], ...]]:
    """The attribute values to run the cases with: the defaults (``()``, first, when every
    attribute has one), then every other assignment the op's known answers make (``part = 1``
    where the default is 0; those for ``binding`` first, then those of its other bindings, as an
    attribute's type never depends on the binding), attributes at their default left out. Empty
    when a required attribute has no known answer giving it a value."""
    defaults = {a.name: a.default for a in op.signature.attrs}
    sets: list[tuple[tuple[str, int], ...]] = [] if None in defaults.values() else [()]
    for kat in sorted(op.kats, key=lambda k: k.binding != binding):
        given = dict(kat.attrs)
        if any(d is None and n not in given for n, d in defaults.items()):
            continue
        chosen = tuple(sorted((n, v) for n, v in given.items() if v != defaults[n]))
        if chosen not in sets:
            sets.append(chosen)
    return sets
