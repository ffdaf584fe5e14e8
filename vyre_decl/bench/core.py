"""Benchmark rows, timing helpers and the report (table, JSON, optional plot)."""

from __future__ import annotations

import json
import platform
import statistics
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

__all__ = ["Row", "skipped", "median_seconds", "interleaved", "render", "to_json"]


@dataclass
class Row:
    """One case: our figure beside its baseline's, measured in the same run.

    ``better`` says which way is good (``"higher"`` for bandwidth, ``"lower"`` for time);
    ``ratio`` is ours / baseline; ``target`` the ratio the issue asks for (None: informative)."""

    case: str
    ours: float | None
    baseline_name: str
    baseline: float | None
    unit: str
    better: str = "lower"
    target: float | None = None
    limit: float | None = None  # a bound on ``ours`` itself (in ``unit``), where the issue gives one
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ratio(self) -> float | None:
        if self.ours is None or not self.baseline:
            return None
        return self.ours / self.baseline

    @property
    def met(self) -> bool | None:
        if self.limit is not None and self.ours is not None:
            return self.ours >= self.limit if self.better == "higher" else self.ours <= self.limit
        r = self.ratio
        if r is None or self.target is None:
            return None
        return r >= self.target if self.better == "higher" else r <= self.target


def skipped(case: str, why: str) -> Row:
    """A case that could not run here, with the reason."""
    return Row(case, None, "", None, "", note=f"skipped: {why}")


def median_seconds(fn: Callable[[], Any], repeats: int, warmup: int = 1) -> float:
    """Median wall seconds of ``fn`` over ``repeats`` calls after ``warmup`` calls."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def interleaved(fns: list[Callable[[], Any]], batches: int, per_batch: int,
                sync: Callable[[], None] = lambda: None) -> list[float]:
    """Median seconds per call of each of ``fns``, timed in interleaved batches (so drift in the
    machine's state falls on all of them alike); ``sync`` runs after each batch, untimed."""
    times: list[list[float]] = [[] for _ in fns]
    for fn in fns:  # warm up
        fn()
    sync()
    for _ in range(batches):
        for fn, into in zip(fns, times):
            t = time.perf_counter()
            for _ in range(per_batch):
                fn()
            into.append((time.perf_counter() - t) / per_batch)
            sync()
    return [statistics.median(t) for t in times]


def _fmt(v: float | None) -> str:
    if v is None:
        return "-"
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.4g}"


def render(rows: list[Row], header: str) -> str:
    """The table: case, ours, baseline, ratio, target, met."""
    lines = [header, "",
             f"{'case':74s} {'ours':>10s} {'baseline':>10s} {'unit':6s} {'ratio':>7s} {'target':>8s}  result  baseline / note"]
    for r in rows:
        ratio = f"{r.ratio:.3f}" if r.ratio is not None else "-"
        sign = "≥" if r.better == "higher" else "≤"
        target = f"{sign}{r.target:g}x" if r.target is not None else f"{sign}{r.limit:g}" if r.limit is not None else "-"
        met = {True: "met", False: "MISSED", None: ""}[r.met]
        tail = r.baseline_name + (f"; {r.note}" if r.note and r.baseline_name else r.note)
        lines.append(f"{r.case:74s} {_fmt(r.ours):>10s} {_fmt(r.baseline):>10s} {r.unit:6s} {ratio:>7s} {target:>8s}  "
                     f"{met:6s}  {tail}")
    return "\n".join(lines)


def to_json(rows: list[Row], device: str, extra: dict[str, Any]) -> str:
    """The run as JSON: machine, device, date, and every row with its ratio and verdict."""
    return json.dumps({
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "device": device, "host": platform.node(),
        "python": platform.python_version(), **extra,
        "rows": [{**asdict(r), "ratio": r.ratio, "met": r.met} for r in rows],
    }, indent=1)
