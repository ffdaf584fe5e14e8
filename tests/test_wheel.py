"""Packaging: the wheel carries the standard ops, and a plain install (outside the source tree)
finds and loads them."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    src = tmp_path_factory.mktemp("src") / "vyre_decl"  # a clean copy: no stale build/ directory
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(".git", ".venv", ".ci-venv", "build", "dist", "*.egg-info",
                                                             "__pycache__", ".pytest_cache", ".whl"))
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(src)],
        capture_output=True, text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (whl,) = out.glob("vyre_decl-*.whl")
    return whl


def test_wheel_contains_the_ops(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    shipped = sorted(n.rsplit("/", 1)[1] for n in names if n.startswith("vyre_decl/_ops/") and n.endswith(".toml"))
    assert shipped == sorted(p.name for p in (ROOT / "ops").glob("*.toml"))
    routines = sorted(n.rsplit("/", 1)[1] for n in names if n.startswith("vyre_decl/_routines/") and n.endswith(".toml"))
    assert routines == sorted(p.name for p in (ROOT / "routines").glob("*.routines.toml"))
    corpus = sorted(n.rsplit("/", 1)[1] for n in names if n.startswith("vyre_decl/_corpus/"))
    assert corpus == sorted(p.name for p in (ROOT / "corpus").glob("*.vyre"))
    assert "vyre_decl/py.typed" in names
    packages = {n.rsplit("/", 1)[0] for n in names if n.endswith("__init__.py")}
    on_disk = {str(p.parent.relative_to(ROOT)) for p in (ROOT / "vyre_decl").rglob("__init__.py")}
    assert on_disk <= packages, "every package directory must be listed in pyproject.toml"


def test_installed_wheel_loads_its_registry(wheel, tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    py = venv / "bin" / "python"
    site = Path(subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target", str(site),
                    str(wheel)], check=True)
    # numpy, pydantic and tomli-w from this environment, without its (editable) vyre_decl
    import numpy, pydantic, tomli_w  # noqa: E401

    deps = {str(Path(m.__file__).resolve().parent.parent) for m in (numpy, pydantic, tomli_w)}
    (site / "deps.pth").write_text("\n".join(sorted(deps)) + "\n")
    script = (
        "import vyre_decl, json\n"
        "from vyre_decl.registry import load, standard_ops_dir\n"
        "from vyre_decl.conform.corpus import load_corpus\n"
        "from vyre_decl.routines import routines, routine_diagnostics\n"
        "r = load()\n"
        "print(json.dumps({'file': vyre_decl.__file__, 'ops_dir': str(standard_ops_dir()), 'ops': len(r), "
        "'errors': len(r.errors), 'corpus': len(load_corpus()), 'routines': len(routines()), "
        "'routine_problems': len(routine_diagnostics())}))\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VYRE_DECL_OPS_PATH")}
    proc = subprocess.run([str(py), "-c", script], capture_output=True, text=True, cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    import json

    info = json.loads(proc.stdout)
    assert info["file"].startswith(str(site)) and info["ops_dir"] == str(site / "vyre_decl" / "_ops")
    from vyre_decl.registry import load

    assert info["errors"] == 0 and info["ops"] == len(load(env=False))
    assert info["corpus"] == len(list((ROOT / "corpus").glob("*.vyre")))
    from vyre_decl.routines import routines

    assert info["routine_problems"] == 0 and info["routines"] == len(routines()) > 0
