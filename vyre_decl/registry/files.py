"""Reading one op file: bytes, TOML, schema, classes, and every op built on its own.

A file is accepted whole or rejected whole: any error in it means none of its ops is registered.
Whatever goes wrong while reading a file — size, encoding, TOML syntax, numbers too large for
Python, nesting too deep, values of the wrong kind — becomes a diagnostic for that file; no
exception escapes, so one bad file cannot take the rest of the registry down.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from ..ir.diagnostics import Diagnostic
from .sources import MAX_FILE_BYTES, TomlProblem, parse_toml, read_bytes
from .model import DialectInfo, OpDef
from ..ir.compose import ComposeBudget
from .opbuild import ID_RE, build_op
from .opsig import location
from .classes import class_problems, with_class
from .schema import check_shape

__all__ = ["FileResult", "read_op_file", "semver_key"]

MAX_OPS_PER_FILE: Final = 1000
MAX_BINDINGS_PER_FILE: Final = 8192  # bounds the time one file can cost the loader
_SEMVER_RE: Final = re.compile(
    r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*)"
    r"(?:\.(?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*))*))?(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?\Z")


def semver_key(version: str) -> tuple[Any, ...] | None:
    """Sort key of a semantic version (pre-releases sort before their release); None if invalid."""
    m = _SEMVER_RE.match(version) if isinstance(version, str) and version.isascii() else None
    if not m:
        return None
    major, minor, patch, pre = m.groups()
    if pre is None:
        return (int(major), int(minor), int(patch), 1, ())
    ids = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in pre.split("."))
    return (int(major), int(minor), int(patch), 0, ids)


@dataclass
class FileResult:
    path: Path
    digest: bytes = b""
    dialect: DialectInfo | None = None
    ops: dict[str, OpDef] = field(default_factory=dict)
    declared: list[str] = field(default_factory=list)
    diags: list[Diagnostic] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not any(d.severity == "error" for d in self.diags)

    def error(self, code: str, message: str, fld: str | None, fix: str, op: str | None = None) -> None:
        self.diags.append(Diagnostic(code, message, location(self.path, op, fld), fix))


def read_op_file(path: Path, data: bytes | OSError | None = None) -> FileResult:
    """Parse and check one op file on its own (cross-file checks come later); ``data`` is its
    bytes as already read (so a snapshot key and the registry come from the same bytes)."""
    res = FileResult(path)
    try:
        _read(res, read_bytes(path) if data is None else data)
    except Exception as exc:  # noqa: BLE001 - the documented promise: no input file raises
        res.ops.clear()
        res.error("R029", f"the loader failed on this file ({type(exc).__name__}: {exc})", None,
                  "simplify the file around the construct named; this is a loader bug worth reporting")
    return res


def _read(res: FileResult, data: bytes | OSError) -> None:
    if isinstance(data, OSError):
        res.error("R016", f"cannot read the file: {data.strerror or data}", None, "check the path and permissions")
        return
    if len(data) > MAX_FILE_BYTES:
        res.error("R015", "the file is larger than 1 MiB", None, "split the dialect into several files")
        return
    res.digest = hashlib.sha256(data).digest()
    try:
        raw = parse_toml(data)
    except TomlProblem as exc:
        res.error("R001", exc.message, None, exc.fix)
        return
    ops_raw = raw.get("op")
    if isinstance(ops_raw, list):
        res.declared = [o["id"] for o in ops_raw if isinstance(o, dict) and isinstance(o.get("id"), str)]
    problems = check_shape(raw)
    for op_id, fld, message, fix in problems:
        res.error("R002", message, fld, fix or "see docs/ops-format.md", op_id)
    if problems:
        return
    name = _dialect(res, raw["dialect"])
    classes: dict[str, dict[str, Any]] = raw.get("class", {})
    ops = raw.get("op", [])
    if len(ops) > MAX_OPS_PER_FILE:
        res.error("R015", f"the file declares {len(ops)} ops; a file may declare at most {MAX_OPS_PER_FILE}", None,
                  "split the dialect into several files")
        return
    for op_id, fld, message, fix in class_problems(classes, ops, "op"):
        res.error("R028", message, fld, fix or "see docs/ops-format.md", op_id)
    _build_ops(res, ops, classes, name)
    if not res.ok:
        res.ops.clear()


def _dialect(res: FileResult, d: dict[str, Any]) -> str:
    """The file's [dialect] table checked and recorded; returns the dialect's name."""
    name, version = d["name"], d["version"]
    if not ID_RE.match(name):
        res.error("R003", f"dialect name {name!r} must be lowercase and dotted", "dialect.name",
                  "use a name such as my_project.math")
    if semver_key(version) is None:
        res.error("R017", f"version {version!r} is not a semantic version", "dialect.version",
                  "write MAJOR.MINOR.PATCH without leading zeros, e.g. 1.0.0")
    res.dialect = DialectInfo(name, version, d.get("summary", ""), tuple(d.get("requires", ())), res.path)
    return name


def _build_ops(res: FileResult, ops: list[dict[str, Any]], classes: dict[str, dict[str, Any]], dialect: str) -> None:
    """Each op of the file built (merged over its class) into ``res.ops``, within the file's
    compose budget and its limit on type combinations."""
    seen: set[str] = set()
    bindings = 0
    budget = ComposeBudget()  # the compose work of the whole file, every binding of every op (R037)
    for op in ops:
        op_id = op["id"]
        if op_id in seen:
            res.error("R004", f"op {op_id!r} is declared twice in this file", "id", "remove or rename one of them", op_id)
            continue
        seen.add(op_id)
        merged = with_class(op, classes)
        if merged is None:  # an unknown class: class_problems reported it
            continue
        fields = merged[0]
        built = build_op(fields, op_id, dialect, res.path, res.diags, budget)
        if built is not None:
            res.ops[op_id] = built
            bindings += len(built.bindings())
            if bindings > MAX_BINDINGS_PER_FILE:
                res.error("R015", f"the file's ops have more than {MAX_BINDINGS_PER_FILE} type combinations", "types",
                          "split the dialect into several files", op_id)
                break
