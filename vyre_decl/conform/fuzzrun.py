"""Differential fuzzing: generated programs on a backend and on the reference, bit for bit.

A mismatch is minimised (``shrink.shrink_program``, then its inputs) before it is reported, and
written as a replay capsule holding the small program; its text can join the corpus as a
regression program.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..backends.config import DispatchConfig
from ..backends.reference import ReferenceBackend
from ..ir.nodes import Program
from ..registry import Registry
from .capsule import write_capsule
from .fuzz import FuzzOps, check_program, random_inputs, random_program
from .isolation import CaseError
from .programs import program_mismatches
from .shrink import shrink_program, shrink_program_inputs

__all__ = ["run_fuzz"]


class _Differ:
    """Why ``runner`` and the reference disagree on a program and its inputs ("" when they agree)."""

    def __init__(self, runner: Any, registry: Registry) -> None:
        self.runner, self.reference = runner, ReferenceBackend(registry)

    def __call__(self, program: Program, inputs: list[np.ndarray], expected: list[np.ndarray] | None = None) -> str:
        if expected is None:
            try:
                expected = self.reference.dispatch(program, inputs, DispatchConfig(timeout=10.0))
            except Exception:  # noqa: BLE001 - a candidate the reference cannot run is no counterexample
                return ""
        try:
            actual = self.runner.run(program, inputs, None)
        except CaseError as err:
            return f"the backend failed: {err}"
        bad = [(decl.name, int(where.size)) for decl, where, _, _ in program_mismatches(program, expected, actual)]
        return f"{bad} elements differ" if bad else ""


def run_fuzz(runner: Any, registry: Registry, count: int, seed: int, progress: Callable[[str], None],
             capsule_dir: Path | None = None) -> tuple[int, list[str]]:
    """Run ``count`` generated programs (seeds ``seed * 1_000_003`` on) on ``runner`` and on the
    reference; returns (programs run, a line per mismatch). A mismatch is minimised and written
    as a replay capsule."""
    ops, differ = FuzzOps(registry), _Differ(runner, registry)
    problems: list[str] = []
    t0 = time.perf_counter()
    for k in range(count):
        s = seed * 1_000_003 + k
        program = random_program(s, ops)
        inputs = random_inputs(program, s)
        why = differ(program, inputs, check_program(program, registry, s))
        if why:
            small = shrink_program(program, registry, lambda p: bool(differ(p, inputs)))
            small_inputs = shrink_program_inputs(small, inputs, lambda i: bool(differ(small, i)))
            why = differ(small, small_inputs) or why
            path = write_capsule(capsule_dir, f"fuzz-{s}", small, small_inputs, None, runner.name, s, why) \
                if capsule_dir is not None else None
            problems.append(f"seed {s} ({program.name}): {why}" + (f"; replay: {path}" if path else ""))
        if (k + 1) % 100 == 0 or k + 1 == count:
            progress(f"fuzz: {k + 1}/{count} programs, {len(problems)} mismatches, {time.perf_counter() - t0:.1f}s")
    return count, problems
