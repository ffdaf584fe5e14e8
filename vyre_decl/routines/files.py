"""Reading one routine file on its own: bytes, TOML, schema, the family, its classes and its kernels.

Whatever the file holds — a FIFO or device under a routine file's name, bytes past the size
limit, bad UTF-8 or TOML, integers of thousands of digits, arrays nested thousands deep, values
of the wrong kind anywhere — becomes a diagnostic of this file (``problems``), never an exception
(the TOML reading and size cap are the op loader's own: ``registry/sources.py``). Schema
problems get the code of the part they are in (U002 the file and ``[family]``, U004 a kernel,
U005 a routine key or a class, U006 to U011, U016 and U018 the routine's fields, in a routine or
in a ``[class.NAME]`` table); so do the classes' own problems (``registry/classes.py``: U005). A kernel's ``$name``
parameters are found here, with where each is used (``params.py``): every parameter declared,
every declared one used, none used as two kinds of thing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from ..ir.diagnostics import Diagnostic
from ..ir.lexer import ParseError
from ..registry.classes import class_problems
from ..registry.files import semver_key
from ..registry.sources import MAX_FILE_BYTES, TomlProblem, parse_toml, read_bytes
from .build import where
from .model import KernelDef
from .params import mixed_uses, param_uses
from .schema import check_routine_shape

__all__ = ["RoutineFile", "read_routine_file"]

NAME: Final = re.compile(r"[a-z_][a-z0-9_]*\Z")
MAX_KERNELS: Final = 256
MAX_ROUTINES: Final = 1000
# the code of a schema problem by the routine field it is in
_FIELD_CODES: Final = {"types": "U006", "with": "U007", "buffers": "U008", "written": "U008", "require": "U009",
                       "steps": "U010", "then": "U010", "kat": "U011", "attrs": "U016", "sample": "U018"}
_STEP_CODES: Final = {"types": "U006", "with": "U007", "grid": "U009", "repeat": "U009"}


@dataclass
class RoutineFile:
    """One routine file read on its own: its family, kernels, class tables and raw routine tables
    (shape checked), and its problems so far (any problem rejects the file)."""

    path: Path
    family: str = ""
    kernels: dict[str, KernelDef] = field(default_factory=dict)
    raw_routines: list[dict[str, Any]] = field(default_factory=list)
    classes: dict[str, dict[str, Any]] = field(default_factory=dict)  # the [class.NAME] tables (shape checked)
    problems: list[Diagnostic] = field(default_factory=list)

    def bad(self, code: str, message: str, fix: str, rid: str | None = None, fld: str | None = None) -> None:
        self.problems.append(Diagnostic(code, message, where(self.path, rid, fld), fix))


def read_routine_file(path: Path, data: bytes | OSError | None = None) -> RoutineFile:
    """Read and check one routine file on its own (its routines are built by ``build.py``);
    ``data``: its bytes as already read (so a snapshot key and the routines agree)."""
    f = RoutineFile(path)
    try:
        _read(f, read_bytes(path) if data is None else data)
    except Exception as exc:  # noqa: BLE001 - the promise: nothing in a file raises
        f.bad("U021", f"the routine loader failed on this file ({type(exc).__name__}: {str(exc)[:200]})",
              "simplify the file around the construct named; this is a loader bug worth reporting")
    return f


def _code(rid: str | None, fld: str) -> str:
    if fld == "class" or fld.startswith("class."):  # a class table, or a routine's class: U005; a class's key: its field's
        return _code("", fld.split(".", 2)[2]) if fld.count(".") >= 2 else "U005"
    if rid is None and not fld.startswith("routine["):
        return "U004" if fld.startswith("kernel") else "U002"
    path = re.sub(r"\Aroutine\[\d+\]\.", "", fld)
    head = re.split(r"[.\[]", path, maxsplit=1)[0]
    if head in ("steps", "then"):  # a step's own key: its types, with, grid or repeat; else the step
        return _STEP_CODES.get(path.rpartition(".")[2], "U010")
    return _FIELD_CODES.get(head, "U005")


def _read(f: RoutineFile, data: bytes | OSError) -> None:
    if isinstance(data, OSError):
        f.bad("U001", f"cannot read the file: {data.strerror or data}", "check the path and its permissions (a routine "
              "file is a regular file)")
        return
    if len(data) > MAX_FILE_BYTES:
        f.bad("U001", f"the file is over {MAX_FILE_BYTES:,} bytes", "split it into several routine files")
        return
    try:
        doc = parse_toml(data)
    except TomlProblem as exc:
        f.bad("U001", exc.message, exc.fix)
        return
    for rid, fld, message, fix in check_routine_shape(doc):
        f.bad(_code(rid, fld), message, fix or "see docs/routines.md", rid, fld)
    if f.problems:
        return
    family = doc["family"]
    if not NAME.match(family["name"]):
        f.bad("U002", f"family name {family['name'][:60]!r} is not a lower-case name", 'write name = "reduce"', fld="family.name")
    if semver_key(family["version"]) is None:
        f.bad("U002", f"version {family['version'][:60]!r} is not a semantic version", "write MAJOR.MINOR.PATCH, e.g. 1.0.0",
              fld="family.version")
    kernels, routines = doc.get("kernel", {}), doc.get("routine", [])
    if len(kernels) > MAX_KERNELS or len(routines) > MAX_ROUTINES:
        f.bad("U002", f"a file has at most {MAX_KERNELS} kernels and {MAX_ROUTINES} routines", "split the file")
    if f.problems:
        return
    for rid, fld, message, fix in class_problems(doc.get("class", {}), routines, "routine"):
        f.bad("U005", message, fix or "see docs/routines.md", rid, fld)
    if f.problems:
        return
    f.family = family["name"]
    f.classes = doc.get("class", {})
    text = data.decode("utf-8")
    for name, k in kernels.items():
        kernel = _kernel(f, name, k, text)
        if kernel is not None:
            f.kernels[name] = kernel
    f.raw_routines = routines


def _kernel(f: RoutineFile, name: str, k: dict[str, Any], text: str) -> KernelDef | None:
    fld = f"kernel.{name}"
    params = k.get("params", [])
    if not NAME.match(name):
        f.bad("U004", f"bad kernel name {name[:60]!r}", "name kernels in lower case", fld=fld)
        return None
    if not all(NAME.match(p) for p in params) or len(set(params)) != len(params):
        f.bad("U004", "params must be distinct lower-case names", 'write params = ["combine", "identity"]', fld=f"{fld}.params")
        return None
    source = k["source"]
    at = text.find(source) if source.strip() else -1
    line = text.count("\n", 0, at) + 1 if at >= 0 else 1
    try:
        uses = param_uses("\n" * (line - 1) + source, str(f.path))  # errors at the file's line:col
    except ParseError as exc:
        d = exc.diagnostics[0]
        f.bad("U004", f"{d.code} at {d.location}: {d.message}", d.fix, fld=f"{fld}.source")
        return None
    undeclared = sorted(set(uses) - set(params))
    unused = [p for p in params if p not in uses]
    mixed = mixed_uses(uses)
    if undeclared or unused or mixed:
        message = (f"the source uses ${undeclared[0]}, which is not in params" if undeclared else
                   f"params lists {unused[0]}, which the source never uses" if unused else f"{mixed}: no value is both")
        f.bad("U004", message, "declare in params exactly the $names the source uses, each for one kind of thing",
              fld=f"{fld}.params")
        return None
    return KernelDef(name, k.get("summary", ""), tuple(params), source, f.family, str(f.path), line,
                     tuple(sorted(uses.items())))
