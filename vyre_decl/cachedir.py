"""The cache directory: where it is, whether it is vyre_decl's own, and what in it vyre_decl wrote.

The directory is ``VYRE_DECL_CACHE_DIR``, else ``$XDG_CACHE_HOME/vyre_decl``, else
``~/.cache/vyre_decl``. The cache uses it only if it is vyre_decl's:

- its ``CACHEDIR.TAG`` (the standard cache-directory tag, so backup tools skip the directory)
  carries vyre_decl's line and this cache's secret key, written once (mode 0600, published with
  ``os.link``, so concurrent first uses agree on one key); or
- it does not exist (it is made and tagged), is empty, or holds only what vyre_decl and the CUDA
  driver put in a cache of the earlier, untagged format: the kind folders ``ptx``, ``cubin``,
  ``registry`` and ``driver-jit``. Such a directory is adopted: tagged, and its earlier-format
  entries (each proven by its checksum, so each read once) removed; ``driver-jit`` is left as is.

Anything else is B009, raised by the first use of the cache (a registry load, hence the first
dispatch of a process; a CUDA compile; ``python -m vyre_decl.cache``, which exits 2), before
anything in the directory is changed. A directory that cannot be made or read (or a system without
``openat``) is no error for a dispatch, which runs uncached with a warning; the command line says
B010. A process proves the directory once and remembers its key.

Inside it, an entry is ``<kind>/<key[:2]>/<key>`` with ``key`` 64 lowercase hex digits and ``kind``
one of ``KINDS``, a regular file that starts with ``MAGIC``; a temporary is ``.tmp-`` and 8 to 32
letters, digits or ``_`` in an entry's folder. Walks, reads and writes open each folder with
``O_NOFOLLOW`` relative to its parent, so nothing behind a symbolic link is ever read, written or
deleted; ``driver-jit`` (the CUDA driver's own JIT cache) is never looked into. ``usage``, ``evict``
and ``clear`` count and delete only entries with vyre_decl's header, and temporaries older than
``STALE_TMP_S``.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import stat
import time
from pathlib import Path
from typing import Final, NamedTuple

from .ir.diagnostics import VyreError

__all__ = ["cache_dir", "claim", "open_entry_dir", "driver_jit_dir", "usage", "evict", "clear", "warn", "KINDS",
           "MAGIC", "HEADER", "MAX_ENTRY", "STALE_TMP_S", "CACHE_ENV", "is_ours", "TMP_PREFIX", "READ_ONLY", "CREATE", "forget", "is_key"]

CACHE_ENV: Final = "VYRE_DECL_CACHE_DIR"
KINDS: Final = ("ptx", "cubin", "registry")
DRIVER_JIT: Final = "driver-jit"  # CUDA_CACHE_PATH: the driver's, never walked or deleted here
TAG: Final = "CACHEDIR.TAG"
SIGNATURE: Final = b"Signature: 8a477f597d28d172789f06886806bc55\n"
OWNER: Final = b"# This file is a cache directory tag created by vyre_decl.\n"
MAGIC: Final = b"vyre_decl-cache\x02"  # what every entry starts with (16 bytes), then its 32-byte MAC
HEADER: Final = len(MAGIC) + 32
MAX_ENTRY: Final = 256 << 20  # no payload is bigger; a bigger file is not ours and is never read
STALE_TMP_S: Final = 3600  # a temporary this old is a crashed writer's leftover
TMP_PREFIX: Final = ".tmp-"
_KEY_LINE = re.compile(rb"^# key \(keep private\): ([0-9a-f]{64})$", re.M)
_KEY = re.compile(r"[0-9a-f]{64}")
_TMP = re.compile(r"\.tmp-[a-z0-9_]{8,32}")
_POSIX: Final = os.open in os.supports_dir_fd  # the cache needs openat() and friends; elsewhere it is off
_NOFOLLOW: Final = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_DIR: Final = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _NOFOLLOW
READ_ONLY: Final = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | _NOFOLLOW  # a planted FIFO cannot block an open
CREATE: Final = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW
_secrets: dict[str, bytes] = {}  # root -> key, once proven in this process


def warn(logger: str, message: str, *args: object) -> None:
    """A warning on the logger ``logger``; logging is imported only when there is something to
    say (importing it costs a fresh process ~4 ms, and a healthy run never warns)."""
    import logging

    logging.getLogger(logger).warning(message, *args)


def cache_dir() -> Path:
    explicit = os.environ.get(CACHE_ENV)
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "vyre_decl"


def is_key(key: str) -> bool:
    """Whether ``key`` names an entry: 64 lowercase hex digits (so no path can be spelled with it)."""
    return _KEY.fullmatch(key) is not None


def _is_entry_name(kind: str, prefix: str, name: str) -> bool:
    return kind in KINDS and is_key(name) and name[:2] == prefix


# --- is the directory ours


def _not_ours(root: Path, why: str) -> VyreError:
    unset = " or unset it" if os.environ.get(CACHE_ENV) else ""
    return VyreError.one(
        "B009", f"{root} is not vyre_decl's cache directory ({why}); the cache uses only a directory it made, "
        "an empty one, or one marked by its CACHEDIR.TAG, and has changed nothing in this one", str(root),
        f"point {CACHE_ENV} at a new or empty directory (vyre_decl makes and marks it){unset}")


def _read_tag(root: Path) -> bytes:
    """The secret key in ``root``'s tag; B009 if the tag is not vyre_decl's."""
    try:
        fd = os.open(root / TAG, READ_ONLY)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _not_ours(root, f"its {TAG} is a symbolic link") from None
        raise  # missing (the caller adopts the directory), or unusable (not a directory, no permission)
    try:
        st = os.fstat(fd)
        text = os.read(fd, 4096) if stat.S_ISREG(st.st_mode) else b""
    finally:
        os.close(fd)
    found = _KEY_LINE.search(text)
    if not (text.startswith(SIGNATURE) and OWNER in text and found):
        raise _not_ours(root, f"its {TAG} was written by another program")
    return bytes.fromhex(found.group(1).decode())


def _adoptable(root: Path, name: str) -> bool:
    """Whether ``name`` in an untagged ``root`` is something vyre_decl (or the driver) makes there."""
    try:
        mode = os.lstat(root / name).st_mode
    except FileNotFoundError:
        return True
    if name in KINDS or name == DRIVER_JIT:
        return stat.S_ISDIR(mode)
    return _TMP.fullmatch(name) is not None and stat.S_ISREG(mode)  # another process tagging it right now


def _adopt(root: Path) -> None:
    """Write ``root``'s tag with a fresh key, unless another process does first; the winner removes
    the earlier format's entries."""
    secret = os.urandom(32)
    text = (SIGNATURE + OWNER + b"# For information about cache directory tags see https://bford.info/cachedir/\n"
            + b"# key (keep private): " + secret.hex().encode() + b"\n")
    tmp = root / f"{TMP_PREFIX}{os.urandom(8).hex()}"
    fd = os.open(tmp, CREATE, 0o600)
    try:
        try:
            os.write(fd, text)
        finally:
            os.close(fd)
        os.link(tmp, root / TAG)  # fails if the tag exists: a tag is never half written or replaced
    except FileExistsError:
        return
    finally:
        os.unlink(tmp)
    for kind in KINDS:
        for found in _walk_kind(root, kind, legacy=True):
            _remove(root, found, legacy=True)


def claim(root: Path) -> bytes:
    """The secret key of the cache in ``root``, making or adopting the directory if need be. B009 if
    it is not vyre_decl's; OSError if it cannot be made or read."""
    secret = _claim(root, create=True)
    assert secret is not None
    return secret


def _claim(root: Path, create: bool) -> bytes | None:
    """``claim``, or None for a missing ``root`` when not ``create``."""
    secret = _secrets.get(str(root))
    if secret is not None:
        return secret
    if not _POSIX:
        raise OSError(errno.ENOTSUP, "the disk cache needs a POSIX system (openat)")
    try:
        secret = _read_tag(root)
    except FileNotFoundError:
        try:
            names = os.listdir(root)
        except FileNotFoundError:
            if not create:
                return None
            root.mkdir(parents=True, exist_ok=True)
            names = os.listdir(root)
        if TAG in names:  # another process tagged it between our read and our listing: read its tag
            secret = _read_tag(root)
            _secrets[str(root)] = secret
            return secret
        foreign = sorted(n for n in names if not _adoptable(root, n))
        if foreign:
            shown = ", ".join(repr(n) for n in foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
            raise _not_ours(root, f"it holds {shown}, which vyre_decl did not write") from None
        _adopt(root)
        secret = _read_tag(root)
    _secrets[str(root)] = secret
    return secret


def forget(root: Path) -> None:
    """Claim ``root`` anew at its next use (it was removed since this process claimed it)."""
    _secrets.pop(str(root), None)


def driver_jit_dir() -> Path | None:
    """Where the CUDA driver may keep its JIT cache: ``driver-jit`` in the cache directory, if that
    directory is (or can be made) vyre_decl's; None otherwise (the driver keeps its default)."""
    root = cache_dir()
    try:
        claim(root)
    except (OSError, VyreError):
        return None
    return root / DRIVER_JIT


def open_entry_dir(root: Path, kind: str, prefix: str, create: bool) -> int:
    """A descriptor of ``root/kind/prefix``, opened without following a symbolic link at either
    level (OSError if one is a link, is missing and not ``create``, or cannot be made)."""
    if create:
        try:
            os.mkdir(root / kind)
        except FileExistsError:
            pass
    kfd = os.open(root / kind, _DIR)
    try:
        if create:
            try:
                os.mkdir(prefix, dir_fd=kfd)
            except FileExistsError:
                pass
        return os.open(prefix, _DIR, dir_fd=kfd)
    finally:
        os.close(kfd)


# --- what in it is ours


class Found(NamedTuple):
    mtime: float
    size: int
    kind: str
    prefix: str
    name: str


def is_ours(fd: int) -> bool:
    """Whether the open file is an entry of vyre_decl's: a regular file of at most ``MAX_ENTRY`` and
    a header, starting with ``MAGIC`` (its MAC is checked by the reader, who knows the key)."""
    st = os.fstat(fd)
    return stat.S_ISREG(st.st_mode) and st.st_size <= MAX_ENTRY + HEADER and os.pread(fd, len(MAGIC), 0) == MAGIC


def _has_header(fd: int, name: str, legacy: bool) -> bool:
    """``is_ours``, or with ``legacy`` whether the file is an entry of the earlier, untagged format:
    the SHA-256 of its key and payload (or of its payload alone), then the payload."""
    if not legacy:
        return is_ours(fd)
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_ENTRY + HEADER:
        return False
    data = os.pread(fd, st.st_size, 0)
    digest, payload = data[:32], data[32:]
    return digest in (hashlib.sha256(name.encode() + b"\0" + payload).digest(), hashlib.sha256(payload).digest())


def _walk_kind(root: Path, kind: str, legacy: bool = False, verify: bool = True) -> list[Found]:
    """The entries (checked by header when ``verify``) and the stale temporaries under ``root/kind``;
    a temporary has the name ``.tmp-...``."""
    try:
        kfd = os.open(root / kind, _DIR)
    except OSError:  # missing, or a symbolic link
        return []
    found: list[Found] = []
    stale = time.time() - STALE_TMP_S
    try:
        with os.scandir(kfd) as it:
            prefixes = [e.name for e in it if len(e.name) == 2 and e.is_dir(follow_symlinks=False)]
        for prefix in prefixes:
            try:
                pfd = os.open(prefix, _DIR, dir_fd=kfd)
            except OSError:
                continue
            try:
                found += _walk_prefix(pfd, kind, prefix, stale, legacy, verify)
            finally:
                os.close(pfd)
    finally:
        os.close(kfd)
    return found


def _walk_prefix(pfd: int, kind: str, prefix: str, stale: float, legacy: bool, verify: bool) -> list[Found]:
    found = []
    with os.scandir(pfd) as it:
        for e in it:
            is_entry = _is_entry_name(kind, prefix, e.name)
            if not (is_entry or _TMP.fullmatch(e.name)) or not e.is_file(follow_symlinks=False):
                continue
            try:
                st = e.stat(follow_symlinks=False)
                if is_entry and verify and not _check(pfd, e.name, legacy):
                    continue
            except OSError:
                continue
            if is_entry or st.st_mtime < stale:
                found.append(Found(st.st_mtime, st.st_size, kind, prefix, e.name))
    return found


def _check(pfd: int, name: str, legacy: bool) -> bool:
    fd = os.open(name, READ_ONLY, dir_fd=pfd)
    try:
        return _has_header(fd, name, legacy)
    finally:
        os.close(fd)


def _remove(root: Path, f: Found, legacy: bool = False) -> bool:
    """Delete ``f`` if it is (still) an entry of vyre_decl's or a stale temporary; whether it went."""
    try:
        pfd = open_entry_dir(root, f.kind, f.prefix, create=False)
    except OSError:
        return False
    try:
        if f.name.startswith(TMP_PREFIX) or _check(pfd, f.name, legacy):
            os.unlink(f.name, dir_fd=pfd)
            return True
    except OSError:
        pass
    finally:
        os.close(pfd)
    return False


def _scan(root: Path | None, kinds: tuple[str, ...], verify: bool) -> tuple[Path, list[Found], list[Found]]:
    """The cache directory, its entries and its stale temporaries; nothing if it does not exist."""
    base = root or cache_dir()
    if _claim(base, create=False) is None:
        return base, [], []
    found = [f for kind in kinds for f in _walk_kind(base, kind, verify=verify)]
    return (base, [f for f in found if not f.name.startswith(TMP_PREFIX)],
            [f for f in found if f.name.startswith(TMP_PREFIX)])


def usage(root: Path | None = None) -> dict[str, tuple[int, int]]:
    """Entries and bytes per kind in the cache directory."""
    out: dict[str, tuple[int, int]] = {}
    for f in _scan(root, KINDS, verify=True)[1]:
        n, b = out.get(f.kind, (0, 0))
        out[f.kind] = (n + 1, b + f.size)
    return dict(sorted(out.items()))


def evict(limit: int, root: Path | None = None) -> int:
    """Delete stale temporaries, then the least recently used entries until the cache holds at most
    ``limit`` bytes; returns how many entries went. Headers are read only when over the limit."""
    base, entries, stale = _scan(root, KINDS, verify=False)
    for f in stale:
        _remove(base, f)
    total = sum(f.size for f in entries)
    if total <= limit:
        return 0
    entries = sorted(_scan(base, KINDS, verify=True)[1])
    total = sum(f.size for f in entries)
    gone = 0
    for f in entries:
        if total <= limit:
            break
        if _remove(base, f):
            total -= f.size
            gone += 1
    return gone


def clear(kind: str | None = None, root: Path | None = None) -> int:
    """Delete every entry (of one kind) and every stale temporary; returns how many entries went."""
    base, entries, stale = _scan(root, (kind,) if kind else KINDS, verify=True)
    for f in stale:
        _remove(base, f)
    return sum(_remove(base, f) for f in entries)
