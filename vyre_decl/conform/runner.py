"""The conformance runner: every op x type, corpus program and routine, on a backend, against
the reference; the results become a certificate. Its rooms: ``cases`` (what an op unit runs),
``compare`` (both sides, bit for bit), ``shrink`` (smaller counterexamples), ``triage`` (known
answers and laws: whose fault), ``programs`` and ``routines`` (those units).

Work is cut into units, each deterministic given the seed and its key: an op unit
(``op:primitive.math.add[u32]``) runs boundary witnesses, an exhaustive small-domain sweep and
seeded random cases in one dispatch, then the op's known-answer tests, then every declared law
on the reference and on the backend; a program unit (``program:16_workgroup_scan@1000``) runs a
corpus program on seeded random inputs of one size. Sharding takes every N-th unit, so shards
merge into exactly the certificate of an unsharded run.

Failure kinds: ``backend`` (the backend differs from the reference), ``backend-law`` (a law holds
on the reference but not on the backend), ``error`` (the backend could not run the case: a GPU
fault, a JIT error, ...), and the registry errors ``law`` (a declared law fails on the
reference), ``kat`` (a known answer disagrees with a reference that satisfies the op's laws: the
KAT may be wrong) and ``reference`` (the reference disagrees with the known answers — the backend
meets them, or the reference also breaks a law or several KATs, most of the table: the reference is
wrong).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np

from ..ir.signature import Binding
from ..registry import OpDef, Registry
from .cases import attr_sets, op_cases, unit_rng
from .compare import Checker, inputs_shown, show
from .corpus import CorpusProgram
from .isolation import CaseError, Runner
from .oneop import one_op_program
from .programs import run_program
from .routines import run_routine
from .shrink import shrink_op_case
from .triage import check_kats, check_op_laws, reference_laws
from .units import PROGRAM_SIZES, Failure, Unit, UnitResult, select_units, types_key
from .values import from_bits, to_bits

__all__ = ["Unit", "UnitResult", "Failure", "Conformance", "PROGRAM_SIZES", "select_units", "run_units"]


class Conformance:
    """Runs units on ``runner`` (the backend under test) against the reference."""

    def __init__(self, runner: Runner, registry: Registry, seed: int = 1, cases: int = 1000,
                 capsule_dir: Path | None = None, log: Callable[[str], None] = lambda s: None) -> None:
        self.check = Checker(runner, registry, seed, capsule_dir)
        self.runner, self.registry, self.seed, self.n_random = runner, registry, seed, cases
        self.log = log

    def run(self, unit: Unit) -> UnitResult:
        if unit.kind == "op":
            assert unit.op is not None
            return self.run_op(unit.key, unit.op, unit.binding)
        if unit.kind == "routine":
            res = UnitResult(unit.key)
            definition, binding = unit.routine
            res.cases, res.passed, failures = run_routine(self.runner, self.check.reference, self.registry, self.seed,
                                                          unit.key, definition, binding, unit.size)
            res.failures = [Failure(f["kind"], f["message"], f["details"]) for f in failures]
            return res
        assert unit.program is not None
        return self.run_program(unit.key, unit.program, unit.size)

    def run_program(self, key: str, entry: CorpusProgram, size: int) -> UnitResult:
        return run_program(self.check, key, entry, size)

    def run_op(self, key: str, op: OpDef, binding: Binding) -> UnitResult:
        """Cases in one dispatch per attribute assignment (``cases.attr_sets``), then the known
        answers, then the laws (reference, then backend) at the default attributes."""
        res = UnitResult(key)
        rng = unit_rng(self.seed, key)
        sets = attr_sets(op, binding)
        if not sets:
            res.failures.append(Failure("error", f"{op.id} has a required attribute and no known-answer test gives it "
                                        "a value, so no case can be built. Fix: give the attribute a default or add "
                                        "a KAT with attrs = {...}"))
            return res
        args = op_cases(op, binding, rng, self.n_random)
        for attrs in sets:
            self._run_cases(res, key, op, binding, attrs, args)
        ref_laws, samples = reference_laws(self.check, op, binding, rng) if sets[0] == () else ([], [])
        if op.kats:
            check_kats(self.check, res, op, binding, law_broken=any(not r.holds for r in ref_laws))
        check_op_laws(self.check, key, res, op, binding, ref_laws, samples)
        return res

    def _run_cases(self, res: UnitResult, key: str, op: OpDef, binding: Binding, attrs: tuple[tuple[str, int], ...],
                   args: list[np.ndarray]) -> None:
        """The cases ``args`` with attributes ``attrs``, in one dispatch, recorded in ``res``."""
        n = len(args[0]) if args else 1
        res.cases += n
        try:
            bad, expected, got, problem = self.check.compare(op, binding, attrs, args)
            res.passed += n - bad.size
            if problem:
                res.failures.append(Failure("backend", problem))
            elif bad.size:
                res.failures.append(self._op_failure(key, op, binding, attrs, args, expected, got, bad))
        except CaseError as err:
            res.failures.append(Failure("error", f"the backend could not run the op: {err}"))

    def _op_failure(self, key: str, op: OpDef, binding: Binding, attrs: tuple[tuple[str, int], ...],
                    args: list[np.ndarray], expected: np.ndarray, actual: np.ndarray, bad: np.ndarray) -> Failure:
        types, out_t = op.input_types(binding), op.output_type(binding)
        i = int(bad[0])
        first = [int(to_bits(t, a[i: i + 1])[0]) for t, a in zip(types, args)]
        program = one_op_program(op, binding, attrs)

        def columns(cases: list[list[int]]) -> list[np.ndarray]:
            return [from_bits(t, [c[j] for c in cases]) for j, t in enumerate(types)]

        def still_fails(cands: list[list[int]]) -> list[bool]:
            try:
                wrong = set(self.check.compare(op, binding, attrs, columns(cands))[0].tolist())
            except CaseError:
                return [False] * len(cands)
            return [j in wrong for j in range(len(cands))]

        # shrink, then make sure the case fails on its own (a bug may need company: a whole
        # workgroup, a neighbour...); else fall back to the original element, else to every case
        case = shrink_op_case(types, first, still_fails) if types else []
        for cols in (columns([case]), columns([first]), args):
            try:
                alone_bad, exp, got, _ = self.check.compare(op, binding, attrs, cols)
            except CaseError:
                continue
            if alone_bad.size:
                j = int(alone_bad[0])
                break
        else:
            cols, exp, got, j = args, expected, actual, i
        alone = len(cols[0]) == 1 if cols else True
        details: dict[str, Any] = {
            "op": op.id,
            "types": types_key(binding),
            **({"attrs": dict(attrs)} if attrs else {}),
            "inputs": inputs_shown(op, types, cols, j),
            "expected": show(out_t, exp[j]),
            "actual": show(out_t, got[j]),
            "mismatches": int(bad.size),
            "of": int(len(args[0]) if args else 1),
            "reproduces_alone": alone,
        }
        shown = ", ".join(f"{nm}={v['dec']}" for nm, v in details["inputs"].items())
        called = op.id + (f"<{', '.join(f'{k}={v}' for k, v in attrs)}>" if attrs else "")
        note = f"{called}({shown})" if alone else f"{called}: element {j} of the whole batch"
        capsule = self.check.capsule(key, program, cols, None, note)
        return Failure("backend", f"{bad.size} of {details['of']} cases differ from the reference; "
                       f"{'smallest' if alone else 'first (it fails only within the batch)'}: {called}({shown}) = "
                       f"{details['expected']['dec']} expected, {details['actual']['dec']} from the backend", details,
                       capsule)


def run_units(conf: Conformance, units: Iterable[Unit], total: int, progress: Callable[[str], None]) -> dict[str, UnitResult]:
    """Run ``units``, reporting progress; returns results by key."""
    results = {}
    t0 = time.perf_counter()
    for i, unit in enumerate(units, 1):
        try:
            r = conf.run(unit)
        except Exception as exc:  # noqa: BLE001 - one broken unit (e.g. a plugin op) must not end the run
            r = UnitResult(unit.key, cases=1, failures=[Failure("error", f"the unit crashed the runner: "
                                                                f"{type(exc).__name__}: {exc}")])
        results[unit.key] = r
        mark = "ok" if r.verdict == "pass" else "FAIL"
        progress(f"[{i:4d}/{total}] {time.perf_counter() - t0:7.1f}s {unit.key}: {r.cases:,} cases, "
                 f"{r.laws_checked} laws ... {mark}")
    return results
