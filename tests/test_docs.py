"""The documentation in the repository: the worked example of docs/ops-format.md runs end to end as
written (write the files, ops check, laws --suggest, dispatch, emit --check, conform), and the
README points only inside the repository."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from vyre_decl.emit import find_ptxas

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "ops-format.md"


def _examples(text: str) -> dict[str, str]:
    """``<!-- example: NAME -->`` followed by a fenced block: NAME -> the block's text."""
    return {m.group(1): m.group(2) for m in re.finditer(r"<!-- example: (\S+) -->\s*```[a-z]*\n(.*?)```", text, re.S)}


def test_the_worked_example_runs_as_written(tmp_path):
    if not find_ptxas():
        pytest.skip("the example assembles its PTX: pip install nvidia-cuda-nvcc")
    examples = _examples(DOC.read_text())
    assert set(examples) == {"my.blend.toml", "blend.vyre", "blend.py", "commands"}
    for name, text in examples.items():
        if name != "commands":
            (tmp_path / name).write_text(text)
    env = dict(os.environ, PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]),
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    script = "set -e\n" + "\n".join(f"echo '$ {line}'\n{line}" for line in examples["commands"].splitlines())
    proc = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert re.search(r"ok: \d+ ops checked \(\d+ loaded from \d+ file\(s\)\)", out) and "ok: every law that holds in 2 op(s)" in out
    assert "[2. 2. 2. 2.] [2147483648 2147483648 2147483649 4294967295]" in out
    assert "assembled by ptxas" in out and "PASS" in out and (tmp_path / "blend-cert.json").exists()


def test_docs_are_in_the_repository():
    readme = (ROOT / "README.md").read_text()
    assert "../shared" not in readme and "DESIGN.md" not in readme
    for doc in ("docs/ops-format.md", "docs/semantics.md"):
        assert doc in readme and (ROOT / doc).is_file()


def test_every_loader_code_is_documented():
    from vyre_decl.registry import loader

    codes = set(re.findall(r"R0\d\d", loader.__doc__ or ""))
    doc = DOC.read_text()
    assert codes and all(code in doc for code in codes) and "R030" in doc and "R032" in doc


def test_every_backend_and_program_text_error_code_is_documented():
    raised = set()
    for path in (ROOT / "vyre_decl").rglob("*.py"):
        raised |= set(re.findall(r'"([BCDEPV]0\d\d)"', path.read_text()))
    documented = set(re.findall(r"\| ([BCDEPV]0\d\d) \|", (ROOT / "docs" / "errors.md").read_text()))
    assert raised and raised <= documented, sorted(raised - documented)
    assert {"E001", "V001", "V026"} <= raised
    assert "docs/errors.md" in (ROOT / "README.md").read_text()
