"""docs/simulator.md says what the code does: its examples print what the document shows, on
stdout and on stderr (run in fresh processes on a simulated H100), its list of driver functions
is the driver's prototype table, every instruction the interpreter decodes is named, and its
profile table is profiles.py's."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from vyre_decl.sim import PROFILES, PROTOTYPES
from vyre_decl.sim.ptx_decode import MODELLED

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "simulator.md"


def _blocks(kind: str) -> dict[str, str]:
    """``<!-- KIND: NAME -->`` followed by a fenced block: NAME -> the block's text."""
    text = DOC.read_text()
    return {m.group(1): m.group(2) for m in re.finditer(rf"<!-- {kind}: (\S+) -->\s*```[a-z]*\n(.*?)```", text, re.S)}


def _section(title: str) -> str:
    text = DOC.read_text()
    start = text.index(title)
    end = text.find("\n#", start + len(title))
    return text[start:end if end >= 0 else None]


EXAMPLES = _blocks("example")


def test_every_example_has_its_output():
    assert set(EXAMPLES) == set(_blocks("output")) == {"stale.py", "fault.py", "racy.py", "planted.py"}


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_the_examples_print_what_the_document_shows(name, tmp_path):
    (tmp_path / name).write_text(EXAMPLES[name])
    env = dict(os.environ, VYRE_DECL_CUDA_SIM="h100",
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    proc = subprocess.run([sys.executable, name], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout == _blocks("output")[name], (
        f"docs/simulator.md's output of {name} is out of date; it now prints:\n{proc.stdout}")
    if name in _blocks("stderr"):  # the sanitizer's report at exit
        assert proc.stderr == _blocks("stderr")[name], f"{name} now reports on stderr:\n{proc.stderr}"


def test_the_driver_functions_listed_are_the_prototype_table():
    listed = re.findall(r"`(cu[A-Z][A-Za-z0-9_]*)`", _section("### Driver functions modelled"))
    assert sorted(listed) == sorted(PROTOTYPES) and len(listed) == len(set(listed))
    assert f"The model has {len(PROTOTYPES)} functions" in DOC.read_text()


def test_every_instruction_the_interpreter_decodes_is_named():
    named = set(re.findall(r"`([a-z][a-z0-9]*)", _section("### Instructions modelled")))
    assert MODELLED <= named, sorted(MODELLED - named)


def test_the_profile_table_is_profiles_py():
    table = _section("## Running a program on it")
    rows = {m.group(1): m.group(2).split(" | ") for m in re.finditer(r"^\| `(\w+)` \| (.*) \|$", table, re.M)}
    assert set(rows) == set(PROFILES)
    for key, p in PROFILES.items():
        name, target, sms, threads, blocks = rows[key][:5]
        assert (name, target, int(sms), int(threads), int(blocks)) == (
            p.name, f"sm_{p.sm}", p.multiprocessors, p.max_threads_per_sm, p.max_blocks_per_sm), key


def test_the_readme_links_the_document_and_ci_has_its_section():
    assert "docs/simulator.md" in (ROOT / "README.md").read_text()
    assert "\n## In CI\n" in DOC.read_text()
