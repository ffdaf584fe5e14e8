"""The benchmark suite: rows judge their targets the right way round, the smoke run works on a
machine without a GPU (GPU cases skipped with the reason), and the simulated device's rows
(interpreter throughput, a simulated conformance run) check what they time."""

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


def test_the_interpreter_rows_measure_checked_lane_instructions():
    import numpy as np

    from vyre_decl.bench.kernels import add_program
    from vyre_decl.bench.sim import REDUCE, _throughput
    from vyre_decl.ir import parse_program

    rng = np.random.default_rng(1)
    a, b = (rng.integers(0, 2**32, 1 << 10, dtype=np.uint32) for _ in range(2))
    rows = [_throughput("map", add_program("u32"), [a, b], False, 2),
            _throughput("map v4", add_program("u32"), [a, b], True, 2),
            _throughput("reduce", parse_program(REDUCE), [a], False, 2)]
    for r in rows:
        assert r.ours > 0 and r.baseline > 0 and r.unit == "M/s" and r.better == "higher"
        assert r.extra["lane_instructions"] > 1024 and "output = reference backend's" in r.note
    # the .v4 entry runs a quarter of the invocations: fewer lane-instructions for the same map
    assert rows[1].extra["lane_instructions"] < rows[0].extra["lane_instructions"]


def test_the_interpreter_rows_check_what_they_time(monkeypatch):
    """An interpreter that answers fast and wrong (writes nothing), or reports a sanitizer finding,
    is an error, not a fast row."""
    import numpy as np
    import pytest

    from vyre_decl.bench.kernels import add_program
    from vyre_decl.bench.sim import _throughput
    from vyre_decl.sim import ptx

    a = np.arange(1, 257, dtype=np.uint32)
    real = ptx.Kernel.run
    monkeypatch.setattr(ptx.Kernel, "run", lambda self, *args, **kw: [] if kw.get("stats") is None else
                        kw["stats"].update(lane_instructions=1) or [])
    with pytest.raises(AssertionError, match="differs from the reference"):
        _throughput("map", add_program("u32"), [a, a], False, 1)
    finding = ptx.Finding("shared_race", "k", 1, "st.shared.u32 [%r1], %r2;", "", "planted")
    monkeypatch.setattr(ptx.Kernel, "run", lambda self, *args, **kw: real(self, *args, **kw) + [finding])
    with pytest.raises(AssertionError, match="the sanitizer reported"):
        _throughput("map", add_program("u32"), [a, a], False, 1)


def test_the_simulated_conformance_row_runs_conform_on_the_simulator():
    from vyre_decl.bench.sim import conformance_rows

    (row,) = conformance_rows(quick=True)
    assert row.ours > 0 and row.unit == "s" and "all passed" in row.note
    s = row.extra["summary"]
    assert s["op_types"] == s["op_types_passed"] == 4 and s["programs"] == s["programs_passed"] == 2
    assert "--backend" in row.extra["command"] and "cuda" in row.extra["command"]


def test_the_simulated_conformance_row_refuses_a_failed_or_unsimulated_run(monkeypatch):
    import json
    import subprocess
    from pathlib import Path

    import pytest

    from vyre_decl.bench import sim

    def fake(returncode: int, device: str, self_consistency: bool):
        def run(cmd, **kw):
            summary = {"op_types": 4, "op_types_passed": 4, "programs": 2, "programs_passed": 2, "routines": 0,
                       "routines_passed": 0, "cases": 9, "failed_cases": 0, "laws_failed": 0}
            Path(cmd[cmd.index("--out") + 1]).write_text(json.dumps({
                "summary": summary, "backend": {"device": device}, "self_consistency": self_consistency,
                "elapsed_s": 0.1}))
            return subprocess.CompletedProcess(cmd, returncode, "", "1 failure")
        return run

    monkeypatch.setattr(sim.subprocess, "run", fake(1, "NVIDIA H100 80GB HBM3 (simulated)", False))
    with pytest.raises(AssertionError, match="failed"):
        sim.conformance_rows(quick=True)
    for device, self_consistency in (("reference", True), ("NVIDIA H100 80GB HBM3", False)):
        monkeypatch.setattr(sim.subprocess, "run", fake(0, device, self_consistency))
        with pytest.raises(AssertionError, match="not the simulator"):
            sim.conformance_rows(quick=True)
    monkeypatch.setattr(sim.subprocess, "run", fake(0, "NVIDIA H100 80GB HBM3 (simulated)", False))
    assert sim.conformance_rows(quick=True)[0].extra["summary"]["programs_passed"] == 2
