"""Routine files share keys as op files do (issue 27, one declaration style): `[class.NAME]` tables
and `class = "NAME"`, by the op files' rule (a routine's own key replaces the class's whole), through
the op loader's own machinery (vyre_decl/registry/classes.py). `like` is refused with U005 and a
Fix spelling the class; every hostile class value is a coded diagnostic naming file, routine and
field while the other files still load; the standard files, migrated from `like`, load the same
routines as a class-free expansion of themselves; the JSON Schema has classes and no `like`."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest

import vyre_decl
from vyre_decl.registry.classes import with_class
from vyre_decl.routines import routine, routine_diagnostics, routines
from vyre_decl.routines.build import build_routines
from vyre_decl.routines.files import read_routine_file
from vyre_decl.routines.loader import standard_routines_dir
from vyre_decl.routines.schema import json_schema

from test_routine_files import BASE, load, rejected

HEAD, ROUTINE = BASE.split("[[routine]]\n")
# BASE's routine with its types, with, buffers and steps in [class.seq]
CLASS = '''[class.seq]
types = { T = "u32,f32" }
with = { combine = "primitive.math.mul", identity = "one" }
buffers = { x = "in T[]", out = "out T[1]" }
steps = [{ kernel = "one", args = ["x", "out"], grid = "1" }]

'''
CLASSED = HEAD + CLASS + '''[[routine]]
id = "tst.prod"
class = "seq"
summary = "the product, sequentially"
kat = [[[2, 3, 7], [42]]]
'''


def with_lines(text: str, *lines: str) -> str:
    """``text`` with ``lines`` added to its last routine."""
    return text + "".join(line + "\n" for line in lines)


def with_class_line(key: str, value: str) -> str:
    """CLASSED with ``key = value`` in [class.seq] (replacing the class's line of that key)."""
    lines = [ln for ln in CLASS.splitlines() if not ln.startswith(f"{key} = ")]
    table = "\n".join([lines[0], f"{key} = {value}", *lines[1:]]) + "\n"
    return CLASSED.replace(CLASS, table + "\n")


def fresh(tmp_path, name: str):
    (tmp_path / name).mkdir()
    return tmp_path / name


def _meaning(r):
    return r.types, r.params, r.buffers, r.steps, r.kats, r.summary, r.written, r.requires, r.attrs


def test_a_routine_takes_its_class_keys(tmp_path):
    reg = load(tmp_path, CLASSED, "good.routines.toml")
    assert routine_diagnostics(reg) == []
    plain = load(fresh(tmp_path, "plain"), BASE, "good.routines.toml")
    assert _meaning(routines(reg)["tst.prod"]) == _meaning(routines(plain)["tst.prod"])
    assert routine("tst.prod", reg)(np.array([2, 3, 7], np.float32), backend="reference")[0] == 42


def test_an_own_key_replaces_the_class_key_whole(tmp_path):
    reg = load(fresh(tmp_path, "good"), with_lines(CLASSED, 'types = { T = "u32" }'), "good.routines.toml")
    assert [t.value for t in routines(reg)["tst.prod"].types["T"]] == ["u32"]
    # with is replaced whole too: the class's identity is not merged into the routine's with
    (d,) = rejected(fresh(tmp_path, "bad"), with_lines(CLASSED, 'with = { combine = "primitive.math.add" }'), "U007",
                    "[routine tst.prod] steps[0].with")
    assert "needs with.identity" in d.message


def test_then_appends_steps_to_the_class_steps(tmp_path):
    text = with_lines(CLASSED, 'then = [{ kernel = "one", args = ["x", "out"], grid = "1" }]')
    reg = load(tmp_path, text, "good.routines.toml")
    assert [s.where for s in routines(reg)["tst.prod"].steps] == ["steps[0]", "steps[1]"]


def test_like_is_refused_with_the_class_spelling(tmp_path):
    text = BASE + '\n[[routine]]\nid = "tst.prod2"\nlike = "tst.prod"\nkat = [[[2, 3], [6]]]\n'
    (d,) = rejected(tmp_path, text, "U005", "[routine tst.prod2] like")
    assert d.message == "unknown key 'like'" and 'class = "' in d.fix and "[class.NAME]" in d.fix


# --- hostile class values: each a coded diagnostic naming file, routine and field; the rest loads
ROUTINE_CLASS = [  # (the routine's class line, code, field, words of the message or fix)
    ("class = 5", "U005", "[routine tst.prod] class", "must be a string"),
    ('class = ["seq"]', "U005", "[routine tst.prod] class", "must be a string"),
    ('class = { name = "seq" }', "U005", "[routine tst.prod] class", "must be a string"),
    ('class = "sequ"', "U005", "[routine tst.prod] class", "unknown class 'sequ'"),
    ('class = "sequ"', "U005", "class.seq", "used by no routine"),  # both are said
    ('class = ""', "U005", "[routine tst.prod] class", "unknown class"),
]


@pytest.mark.parametrize("line,code,field,says", ROUTINE_CLASS, ids=[f"{c[0]}-{c[2]}" for c in ROUTINE_CLASS])
def test_a_bad_class_of_a_routine_is_coded(tmp_path, line, code, field, says):
    diags = rejected(tmp_path, CLASSED.replace('class = "seq"', line), code, field)
    assert any(says in d.message + d.fix for d in diags if field in d.location), [str(d) for d in diags]


CLASS_TABLE = [  # (a key of [class.seq] and its value, code, field, words of the message or fix)
    ("id", '"tst.prod"', "U005", "class.seq.id", "a class has no id"),
    ("class", '"other"', "U005", "class.seq.class", "cannot take another class"),
    ("like", '"tst.prod"', "U005", "class.seq.like", 'class = "'),
    ("types", "5", "U006", "class.seq.types", "must be a table of strings"),
    ("with", '{ combine = ["x"] }', "U007", "class.seq.with", "must be a table of strings"),
    ("steps", '[{ kernel = "one", args = ["x", "out"], grid = 1 }]', "U009", "class.seq.steps[0].grid", "must be a string"),
    ("steps", "[" + '{ repeat = "2", steps = [' * 6 + '{ kernel = "one", args = ["x", "out"], grid = "1" }' + "] }" * 6
     + "]", "U010", "class.seq.steps[0]", "nested"),
    ("bogus", "1", "U005", "class.seq.bogus", "unknown key"),
    ("deeper", '{ types = { T = "u32" } }', "U005", "class.seq.deeper", "unknown key"),
]


@pytest.mark.parametrize("key,value,code,field,says", CLASS_TABLE, ids=[c[3] for c in CLASS_TABLE])
def test_a_bad_class_table_is_coded(tmp_path, key, value, code, field, says):
    (d, *_) = rejected(tmp_path, with_class_line(key, value), code, field)
    assert says in d.message + d.fix


def test_a_class_table_takes_every_routine_key_but_id_and_class(tmp_path):
    from vyre_decl.routines.schema import ROUTINE_KEYS, ROUTINE_ONLY_KEYS

    assert set(ROUTINE_ONLY_KEYS) == {"id", "class"} and not set(ROUTINE_KEYS) & {"id", "class", "like"}
    text = with_class_line("summary", '"from the class"').replace('summary = "the product, sequentially"\n', "")
    text = text.replace("[class.seq]\n", '[class.seq]\ndoc = "more"\nrequire = ["len(x) >= 0"]\nwritten = ["out"]\n')
    reg = load(tmp_path, text, "good.routines.toml")
    assert routine_diagnostics(reg) == []
    r = routines(reg)["tst.prod"]
    assert (r.summary, r.doc, r.written, [c.text for c in r.requires]) == ("from the class", "more", {"out"}, ["len(x) >= 0"])


def test_class_tables_of_the_wrong_kind_are_u005(tmp_path):
    for text in (HEAD.replace("[family]", "class = 5\n[family]") + "[[routine]]\n" + ROUTINE,
                 HEAD.replace("[family]", 'class = { seq = 1 }\n[family]') + "[[routine]]\n" + ROUTINE,
                 HEAD.replace("[family]", 'class = [{ types = { T = "u32" } }]\n[family]') + "[[routine]]\n" + ROUTINE):
        (d,) = rejected(tmp_path, text, "U005", "bad.routines.toml class")
        assert "[class.NAME]" in d.message + d.fix


def test_badly_named_and_unused_classes_are_u005(tmp_path):
    (d,) = rejected(tmp_path, CLASSED.replace("[class.seq]", "[class.Seq]").replace('"seq"', '"Seq"'), "U005", "class.Seq")
    assert "bad class name" in d.message
    (d,) = rejected(tmp_path, CLASSED.replace('[[routine]]', '[class.spare]\ntypes = { T = "u32" }\n\n[[routine]]'),
                    "U005", "class.spare")
    assert "used by no routine" in d.message and 'class = "spare"' in d.fix


def test_a_bad_value_from_a_class_names_the_routine_and_the_class(tmp_path):
    text = CLASSED.replace('combine = "primitive.math.mul"', 'combine = "primitive.math.mull"')
    (d,) = rejected(tmp_path, text, "U007", "[routine tst.prod] with.combine")
    assert "given by [class.seq]" in d.message and "did you mean 'primitive.math.mul'" in d.fix


def test_a_class_value_shared_by_two_routines_fails_both_and_the_rest_loads(tmp_path):
    text = CLASSED.replace('grid = "1"', 'grid = "len(y)"') + ROUTINE_TWO
    diags = rejected(tmp_path, text, "U009")
    assert {d.location.split("] ")[0].split("[routine ")[1] for d in diags} == {"tst.prod", "tst.prod2"}


ROUTINE_TWO = '''
[[routine]]
id = "tst.prod2"
class = "seq"
kat = [[[2, 3], [6]]]
'''


def test_a_hostile_class_file_on_the_ops_path_leaves_lib_working(tmp_path, monkeypatch):
    (tmp_path / "bad.routines.toml").write_text(CLASSED.replace('class = "seq"', "class = [[1]]"))
    monkeypatch.setenv("VYRE_DECL_OPS_PATH", str(tmp_path))
    assert [d.code for d in routine_diagnostics()] == ["U005", "U020"]
    assert vyre_decl.lib.sum(np.array([1, 2, 3], np.uint32), backend="reference") == 6


# --- the standard files: classes only, and the same routines as their class-free expansion
def _expanded(raw: list[dict], classes: dict) -> list[dict]:
    """The routines with each class's keys written out (the documented rule, independently)."""
    out = []
    for r in copy.deepcopy(raw):
        cls = classes.get(r.pop("class", None), {})
        out.append({**copy.deepcopy(cls), **r})
    return out


@pytest.mark.parametrize("path", sorted(standard_routines_dir().glob("*.routines.toml")), ids=lambda p: p.name)
def test_standard_files_load_as_their_class_free_expansion(path, registry):
    text = path.read_text()
    assert "\nlike = " not in text
    f = read_routine_file(path)
    assert not f.problems
    kernels = {k.qualified: k for r in routines().values() for k in r.kernels.values()} | f.kernels
    diags: list = []
    expanded = build_routines(_expanded(f.raw_routines, f.classes), f.family, path, kernels, registry, diags, {})
    assert diags == [] and expanded == [routines()[r.id] for r in expanded]
    assert [r.id for r in expanded] == [r["id"] for r in f.raw_routines]
    for r, got in zip(f.raw_routines, expanded):
        assert with_class(r, f.classes) is not None
        assert routines()[got.id].file == str(path)


def test_the_json_schema_has_classes_and_no_like():
    schema = json_schema()
    assert "class" in schema["properties"] and "like" not in json.dumps(schema)
    assert "class" in schema["$defs"]["RoutineSpec"]["properties"]
    cls = schema["$defs"]["RoutineClassSpec"]
    assert cls["additionalProperties"] is False and not {"id", "class"} & set(cls["properties"])
