"""The conformance runner against the cuda backend (marked gpu): a full certification, a planted
wrong PTX template caught with a minimised counterexample, and a planted illegal-address kernel
reported while the run goes on."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from vyre_decl.backends.cuda import cuda_available

ROOT = Path(__file__).resolve().parent.parent
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not cuda_available(), reason="no CUDA GPU: libcuda.so.1 cannot be "
                                                  "loaded or reports no device")]


def conform(tmp_path: Path, *args: str, ops_path: Path | None = None,
            pythonpath: Path | None = None) -> tuple[int, dict, str]:
    paths = [str(pythonpath) if pythonpath else "", str(ROOT), os.environ.get("PYTHONPATH")]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, paths)),
               VYRE_DECL_CACHE_DIR=str(tmp_path / "cache"))
    if ops_path:
        env["VYRE_DECL_OPS_PATH"] = str(ops_path)
    out = tmp_path / "cert.json"
    proc = subprocess.run([sys.executable, "-m", "vyre_decl.conform", "--backend", "cuda", "--quiet", "--out", str(out),
                           *args], capture_output=True, text=True, env=env, timeout=540)
    cert = json.loads(out.read_text()) if out.exists() else {}
    return proc.returncode, cert, proc.stdout + proc.stderr


@pytest.mark.hardware_only("1,000 cases per op x type take too long on the interpreter; .ci/run certifies "
                           "the simulated device with fewer cases")
def test_full_certification_of_the_cuda_backend(tmp_path):
    t0 = time.perf_counter()
    code, cert, text = conform(tmp_path)
    print(f"\n{text}\nwall time {time.perf_counter() - t0:.1f} s")
    assert code == 0, text
    assert cert["backend"]["id"] == "cuda" and cert["backend"]["ptx_target"]
    assert cert["summary"]["verdict"] == "pass" and len(cert["programs"]) >= 40


BAD_TEMPLATE = """
[dialect]
name = "planted_gpu"
version = "1.0.0"

[[op]]
id = "planted_gpu.add"
summary = "addition whose PTX template drops bit 7 of the sum"
signature = "(a: T, b: T) -> T"
types = { T = "u32" }
reference = "add"
ptx = "add.u32 {out}, {a}, {b}; and.b32 {out}, {out}, 0xFFFFFF7F;"
"""

# Op templates cannot touch memory (the loader refuses it), so the illegal-address fault is planted
# below the op format: every process of the run (the runner and its isolated workers) imports this
# sitecustomize, which makes the emitter append a store to device address 16 to the program "poke".
FAULT_HOOK = """
import vyre_decl.emit as _emit
import vyre_decl.emit.module as _module
from dataclasses import replace as _replace

_real = _module.emit


def _planted(program, *args, **kwargs):
    module = _real(program, *args, **kwargs)
    if program.name != "poke":
        return module
    store = "\\t{ .reg .u64 %fault; mov.u64 %fault, 16; st.global.u32 [%fault], 0; }\\n$L_exit:"
    return _replace(module, text=module.text.replace("$L_exit:", store))  # every entry


_module.emit = _emit.emit = _planted
"""


def test_planted_template_bug_and_fault(tmp_path):
    ops = tmp_path / "ops"
    ops.mkdir()
    (ops / "planted_gpu.toml").write_text(BAD_TEMPLATE)
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(FAULT_HOOK)
    programs = tmp_path / "programs"
    programs.mkdir()
    (programs / "a_fault.vyre").write_text("""program poke workgroup(64, 1, 1) {
  buffer a: read u32[] @0
  buffer o: write u32[len(a)] @1
  let i = gid.x
  if i < len(a) { o[i] = a[i] }
}""")
    (programs / "b_fine.vyre").write_text((ROOT / "corpus" / "01_vadd_u32.vyre").read_text())
    code, cert, text = conform(tmp_path, "--dialect", "planted_gpu", "--programs", str(programs), ops_path=ops,
                               pythonpath=hook)
    print(text)
    assert code == 1
    (bug,) = [f for f in cert["ops"]["planted_gpu.add[u32]"]["failures"] if f["kind"] == "backend"]
    d = bug["details"]
    assert int(d["expected"]["dec"]) - int(d["actual"]["dec"]) == 128
    assert int(d["inputs"]["a"]["dec"]) + int(d["inputs"]["b"]["dec"]) in (128, 128 + 256)  # shrunk to bit 7 alone
    fault = cert["programs"]["a_fault"]
    assert fault["verdict"] == "fail"
    assert any("ILLEGAL_ADDRESS" in f["message"] for r in fault["runs"].values() for f in r["failures"])
    assert cert["programs"]["b_fine"]["verdict"] == "pass"  # the run went on after the fault
