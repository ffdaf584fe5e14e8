"""Loading a registry: which op files, a snapshot if one is valid, else read, check and link them.

Sources are the standard op directory, the directories named by ``VYRE_DECL_OPS_PATH`` and any
explicit paths. The validated registry is snapshotted (``snapshot.py``), keyed by the bytes of
every source, so a second process loads it without pydantic and without re-checking.

Codes (every diagnostic names the file, the op and the field, and ends with a Fix):
R001 TOML syntax, encoding, unreadable values   R002 schema (unknown/missing key, wrong type)
R003 bad dialect or op id                        R004 op id declared twice in one file
R005 op id or dialect version twice              R006 bad signature or type set
R007 bad template placeholder / result unwritten R008 missing or misplaced PTX template
R009 compose does not parse                      R010 compose does not type-check
R011 bad known-answer test                       R012 bad reference function
R013 a binding has no reference                  R014 bad law or waiver
R015 file too large (1 MiB, 1000 ops, 8192 bindings) R016 unreadable file or op directory
R017 bad semantic version                        R018 note: dialect shadowed by a higher version
R019 bad ULP budget                              R020 file rejected because of another problem
R021 bad attribute                               R022 bad atomic op shape
R023 compose cycle                               R024 template is not a list of instructions
R025 template writes or reads a wrong register   R026 template instruction not allowed
R027 template operand is not a placeholder       R028 unknown or bad class
R029 the loader failed on the file (a bug)    R033 compose too large or too deep once inlined
R034 a registry snapshot entry is unreadable    R035 unknown trait
R036 compose unrolls past 8,192 steps or rounds  R037 a file's compose work over 262,144
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

from ..ir.diagnostics import Diagnostic
from .registry import Registry
from .snapshot import read_snapshot, snapshot_key, write_snapshot
from .sources import ENV_VAR, MAX_FILE_BYTES, ROUTINE_SUFFIX, env_ops_dirs, op_files, read_bytes, standard_ops_dir

__all__ = ["load", "standard_ops_dir", "env_ops_dirs", "read_bytes", "ENV_VAR", "MAX_FILE_BYTES", "ROUTINE_SUFFIX"]

def load(
    paths: Sequence[str | os.PathLike[str]] = (),
    *,
    standard: bool = True,
    env: bool = True,
    snapshot: bool = True,
) -> Registry:
    """Load the standard ops, the directories in VYRE_DECL_OPS_PATH and ``paths`` (directories
    or files). Bad files are rejected whole and reported in ``Registry.diagnostics``; this never
    raises for anything in an op file. ``snapshot=False`` ignores and does not write snapshots.
    The registry remembers its sources (``standard``, ``search_paths``): routine files beside the
    op files come from the same directories (``vyre_decl.routines.routines(registry)``)."""
    diags: list[Diagnostic] = []
    sources: list[Path] = [standard_ops_dir()] if standard else []
    if env:
        sources += env_ops_dirs(diags)
    sources += [Path(p) for p in paths]
    registry = _load(sources, diags, snapshot)
    registry.standard, registry.search_paths = standard, tuple(sources[1:] if standard else sources)
    return registry


def _load(sources: list[Path], diags: list[Diagnostic], snapshot: bool) -> Registry:
    blobs = [(f, read_bytes(f)) for f in op_files(sources, diags)]  # read once: the key and the registry agree
    key = snapshot_key(blobs, diags) if snapshot else None
    if key is not None:
        cached = read_snapshot(key)
        if cached is not None:
            return cached
    from .files import read_op_file  # the checking machinery: only when no snapshot serves
    from .link import link

    results = [read_op_file(f, data) for f, data in blobs]
    for r in results:
        diags.extend(r.diags)
    registry = link(results, diags)
    if key is not None:
        write_snapshot(key, registry)
    return registry
