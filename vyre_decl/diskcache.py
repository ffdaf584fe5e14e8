"""The on-disk cache (compiled kernels, registry snapshots): content-addressed, integrity-checked, atomically written.

Entries live under ``cache_dir()/<kind>/<key[:2]>/<key>`` (``VYRE_DECL_CACHE_DIR``, else
``$XDG_CACHE_HOME/vyre_decl``, else ``~/.cache/vyre_decl``). Each file is the SHA-256 of its key
and payload followed by the payload; a write goes to a temporary file in the same directory and is
published with ``os.replace``, so concurrent processes never see half an entry. An entry whose
checksum does not match (truncated, damaged, or another key's entry put in its place) is logged,
deleted and rebuilt by the caller; one of the earlier format (the checksum of the payload alone)
is rebuilt without a warning.

The cache is bounded: when its files exceed ``max_bytes()`` (``VYRE_DECL_CACHE_MAX_MB``, default
1024) the least recently used entries go, oldest first (a hit refreshes an entry's time).
``python -m vyre_decl.cache info`` and ``clear`` show and empty it.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from .settings import env_int

__all__ = ["cache_dir", "DiskCache", "CACHE_ENV", "MAX_ENV", "max_bytes", "usage", "evict", "clear", "warn"]

CACHE_ENV = "VYRE_DECL_CACHE_DIR"
MAX_ENV = "VYRE_DECL_CACHE_MAX_MB"
DEFAULT_MAX_MB = 1024
_CHECK_EVERY = 64  # puts between two size checks of the whole cache


def warn(logger: str, message: str, *args: object) -> None:
    """A warning on the logger ``logger``; logging is imported only when there is something to
    say (importing it costs a fresh process ~4 ms, and a healthy run never warns)."""
    import logging

    logging.getLogger(logger).warning(message, *args)


def max_bytes() -> int:
    """The cache's size cap in bytes (``VYRE_DECL_CACHE_MAX_MB``; B008 if not a whole number)."""
    return env_int(MAX_ENV, DEFAULT_MAX_MB) << 20


def _entries(root: Path) -> list[tuple[float, int, Path]]:
    """(last use, bytes, path) of every entry under ``root``."""
    found = []
    for path in root.glob("*/*/*"):
        if path.name.startswith(".tmp-"):
            continue
        try:
            st = path.stat()
        except OSError:
            continue
        found.append((st.st_mtime, st.st_size, path))
    return found


def usage(root: Path | None = None) -> dict[str, tuple[int, int]]:
    """Entries and bytes per kind under the cache directory."""
    base = root or cache_dir()
    out: dict[str, tuple[int, int]] = {}
    for _, size, path in _entries(base):
        kind = path.parent.parent.name
        n, b = out.get(kind, (0, 0))
        out[kind] = (n + 1, b + size)
    return dict(sorted(out.items()))


def evict(limit: int, root: Path | None = None) -> int:
    """Delete the least recently used entries until the cache holds at most ``limit`` bytes;
    returns how many went."""
    entries = sorted(_entries(root or cache_dir()))
    total = sum(size for _, size, _ in entries)
    gone = 0
    for _, size, path in entries:
        if total <= limit:
            break
        try:
            path.unlink()
        except OSError:
            continue
        total -= size
        gone += 1
    return gone


def clear(kind: str | None = None, root: Path | None = None) -> int:
    """Delete every entry (of one kind); returns how many went."""
    gone = 0
    for _, _, path in _entries(root or cache_dir()):
        if kind is None or path.parent.parent.name == kind:
            try:
                path.unlink()
                gone += 1
            except OSError:
                pass
    return gone


def cache_dir() -> Path:
    explicit = os.environ.get(CACHE_ENV)
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "vyre_decl"


def _checksum(key: str, payload: bytes) -> bytes:
    """What an entry's file starts with: it binds the payload to its key, so that a file copied or
    renamed to another key's place reads as damaged, not as that key's entry."""
    return hashlib.sha256(key.encode() + b"\0" + payload).digest()


class DiskCache:
    """``get(key)`` / ``put(key, payload)`` for one kind of entry (e.g. ``cubin``)."""

    def __init__(self, root: Path, kind: str) -> None:
        self.base, self.root = root, root / kind
        self.limit = max_bytes()  # read once: a bad setting fails here (B008), not mid-compile
        self.hits = self.misses = self.evictions = 0
        self._puts = 0

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / key

    def get(self, key: str) -> bytes | None:
        path = self._path(key)
        try:
            data = path.read_bytes()
        except OSError:
            self.misses += 1
            return None
        digest, payload = data[:32], data[32:]
        if _checksum(key, payload) != digest:
            if hashlib.sha256(payload).digest() != digest:  # not merely an entry of the earlier format
                warn("vyre_decl.cache", "vyre_decl: corrupt or foreign cache entry %s (checksum mismatch); "
                     "rebuilding it", path)
            try:
                path.unlink()
            except OSError:
                pass
            self.misses += 1
            return None
        self.hits += 1
        try:
            os.utime(path)  # recently used: evicted last
        except OSError:
            pass
        return payload

    def put(self, key: str, payload: bytes) -> None:
        path = self._path(key)
        tmp = None
        import tempfile

        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
            with os.fdopen(fd, "wb") as fh:
                fh.write(_checksum(key, payload) + payload)
            os.replace(tmp, path)
            self._puts += 1
            if self._puts % _CHECK_EVERY == 1:
                self.evictions += evict(self.limit, self.base)
        except OSError as exc:  # a read-only or full cache must not break dispatch
            warn("vyre_decl.cache", "vyre_decl: cannot write cache entry %s: %s", path, exc)
            if tmp is not None:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
