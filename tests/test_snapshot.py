"""Registry snapshots: written once, read by later loads, keyed by the sources, rebuilt when stale or
corrupt, never executing code from the cache, tolerant of a cache that cannot be written."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from vyre_decl.cachedir import HEADER, MAGIC
from vyre_decl.diskcache import DiskCache
from vyre_decl.registry import files as files_mod
from vyre_decl.registry import load, snapshot
from vyre_decl.registry.loader import standard_ops_dir

ROOT = Path(__file__).resolve().parent.parent
STANDARD_OPS = len(load(env=False, snapshot=False))


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("VYRE_DECL_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache" / "registry"


def _snapshots(cache: Path) -> list[Path]:
    return sorted(p for p in cache.rglob("*") if p.is_file() and not p.name.startswith(".tmp"))


def _same(a, b) -> None:
    assert [op.id for op in a] == [op.id for op in b]
    assert a.fingerprint == b.fingerprint and a.diagnostics == b.diagnostics
    for op in a:
        assert b.get(op.id) == op


def _forbid_reading(monkeypatch) -> None:
    def refuse(path):
        raise AssertionError(f"{path} was read although a snapshot should serve")

    monkeypatch.setattr(files_mod, "read_op_file", refuse)


def test_a_second_load_reads_the_snapshot(cache, monkeypatch):
    first = load(env=False)
    (snap,) = _snapshots(cache)
    _forbid_reading(monkeypatch)
    _same(first, load(env=False))
    assert _snapshots(cache) == [snap]


def test_a_second_process_uses_the_snapshot_without_the_checking_machinery(cache):
    load(env=False)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    code = ("import sys\nfrom vyre_decl.registry import load\nr = load(env=False)\n"
            "print(len(r), 'vyre_decl.registry.files' in sys.modules, 'pydantic' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout
    assert out.split() == [str(STANDARD_OPS), "False", "False"]


def test_a_changed_op_file_is_a_new_key(cache, tmp_path):
    ops = tmp_path / "ops"
    ops.mkdir()
    for f in standard_ops_dir().glob("*.toml"):
        (ops / f.name).write_bytes(f.read_bytes())
    before = load([ops], standard=False, env=False)
    math = ops / "primitive.math.toml"
    math.write_text(math.read_text().replace('summary = "a + b: wrapping', 'summary = "A + B: wrapping'))
    after = load([ops], standard=False, env=False)
    assert after.get("primitive.math.add").summary.startswith("A + B")
    assert before.fingerprint != after.fingerprint and len(_snapshots(cache)) == 2


def test_a_corrupt_snapshot_is_rebuilt(cache, caplog):
    first = load(env=False)
    (snap,) = _snapshots(cache)
    snap.write_bytes(snap.read_bytes()[:100] + b"garbage")
    _same(first, load(env=False))
    assert "corrupt or foreign cache entry" in caplog.text
    assert len(snap.read_bytes()) > 1000  # written again


class _Boom:
    def __reduce__(self):
        return (os.system, ("touch planted-by-snapshot",))


def _plant(snap: Path, payload: bytes) -> None:
    """Store ``payload`` as the snapshot ``snap`` the way this cache does, with its secret key: what
    only a process of this installation can write (the unpickler is the second line of defence)."""
    DiskCache(snap.parent.parent.parent, "registry").put(snap.name, payload)


def _payload(snap: Path) -> bytes:
    return snap.read_bytes()[HEADER:]


def test_a_planted_pickle_does_not_run(cache, tmp_path, monkeypatch, caplog):
    load(env=False)
    (snap,) = _snapshots(cache)
    _plant(snap, pickle.dumps(_Boom()))  # valid checksum, hostile pickle
    monkeypatch.chdir(tmp_path)
    reg = load(env=False)
    assert len(reg) == STANDARD_OPS and not (tmp_path / "planted-by-snapshot").exists()
    assert "not allowed in a registry snapshot" in caplog.text


def test_an_unwritable_cache_is_tolerated(tmp_path, monkeypatch, caplog):
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("x")
    monkeypatch.setenv("VYRE_DECL_CACHE_DIR", str(blocker))
    assert len(load(env=False)) == STANDARD_OPS
    assert len(load(env=False)) == STANDARD_OPS
    assert "cannot write cache entry" in caplog.text


def test_snapshot_false_neither_reads_nor_writes(cache):
    load(env=False, snapshot=False)
    assert _snapshots(cache) == []


def test_the_key_covers_paths_bytes_and_early_diagnostics(tmp_path):
    a, b = tmp_path / "a.toml", tmp_path / "b.toml"
    assert snapshot.snapshot_key([(a, b"x")], []) != snapshot.snapshot_key([(b, b"x")], [])  # another path
    assert snapshot.snapshot_key([(a, b"x")], []) != snapshot.snapshot_key([(a, b"y")], [])  # other bytes
    assert snapshot.snapshot_key([(a, OSError("unreadable"))], []) is None


def test_the_registry_and_its_key_come_from_one_read(cache, tmp_path, monkeypatch):
    """A file edited while it loads cannot be stored under the key of its other version."""
    from vyre_decl.registry import loader

    src = (ROOT / "tests" / "fixtures" / "extra_ops" / "demo.fused.toml").read_bytes()
    path = tmp_path / "demo.fused.toml"
    path.write_bytes(src)
    real = loader.read_bytes

    def read_then_edit(p):
        data = real(p)
        if p == path:  # the file changes on disk right after the loader read it
            path.write_bytes(src.replace(b"a * k + b with", b"EDITED"))
        return data

    monkeypatch.setattr(loader, "read_bytes", read_then_edit)
    first = load([path], env=False)
    assert first.get("demo.fused.axpy").summary.startswith("a * k + b with")
    monkeypatch.setattr(loader, "read_bytes", real)
    assert load([path], env=False).get("demo.fused.axpy").summary.startswith("EDITED")


def test_a_dotted_global_cannot_walk_to_os_system(cache, tmp_path, monkeypatch, caplog):
    """Protocol 4 resolves dotted names attribute by attribute: vyre_decl.registry.loader + os.system
    would reach os.system through the module's `os` import. Only exact class names are allowed."""
    load(env=False)
    (snap,) = _snapshots(cache)
    out = b"\x80\x04"
    for part in (b"vyre_decl.registry.loader", b"os.system"):
        out += b"\x8c" + bytes([len(part)]) + part
    cmd = b"touch planted-by-snapshot"
    out += b"\x93\x8c" + bytes([len(cmd)]) + cmd + b"\x85R."
    _plant(snap, out)
    monkeypatch.chdir(tmp_path)
    assert len(load(env=False)) == STANDARD_OPS and not (tmp_path / "planted-by-snapshot").exists()
    assert "vyre_decl.registry.loader.os.system is not allowed" in caplog.text


def test_eight_processes_filling_one_cache_at_once_all_get_the_registry(tmp_path):
    import os
    import subprocess
    import sys

    code = ("from vyre_decl.registry import load; r = load(env=False); "
            "print(len(r), len(r.errors), r.get('primitive.math.add').id)")
    env = dict(os.environ, VYRE_DECL_CACHE_DIR=str(tmp_path / "cache"))
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=env) for _ in range(8)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [e[-500:] for _, e in outs]
    assert len({o for o, _ in outs}) == 1 and outs[0][0].split()[1:] == ["0", "primitive.math.add"]
    again = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert again.returncode == 0 and again.stdout == outs[0][0]  # and the snapshot they left is sound


def test_a_planted_op_entry_is_r034_when_first_used(cache):
    from vyre_decl.ir import VyreError

    load(env=False)
    (snap,) = _snapshots(cache)
    dialects, diagnostics, sources, rejected, fingerprint, raw = pickle.loads(_payload(snap))
    raw["primitive.math.add"] = pickle.dumps(12345)  # allowed by the unpickler, but not an op
    _plant(snap, pickle.dumps((dialects, diagnostics, sources, rejected, fingerprint, raw)))
    reg = load(env=False)
    assert reg.get("primitive.math.sub").id == "primitive.math.sub"  # the others are fine
    with pytest.raises(VyreError) as info:
        reg.get("primitive.math.add")
    assert info.value.codes == ["R034"] and "cache clear" in str(info.value)


def test_a_planted_snapshot_whose_checksum_matches_is_rebuilt_never_trusted(cache, caplog):
    """A real op, changed, in a snapshot whose checksum is right by the rules a stranger can follow
    (the earlier format's SHA-256 of key and payload; the header with that SHA-256 instead of the
    cache's keyed MAC): the loaded add is the real one, never the planted one."""
    import hashlib

    from vyre_decl.ir.record import replace

    load(env=False)
    (snap,) = _snapshots(cache)
    original = snap.read_bytes()
    dialects, diagnostics, sources, rejected, fingerprint, raw = pickle.loads(original[HEADER:])
    raw["primitive.math.add"] = pickle.dumps(replace(pickle.loads(raw["primitive.math.add"]), summary="PLANTED"))
    payload = pickle.dumps((dialects, diagnostics, sources, rejected, fingerprint, raw))
    checksum = hashlib.sha256(snap.name.encode() + b"\0" + payload).digest()
    for planted in (checksum + payload, MAGIC + checksum + payload):
        snap.write_bytes(planted)
        assert load(env=False).get("primitive.math.add").summary != "PLANTED"
    assert "corrupt or foreign cache entry" in caplog.text  # the one with the header: ours in form, so replaced
    assert snap.read_bytes() != planted and len(_snapshots(cache)) == 1
