"""The PTX emitter, checked by NVIDIA's real assembler for sm_80 and sm_90: every op x type in a
one-op kernel, every corpus program, error reports that point at the source."""

from __future__ import annotations

import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from vyre_decl.conform.corpus import load_corpus
from vyre_decl.emit import EMITTER_CONTRACT, assemble, choose_target, emit, find_ptxas
from vyre_decl.ir import VyreError, parse_program
from vyre_decl.registry import default_registry, load

from vyre_decl.conform.oneop import one_op_program

ROOT = Path(__file__).resolve().parent.parent
TARGETS = ("sm_75", "sm_80", "sm_90")
REG = default_registry()
CORPUS = load_corpus()


@pytest.fixture(scope="session")
def ptxas() -> str:
    exe = find_ptxas()
    if exe is None:  # CI must not silently skip the assembler checks
        pytest.fail("ptxas not found. Fix: pip install -e '.[test]' (nvidia-cuda-nvcc ships ptxas), put ptxas on "
                    "PATH, or set VYRE_DECL_PTXAS")
    return exe


def module_of(programs, target: str) -> str:
    """Several one-op kernels as one PTX module (one ptxas run)."""
    texts = [emit(p, REG, target).text for p in programs]
    head = texts[0].split(".visible .entry")[0]
    return head + "".join(".visible .entry" + t.split(".visible .entry", 1)[1] for t in texts)


@pytest.mark.parametrize("target", TARGETS)
def test_every_op_and_type_assembles(ptxas, target):
    from vyre_decl.ops.check import required_attrs

    def program(op, b):  # attributes without a default: a known answer's values, or zeros
        attrs = required_attrs(op, b) or tuple((a.name, 0) for a in op.signature.attrs if a.default is None)
        return one_op_program(op, b, attrs)

    jobs = {op.id: [program(op, b) for b in op.bindings()] for op in REG}
    with ThreadPoolExecutor(4) as pool:
        results = dict(zip(jobs, pool.map(lambda ps: assemble(module_of(ps, target), target, ptxas, check=False),
                                          jobs.values())))
    failed = {k: r.log for k, r in results.items() if not r.ok}
    assert not failed, failed
    assert sum(len(v) for v in jobs.values()) >= 200  # 44 ops, 236 type bindings today


def test_corpus_is_large_enough_and_valid():
    assert len(CORPUS) >= 30
    from vyre_decl.ir import validate

    for c in CORPUS:
        assert validate(c.program, REG) == [], c.name


@pytest.mark.parametrize("target", TARGETS)
def test_every_corpus_program_assembles(ptxas, target):
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda c: (c.name, assemble(emit(c.program, REG, target).text, target, ptxas,
                                                            check=False)), CORPUS))
    failed = {name: r.log for name, r in results if not r.ok}
    assert not failed, failed


MAP = parse_program("""program vadd workgroup(64, 1, 1) {
  buffer a: read u32[] @0
  buffer b: read u32[] @1
  buffer out: write u32[len(a)] @2
  let i = gid.x
  if i < len(out) {
    out[i] = a[i] + b[i]
  }
}""")


def test_map_kernel_is_straight_line_after_the_bounds_check():
    text = emit(MAP, REG).text
    body = text.split("{", 1)[1].split("\n}\n", 1)[0]  # the scalar entry
    guard = re.search(r"@!%p\d+ bra (\$L\w+);", body)
    assert guard, body
    after = body[guard.end(): body.index(guard.group(1) + ":")]
    assert "bra" not in after and "$L" not in after  # no branches, no loop labels
    assert after.count("ld.global") == 2 and after.count("st.global") == 1
    assert len(re.findall(r"\bld\.", after)) == 2  # no extra loads (parameters are loaded once, up front)
    assert body.count("ld.param") == 6  # three pointers, three lengths


def test_map_shaped_programs_get_a_vectorised_entry_and_others_do_not():
    from vyre_decl.emit.vector import map_shape

    m = emit(MAP, REG)
    assert m.vector_entry == "vyre_vadd_v4" and f".visible .entry {m.vector_entry}(" in m.text
    vector = m.text.split(f".entry {m.vector_entry}(", 1)[1]
    fast = vector.split("bra $L_exit;", 1)[0]
    assert fast.count("ld.global.nc.v4.u32") == 2 and fast.count("st.global.v4.u32") == 1  # a, b in; out
    assert "and.b64" in fast and ", 15;" in fast  # 16-byte alignment is checked, with the lengths
    assert "_scalar:" in vector and vector.count("ld.global.nc.u32") + vector.count("ld.global.u32") >= 8
    shape = map_shape(MAP)
    assert shape is not None and shape.loaded == ("a", "b") and shape.stored == ("out",) and "i" in shape.index_names
    not_maps = {
        "neighbour store": "out[i + 1u32] = a[i]",
        "reads what it writes elsewhere": "out[i] = out[i + 1u32]",
        "local id": "out[i] = a[lid.x]",
        "64-bit elements": None,
    }
    for what, stmt in not_maps.items():
        src = f"""program p workgroup(64, 1, 1) {{
          buffer a: read u32[] @0
          buffer out: read_write u32[len(a)] @1
          let i = gid.x
          {stmt}
        }}""" if stmt else """program p workgroup(64, 1, 1) {
          buffer a: read u64[] @0
          buffer out: write u64[len(a)] @1
          let i = gid.x
          out[i] = a[i]
        }"""
        assert map_shape(parse_program(src)) is None, what
        assert emit(parse_program(src), REG).vector_entry is None, what


def test_abi_and_header():
    m = emit(MAP, REG, "sm_80")
    assert [(p.name, p.kind) for p in m.abi.params] == [
        ("p_a", "ptr"), ("p_b", "ptr"), ("p_out", "ptr"), ("n_a", "len"), ("n_b", "len"), ("n_out", "len")]
    assert m.entry == "vyre_vadd" and EMITTER_CONTRACT in m.text
    assert ".version 7.0" in m.text and ".target sm_80" in m.text and ".address_size 64" in m.text
    assert emit(MAP, REG).text == emit(MAP, REG).text  # deterministic


def test_out_of_bounds_accesses_are_predicated_never_clamped():
    text = emit(parse_program(CORPUS_BY["27_oob_stores"]), REG).text
    stores = re.findall(r"^\t(.*st\.global.*)$", text, re.M)
    assert stores and all(s.startswith("@%p") for s in stores)
    loads = re.findall(r"^\t(.*ld\.global.*)$", emit(parse_program(CORPUS_BY["26_oob_loads"]), REG).text, re.M)
    assert loads and all(s.startswith("@%p") for s in loads)
    assert "min.u32" not in text  # no index clamping


CORPUS_BY = {c.name: c.path.read_text() for c in CORPUS}


def test_comments_trace_statements_and_ops():
    text = emit(parse_program(CORPUS_BY["34_logical_ops"]), REG).text
    assert "// body[1].then[3]: let r = 0u32" in text
    assert "// op primitive.math.mod rewritten: x & 1u32" in text  # an op comment; a % 2 is a mask (rewrite laws)
    assert "// op primitive.bitwise.and<u32>" in text
    assert "// inline primitive.logical.not: a == false" in text  # a composite with no template is inlined


def test_attribute_immediates_and_inlined_compositions(ptxas, tmp_path):
    (tmp_path / "t.toml").write_text("""
[dialect]
name = "t"
version = "1.0.0"
[[op]]
id = "t.scale"
summary = "a * s + k"
signature = "(a: f32; s: f32 = 3.0, k: f64 = -0.5, n: i32 = -7) -> f32"
compose = "a * s"
temps = { d = "f64", w = "f32" }
ptx = '''
mul.rn.f32 {out}, {a}, {s};
cvt.f64.f32 {d}, {out};
add.rn.f64 {d}, {d}, {k};
cvt.rn.f32.f64 {out}, {d};
cvt.rn.f32.s32 {w}, {n};
add.rn.f32 {out}, {out}, {w};'''
""")
    reg = load([tmp_path], env=False)
    assert reg.errors == ()
    p = parse_program("""program m workgroup(32, 1, 1) {
      buffer a: read f32[] @0
      buffer o: write f32[len(a)] @1
      o[gid.x] = t.scale<s=0.25f32>(a[gid.x]) + t.scale(a[gid.x])
    }""")
    text = emit(p, reg, "sm_90").text
    assert "0f3E800000" in text and "0f40400000" in text and "0dBFE0000000000000" in text and ", -7;" in text
    assemble(text, "sm_90", ptxas)


def test_assembler_errors_point_at_the_template_and_statement(ptxas, tmp_path):
    (tmp_path / "bad.toml").write_text("""
[dialect]
name = "bad"
version = "1.0.0"
[[op]]
id = "bad.add"
summary = "a template with a typo"
signature = "(a: u32, b: u32) -> u32"
reference = "add"
ptx = "add.u33 {out}, {a}, {b};"
""")
    reg = load([tmp_path], env=False)
    p = parse_program("""program m workgroup(32, 1, 1) {
      buffer a: read u32[] @0
      buffer o: write u32[len(a)] @1
      let x = a[gid.x]
      o[gid.x] = bad.add(x, 1u32)
    }""")
    with pytest.raises(VyreError) as info:
        assemble(emit(p, reg, "sm_90").text, "sm_90", ptxas)
    msg = str(info.value)
    assert "E010" in msg and ">>" in msg and "add.u33" in msg
    assert "from op bad.add<>" in msg and "in body[1]: o[gid.x] = bad.add(x, 1u32)" in msg


@pytest.mark.parametrize(
    "driver, cc, want",
    [
        (13000, (9, 0), ("sm_90", "7.8")),
        (12040, (8, 6), ("sm_86", "7.1")),
        (11080, (8, 9), ("sm_89", "7.8")),
        (12080, (12, 0), ("sm_120", "8.7")),
        (13000, (12, 1), ("sm_120", "8.7")),
        (13000, (10, 3), ("sm_101", "8.6")),
        (None, (8, 0), ("sm_80", "7.0")),
        (None, "sm_90a", ("sm_90", "7.8")),
        (13000, (7, 5), ("sm_75", "7.0")),
    ],
)
def test_target_choice(driver, cc, want):
    t = choose_target(driver, cc)
    assert (t.name, t.version) == want


@pytest.mark.parametrize("driver, cc, code", [(11070, (9, 0), "E004"), (12000, (12, 0), "E004"), (13000, (7, 0), "E002"),
                                              (10020, (8, 0), "E001"), (None, "sm_x", "E003")])
def test_target_choice_refuses_what_cannot_work(driver, cc, code):
    with pytest.raises(VyreError) as info:
        choose_target(driver, cc)
    assert info.value.codes == [code] and "Fix:" in str(info.value)


def test_cli(ptxas, tmp_path):
    out = tmp_path / "k.ptx"
    env_path = {"PYTHONPATH": str(ROOT)}
    import os

    env = dict(os.environ, **env_path)
    proc = subprocess.run([sys.executable, "-m", "vyre_decl.emit", str(ROOT / "corpus" / "18_transpose_2d.vyre"),
                           "--target", "sm_80", "-o", str(out), "--check"], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    assert ".target sm_80" in out.read_text() and "assembled by ptxas" in proc.stderr
    bad = tmp_path / "bad.vyre"
    bad.write_text("program m workgroup(1, 1, 1) { let x = y }")
    proc = subprocess.run([sys.executable, "-m", "vyre_decl.emit", str(bad)], capture_output=True, text=True, env=env)
    assert proc.returncode == 1 and "V018" in proc.stderr


def test_target_candidates_fall_back_to_older_targets_the_driver_loads():
    from vyre_decl.emit.target import pick_target, probe_module, target_candidates

    assert [t.name for t in target_candidates(13000, (9, 0))] == ["sm_90", "sm_89", "sm_87", "sm_86", "sm_80", "sm_75"]
    # a driver too old for sm_89's PTX ISA 7.8: the best it loads is sm_87's 7.4
    assert [str(t) for t in target_candidates(11070, (8, 9))][:2] == ["PTX 7.4 sm_87", "PTX 7.1 sm_86"]
    tried = []
    got = pick_target(13000, (9, 0), lambda t: tried.append(t.name) or t.sm <= 86)
    assert got.name == "sm_86" and tried == ["sm_90", "sm_89", "sm_87", "sm_86"]
    with pytest.raises(VyreError) as info:
        pick_target(13000, (9, 0), lambda t: False)
    assert info.value.codes == ["E004"] and "Fix:" in str(info.value)
    assert ".target sm_75" in probe_module(target_candidates(None, (7, 5))[0])


def test_below_sm_80_templates_that_need_it_give_way_to_compose(ptxas, tmp_path):
    p = parse_program("""program m workgroup(32, 1, 1) {
      buffer a: read f32[] @0
      buffer o: write u32[len(a)] @1
      buffer h: write bf16[len(a)] @2
      let x = a[gid.x]
      o[gid.x] = primitive.convert.pack_bf16x2(x, x) ^ primitive.convert.pack_f16x2(x, x)
      h[gid.x] = x
    }""")
    new, old = emit(p, REG, "sm_80").text, emit(p, REG, "sm_75").text
    assert "cvt.rn.bf16x2.f32" in new and "cvt.rn.f16x2.f32" in new and "cvt.rn.bf16.f32" in new
    instructions = [ln for ln in old.splitlines() if not ln.strip().startswith("//")]
    assert not [ln for ln in instructions if "bf16" in ln or "f16x2" in ln]  # none sm_75 lacks
    assert "inline primitive.convert.pack_bf16x2" in old and "inline primitive.convert.pack_f16x2" in old
    assemble(old, "sm_75", ptxas)
    (tmp_path / "t.toml").write_text("""
[dialect]
name = "t"
version = "1.0.0"
[[op]]
id = "t.pack"
summary = "a template-only op that needs sm_80"
signature = "(a: u32, b: u32) -> u32"
reference = "add"
temps = { t = "b32" }
ptx = "cvt.rn.bf16x2.f32 {t}, {a}, {b}; add.u32 {out}, {a}, {b};"
""")
    reg = load([tmp_path], env=False)
    assert reg.errors == ()
    q = parse_program("""program q workgroup(32, 1, 1) {
      buffer a: read u32[] @0
      buffer o: write u32[len(a)] @1
      o[gid.x] = t.pack(a[gid.x], 1u32)
    }""")
    assert "cvt.rn.bf16x2.f32" in emit(q, reg, "sm_80").text
    with pytest.raises(VyreError) as info:
        emit(q, reg, "sm_75")
    assert info.value.codes == ["E005"] and "sm_80" in str(info.value) and "Fix:" in str(info.value)


def test_deeply_nested_loops_emit_in_one_pass():
    """64 nested loops emit at once (the issue found emission stalling on nested loops, as validation did)."""
    nested = parse_program("program n workgroup(1, 1, 1) {\n buffer o: write u32[4] @0\n"
                           + "".join(f"loop v{j} in 0u32 .. 2u32 {{\n" for j in range(64)) + "o[0u32] = 1u32\n"
                           + "}\n" * 64 + "}")
    text = emit(nested).text
    assert len(re.findall(r"^\s*bra(\.uni)? ", text, re.M)) >= 64  # one back edge per loop at least
