"""The author's loop covers routines (issue 27): `ops check PATHS` loads the routine files beside the
op files, compiles every binding and runs every known answer on the reference, reporting a wrong
one as U025 naming file, routine and case; `conform --routines` compares the backend with the known
answers, so a wrong answer fails even a run that certifies the reference against itself."""

from __future__ import annotations

import json
import os
import re

import numpy as np
import pytest

import vyre_decl
from vyre_decl.conform.cli import main as conform_main
from vyre_decl.ops.cli import main as ops_main
from vyre_decl.ops.routinecheck import check_routines
from vyre_decl.routines import routines
from vyre_decl.routines.katrun import kat_mismatch
from vyre_decl.routines.runner import CompiledRoutine

SQUARES = '''[family]
name = "acme"
version = "1.0.0"
summary = "a user's routines"

[kernel.fold]
params = ["lift"]
source = """
program acme_fold workgroup(64, 1, 1) {
  buffer src: read T[] @0
  buffer dst: read_write T[] @1
  if gid.x == 0u32 {
    let acc = T.zero
    loop i in 0u32 .. len(src) { acc = acc + $lift(src[i], src[i]) }
    dst[0u32] = acc
  }
}
"""

[[routine]]
id = "acme.sum_squares"
summary = "the sum of the squares, in order"
types = { T = "u32,f32" }
with = { lift = "primitive.math.mul" }
buffers = { x = "in T[]", out = "out T[1]" }
steps = [{ kernel = "fold", args = ["x", "out"], grid = "1" }]
kat = KAT
'''


def _file(tmp_path, kat: str = "[[[1, 2, 3], [14]], [[], [0]]]"):
    path = tmp_path / "acme.routines.toml"
    path.write_text(SQUARES.replace("KAT", kat))
    return path


def test_ops_check_runs_the_known_answers_of_a_routine_file(tmp_path, capsys):
    path = _file(tmp_path)
    assert ops_main(["check", str(path), "--no-ptxas", "--no-sim"]) == 0
    out = capsys.readouterr().out
    standard = routines(vyre_decl.default_registry())  # the standard library's, beside this file
    files = len({r.file for r in standard.values()}) + 1
    assert out.startswith("ok:") and f"{len(standard) + 1} routines from {files} routine file(s) (2 bindings compiled, " \
        "4 known answers run on the reference)" in out, out


def test_ops_check_reports_a_wrong_known_answer_as_u025(tmp_path, capsys):
    path = _file(tmp_path, "[[[1, 2, 3], [15]]]")
    assert ops_main(["check", str(tmp_path), "--no-ptxas", "--no-sim"]) == 1
    err = capsys.readouterr().err
    assert "U025" in err and "[routine acme.sum_squares] kat[0]" in err and str(path) in err
    assert "out[0] is 14" in err and "known answer 15" in err and "T=u32" in err


def test_ops_check_reports_load_errors_of_routine_files(tmp_path, capsys):
    _file(tmp_path).write_text(SQUARES.replace("KAT", "[[[1], [1]]]").replace("primitive.math.mul", "primitive.math.mull"))
    assert ops_main(["check", str(tmp_path), "--no-ptxas", "--no-sim", "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    codes = [d["code"] for d in report["diagnostics"]]
    assert "U007" in codes and "U020" in codes
    assert any("with.lift" in d["location"] and "primitive.math.mul" in d["fix"] for d in report["diagnostics"])


def test_check_routines_compiles_every_binding(tmp_path):
    _file(tmp_path)
    report = check_routines(vyre_decl.load_registry([tmp_path]), only_paths=True)
    assert report.diagnostics == [] and report.bindings == 2 and report.kats == 4 and report.routines >= 41


def test_a_float_known_answer_is_within_4_ulp():
    reg = vyre_decl.default_registry()
    d = vyre_decl.routines.routines()["reduce.sum"]
    compiled = CompiledRoutine(d, {"T": vyre_decl.ir.types.DataType.F32}, reg)
    case = d.kats[0]
    one = np.float32(6.0)
    assert kat_mismatch(compiled, case, [np.array([one])]) is None
    assert kat_mismatch(compiled, case, [np.array([np.nextafter(one, np.float32(7), dtype=np.float32)])]) is None
    far = np.array([one]).view(np.uint32) + 5
    assert "more than 4 ULP" in kat_mismatch(compiled, case, [far.view(np.float32)])


@pytest.mark.parametrize("kat,status", [("[[[1, 2, 3], [14]]]", 0), ("[[[1, 2, 3], [15]]]", 1)])
def test_conform_routines_compares_with_the_known_answers(tmp_path, monkeypatch, capsys, kat, status):
    _file(tmp_path, kat)
    monkeypatch.setenv("VYRE_DECL_OPS_PATH", str(tmp_path))
    out = tmp_path / "cert.json"
    assert conform_main(["--backend", "reference", "--routines", "acme.*", "--out", str(out), "--quiet"]) == status
    cert = json.loads(out.read_text())
    units = cert["routines"]["acme.sum_squares[u32]"]["runs"]
    assert set(units) == {"0", "1", "31", "1000", "4097"}
    if status:
        text = json.dumps(cert)
        assert "kat" in text and "known answer disagrees" in text and "kat[0]" in text


def test_conformance_outputs_are_git_ignored(tmp_path):
    import shutil
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    git = shutil.which("git")
    if git is None or not (root / ".git").exists():
        pytest.skip("not a git checkout")
    names = ["vyre-certificate.json", "vyre-certificate-capsules/op_x.json", "f1-capsules/a.json"]
    done = subprocess.run([git, "check-ignore", *names], cwd=root, capture_output=True, text=True)
    assert done.stdout.split() == names


def test_ops_check_runs_a_routine_files_known_answers_on_a_cuda_device_too(tmp_path, capsys, monkeypatch):
    """Issue 27 item 2: once they hold on the reference, the known answers run on a CUDA device
    (without a GPU the simulated H100, in a child process, so this process's driver stays what
    it was)."""
    if not os.environ.get("VYRE_DECL_CUDA_SIM"):
        monkeypatch.setenv("VYRE_DECL_CUDA_SIM", "h100")  # the child's device, whatever this machine has
    good = _file(tmp_path)
    assert ops_main(["check", str(good), "--no-ptxas"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"; 4 routine known answer\(s\) run on NVIDIA H100 80GB HBM3 \(simulated\);", out), out
    wrong = _file(tmp_path, "[[[1, 2, 3], [15]]]")
    assert ops_main(["check", str(wrong), "--no-ptxas"]) == 1
    captured = capsys.readouterr()
    assert captured.err.count("U025") == 2, captured.err  # u32 and f32, on the reference
    assert "run on NVIDIA" not in captured.out  # the device waits until the reference agrees
