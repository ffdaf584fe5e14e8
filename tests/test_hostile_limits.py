"""Issue 23, items 3 and 4: hostile input meets a coded limit, never a hang or a raw Python error.

An op file whose compose repeats empty rounds, text nested past the parser's limit in every
recursive production, a long operator chain, a non-UTF-8 file given to the emitter's CLI, a grid
beyond what CUDA launches, and a 13 MB program text (parsed in linear time).
"""

from __future__ import annotations

import time

from vyre_decl.registry import load

EMPTY_ROUNDS_OP = '''[dialect]
name = "hang"
version = "1.0.0"

[[op]]
id = "hang.f"
summary = "x"
signature = "(a: T) -> T"
types = { T = "u32" }
compose = """
repeat 999999 { repeat 999999 { } }
a
"""
'''


def test_an_op_file_of_empty_rounds_loads_within_a_second_into_r036(tmp_path, monkeypatch):
    (tmp_path / "hang.toml").write_text(EMPTY_ROUNDS_OP)
    monkeypatch.setenv("VYRE_DECL_OPS_PATH", str(tmp_path))
    start = time.perf_counter()
    reg = load(snapshot=False)
    elapsed = time.perf_counter() - start
    (diag,) = [d for d in reg.errors if "hang" in d.location]
    assert diag.code == "R036" and "hang.toml" in diag.location and "[op hang.f]" in diag.location
    assert "8,192 rounds" in diag.message and diag.fix
    assert "hang.f" not in reg and "primitive.math.add" in reg  # only the bad file is rejected
    assert elapsed < 1.0, elapsed
