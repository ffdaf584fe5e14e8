"""A new op added by one TOML file in a VYRE_DECL_OPS_PATH directory is usable in a program and
computed by the reference backend, with no Python change (checked in a fresh process)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

EXTRA = Path(__file__).parent / "fixtures" / "extra_ops"

SCRIPT = r"""
import json, sys
import numpy as np
import vyre_decl
from vyre_decl.ir import parse_program
src = '''program use_extra workgroup(64, 1, 1) {
  buffer a: read f32[] @0
  buffer b: read f32[] @1
  buffer o: write f32[len(a)] @2
  buffer p: write f32[len(a)] @3
  let i = gid.x
  if i < len(o) {
    o[i] = demo.fused.axpy(a[i], b[i])
    p[i] = demo.fused.axpy<k=0.5f32>(a[i], b[i])
  }
}'''
prog = parse_program(src)
diags = vyre_decl.validate(prog)
if diags:
    sys.exit("\n".join(map(str, diags)))
o, p = vyre_decl.dispatch(prog, [np.array([1, 2, 3], np.float32), np.array([10, 20, 30], np.float32)], backend="reference")
reg = vyre_decl.default_registry()
print(json.dumps({"o": o.tolist(), "p": p.tolist(), "dialects": sorted(reg.dialects), "errors": len(reg.errors)}))
"""


def run_with(path_value: str, cwd: Path) -> subprocess.CompletedProcess:
    root = str(Path(__file__).resolve().parent.parent)
    pythonpath = os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))
    env = dict(os.environ, VYRE_DECL_OPS_PATH=path_value, PYTHONPATH=pythonpath)
    return subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, cwd=cwd)


def test_op_from_env_path_runs_on_the_reference(tmp_path):
    proc = run_with(str(EXTRA), tmp_path)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["o"] == [13.0, 26.0, 39.0] and result["p"] == [10.5, 21.0, 31.5]
    assert "demo.fused" in result["dialects"] and result["errors"] == 0


def test_env_path_takes_several_directories(tmp_path):
    other = tmp_path / "more"
    other.mkdir()
    (other / "demo.more.toml").write_text(
        '[dialect]\nname = "demo.more"\nversion = "0.1.0"\n[[op]]\nid = "demo.more.twice"\nsummary = "2a"\n'
        'signature = "(a: u32) -> u32"\n'
        'compose = "a + a"\n')
    proc = run_with(os.pathsep.join([str(EXTRA), str(other)]), tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert {"demo.fused", "demo.more"} <= set(json.loads(proc.stdout)["dialects"])


def test_without_the_env_path_the_op_is_unknown(tmp_path):
    proc = run_with("", tmp_path)
    assert proc.returncode != 0 and "V005" in proc.stderr and "demo.fused.axpy" in proc.stderr


def test_the_suite_is_hermetic_against_an_ops_path_in_the_environment(tmp_path):
    """A caller's VYRE_DECL_OPS_PATH (here: one extra op) must not change what the suite counts:
    the standard-op counts of the registry, snapshot and CLI tests pass with it set."""
    env = dict(os.environ, VYRE_DECL_OPS_PATH=str(EXTRA), VYRE_DECL_CACHE_DIR=str(tmp_path / "cache"))
    root = Path(__file__).resolve().parent.parent
    tests = ["tests/test_snapshot.py::test_a_corrupt_snapshot_is_rebuilt",
             "tests/test_cli.py::test_list_table_and_json"]  # counts the dialects of "ops list"
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests], cwd=root,
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "2 passed" in proc.stdout
