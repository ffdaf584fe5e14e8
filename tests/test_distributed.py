"""Certifying on several devices and on a Dask cluster: the shards run elsewhere, faults move
work to another device or worker, and the merged certificate is the unsharded run's."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import threading
import time
from html.parser import HTMLParser
from pathlib import Path

import pytest

import pool_tasks
from vyre_decl.conform.certificate import content, merge_devices
from vyre_decl.conform.certify import RunSpec, certify
from vyre_decl.conform.cli import main
from vyre_decl.conform.devicepool import PoolError, certify_on_slots
from vyre_decl.conform.fleet import fleet_html, fleet_report, fleet_table

SMALL = RunSpec(dialects=("hash", "primitive.logical"), cases=300, seed=7)


@pytest.fixture(scope="module")
def small_whole() -> dict:
    return certify(SMALL, "reference")


def test_shards_on_two_slots_merge_into_the_unsharded_certificate(small_whole):
    run = certify_on_slots(SMALL, ["reference", "reference"], shards=5)
    assert content(run.certificate) == content(small_whole)
    assert run.faults == [] and sorted(run.attempts.values()) == [1] * 5
    [slot] = run.certificate["devices"]  # both slots are called "reference": one entry, every shard
    assert slot["shards"] == [f"{i}/5" for i in range(5)] and slot["units"] == small_whole["units_total"]


def test_a_slot_that_cannot_start_is_reported_and_the_others_run_its_shard(small_whole):
    lines: list[str] = []
    run = certify_on_slots(SMALL, ["reference:0", "reference"], shards=4, progress=lines.append)
    assert content(run.certificate) == content(small_whole)
    assert [f["slot"] for f in run.faults] == ["reference:0"]
    assert "cannot start" in run.faults[0]["message"] and "no devices" in run.faults[0]["message"]
    assert run.certificate["faults"] == run.faults
    assert any("reference:0 faulted" in line for line in lines)
    assert any(line.startswith("shards: 4/4 done, 0 running, 1 failed") for line in lines)


def test_a_worker_process_that_dies_gives_its_shard_to_another_device(small_whole, tmp_path, monkeypatch):
    monkeypatch.setenv(pool_tasks.MARKER, str(tmp_path / "died"))
    run = certify_on_slots(SMALL, ["reference", "reference"], shards=3, task=pool_tasks.die_once)
    assert (tmp_path / "died").exists()
    assert content(run.certificate) == content(small_whole)
    assert len(run.faults) == 1 and run.faults[0]["shard"] == "1/3" and "BrokenProcessPool" in run.faults[0]["message"]
    assert run.attempts[1] == 2


def test_a_device_lost_mid_shard_gives_the_shard_to_another_device(small_whole):
    run = certify_on_slots(SMALL, ["reference:lost", "reference"], shards=2, task=pool_tasks.lose_the_device)
    assert content(run.certificate) == content(small_whole)
    assert [(f["slot"], f["message"].split(":")[0]) for f in run.faults] == [("reference:lost", "DeviceLost")]


def test_a_worker_that_cannot_restart_after_a_fault_loses_the_device_and_ends_the_shard(monkeypatch):
    from vyre_decl.conform.isolation import CaseError, DeviceLost, IsolatedRunner
    from vyre_decl.conform.runner import Conformance, run_units
    from vyre_decl.conform.certify import plan

    runner = IsolatedRunner("reference", timeout=60)
    try:
        the_plan = plan(SMALL)
        conf = Conformance(runner, the_plan.registry, seed=1, cases=10)
        assert run_units(conf, the_plan.units[:1], 1, lambda s: None)[the_plan.units[0].key].verdict == "pass"

        def no_more_workers(self):
            raise CaseError("the reference worker did not start within 60 s", True)

        monkeypatch.setattr(IsolatedRunner, "_start", no_more_workers)
        runner._proc.kill()  # the worker dies, and no new one can be started
        runner._proc.join(5)
        with pytest.raises(DeviceLost, match="reference cannot be started again after a fault"):
            run_units(conf, the_plan.units[1:3], 2, lambda s: None)  # not a failed case: the shard ends
    finally:
        monkeypatch.undo()
        runner.close()


def test_when_every_slot_faults_the_run_is_an_error_not_a_certificate():
    with pytest.raises(PoolError, match="shard 0/1 faulted on \\['reference:0'\\]"):
        certify_on_slots(SMALL, ["reference:0"], shards=1)
    with pytest.raises(PoolError, match="no device"):
        certify_on_slots(SMALL, [])


def test_devices_are_merged_per_slot():
    merged = merge_devices([{"slot": "cuda:1", "device": "B", "shards": ["2/4"], "units": 3},
                            {"slot": "cuda:0", "device": "A", "shards": ["10/12", "1/4"], "units": 5},
                            {"slot": "cuda:1", "device": "B", "shards": ["0/4"], "units": 2}])
    assert merged == [{"slot": "cuda:0", "device": "A", "shards": ["1/4", "10/12"], "units": 5},
                      {"slot": "cuda:1", "device": "B", "shards": ["0/4", "2/4"], "units": 5}]


@pytest.mark.parametrize("argv, says", [
    (["--devices", "all", "--backend", "reference"], "--devices needs a backend with devices"),
    (["--devices", "0", "--dask", "local:1"], "--devices cannot be combined with --dask"),
    (["--dask", "local:1", "--shard", "0/2"], "--dask cannot be combined with --shard"),
    (["--dask", "local:1", "--fuzz", "3"], "--dask cannot be combined with --fuzz"),
    (["--shards", "3"], "--shards goes with --devices or --dask"),
    (["--shards", "-1", "--dask", "local:1"], "--shards must be >= 0"),
    (["--dask", "local:0", "--backend", "reference"], "bad --dask 'local:0'"),
    (["--dask", "local:x", "--backend", "reference"], "bad --dask 'local:x'"),
])
def test_bad_distribution_options_are_usage_errors(argv, says, tmp_path, capsys):
    assert main(argv + ["--dialect", "hash", "--out", str(tmp_path / "c.json"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert says in err and "Fix:" in err
    assert not (tmp_path / "c.json").exists()


def _failing_cert(cert: dict, unit: str) -> dict:
    bad = json.loads(json.dumps(cert))
    entry = bad["ops"][unit]
    entry.update(verdict="fail", failed=1, passed=entry["cases"] - 1,
                 failures=[{"kind": "backend", "message": "1 of 9 cases differ <from the backend>"}])
    bad["backend"] = {**bad["backend"], "device": "GPU B", "driver_version": 13010}
    bad["summary"] = {**bad["summary"], "verdict": "fail", "op_types_passed": bad["summary"]["op_types_passed"] - 1}
    return bad


class _Tables(HTMLParser):
    """The cells of each table by id, and whether every tag closed."""

    def __init__(self) -> None:
        super().__init__()
        self.open: list[str] = []
        self.tables: dict[str, list[list[str]]] = {}
        self.table: str | None = None

    def handle_starttag(self, tag, attrs):
        if tag not in ("meta", "br"):
            self.open.append(tag)
        if tag == "table":
            self.table = dict(attrs).get("id")
            self.tables[self.table] = []
        elif tag == "tr" and self.table:
            self.tables[self.table].append([])

    def handle_endtag(self, tag):
        assert self.open and self.open.pop() == tag, f"</{tag}> closes nothing open"

    def handle_data(self, data):
        if self.table and self.open and self.open[-1] in ("td", "th") and self.tables[self.table]:
            self.tables[self.table][-1].append(data)


def test_the_fleet_report_shows_which_device_fails_which_unit(small_whole, tmp_path):
    unit = "primitive.logical.not[bool]" if "primitive.logical.not[bool]" in small_whole["ops"] else \
        sorted(small_whole["ops"])[0]
    results = [{"worker": "0", "certificate": small_whole},
               {"worker": "1", "certificate": _failing_cert(small_whole, unit)},
               {"worker": "2", "error": "KilledWorker: the worker died three times"}]
    report = fleet_report(results, "2026-11-23T00:00:00+00:00", "2026-11-23T00:01:00+00:00")
    assert report["verdict"] == "fail" and report["units"] == len(small_whole["ops"])
    assert report["matrix"][f"op {unit}"] == ["pass", "fail", "-"]
    assert report["failing_units"] == sorted(f"op {k}" for k in small_whole["ops"])  # worker 2 ran nothing
    assert report["failures"][f"op {unit}"] == {"1": "1 of 9 cases differ <from the backend>"}
    table = fleet_table(report)
    assert "[1] GPU B, driver 13010 (worker 1)" in table and "[2] 2: KilledWorker" in table
    assert f"op {unit}" in table and "FAIL" in table
    page = fleet_html(report)
    assert "<from the backend>" not in page and "&lt;from the backend&gt;" in page  # escaped
    parser = _Tables()
    parser.feed(page)
    parser.close()
    assert parser.open == []
    row = next(r for r in parser.tables["failing"] if r and r[0] == f"op {unit}")
    assert row == [f"op {unit}", "pass", "fail", "-"]
    assert [r[-1] for r in parser.tables["devices"][1:]] == ["pass", "fail", "error"]


def test_fleet_pages_render_in_a_headless_browser(small_whole, tmp_path):
    """The pages the tests above check with HTMLParser, loaded in Chromium and read back."""
    browser = next((b for b in ("chromium", "chromium-browser", "google-chrome") if shutil.which(b)), None)
    if browser is None:
        pytest.skip("no headless Chromium (chromium, chromium-browser or google-chrome) on PATH: the fleet pages "
                    "are checked with HTMLParser only")
    unit = sorted(small_whole["ops"])[0]
    pages = {f"op {unit}": [{"worker": "0", "certificate": small_whole},
                            {"worker": "1", "certificate": _failing_cert(small_whole, unit)}],
             "Every unit passes on every device": [{"worker": "0", "certificate": small_whole}]}
    for i, (expect, results) in enumerate(pages.items()):
        page = tmp_path / f"fleet-{i}.html"
        page.write_text(fleet_html(fleet_report(results, "a", "b")))
        dom = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", page.as_uri()],
                             capture_output=True, text=True, timeout=120).stdout
        assert "vyre_decl fleet report" in dom and expect in dom


def test_a_fleet_of_one_healthy_device_passes(small_whole):
    report = fleet_report([{"worker": "w", "certificate": small_whole}], "a", "b")
    assert report["verdict"] == "pass" and report["failing_units"] == []
    assert "every unit passes on every device" in fleet_table(report)
    assert 'id="failing">Every unit passes' in fleet_html(report)


# --- Dask distributed -----------------------------------------------------------------------------

MATH = RunSpec(dialects=("primitive.math",), cases=1000, seed=11)


def test_dask_reruns_the_shard_of_a_killed_worker_and_the_certificate_is_unchanged():
    pytest.importorskip("distributed")
    from vyre_decl.conform.cluster import SHARD_EVENT, certify_on_dask, connect

    whole = certify(MATH, "reference")
    killed: list[dict] = []
    with connect("local:2", "reference") as client:
        outcome: dict = {}

        def run() -> None:
            try:
                outcome["run"] = certify_on_dask(client, MATH, "reference", shards=2, poll=0.05)
            except Exception as exc:  # noqa: BLE001 - shown by the assertion below
                outcome["error"] = exc

        thread = threading.Thread(target=run)
        thread.start()
        deadline = time.monotonic() + 120
        while not killed and time.monotonic() < deadline and thread.is_alive():
            events = [e for _, e in client.get_events(SHARD_EVENT)]
            if events:
                os.kill(events[0]["pid"], signal.SIGKILL)  # the worker process, mid-shard
                killed.append(events[0])
            time.sleep(0.02)
        thread.join(300)
    assert killed, "no shard started"
    assert "error" not in outcome, outcome.get("error")
    result = outcome["run"]
    assert result.attempts[killed[0]["shard"]] == 2, result.attempts
    assert [f["shard"] for f in result.faults] == [f"{killed[0]['shard']}/2"]
    assert content(result.certificate) == content(whole)
    assert result.certificate["summary"]["verdict"] == "pass"


def test_conform_on_a_local_dask_cluster_and_the_fleet_report(small_whole, tmp_path, capsys):
    pytest.importorskip("distributed")
    argv = ["--backend", "reference", "--dialect", "hash", "--dialect", "primitive.logical", "--cases", "300",
            "--seed", "7"]
    assert main(argv + ["--dask", "local:2", "--out", str(tmp_path / "d.json"), "--quiet"]) == 0
    cert = json.loads((tmp_path / "d.json").read_text())
    assert content(cert) == content(small_whole)
    assert sorted(d["slot"] for d in cert["devices"]) == ["reference@0", "reference@1"]
    assert sum(d["units"] for d in cert["devices"]) == small_whole["units_total"]
    assert "shard merged 8/8" in capsys.readouterr().out

    assert main(["fleet", "--dask", "local:2", "--out", str(tmp_path / "fleet"), "--quiet"] + argv) == 0
    out = capsys.readouterr().out
    assert "vyre_decl fleet: 2 devices" in out and "every unit passes on every device" in out
    report = json.loads((tmp_path / "fleet" / "fleet.json").read_text())
    assert report["verdict"] == "pass" and [d["worker"] for d in report["devices"]] == ["0", "1"]
    for i in (0, 1):
        assert content(json.loads((tmp_path / "fleet" / f"certificate-{i}.json").read_text())) == \
            content(small_whole)
    assert "Every unit passes on every device" in (tmp_path / "fleet" / "fleet.html").read_text()


def test_an_unreachable_scheduler_is_a_usage_error():
    pytest.importorskip("distributed")
    from vyre_decl.conform.cluster import ClusterError, connect

    with pytest.raises(ClusterError, match="cannot reach the Dask scheduler.*Fix:"):
        with connect("tcp://127.0.0.1:9", "reference", timeout=1):
            pass


def test_the_cuda_backend_on_a_cluster_without_gpus_is_refused(tmp_path, capsys):
    pytest.importorskip("distributed")
    from vyre_decl.conform.cluster import ClusterError, certify_on_dask, connect

    with connect("local:1", "reference") as client:
        with pytest.raises(ClusterError, match="no worker of the cluster offers a GPU.*Fix: start workers with "
                                               "--resources GPU=1"):
            certify_on_dask(client, SMALL, "cuda")


# --- on GPUs ----------------------------------------------------------------------------------------

@pytest.mark.gpu
def test_conform_on_every_gpu_of_the_host_gives_the_single_device_certificate(tmp_path, capsys):
    from vyre_decl.backends import list_backends

    cuda = next(i for i in list_backends() if i.name == "cuda")
    if not cuda.is_available():
        pytest.skip("no CUDA GPU here")
    argv = ["--backend", "cuda", "--dialect", "primitive.bitwise", "--cases", "500", "--quiet"]
    assert main(argv + ["--out", str(tmp_path / "one.json")]) == 0
    assert main(argv + ["--devices", "all", "--out", str(tmp_path / "all.json")]) == 0
    one, every = (json.loads((tmp_path / f).read_text()) for f in ("one.json", "all.json"))
    assert content(one) == content(every)
    assert [d["slot"] for d in every["devices"]] == [f"cuda:{i}" for i in range(cuda.device_count() or 0)]


@pytest.mark.gpu
def test_the_readme_multi_gpu_map_splits_over_every_device():
    import importlib.util

    import numpy as np

    from vyre_decl.backends.cuda import CudaBackend, cuda_device_count

    if cuda_device_count() == 0:
        pytest.skip("no CUDA GPU here")
    path = Path(__file__).resolve().parent.parent / "scripts" / "multi_gpu_map.py"
    module_spec = importlib.util.spec_from_file_location("multi_gpu_map", path)
    script = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(script)
    rng = np.random.default_rng(3)
    x, y = rng.random(1_000_003, dtype=np.float32), rng.random(1_000_003, dtype=np.float32)
    backends = [CudaBackend(device=d) for d in range(cuda_device_count())]
    try:
        for count in range(1, len(backends) + 1):
            assert np.array_equal(script.split_map(x, y, backends[:count]), x * np.float32(2) + y)
        assert np.array_equal(script.split_map(x[:1], y[:1], backends), x[:1] * np.float32(2) + y[:1])  # empty shares
    finally:
        for b in backends:
            b.close()
