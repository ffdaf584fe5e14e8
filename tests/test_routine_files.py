"""Routine files are data checked whole at load (issue 27): every hostile case of the issue is a coded
diagnostic for its file while the other files still load; `with` values are held against the
registry at load (misspelt op ids with a did-you-mean, atomic ops, ids); only accepted files share
kernels; known answers must fit their types; calls are bounded (launches, grids, bytes) and sizes
never divide by zero silently; `routine()` honours a registry from `load_registry([dirs])`."""

from __future__ import annotations

import os
import time

import numpy as np
import pytest

import vyre_decl
from vyre_decl import lib
from vyre_decl.ir.diagnostics import VyreError
from vyre_decl.routines import routine, routine_diagnostics, routines

BASE = '''[family]
name = "tst"
version = "1.0.0"
summary = "test routines"

[kernel.one]
params = ["combine", "identity"]
source = """
program tst_one workgroup(64, 1, 1) {
  buffer src: read T[] @0
  buffer dst: read_write T[] @1
  if gid.x == 0u32 {
    let acc = T.$identity
    loop i in 0u32 .. len(src) { acc = $combine(acc, src[i]) }
    dst[0u32] = acc
  }
}
"""

[[routine]]
id = "tst.prod"
summary = "the product, sequentially"
types = { T = "u32,f32" }
with = { combine = "primitive.math.mul", identity = "one" }
buffers = { x = "in T[]", out = "out T[1]" }
steps = [{ kernel = "one", args = ["x", "out"], grid = "1" }]
kat = [[[2, 3, 7], [42]]]
'''


def variant(**lines: str) -> str:
    """BASE with the routine's ``key = ...`` lines replaced (or added when BASE has none)."""
    out = BASE
    for key, value in lines.items():
        key = key.rstrip("_")
        text = f"{key} = {value}"
        head = next((ln for ln in BASE.splitlines() if ln.startswith(f"{key} = ")), None)
        out = out.replace(head, text) if head is not None else out + text + "\n"
    return out


def load(tmp_path, text: str | bytes, name: str = "bad.routines.toml"):
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return vyre_decl.load_registry([tmp_path])


def rejected(tmp_path, text, code: str, field: str | None = None):
    """The file is rejected with ``code`` (and U020) naming it, the standard routines still load
    and run; returns the diagnostics."""
    reg = load(tmp_path, text)
    diags = routine_diagnostics(reg)
    codes = [d.code for d in diags]
    assert code in codes and codes[-1] == "U020", [str(d) for d in diags]
    assert all(d.location.startswith(str(tmp_path)) and d.fix and "Fix" not in d.fix for d in diags)
    if field is not None:
        assert any(field in d.location for d in diags if d.code == code), [str(d) for d in diags]
    found = routines(reg)
    assert "tst.prod" not in found and "reduce.sum" in found
    assert routine("reduce.sum", reg)(np.array([1, 2, 3], np.uint32), backend="reference")[0] == 6
    return [d for d in diags if d.code == code]


def test_the_base_file_loads_and_runs(tmp_path):
    reg = load(tmp_path, BASE, "good.routines.toml")
    assert routine_diagnostics(reg) == []
    assert routine("tst.prod", reg)(np.array([2, 3, 7], np.uint32), backend="reference")[0] == 42


# --- hostile values: each a coded diagnostic for its file, the rest loads (issue 27, first list)
@pytest.mark.parametrize("code,field,text", [
    ("U005", "like", variant(like='["tst.prod"]')),
    ("U005", "like", variant(like='{ id = "tst.prod" }')),
    ("U006", "steps[0].types", variant(steps='[{ kernel = "one", args = ["x", "out"], grid = "1", types = { T = ["u32"] } }]')),
    ("U008", "written", variant(written='[["out"]]')),
    ("U001", None, variant(kat="[[[" + "9" * 5000 + "], [1]]]")),
    ("U001", None, variant(kat="[" * 3000 + "]" * 3000)),
    ("U011", "kat", variant(kat="[" * 400 + "]" * 400)),
    ("U002", "family.version", BASE.replace('version = "1.0.0"', "version = 1")),
    ("U002", "family.version", BASE.replace('version = "1.0.0"', 'version = "1"')),
    ("U009", "steps[0].grid", variant(steps='[{ kernel = "one", args = ["x", "out"], grid = "2147483648" }]')),
    ("U009", "steps[0].repeat", variant(steps='[{ repeat = "4294967295", steps = [{ kernel = "one", args = ["x", "out"], grid = "1" }] }]')),
    ("U009", "buffers.out", variant(buffers='{ x = "in T[]", out = "out T[len(x) // 0]" }')),
    ("U009", "buffers.out", variant(buffers='{ x = "in T[]", out = "out T[ceil_div(len(x), 0)]" }')),
    ("U009", "buffers.out", variant(buffers='{ x = "in T[]", out = "out T[len(x) % 0]" }')),
    ("U009", "buffers.out", variant(buffers='{ x = "in T[]", out = "out T[' + "9" * 30 + ']" }')),
    ("U010", "steps[0]", variant(steps="[" + "{ repeat = \"2\", steps = [" * 6 + '{ kernel = "one", args = ["x", "out"], grid = "1" }' + "] }" * 6 + "]")),
    ("U002", None, BASE.replace("[family]", "[familee]")),
    ("U005", "class", variant(class_='"x"')),
])
def test_hostile_values_reject_the_file_with_a_code(tmp_path, code, field, text):
    rejected(tmp_path, text, code, field)


def test_one_id_twice_in_a_file_is_u003(tmp_path):
    text = BASE + BASE[BASE.index("[[routine]]"):]
    (d,) = rejected(tmp_path, text, "U003", "[routine tst.prod] id")
    assert "twice" in d.message


def test_a_fifo_named_like_a_routine_file_does_not_block(tmp_path):
    os.mkfifo(tmp_path / "pipe.routines.toml")
    t0 = time.perf_counter()
    reg = vyre_decl.load_registry([tmp_path])
    diags = routine_diagnostics(reg)
    assert time.perf_counter() - t0 < 30
    assert [d.code for d in diags] == ["U001", "U020"] and "regular file" in diags[0].message
    assert "reduce.sum" in routines(reg)


def test_a_hostile_file_on_the_ops_path_leaves_lib_working(tmp_path, monkeypatch):
    (tmp_path / "bad.routines.toml").write_text(variant(like="[1, 2]"))
    monkeypatch.setenv("VYRE_DECL_OPS_PATH", str(tmp_path))
    assert "U005" in [d.code for d in routine_diagnostics()]
    assert lib.sum(np.array([1, 2, 3], np.uint32), backend="reference") == 6


# --- only accepted files share kernels
SHARER = '''[family]
name = "zzz"
version = "1.0.0"

[[routine]]
id = "zzz.prod"
types = { T = "u32" }
with = { combine = "primitive.math.mul", identity = "one" }
buffers = { x = "in T[]", out = "out T[1]" }
steps = [{ kernel = "tst.one", args = ["x", "out"], grid = "1" }]
kat = [[[2, 3], [6]]]
'''


def test_a_rejected_file_shares_no_kernels(tmp_path):
    (tmp_path / "zzz.routines.toml").write_text(SHARER)
    reg = load(tmp_path, variant(kat="[[[1.5], [1]]]"), "tst.routines.toml")
    diags = routine_diagnostics(reg)
    assert [d.code for d in diags] == ["U011", "U020", "U010", "U020"], [str(d) for d in diags]
    assert "tst.one" in diags[2].message and "tst.routines.toml was rejected" in diags[2].message
    assert "zzz.prod" not in routines(reg) and "reduce.sum" in routines(reg)


def test_an_accepted_file_shares_its_kernels(tmp_path):
    (tmp_path / "zzz.routines.toml").write_text(SHARER)
    reg = load(tmp_path, BASE, "tst.routines.toml")
    assert routine_diagnostics(reg) == []
    assert routine("zzz.prod", reg)(np.array([2, 3], np.uint32), backend="reference")[0] == 6


# --- with values held against the kernels' uses and the registry, at load
@pytest.mark.parametrize("value,field,says", [
    ('{ combine = "primitive.math.mull", identity = "one" }', "with.combine", "did you mean 'primitive.math.mul'"),
    ('{ combine = "primitive.atomic.add", identity = "one" }', "with.combine", "atomic"),
    ('{ combine = "gid.x", identity = "one" }', "with.combine", "not an op"),
    ('{ combine = "primitive.math.mul", identity = "maxx" }', "with.identity", "did you mean 'max'"),
    ('{ combine = "primitive.math.mul", identity = "primitive.math.add" }', "with.identity", "not an element"),
    ('{ combine = "primitive.math.mul(a, b)", identity = "one" }', "with.combine", "not one name"),
    ('{ combine = "primitive.math.mul", identity = "one", combin = "x" }', "with.combin", "no kernel"),
    ('{ combine = "primitive.math.mul" }', "steps[0].with", "needs with.identity"),
])
def test_with_values_are_checked_at_load_naming_routine_and_field(tmp_path, value, field, says):
    (d, *_) = rejected(tmp_path, variant(with_=value), "U007", f"[routine tst.prod] {field}")
    assert says in d.message + d.fix


def test_a_misspelt_op_in_a_step_with_names_the_step(tmp_path):
    text = variant(steps='[{ kernel = "one", args = ["x", "out"], grid = "1", with = { combine = "primitive.math.sq_dif" } }]')
    (d,) = rejected(tmp_path, text, "U007", "[routine tst.prod] steps[0].with.combine")
    assert "did you mean 'primitive.math.sq_diff'" in d.fix


def test_kernel_parameters_are_declared_exactly(tmp_path):
    rejected(tmp_path, BASE.replace('params = ["combine", "identity"]', 'params = ["combine"]'), "U004", "kernel.one.params")
    rejected(tmp_path, BASE.replace('params = ["combine", "identity"]', 'params = ["combine", "identity", "x"]'), "U004")


def test_a_broken_kernel_is_rejected_at_load_with_its_line(tmp_path):
    (d,) = rejected(tmp_path, BASE.replace("let acc = T.$identity", "let acc = T.$identity +"), "U022", "steps[0]")
    line = BASE.splitlines().index("    let acc = T.$identity") + 1
    assert f"bad.routines.toml:{line + 1}:" in d.message or f"bad.routines.toml:{line}:" in d.message


# --- known answers that cannot fit their types
@pytest.mark.parametrize("kat", ["[[[1.5], [1]]]", "[[[-1], [1]]]", '[[["a"], [1]]]', "[[[2], [2], [3]]]",
                                 "[[[true], [1]]]", "[[[2]]]", "{ u64 = [[[2], [2]]] }", "[{ in = [[2]], out = [[2]], attrs = { n = 1 } }]",
                                 "[[[16777217], [1]]]"])
def test_known_answers_that_cannot_fit_are_u011(tmp_path, kat):
    rejected(tmp_path, variant(kat=kat), "U011", "kat")


def test_known_answers_keyed_by_type_are_checked_for_those_types(tmp_path):
    reg = load(tmp_path, variant(kat="{ f32 = [[[1.5, 2], [3]]], u32 = [[[2], [2]]] }"), "ok.routines.toml")
    assert routine_diagnostics(reg) == []


# --- calls are bounded before any launch or allocation; sizes never divide by zero silently
ATTR = {"attrs": '["n"]', "sample": '{ n = "1" }', "kat": '[{ in = [[2, 3]], attrs = { n = 1 }, out = [[6]] }]'}


def _call(tmp_path, n: int, x=(2, 3), **lines):
    reg = load(tmp_path, variant(**{**ATTR, **lines}), "ok.routines.toml")
    assert routine_diagnostics(reg) == [], [str(d) for d in routine_diagnostics(reg)]
    t0 = time.perf_counter()
    try:
        return routine("tst.prod", reg)(np.array(x, np.uint32), backend="reference", n=n)
    finally:
        assert time.perf_counter() - t0 < 30


REPEAT = '[{ repeat = "n", steps = [{ kernel = "one", args = ["x", "out"], grid = "1" }] }]'


@pytest.mark.parametrize("n,lines,code,field", [
    (2**32 - 1, {"steps": REPEAT}, "U024", "steps[0].repeat"),
    (2**31, {"steps": '[{ kernel = "one", args = ["x", "out"], grid = "n" }]'}, "U024", "steps[0].grid"),
    (2**26 + 1, {"steps": '[{ kernel = "one", args = ["x", "out"], grid = "n" }]'}, "U024", "steps[0].grid"),
    (2**32 - 1, {"buffers": '{ x = "in T[]", big = "temp f64[n]", out = "out T[1]" }'}, "U024", "buffers.big"),
    (1, {"steps": '[{ repeat = "len(x) - 5", steps = [{ kernel = "one", args = ["x", "out"], grid = "1" }] }]'}, "U024", "repeat"),
    (0, {"buffers": '{ x = "in T[]", out = "out T[max(1, len(x) // n)]" }'}, "U023", "buffers.out"),
    (0, {"buffers": '{ x = "in T[]", out = "out T[1 + len(x) % n]" }'}, "U023", "buffers.out"),
    (0, {"steps": '[{ kernel = "one", args = ["x", "out"], grid = "ceil_div(1, n)" }]'}, "U023", "steps[0].grid"),
    (0, {"require": '["len(x) % n == 0"]'}, "U023", "require[0]"),
])
def test_calls_past_a_bound_fail_before_any_launch(tmp_path, n, lines, code, field):
    with pytest.raises(VyreError) as e:
        _call(tmp_path, n, **lines)
    assert e.value.codes == [code] and field in e.value.diagnostics[0].location and "tst.prod" in str(e.value)


def test_a_repeat_within_the_bounds_runs(tmp_path):
    assert _call(tmp_path, 3, steps=REPEAT)[0] == 6
    assert _call(tmp_path, 1, buffers='{ x = "in T[]", out = "out T[max(1, len(x) // n)]" }')[0] == 6


# --- the registry argument
def test_routine_honours_a_registry_with_ops_from_a_directory(tmp_path):
    (tmp_path / "mine.toml").write_text('''[dialect]
name = "mine"
version = "1.0.0"

[[op]]
id = "mine.twice_mul"
summary = "a * b * 2"
signature = "(a: T, b: T) -> T"
types = { T = "u32" }
compose = "a * b * (2 as T)"
kat.u32 = [[2, 3, 12]]
''')
    text = variant(with_='{ combine = "mine.twice_mul", identity = "one" }', types='{ T = "u32" }', kat="[[[2, 3], [24]]]")
    reg = load(tmp_path, text, "tst.routines.toml")
    assert routine_diagnostics(reg) == [], [str(d) for d in routine_diagnostics(reg)]
    assert routine("tst.prod", reg)(np.array([2, 3], np.uint32), backend="reference")[0] == 24
    with pytest.raises(VyreError) as e:  # the default registry does not see the directory
        routine("tst.prod")
    assert e.value.codes == ["U015"]


# --- a property test: mutated routine files load or are rejected with codes, never raise
from pathlib import Path  # noqa: E402

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from vyre_decl.routines.loader import load_routine_files, standard_routines_dir  # noqa: E402

REDUCE = (standard_routines_dir() / "reduce.routines.toml").read_text()
PIECES = ["[", "]", "{", "}", "=", ",", '"', "'''", "\n", "$", "$combine", "T.$identity", "class = ", "[[routine]]",
          "[kernel.x]", "[class.fold]", '"fold"', "like = ", "repeat", "-1", "1.5", "9" * 40, "nan", "inf", "true",
          "u32", "T", "gid.x", "//", "% 0",
          "primitive.atomic.add", "primitive.math.sqdiff", "reduce.blocks", "steps", "kat", "\x00", "é", "\\"]


@settings(max_examples=int(os.environ.get("VYRE_DECL_HYPOTHESIS_EXAMPLES", "150")), deadline=None,
          suppress_health_check=list(HealthCheck), derandomize=True)
@given(st.sampled_from([BASE, REDUCE]), st.lists(st.tuples(st.floats(0, 1), st.sampled_from(["cut", "insert", "dup"]),
                                                           st.sampled_from(PIECES)), min_size=1, max_size=4))
def test_mutated_routine_files_load_or_are_rejected_with_codes(text, edits):
    for where, kind, piece in edits:
        i = int(where * len(text))
        if kind == "cut":
            text = text[:i] + text[i + len(piece):]
        elif kind == "insert":
            text = text[:i] + piece + text[i:]
        else:
            text = text[:i] + text[i:i + 30] + text[i:]
    path = Path("/nonexistent/mutated.routines.toml")
    found, diags = load_routine_files(vyre_decl.default_registry(), [(path, text.encode("utf-8", "surrogatepass"))])
    assert all(d.code.startswith("U") and d.code != "U021" and d.fix for d in diags), [str(d) for d in diags]
    assert bool(diags) == (not found) or all(r.file == str(path) for r in found.values())
    if diags:
        assert diags[-1].code == "U020" and not found


def test_every_u_code_raised_is_documented():
    import re

    root = Path(__file__).resolve().parent.parent
    raised = set()
    for path in (root / "vyre_decl").rglob("*.py"):
        raised |= set(re.findall(r'"(U0\d\d)"', path.read_text()))
    documented = set(re.findall(r"\| (U0\d\d) \|", (root / "docs" / "routines.md").read_text()))
    assert {"U021", "U022", "U023", "U024"} <= raised and raised <= documented, sorted(raised - documented)
