"""The benchmark suite: rows judge their targets the right way round, and the smoke run works
on a machine without a GPU (GPU cases skipped with the reason)."""

from __future__ import annotations

import json

from vyre_decl.bench.__main__ import main
from vyre_decl.bench.core import Row, render, skipped


def test_rows_judge_throughput_time_and_absolute_limits():
    assert Row("bw", 2920.0, "v4", 3000.0, "GB/s", "higher", 0.97).met is True
    assert Row("bw", 2800.0, "v4", 3000.0, "GB/s", "higher", 0.97).met is False
    assert Row("t", 5.2, "raw", 5.0, "us", "lower", 1.05).met is True
    assert Row("t", 5.3, "raw", 5.0, "us", "lower", 1.05).met is False
    assert Row("cold", 19.0, "numpy", 70.0, "ms", "lower", limit=20.0).met is True
    assert Row("cold", 21.0, "numpy", 70.0, "ms", "lower", limit=20.0).met is False
    assert Row("info", 1.0, "x", 2.0, "ms").met is None and skipped("gpu", "no GPU").ratio is None
    table = render([Row("t", 5.3, "raw", 5.0, "us", "lower", 1.05), skipped("gpu", "no GPU")], "head")
    assert "MISSED" in table and "skipped: no GPU" in table and "≤1.05x" in table


def test_the_quick_run_writes_json(tmp_path, capsys):
    out = tmp_path / "run.json"
    assert main(["--quick", "--only", "cpu", "--json", str(out)]) == 0
    got = json.loads(out.read_text())
    assert got["quick"] is True and got["rows"][0]["case"].startswith("reference backend") and got["rows"][0]["ours"] > 0
    assert "reference backend" in capsys.readouterr().out
    assert main(["--bogus"]) == 2


def test_the_validation_rows_check_what_they_time(monkeypatch):
    """A validator that answers fast and wrong (nothing found in the 100,000-statement program) is
    an error, not a fast row."""
    import pytest

    import vyre_decl.ir.validation as validation
    from vyre_decl.bench.host import validation_rows

    monkeypatch.setattr(validation, "validate", lambda program, registry: [])
    with pytest.raises(AssertionError, match="V017 expected"):
        validation_rows(1)
