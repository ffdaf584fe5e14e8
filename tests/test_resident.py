"""resident(N): a residency hint (docs/semantics.md, "Residency") in the text form, the builder and
the canonical JSON; P016 and V053; the PTX directives it becomes; results unchanged on the reference
and the simulated device; the matmul kernel assembles within the registers of two workgroups."""

from __future__ import annotations

import re

import numpy as np
import pytest

from sim_ptx_helpers import assert_matches, ptxas_verbose
from vyre_decl.emit import emit
from vyre_decl.emit.ptxas import find_ptxas
from vyre_decl.ir import ParseError, parse_program
from vyre_decl.ir import validate as _validate
from vyre_decl.ir.builder import ProgramBuilder
from vyre_decl.ir.canonical import dumps, loads
from vyre_decl.ir.types import DataType
from vyre_decl.registry import default_registry

SRC = """program r workgroup(256, 1, 1)ATTR {
  buffer x: read u32[] @0
  buffer out: write u32[len(x)] @1
  let i = gid.x
  out[i] = x[i] * 3u32EXTRA
}
"""
REG = default_registry()


def _program(attr: str = " resident(2)", extra: str = "") -> str:
    return SRC.replace("ATTR", attr).replace("EXTRA", extra)


def validate(p):  # noqa: ANN001 - the registry is always the standard one here
    return _validate(p, REG)


def test_text_json_and_builder_keep_it():
    p = parse_program(_program())
    assert p.resident == 2 and validate(p) == []
    assert parse_program(p.to_text()) == p and loads(dumps(p)) == p
    plain = parse_program(_program(""))
    assert plain.resident == 0 and "resident" not in plain.to_text() and "resident" not in dumps(plain)
    assert p.content_hash() != plain.content_hash()
    b = ProgramBuilder("r", (256, 1, 1), resident=2)
    b.buffer("x", DataType.U32, "read")
    assert b.build().resident == 2 and "resident(2)" in b.build().to_text()


@pytest.mark.parametrize("attr,code", [(" resident(0)", "P016"), (" resident(33)", "P016"), (" resident(two)", "P002"),
                                       (" resident(-1)", "P002")])
def test_p016(attr, code):
    with pytest.raises(ParseError) as exc:
        parse_program(_program(attr))
    assert exc.value.diagnostics[0].code == code, exc.value.diagnostics


def test_v053_more_invocations_than_a_multiprocessor_holds():
    big = parse_program(_program(" resident(2)").replace("workgroup(256, 1, 1)", "workgroup(1024, 1, 1)"))
    assert validate(big) == []  # 2048 invocations
    too = parse_program(_program(" resident(3)").replace("workgroup(256, 1, 1)", "workgroup(1024, 1, 1)"))
    diags = validate(too)
    assert [d.code for d in diags] == ["V053"] and "at most 2 workgroups" in diags[0].fix
    b = ProgramBuilder("r", (64, 1, 1), resident="2")  # type: ignore[arg-type]
    assert [d.code for d in validate(b.build())] == ["V053"]


def test_the_ptx_asks_ptxas_for_n_blocks():
    text = emit(parse_program(_program())).text
    assert ".maxntid 256, 1, 1\n.minnctapersm 2\n{" in text
    assert ".minnctapersm" not in emit(parse_program(_program(""))).text
    whole_warps = emit(parse_program(_program(extra=" + subgroup.lane_id()"))).text  # .reqntid gives the size
    assert ".reqntid 256, 1, 1\n.minnctapersm 2\n{" in whole_warps and ".maxntid" not in whole_warps


def test_results_are_those_without_it():
    from vyre_decl.backends.reference import ReferenceBackend

    p, plain = parse_program(_program()), parse_program(_program(""))
    x = (np.arange(300, dtype=np.uint64) * 2654435761 % (1 << 32)).astype(np.uint32)
    want = ReferenceBackend(REG).dispatch(plain, [x])
    assert [w.tolist() for w in ReferenceBackend(REG).dispatch(p, [x])] == [w.tolist() for w in want]
    assert_matches(p, [x], want)


@pytest.mark.skipif(find_ptxas() is None, reason="ptxas is not installed")
def test_the_matmul_kernel_fits_two_workgroups_a_multiprocessor():
    """The driver's JIT gave it 143 registers without the hint (one workgroup of 256 an SM on an
    H200) and 128 with it (two)."""
    from vyre_decl.routines import routine

    c = routine("linalg.matmul").compiled([np.dtype("float32")] * 2)
    (program,) = c.programs.values()
    assert program.resident == 2
    used = int(re.search(r"Used (\d+) registers", ptxas_verbose(emit(program).text)).group(1))
    assert used <= 65536 // (2 * 256)
