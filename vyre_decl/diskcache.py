"""The on-disk cache (compiled kernels, registry snapshots): content-addressed, integrity-checked, atomically written.

Entries live under ``cache_dir()/<kind>/<key[:2]>/<key>`` (``VYRE_DECL_CACHE_DIR``, else
``$XDG_CACHE_HOME/vyre_decl``, else ``~/.cache/vyre_decl``). Each file is the SHA-256 of its
payload followed by the payload; a write goes to a temporary file in the same directory and is
published with ``os.replace``, so concurrent processes never see half an entry. An entry whose
checksum does not match is logged, deleted and rebuilt by the caller.
"""

from __future__ import annotations

import hashlib
import logging
import os
from pathlib import Path

__all__ = ["cache_dir", "DiskCache", "CACHE_ENV"]

CACHE_ENV = "VYRE_DECL_CACHE_DIR"
_log = logging.getLogger("vyre_decl.cache")


def cache_dir() -> Path:
    explicit = os.environ.get(CACHE_ENV)
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "vyre_decl"


class DiskCache:
    """``get(key)`` / ``put(key, payload)`` for one kind of entry (e.g. ``cubin``)."""

    def __init__(self, root: Path, kind: str) -> None:
        self.root = root / kind

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / key

    def get(self, key: str) -> bytes | None:
        path = self._path(key)
        try:
            data = path.read_bytes()
        except OSError:
            return None
        digest, payload = data[:32], data[32:]
        if hashlib.sha256(payload).digest() != digest:
            _log.warning("vyre_decl: corrupt cache entry %s (checksum mismatch); rebuilding it", path)
            try:
                path.unlink()
            except OSError:
                pass
            return None
        return payload

    def put(self, key: str, payload: bytes) -> None:
        path = self._path(key)
        tmp = None
        import tempfile

        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
            with os.fdopen(fd, "wb") as fh:
                fh.write(hashlib.sha256(payload).digest() + payload)
            os.replace(tmp, path)
        except OSError as exc:  # a read-only or full cache must not break dispatch
            _log.warning("vyre_decl: cannot write cache entry %s: %s", path, exc)
            if tmp is not None:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
