"""``VYRE_DECL_CUDA_SIM`` selects the simulated driver (issue 26): the unchanged CUDA backend over
simulated GPUs, in a fresh process, on a machine without one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SCRIPT = """
import json, numpy as np, vyre_decl
from vyre_decl.backends.cuda import cuda_available, cuda_device_count
from vyre_decl import libcuda
out = {"available": cuda_available(), "devices": cuda_device_count()}
if out["available"]:
    p = vyre_decl.parse_program('''program saxpy workgroup(64, 1, 1) {
  buffer x: read f32[] @0
  buffer y: read f32[] @1
  buffer out: write f32[len(x)] @2
  let i = gid.x
  if i < len(out) { out[i] = x[i] * 2.0f32 + y[i] }
}''')
    x, y = np.arange(1000, dtype=np.float32), np.ones(1000, np.float32)
    cuda = vyre_decl.acquire("cuda")
    out["name"], out["simulated"] = cuda.device.name, libcuda.is_simulated()
    out["right"] = bool(np.array_equal(cuda.dispatch(p, [x, y])[0], x * np.float32(2) + y))
else:
    try:
        from vyre_decl.backends.cuda import CudaBackend
        CudaBackend()
    except vyre_decl.VyreError as e:
        out["codes"], out["text"] = e.codes, str(e)
print(json.dumps(out))
"""


def _run(spec: str) -> dict:
    env = dict(os.environ, VYRE_DECL_CUDA_SIM=spec,
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.splitlines()[-1])


def test_a_plain_dispatch_runs_on_a_simulated_h100():
    out = _run("h100")
    assert out["available"] and out["devices"] == 1 and out["simulated"] and out["right"], out
    assert "H100" in out["name"]


def test_two_profiles_are_two_devices():
    assert _run("h100,h100")["devices"] == 2


def test_an_unknown_profile_is_no_driver_and_says_which_profiles_exist():
    out = _run("h1000")
    assert not out["available"] and out["codes"] == ["C001"] and "h100" in out["text"], out
