"""The op registry: the standard ops, malformed files rejected whole, cross-file rules, env path."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from vyre_decl.ir import DataType
from vyre_decl.registry import ENV_VAR, MAX_FILE_BYTES, load, standard_ops_dir

FIXTURES = Path(__file__).parent / "fixtures"
BAD = sorted((FIXTURES / "bad_ops").glob("*.toml"))

REQUIRED = {
    "primitive.math": ["add", "sub", "mul", "div", "mod", "min", "max", "neg", "abs"],
    "primitive.bitwise": ["and", "or", "xor", "not", "shl", "shr", "rotl", "rotr", "popcount", "clz", "ctz", "reverse_bits"],
    "primitive.compare": ["eq", "ne", "lt", "le", "gt", "ge"],
    "primitive.logical": ["and", "or", "not"],
    "primitive.convert": ["cast"],
    "primitive.atomic": ["add", "min", "max", "and", "or", "xor", "exchange", "compare_exchange"],
}


def test_standard_ops_load_cleanly(registry):
    assert registry.errors == ()
    for dialect, names in REQUIRED.items():
        assert dialect in registry.dialects
        for name in names:
            assert f"{dialect}.{name}" in registry


def test_every_intrinsic_has_a_template_per_binding_and_a_reference(registry):
    for op in registry:
        for b in op.bindings():
            if op.category == "intrinsic" or op.is_atomic:
                assert b in op.templates, (op.id, b)
            assert (op.reference_for(b) is None) != (op.compose_for(b) is None), (op.id, b)


def test_a_composite_is_defined_only_by_compose(registry):
    only = [op for op in registry if op.category == "composite" and not op.templates and not op.references]
    assert only, "at least one op must prove the compose-only path"


def test_casts_cover_all_value_type_pairs(registry):
    cast = registry.get("primitive.convert.cast")
    assert len(cast.bindings()) == 49 and len(cast.templates) == 49


def test_fingerprint_is_order_independent_and_content_sensitive(tmp_path):
    a = load()
    for f in standard_ops_dir().glob("*.toml"):
        shutil.copy(f, tmp_path / f.name)
    b = load([tmp_path], standard=False, env=False)
    assert a.fingerprint == b.fingerprint
    f = tmp_path / "primitive.math.toml"
    f.write_text(f.read_text() + "\n# a comment changes the bytes\n")
    assert load([tmp_path], standard=False, env=False).fingerprint != a.fingerprint


@pytest.mark.parametrize("path", BAD, ids=[p.stem for p in BAD])
def test_malformed_file_is_rejected_whole(path):
    code = re.search(r"# expect: (R\d{3})", path.read_bytes().decode("utf-8", "replace")).group(1)
    reg = load([path], env=False)
    errors = [d for d in reg.errors if path.name in d.location]
    assert any(d.code == code for d in errors), [str(d) for d in reg.diagnostics]
    assert not [op.id for op in reg if op.id.lower().startswith("bad.x.")], "nothing from a bad file is registered"
    assert "bad.x" not in reg.dialects and "Bad.X" not in reg.dialects
    assert len(reg) == len(load(env=False))  # the standard ops are unaffected
    for d in errors:
        assert d.fix and str(d).endswith(d.fix)
    if code != "R001":  # a file that does not parse declares nothing we could name
        first_id = re.search(r'id = "([^"]+)"', path.read_text()).group(1)
        assert "rejected" in reg.unknown_op_hint(first_id)


def test_at_least_25_distinct_fixtures():
    assert len(BAD) >= 25


def test_diagnostics_name_file_op_and_field():
    reg = load([FIXTURES / "bad_ops" / "15_unknown_placeholder.toml"], env=False)
    d = next(d for d in reg.errors if d.code == "R007")
    assert "15_unknown_placeholder.toml" in d.location and "bad.x.broken" in d.location and "ptx.u32" in d.location
    assert "{c}" in d.message and "{a}" in d.fix


def test_oversized_file(tmp_path):
    big = tmp_path / "big.toml"
    big.write_text('[dialect]\nname = "big"\nversion = "1.0.0"\n' + "#" * MAX_FILE_BYTES)
    reg = load([big], env=False)
    assert [d.code for d in reg.errors] == ["R015"]
    assert "big" not in reg.dialects


def test_duplicate_ids_across_directories_name_both_places(tmp_path):
    src = (FIXTURES / "extra_ops" / "demo.fused.toml").read_text()
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir(), two.mkdir()
    (one / "demo.fused.toml").write_text(src)
    (two / "demo.toml").write_text(src.replace('name = "demo.fused"', 'name = "demo"').replace("1.2.0", "1.0.0")
                                   .replace('id = "demo.fused.axpy"', 'id = "demo.fused.axpy"'))
    reg = load([one, two], env=False)
    dup = [d for d in reg.errors if d.code == "R005"]
    assert dup and str(one / "demo.fused.toml") in dup[0].message and str(two / "demo.toml") in dup[0].location
    assert "demo.fused.axpy" in reg  # the first one stays


def test_higher_semver_wins_with_a_note(tmp_path):
    src = (FIXTURES / "extra_ops" / "demo.fused.toml").read_text()
    old, new = tmp_path / "a", tmp_path / "b"
    old.mkdir(), new.mkdir()
    # 10.0.0 must beat 9.0.0 (vyre compared versions as strings)
    (old / "demo.fused.toml").write_text(src.replace('version = "1.2.0"', 'version = "9.0.0"'))
    (new / "demo.fused.toml").write_text(src.replace('version = "1.2.0"', 'version = "10.0.0"')
                                         .replace("a * k + b", "a * k + b + b"))
    reg = load([old, new], env=False)
    assert reg.errors == ()
    assert reg.dialects["demo.fused"].version == "10.0.0"
    assert "b + b" in reg.get("demo.fused.axpy").compose_text
    notes = [d for d in reg.diagnostics if d.code == "R018"]
    assert notes and notes[0].severity == "note" and "9.0.0" in notes[0].message


def test_rejecting_a_file_rejects_files_that_depend_on_it(tmp_path):
    (tmp_path / "base.toml").write_text((FIXTURES / "bad_ops" / "18_missing_template.toml").read_text())
    (tmp_path / "user.toml").write_text(
        '[dialect]\nname = "user"\nversion = "1.0.0"\n[[op]]\nid = "user.twice"\nsummary = "s"\n'
        'signature = "(a: u32) -> u32"\n'
        'compose = "bad.x.good(a, a)"\n')
    reg = load([tmp_path], env=False)
    assert "user.twice" not in reg
    assert any(d.code == "R010" and "user.toml" in d.location for d in reg.errors)


def test_missing_directory_and_empty_env_entries(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_VAR, os.pathsep.join([str(tmp_path / "nope"), ""]))
    reg = load()
    codes = [(d.code, d.severity) for d in reg.diagnostics]
    assert ("R016", "error") in codes and ("R016", "warning") in codes
    assert len(reg) == len(load(env=False))


def test_signature_view(registry):
    sig = registry.signature("primitive.convert.cast")
    assert sig.free_type_vars() == ("T",)
    assert sig.bind([DataType.F32], {"T": DataType.I32}) == ((DataType.F32, DataType.I32), DataType.I32)
    assert registry.signature("primitive.atomic.add").is_atomic
    assert registry.signature("nope.op") is None
    assert "primitive.math" in registry.unknown_op_hint("primitive.math.nope")


def test_a_loader_failure_is_a_diagnostic_for_that_file_only(tmp_path, monkeypatch):
    from vyre_decl.registry import files

    real = files.build_op

    def explode(fields, op_id, *args):
        if op_id.startswith("boom."):
            raise RuntimeError("simulated loader bug")
        return real(fields, op_id, *args)

    monkeypatch.setattr(files, "build_op", explode)
    (tmp_path / "boom.toml").write_text('[dialect]\nname = "boom"\nversion = "1.0.0"\n[[op]]\nid = "boom.x"\n'
                                        'summary = "s"\nsignature = "(a: u32) -> u32"\ncompose = "a"\n')
    reg = load([tmp_path, FIXTURES / "extra_ops"], env=False, snapshot=False)
    (d,) = reg.errors
    assert d.code == "R029" and "boom.toml" in d.location and "simulated loader bug" in d.message
    assert "demo.fused.axpy" in reg and "boom.x" not in reg and len(reg) == len(load(env=False)) + 1


def test_bad_files_on_the_env_path_never_break_default_registry(tmp_path, monkeypatch):
    import vyre_decl.registry as registry_mod

    bad = tmp_path / "bad"
    bad.mkdir()
    for name in ("70_huge_integer", "71_deep_nesting", "72_huge_hex_kat", "73_compose_attribute_not_literal",
                 "02_not_utf8", "64_placeholder_attribute"):
        (bad / f"{name}.toml").write_bytes((FIXTURES / "bad_ops" / f"{name}.toml").read_bytes().replace(
            b'"bad.x', f'"{name[3:]}'.encode()))
    monkeypatch.setenv(ENV_VAR, str(bad))
    monkeypatch.setattr(registry_mod, "_cached", None)
    reg = registry_mod.default_registry()
    assert len(reg) == len(load(env=False)) and len({d.location.split(" ")[0] for d in reg.errors}) == 6


def test_a_broken_standard_library_is_the_one_error_default_registry_raises(tmp_path, monkeypatch):
    import vyre_decl.registry as registry_mod
    from vyre_decl.ir import VyreError

    std = tmp_path / "std"
    std.mkdir()
    for f in standard_ops_dir().glob("*.toml"):
        (std / f.name).write_text(f.read_text())
    (std / "primitive.math.toml").write_text((std / "primitive.math.toml").read_text().replace("add{T.rn}", "add{T.zz}"))
    monkeypatch.setattr(registry_mod, "standard_ops_dir", lambda: std)
    monkeypatch.setattr("vyre_decl.registry.loader.standard_ops_dir", lambda: std)
    monkeypatch.setattr(registry_mod, "_cached", None)
    with pytest.raises(VyreError) as info:
        registry_mod.default_registry()
    assert "standard op library is broken" in str(info.value) and "R007" in info.value.codes
