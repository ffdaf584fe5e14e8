"""conform --accuracy: each float function's error against mpmath on a sample, in the certificate,
failing where it exceeds the op's declared budget."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from vyre_decl.conform.cli import main

pytest.importorskip("mpmath")

FIXTURES = Path(__file__).parent / "fixtures"


def run_cli(*args: str) -> int:
    return main(list(args))


def test_accuracy_is_measured_and_within_budget(tmp_path):
    out = tmp_path / "cert.json"
    assert run_cli("--backend", "reference", "--ops", "primitive.float.rcp", "--ops", "primitive.float.exp",
                   "--cases", "50", "--accuracy", "200", "--out", str(out), "--quiet") == 0
    cert = json.loads(out.read_text())
    assert cert["accuracy_samples"] == 200
    for key in ("primitive.float.exp[f32]", "primitive.float.exp[f64]", "primitive.float.rcp[f64]"):
        acc = cert["ops"][key]["accuracy"]
        assert acc["samples"] >= 150 and isinstance(acc["max_ulp"], int) and acc["max_ulp"] <= acc["budget"]
    assert cert["ops"]["primitive.float.rcp[f32]"]["accuracy"]["max_ulp"] == 0  # correctly rounded


def test_a_false_budget_fails_with_where_it_occurs(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("VYRE_DECL_OPS_PATH", str(FIXTURES / "inaccurate_ops"))
    out = tmp_path / "cert.json"
    assert run_cli("--backend", "reference", "--dialect", "inexact", "--cases", "20", "--accuracy", "100",
                   "--out", str(out), "--quiet") == 1
    cert = json.loads(out.read_text())
    entry = cert["ops"]["inexact.exp[f64]"]
    assert entry["verdict"] == "fail" and entry["accuracy"]["max_ulp"] > 1
    assert [f["kind"] for f in entry["failures"]] == ["accuracy"]
    assert "declares 1" in entry["failures"][0]["message"]
    assert "[accuracy] inexact.exp[f64]" in capsys.readouterr().out


def test_without_the_flag_nothing_is_measured(tmp_path):
    out = tmp_path / "cert.json"
    assert run_cli("--backend", "reference", "--ops", "primitive.float.rcp", "--cases", "20",
                   "--out", str(out), "--quiet") == 0
    assert all("accuracy" not in e for e in json.loads(out.read_text())["ops"].values())


def test_a_negative_sample_count_is_a_usage_error(capsys):
    assert run_cli("--accuracy", "-1") == 2
    assert "--accuracy" in capsys.readouterr().err


def test_midpoints_of_f32_rounding_are_found_in_f64_values():
    from vyre_decl.conform.accuracy import near_f32_midpoint

    tiny = 2.0**-149
    w = np.array([1.0 + 2.0**-24, 1.0, 1.0 + 2.0**-24 + 2.0**-40, 1.0 + 2.0**-23, 1.5 * tiny, tiny, 2.5 * tiny,
                  -(1.0 + 2.0**-24), np.nan, np.inf])
    assert near_f32_midpoint(w).tolist() == [True, False, False, False, True, False, True, True, False, False]


def test_the_oracle_keeps_signed_zeros_and_counts_ulps_across_zero():
    from vyre_decl.conform.accuracy import function_for, oracle, ulp_error
    from vyre_decl.ir.types import DataType

    atan2 = function_for("primitive.float.atan2")
    assert oracle(atan2, DataType.F64, (-0.0, -5.0)) == -math.pi  # mpmath has no -0; IEEE says -pi
    assert oracle(function_for("primitive.float.exp"), DataType.F32, (1.0,)) == float(np.float32(math.e))
    got = np.array([1.0, -5e-324, np.nan, np.inf])
    want = np.array([np.nextafter(1.0, 2.0), 5e-324, np.nan, 1.0])
    err = ulp_error(DataType.F64, got, want)
    assert err[:3].tolist() == [1.0, 2.0, 0.0] and err[3] == 2**62  # +inf sits 2^62 values above 1.0
