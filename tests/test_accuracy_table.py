"""docs/accuracy.md is generated from docs/accuracy.json, covers every float function, and each
op's declared `ulp` equals the measured maximum there."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vyre_decl.conform.accuracy import function_for, render_table
from vyre_decl.ir.types import FLOAT_TYPES
from vyre_decl.registry import default_registry

DOCS = Path(__file__).resolve().parent.parent / "docs"


@pytest.fixture(scope="module")
def table() -> dict:
    return json.loads((DOCS / "accuracy.json").read_text())


def _functions():
    for op in default_registry():
        if function_for(op.id) is None:
            continue
        for t in sorted({op.output_type(b) for b in op.bindings()} & set(FLOAT_TYPES), key=lambda t: t.value):
            yield op, t


def test_every_float_function_is_measured_and_declares_what_was_measured(table):
    checked = 0
    for op, t in _functions():
        row = table.get(op.id, {}).get(t.value)
        assert row is not None, f"{op.id} {t} is not in docs/accuracy.json: run python scripts/accuracy.py --update"
        assert row["max_ulp"] == op.accuracy(t), \
            f"{op.id} declares {op.accuracy(t)} ULP for {t}, docs/accuracy.json measured {row['max_ulp']}"
        checked += 1
    assert checked >= 40


def test_the_table_lists_nothing_that_is_not_an_op(table):
    ops = {op.id: {t.value for t in {op.output_type(b) for b in op.bindings()}} for op, _ in _functions()}
    for op_id, rows in table.items():
        assert op_id in ops and set(rows) <= ops[op_id], f"docs/accuracy.json lists {op_id} {sorted(rows)}"


def test_the_markdown_is_generated_from_the_json(table):
    assert (DOCS / "accuracy.md").read_text() == render_table(table)
