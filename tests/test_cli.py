"""python -m vyre_decl.ops: list, show, check, new, schema."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from vyre_decl.emit import find_ptxas
from vyre_decl.registry import load
from vyre_decl.ops import main

ROOT = Path(__file__).resolve().parent.parent
BAD = ROOT / "tests" / "fixtures" / "bad_ops"


def test_list_table_and_json(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "primitive.math.add" in out and f"ops in {len(load(env=False).dialects)} dialects" in out
    assert main(["list", "--json", "--dialect", "primitive.logical"]) == 0
    ops = json.loads(capsys.readouterr().out)
    assert {o["id"] for o in ops} == {"primitive.logical.and", "primitive.logical.or", "primitive.logical.not"}


def test_show(capsys):
    assert main(["show", "primitive.math.div"]) == 0
    out = capsys.readouterr().out
    assert "reference : int_div for u32" in out and "right_identity(one)" in out and "signature : (a: T, b: T)" in out
    assert main(["show", "primitive.logical.not", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["compose"] == "a == false"
    assert main(["show", "primitive.math.nope"]) == 1


def test_check_passes_on_standard_ops_and_fails_on_a_bad_file(capsys):
    assert main(["check"]) == 0
    assert main(["check", str(BAD / "15_unknown_placeholder.toml")]) == 1
    err = capsys.readouterr().err
    assert "R007" in err and "Fix:" in err
    assert main(["check", "--json", str(BAD)]) == 1
    report = json.loads(capsys.readouterr().out)
    assert len({d["location"].split(" ")[0] for d in report["diagnostics"]}) >= 25


def test_new_scaffolds_a_loadable_op(tmp_path, capsys):
    target = tmp_path / "my.math.toml"
    assert main(["new", "my.math.triple", "--types", "u32,f32", "--arity", "1", "--file", str(target)]) == 0
    assert main(["new", "my.math.mix", "--file", str(target)]) == 0
    assert main(["new", "my.math.mix", "--file", str(target)]) == 2  # no duplicates
    assert main(["new", "other.x", "--file", str(target)]) == 2  # wrong dialect
    data = tomllib.loads(target.read_text())
    assert [o["id"] for o in data["op"]] == ["my.math.triple", "my.math.mix"]
    reg = load([target], env=False)
    assert reg.errors == () and "my.math.mix" in reg
    assert main(["new", "justname"]) == 2


def test_schema_is_json_schema(capsys):
    assert main(["schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema["title"] == "vyre_decl op file (format v2)" and "OpSpec" in schema["$defs"]
    assert schema["$defs"]["OpSpec"]["additionalProperties"] is False


def test_module_entry_point():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    proc = subprocess.run([sys.executable, "-m", "vyre_decl.ops", "check"], capture_output=True, text=True, env=env)
    assert proc.returncode == 0 and proc.stdout.startswith("ok:")
    proc = subprocess.run([sys.executable, "-m", "vyre_decl.ops", "check", str(BAD / "01_toml_syntax.toml")],
                          capture_output=True, text=True, env=env)
    assert proc.returncode == 1 and "R001" in proc.stderr


AUTHOR_MISTAKES = {
    "wrong_kat": ('kat.i32 = [[2, 3, 6]]', "R030", "[i32] known answer"),
    "false_law": ('laws = ["commutative", "identity(one) @i32"]', "R031", "[i32] the law identity(one)"),
    "bogus_instruction": ('ptx = { u32 = "add.u32 {out}, {a}, {b};", i32 = "add.s33 {out}, {a}, {b};" }', "R032",
                          "[i32] ptxas rejects"),
}


@pytest.mark.parametrize("mistake", list(AUTHOR_MISTAKES))
def test_check_catches_author_mistakes_naming_file_op_and_type(mistake, tmp_path, capsys):
    line, code, where = AUTHOR_MISTAKES[mistake]
    if code == "R032" and not find_ptxas():
        pytest.skip("ptxas is not installed here: pip install nvidia-cuda-nvcc")
    body = 'ptx = "add.{T} {out}, {a}, {b};"\n' if "ptx" not in line else ""
    f = tmp_path / "mine.toml"
    f.write_text('[dialect]\nname = "mine"\nversion = "1.0.0"\n[[op]]\nid = "mine.add"\nsummary = "s"\n'
                 f'signature = "(a: T, b: T) -> T"\ntypes = {{ T = "u32,i32" }}\nreference = "add"\n{body}{line}\n')
    assert main(["check", str(f)]) == 1
    err = capsys.readouterr().err
    (diag,) = [ln for ln in err.splitlines() if f"error {code}" in ln]
    assert str(f) in diag and "[op mine.add]" in diag and where in diag and "Fix:" in diag


def test_laws_catalogue_and_suggestions(tmp_path, capsys):
    assert main(["laws"]) == 0
    out = capsys.readouterr().out
    assert "distributive" in out and "self_inverse" in out
    assert main(["laws", "--suggest", "primitive.math.*"]) == 0
    assert "ok: every law that holds" in capsys.readouterr().out
    assert main(["laws", "--suggest", "nothing.*"]) == 2


def test_check_says_when_no_ptxas_is_found(monkeypatch, capsys):
    import vyre_decl.ops.check as check

    monkeypatch.setattr(check, "find_ptxas", lambda: None)
    assert main(["check"]) == 0
    captured = capsys.readouterr()
    assert "note R032: ptxas was not found" in captured.err and "1 note(s)" in captured.out


def test_a_closed_pipe_ends_ops_list_quietly():
    """`python -m vyre_decl.ops list | head -1`: the reader goes away; no BrokenPipe traceback."""
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-m", "vyre_decl.ops", "list"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # before anything is written: the first write meets a closed pipe
    err = proc.stderr.read().decode()
    proc.wait(timeout=60)
    assert "Traceback" not in err and "BrokenPipe" not in err, err


def test_conform_progress_on_a_terminal_is_one_updating_line():
    import io

    from vyre_decl.conform.cli import _progress

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    term, pipe = Terminal(), io.StringIO()
    for stream in (term, pipe):
        show = _progress(stream)
        for line in ("[1/3] a ... ok", "[2/3] b ... FAIL", "[3/3] c ... ok", ""):
            show(line)
    assert term.getvalue().count("\n") == 1 and term.getvalue().count("\r\033[K") == 4  # only the failure stays
    assert pipe.getvalue().splitlines() == ["[1/3] a ... ok", "[2/3] b ... FAIL", "[3/3] c ... ok"]
