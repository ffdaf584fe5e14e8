"""The on-disk cache (compiled kernels, registry snapshots): content-addressed, bound to this cache
directory by its secret key, atomically written, and never touching a file it did not write.

Entries live under ``cache_dir()/<kind>/<key[:2]>/<key>`` (``cachedir.py`` says which directory,
when it is vyre_decl's, and what in it is). Each file is ``MAGIC`` (16 bytes), then a keyed
BLAKE2b MAC of its kind, key and payload under the cache's secret key (32 bytes), then the payload.
A file somebody else wrote therefore never passes: not even a snapshot planted with a checksum
of the earlier format, which had no key. A write goes to a temporary file in the entry's folder
and is published with ``os.replace``, so concurrent processes never see half an entry.

Reading an entry: a file with vyre_decl's header whose MAC does not match (truncated, damaged,
another key's entry, written by someone else) is logged, deleted and rebuilt by the caller; a file
at an entry's path without that header (or bigger than ``MAX_ENTRY``, or not a regular file) is
not vyre_decl's: it is logged, reported as a miss, never read past its header and never replaced.
No read or write goes through a symbolically linked folder.

The cache is bounded: when its entries exceed ``max_bytes()`` (``VYRE_DECL_CACHE_MAX_MB``, default
1024) the least recently used go, oldest first (a hit refreshes an entry's time); this is checked
on a process's first write and every 64th after it. ``python -m vyre_decl.cache info`` and
``clear`` show and empty it.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from pathlib import Path

from .cachedir import (CACHE_ENV, CREATE, HEADER, KINDS, MAGIC, MAX_ENTRY, READ_ONLY, TMP_PREFIX, cache_dir, claim,
                       clear, evict, forget, is_key, is_ours, open_entry_dir, usage, warn)
from .settings import env_int

__all__ = ["cache_dir", "DiskCache", "CACHE_ENV", "MAX_ENV", "max_bytes", "usage", "evict", "clear", "warn"]

MAX_ENV = "VYRE_DECL_CACHE_MAX_MB"
DEFAULT_MAX_MB = 1024
_CHECK_EVERY = 64  # puts between two size checks of the whole cache
_LOG = "vyre_decl.cache"


def max_bytes() -> int:
    """The cache's size cap in bytes (``VYRE_DECL_CACHE_MAX_MB``; B008 if not a whole number)."""
    return env_int(MAX_ENV, DEFAULT_MAX_MB) << 20


def _mac(secret: bytes, kind: str, key: str, payload: bytes) -> bytes:
    """What follows ``MAGIC`` in an entry: binds the payload to its kind, its key and this cache."""
    h = hashlib.blake2b(f"{kind}\0{key}\0".encode(), key=secret, digest_size=32)
    h.update(payload)
    return h.digest()


def _read(fd: int, size: int) -> bytes:
    chunks, left = [], size
    while left > 0:
        chunk = os.read(fd, left)
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


class DiskCache:
    """``get(key)`` / ``put(key, payload)`` for one kind of entry (one of ``KINDS``)."""

    def __init__(self, root: Path, kind: str) -> None:
        if kind not in KINDS:
            raise ValueError(f"unknown cache kind {kind!r} (one of {', '.join(KINDS)})")
        self.base, self.root, self.kind = root, root / kind, kind
        self.limit = max_bytes()  # read once: a bad setting fails here (B008), not mid-compile
        self.hits = self.misses = self.evictions = 0
        self._puts = 0

    def _path(self, key: str) -> Path:
        """Where entry ``key`` lives (for messages); ValueError if ``key`` is not 64 hex digits."""
        if not is_key(key):
            raise ValueError(f"a cache key is 64 lowercase hex digits, not {key[:80]!r}")
        return self.root / key[:2] / key

    def get(self, key: str) -> bytes | None:
        """The payload stored under ``key``, or None. B009 if the cache directory is not vyre_decl's."""
        self._path(key)
        try:
            secret = claim(self.base)
            pfd = open_entry_dir(self.base, self.kind, key[:2], create=False)
        except OSError:  # no cache yet, or one that cannot be used: a miss
            self.misses += 1
            return None
        try:
            payload = self._read_entry(pfd, key, secret)
        finally:
            os.close(pfd)
        if payload is None:
            self.misses += 1
        else:
            self.hits += 1
        return payload

    def _read_entry(self, pfd: int, key: str, secret: bytes) -> bytes | None:
        try:
            fd = os.open(key, READ_ONLY, dir_fd=pfd)
        except OSError as exc:  # missing, unreadable, or a symbolic link at the entry's path
            if exc.errno == errno.ELOOP:
                self._foreign(key)
            return None
        try:
            st = os.fstat(fd)
            head = _read(fd, HEADER) if stat.S_ISREG(st.st_mode) and st.st_size <= MAX_ENTRY + HEADER else b""
            if head[:len(MAGIC)] != MAGIC:
                self._foreign(key)
                return None
            payload = _read(fd, st.st_size - HEADER)
            if _mac(secret, self.kind, key, payload) != head[len(MAGIC):]:
                warn(_LOG, "vyre_decl: corrupt or foreign cache entry %s (checksum mismatch); rebuilding it",
                     self._path(key))
                os.unlink(key, dir_fd=pfd)
                return None
            os.utime(fd)  # recently used: evicted last
            return payload
        except OSError:
            return None
        finally:
            os.close(fd)

    def _foreign(self, key: str) -> None:
        warn(_LOG, "vyre_decl: %s is not a vyre_decl cache entry (it has no vyre_decl header); it is left alone and "
             "this entry is not cached", self._path(key))

    def put(self, key: str, payload: bytes) -> None:
        """Store ``payload`` under ``key``; a cache that cannot be written is logged, never an error
        (but B009 if the cache directory is not vyre_decl's)."""
        path = self._path(key)
        if len(payload) > MAX_ENTRY:
            warn(_LOG, "vyre_decl: not caching %s: %d bytes is more than an entry may hold", path, len(payload))
            return
        try:
            try:
                secret = claim(self.base)
                pfd = open_entry_dir(self.base, self.kind, key[:2], create=True)
            except FileNotFoundError:  # the directory was removed since this process claimed it
                forget(self.base)
                secret = claim(self.base)
                pfd = open_entry_dir(self.base, self.kind, key[:2], create=True)
        except OSError as exc:  # a read-only or full cache, or a symbolic link in it, must not break dispatch
            warn(_LOG, "vyre_decl: cannot write cache entry %s: %s", path, exc)
            return
        try:
            written = self._write_entry(pfd, key, MAGIC + _mac(secret, self.kind, key, payload), payload)
        finally:
            os.close(pfd)
        if written:
            self._puts += 1
            if self._puts % _CHECK_EVERY == 1:
                try:
                    self.evictions += evict(self.limit, self.base)
                except OSError as exc:
                    warn(_LOG, "vyre_decl: cannot evict from the cache %s: %s", self.base, exc)

    def _write_entry(self, pfd: int, key: str, head: bytes, payload: bytes) -> bool:
        if not _replaceable(pfd, key):
            self._foreign(key)
            return False
        tmp = f"{TMP_PREFIX}{os.urandom(8).hex()}"
        try:
            fd = os.open(tmp, CREATE, 0o600, dir_fd=pfd)
            with os.fdopen(fd, "wb") as fh:
                fh.write(head)
                fh.write(payload)
            os.replace(tmp, key, src_dir_fd=pfd, dst_dir_fd=pfd)
            return True
        except OSError as exc:
            warn(_LOG, "vyre_decl: cannot write cache entry %s: %s", self._path(key), exc)
            try:
                os.unlink(tmp, dir_fd=pfd)
            except OSError:
                pass
            return False


def _replaceable(pfd: int, key: str) -> bool:
    """Whether an entry may be written at ``key``: nothing is there, or an entry of vyre_decl's."""
    try:
        fd = os.open(key, READ_ONLY, dir_fd=pfd)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    try:
        return is_ours(fd)
    finally:
        os.close(fd)
