"""docs/text-form.md is executed (issue 27 item 3): every ```vyre example parses, prints back to itself,
validates and runs on the reference; every ```compose example parses for f32 and f64 bindings; the
precedence table is the parser's (and sugar.py's); the keyword list is the lexer's; the documented
precedence examples mean what the document says; compose hints say `3.0 as T`; the dead link to
README.md#programs is gone."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import vyre_decl
from vyre_decl.ir import parse_program, print_program
from vyre_decl.ir import sugar
from vyre_decl.ir.compose import parse_compose
from vyre_decl.ir.lexer import KEYWORDS, ParseError
from vyre_decl.ir.parser import parse_expr
from vyre_decl.ir.printer import print_expr
from vyre_decl.ir.types import DataType
from vyre_decl.ir.validation import validate

ROOT = Path(__file__).resolve().parent.parent
DOC = (ROOT / "docs" / "text-form.md").read_text()


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", DOC, re.S)


@pytest.mark.parametrize("src", _blocks("vyre"), ids=lambda s: s.split()[1])
def test_every_program_example_parses_prints_and_runs(src):
    program = parse_program(src, "docs/text-form.md")
    assert parse_program(print_program(program)) == program
    reg = vyre_decl.default_registry()
    assert validate(program, reg) == []
    inputs = [np.arange(1, 130).astype(d.dtype.storage_dtype) for d in program.inputs if d.count == 0]
    inputs += [np.zeros(d.count, d.dtype.storage_dtype) for d in program.inputs if d.count]
    outputs = vyre_decl.acquire("reference").dispatch(program, inputs)
    assert outputs and all(o.size for o in outputs)


def test_the_examples_compute_what_the_document_says():
    (_, prec, counts, rows, *_) = [parse_program(s) for s in _blocks("vyre")]
    a = np.array([0x100, 7, 0xF0000000, 0xFFFFFFF1], np.uint32)
    (out,) = vyre_decl.acquire("reference").dispatch(prec, [a])
    twice = a.astype(np.float32) * 2
    low = (a & 0xFF) == 0
    flipped = (~a) >> 28
    want = np.where(low & ~(flipped > 8), -twice, twice + 1)
    np.testing.assert_array_equal(out, want.astype(np.float32))
    x = np.arange(200, dtype=np.uint32)
    (total,) = vyre_decl.acquire("reference").dispatch(counts, [x])
    assert total[0] == (x % 3).sum()
    x = np.arange(1, 43, dtype=np.float32)  # 10 whole rows and a partial one (its missing elements read 0)
    m = np.arange(16, dtype=np.float32) - 7
    (out,) = vyre_decl.acquire("reference").dispatch(rows, [x, m])
    padded = np.concatenate([x, np.zeros(2, np.float32)]).reshape(-1, 4)
    acc = np.zeros((len(padded), 4), np.float32)
    for k in range(4):  # the program's order of additions
        acc = acc + padded[:, k:k + 1] * m.reshape(4, 4)[k]
    np.testing.assert_array_equal(out, acc.reshape(-1)[:len(x)])


@pytest.mark.parametrize("src", _blocks("compose"))
@pytest.mark.parametrize("dtype", [DataType.F32, DataType.F64])
def test_every_composition_example_parses_for_each_float_binding(src, dtype):
    steps, result = parse_compose(src, {"T": dtype}, operands=frozenset({"x"}))
    assert steps and result is not None


def test_the_precedence_table_is_the_parsers():
    rows = re.findall(r"^\| (\d+) \| (.+?) \| (.+?) \|$", DOC, re.M)
    documented = {}
    for level, ops, _ in rows:
        if int(level) <= max(sugar.BINARY_PRECEDENCE.values()):
            for op in ops.replace("\\|", "|").replace("`", " ").split():
                documented[op] = int(level)
    assert documented == sugar.BINARY_PRECEDENCE
    cast, prefix = (next(r[1] for r in rows if int(r[0]) == level)
                    for level in (sugar.CAST_PRECEDENCE, sugar.UNARY_PRECEDENCE))
    assert "as" in cast and all(f"`{op}`" in prefix for op in sugar.UNARY)
    for op, op_id in sugar.BINARY.items():  # the op ids the table gives
        row = next(r for r in rows if int(r[0]) == sugar.BINARY_PRECEDENCE[op])
        assert op_id.rpartition(".")[2] in row[2] and op_id.rpartition(".")[0] in row[2], (op, row)


@pytest.mark.parametrize("text,grouped", [
    ("a + b * c", "a + (b * c)"),
    ("x as f32 * 2.0f32", "(x as f32) * 2.0f32"),
    ("a & 1u32 == 0u32", "(a & 1u32) == 0u32"),
    ("-x as f32", "(-x) as f32"),
    ("a - b - c", "(a - b) - c"),
    ("a << 1u32 + b", "a << (1u32 + b)"),
    ("~a ^ b | c", "((~a) ^ b) | c"),
])
def test_the_documented_precedence_examples(text, grouped):
    assert parse_expr(text) == parse_expr(grouped)
    assert parse_expr(print_expr(parse_expr(text))) == parse_expr(text)


def test_the_keyword_list_is_the_lexers():
    listed = set(re.search(r"\*\*Keywords\*\* cannot name variables or buffers: `(.*?)`, the types", DOC, re.S)
                 .group(1).split())
    types = {t.value for t in DataType}
    access = {"read", "read_write", "write", "uniform", "workgroup", "private"}
    assert listed | types | access == set(KEYWORDS)


@pytest.mark.parametrize("spelling", ["5u32", "5_u32", "0xFFu32", "-1i32", "1.5f32", "1e-3f64", "-0.0f32", "3f64",
                                      "inf_f32", "-inf_f64", "nan_f32", "bits(0x7fc00001)_f32", "true", "false"])
def test_every_documented_literal_spelling_parses(spelling):
    assert spelling in DOC
    parse_expr(spelling)


def test_compose_hints_say_as_t():
    with pytest.raises(ParseError) as e:
        parse_compose("x * 3.0", {"T": DataType.F64}, operands=frozenset({"x"}))
    assert "`3.0 as T`" in e.value.diagnostics[0].fix and "3.0u32" not in e.value.diagnostics[0].fix


def test_a_composition_that_casts_to_one_type_is_told_to_cast_to_the_variable(tmp_path):
    (tmp_path / "c.toml").write_text('''[dialect]
name = "hint"
version = "1.0.0"

[[op]]
id = "hint.triple"
summary = "x * 3"
signature = "(x: T) -> T"
types = { T = "f32,f64" }
compose = "x * 3.0f32"
''')
    reg = vyre_decl.load_registry([tmp_path])
    (d,) = [d for d in reg.errors if d.code == "R010"]
    assert "`as T`" in d.fix and "`3.0 as T`" in d.fix and "`as f64`" not in d.fix


def test_no_doc_links_to_readme_programs():
    for path in (ROOT / "docs").glob("*.md"):
        assert "README.md#programs" not in path.read_text(), path
    assert "](text-form.md)" in (ROOT / "docs" / "routines.md").read_text()
