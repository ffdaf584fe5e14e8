"""The disk cache touches only what it wrote: its own directory (made by it, empty, tagged by it, or
a cache of the earlier format), entries known by name and header, never through a symbolic link;
a stranger's file in its place is left alone, a stranger's entry is never trusted, and stale
temporaries of its own expire (issue 23, item 1)."""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from vyre_decl import cachedir
from vyre_decl.cache import main
from vyre_decl.cachedir import HEADER, MAGIC, TAG, claim, clear, evict, usage
from vyre_decl.diskcache import DiskCache
from vyre_decl.ir import VyreError

ROOT = Path(__file__).resolve().parent.parent
KEY = "ab" + "0" * 62
DISPATCH = ("import numpy as np, vyre_decl\nfrom vyre_decl.bench.kernels import TWO\na = np.arange(8, dtype=np.uint32)\n"
            "assert (vyre_decl.acquire('reference').dispatch(TWO, [a, a])[0] == 2 * a).all()\n")


def _tree(base: Path) -> dict[str, bytes | str]:
    """Every file and link under ``base`` (links not followed): relative path -> bytes or link target."""
    out: dict[str, bytes | str] = {}
    for dirpath, dirs, files in os.walk(base):
        for name in dirs + files:
            p = Path(dirpath) / name
            if p.is_symlink():
                out[str(p.relative_to(base))] = os.readlink(p)
            elif p.is_file():
                out[str(p.relative_to(base))] = p.read_bytes()
    return out


def _user_files(base: Path) -> None:
    """A user's directory: files three levels deep with 64-hex names (some where a cache entry of a
    known kind would be), an old file named like a temporary, and links to what lies outside."""
    for rel in ("photos/ab/" + "ab" + "1" * 62, "registry/cd/" + "cd" + "2" * 62, "cubin/ef/" + "ef" + "3" * 62,
                "notes.txt", "deep/er/still/" + "f" * 64):
        (base / rel).parent.mkdir(parents=True, exist_ok=True)
        (base / rel).write_bytes(b"the user's own bytes: " + rel.encode())
    old = time.time() - 7200
    os.utime(base / "cubin/ef" / ("ef" + "3" * 62), (old, old))  # the oldest file of all


def _env(cache: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ, VYRE_DECL_CACHE_DIR=str(cache), **extra)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


def _python(code: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)


def _cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "vyre_decl.cache", *args], capture_output=True, text=True, env=env,
                          timeout=120)


def test_a_users_directory_is_refused_whole_and_left_intact(tmp_path):
    """VYRE_DECL_CACHE_DIR at a directory of the user's: dispatches, eviction (a cap of 0 MB) and
    `cache clear` / `info` are B009 and change nothing in it, not even by adding a file."""
    home = tmp_path / "home"
    _user_files(home)
    outside = tmp_path / "outside"
    _user_files(outside)
    (home / "registry" / "ab").symlink_to(outside / "photos" / "ab")
    (home / "ptx").symlink_to(outside / "registry")
    before, before_outside = _tree(home), _tree(outside)
    env = _env(home, VYRE_DECL_CACHE_MAX_MB="0")
    runs = [_python(DISPATCH, env), _python(DISPATCH, env)]
    clis = [_cli(*args, env=env) for args in (["clear"], ["clear", "--kind", "registry"], ["info"])]
    assert _tree(home) == before and _tree(outside) == before_outside
    assert all(run.returncode != 0 and "B009" in run.stderr and "Fix:" in run.stderr for run in runs)
    assert all(cli.returncode == 2 and "is not vyre_decl's cache directory" in cli.stderr for cli in clis)


def test_links_inside_the_cache_are_never_followed(tmp_path):
    """A cache of vyre_decl's whose folders are links to the user's files, and strangers' files in its
    real folders: dispatches (a registry snapshot written), eviction with a tiny cap and `cache clear`
    delete only the cache's entries; every user file is byte-identical."""
    cache, user = tmp_path / "cache", tmp_path / "user"
    _user_files(user)
    DiskCache(cache, "cubin").put("ef" + "9" * 62, b"a kernel of ours")  # makes and tags the directory
    (cache / "ptx").symlink_to(user / "registry")  # a kind folder that is a link
    (cache / "cubin" / "cd").symlink_to(user / "registry" / "cd")  # a prefix folder that is a link
    (cache / "registry" / "ef").mkdir(parents=True)
    stranger = cache / "registry" / "ef" / ("ef" + "4" * 62)  # a stranger's file where an entry would be
    stranger.write_bytes(b"not an entry")
    old = time.time() - 7200
    os.utime(stranger, (old, old))
    keep = {**_tree(user), "stranger": stranger.read_bytes()}
    env = _env(cache, VYRE_DECL_CACHE_MAX_MB="0")
    for _ in range(2):
        run = _python(DISPATCH, env)  # the registry snapshot: written, then evicted (the first write evicts)
        assert run.returncode == 0, run.stderr[-2000:]
    assert usage(cache) == {}  # the cap of 0 MB: every entry of ours went, the snapshots just written too
    DiskCache(cache, "cubin").put("ef" + "9" * 62, b"a kernel of ours")
    assert usage(cache) == {"cubin": (1, 16 + HEADER)}
    cli = _cli("clear", env=env)
    assert cli.returncode == 0 and "removed 1 entry" in cli.stdout
    assert usage(cache) == {} and {**_tree(user), "stranger": stranger.read_bytes()} == keep


def test_get_and_put_never_read_or_write_through_a_linked_folder(tmp_path, caplog):
    cache, away = tmp_path / "cache", tmp_path / "away"
    ours = DiskCache(cache, "ptx")
    ours.put(KEY, b"text")
    (cache / "ptx" / "ab").rename(away)  # an entry of this cache, reached only through a link
    (cache / "ptx" / "ab").symlink_to(away)
    assert ours.get(KEY) is None
    ours.put("ab" + "1" * 62, b"more")
    assert sorted(p.name for p in away.iterdir()) == [KEY]
    cubin = DiskCache(cache, "cubin")
    (cache / "cubin").symlink_to(away)
    assert cubin.get(KEY) is None
    cubin.put("ab" + "2" * 62, b"kernel")
    assert sorted(p.name for p in away.iterdir()) == [KEY] and "cannot write cache entry" in caplog.text
    assert clear(root=cache) == 0 and evict(0, cache) == 0 and (away / KEY).exists()


def test_a_link_or_a_strangers_file_at_an_entrys_path_is_left_alone(tmp_path, caplog):
    cache = DiskCache(tmp_path / "cache", "registry")
    cache.put("ab" + "1" * 62, b"x")  # makes the directories
    folder = tmp_path / "cache" / "registry" / "ab"
    target = tmp_path / "precious"
    target.write_bytes(MAGIC + bytes(32) + b"looks like ours, lies outside")
    (folder / KEY).symlink_to(target)
    assert cache.get(KEY) is None and "not a vyre_decl cache entry" in caplog.text
    cache.put(KEY, b"payload")
    assert (folder / KEY).is_symlink() and target.read_bytes().endswith(b"lies outside")
    other = "ab" + "3" * 62
    (folder / other).write_bytes(b"a stranger's file, no header")
    assert cache.get(other) is None and (folder / other).read_bytes() == b"a stranger's file, no header"
    assert clear(root=tmp_path / "cache") == 1 and usage(tmp_path / "cache") == {}  # only our one entry
    assert (folder / other).exists() and (folder / KEY).is_symlink() and target.exists()


def test_a_huge_sparse_file_at_an_entrys_path_is_not_read(tmp_path):
    """Under a 1 GiB address-space limit, an 8 GiB sparse file where an entry would be is a miss
    (read whole, it would be a MemoryError), is left alone, and is not counted."""
    cache = tmp_path / "cache"
    DiskCache(cache, "cubin").put("ab" + "1" * 62, b"x")
    path = cache / "cubin" / "ab" / KEY
    with open(path, "wb") as fh:
        fh.write(MAGIC)
        fh.truncate(8 << 30)
    code = ("import resource, sys\nfrom pathlib import Path\nresource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))\n"
            "from vyre_decl.diskcache import DiskCache, usage, clear\nc = DiskCache(Path(sys.argv[1]), 'cubin')\n"
            "assert c.get(sys.argv[2]) is None\nassert usage(Path(sys.argv[1])) == {'cubin': (1, 1 + 48)}, usage()\n"
            "clear(root=Path(sys.argv[1]))\n")
    run = subprocess.run([sys.executable, "-c", code, str(cache), KEY], capture_output=True, text=True,
                         env=_env(cache), timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    assert path.stat().st_size == 8 << 30


def test_a_file_as_big_as_no_entry_may_be_is_never_written(tmp_path, caplog, monkeypatch):
    monkeypatch.setattr("vyre_decl.diskcache.MAX_ENTRY", 10, raising=False)
    cache = DiskCache(tmp_path, "ptx")
    cache.put(KEY, b"x" * 11)
    assert cache.get(KEY) is None and "more than an entry may hold" in caplog.text


def test_stale_temporaries_of_ours_expire_and_nothing_else(tmp_path):
    cache = DiskCache(tmp_path, "ptx")
    cache.put(KEY, b"text")
    folder = tmp_path / "ptx" / "ab"
    old = time.time() - 7200
    names = {".tmp-0123456789abcdef": old, ".tmp-abcd_123": old, ".tmp-fedcba9876543210": time.time(),
             ".tmp-not-ours!": old, ".tmp-x": old}
    for name, t in names.items():
        (folder / name).write_bytes(b"half an entry")
        os.utime(folder / name, (t, t))
    assert evict(1 << 30, tmp_path) == 0
    assert sorted(p.name for p in folder.iterdir()) == sorted([KEY, ".tmp-fedcba9876543210", ".tmp-not-ours!", ".tmp-x"])
    os.utime(folder / ".tmp-fedcba9876543210", (old, old))
    assert clear(root=tmp_path) == 1
    assert sorted(p.name for p in folder.iterdir()) == [".tmp-not-ours!", ".tmp-x"]


def test_an_empty_directory_is_tagged_with_a_private_key_and_used(tmp_path):
    (tmp_path / "empty").mkdir()
    cache = DiskCache(tmp_path / "empty", "ptx")
    cache.put(KEY, b"text")
    tag = tmp_path / "empty" / TAG
    assert tag.read_bytes().startswith(b"Signature: 8a477f597d28d172789f06886806bc55\n")
    assert stat.S_IMODE(tag.stat().st_mode) == 0o600 and cache.get(KEY) == b"text"
    key = claim(tmp_path / "empty")
    assert len(key) == 32 and key.hex().encode() in tag.read_bytes()
    # another cache's entry (its own key) copied here is not trusted: the MAC is keyed by the cache
    other = DiskCache(tmp_path / "other", "ptx")
    other.put(KEY, b"forged")
    (tmp_path / "empty" / "ptx" / "ab" / KEY).write_bytes((tmp_path / "other" / "ptx" / "ab" / KEY).read_bytes())
    assert cache.get(KEY) is None
    shutil.rmtree(tmp_path / "empty")  # removed while this process runs: made, tagged and used anew
    cache.put(KEY, b"again")
    assert cache.get(KEY) == b"again" and claim(tmp_path / "empty") != key


def test_processes_tagging_one_empty_directory_at_once_agree_on_its_key(tmp_path):
    (tmp_path / "c").mkdir()
    code = ("import sys\nfrom pathlib import Path\nfrom vyre_decl.diskcache import DiskCache\n"
            "DiskCache(Path(sys.argv[1]), 'ptx').put(f'{int(sys.argv[2]):064x}', sys.argv[2].encode())")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(tmp_path / "c"), str(k)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=_env(tmp_path / "c")) for k in range(8)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [e[-500:] for _, e in outs]
    assert sorted(os.listdir(tmp_path / "c")) == [TAG, "ptx"]  # one tag, no temporary left
    cache = DiskCache(tmp_path / "c", "ptx")
    assert [cache.get(f"{k:064x}") for k in range(8)] == [str(k).encode() for k in range(8)]  # one key for all


def test_a_cache_of_the_earlier_format_is_adopted(tmp_path):
    """Only the kind folders (and the driver's JIT cache): tagged, its proven entries removed; a file
    whose checksum proves nothing, and the driver's files, stay."""
    base = tmp_path / "cache"
    key2 = "cd" + "5" * 62
    old_entries = {f"registry/ab/{KEY}": hashlib.sha256(KEY.encode() + b"\0snap").digest() + b"snap",
                   f"cubin/cd/{key2}": hashlib.sha256(b"bin").digest() + b"bin"}
    kept = {f"ptx/ab/{KEY}": b"\0" * 32 + b"a checksum that proves nothing", "driver-jit/index": b"the driver's",
            f"driver-jit/ab/{KEY}": hashlib.sha256(b"x").digest() + b"x"}
    for rel, data in {**old_entries, **kept}.items():
        (base / rel).parent.mkdir(parents=True, exist_ok=True)
        (base / rel).write_bytes(data)
    DiskCache(base, "ptx").put("ef" + "0" * 62, b"new")
    assert (base / TAG).exists() and not any((base / rel).exists() for rel in old_entries)
    assert all((base / rel).read_bytes() == data for rel, data in kept.items())
    assert clear(root=base) == 1 and all((base / rel).exists() for rel in kept)


@pytest.mark.parametrize("intruder", ["another program's tag", "a file", "a link", "an unknown folder"])
def test_a_directory_that_is_not_ours_is_b009(tmp_path, intruder, capsys, monkeypatch):
    base = tmp_path / "cache"
    (base / "registry").mkdir(parents=True)
    if intruder == "another program's tag":
        (base / TAG).write_bytes(b"Signature: 8a477f597d28d172789f06886806bc55\n# cargo's\n")
    elif intruder == "a file":
        (base / "thesis.tex").write_text("chapter 1")
    elif intruder == "a link":
        (base / "cubin").symlink_to(tmp_path)
    else:
        (base / "src").mkdir()
    before = _tree(base)
    with pytest.raises(VyreError) as info:
        DiskCache(base, "registry").get(KEY)
    assert info.value.codes == ["B009"] and "Fix:" in str(info.value) and "delete" not in str(info.value).lower()
    with pytest.raises(VyreError):
        DiskCache(base, "registry").put(KEY, b"x")
    monkeypatch.setenv("VYRE_DECL_CACHE_DIR", str(base))
    from vyre_decl.registry import load

    with pytest.raises(VyreError) as info:
        load(env=False)
    assert info.value.codes == ["B009"]
    assert main(["clear"]) == 2 and "B009" in capsys.readouterr().err
    assert _tree(base) == before


def test_a_cache_path_that_cannot_be_read_is_b010_in_the_cli_and_runs_uncached(tmp_path, monkeypatch, capsys, caplog):
    blocker = tmp_path / "a-file"
    blocker.write_text("mine")
    monkeypatch.setenv("VYRE_DECL_CACHE_DIR", str(blocker))
    assert main(["info"]) == 2 and "B010" in capsys.readouterr().err
    cache = DiskCache(blocker, "ptx")
    cache.put(KEY, b"x")
    assert cache.get(KEY) is None and blocker.read_text() == "mine" and "cannot write cache entry" in caplog.text
    monkeypatch.setenv("VYRE_DECL_CACHE_DIR", str(tmp_path / "missing"))
    assert main(["info"]) == 0 and main(["clear"]) == 0 and not (tmp_path / "missing").exists()


def test_the_driver_jit_cache_goes_only_into_a_directory_of_ours(tmp_path, monkeypatch):
    monkeypatch.setenv("VYRE_DECL_CACHE_DIR", str(tmp_path / "new"))
    assert cachedir.driver_jit_dir() == tmp_path / "new" / "driver-jit"
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "notes.txt").write_text("x")
    monkeypatch.setenv("VYRE_DECL_CACHE_DIR", str(tmp_path / "home"))
    assert cachedir.driver_jit_dir() is None and os.listdir(tmp_path / "home") == ["notes.txt"]


def test_a_key_cannot_spell_a_path(tmp_path):
    cache = DiskCache(tmp_path / "c", "ptx")
    for bad in ("../../../" + "e" * 55, "AB" + "0" * 62, "ab" * 31 + "/x", "ab" * 33):
        with pytest.raises(ValueError):
            cache.put(bad, b"escaped")
        with pytest.raises(ValueError):
            cache.get(bad)
    assert os.listdir(tmp_path) == []


def test_a_tag_written_between_our_read_and_our_listing_is_read(tmp_path, monkeypatch):
    """Eight processes claiming one new directory: one found no tag, another process tagged the
    directory, and the first then listed it, saw the tag and refused it as a stranger's file
    (B009; test_cuda_lifecycle's eight processes, once in CI). Now it reads that tag."""
    (tmp_path / "c").mkdir()
    key = claim(tmp_path / "c")  # "the other process"
    cachedir.forget(tmp_path / "c")
    real, calls = cachedir._read_tag, []

    def late(root):  # the first read misses the tag, as if it were written just after
        calls.append(root)
        if len(calls) == 1:
            raise FileNotFoundError(root)
        return real(root)

    monkeypatch.setattr(cachedir, "_read_tag", late)
    assert claim(tmp_path / "c") == key and len(calls) == 2
    assert sorted(os.listdir(tmp_path / "c")) == [TAG]
