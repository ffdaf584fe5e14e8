"""Import cost: `import vyre_decl` loads neither the registry nor pydantic, a registry loads
without pydantic and numpy; the layers import in one direction only
(ir <- registry <- reference, emit <- backends <- routines <- conform <- ops)."""

from __future__ import annotations

import ast
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


def test_a_registry_loads_without_pydantic_or_numpy(tmp_path):
    env = f"import os; os.environ['VYRE_DECL_CACHE_DIR'] = {str(tmp_path)!r}\n"
    for first in (True, False):  # the first run reads the op files, the second the snapshot
        mods = _modules_after(env + "from vyre_decl.registry import default_registry\n"
                              "assert len(default_registry()) >= 44")
        assert "pydantic" not in mods and "numpy" not in mods
        assert ("vyre_decl.registry.files" in mods) is first, "a valid snapshot must not load the checking machinery"


def test_a_first_dispatch_loads_no_module_it_does_not_use(tmp_path):
    """logging and fractions cost a fresh process ~7 ms; a healthy run never warns, and only
    the exact fma of the reference needs exact fractions."""
    env = f"import os; os.environ['VYRE_DECL_CACHE_DIR'] = {str(tmp_path)!r}\n"
    code = env + ("import numpy as np, vyre_decl\nfrom vyre_decl.bench.kernels import TWO\n"
                  "a = np.arange(8, dtype=np.uint32)\nassert (vyre_decl.acquire('reference').dispatch(TWO, [a, a])[0] "
                  "== 2 * a).all()")
    for _ in range(2):  # without a registry snapshot, then with it
        mods = _modules_after(code)
        assert "logging" not in mods and "fractions" not in mods and "pydantic" not in mods


LAYERS = [["ir"], ["registry"], ["reference", "emit"], ["backends"], ["routines"], ["conform"], ["ops"]]


def _imported_packages(path: Path) -> set[str]:
    """The vyre_decl subpackages ``path`` imports (``ir``, ``registry`` ...), read from its AST."""
    rel = path.relative_to(ROOT).with_suffix("").parts  # ('vyre_decl', 'registry', 'loader')
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names = []
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(rel[:-node.level])
                names = [".".join(base + ([node.module] if node.module else []) + ([a.name] if not node.module else []))
                         for a in node.names]
            else:
                names = [node.module or ""]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        for name in names:
            parts = name.split(".")
            if parts[0] == "vyre_decl" and len(parts) > 1:
                found.add(parts[1])
    return found


def test_layers_import_one_way():
    for i, layer in enumerate(LAYERS):
        for name in layer:
            others = {n for n in layer if n != name} | {n for later in LAYERS[i + 1:] for n in later}
            for path in (ROOT / "vyre_decl" / name).rglob("*.py"):
                bad = _imported_packages(path) & others
                assert not bad, f"{path} imports {bad}, which {name} may not import"


def test_public_names_resolve():
    import vyre_decl

    for name in vyre_decl.__all__:
        assert getattr(vyre_decl, name) is not None, name
