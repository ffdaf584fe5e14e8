"""Property tests (hypothesis): mutated programs, op files and dispatch arguments give a result or
a ``VyreError`` with a code and a Fix — never another exception, never a silent reinterpretation
(issue 13, item 1). Everything runs on the reference backend, bounded by a timeout."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import vyre_decl
from vyre_decl.backends.config import DispatchConfig
from vyre_decl.ir import VyreError, parse_program, print_program
from vyre_decl.ir.validation import validate
from vyre_decl.registry import default_registry, load

ROOT = Path(__file__).resolve().parent.parent
CORPUS = sorted((ROOT / "corpus").glob("*.vyre"))
TEXTS = [p.read_text() for p in CORPUS]
REG = default_registry()
SETTINGS = settings(max_examples=int(__import__("os").environ.get("VYRE_DECL_HYPOTHESIS_EXAMPLES", "150")), deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
# pieces a careless or hostile author types: tokens of the language, numbers at and past every
# limit, other scripts' digits, control characters, unbalanced brackets
PIECES = ["{", "}", "(", ")", "[", "]", ",", ";", "=", "+", "-", "*", "/", "<", "as", "if", "else", "loop", "let",
          "return", "barrier", "gid.x", "lid.x", "len(o)", "u32", "f32", "bf16", "1u32", "0xFFFFFFFFu32",
          "4294967296u32", "1e999f32", "nan_f32", "-0.0f32", "9" * 40, "١٢", "\x00", "\x7f", "é", "\"", "\\",
          "region \"a\\qb\" { }", "@" + "9" * 30, "primitive.math.add", "primitive.float.rem_pio2<part=x>", "\n"]


def _exercise(program) -> None:
    """What a user does with a parsed program: validate, print and parse back, emit, run briefly."""
    from vyre_decl.emit import emit

    diags = validate(program, REG)
    text = print_program(program)
    assert parse_program(text) == program  # the round trip holds for whatever parses
    if diags:
        return
    assert ".visible .entry" in emit(program, REG, "sm_90").text  # a valid program always lowers
    inputs = [np.arange(d.count or 5).astype(d.dtype.storage_dtype) for d in program.inputs]
    grid = None if program.workgroup_size[1:] == (1, 1) else (1, 1, 1)
    vyre_decl.acquire("reference").dispatch(program, inputs, DispatchConfig(grid=grid, timeout=0.5))


@SETTINGS
@given(st.sampled_from(range(len(TEXTS))), st.lists(st.tuples(st.floats(0, 1), st.sampled_from(["cut", "insert", "dup"]),
                                                    st.sampled_from(PIECES)), min_size=1, max_size=4))
def test_mutated_programs_parse_validate_print_and_run_or_raise_a_coded_error(which, edits):
    text = TEXTS[which]
    for where, kind, piece in edits:
        i = int(where * len(text))
        if kind == "cut":
            text = text[:i] + text[i + len(piece):]
        elif kind == "insert":
            text = text[:i] + piece + text[i:]
        else:
            text = text[:i] + text[i:i + 20] + text[i:]
    try:
        _exercise(parse_program(text))
    except VyreError as exc:
        assert exc.codes and all(d.fix for d in exc.diagnostics), str(exc)


OP_FILE = '''[dialect]
name = "fz"
version = "1.0.0"

[[op]]
id = "fz.twice"
summary = "x + x"
signature = "(x: T) -> T"
types = { T = "u32,f32" }
compose = "x + x"
laws = ["commutative"]
kat.u32 = [[2, 4]]
'''


@SETTINGS
@given(st.lists(st.tuples(st.floats(0, 1), st.booleans(), st.sampled_from(PIECES + ["[[op]]", "ptx = ", "\"T\"",
                                                                                   "kat = [[", "id = \"fz.", "]]"])),
                min_size=1, max_size=4))
def test_mutated_op_files_load_into_diagnostics_never_exceptions(tmp_path_factory, edits):
    text = OP_FILE
    for where, insert, piece in edits:
        i = int(where * len(text))
        text = text[:i] + piece + text[i:] if insert else text[:i] + text[i + len(piece):]
    folder = tmp_path_factory.mktemp("ops")
    (folder / "fz.toml").write_text(text, encoding="utf-8", errors="surrogateescape")
    registry = load([folder], standard=False, env=False, snapshot=False)  # problems are diagnostics, not raises
    assert all(d.code and d.fix for d in registry.diagnostics)
    if "fz.twice" in registry:
        registry.get("fz.twice")


VALUES = st.one_of(
    st.none(), st.integers(), st.floats(allow_nan=True), st.text(max_size=4), st.binary(max_size=12),
    st.lists(st.one_of(st.integers(-2**70, 2**70), st.floats(), st.booleans(), st.text(max_size=2)), max_size=5),
    st.lists(st.lists(st.integers(0, 9), max_size=3), max_size=3),
    st.builds(lambda n, t: np.arange(n).astype(t), st.integers(0, 6),
              st.sampled_from([np.uint32, np.int32, np.float32, np.float64, np.uint8, np.bool_, np.int64])),
    st.builds(lambda n: memoryview(np.arange(n, dtype=np.float64)), st.integers(0, 4)),
    st.builds(lambda n: memoryview(np.arange(2 * n, dtype=np.uint32))[::2], st.integers(0, 4)),
    st.dictionaries(st.sampled_from(["a", "b", "c", "zz"]), st.integers(0, 3), max_size=3),
)
CONFIGS = st.one_of(st.none(), st.builds(dict), st.builds(
    DispatchConfig, grid=st.one_of(st.none(), st.tuples(st.integers(-2, 3), st.integers(0, 2), st.integers(0, 2))),
    repeat=st.integers(-1, 3), timeout=st.one_of(st.none(), st.floats(-1, 2)), label=st.one_of(st.just(""), st.integers())))
VADD = parse_program("""program vadd workgroup(64, 1, 1) {
  buffer a: read u32[] @0
  buffer b: read u32[] @1
  buffer out: write u32[len(a)] @2
  let i = gid.x
  if i < len(out) { out[i] = a[i] + b[i] }
}""")


@SETTINGS
@given(st.one_of(VALUES, st.lists(VALUES, max_size=3), st.tuples(VALUES, VALUES),
                 st.dictionaries(st.sampled_from(["a", "b", "out", "x"]), VALUES, max_size=3)), CONFIGS)
def test_hostile_dispatch_arguments_give_outputs_or_a_coded_error(inputs, config):
    try:
        out = vyre_decl.acquire("reference").dispatch(VADD, inputs, config)
    except VyreError as exc:
        assert exc.codes and all(d.fix for d in exc.diagnostics), str(exc)
        return
    a, b = (inputs[k] for k in ("a", "b")) if isinstance(inputs, dict) else inputs
    want = np.asarray(a, dtype=np.uint64) if not isinstance(a, (bytes, memoryview)) else None
    assert out[0].dtype == np.uint32 and (want is None or out[0].size == want.size)


@pytest.mark.parametrize("text", TEXTS[:3])
def test_the_unmutated_corpus_passes_through_the_same_checks(text):
    _exercise(parse_program(text))
