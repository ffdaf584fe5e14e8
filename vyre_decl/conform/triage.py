"""Triage of an op unit's known answers and laws: whose fault a disagreement is.

A known answer the reference misses is a registry error, blamed on the reference on evidence
against it (an independent backend meets the answer, the reference also breaks a law, or several
answers, most of the table, disagree), else on the known answer, which may be wrong (one wrong
answer of one is the answer's fault, as ops check's R030 says); one the backend alone misses is a
backend failure. A law that fails on the reference is a registry
error and says nothing about the backend; one that holds on the reference but not on the backend
is a backend failure, whose capsule holds the op evaluations of the counterexample on which the
backend and the reference differ.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ir.signature import Binding
from ..registry import OpDef
from .compare import Checker, inputs_shown, show
from .isolation import CaseError
from .laws import LawResult, check_law, check_laws
from .oneop import one_op_program
from .units import Failure, UnitResult, types_key
from .values import from_bits, mismatches, zero_sign_note
from .witnesses import random_bits, witnesses

__all__ = ["check_kats", "check_op_laws", "reference_laws"]

_MAX_REPORTED = 3  # failures detailed per known-answer table


def _kat_origin(op: OpDef, kat: Any, j: int) -> dict[str, Any]:
    """Where known answer ``j`` of ``kat`` comes from, for its capsule (see capsule.current_known_answer)."""
    return {"op": op.id, "binding": [t.value for t in kat.binding], "attrs": [list(a) for a in kat.attrs],
            "inputs": [int(v) for v in kat.cases[j][:-1]]}


def check_kats(ck: Checker, res: UnitResult, op: OpDef, binding: Binding, law_broken: bool) -> None:
    """Run the op's known answers for ``binding`` on both sides and record who misses which."""
    kats = [k for k in op.kats if k.binding == binding]
    types, out_t = op.input_types(binding), op.output_type(binding)
    ulp = op.accuracy(out_t) if out_t.is_float else 0  # known answers are true values, rounded
    for kat in kats:
        cols = list(zip(*kat.cases))
        args = [from_bits(t, list(c)) for t, c in zip(types, cols[:-1])]
        want = from_bits(out_t, list(cols[-1]))
        n = len(want)
        res.kats += n
        res.cases += n
        try:
            backend_wrong, ref, got, problem = ck.compare(op, binding, kat.attrs, args)
        except CaseError as err:
            res.failures.append(Failure("error", f"the backend could not run the known-answer tests: {err}"))
            continue
        if problem:
            res.failures.append(Failure("backend", problem))
            continue
        ref_bad = set(mismatches(out_t, want, ref, ulp).tolist())
        backend_bad = set(backend_wrong.tolist())
        res.passed += n - len(ref_bad | backend_bad)

        def capsule(j: int, note: str) -> str | None:
            return ck.capsule(op.id + "-kat", one_op_program(op, binding, kat.attrs), [a[j: j + 1] for a in args],
                              None, note, [want[j: j + 1]], _kat_origin(op, kat, j))

        for j in sorted(ref_bad)[:_MAX_REPORTED]:
            backend_meets_kat = mismatches(out_t, want[j: j + 1], got[j: j + 1], ulp).size == 0
            kind, why = _kat_blame(ck, backend_meets_kat, j not in backend_bad, law_broken, len(ref_bad), n)
            details: dict[str, Any] = {"op": op.id, "types": types_key(binding),
                                       "inputs": inputs_shown(op, types, args, j), "known_answer": show(out_t, want[j]),
                                       "reference": show(out_t, ref[j]), "backend": show(out_t, got[j])}
            shown = ", ".join(f"{nm}={v['dec']}" for nm, v in details["inputs"].items())
            res.failures.append(Failure(
                kind, f"registry error: known answer {op.id}({shown}) = {details['known_answer']['dec']} but the "
                f"reference gives {details['reference']['dec']}{zero_sign_note(want[j], ref[j])} ({why})", details,
                capsule(j, "known answer")))
        for j in sorted(backend_bad - ref_bad)[:_MAX_REPORTED]:
            details = {"op": op.id, "types": types_key(binding), "inputs": inputs_shown(op, types, args, j),
                       "expected": show(out_t, ref[j]), "actual": show(out_t, got[j])}
            res.failures.append(Failure("backend", f"known answer {op.id}: backend gives {details['actual']['dec']}"
                                        f", expected {details['expected']['dec']}", details,
                                        capsule(j, "known answer (backend)")))


def _kat_blame(ck: Checker, backend_meets_kat: bool, agree: bool, law_broken: bool, disagree: int,
               n: int) -> tuple[str, str]:
    """Whose fault a known answer the reference misses is ("reference" or "kat"), and why. The
    reference is blamed on evidence against it: an independent backend meets the answer, the
    reference breaks a law, or several known answers, most of the table, disagree with it. Else
    the known answer may be wrong; doubly so where an independent backend agrees with the
    reference (as ops check says: R030, fix the known answer)."""
    independent = not ck.backend_is_reference
    if independent and backend_meets_kat:
        return "reference", "the backend meets the known answer: the reference is probably wrong"
    if law_broken:
        return "reference", "the reference also breaks a law: the reference is probably wrong"
    if disagree > 1 and disagree * 2 > n:
        return "reference", f"{disagree} of {n} known answers disagree: the reference is probably wrong"
    if independent and agree:
        return "kat", ("the reference and the backend agree and satisfy the op's laws: the known answer may be wrong; "
                       "check it against an independent source")
    return "kat", "the reference satisfies the op's laws: the known answer may be wrong; check it against an independent source"


def reference_laws(ck: Checker, op: OpDef, binding: Binding, rng: np.random.Generator) -> tuple[list[LawResult], list[int]]:
    """The declared laws checked on the reference, and the samples they were checked on."""
    types = op.input_types(binding)
    if not types:
        return [], []
    samples = witnesses(types[0]) + random_bits(types[0], 24, rng)
    return check_laws(op, binding, ck.ref_eval, samples, ck.registry), samples


def _example(r: LawResult) -> str:
    ce = dict(r.counterexample or {})
    eq = ce.pop("equation", "")
    left, right = ce.pop("left", "?"), ce.pop("right", "?")
    args = ", ".join(f"{k}={v}" for k, v in ce.items())
    return f"{eq} fails for {args}: {left} vs {right}"


def _law_capsule(ck: Checker, unit: str, op: OpDef, binding: Binding, r: LawResult) -> str | None:
    """A capsule of the first op evaluation, in the law's counterexample, where the backend and
    the reference differ (one must: where every evaluation agrees, the law holds as it does on
    the reference)."""
    if ck.capsule_dir is None:
        return None
    law = next(law for law in op.laws if (law.text or law.law) == r.law)
    calls: list[tuple[str, Binding, list[np.ndarray], np.ndarray]] = []

    def recording(op_id: str, b: Binding, args: Any) -> np.ndarray:
        got = ck.backend_eval(op_id, b, args)
        calls.append((op_id, b, [np.asarray(a) for a in args], np.asarray(got)))
        return got

    try:
        check_law(op, binding, law, recording, sorted(set(r.witness)), ck.registry)
    except CaseError:
        return None
    for op_id, b, args, got in calls:
        callee = ck.registry.get(op_id)
        bad = mismatches(callee.output_type(b), ck.ref_eval(op_id, b, args), got)
        if bad.size:
            rows = [a[bad] for a in args]
            return ck.capsule(unit + "-law", one_op_program(callee, b), rows, None,
                              f"law {r.law}: {op_id} differs from the reference on {bad.size} evaluation(s)")
    return None


def check_op_laws(ck: Checker, unit: str, res: UnitResult, op: OpDef, binding: Binding, ref_laws: list[LawResult],
                  samples: list[int]) -> None:
    """Record the reference's law results; where every law holds there, check them on the backend
    (unless the backend is the reference: each law is checked, and counted, once)."""
    where = f"{op.id}[{types_key(binding)}]"
    broken = [r for r in ref_laws if not r.holds]
    res.laws_checked += len(ref_laws)
    res.laws_failed += len(broken)
    for r in broken:
        res.failures.append(Failure("law", f"registry error: the declared law {r.law} does not hold on the "
                                    f"reference for {where}: {_example(r)}", dict(r.counterexample or {})))
    if not ref_laws or broken or ck.backend_is_reference:
        return  # a wrong law says nothing about the backend; the reference's results are the backend's
    try:
        backend_results = check_laws(op, binding, ck.backend_eval, samples, ck.registry)
    except CaseError as err:
        res.failures.append(Failure("error", f"the backend could not evaluate the laws: {err}"))
        return
    for r in backend_results:
        res.laws_checked += 1
        if not r.holds:
            res.laws_failed += 1
            res.failures.append(Failure("backend-law", f"the law {r.law} holds on the reference but not on the "
                                        f"backend for {where}: {_example(r)}", dict(r.counterexample or {}),
                                        _law_capsule(ck, unit, op, binding, r)))
