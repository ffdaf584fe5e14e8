"""resident($name): a routine kernel's residency hint from a routine parameter (docs/routines.md,
"Kernels"), so bindings of one kernel may ask for different residencies (sort.radix's sweep for
5 workgroups a multiprocessor, sort.radix_pairs's for 4); a value that is not a whole number of
workgroups from 1 to 32 is a U007 at load naming the file, the routine and the field, or P016 /
P001 where a kernel is parsed with such a value directly."""

from __future__ import annotations

import numpy as np
import pytest

import vyre_decl
from vyre_decl.ir import ParseError, parse_program
from vyre_decl.routines import routine, routine_diagnostics, routines

BASE = '''[family]
name = "tst"
version = "1.0.0"
summary = "test routines"

[kernel.one]
params = ["res"]
source = """
program tst_one workgroup(64, 1, 1) resident($res) {
  buffer src: read T[] @0
  buffer dst: read_write T[] @1
  let i = gid.x
  if i < len(src) { dst[i] = src[i] + src[i] }
}
"""

[[routine]]
id = "tst.twice"
summary = "each element doubled"
types = { T = "u32" }
with = { res = "RES" }
buffers = { x = "in T[]", out = "out T[len(x)]" }
steps = [{ kernel = "one", args = ["x", "out"], grid = "ceil_div(len(x), 64)" },
  { kernel = "one", args = ["out", "out"], grid = "ceil_div(len(x), 64)", with = { res = "STEP" } }]
kat = [[[1, 2, 3], [4, 8, 12]]]
'''


def _load(tmp_path, res: str, step: str = "3"):
    (tmp_path / "tst.routines.toml").write_text(BASE.replace("RES", res).replace("STEP", step))
    return vyre_decl.load_registry([tmp_path])


def test_each_binding_gets_its_own_residency(tmp_path):
    reg = _load(tmp_path, "2", "3")
    assert routine_diagnostics(reg) == []
    compiled = routine("tst.twice", reg).compiled([np.dtype("uint32")])
    assert sorted(p.resident for p in compiled.programs.values()) == [2, 3]
    assert sorted(p.to_text().count("resident(") for p in compiled.programs.values()) == [1, 1]
    x = np.arange(100, dtype=np.uint32)
    out = routine("tst.twice", reg)(x, backend="reference")
    assert np.array_equal(out, 4 * x)


@pytest.mark.parametrize("value,says", [("0", "from 1 to 32"), ("33", "from 1 to 32"), ("four", "not a whole number"),
                                        ("true", "not a whole number"), ("4.5", "not one name"),
                                        ("12345", "not one name")])
def test_a_bad_residency_is_a_u007_at_load(tmp_path, value, says):
    reg = _load(tmp_path, value)
    diags = routine_diagnostics(reg)
    bad = [d for d in diags if d.code == "U007"]
    assert bad and diags[-1].code == "U020", [str(d) for d in diags]
    assert "[routine tst.twice] with.res" in bad[0].location and str(tmp_path) in bad[0].location
    assert says in bad[0].message + bad[0].fix and bad[0].fix
    assert "tst.twice" not in routines(reg) and "reduce.sum" in routines(reg)


def test_a_bad_residency_of_a_step_names_the_step(tmp_path):
    diags = routine_diagnostics(_load(tmp_path, "2", "40"))
    (bad,) = [d for d in diags if d.code == "U007"]
    assert "steps[1].with.res" in bad.location and "from 1 to 32" in bad.message


def test_a_whole_number_stands_only_in_resident(tmp_path):
    text = BASE.replace("RES", "2").replace("STEP", "3").replace("dst[i] = src[i] + src[i]", "dst[i] = src[i] + src[i]\n  let b = $res")
    (tmp_path / "tst.routines.toml").write_text(text)
    diags = routine_diagnostics(vyre_decl.load_registry([tmp_path]))
    codes = [d.code for d in diags]
    assert "U004" in codes, [str(d) for d in diags]  # $res used as a count and as a value


SRC = "program p workgroup(64, 1, 1) resident($res) {\n  buffer x: read_write u32[] @0\n  x[gid.x] = T.$e\n}\n"


def test_parsed_directly_a_value_out_of_range_is_p016_at_the_parameter():
    from vyre_decl.ir.types import DataType

    t = {"T": DataType.U32}
    assert parse_program(SRC, "k.vyre", t, {"res": "6", "e": "zero"}).resident == 6
    with pytest.raises(ParseError) as exc:
        parse_program(SRC, "k.vyre", t, {"res": "40", "e": "zero"})
    (d,) = exc.value.diagnostics
    assert d.code == "P016" and d.location == "k.vyre:1:40" and d.fix
    with pytest.raises(ParseError) as exc:
        parse_program(SRC, "k.vyre", t, {"res": "6", "e": "7"})  # a number in a dotted name
    (d,) = exc.value.diagnostics
    assert d.code == "P001" and d.location == "k.vyre:3:16" and "whole number" in d.message


def test_sort_keys_only_and_pairs_bind_different_residencies():
    def sweep(rid: str, dtypes: tuple[str, ...]) -> int:
        compiled = routine(rid).compiled([np.dtype(d) for d in dtypes])
        (res,) = {p.resident for s, p in compiled.programs.items() if s.kernel == "sweep"}
        return res

    assert sweep("sort.radix", ("uint32",)) == 4
    assert sweep("sort.radix_pairs", ("uint32", "uint32")) == 2
