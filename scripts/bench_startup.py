"""Start-up costs (not a test; prints figures): `import vyre_decl`, `import numpy` (baseline),
and loading + validating every standard op file, each in a fresh process, median of N runs.

    python scripts/bench_startup.py [--runs 7]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

PROBES = {
    "import numpy (baseline)": "import numpy",
    "import vyre_decl": "import vyre_decl",
    "import vyre_decl + numpy": "import vyre_decl, numpy",
    "import vyre_decl.ir (builder, text, validation)": "import vyre_decl.ir",
}
LOAD = """
import time, json
t0 = time.perf_counter()
from vyre_decl.registry import load
t1 = time.perf_counter()
r = load(env=False)
t2 = time.perf_counter()
r2 = load(env=False)
t3 = time.perf_counter()
print(json.dumps({"import": t1 - t0, "first": t2 - t1, "again": t3 - t2, "ops": len(r), "errors": len(r.errors)}))
"""


def timed(code: str) -> float:
    src = f"import time\nt = time.perf_counter()\n{code}\nprint(time.perf_counter() - t)"
    return float(subprocess.run([sys.executable, "-c", src], capture_output=True, text=True, check=True).stdout)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    for label, code in PROBES.items():
        print(f"{label:50s} {statistics.median(timed(code) for _ in range(args.runs)) * 1e3:7.1f} ms")
    rows = [json.loads(subprocess.run([sys.executable, "-c", LOAD], capture_output=True, text=True, check=True).stdout)
            for _ in range(args.runs)]
    med = lambda k: statistics.median(r[k] for r in rows) * 1e3  # noqa: E731
    print(f"{'load + validate all ops (first, incl. pydantic)':50s} {med('first'):7.1f} ms  ({rows[0]['ops']} ops, "
          f"{rows[0]['errors']} errors)")
    print(f"{'load + validate all ops (again, same process)':50s} {med('again'):7.1f} ms")


if __name__ == "__main__":
    main()
