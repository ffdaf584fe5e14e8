"""Registry snapshots: a validated registry pickled to the disk cache, keyed by everything it came from.

The key hashes the snapshot format, the package version, the registry and IR code (size and
mtime of their modules), every op file's path and bytes, and the diagnostics found before any
file was read. A snapshot is written atomically (``diskcache``); one that is stale never matches
its key, one that is corrupt fails its checksum or its unpickling and is rebuilt, and a cache
location that cannot be written is tolerated. A snapshot that this cache did not write fails its
checksum, which is keyed by the cache's secret (``diskcache``): it is rebuilt, never trusted. As
a second line, unpickling resolves only vyre_decl classes and a few harmless builtins by their
exact names, so even a cache file made with the secret cannot run code.
"""

from __future__ import annotations

import hashlib
import io
import pickle
from pathlib import Path
from typing import Any, Final, Sequence

from ..diskcache import DiskCache, cache_dir, warn
from ..ir.diagnostics import Diagnostic, VyreError
from .model import OpDef
from .registry import LazyOps, Registry

__all__ = ["snapshot_key", "read_snapshot", "write_snapshot", "SNAPSHOT_FORMAT"]

SNAPSHOT_FORMAT: Final = "vyre_decl.registry-snapshot/6"  # bump when the op format or OpDef changes
_PACKAGE: Final = Path(__file__).resolve().parent.parent


def _code_fingerprint() -> bytes:
    h = hashlib.sha256()
    for sub in ("registry", "ir"):
        for p in sorted((_PACKAGE / sub).glob("*.py")):
            st = p.stat()
            h.update(f"{p.name}:{st.st_size}:{st.st_mtime_ns};".encode())
    return h.digest()


def snapshot_key(sources: Sequence[tuple[Path, bytes | OSError]], diags: Sequence[Diagnostic]) -> str | None:
    """The snapshot key of a registry read from ``sources`` (each op file with the bytes the loader
    read from it); None if a file could not be read: then the loader reports it and caches nothing."""
    from .._version import __version__

    h = hashlib.sha256(f"{SNAPSHOT_FORMAT}|{__version__}|".encode())
    try:
        h.update(_code_fingerprint())
    except OSError:
        return None
    for path, data in sources:
        if isinstance(data, OSError):
            return None
        h.update(f"{path}\0".encode())
        h.update(hashlib.sha256(data).digest())
    for d in diags:
        h.update(f"{d}\0".encode())
    return h.hexdigest()


# The only globals a snapshot may name: the classes a registry is made of (exact names; a dotted
# name would let pickle walk attributes to anything), and harmless builtins.
_ALLOWED: Final = frozenset({
    ("vyre_decl.registry.registry", "Registry"),
    *(("vyre_decl.registry.model", n) for n in ("OpDef", "LawDef", "Template", "Kat", "Compose", "DialectInfo")),
    *(("vyre_decl.ir.signature", n) for n in ("OpSignature", "Param", "AttrSig")),
    *(("vyre_decl.ir.nodes", n) for n in ("Lit", "Var", "Load", "BufLen", "Id", "Op", "Select", "Atomic", "IdKind",
                                          "Wait", "MemoryOrder", "MemoryScope")),
    ("vyre_decl.ir.types", "DataType"),
    ("vyre_decl.ir.diagnostics", "Diagnostic"),
    ("pathlib", "PosixPath"), ("pathlib", "WindowsPath"),
    *(("builtins", n) for n in ("frozenset", "set", "tuple", "list", "dict", "bytes", "int", "str", "float", "bool")),
})


class _Unpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _ALLOWED:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"{module}.{name} is not allowed in a registry snapshot")


def _cache() -> DiskCache:
    return DiskCache(cache_dir(), "registry")


def _unpickle(data: bytes) -> Any:
    return _Unpickler(io.BytesIO(data)).load()


def read_snapshot(key: str) -> Registry | None:
    """The registry of snapshot ``key``, or None. Its ops stay pickled until first used."""
    payload = _cache().get(key)
    if payload is None:
        return None
    try:
        dialects, diagnostics, sources, rejected, fingerprint, raw = _unpickle(payload)
        if not isinstance(raw, dict) or not all(isinstance(v, bytes) for v in raw.values()):
            raise pickle.UnpicklingError("the ops are not a dict of pickles")
    except Exception as exc:  # noqa: BLE001 - any broken snapshot is rebuilt
        warn("vyre_decl.registry", "vyre_decl: registry snapshot %s is unreadable (%s); rebuilding it", key[:16], exc)
        return None
    return Registry.restore(dialects, diagnostics, sources, rejected, fingerprint, LazyOps(raw, _op))


def _op(data: bytes) -> Any:
    """One op of a snapshot, unpickled on first use; a payload that passed the cache's checksum but
    is not an op (a file planted in the cache) is R034, never a raw unpickling error."""
    try:
        op = _unpickle(data)
    except Exception as exc:  # noqa: BLE001 - whatever the payload does wrong, it is refused alike
        raise VyreError.one("R034", f"an op of the registry snapshot cannot be read back ({exc})", str(_cache().root),
                            "clear the cache: python -m vyre_decl.cache clear --kind registry") from None
    if not isinstance(op, OpDef):
        raise VyreError.one("R034", f"a registry snapshot entry holds a {type(op).__name__}, not an op",
                            str(_cache().root), "clear the cache: python -m vyre_decl.cache clear --kind registry")
    return op


def write_snapshot(key: str, registry: Registry) -> None:
    """Store ``registry`` under ``key``: its parts, with each op pickled on its own (so that a
    reader unpickles only the ops it uses)."""
    try:
        dialects, diagnostics, sources, rejected, fingerprint, ops = registry.parts()
        raw = {op_id: pickle.dumps(op, protocol=pickle.HIGHEST_PROTOCOL) for op_id, op in ops.items()}
        payload = pickle.dumps((dialects, diagnostics, sources, rejected, fingerprint, raw),
                               protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as exc:  # noqa: BLE001 - a registry that cannot be pickled is simply not cached
        warn("vyre_decl.registry", "vyre_decl: cannot snapshot the registry: %s", exc)
        return
    _cache().put(key, payload)
