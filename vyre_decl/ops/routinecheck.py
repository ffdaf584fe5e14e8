"""``ops check`` for routine files: every routine loaded, every binding compiled, every known answer run.

``python -m vyre_decl.ops check PATHS`` loads the routine files beside the op files it checks
(``*.routines.toml`` of the same directories, or named directly) through the routine loader, so a
file is held to the schema, its kernels to the parser and validator and its ``with`` values to
the registry exactly as at load (U001 ... U022). Beyond loading, it compiles every kernel of
every binding (loading checks the first) and runs every known answer of every binding on the
reference (U025 for a wrong one, naming the case). With paths only the routines of those paths
are checked beyond loading (the standard ones are the project's tests' business); without, all.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..backends import acquire
from ..ir.diagnostics import Diagnostic, VyreError
from ..registry import Registry
from ..routines.katrun import applies, run_kat
from ..routines.loader import load_routines, routine_files, standard_routines_dir
from ..routines.model import RoutineDef
from ..routines.runner import CompiledRoutine

__all__ = ["RoutineReport", "check_routine", "check_routines", "selected_routines"]


@dataclass
class RoutineReport:
    """What was checked: routine files, routines, bindings compiled, known answers run."""

    files: int = 0
    routines: int = 0
    bindings: int = 0
    kats: int = 0
    diagnostics: list[Diagnostic] = field(default_factory=list)

    def as_dict(self) -> dict[str, int]:
        return {"files": self.files, "routines": self.routines, "bindings": self.bindings, "kats": self.kats}

    def summary(self) -> str:
        return (f"{self.routines} routines from {self.files} routine file(s) ({self.bindings} bindings compiled, "
                f"{self.kats} known answers run on the reference)")


def selected_routines(routines: dict[str, RoutineDef], registry: Registry, only_paths: bool) -> list[RoutineDef]:
    if not only_paths:
        return [routines[rid] for rid in sorted(routines)]
    std = str(standard_routines_dir())
    return [routines[rid] for rid in sorted(routines) if not routines[rid].file.startswith(std)]


def check_routine(d: RoutineDef, registry: Registry, backend: object, report: RoutineReport) -> None:
    for binding in d.bindings():
        try:
            compiled = CompiledRoutine(d, binding, registry)
        except VyreError as exc:
            report.diagnostics.extend(exc.diagnostics)
            continue
        report.bindings += 1
        for case in d.kats:
            if applies(case, binding):
                report.kats += 1
                problem = run_kat(compiled, case, backend)
                if problem is not None:
                    report.diagnostics.append(problem)


def check_routines(registry: Registry, only_paths: bool = False) -> RoutineReport:
    """Load and check the routine files beside ``registry``'s op files (``only_paths``: beyond
    loading, check only the routines of the registry's explicit paths)."""
    report = RoutineReport(files=len(routine_files(registry)))
    found, diags = load_routines(registry)
    report.diagnostics.extend(diags)
    report.routines = len(found)
    backend = acquire("reference", registry=registry)
    for d in selected_routines(found, registry, only_paths):
        check_routine(d, registry, backend, report)
    return report

