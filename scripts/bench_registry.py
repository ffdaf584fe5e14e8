"""Registry load costs (a benchmark, not a test; prints figures): medians of fresh processes.

    python scripts/bench_registry.py [--runs 9]

* import: ``import vyre_decl.registry`` (what any use of the library pays);
* first load: ``default_registry()`` with an empty cache directory (reads, checks and links every
  standard op file, then writes the snapshot);
* snapshot load: ``default_registry()`` when the snapshot exists (a second process);
* ops check: ``python -m vyre_decl.ops check`` on the standard library, as the command reports
  its own time (KATs and laws on the reference, every template through ptxas), with and
  without ptxas.

The load figures exclude the interpreter's start and the import; ``python -c pass`` and
``import numpy`` are printed as the machine's baselines. Child processes run with bytecode caching
on (``PYTHONDONTWRITEBYTECODE`` removed) after a warm-up, as an installed package runs.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROBE = """
import json, sys, time
t0 = time.perf_counter()
import vyre_decl.registry as r
t1 = time.perf_counter()
reg = r.default_registry()
t2 = time.perf_counter()
print(json.dumps({"import": t1 - t0, "load": t2 - t1, "ops": len(reg), "bindings": sum(len(o.bindings()) for o in reg),
                  "numpy": "numpy" in sys.modules, "pydantic": "pydantic" in sys.modules}))
"""


def _env(cache: str) -> dict[str, str]:
    env = dict(os.environ, VYRE_DECL_CACHE_DIR=cache, VYRE_DECL_OPS_PATH="",
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def _probe(cache: str) -> dict[str, float]:
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True, env=_env(cache))
    return json.loads(out.stdout)


def _wall(code: str) -> float:
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, env=_env(""))
    return time.perf_counter() - t


def _check_seconds(*extra: str) -> float:
    with tempfile.TemporaryDirectory() as cache:
        subprocess.run([sys.executable, "-m", "vyre_decl.ops", "check", *extra], capture_output=True, env=_env(cache))
        out = subprocess.run([sys.executable, "-m", "vyre_decl.ops", "check", *extra], capture_output=True, text=True,
                             env=_env(cache)).stdout
    m = re.search(r"in ([\d.]+) s", out)
    if m is None:
        raise SystemExit(f"ops check printed no time: {out}")
    return float(m.group(1))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=9)
    n = ap.parse_args().runs
    with tempfile.TemporaryDirectory() as cache:  # warm-up: writes the bytecode caches
        _probe(cache)
        _check_seconds()
    med = statistics.median
    ms = lambda s: f"{s * 1e3:7.1f} ms"  # noqa: E731
    print(f"{'python -c pass (baseline)':44s} {ms(med(_wall('pass') for _ in range(n)))}")
    print(f"{'import numpy (baseline)':44s} {ms(med(_wall('import numpy') for _ in range(n)))}")
    first, warm = [], []
    for _ in range(n):
        with tempfile.TemporaryDirectory() as cache:
            first.append(_probe(cache))
            warm.append(_probe(cache))
    info = warm[0]
    print(f"{'import vyre_decl.registry':44s} {ms(med(r['import'] for r in warm))}")
    print(f"{'first load (no snapshot: read, check, link)':44s} {ms(med(r['load'] for r in first))}")
    print(f"{'snapshot load (a second process)':44s} {ms(med(r['load'] for r in warm))}"
          f"   ({info['ops']} ops, {info['bindings']} op x type bindings; numpy imported: {info['numpy']}, "
          f"pydantic imported: {info['pydantic']})")
    print(f"{'ops check, whole standard library':44s} {ms(med(_check_seconds() for _ in range(max(3, n // 3))))}")
    print(f"{'ops check --no-ptxas':44s} {ms(med(_check_seconds('--no-ptxas') for _ in range(max(3, n // 3))))}")


if __name__ == "__main__":
    main()
