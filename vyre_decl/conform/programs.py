"""Program units: a corpus program on seeded random inputs of one size, on the backend and the
reference; a difference is reported at its first element, with the inputs shrunk while it stays."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..backends.config import DispatchConfig
from ..ir.nodes import Program
from .cases import unit_rng
from .compare import Checker, show
from .corpus import CorpusProgram, make_inputs
from .isolation import CaseError
from .shrink import shrink_program_inputs
from .units import Failure, UnitResult
from .values import buffer_mismatches

__all__ = ["run_program", "program_mismatches"]

Mismatch = tuple[Any, np.ndarray, np.ndarray, np.ndarray]  # (buffer, indices, expected, actual)


def program_mismatches(program: Program, expected: list[np.ndarray], actual: list[np.ndarray]) -> list[Mismatch]:
    """The outputs that differ, each with the indices where (a missing output differs everywhere)."""
    wrong = []
    if len(actual) != len(expected):
        actual = list(actual)[: len(expected)] + [np.zeros(0)] * (len(expected) - len(actual))
    for decl, e, a in zip(program.outputs, expected, actual):
        bad = buffer_mismatches(decl.dtype, e, a)
        if bad.size:
            wrong.append((decl, bad, e, a))
    return wrong


def run_program(ck: Checker, key: str, entry: CorpusProgram, size: int) -> UnitResult:
    res = UnitResult(key)
    program, grid = entry.program, entry.grid
    inputs = make_inputs(program, size, unit_rng(ck.seed, key))
    try:
        expected = ck.reference.dispatch(program, inputs, DispatchConfig(grid=grid))
    except Exception as exc:  # noqa: BLE001 - a corpus program the reference rejects is a corpus error
        res.cases = 1
        res.failures.append(Failure("error", f"the reference cannot run this program: {exc}"))
        return res
    res.cases = sum(max(1, e.size) for e in expected) or 1
    try:
        actual = ck.runner.run(program, inputs, grid)
    except CaseError as err:
        capsule = ck.capsule(key, program, inputs, grid, "the backend failed to run the program")
        res.failures.append(Failure("error", f"the backend could not run {entry.name} (size {size}): {err}",
                                    {"program": entry.name, "size": size}, capsule))
        return res
    wrong = program_mismatches(program, expected, actual)
    res.passed = max(0, res.cases - sum(int(w[1].size) for w in wrong))
    if wrong:
        res.failures.append(_failure(ck, key, entry, size, inputs, wrong))
    return res


def _failure(ck: Checker, key: str, entry: CorpusProgram, size: int, inputs: list[np.ndarray],
             wrong: list[Mismatch]) -> Failure:
    program, grid = entry.program, entry.grid
    cfg = DispatchConfig(grid=grid)

    def differ(candidate: list[np.ndarray]) -> list[Mismatch]:
        return program_mismatches(program, ck.reference.dispatch(program, candidate, cfg),
                                  ck.runner.run(program, candidate, grid))

    def still_fails(candidate: list[np.ndarray]) -> bool:
        try:
            return bool(differ(candidate))
        except Exception:  # noqa: BLE001 - inputs that cannot run are no counterexample
            return False

    small = shrink_program_inputs(program, inputs, still_fails)
    try:
        now = differ(small) or wrong
    except Exception:  # noqa: BLE001
        small, now = inputs, wrong
    decl, bad, e, a = now[0]
    i = int(bad[0])
    t = decl.dtype.value_type if decl.dtype.is_value_type else decl.dtype
    shown = (lambda v: show(t, v)) if decl.dtype.is_value_type else (lambda v: {"dec": repr(v)})
    details = {"program": entry.name, "size": size, "shrunk_to": [int(x.size) for x in small],
               "buffer": decl.name, "index": i,
               "expected": shown(e[i]) if i < e.size else None, "actual": shown(a[i]) if i < a.size else None,
               "mismatches": int(bad.size)}
    capsule = ck.capsule(key, program, small, grid, f"{decl.name}[{i}] differs")
    return Failure("backend", f"{entry.name} (size {size}): {decl.name}[{i}] is "
                   f"{(details['actual'] or {}).get('dec')} on the backend, {(details['expected'] or {}).get('dec')} "
                   f"on the reference ({bad.size} elements differ; inputs shrunk to sizes {details['shrunk_to']})",
                   details, capsule)
