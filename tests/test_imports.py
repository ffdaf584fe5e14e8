"""Import cost: `import vyre_decl` loads neither the registry nor pydantic; the layers import in
one direction only (ir <- registry <- reference <- backends)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _modules_after(code: str) -> set[str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys, json\nprint(json.dumps(sorted(sys.modules)))"],
                         capture_output=True, text=True, env=env, check=True).stdout
    return set(json.loads(out))


def test_import_is_lazy():
    mods = _modules_after("import vyre_decl")
    assert "pydantic" not in mods and "numpy" not in mods and "vyre_decl.registry" not in mods


def test_building_and_printing_programs_needs_no_registry():
    mods = _modules_after("from vyre_decl.ir import parse_program, print_program\n"
                          "print_program(parse_program('program m workgroup(1, 1, 1) { let x = 1u32 }'))")
    assert "pydantic" not in mods and "vyre_decl.registry" not in mods


def test_layers_import_one_way():
    order = ["ir", "registry", "reference", "backends", "conform"]
    for i, layer in enumerate(order):
        for path in (ROOT / "vyre_decl" / layer).rglob("*.py"):
            text = path.read_text()
            for later in order[i + 1:]:
                assert f"from ..{later}" not in text and f"vyre_decl.{later}" not in text.replace(
                    f'"vyre_decl.{layer}', ""), f"{path} imports the later layer {later}"


def test_public_names_resolve():
    import vyre_decl

    for name in vyre_decl.__all__:
        assert getattr(vyre_decl, name) is not None, name
