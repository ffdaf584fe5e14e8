"""The conformance runner on the reference backend: a whole run, planted registry errors, a
buggy backend caught with a minimised counterexample, shards that merge into the unsharded
certificate, replay capsules, worker isolation, and usage errors."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import numpy as np
import pytest

from vyre_decl.backends.reference import ReferenceBackend
from vyre_decl.conform.cases import attr_sets
from vyre_decl.conform.certificate import content
from vyre_decl.conform.cli import main
from vyre_decl.conform.corpus import load_corpus
from vyre_decl.conform.isolation import CaseError, InProcessRunner, IsolatedRunner
from vyre_decl.conform.runner import Conformance, select_units
from vyre_decl.ir.types import DataType
from vyre_decl.registry import default_registry

FIXTURES = Path(__file__).parent / "fixtures"


def run_cli(*args: str) -> int:
    return main(list(args))


def test_whole_run_on_the_reference(tmp_path, capsys):
    out = tmp_path / "cert.json"
    assert run_cli("--out", str(out), "--quiet") == 0
    captured = capsys.readouterr()
    assert "no GPU backend was found" in captured.err
    assert "PASS" in captured.out and "programs (" in captured.out
    cert = json.loads(out.read_text())
    for key in ("schema", "vyre_decl_version", "backend", "registry_fingerprint", "corpus_fingerprint", "seed",
                "started", "finished", "summary", "ops", "programs"):
        assert key in cert, key
    for key in ("id", "version", "device", "compute_capability", "driver_version", "ptx_target"):
        assert key in cert["backend"], key
    assert cert["backend"]["id"] == "reference" and cert["registry_fingerprint"] == default_registry().fingerprint
    reg = default_registry()  # collective (subgroup) ops are certified through programs, not op by op
    assert len(cert["ops"]) == sum(len(op.bindings()) for op in reg if not reg.has_trait(op.id, "collective"))
    assert len(cert["programs"]) >= 40
    add = cert["ops"]["primitive.math.add[u32]"]
    assert add["verdict"] == "pass" and add["cases"] > 65536 and add["laws_checked"] == 3 and add["failed"] == 0
    # the reference against itself: each declared law is checked (and counted) once, and it says so
    laws = {f"{op.id}[{','.join(t.value for t in b)}]": sum(law.applies(op.binding_map(b)) for law in op.laws)
            for op in reg for b in op.bindings() if op.input_types(b) and attr_sets(op, b)[:1] == [()]
            and not reg.has_trait(op.id, "collective")}
    assert {k: e["laws_checked"] for k, e in cert["ops"].items() if e["laws_checked"]} == \
        {k: n for k, n in laws.items() if n}
    assert cert["summary"]["verdict"] == "pass" and cert["summary"]["laws_checked"] == sum(laws.values()) > 300
    assert cert["self_consistency"] is True and "reference self-consistency" in captured.out
    from vyre_decl.routines import routines

    assert len(cert["routines"]) == sum(len(d.bindings()) for d in routines().values())
    assert set(cert["routines"]["scan.sum[f32]"]["runs"]) == {"0", "1", "31", "1000", "4097"}
    assert "routines (" in captured.out


def test_planted_registry_errors_are_caught_with_their_kind(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("VYRE_DECL_OPS_PATH", str(FIXTURES / "planted_ops"))
    out = tmp_path / "cert.json"
    assert run_cli("--dialect", "planted", "--out", str(out), "--quiet") == 1
    cert = json.loads(out.read_text())
    kinds = {k: {f["kind"] for f in e["failures"]} for k, e in cert["ops"].items()}
    assert kinds["planted.wrong_kat[u32]"] == {"kat"}
    assert kinds["planted.wrong_law[u32]"] == {"law"}
    assert "reference" in kinds["planted.wrong_reference[u32]"]
    kat = cert["ops"]["planted.wrong_kat[u32]"]["failures"][0]
    assert kat["details"]["inputs"]["a"]["dec"] == "2" and kat["details"]["known_answer"]["dec"] == "5"
    assert kat["details"]["reference"]["hex"] == "0x00000004"
    law = cert["ops"]["planted.wrong_law[u32]"]["failures"][0]
    assert law["details"]["equation"] == "f(a,b) = f(b,a)" and "a" in law["details"] and "fails for" in law["message"]
    text = capsys.readouterr().out
    assert "[kat]" in text and "[law]" in text and "[reference]" in text and "replay:" in text


class _Buggy:
    """The reference backend, except that one op's u32 results are wrong for some inputs and one
    corpus program's output is wrong at one index."""

    name = "buggy"
    capabilities = frozenset()

    def __init__(self) -> None:
        self.inner = ReferenceBackend()

    def dispatch(self, program, inputs, config=None):
        outs = self.inner.dispatch(program, inputs, config)
        if program.name == "primitive_math_add_u32":
            a = np.asarray(inputs[0])
            outs[0] = np.where((a & 0xF0) == 0x70, outs[0] ^ np.uint32(1), outs[0])
        if program.name in ("scan_single", "scan_single32") and outs[-1].size > 40:  # integer scan.sum differs from 41 elements on
            outs[-1] = outs[-1].copy()
            outs[-1][-1] += outs[-1].dtype.type(1)
        if program.name == "vadd_u32" and outs[0].size > 5:
            outs[0] = outs[0].copy()
            outs[0][5] ^= 1
        return outs


@pytest.fixture
def buggy_backend(monkeypatch):
    """register(cls): a stand-in backend class (_Buggy by default) registered as "buggy", the name
    its capsules carry (contained, so conformance runs it in-process), for the test's duration."""
    import vyre_decl.backends as backends

    def register(cls=_Buggy):
        monkeypatch.setitem(backends._infos, "buggy", backends.BackendInfo("buggy", cls, contained=True, source="test"))
        for key in [k for k in backends._instances if k[0] == "buggy"]:
            del backends._instances[key]

    register()
    yield register
    register()  # no instance of a test's class outlives it


def _replay(capsys, capsule, *backend):
    status = main(["replay", str(capsule), *backend])
    return status, capsys.readouterr().out


def test_a_backend_bug_is_reported_with_a_minimised_counterexample(tmp_path, buggy_backend, capsys):
    reg = default_registry()
    conf = Conformance(InProcessRunner(_Buggy()), reg, capsule_dir=tmp_path)
    units = {u.key: u for u in select_units(reg, load_corpus(), ops=["primitive.math.add"])}
    r = conf.run(units["op:primitive.math.add[u32]"])
    assert r.verdict == "fail" and r.failed > 0
    f = r.failures[0]
    assert f.kind == "backend"
    assert f.details["inputs"]["a"]["dec"] == "112" and f.details["inputs"]["b"]["dec"] == "0"  # 0x70, shrunk
    assert f.details["expected"]["dec"] == "112" and f.details["actual"]["dec"] == "113"
    assert (tmp_path / f.capsule).is_file()
    # every failure kind gets a replay capsule, the backend's known-answer failures included
    assert all(g.capsule and (tmp_path / g.capsule).is_file() for g in r.failures if g.kind.startswith("backend"))
    law = [g for g in r.failures if g.kind == "backend-law"]
    assert law and all("-law-" in g.capsule for g in law)  # the add bug breaks commutativity on the backend
    capsule = json.loads((tmp_path / law[0].capsule).read_text())
    a = np.frombuffer(bytes.fromhex(capsule["inputs"][0]["hex"]), np.uint32)
    assert a.size and ((a & 0xF0) == 0x70).all()  # only the evaluations the bug touches
    status, out = _replay(capsys, tmp_path / law[0].capsule)  # on the capsule's backend: the bug is still there
    assert status == 1 and "on buggy" in out and "FAIL: still differs" in out and "self-consistency" not in out
    status, out = _replay(capsys, tmp_path / law[0].capsule, "--backend", "reference")
    assert status == 0 and "reference self-consistency" in out and "now matches" not in out
    r = conf.run(units["program:01_vadd_u32@1000"])
    f = r.failures[0]
    assert f.kind == "backend" and f.details["buffer"] == "out" and f.details["index"] == 5
    assert f.details["shrunk_to"][0] < 1000 and (tmp_path / f.capsule).is_file()
    status, out = _replay(capsys, tmp_path / f.capsule)
    assert status == 1 and "out: 1 of" in out and "elements differ" in out and "[5] reference" in out


def test_a_routine_bug_is_reported_at_the_smallest_size_that_still_fails():
    reg = default_registry()
    conf = Conformance(InProcessRunner(_Buggy()), reg)
    units = {u.key: u for u in select_units(reg, [], ops=["none"], routines=["scan.sum"])}
    assert conf.run(units["routine:scan.sum[u32]@31"]).verdict == "pass"
    r = conf.run(units["routine:scan.sum[u32]@4097"])
    assert r.verdict == "fail" and r.failed == 1
    f = r.failures[0]
    assert f.kind == "backend" and f.details["buffer"] == "out" and f.details["index"] == 4096
    assert f.details["shrunk_to"] == 64  # the halvings of 4097 tried: ..., 128, 64, 32 (passes), ...
    assert "smallest N that still differs is 64" in f.message


def test_routine_shards_merge_into_the_unsharded_certificate(tmp_path):
    base = ["--routines", "reduce.s*", "--routines", "bytes.*", "--quiet"]
    assert run_cli(*base, "--out", str(tmp_path / "all.json")) == 0
    for i in range(2):
        assert run_cli(*base, "--shard", f"{i}/2", "--out", str(tmp_path / f"s{i}.json")) == 0
    assert run_cli("merge", str(tmp_path / "merged.json"), str(tmp_path / "s0.json"), str(tmp_path / "s1.json")) == 0
    whole = json.loads((tmp_path / "all.json").read_text())
    assert content(json.loads((tmp_path / "merged.json").read_text())) == content(whole)
    assert not whole["ops"] and not whole["programs"] and "bytes.crc32[]" in whole["routines"]


def test_shards_merge_into_the_unsharded_certificate(tmp_path):
    base = ["--ops", "primitive.math.*", "--ops", "primitive.logical.*", "--programs", str(Path(load_corpus()[0].path).parent),
            "--cases", "50", "--quiet"]
    assert run_cli(*base, "--out", str(tmp_path / "all.json")) == 0
    for i in range(3):
        assert run_cli(*base, "--shard", f"{i}/3", "--out", str(tmp_path / f"s{i}.json")) == 0
    assert run_cli("merge", str(tmp_path / "merged.json"), *(str(tmp_path / f"s{i}.json") for i in range(3))) == 0
    whole = json.loads((tmp_path / "all.json").read_text())
    merged = json.loads((tmp_path / "merged.json").read_text())
    assert content(merged) == content(whole)
    assert run_cli("merge", str(tmp_path / "m2.json"), str(tmp_path / "s0.json"), str(tmp_path / "s0.json")) == 2


def test_merge_refuses_shards_of_different_runs(tmp_path):
    for seed in ("1", "2"):
        assert run_cli("--ops", "primitive.logical.not", "--cases", "10", "--seed", seed, "--quiet",
                       "--out", str(tmp_path / f"{seed}.json")) == 0
    assert run_cli("merge", str(tmp_path / "m.json"), str(tmp_path / "1.json"), str(tmp_path / "2.json")) == 2


PLUGIN = """
    import os
    from vyre_decl.backends import BackendInfo
    from vyre_decl.backends.reference import ReferenceBackend

    class Crashy(ReferenceBackend):
        name = "crashy"

        def dispatch(self, program, inputs, config=None):
            if program.name == "crash":
                os._exit(3)
            return super().dispatch(program, inputs, config)

    INFO = BackendInfo("crashy", Crashy, precedence=-10, source="test plugin")
"""


def test_a_worker_that_dies_is_replaced_and_the_run_goes_on(tmp_path, monkeypatch):
    dist = tmp_path / "crashy-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: crashy\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[vyre_decl.backends]\ncrashy = crashy_backend:INFO\n")
    (tmp_path / "crashy_backend.py").write_text(textwrap.dedent(PLUGIN))
    root = str(Path(__file__).resolve().parent.parent)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), root]))
    monkeypatch.syspath_prepend(str(tmp_path))  # spawned workers start from the parent's sys.path
    from vyre_decl.ir import parse_program

    ok = parse_program("program fine workgroup(4, 1, 1) { buffer o: write u32[4] @0\n o[gid.x] = gid.x }")
    crash = parse_program("program crash workgroup(4, 1, 1) { buffer o: write u32[4] @0\n o[gid.x] = 1u32 }")
    runner = IsolatedRunner("crashy", timeout=60)
    try:
        assert runner.run(ok, [], None)[0].tolist() == [0, 1, 2, 3]
        with pytest.raises(CaseError) as info:
            runner.run(crash, [], None)
        assert info.value.fault and "died" in str(info.value)
        assert runner.run(ok, [], None)[0].tolist() == [0, 1, 2, 3] and runner.restarts == 1
    finally:
        runner.close()


def test_usage_errors_exit_2(capsys):
    assert run_cli("--shard", "3/2") == 2
    assert run_cli("--backend", "nope") == 2
    from vyre_decl.backends.cuda import cuda_available

    if not cuda_available():
        assert run_cli("--backend", "cuda") == 2
    assert run_cli("--programs", "/no/such/dir") == 2
    assert "Fix:" in capsys.readouterr().err


def test_merge_needs_every_shard_and_keeps_failures_identical(tmp_path, monkeypatch):
    monkeypatch.setenv("VYRE_DECL_OPS_PATH", str(FIXTURES / "planted_ops"))
    base = ["--dialect", "planted", "--cases", "20", "--quiet"]
    assert run_cli(*base, "--out", str(tmp_path / "all.json")) == 1
    for i in range(3):
        run_cli(*base, "--shard", f"{i}/3", "--out", str(tmp_path / f"s{i}.json"))
    assert run_cli("merge", str(tmp_path / "two.json"), str(tmp_path / "s0.json"), str(tmp_path / "s1.json")) == 2
    assert run_cli("merge", str(tmp_path / "m.json"), *(str(tmp_path / f"s{i}.json") for i in range(3))) == 1
    merged, whole = (json.loads((tmp_path / f).read_text()) for f in ("m.json", "all.json"))
    assert content(merged) == content(whole)  # failures and capsule names included


class _Lossy(_Buggy):
    def dispatch(self, program, inputs, config=None):
        return self.inner.dispatch(program, inputs, config)[:-1]  # drops the last output


def test_missing_outputs_fail_every_unit():
    reg = default_registry()
    conf = Conformance(InProcessRunner(_Lossy()), reg)
    units = {u.key: u for u in select_units(reg, load_corpus(), ops=["primitive.math.add"])}
    assert conf.run(units["op:primitive.math.add[u32]"]).verdict == "fail"
    r = conf.run(units["program:04_divmod_i32@64"])
    assert r.verdict == "fail" and r.failures[0].details["buffer"] == "ur"


def test_unusual_op_shapes_run_or_fail_cleanly(tmp_path, monkeypatch):
    monkeypatch.setenv("VYRE_DECL_OPS_PATH", str(FIXTURES / "edge_ops"))
    out = tmp_path / "cert.json"
    assert run_cli("--dialect", "edge", "--cases", "30", "--quiet", "--out", str(out)) == 1
    cert = json.loads(out.read_text())
    verdicts = {k: e["verdict"] for k, e in cert["ops"].items()}
    assert verdicts == {"edge.orphan[]": "fail", "edge.pick[f32]": "pass", "edge.pick[u32]": "pass",
                        "edge.scale[]": "pass", "edge.seven[]": "pass"}
    assert cert["ops"]["edge.scale[]"]["kats"] == 2
    (orphan,) = cert["ops"]["edge.orphan[]"]["failures"]
    assert orphan["kind"] == "error" and "Fix:" in orphan["message"]


def test_cli_lists_its_commands_checks_out_first_and_replays_an_unloadable_capsule_with_a_fix(tmp_path, capsys):
    import json as _json

    import numpy as _np

    from vyre_decl.conform.capsule import write_capsule
    from vyre_decl.ir import parse_program

    with pytest.raises(SystemExit):
        main(["--help"])
    helptext = capsys.readouterr().out
    assert "replay CAPSULE.json" in helptext and "merge OUT" in helptext
    assert main(["--backend", "reference", "--ops", "primitive.math.add", "--out", str(tmp_path / "no" / "c.json"),
                 "--quiet"]) == 2
    assert "not a writable directory" in capsys.readouterr().err and not (tmp_path / "no").exists()
    prog = parse_program("""program p workgroup(1, 1, 1) {
      buffer a: read u32[] @0
      buffer o: write u32[len(a)] @1
      o[0u32] = primitive.math.min(a[0u32], 1u32)
    }""")
    path = write_capsule(tmp_path, "unit", prog, [_np.ones(1, _np.uint32)], None, "reference", 1, "note")
    data = _json.loads(path.read_text())
    assert "primitive.math.min" in data["program"]
    data["program"] = data["program"].replace("primitive.math.min", "gone.min")  # an op this registry lacks
    path.write_text(_json.dumps(data))
    assert main(["replay", str(path), "--backend", "reference"]) == 2
    err = capsys.readouterr().err
    assert "V005" in err and "Fix:" in err


def test_a_run_clears_the_capsules_an_earlier_run_left_and_nothing_else(tmp_path, capsys):
    from vyre_decl.conform.capsule import clear_capsules, write_capsule
    from vyre_decl.ir import parse_program

    prog = parse_program("""program p workgroup(1, 1, 1) {
      buffer o: write u32[1] @0
      o[0u32] = 1u32
    }""")
    old = write_capsule(tmp_path / "c", "unit", prog, [], None, "reference", 1, "old")
    mine = tmp_path / "c" / "notes.json"
    mine.write_text('{"mine": true}')
    assert main(["--backend", "reference", "--ops", "primitive.math.add", "--out", str(tmp_path / "cert.json"),
                 "--capsules", str(tmp_path / "c")]) == 0
    assert not old.exists() and mine.exists() and "removed 1 capsule" in capsys.readouterr().err
    assert clear_capsules(tmp_path / "absent") == 0


class _KatBuggy(_Buggy):
    """Wrong for a = 1 only: the known answer add(1, 2) = 3 catches it."""

    def dispatch(self, program, inputs, config=None):
        outs = self.inner.dispatch(program, inputs, config)
        if program.name == "primitive_math_add_u32":
            a = np.asarray(inputs[0])
            outs[0] = np.where(a == 1, outs[0] + np.uint32(1), outs[0])
        return outs


def test_a_backend_known_answer_failure_has_a_replay_capsule(tmp_path):
    reg = default_registry()
    conf = Conformance(InProcessRunner(_KatBuggy()), reg, capsule_dir=tmp_path)
    unit = next(u for u in select_units(reg, [], ops=["primitive.math.add"], programs=False)
                if u.key == "op:primitive.math.add[u32]")
    kat_failures = [f for f in conf.run(unit).failures if f.message.startswith("known answer primitive.math.add")]
    assert kat_failures and all(f.capsule and (tmp_path / f.capsule).is_file() for f in kat_failures)


def test_a_known_answer_capsule_replays_against_the_registry_of_the_replay(tmp_path, capsys, buggy_backend):
    import json as _json

    reg = default_registry()
    conf = Conformance(InProcessRunner(_KatBuggy()), reg, capsule_dir=tmp_path)
    unit = next(u for u in select_units(reg, [], ops=["primitive.math.add"], programs=False)
                if u.key == "op:primitive.math.add[u32]")
    capsule = next(f.capsule for f in conf.run(unit).failures if f.message.startswith("known answer"))
    path = tmp_path / capsule
    data = _json.loads(path.read_text())
    assert data["kat"]["op"] == "primitive.math.add" and data["kat"]["inputs"] == [1, 2]
    buggy_backend(_KatBuggy)
    status, out = _replay(capsys, path)  # on the capsule's backend, still wrong for a = 1
    assert status == 1 and "the backend differs from the known answer [3]" in out and "FAIL: still differs" in out
    status, out = _replay(capsys, path, "--backend", "reference")  # the reference meets add(1, 2) = 3
    assert status == 0 and "the reference meets the known answer [3]" in out and "reference self-consistency" in out
    data["expect"][0]["hex"] = "ffffffff"  # a stale answer stored in the capsule is not what is checked
    path.write_text(_json.dumps(data))
    assert _replay(capsys, path, "--backend", "reference")[0] == 0
    data["kat"]["inputs"] = [123456, 7]  # an answer the registry no longer has
    path.write_text(_json.dumps(data))
    status, out = _replay(capsys, path)
    assert status == 1 and "no longer in the registry" in out and "elements differ" in out
    buggy_backend(_Buggy)  # a "buggy" backend right for a = 1: the bug is fixed
    status, out = _replay(capsys, path)
    assert status == 0 and "PASS: the backend now matches the reference" in out


class _AttrBuggy(_Buggy):
    """Wrong only where an op is called with an attribute off its default (sinh_cosh even = 1)."""

    def dispatch(self, program, inputs, config=None):
        outs = self.inner.dispatch(program, inputs, config)
        if program.name.startswith("primitive_float_sinh_cosh") and program.body[0].value.attrs:
            outs[0] = np.where(np.asarray(inputs[0]) > 3.0, outs[0] * 2.0, outs[0])
        return outs


def test_random_cases_run_at_every_attribute_value_the_known_answers_name():
    from vyre_decl.conform.cases import attr_sets

    reg = default_registry()
    assert attr_sets(reg.get("primitive.float.sinh_cosh"), ()) == [(), (("even", 1),)]
    assert attr_sets(reg.get("primitive.float.rem_pio2"), ()) == [(), (("part", 1),), (("part", 2),)]
    assert [dict(a).get("k", 0) for a in attr_sets(reg.get("primitive.float.sin_quarters"), (DataType.F32,))] == \
        [0, 1, 2, 3]  # from the f64 answers: an attribute's type does not depend on the binding
    conf = Conformance(InProcessRunner(_AttrBuggy()), reg, cases=200)
    r = conf.run_op("op:primitive.float.sinh_cosh[]", reg.get("primitive.float.sinh_cosh"), ())
    (f,) = [f for f in r.failures if f.kind == "backend"]
    assert f.details["attrs"] == {"even": 1} and float(f.details["inputs"]["x"]["dec"]) > 3.0
    assert "sinh_cosh<even=1>(" in f.message
    clean = Conformance(InProcessRunner(ReferenceBackend()), reg, cases=200)
    ok = clean.run_op("op:primitive.float.sinh_cosh[]", reg.get("primitive.float.sinh_cosh"), ())
    assert ok.verdict == "pass" and ok.cases == r.cases


def test_a_fuzz_run_of_the_reference_says_it_compared_the_reference_with_itself(tmp_path, capsys, buggy_backend):
    assert main(["--backend", "reference", "--fuzz", "3", "--out", str(tmp_path / "c.json"), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "fuzz on reference (reference self-consistency: the reference against itself, no backend tested)" in out
    assert main(["--backend", "buggy", "--fuzz", "3", "--out", str(tmp_path / "c.json"), "--quiet"]) == 0
    assert "fuzz on buggy: 3 programs" in capsys.readouterr().out


def test_a_known_answer_capsule_is_met_within_the_ops_budget_and_its_sign_of_zero_exactly(tmp_path, capsys):
    """expm1(1.0) = 1.7182818284590453 (true, rounded); the reference gives 1.718281828459045,
    1 ULP away and within expm1's f64 budget: its replay passes. sin(-0.0) must be -0.0."""
    from vyre_decl.conform.capsule import write_capsule
    from vyre_decl.conform.oneop import one_op_program

    reg = default_registry()
    for op_id, t, x in (("primitive.float.expm1", DataType.F64, 1.0), ("primitive.float.sin", DataType.F32, -0.0)):
        op = reg.get(op_id)
        arg = np.array([x], t.numpy_dtype)
        kat = {"op": op_id, "binding": [t.value], "attrs": [], "inputs": [int(arg.view(f"u{arg.itemsize}")[0])]}
        path = write_capsule(tmp_path, op_id, one_op_program(op, (t,)), [arg], None, "reference", 1, "known answer",
                             [arg], kat)
        status, out = _replay(capsys, path)
        assert status == 0 and "the reference meets the known answer" in out, out
        assert op.accuracy(t) >= 1 and f"within {op.accuracy(t)} ULP" in out
    data = json.loads(path.read_text())
    data["program"] = data["program"].replace("primitive.float.sin(", "primitive.math.neg(")  # gives +0.0
    path.write_text(json.dumps(data))
    status, out = _replay(capsys, path)
    assert status == 1 and "the reference differs from the known answer [-0.0]" in out
