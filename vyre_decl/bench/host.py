"""CPU cases: the reference backend on a 1-D map against numpy, and cold start (a fresh process
up to its first dispatch) against numpy's own import, in fresh subprocesses."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import numpy as np

from .core import Row, median_seconds, skipped
from .kernels import TWO

__all__ = ["reference_rows", "cold_start_rows", "validation_rows"]

_COLD = """
import time
t0 = time.perf_counter()
import numpy as np
t1 = time.perf_counter()
import vyre_decl
from vyre_decl.bench.kernels import TWO
t2 = time.perf_counter()
backend = vyre_decl.acquire({backend!r})
t3 = time.perf_counter()
a = np.arange(1024, dtype=np.uint32)
out, = backend.dispatch(TWO, [a, a])
t4 = time.perf_counter()
assert (out == 2 * a).all()
import json
print(json.dumps({{"numpy": t1 - t0, "import": t2 - t1, "acquire": t3 - t2, "dispatch": t4 - t3}}))
"""


def reference_rows(log2n: int, repeats: int) -> list[Row]:
    """out[i] = a[i] + b[i] over 2^log2n u32 through the reference backend, against numpy a + b."""
    from ..backends.reference import ReferenceBackend

    n = 1 << log2n
    rng = np.random.default_rng(0)
    a, b = rng.integers(0, 2**32, n, dtype=np.uint32), rng.integers(0, 2**32, n, dtype=np.uint32)
    pipe = ReferenceBackend().compile(TWO)
    assert (pipe.dispatch([a, b])[0] == a + b).all()
    ours = median_seconds(lambda: pipe.dispatch([a, b]), repeats)
    base = median_seconds(lambda: np.add(a, b), repeats)
    return [Row(f"reference backend, 1-D map 2^{log2n} u32 (ms)", ours * 1e3, "numpy a + b", base * 1e3, "ms", "lower", 4.0)]


def cold_start_rows(runs: int, backend: str) -> list[Row]:
    """A fresh process: import vyre_decl, acquire ``backend``, first dispatch of a small program
    (its kernel cached by a first run); the time beyond numpy's import, and for CUDA without
    creating the context (acquire). Median of ``runs`` processes, with bytecode cached as after
    ``pip install`` (the first, untimed run writes it even where the caller's environment says
    ``PYTHONDONTWRITEBYTECODE``: otherwise every run would time compiling the sources)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(__file__).resolve().parents[2]),
                                                       os.environ.get("PYTHONPATH", "")]))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    code = _COLD.format(backend=backend)

    def once() -> dict[str, float]:
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
        if proc.returncode:
            raise RuntimeError(proc.stderr[-2000:])
        return json.loads(proc.stdout.strip().splitlines()[-1])

    try:
        once()  # fills the kernel and registry caches
        got = [once() for _ in range(runs)]
    except RuntimeError as exc:
        return [skipped(f"cold start ({backend})", str(exc).strip().splitlines()[-1][:200])]
    med = {k: statistics.median(g[k] for g in got) * 1e3 for k in got[0]}
    beyond = med["import"] + med["dispatch"] + (0.0 if backend == "cuda" else med["acquire"])
    what = "import + first dispatch" + (", context creation left out" if backend == "cuda" else " + acquire")
    return [Row(f"cold start, {backend}: {what}, beyond numpy (ms)", beyond, "import numpy", med["numpy"], "ms",
                "lower", limit=20.0, note=f"import {med['import']:.1f}, acquire {med['acquire']:.1f}, "
                                         f"first dispatch {med['dispatch']:.1f} ms; median of {runs}")]


def validation_rows(repeats: int) -> list[Row]:
    """Validation of pathological but legal shapes (issue 13's limits): 64 nested loops, and a
    100,000-statement program (refused with V017 at 8,192, without walking the rest)."""
    from ..ir.nodes import Access, BufferDecl, Let, Lit, Op, Program, Var
    from ..ir.text import parse_program
    from ..ir.types import DataType
    from ..ir.validation import validate
    from ..registry import default_registry

    registry = default_registry()
    nested = parse_program("program p workgroup(1, 1, 1) {\n buffer o: write u32[4] @0\n"
                           + "".join(f"loop v{j} in 0u32 .. 2u32 {{\n" for j in range(64)) + "o[0u32] = 1u32\n"
                           + "}\n" * 64 + "}")
    one = Lit(DataType.U32, 1)  # built as nodes: its text (2.7 MB) is over the parser's size limit
    long = Program((BufferDecl("o", Access.WRITE, DataType.U32, count=4, binding=0),), (1, 1, 1),
                   (Let("x0", one), *(Let(f"x{i}", Op("primitive.math.add", (Var(f"x{i - 1}"), one)))
                                      for i in range(1, 100_000))), name="p")
    found = [[d.code for d in validate(p, registry)] for p in (nested, long)]
    if found[0] or "V017" not in found[1]:  # a fast wrong answer is no result
        raise AssertionError(f"validation found {found[0]} in the nested loops (none expected) and {found[1]} in "
                             "the long program (V017 expected)")
    t_nested = median_seconds(lambda: validate(nested, registry), repeats)
    t_long = median_seconds(lambda: validate(long, registry), repeats)
    return [Row("validate 64 nested loops (ms)", t_nested * 1e3, "", None, "ms", "lower", limit=50.0),
            Row("validate a 100,000-statement program (s)", t_long, "", None, "s", "lower", limit=2.0,
                note="reported as V017 (more than 8,192 statements)")]


def lib_rows(n: int, batches: int) -> list[Row]:
    """``vyre_decl.lib`` sum, cumsum and sort on the reference backend (the host path,
    routines/hostpath.py) against numpy, f32, i32 and u32 of ``n`` elements, timed interleaved
    (issue 29 asks for at most 10x numpy at 10^6). Each result is first checked: sorts equal
    numpy's, sums and scans within the float bounds of docs/routines.md (integers exact)."""
    from .. import lib
    from .core import interleaved

    rng = np.random.default_rng(0)
    arrays = {"f32": rng.standard_normal(n).astype(np.float32),
              "i32": rng.integers(-2**31, 2**31, n).astype(np.int32),
              "u32": rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)}
    rows = []
    for name in ("sum", "cumsum", "sort"):
        ours_fn, numpy_fn = getattr(lib, name), getattr(np, name)
        for kind, x in arrays.items():
            got, want = np.asarray(ours_fn(x, backend="reference")), np.asarray(numpy_fn(x))
            if kind == "f32" and name != "sort":
                scale = np.cumsum(np.abs(x.astype(np.float64))) if name == "cumsum" else np.abs(x.astype(np.float64)).sum()
                ok = bool((np.abs(got - want.astype(np.float64)) <= n * 2.0**-24 * scale).all())
            else:
                ok = got.dtype == want.dtype and bool((got == want).all())
            if not ok:
                raise AssertionError(f"lib.{name} {kind} disagrees with numpy.{name}")
            ours, base = interleaved([lambda: ours_fn(x, backend="reference"), lambda: numpy_fn(x)], batches, 1)
            rows.append(Row(f"lib.{name} {kind} {n:,}, reference backend (host path) (ms)", ours * 1e3,
                            f"numpy.{name}", base * 1e3, "ms", "lower", 10.0))
    return rows
