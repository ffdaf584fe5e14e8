"""Running a routine's known answers: each case of a binding on a backend, compared with the answer.

A known answer is the mathematical value, rounded: integer (and bool) outputs must match exactly,
float outputs within ``KAT_ULP`` units in the last place, NaN matching NaN and a zero matching a
zero of either sign. ``ops check`` runs every case of every binding on the reference and
``conform --routines`` on the backend it certifies, so a wrong answer in a user's routine file
fails there (U025, naming the file, the routine, the case and the binding), not only in the
project's own tests.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from ..ir.diagnostics import Diagnostic, VyreError
from ..ir.types import DataType
from .model import KatCase, RoutineDef
from .runner import CompiledRoutine

__all__ = ["KAT_ULP", "applies", "kat_inputs", "kat_mismatch", "run_kat"]

KAT_ULP = 4


def applies(case: KatCase, binding: Mapping[str, DataType]) -> bool:
    """Whether ``case`` is a known answer of ``binding`` (its first type variable in the set)."""
    first = next(iter(binding.values()), None)
    return case.within is None or first in case.within


def kat_inputs(compiled: CompiledRoutine, case: KatCase) -> list[np.ndarray]:
    return [np.array(v, dtype=compiled.dtypes[s.name].storage_dtype) for s, v in zip(compiled.routine.inputs, case.inputs)]


def _ordered(a: np.ndarray) -> np.ndarray:
    """Floats mapped to integers in the order of the values (adjacent floats differ by 1)."""
    bits = a.view(np.int32 if a.dtype.itemsize == 4 else np.int64).astype(np.int64)
    return np.where(bits < 0, np.iinfo(bits.dtype).min - bits, bits)


def _ulps(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    both_nan = np.isnan(got) & np.isnan(want)
    zeros = (got == 0) & (want == 0)
    far = np.abs(_ordered(got) - _ordered(want))
    return np.where(both_nan | zeros, 0, np.where(np.isnan(got) | np.isnan(want), np.iinfo(np.int64).max, far))


def kat_mismatch(compiled: CompiledRoutine, case: KatCase, outputs: list[np.ndarray]) -> str | None:
    """What differs between a call's ``outputs`` and the known answer ``case`` (None: nothing)."""
    for spec, got, values in zip(compiled.routine.outputs, outputs, case.outputs):
        t = compiled.dtypes[spec.name]
        want = np.array(values, dtype=t.storage_dtype)
        got = np.asarray(got).ravel()
        if got.shape != want.shape:
            return f"{spec.name} has {got.size} element(s), the known answer {want.size}"
        if want.dtype.kind == "f" and want.dtype.itemsize in (4, 8):
            bad = np.nonzero(_ulps(got, want) > KAT_ULP)[0]
        else:
            bad = np.nonzero(got != want)[0]
        if bad.size:
            i = int(bad[0])
            return (f"{spec.name}[{i}] is {got[i].item()!r}, the known answer {want[i].item()!r} "
                    f"({bad.size} element(s) differ{'' if want.dtype.kind != 'f' else f' by more than {KAT_ULP} ULP'})")
    return None


def run_kat(compiled: CompiledRoutine, case: KatCase, backend: Any) -> Diagnostic | None:
    """One known answer of a compiled routine on ``backend`` (anything with ``dispatch``): a U025
    when it differs or cannot run, else None."""
    d: RoutineDef = compiled.routine
    shown = ", ".join(f"{k}={t.value}" for k, t in compiled.binding.items()) or "the routine"
    loc = f"{d.file} [routine {d.id}] {case.where or 'kat'}"
    try:
        outputs = compiled.run_host(backend, kat_inputs(compiled, case), case.attrs)
    except VyreError as exc:
        first = exc.diagnostics[0] if exc.diagnostics else None
        what = f"{first.code} {first.message}" if first else str(exc)
        return Diagnostic("U025", f"the known answer cannot run for {shown}: {what}", loc,
                          "give inputs and attributes the routine takes")
    problem = kat_mismatch(compiled, case, outputs)
    if problem is None:
        return None
    return Diagnostic("U025", f"the known answer disagrees for {shown}: {problem}", loc,
                      "fix the known answer (or the routine, if the answer is right)")
