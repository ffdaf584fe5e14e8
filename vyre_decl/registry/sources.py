"""Where op files come from and how they are read: the standard op directory, the directories of
``VYRE_DECL_OPS_PATH``, the files of a directory, and the size cap every read respects. A leaf of
the registry package (the loader and the file checker both use it)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final, Iterable

from ..ir.diagnostics import Diagnostic

__all__ = ["ENV_VAR", "ROUTINE_SUFFIX", "MAX_FILE_BYTES", "read_bytes", "standard_ops_dir", "env_ops_dirs", "op_files"]

ENV_VAR: Final = "VYRE_DECL_OPS_PATH"
ROUTINE_SUFFIX: Final = ".routines.toml"  # routine files share the op directories; vyre_decl.routines reads them
MAX_FILE_BYTES: Final = 1 << 20


def read_bytes(path: Path) -> bytes | OSError:
    """An op file's bytes (at most one byte more than the size limit), or the error reading it."""
    try:
        with open(path, "rb") as fh:
            return fh.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        return exc


def standard_ops_dir() -> Path:
    """The directory of the standard op files: inside the installed package (``_ops``) or, in a
    source checkout / editable install, ``ops/`` at the repository root."""
    pkg = Path(__file__).resolve().parent.parent
    for candidate in (pkg / "_ops", pkg.parent / "ops"):
        if candidate.is_dir():
            return candidate
    return pkg / "_ops"


def env_ops_dirs(diags: list[Diagnostic] | None = None) -> list[Path]:
    """Directories named by VYRE_DECL_OPS_PATH (os.pathsep-separated)."""
    value = os.environ.get(ENV_VAR, "")
    if not value:
        return []
    dirs = []
    for entry in value.split(os.pathsep):
        if not entry.strip():
            if diags is not None:
                diags.append(Diagnostic("R016", f"{ENV_VAR} has an empty entry", ENV_VAR,
                                        f"remove the stray {os.pathsep!r} from {ENV_VAR}", "warning"))
            continue
        dirs.append(Path(entry))
    return dirs


def op_files(sources: Iterable[Path], diags: list[Diagnostic]) -> list[Path]:
    """The op files of ``sources`` (directories: their ``*.toml`` but routine files, sorted), each
    once; a source that is missing or cannot be listed is an R016 in ``diags``."""
    files: list[Path] = []
    for src in sources:
        try:
            if src.is_dir():
                files.extend(sorted(p for p in src.glob("*.toml") if p.is_file() and not p.name.endswith(ROUTINE_SUFFIX)))
            elif src.is_file():
                files.append(src)
            else:
                diags.append(Diagnostic("R016", "no such op file or directory", str(src),
                                        f"create it or remove it from {ENV_VAR} / the load call"))
        except OSError as exc:
            diags.append(Diagnostic("R016", f"cannot list the op directory: {exc.strerror or exc}", str(src),
                                    "check its permissions"))
    seen: set[Path] = set()
    unique = []
    for f in files:
        key = f.resolve()
        if key not in seen:
            seen.add(key)
            unique.append(f)
    return unique
