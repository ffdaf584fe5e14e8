"""Loading routine files (``*.routines.toml``): every file checked whole, a bad one rejected whole, the rest loaded.

Routine files come from ``routines/`` at the repository root (``vyre_decl/_routines`` in a
wheel) when the registry holds the standard ops, and from the registry's other sources
(``VYRE_DECL_OPS_PATH``, the paths given to ``load_registry``), beside op files. Each file is
read on its own (``files.py``: bytes, TOML, schema, family, kernels), then its routines are built
(``build.py``) against the registry, and every kernel a routine runs is parsed and validated for
the routine's first binding. Only accepted files share their kernels (``family.kernel``): a file
rejected for any reason supplies none, and a file that used one of its kernels is judged again
without it, until no more files fall. A file with any error is rejected whole, with its
diagnostics and a U020; nothing a file holds raises (U021 marks a loader bug, still reported).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Sequence

from ..ir.diagnostics import Diagnostic, VyreError
from ..registry import Registry
from ..registry.sources import ROUTINE_SUFFIX, read_bytes
from .model import KernelDef, RoutineDef
from .snapshot import read_routines, routines_key, write_routines

if TYPE_CHECKING:
    from .files import RoutineFile

__all__ = ["standard_routines_dir", "routine_files", "load_routine_files", "load_routines"]


def standard_routines_dir() -> Path:
    pkg = Path(__file__).resolve().parent.parent
    for candidate in (pkg / "_routines", pkg.parent / "routines"):
        if candidate.is_dir():
            return candidate
    return pkg / "_routines"


def routine_files(registry: Registry) -> list[Path]:
    """The routine files beside a registry's op files: the standard ones (when it holds the
    standard ops), then those of its other directories, and routine files named directly."""
    sources: list[Path] = ([standard_routines_dir()] if registry.standard else []) + list(registry.search_paths)
    files: list[Path] = []
    for src in sources:
        try:
            if src.is_dir():
                files.extend(sorted(src.glob("*" + ROUTINE_SUFFIX)))
            elif src.name.endswith(ROUTINE_SUFFIX):
                files.append(src)
        except OSError:
            continue  # the op loader reports a source it cannot list (R016)
    seen: set[Path] = set()
    unique = []
    for f in files:
        key = f.resolve() if f.exists() else f
        if key not in seen:
            seen.add(key)
            unique.append(f)
    return unique


def load_routines(registry: Registry, snapshot: bool = True) -> tuple[dict[str, RoutineDef], list[Diagnostic]]:
    """``load_routine_files`` through a snapshot: a process whose routine files, registry and
    code are those of a snapshot loads it instead of checking every kernel again."""
    blobs = [(path, read_bytes(path)) for path in routine_files(registry)]
    key = routines_key(registry, blobs) if snapshot else None
    if key is not None:
        cached = read_routines(key)
        if cached is not None:
            return cached
    found, diags = load_routine_files(registry, blobs)
    if key is not None:
        write_routines(key, found, diags)
    return found, diags


def load_routine_files(registry: Registry, blobs: Sequence[tuple[Path, bytes | OSError]] | None = None,
                       ) -> tuple[dict[str, RoutineDef], list[Diagnostic]]:
    """Every routine of the files beside ``registry``'s op files (or of ``blobs``: files and the
    bytes read from them), by id, and the diagnostics of the rejected files."""
    from .build import where  # the checking machinery: only when no snapshot serves
    from .files import read_routine_file

    if blobs is None:
        blobs = [(path, read_bytes(path)) for path in routine_files(registry)]
    parsed = [read_routine_file(path, data) for path, data in blobs]
    rejected: dict[Path, list[Diagnostic]] = {f.path: f.problems for f in parsed if f.problems}
    while True:  # until no more files fall: a file may rely on the kernels of one rejected later
        accepted = [f for f in parsed if f.path not in rejected]
        shared: dict[str, KernelDef] = {}
        for f in accepted:
            for k in f.kernels.values():
                shared.setdefault(k.qualified, k)
        gone = {k.qualified: str(f.path) for f in parsed if f.path in rejected for k in f.kernels.values()}
        built = {f.path: _judge(f, shared, gone, registry) for f in accepted}
        fallen = {path: diags for path, (_, diags) in built.items() if diags}
        if not fallen:
            break
        rejected.update(fallen)
    found: dict[str, RoutineDef] = {}
    diags: list[Diagnostic] = []
    for f in parsed:
        problems = rejected.get(f.path, [])
        if not problems:
            problems = [Diagnostic("U003", f"routine {r.id!r} is already defined by {found[r.id].file}",
                                   where(f.path, r.id, "id"), "give the routine another id")
                        for r in built[f.path][0] if r.id in found]
        if problems:
            diags.extend(problems)
            diags.append(Diagnostic("U020", "the file is rejected: none of its routines is registered", str(f.path),
                                    "fix the errors reported for it"))
            continue
        found.update({r.id: r for r in built[f.path][0]})
    return found, diags

def _judge(f: RoutineFile, shared: dict[str, KernelDef], gone: dict[str, str],
           registry: Registry) -> tuple[list[RoutineDef], list[Diagnostic]]:
    """The routines of one file built against the shared kernels, each kernel checked for the
    routine's first binding; the diagnostics are empty when the file is accepted."""
    from .build import build_routines

    diags: list[Diagnostic] = []
    try:
        kernels = {**shared, **f.kernels}
        routines = build_routines(f.raw_routines, f.family, f.path, kernels, registry, diags, f.classes)
        diags[:] = [_gone(d, gone) for d in diags]
        if not diags:
            diags.extend(_check_kernels(routines, registry))
    except Exception as exc:  # noqa: BLE001 - the promise: nothing in a file raises
        diags.append(_bug(f.path, exc))
        return [], diags
    return routines, diags


def _gone(d: Diagnostic, gone: dict[str, str]) -> Diagnostic:
    """An unknown-kernel error that names the rejected file the kernel is in."""
    name = d.message.partition("unknown kernel '")[2].partition("'")[0]
    if d.code != "U010" or name not in gone:
        return d
    return Diagnostic(d.code, f"{d.message}: its file {gone[name]} was rejected", d.location, f"fix {gone[name]} first")


def _check_kernels(routines: Iterable[RoutineDef], registry: Registry) -> list[Diagnostic]:
    """Each routine's kernels parsed and validated for its first binding (the others when called,
    and all of them by ``ops check``)."""
    from .runner import CompiledRoutine

    out: list[Diagnostic] = []
    for r in routines:
        try:
            CompiledRoutine(r, r.bindings()[0], registry)
        except VyreError as exc:
            out.extend(exc.diagnostics)
    return out


def _bug(path: Path, exc: BaseException) -> Diagnostic:
    return Diagnostic("U021", f"the routine loader failed on this file ({type(exc).__name__}: {str(exc)[:200]})",
                      str(path), "simplify the file around the construct named; this is a loader bug worth reporting")
