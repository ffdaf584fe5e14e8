"""``ops check`` executes templates (issue 26, item 5): every PTX template runs on the simulated
sm_90 and sm_75 devices over its op's witnesses and known-answer inputs and is compared with the
op's reference/compose on the reference backend (R038 a different result, R039 not checkable;
vyre_decl/ops/simcheck.py). No GPU is needed: the PTX interpreter of vyre_decl/sim runs them."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from vyre_decl.ops import main
from vyre_decl.ops.simcheck import SIM_TARGETS, check_templates_on_sim
from vyre_decl.registry import default_registry, load
from vyre_decl.sim import ptx as sim_ptx

ROOT = Path(__file__).resolve().parent.parent
STANDARD = default_registry()
STANDARD_TEMPLATES = sum(len(op.templates) for op in STANDARD)
NEWER = sum(t.min_sm > 75 for op in STANDARD for t in op.templates.values())  # bf16/f16x2 packing, redux.sync

SWAP = '''
[[op]]
id = "newbie.bits.swap_halves"
summary = "the two 16-bit halves of a u32, swapped"
signature = "(x: T) -> T"
types = { T = "u32" }
compose = "(x << 16u32) | (x >> 16u32)"
ptx = "prmt.b32 {out}, {x}, 0, SELECTOR;"
kat.u32 = [[0x12345678, 0x56781234]]
'''


def _op_file(tmp_path: Path, ops: str, dialect: str = "newbie.bits") -> Path:
    path = tmp_path / f"{dialect}.toml"
    path.write_text(f'[dialect]\nname = "{dialect}"\nversion = "0.1.0"\nsummary = "a newcomer\'s ops"\n{ops}')
    return path


def _check(path: Path, *op_ids: str):
    reg = load([path], env=False)
    assert reg.errors == (), reg.diagnostics
    return check_templates_on_sim(reg, [reg.get(i) for i in op_ids])


def test_the_newcomers_byte_reverse_for_a_half_word_swap_is_rejected_without_a_gpu(tmp_path):
    """The issue's case: prmt selector 0x0123 reverses all four bytes; the compose swaps the
    halves. `python -m vyre_decl.ops check thatfile.toml` exits 1 with R038 naming file, op, type,
    inputs and both results; with --no-sim (what ops check did before) it passes."""
    f = _op_file(tmp_path, SWAP.replace("SELECTOR", "0x0123"))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
               CUDA_VISIBLE_DEVICES="")
    env.pop("VYRE_DECL_CUDA_SIM", None)
    proc = subprocess.run([sys.executable, "-m", "vyre_decl.ops", "check", str(f)], capture_output=True, text=True,
                          env=env, timeout=300)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    (diag,) = [ln for ln in proc.stderr.splitlines() if "error R038" in ln]
    assert diag.startswith(f"{f} [op newbie.bits.swap_halves] ptx: error R038: [u32] on the simulated sm_90 and "
                           "sm_75 devices: the PTX template gives newbie.bits.swap_halves(1) = 16777216 (0x01000000), "
                           "but the op's compose on the reference backend gives 65536 (0x00010000)"), diag
    assert re.search(r"\(\d+ of 24 case\(s\) differ\)", diag) and "Fix: fix the template" in diag
    assert proc.stdout.startswith("FAILED:") and "1 error(s)" in proc.stdout
    assert main(["check", "--no-sim", "--no-ptxas", str(f)]) == 0


def test_a_correct_template_passes_and_the_output_counts_the_templates_executed(tmp_path, capsys):
    f = _op_file(tmp_path, SWAP.replace("SELECTOR", "0x1032"))  # bytes 2,3,0,1: the halves swapped
    assert main(["check", "--no-ptxas", str(f)]) == 0
    out = capsys.readouterr().out
    # only the file's ops are checked: the standard library loads beside it (issue 27 item 2)
    assert out.startswith("ok: 1 ops checked") and "; 1 template executed on the simulated sm_90 and sm_75 " \
        "devices;" in out, out
    assert " 0 error(s)" in out
    assert main(["check", "--no-ptxas", "--json", str(f)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["simulated"]["templates"] == 1 and report["checked"] == 1 and report["diagnostics"] == []
    assert report["simulated"]["executed"] == {"sm_90": 1, "sm_75": 1}


def test_a_template_wrong_only_on_a_known_answers_input_is_caught_there(tmp_path):
    """1000 is no u32 witness: only the known answer's input shows the template's special case."""
    op = '''
[[op]]
id = "newbie.bits.inc"
summary = "x + 1"
signature = "(x: T) -> T"
types = { T = "u32" }
compose = "x + 1u32"
temps = { p = "bool" }
ptx = "setp.eq.u32 {p}, {x}, 1000; add.u32 {out}, {x}, 1; @{p} add.u32 {out}, {x}, 2;"
'''
    assert _check(_op_file(tmp_path / "", op), "newbie.bits.inc").diagnostics == []  # no known answer: unseen
    (tmp_path / "kat").mkdir()
    result = _check(_op_file(tmp_path / "kat", op + "kat.u32 = [[1000, 1001]]\n"), "newbie.bits.inc")
    (diag,) = result.diagnostics
    assert diag.code == "R038" and diag.severity == "error" and "[op newbie.bits.inc]" in diag.location
    assert ("newbie.bits.inc(1000 (0x000003e8)) = 1002 (0x000003ea), but the op's compose on the reference backend "
            "gives 1001 (0x000003e9) (1 of 24 case(s) differ)") in diag.message


def test_the_attribute_values_of_known_answers_are_executed(tmp_path):
    """The template ignores k: right at the default k = 0, wrong at the known answer's k = 1."""
    op = '''
[[op]]
id = "newbie.bits.addk"
summary = "x + k"
signature = "(x: T; k: u32 = 0) -> T"
types = { T = "u32" }
compose = "x + k"
ptx = "add.u32 {out}, {x}, TERM;"
kat = [{ attrs = { k = 1 }, cases = [[5, 6]] }]
'''
    (tmp_path / "good").mkdir()
    assert _check(_op_file(tmp_path / "good", op.replace("TERM", "{k}")), "newbie.bits.addk").diagnostics == []
    (diag,) = _check(_op_file(tmp_path, op.replace("TERM", "0")), "newbie.bits.addk").diagnostics
    assert diag.code == "R038" and "newbie.bits.addk(0; k = 1) = 0, but the op's compose" in diag.message


def test_floats_are_compared_within_the_ops_ulp_budget(tmp_path):
    """add.rz is at most one ULP from the correctly rounded sum: right with ulp = 1, R038 without."""
    op = '''
[[op]]
id = "newbie.bits.inc_f"
summary = "x + 1"
signature = "(x: T) -> T"
types = { T = "f32" }
compose = "x + 1.0f32"
ptx = "add.rz.{T} {out}, {x}, {T.one};"
'''
    (tmp_path / "budget").mkdir()
    assert _check(_op_file(tmp_path / "budget", op + "ulp = { f32 = 1 }\n"), "newbie.bits.inc_f").diagnostics == []
    (diag,) = _check(_op_file(tmp_path, op), "newbie.bits.inc_f").diagnostics
    assert diag.code == "R038" and "[f32]" in diag.message and "newbie.bits.inc_f(" in diag.message


def test_an_approx_instruction_is_a_note_or_a_warning_when_the_op_claims_zero_ulp(tmp_path):
    op = '''
[[op]]
id = "newbie.bits.rcp"
summary = "1 / x"
signature = "(x: T) -> T"
types = { T = "f32" }
compose = "1.0f32 / x"
ptx = "rcp.approx.f32 {out}, {x};"
'''
    (tmp_path / "budget").mkdir()
    (note,) = _check(_op_file(tmp_path / "budget", op + "ulp = { f32 = 2 }\n"), "newbie.bits.rcp").diagnostics
    assert (note.code, note.severity) == ("R039", "note")
    assert "on the simulated sm_90 and sm_75 devices: rcp.approx" in note.message and "unchecked" in note.message
    (warning,) = _check(_op_file(tmp_path, op), "newbie.bits.rcp").diagnostics
    assert (warning.code, warning.severity) == ("R039", "warning") and "correctly rounded" in warning.message


def test_a_template_the_interpreter_rejects_is_r039_and_the_others_still_run(tmp_path):
    op = '''
[[op]]
id = "newbie.bits.add"
summary = "a + b"
signature = "(a: T, b: T) -> T"
types = { T = "u32,i32" }
reference = "add"
ptx = { u32 = "add.u32 {out}, {a}, {b};", i32 = "add.s33 {out}, {a}, {b};" }
'''
    result = _check(_op_file(tmp_path, op), "newbie.bits.add", "primitive.math.add")
    (diag,) = result.diagnostics
    assert diag.code == "R039" and diag.message.startswith("[i32] on the simulated sm_90 and sm_75 devices: the PTX "
                                                           "interpreter rejects the one-op kernel: add.s33")
    assert "--no-sim" in diag.fix
    assert result.templates == 1 + len(STANDARD.get("primitive.math.add").templates)


def test_a_fault_or_a_simulator_failure_is_r039_not_a_traceback(tmp_path, monkeypatch):
    f = _op_file(tmp_path, SWAP.replace("SELECTOR", "0x1032"))

    def fault(*args, **kwargs):
        raise sim_ptx.KernelFault("illegal_address", "k", 7, "address 0x10")

    monkeypatch.setattr(sim_ptx.Kernel, "run", fault)
    (diag,) = _check(f, "newbie.bits.swap_halves").diagnostics
    assert diag.code == "R039" and "faults" in diag.message and "sm_90 and sm_75" in diag.message
    monkeypatch.setattr(sim_ptx.Kernel, "run", lambda *a, **k: 1 / 0)
    (diag,) = _check(f, "newbie.bits.swap_halves").diagnostics
    assert diag.code == "R039" and "a simulator bug" in diag.message and "ZeroDivisionError" in diag.message


def test_every_template_of_the_standard_library_passes_on_both_devices():
    result = check_templates_on_sim(STANDARD, STANDARD)
    assert result.diagnostics == []
    assert result.targets == SIM_TARGETS == ("sm_90", "sm_75")
    assert result.templates == STANDARD_TEMPLATES and len(result.executed["sm_90"]) == STANDARD_TEMPLATES
    newer = {op for op, _ in result.too_new["sm_75"]}
    assert newer == {"primitive.convert.pack_bf16x2", "primitive.convert.pack_f16x2"} | {
        f"subgroup.reduce_{op}" for op in ("add", "min", "max", "and", "or", "xor")}  # redux.sync
    assert NEWER == 2 + 12 and len(result.executed["sm_75"]) == STANDARD_TEMPLATES - NEWER
    assert result.summary() == (f"{STANDARD_TEMPLATES} templates executed on the simulated sm_90 and sm_75 devices "
                                f"({NEWER} of them not on sm_75: they need sm_80)")


def test_the_codes_are_documented():
    from vyre_decl.ops import check

    doc = (ROOT / "docs" / "ops-format.md").read_text()
    for code in ("R038", "R039"):
        assert f"| {code} |" in doc and code in (check.__doc__ or "")


@pytest.mark.parametrize("selector", ["0x0123", "0x1032"])
def test_the_library_check_agrees_with_the_cli(tmp_path, selector):
    result = _check(_op_file(tmp_path, SWAP.replace("SELECTOR", selector)), "newbie.bits.swap_halves")
    assert [d.code for d in result.diagnostics] == (["R038"] if selector == "0x0123" else [])
    assert result.templates == 1
