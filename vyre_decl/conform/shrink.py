"""Shrinking failing cases to small counterexamples.

An op case is a tuple of operand bit patterns: each operand is replaced by simpler values (0, 1,
-1, half, low byte, fewer mantissa bits, ...) as long as the case still fails, until nothing
simpler fails. A program case is a set of input arrays: runtime-sized inputs are truncated and
runs of elements zeroed while the outputs still differ.
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

import numpy as np

from ..ir.nodes import Program
from ..ir.scalars import CANONICAL_NAN, ScalarError, decode, encode
from ..ir.types import DataType

__all__ = ["shrink_op_case", "shrink_program_inputs"]


def _complexity(bits: int) -> tuple[int, int]:
    return (bin(bits).count("1"), bits)


def _simpler(t: DataType, bits: int) -> list[int]:
    """Candidate replacements for one operand, simplest first."""
    if t is DataType.BOOL:
        return [0]
    v = decode(t, bits)
    cands: list[object] = [0, 1]
    if t.is_int:
        assert isinstance(v, int)
        cands += [-1 if t.is_signed else t.mask, int(v / 2), v & 0xFF, v >> (t.bits // 2), v - 1 if v > 0 else v + 1]
        if bits:  # clear the lowest or the highest set bit
            cands += [("bits", bits & (bits - 1)), ("bits", bits & ~(1 << (bits.bit_length() - 1)))]
    else:
        assert isinstance(v, float)
        if math.isnan(v):
            return [CANONICAL_NAN[t]] if _complexity(CANONICAL_NAN[t]) < _complexity(bits) else []
        cands += [-1.0, 2.0, 0.5]
        if math.isfinite(v):
            cands += [float(math.trunc(v)), v / 2, float(round(v, 2))]
        mantissa_low = (1 << (23 if t is DataType.F32 else 52)) - 1
        cands.append(("bits", bits & ~(mantissa_low >> 4)))
        cands.append(("bits", bits & ~mantissa_low))
    out = []
    for c in cands:
        try:
            b = c[1] if isinstance(c, tuple) else encode(t, c)
        except (ScalarError, OverflowError, ValueError):
            continue
        if _complexity(b) < _complexity(bits) and b not in out:
            out.append(b)
    return out


def shrink_op_case(
    types: Sequence[DataType],
    case: list[int],
    still_fails: Callable[[list[list[int]]], list[bool]],
    rounds: int = 32,
) -> list[int]:
    """A simpler failing case: ``still_fails`` takes candidate cases (lists of operand bits) and
    says which of them fail; each round tries every one-operand simplification at once."""
    current = list(case)
    for _ in range(rounds):
        candidates = []
        for i, t in enumerate(types):
            for b in _simpler(t, current[i]):
                candidates.append(current[:i] + [b] + current[i + 1:])
        if not candidates:
            break
        verdicts = still_fails(candidates)
        failing = [c for c, bad in zip(candidates, verdicts) if bad]
        if not failing:
            break
        current = min(failing, key=lambda c: [_complexity(b) for b in c])
    return current


def shrink_program_inputs(
    program: Program,
    inputs: list[np.ndarray],
    still_fails: Callable[[list[np.ndarray]], bool],
    attempts: int = 48,
) -> list[np.ndarray]:
    """Smaller failing inputs: truncate the runtime-sized inputs, then zero runs of elements."""
    decls = program.inputs
    resizable = [i for i, d in enumerate(decls) if d.count == 0]
    current = [np.array(a) for a in inputs]
    budget = attempts

    def attempt(candidate: list[np.ndarray]) -> bool:
        nonlocal budget
        if budget <= 0:
            return False
        budget -= 1
        return still_fails(candidate)

    while resizable and budget > 0:  # halve every runtime-sized input together
        n = max(current[i].size for i in resizable)
        if n <= 1:
            break
        trial = [a[: n // 2] if i in resizable else a for i, a in enumerate(current)]
        if not attempt(trial):
            break
        current = trial
    for i, a in enumerate(current):  # zero runs of elements, halving the run length
        run = max(1, a.size // 2)
        while run >= 1 and budget > 0 and a.size:
            changed = False
            for start in range(0, a.size, run):
                if not a[start: start + run].any():
                    continue
                b = a.copy()
                b[start: start + run] = 0
                trial = current[:i] + [b] + current[i + 1:]
                if attempt(trial):
                    current, a, changed = trial, b, True
            if not changed:
                run //= 2
    return current
