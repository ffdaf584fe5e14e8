"""Routine units of a conformance run: each routine x binding at a few sizes, step by step on the
backend under test against the reference, bit for bit, with the size shrunk on a failure.

A unit (``routine:scan.sum[f32]@1000``) draws inputs from the seed and its key: each input holds
``sample``'s length (default N elements); integer elements are random words or, half of them,
values below the length (so indices and counts mean something); float elements are standard
normal or, a quarter of them, random bit patterns (NaN, infinities, subnormals). The routine runs
on the reference and, kernel by kernel through the runner, on the backend; every output must have
the reference's bits (NaNs alike). On a difference the unit retries smaller N (halving, then the
smaller standard sizes) with inputs drawn the same way and reports the smallest N that still
differs. The unit of the smallest size also runs the binding's known answers on the backend and
compares them with the answers (within 4 ULP for floats): a ``kat`` failure, which a run that
certifies the reference against itself can still find.
"""

from __future__ import annotations

import fnmatch
import hashlib
from typing import Any, Mapping, Sequence

import numpy as np

from ..backends.config import DispatchConfig
from ..ir.types import DataType
from ..registry import Registry
from ..routines import RoutineDef, routines
from ..routines.katrun import applies, run_kat
from ..routines.runner import CompiledRoutine
from .isolation import CaseError, Runner
from .values import buffer_mismatches

__all__ = ["ROUTINE_SIZES", "routine_unit_keys", "run_routine"]

ROUTINE_SIZES = (0, 1, 31, 1000, 4097)


def routine_unit_keys(globs: Sequence[str] = ()) -> list[tuple[str, RoutineDef, dict[str, DataType], int]]:
    """(key, routine, binding, N) for every selected routine x binding x size, in a fixed order."""
    out = []
    for rid, d in sorted(routines().items()):
        if globs and not any(fnmatch.fnmatchcase(rid, g) for g in globs):
            continue
        for binding in d.bindings():
            types = ",".join(t.value for t in binding.values())
            for size in ROUTINE_SIZES:
                out.append((f"routine:{rid}[{types}]@{size}", d, binding, size))
    return out


class _Dispatcher:
    """The runner seen as a backend with ``dispatch`` (what CompiledRoutine.run_host calls)."""

    def __init__(self, runner: Runner) -> None:
        self.runner = runner

    def dispatch(self, program: Any, inputs: Mapping[str, np.ndarray], config: DispatchConfig) -> list[np.ndarray]:
        return self.runner.run(program, [inputs[b.name] for b in program.inputs], config.grid)


def _rng(seed: int, key: str, size: int) -> np.random.Generator:
    digest = hashlib.sha256(f"{seed}|{key}|{size}".encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "little"))


def sample_call(compiled: CompiledRoutine, size: int, rng: np.random.Generator) -> tuple[list[np.ndarray], dict[str, int]]:
    """Inputs and attributes for a unit of size N (see the module docstring)."""
    d = compiled.routine
    scope = {"N": size}
    attrs = {a: d.sample[a].evaluate({}, scope) for a in d.attrs}
    arrays = []
    for spec in d.inputs:
        n = d.sample[spec.name].evaluate({}, scope) if spec.name in d.sample else size
        t = compiled.dtypes[spec.name]
        store = np.dtype(t.storage_dtype)
        words = rng.integers(0, 256, n * store.itemsize, dtype=np.uint8).view(store)
        if t.is_float:
            normal = rng.standard_normal(n).astype(store)
            words = np.where(rng.random(n) < 0.75, normal, words)
        else:
            small = rng.integers(0, max(n, 1), n).astype(store)
            words = np.where(rng.random(n) < 0.5, small, words)
        arrays.append(np.ascontiguousarray(words))
    return arrays, attrs


def _differences(compiled: CompiledRoutine, expected: list[np.ndarray], actual: list[np.ndarray]) -> list[tuple[str, np.ndarray]]:
    wrong = []
    for spec, e, a in zip(compiled.routine.outputs, expected, actual):
        bad = buffer_mismatches(compiled.dtypes[spec.name], e, a)
        if bad.size:
            wrong.append((spec.name, bad))
    return wrong


def run_routine(runner: Runner, reference: Any, registry: Registry, seed: int, key: str, d: RoutineDef,
                binding: dict[str, DataType], size: int) -> tuple[int, int, list[dict[str, Any]]]:
    """(cases, passed, failures) of one routine unit; a failure is a dict for ``Failure``."""
    compiled = CompiledRoutine(d, binding, registry)
    backend = _Dispatcher(runner)

    def attempt(n: int) -> tuple[list[np.ndarray], list[np.ndarray], list[tuple[str, np.ndarray]], dict[str, int]]:
        arrays, attrs = sample_call(compiled, n, _rng(seed, key.rpartition("@")[0], n))
        expected = compiled.run_host(reference, arrays, attrs)
        actual = compiled.run_host(backend, arrays, attrs)
        return expected, actual, _differences(compiled, expected, actual), attrs

    kats = _known_answers(compiled, backend) if size == ROUTINE_SIZES[0] else (0, [])
    try:
        expected, actual, wrong, attrs = attempt(size)
    except CaseError as err:
        return 1 + kats[0], 0, [{"kind": "error", "message": f"the backend could not run {d.id} (N={size}): {err}",
                                 "details": {"routine": d.id, "size": size}}]
    cases = (sum(max(1, e.size) for e in expected) or 1) + kats[0]
    if not wrong:
        return cases, cases - len(kats[1]), kats[1]
    smallest = size
    for n in sorted({size // 2 ** k for k in range(1, 16)} | {s for s in ROUTINE_SIZES if s < size}, reverse=True):
        try:
            _, _, now, _ = attempt(n)
        except (CaseError, Exception):  # noqa: BLE001 - a smaller size that cannot run does not shrink
            continue
        if now:
            smallest = n
    name, bad = wrong[0]
    failed = sum(int(b.size) for _, b in wrong)
    message = (f"{d.id} (N={size}): {name}[{int(bad[0])}] differs from the reference ({failed} element(s)); "
               f"the smallest N that still differs is {smallest}")
    return cases, max(0, cases - failed - len(kats[1])), kats[1] + [
        {"kind": "backend", "message": message, "details": {"routine": d.id, "size": size, "shrunk_to": smallest,
                                                            "buffer": name, "index": int(bad[0]), "attrs": attrs}}]


def _known_answers(compiled: CompiledRoutine, backend: Any) -> tuple[int, list[dict[str, Any]]]:
    """(cases, failures) of the routine's known answers for this binding run on the backend under
    test: a unit compares the backend with the known answers, not only with the reference (which,
    certified against itself, could not fail)."""
    failures = []
    cases = [c for c in compiled.routine.kats if applies(c, compiled.binding)]
    for case in cases:
        try:
            problem = run_kat(compiled, case, backend)
        except CaseError as err:
            failures.append({"kind": "error", "message": f"the backend could not run a known answer of "
                             f"{compiled.routine.id}: {err}", "details": {"routine": compiled.routine.id}})
            continue
        if problem is not None:
            failures.append({"kind": "kat", "message": f"{problem.location}: {problem.message}",
                             "details": {"routine": compiled.routine.id, "case": case.where}})
    return len(cases), failures
