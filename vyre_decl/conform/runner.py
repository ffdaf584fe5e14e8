"""The conformance runner: every op x type and every corpus program, on a backend, against the
reference; the results become a certificate.

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
KAT is wrong) and ``reference`` (the reference disagrees with the known answers — the backend
meets them, or the reference also breaks a law or most of the KATs: the reference is wrong).
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from ..ir.scalars import decode
from ..ir.signature import Binding
from ..ir.types import DataType
from ..reference.interpreter import op_function
from ..registry import OpDef, Registry
from .capsule import write_capsule
from .corpus import CorpusProgram, make_inputs
from .isolation import CaseError, Runner
from .laws import check_laws
from .oneop import one_op_program
from .routines import run_routine
from .shrink import shrink_op_case, shrink_program_inputs
from .units import PROGRAM_SIZES, Failure, Unit, UnitResult, select_units, types_key
from .values import buffer_mismatches, from_bits, mismatches, to_bits
from .witnesses import random_bits, sweep, witnesses

__all__ = ["Unit", "UnitResult", "Failure", "Conformance", "PROGRAM_SIZES", "select_units"]

_MAX_REPORTED = 3  # failures detailed per unit


def _rng(seed: int, key: str) -> np.random.Generator:
    digest = hashlib.sha256(f"{seed}|{key}".encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "little"))


def _show(t: DataType, value: Any) -> dict[str, str]:
    bits = int(to_bits(t, np.asarray([value]))[0])
    return {"type": t.value, "hex": f"{bits:#0{2 + max(1, t.bits // 4)}x}", "dec": repr(decode(t, bits))}


def _record_laws(res: UnitResult, results: list[Any], kind: str, message: str) -> bool:
    """Count law results into ``res``, a failure for each broken one; True if any broke."""
    broken = False
    for r in results:
        res.laws_checked += 1
        if not r.holds:
            broken = True
            res.laws_failed += 1
            res.failures.append(Failure(kind, message.format(law=r.law) + f": {_example(r)}", dict(r.counterexample or {})))
    return broken


def _inputs_shown(op: OpDef, types: Sequence[DataType], columns: Sequence[np.ndarray], j: int) -> dict[str, Any]:
    return {p.name: _show(t, c[j]) for p, t, c in zip(op.signature.inputs, types, columns)}


def _example(r: Any) -> str:
    ce = dict(r.counterexample or {})
    eq = ce.pop("equation", "")
    left, right = ce.pop("left", "?"), ce.pop("right", "?")
    args = ", ".join(f"{k}={v}" for k, v in ce.items())
    return f"{eq} fails for {args}: {left} vs {right}"


class Conformance:
    """Runs units on ``runner`` (the backend under test) against the reference."""

    def __init__(self, runner: Runner, registry: Registry, seed: int = 1, cases: int = 1000,
                 capsule_dir: Path | None = None, log: Callable[[str], None] = lambda s: None) -> None:
        self.runner, self.registry, self.seed, self.n_random = runner, registry, seed, cases
        self.capsule_dir = capsule_dir
        self.log = log
        from ..backends.reference import ReferenceBackend

        self.reference = ReferenceBackend(registry)

    # ------------------------------------------------------------------ helpers
    def _ref_eval(self, op_id: str, binding: Binding, args: Sequence[np.ndarray]) -> np.ndarray:
        with np.errstate(all="ignore"):
            return np.asarray(op_function(self.registry, self.registry.get(op_id), binding)(list(args)))

    def _backend_eval(self, op_id: str, binding: Binding, args: Sequence[np.ndarray]) -> np.ndarray:
        op = self.registry.get(op_id)
        n = len(args[0]) if args else 1
        outputs = self.runner.run(one_op_program(op, binding), [np.asarray(a) for a in args], None)
        if not outputs or np.shape(outputs[0]) != (n,):
            raise CaseError(f"the backend returned {len(outputs)} output(s) of shape(s) "
                            f"{[np.shape(o) for o in outputs]} for {n} cases")
        return outputs[0]  # the result (for atomics: the new memory values)

    def _capsule(self, unit: str, program: Any, inputs: list[np.ndarray], grid: Any, note: str,
                 expect: list[np.ndarray] | None = None, kat: dict[str, Any] | None = None) -> str | None:
        if self.capsule_dir is None:
            return None
        path = write_capsule(self.capsule_dir, unit, program, inputs, grid, self.runner.name, self.seed, note, expect,
                             kat)
        return path.name  # relative to the certificate's capsule directory, so shards merge exactly

    # ------------------------------------------------------------------ units
    def run(self, unit: Unit) -> UnitResult:
        if unit.kind == "op":
            assert unit.op is not None
            return self.run_op(unit.key, unit.op, unit.binding)
        if unit.kind == "routine":
            res = UnitResult(unit.key)
            definition, binding = unit.routine
            res.cases, res.passed, failures = run_routine(self.runner, self.reference, self.registry, self.seed,
                                                          unit.key, definition, binding, unit.size)
            res.failures = [Failure(f["kind"], f["message"], f["details"]) for f in failures]
            return res
        assert unit.program is not None
        return self.run_program(unit.key, unit.program, unit.size)

    def _cases(self, op: OpDef, binding: Binding, rng: np.random.Generator) -> list[np.ndarray]:
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
        rnd = [np.array(random_bits(t, self.n_random, rng), dtype=np.uint64) for t in types]
        return [from_bits(t, np.concatenate([a, b, c])) for t, a, b, c in zip(types, wit, sw, rnd)]

    def _compare(self, op: OpDef, binding: Binding, attrs: tuple[tuple[str, int], ...],
                 cols: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray, str | None]:
        """Run cases ``cols`` on the backend and the reference: (indices that differ, reference
        results, backend results, what is wrong with the backend's outputs if their number or shape
        is off). Atomic ops are also checked on the old value they yield. Raises CaseError."""
        types, out_t = op.input_types(binding), op.output_type(binding)
        n = len(cols[0]) if cols else 1
        with np.errstate(all="ignore"):
            expected = np.broadcast_to(np.asarray(op_function(self.registry, op, binding, attrs)(cols)), (n,))
        outputs = self.runner.run(one_op_program(op, binding, attrs), cols, None)
        want = 2 if op.is_atomic else 1
        shapes = [np.shape(o) for o in outputs]
        if len(outputs) != want or any(sh != (n,) for sh in shapes):
            return np.arange(n), expected, np.zeros(n, expected.dtype), \
                f"the backend returned {len(outputs)} output(s) of shape(s) {shapes}, expected {want} of ({n},)"
        bad = mismatches(out_t, expected, outputs[0])  # backends agree with the reference bit for bit
        if op.is_atomic:
            bad = np.union1d(bad, mismatches(types[0], cols[0], outputs[1]))
        return bad, expected, np.asarray(outputs[0]), None

    def _attrs(self, op: OpDef, binding: Binding) -> tuple[tuple[str, int], ...] | None:
        """Attribute values to test with: defaults, and for required attributes the first KAT's."""
        required = [a.name for a in op.signature.attrs if a.default is None]
        if not required:
            return ()
        kat = next((k for k in op.kats if k.binding == binding), None)
        given = dict(kat.attrs) if kat else {}
        if any(r not in given for r in required):
            return None
        return tuple(sorted((r, given[r]) for r in required))

    def run_op(self, key: str, op: OpDef, binding: Binding) -> UnitResult:
        res = UnitResult(key)
        rng = _rng(self.seed, key)
        types = op.input_types(binding)
        attrs = self._attrs(op, binding)
        if attrs is None:
            res.failures.append(Failure("error", f"{op.id} has a required attribute and no known-answer test gives it "
                                        "a value, so no case can be built. Fix: give the attribute a default or add "
                                        "a KAT with attrs = {...}"))
            return res
        args = self._cases(op, binding, rng)
        n = len(args[0]) if args else 1
        res.cases += n
        try:
            bad, expected, got, problem = self._compare(op, binding, attrs, args)
            res.passed += n - bad.size
            if problem:
                res.failures.append(Failure("backend", problem))
            elif bad.size:
                res.failures.append(self._op_failure(key, op, binding, attrs, args, expected, got, bad))
        except CaseError as err:
            res.failures.append(Failure("error", f"the backend could not run the op: {err}"))
        ref_laws: list[Any] = []
        samples: list[int] = []
        if types and not attrs:
            samples = witnesses(types[0]) + random_bits(types[0], 24, rng)
            ref_laws = check_laws(op, binding, self._ref_eval, samples, self.registry)
        self._kats(res, op, binding, law_broken=any(not r.holds for r in ref_laws))
        self._laws(res, op, binding, ref_laws, samples)
        return res

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
                wrong = set(self._compare(op, binding, attrs, columns(cands))[0].tolist())
            except CaseError:
                return [False] * len(cands)
            return [j in wrong for j in range(len(cands))]

        # shrink, then make sure the case fails on its own (a bug may need company: a whole
        # workgroup, a neighbour...); else fall back to the original element, else to every case
        case = shrink_op_case(types, first, still_fails) if types else []
        for cols in (columns([case]), columns([first]), args):
            try:
                alone_bad, exp, got, _ = self._compare(op, binding, attrs, cols)
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
            "inputs": _inputs_shown(op, types, cols, j),
            "expected": _show(out_t, exp[j]),
            "actual": _show(out_t, got[j]),
            "mismatches": int(bad.size),
            "of": int(len(args[0]) if args else 1),
            "reproduces_alone": alone,
        }
        shown = ", ".join(f"{nm}={v['dec']}" for nm, v in details["inputs"].items())
        note = f"{op.id}({shown})" if alone else f"{op.id}: element {j} of the whole batch"
        capsule = self._capsule(key, program, cols, None, note)
        return Failure("backend", f"{bad.size} of {details['of']} cases differ from the reference; "
                       f"{'smallest' if alone else 'first (it fails only within the batch)'}: {op.id}({shown}) = "
                       f"{details['expected']['dec']} expected, {details['actual']['dec']} from the backend", details,
                       capsule)

    def _kats(self, res: UnitResult, op: OpDef, binding: Binding, law_broken: bool) -> None:
        kats = [k for k in op.kats if k.binding == binding]
        if not kats:
            return
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
                backend_wrong, ref, got, problem = self._compare(op, binding, kat.attrs, args)
            except CaseError as err:
                res.failures.append(Failure("error", f"the backend could not run the known-answer tests: {err}"))
                continue
            if problem:
                res.failures.append(Failure("backend", problem))
                continue
            ref_bad = set(mismatches(out_t, want, ref, ulp).tolist())
            backend_bad = set(backend_wrong.tolist())
            res.passed += n - len(ref_bad | backend_bad)
            for j in sorted(ref_bad)[:_MAX_REPORTED]:
                backend_meets_kat = mismatches(out_t, want[j: j + 1], got[j: j + 1], ulp).size == 0
                reference_wrong = (self.runner.name != "reference" and backend_meets_kat) or law_broken or \
                    len(ref_bad) * 2 > n
                kind = "reference" if reference_wrong else "kat"
                details: dict[str, Any] = {"op": op.id, "types": types_key(binding),
                                           "inputs": _inputs_shown(op, types, args, j), "known_answer": _show(out_t, want[j]), "reference": _show(out_t, ref[j]),
                           "backend": _show(out_t, got[j])}
                why = ("the backend meets the known answer" if backend_meets_kat and self.runner.name != "reference"
                       else "the reference also breaks a law" if law_broken
                       else f"{len(ref_bad)} of {n} known answers disagree" if len(ref_bad) * 2 > n
                       else "the reference satisfies the op's laws")
                shown = ", ".join(f"{nm}={v['dec']}" for nm, v in details["inputs"].items())
                res.failures.append(Failure(
                    kind, f"registry error: known answer {op.id}({shown}) = {details['known_answer']['dec']} but the "
                    f"reference gives {details['reference']['dec']} ({why}: the {'reference' if kind == 'reference' else 'KAT'} "
                    f"is probably wrong)", details, self._capsule(op.id + "-kat", one_op_program(op, binding, kat.attrs),
                                                                  [a[j: j + 1] for a in args], None, "known answer",
                                                                  [want[j: j + 1]], _kat_origin(op, kat, j))))
            for j in sorted(backend_bad - ref_bad)[:_MAX_REPORTED]:
                details = {"op": op.id, "types": types_key(binding), "inputs": _inputs_shown(op, types, args, j),
                           "expected": _show(out_t, ref[j]), "actual": _show(out_t, got[j])}
                res.failures.append(Failure("backend", f"known answer {op.id}: backend gives {details['actual']['dec']}"
                                            f", expected {details['expected']['dec']}", details,
                                            self._capsule(op.id + "-kat", one_op_program(op, binding, kat.attrs),
                                                          [a[j: j + 1] for a in args], None, "known answer (backend)",
                                                          [want[j: j + 1]], _kat_origin(op, kat, j))))

    def _laws(self, res: UnitResult, op: OpDef, binding: Binding, ref_laws: list[Any], samples: list[int]) -> None:
        where = f"{op.id}[{types_key(binding)}]"
        if not ref_laws or _record_laws(res, ref_laws, "law", "registry error: the declared law {law} does not hold "
                                        "on the reference for " + where):
            return  # a wrong law says nothing about the backend
        try:
            backend_results = check_laws(op, binding, self._backend_eval, samples, self.registry)
        except CaseError as err:
            res.failures.append(Failure("error", f"the backend could not evaluate the laws: {err}"))
            return
        _record_laws(res, backend_results, "backend-law", "the law {law} holds on the reference but not on the "
                     "backend for " + where)

    def run_program(self, key: str, entry: CorpusProgram, size: int) -> UnitResult:
        res = UnitResult(key)
        program, grid = entry.program, entry.grid
        inputs = make_inputs(program, size, _rng(self.seed, key))
        from ..backends.config import DispatchConfig

        cfg = DispatchConfig(grid=grid)
        try:
            expected = self.reference.dispatch(program, inputs, cfg)
        except Exception as exc:  # noqa: BLE001 - a corpus program the reference rejects is a corpus error
            res.cases = 1
            res.failures.append(Failure("error", f"the reference cannot run this program: {exc}"))
            return res
        res.cases = sum(max(1, e.size) for e in expected) or 1
        try:
            actual = self.runner.run(program, inputs, grid)
        except CaseError as err:
            capsule = self._capsule(key, program, inputs, grid, "the backend failed to run the program")
            res.failures.append(Failure("error", f"the backend could not run {entry.name} (size {size}): {err}",
                                        {"program": entry.name, "size": size}, capsule))
            return res
        wrong = self._program_mismatches(program, expected, actual)
        res.passed = max(0, res.cases - sum(int(w[1].size) for w in wrong))
        if wrong:
            res.failures.append(self._program_failure(key, entry, size, inputs, wrong))
        return res

    def _program_mismatches(self, program: Any, expected: list[np.ndarray], actual: list[np.ndarray]) -> list[tuple[Any, np.ndarray, np.ndarray, np.ndarray]]:
        wrong = []
        if len(actual) != len(expected):  # a missing output is wrong everywhere
            actual = list(actual)[: len(expected)] + [np.zeros(0)] * (len(expected) - len(actual))
        for decl, e, a in zip(program.outputs, expected, actual):
            bad = buffer_mismatches(decl.dtype, e, a)
            if bad.size:
                wrong.append((decl, bad, e, a))
        return wrong

    def _program_failure(self, key: str, entry: CorpusProgram, size: int, inputs: list[np.ndarray],
                         wrong: list[Any]) -> Failure:
        from ..backends.config import DispatchConfig

        program, grid = entry.program, entry.grid
        cfg = DispatchConfig(grid=grid)

        def still_fails(candidate: list[np.ndarray]) -> bool:
            try:
                exp = self.reference.dispatch(program, candidate, cfg)
                got = self.runner.run(program, candidate, grid)
            except Exception:  # noqa: BLE001
                return False
            return bool(self._program_mismatches(program, exp, got))

        small = shrink_program_inputs(program, inputs, still_fails)
        try:
            exp = self.reference.dispatch(program, small, cfg)
            got = self.runner.run(program, small, grid)
            now = self._program_mismatches(program, exp, got) or wrong
        except Exception:  # noqa: BLE001
            small, now = inputs, wrong
        decl, bad, e, a = now[0]
        i = int(bad[0])
        t = decl.dtype.value_type if decl.dtype.is_value_type else decl.dtype
        show = (lambda v: _show(t, v)) if decl.dtype.is_value_type else (lambda v: {"dec": repr(v)})
        details = {"program": entry.name, "size": size, "shrunk_to": [int(x.size) for x in small],
                   "buffer": decl.name, "index": i,
                   "expected": show(e[i]) if i < e.size else None, "actual": show(a[i]) if i < a.size else None,
                   "mismatches": int(bad.size)}
        capsule = self._capsule(key, program, small, grid, f"{decl.name}[{i}] differs")
        return Failure("backend", f"{entry.name} (size {size}): {decl.name}[{i}] is "
                       f"{(details['actual'] or {}).get('dec')} on the backend, {(details['expected'] or {}).get('dec')} "
                       f"on the reference ({bad.size} elements differ; inputs shrunk to sizes {details['shrunk_to']})",
                       details, capsule)


def _kat_origin(op: OpDef, kat: Any, j: int) -> dict[str, Any]:
    """Where known answer ``j`` of ``kat`` comes from, for its capsule (see capsule.current_known_answer)."""
    return {"op": op.id, "binding": [t.value for t in kat.binding], "attrs": [list(a) for a in kat.attrs],
            "inputs": [int(v) for v in kat.cases[j][:-1]]}


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
