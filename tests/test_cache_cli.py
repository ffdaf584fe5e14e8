"""The on-disk cache is bounded (least recently used entries go first) and
``python -m vyre_decl.cache info`` / ``clear`` show and empty it. (What the cache may touch, and
what it must leave alone: tests/test_diskcache.py.)"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from vyre_decl.cache import main
from vyre_decl.cachedir import HEADER
from vyre_decl.diskcache import DiskCache, evict, usage

ROOT = Path(__file__).resolve().parent.parent


def test_eviction_removes_the_least_recently_used(tmp_path):
    cache = DiskCache(tmp_path, "cubin")
    for i in range(4):
        cache.put(f"{i:064x}", bytes(1000))
        path = tmp_path / "cubin" / f"{i:064x}"[:2] / f"{i:064x}"
        os.utime(path, (time.time() - 100 + i, time.time() - 100 + i))
    assert cache.get(f"{0:064x}") == bytes(1000) and cache.hits == 1  # a hit makes entry 0 the newest
    assert cache.get("f" * 64) is None and cache.misses == 1
    assert evict(2 * (1000 + HEADER) + 10, tmp_path) == 2
    assert cache.get(f"{0:064x}") is not None and cache.get(f"{1:064x}") is None and cache.get(f"{3:064x}") is not None
    assert usage(tmp_path) == {"cubin": (2, 2 * (1000 + HEADER))}


def test_puts_respect_the_cap(tmp_path, monkeypatch):
    monkeypatch.setenv("VYRE_DECL_CACHE_MAX_MB", "0")
    cache = DiskCache(tmp_path, "ptx")
    cache.put("a" * 64, b"x" * 100)
    assert usage(tmp_path) == {} and cache.evictions == 1


def test_cli_info_and_clear(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("VYRE_DECL_CACHE_DIR", str(tmp_path))
    DiskCache(tmp_path, "ptx").put("a" * 64, b"text")
    DiskCache(tmp_path, "cubin").put("b" * 64, b"binary")
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    assert "ptx" in out and "cubin" in out and str(tmp_path) in out
    assert main(["clear", "--kind", "ptx"]) == 0 and usage(tmp_path) == {"cubin": (1, 6 + HEADER)}
    assert main(["clear"]) == 0 and usage(tmp_path) == {}
    assert main(["nonsense"]) == 2
    assert main(["clear", "--kind", "nonsense"]) == 2  # not a kind of the cache: refused, nothing deleted
    env = dict(os.environ, VYRE_DECL_CACHE_DIR=str(tmp_path), PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "vyre_decl.cache", "info"], capture_output=True, text=True, env=env)
    assert proc.returncode == 0 and "total" in proc.stdout


def test_a_setting_that_is_not_a_number_is_b008(tmp_path, monkeypatch, capsys):
    from vyre_decl.ir import VyreError
    from vyre_decl.settings import env_int

    monkeypatch.setenv("VYRE_DECL_CACHE_DIR", str(tmp_path))
    for bad in ("12MB", "-3", "1.5", "١٢"):  # the last: Arabic-Indic digits
        monkeypatch.setenv("VYRE_DECL_CACHE_MAX_MB", bad)
        try:
            DiskCache(tmp_path, "ptx")
        except VyreError as exc:
            assert exc.codes == ["B008"] and "VYRE_DECL_CACHE_MAX_MB" in str(exc) and "Fix:" in str(exc)
        else:
            raise AssertionError(f"{bad!r} was accepted")
        assert main(["info"]) == 2 and "B008" in capsys.readouterr().err
    monkeypatch.setenv("VYRE_DECL_CACHE_MAX_MB", " 7 ")
    assert env_int("VYRE_DECL_CACHE_MAX_MB", 1) == 7
    monkeypatch.delenv("VYRE_DECL_CACHE_MAX_MB")
    assert env_int("VYRE_DECL_CACHE_MAX_MB", 1) == 1


def test_a_setting_of_thousands_of_digits_is_b008_not_a_raw_value_error(tmp_path, monkeypatch, capsys):
    from vyre_decl.ir import VyreError
    from vyre_decl import settings

    monkeypatch.setenv("VYRE_DECL_CACHE_DIR", str(tmp_path))
    for bad in ("9" * 5000, "1" + "0" * 30, str(getattr(settings, "MAX_SETTING", 0) + 1)):
        monkeypatch.setenv("VYRE_DECL_CACHE_MAX_MB", bad)
        try:
            DiskCache(tmp_path, "ptx")
        except VyreError as exc:
            assert exc.codes == ["B008"] and "too large" in str(exc) and "Fix:" in str(exc) and len(str(exc)) < 400
        else:
            raise AssertionError(f"{bad[:20]!r}... was accepted")
        assert main(["info"]) == 2 and "B008" in capsys.readouterr().err
    monkeypatch.setenv("VYRE_DECL_CACHE_MAX_MB", "0" * 5000 + str(settings.MAX_SETTING))  # leading zeros are no size
    assert settings.env_int("VYRE_DECL_CACHE_MAX_MB", 1) == settings.MAX_SETTING


def test_another_keys_entry_is_rebuilt_and_a_file_without_the_header_left_alone(tmp_path, caplog):
    import hashlib
    import shutil

    cache = DiskCache(tmp_path, "cubin")
    one, two = f"{1:064x}", f"{2:064x}"
    cache.put(one, b"kernel one")
    cache.put(two, b"kernel two")
    path = lambda key: tmp_path / "cubin" / key[:2] / key  # noqa: E731
    shutil.copy(path(one), path(two))  # an intact entry of another key in this key's place: ours, but damaged
    assert cache.get(two) is None and not path(two).exists()
    assert "corrupt or foreign cache entry" in caplog.text
    assert cache.get(one) == b"kernel one"  # the original is untouched
    caplog.clear()
    old = hashlib.sha256(two.encode() + b"\0old").digest() + b"old"  # the earlier format: no header, no secret
    path(two).write_bytes(old)
    assert cache.get(two) is None and "not a vyre_decl cache entry" in caplog.text
    cache.put(two, b"kernel two")  # not ours: neither deleted nor overwritten
    assert path(two).read_bytes() == old and cache.get(two) is None
