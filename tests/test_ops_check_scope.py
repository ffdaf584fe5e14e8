"""``ops check FILES`` checks the ops of FILES (the standard library loads beside them and is not
checked again), and an op scaffolded by ``ops new`` is an R040 warning until it has a summary
and a known answer (issue 27, item 2)."""

from __future__ import annotations

import re

from vyre_decl.ops.check import check_scaffold
from vyre_decl.ops.cli import main
from vyre_decl.registry import default_registry


def _check(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["check", "--no-ptxas", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_a_scaffold_warns_until_it_has_a_summary_and_a_known_answer(tmp_path, capsys):
    path = tmp_path / "acme.toml"
    assert main(["new", "acme.math.twice", "--types", "u32", "--arity", "1", "--file", str(path)]) == 0
    capsys.readouterr()
    code, out, err = _check(capsys, str(path))
    assert code == 0, err
    assert re.search(r"ok: 1 ops checked \(\d+ loaded from \d+ file\(s\)\)", out), out
    assert err.count("R040") == 2 and "summary" in err and "known answer" in err, err
    text = path.read_text().replace('summary = "TODO: one line saying what the op computes"', 'summary = "twice a"')
    text = text.replace('compose = "a"', 'compose = "a + a"')
    assert "[op.types]" in text
    path.write_text(text.replace("[op.types]", "kat = [[3, 6]]\n\n[op.types]", 1))
    code, out, err = _check(capsys, str(path))
    assert code == 0 and "R040" not in err, err


def test_the_standard_library_is_no_scaffold():
    assert check_scaffold(default_registry()) == []
