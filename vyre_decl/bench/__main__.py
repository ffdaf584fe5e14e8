"""``python -m vyre_decl.bench``: the benchmark suite in one process, one table.

    python -m vyre_decl.bench [--quick] [--json FILE] [--plot FILE.png] [--only SUBSTRING ...]

``--quick`` is a smoke run (small sizes, few repetitions, no verdicts; what CI runs). GPU cases are skipped,
with the reason, where there is no GPU; PyTorch and CuPy baselines where they are not installed. The
``sim`` group (the simulated device: PTX interpreter throughput, a simulated conformance run) needs
no GPU.
Exit status 0, or 2 on a usage error.
"""

from __future__ import annotations

import argparse
import platform
from typing import Sequence

from .core import Row, render, to_json
from .gpu import gpu_rows
from .host import cold_start_rows, lib_rows, reference_rows, validation_rows
from .sim import conformance_rows, interpreter_rows
from ..clirun import run


def _plot(rows: list[Row], path: str) -> str:
    try:
        import matplotlib  # type: ignore[import-not-found]

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # type: ignore[import-not-found]
    except ImportError:
        return "no plot: matplotlib is not installed"
    series: dict[str, list[tuple[int, float]]] = {}
    for r in rows:
        if r.unit == "GB/s" and r.case.startswith("add ") and r.baseline is not None and r.ours is not None:
            dtype, size = r.case.split()[1], int(r.case.split()[2].split("^")[1].rstrip(","))
            series.setdefault(f"vyre_decl {dtype}", []).append((size, r.ours))
            series.setdefault(f"{r.baseline_name} {dtype}", []).append((size, r.baseline))
    fig, ax = plt.subplots(figsize=(8, 5))
    for name, points in sorted(series.items()):
        points = sorted(set(points))
        ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=name)
    ax.set_xlabel("log2(elements)")
    ax.set_ylabel("GB/s (read + written)")
    ax.legend(fontsize=7)
    fig.savefig(path, dpi=120, bbox_inches="tight")
    return f"plot: {path}"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m vyre_decl.bench", description="Measure vyre_decl against its baselines.")
    ap.add_argument("--quick", action="store_true", help="a smoke run: small sizes, few repetitions")
    ap.add_argument("--json", metavar="FILE", help="also write the run as JSON")
    ap.add_argument("--plot", metavar="FILE", help="draw bandwidth against size (needs matplotlib)")
    ap.add_argument("--only", action="append", default=[], metavar="TEXT", help="only groups whose name contains TEXT "
                    "(cpu, sim, cold, gpu; repeatable)")
    try:
        args = ap.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0) and 2

    def wanted(group: str) -> bool:
        return not args.only or any(o in group for o in args.only)

    rows: list[Row] = []
    device = "none"
    if wanted("cpu"):
        rows += reference_rows(16 if args.quick else 24, 3 if args.quick else 7)
        rows += validation_rows(1 if args.quick else 5)
        rows += lib_rows(1 << 14 if args.quick else 10**6, 3 if args.quick else 9)
    if wanted("sim"):
        rows += interpreter_rows(args.quick, 1 if args.quick else 5)
        rows += conformance_rows(args.quick)
    if wanted("cold"):
        rows += cold_start_rows(2 if args.quick else 7, "reference")
    if wanted("gpu"):
        got, device = gpu_rows(args.quick)
        rows += got
        if device != "none" and wanted("cold"):
            rows += cold_start_rows(2 if args.quick else 7, "cuda")
    if args.quick:  # too small to judge: figures only
        for r in rows:
            r.target = r.limit = None
    header = f"vyre_decl benchmarks{' (quick)' if args.quick else ''}: {platform.processor() or platform.machine()}, " \
             f"Python {platform.python_version()}; GPU: {device}"
    print(render(rows, header))
    if args.plot:
        print(_plot(rows, args.plot))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            fh.write(to_json(rows, device, {"quick": args.quick}))
        print(f"json: {args.json}")
    return 0


if __name__ == "__main__":
    run(main)
