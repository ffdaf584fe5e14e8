"""Validation errors of a program read from a file say file:line:col (issue 27 item 3), as parse
errors do: `load_program` keeps the text, and a problem found at dispatch or by `check` is located
at the start of the node the validator names (the node path follows in brackets). A program parsed
from an unnamed string, or built, keeps the node paths; equality and the content hash ignore where a
program came from; a routine kernel's problem names the routine file's own line."""

from __future__ import annotations

import numpy as np
import pytest

import vyre_decl
from vyre_decl.ir import parse_program
from vyre_decl.ir.validation import check, validate

BAD = """program bad workgroup(64, 1, 1) {
  buffer x: read u32[] @0
  buffer out: write u32[len(x)] @1
  let i = gid.x
  if i < len(out) {
    out[i] = x[i] + nosuch[i]
    out[i] = primitive.math.addd(x[i], 1u32)
    let f = x[i] as f32 * 2u32
  }
}
"""


def test_validation_errors_of_a_file_are_file_line_col(tmp_path):
    path = tmp_path / "bad.vyre"
    path.write_text(BAD)
    program = vyre_decl.load_program(str(path))
    with pytest.raises(vyre_decl.VyreError) as e:
        vyre_decl.acquire("reference").dispatch(program, [np.arange(3, dtype=np.uint32)])
    locations = [d.location for d in e.value.diagnostics]
    assert locations == [f"{path}:6:21 (body[1].then[0].value.args[1])", f"{path}:7:14 (body[1].then[1].value)",
                         f"{path}:8:13 (body[1].then[2].value)"]
    assert e.value.codes == ["V004", "V005", "V007"]


def test_a_program_from_a_string_keeps_node_paths_and_equality_ignores_the_source(tmp_path):
    path = tmp_path / "bad.vyre"
    path.write_text(BAD)
    from_file, from_text = vyre_decl.load_program(str(path)), parse_program(BAD)
    assert from_file == from_text and from_file.content_hash() == from_text.content_hash()
    with pytest.raises(vyre_decl.VyreError) as e:
        check(from_text, vyre_decl.default_registry())
    assert e.value.diagnostics[0].location == "body[1].then[0].value.args[1]"
    assert validate(from_file, vyre_decl.default_registry())[0].location == "body[1].then[0].value.args[1]"


def test_buffer_and_workgroup_problems_are_located_too(tmp_path):
    text = "program w workgroup(2048, 1, 1) {\n  buffer a: read u32[] @0\n  buffer a: write u32[len(a)] @1\n}\n"
    path = tmp_path / "w.vyre"
    path.write_text(text)
    with pytest.raises(vyre_decl.VyreError) as e:
        check(vyre_decl.load_program(str(path)), vyre_decl.default_registry())
    where = {d.code: d.location for d in e.value.diagnostics}
    assert where["V003"].startswith(f"{path}:1:11") and where["V001"].startswith(f"{path}:3:3")


def test_a_routine_kernel_problem_names_the_line_of_the_routine_file(tmp_path):
    from test_routine_files import BASE, rejected

    (d,) = rejected(tmp_path, BASE.replace("dst[0u32] = acc", "dst[0u32] = acc + nosuch[0u32]"), "U022")
    line = BASE.splitlines().index("    dst[0u32] = acc") + 1
    assert f"bad.routines.toml:{line}:23" in d.message, d.message
