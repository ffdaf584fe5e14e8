"""Routine snapshots: the checked routines of a registry's routine files, kept in the disk cache.

Checking routine files at load parses and validates every kernel a routine runs, which costs
about half a second for the standard library; a snapshot keeps the result (the routines and the
diagnostics) so a second process loads them in milliseconds. The key hashes the snapshot format,
the package version, the code that checks (``routines/``, ``registry/``, ``ir/``: size and
mtime of each module), the registry's fingerprint and sources, and the path and bytes of every
routine file, so an edit of any of them is a miss. Snapshots live beside the registry's
(``DiskCache`` kind ``registry``; the format in the key keeps them apart): checksummed with the cache's secret,
and unpickled by a loader that resolves only the classes routines are made of.
"""

from __future__ import annotations

import hashlib
import io
import pickle
from pathlib import Path
from typing import Any, Final, Sequence

from ..diskcache import DiskCache, cache_dir, warn
from ..ir.diagnostics import Diagnostic
from ..registry import Registry
from .model import RoutineDef

__all__ = ["routines_key", "read_routines", "write_routines", "SNAPSHOT_FORMAT"]

SNAPSHOT_FORMAT: Final = "vyre_decl.routines-snapshot/2"  # bump when RoutineDef or the checks change
_PACKAGE: Final = Path(__file__).resolve().parent.parent
_ALLOWED: Final = frozenset({
    *(("vyre_decl.routines.model", n) for n in ("RoutineDef", "KernelDef", "BufferSpec", "StepDef", "RepeatDef", "KatCase")),
    ("vyre_decl.routines.sizes", "restore_size"),
    ("vyre_decl.ir.types", "DataType"),
    ("vyre_decl.ir.diagnostics", "Diagnostic"),
    *(("builtins", n) for n in ("frozenset", "set", "tuple", "list", "dict", "bytes", "int", "str", "float", "bool")),
})


class _Unpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _ALLOWED:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"{module}.{name} is not allowed in a routine snapshot")


def routines_key(registry: Registry, blobs: Sequence[tuple[Path, bytes | OSError]]) -> str | None:
    """The snapshot key of the routines of ``blobs`` (each file with its bytes) checked against
    ``registry``; None when a file could not be read (the loader reports it, nothing is cached)."""
    from .._version import __version__

    h = hashlib.sha256(f"{SNAPSHOT_FORMAT}|{__version__}|{registry.fingerprint}|{registry.standard}|".encode())
    try:
        for sub in ("routines", "registry", "ir"):
            for p in sorted((_PACKAGE / sub).glob("*.py")):
                st = p.stat()
                h.update(f"{sub}/{p.name}:{st.st_size}:{st.st_mtime_ns};".encode())
    except OSError:
        return None
    for src in registry.search_paths:
        h.update(f"{src}\0".encode())
    for path, data in blobs:
        if isinstance(data, OSError):
            return None
        h.update(f"{path}\0".encode() + hashlib.sha256(data).digest())
    return h.hexdigest()  # the format string above keeps it apart from registry keys


def _cache() -> DiskCache:
    return DiskCache(cache_dir(), "registry")


def read_routines(key: str) -> tuple[dict[str, RoutineDef], list[Diagnostic]] | None:
    """The routines and diagnostics of snapshot ``key``, or None (missing, stale or unreadable)."""
    payload = _cache().get(key)
    if payload is None:
        return None
    try:
        found, diags = _Unpickler(io.BytesIO(payload)).load()
        if not isinstance(found, dict) or not all(isinstance(r, RoutineDef) for r in found.values()) \
                or not isinstance(diags, list) or not all(isinstance(d, Diagnostic) for d in diags):
            raise pickle.UnpicklingError("not a routine snapshot")
    except Exception as exc:  # noqa: BLE001 - any broken snapshot is rebuilt
        warn("vyre_decl.routines", "vyre_decl: routine snapshot %s is unreadable (%s); rebuilding it", key[:24], exc)
        return None
    return found, diags


def write_routines(key: str, found: dict[str, RoutineDef], diags: list[Diagnostic]) -> None:
    """Store the routines and diagnostics under ``key`` (a failure only means no snapshot)."""
    try:
        payload = pickle.dumps((found, diags), protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as exc:  # noqa: BLE001 - routines that cannot be pickled are simply not cached
        warn("vyre_decl.routines", "vyre_decl: cannot snapshot the routines: %s", exc)
        return
    _cache().put(key, payload)
