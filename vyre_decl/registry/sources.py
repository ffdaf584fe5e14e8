"""Where op files come from and how they are read: the standard op directory, the directories of
``VYRE_DECL_OPS_PATH``, the files of a directory, and the size cap every read respects. A leaf of
the registry package (the loader and the file checker both use it)."""

from __future__ import annotations

import errno
import math
import os
import stat
import tomllib
from pathlib import Path
from typing import Any, Final, Iterable

from ..ir.diagnostics import Diagnostic

__all__ = ["ENV_VAR", "ROUTINE_SUFFIX", "MAX_FILE_BYTES", "read_bytes", "parse_toml", "TomlProblem", "standard_ops_dir",
           "env_ops_dirs", "op_files"]

ENV_VAR: Final = "VYRE_DECL_OPS_PATH"
ROUTINE_SUFFIX: Final = ".routines.toml"  # routine files share the op directories; vyre_decl.routines reads them
MAX_FILE_BYTES: Final = 1 << 20


def read_bytes(path: Path) -> bytes | OSError:
    """An op or routine file's bytes (at most one byte more than the size limit), or the error
    reading it. Only a regular file is read: a FIFO, a device or a socket with a file's name is
    opened without blocking and refused, so it can never stall the loader."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        return exc
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return OSError(errno.EINVAL, "not a regular file (a FIFO, device or socket is never read)")
        with os.fdopen(fd, "rb", closefd=False) as fh:
            return fh.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        return exc
    finally:
        os.close(fd)


class TomlProblem(ValueError):
    """Bytes that are not a readable TOML document: ``message`` and ``fix`` say why."""

    def __init__(self, message: str, fix: str) -> None:
        super().__init__(message)
        self.message, self.fix = message, fix


def _finite_float(text: str) -> float:
    """TOML floats, refusing a finite spelling that overflows to infinity (``1e400``)."""
    value = float(text)
    if math.isinf(value) and "inf" not in text:
        raise ValueError(f"the float {text} is out of range (write inf for infinity)")
    return value


def parse_toml(data: bytes) -> dict[str, Any]:
    """The TOML document of an op or routine file. Whatever a hostile file holds (bad UTF-8 or
    syntax, integers of thousands of digits, floats past the range, arrays nested thousands deep)
    is a ``TomlProblem``, never another exception."""
    try:
        return tomllib.loads(data.decode("utf-8"), parse_float=_finite_float)
    except UnicodeDecodeError as exc:
        raise TomlProblem(f"the file is not UTF-8 (byte {exc.start})", "save it as UTF-8") from None
    except tomllib.TOMLDecodeError as exc:
        raise TomlProblem(f"TOML syntax error: {exc}", "fix the TOML syntax at that line") from None
    except RecursionError:
        raise TomlProblem("the TOML nests arrays or tables too deeply to read", "flatten the nesting") from None
    except (ValueError, OverflowError, MemoryError) as exc:  # e.g. an integer of thousands of digits
        raise TomlProblem(f"a TOML value cannot be read: {exc}", "use numbers that fit 64 bits") from None


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
                if not src.name.endswith(ROUTINE_SUFFIX):  # a routine file named alone: the routine loader's
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
