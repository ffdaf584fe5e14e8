"""One certification as a function: a ``RunSpec`` (what to certify) and a shard in, a certificate
out. The command line, the multi-device pool and the cluster tasks all run this, so a shard
certified anywhere is the shard the command line would certify.

``run_shard`` is the portable form for another process or machine: it writes its replay capsules
into a private directory and returns their text with the certificate, so that the caller stores
them beside the merged certificate (a cluster worker's disk is not the caller's).
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

__all__ = ["RunSpec", "SetupError", "Plan", "plan", "certify", "run_shard", "now", "shard_units"]


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class SetupError(Exception):
    """A usage or environment problem found before any unit ran (exit status 2)."""


@dataclass(frozen=True)
class RunSpec:
    """What a certification covers and how; everything but the backend, the shard and where the
    files go. Picklable, so that it travels to worker processes and cluster workers."""

    ops: tuple[str, ...] = ()
    dialects: tuple[str, ...] = ()
    programs: str | None = None  # a program corpus directory; None: the shipped corpus
    routines: tuple[str, ...] = ()
    no_routines: bool = False
    seed: int = 1
    cases: int = 1000
    accuracy: int = 0

    @property
    def with_programs(self) -> bool:
        return self.programs is not None or not (self.ops or self.dialects or self.routines)

    @property
    def with_routines(self) -> bool:
        return not self.no_routines and (bool(self.routines) or not (self.ops or self.dialects or self.programs))


@dataclass
class Plan:
    """The units of a spec, in the fixed order that sharding relies on."""

    spec: RunSpec
    registry: Any
    corpus: list[Any]
    units: list[Any]


def plan(spec: RunSpec) -> Plan:
    """The registry, corpus and units a spec selects; ``SetupError`` when it selects nothing or
    the corpus cannot be read."""
    from ..registry import default_registry
    from .corpus import corpus_dir, load_corpus
    from .units import select_units

    registry = default_registry()
    programs_dir = Path(spec.programs) if spec.programs else corpus_dir()
    if not programs_dir.is_dir():
        raise SetupError(f"no program directory {programs_dir}. Fix: pass an existing --programs DIR")
    try:
        corpus = load_corpus(programs_dir)
    except Exception as exc:  # noqa: BLE001 - a corpus that does not parse is a usage error
        raise SetupError(f"cannot read the program corpus: {exc}") from None
    only_routines = bool(spec.routines) and not (spec.ops or spec.dialects)
    units = select_units(registry, corpus, spec.ops, spec.dialects, spec.with_programs,
                         spec.routines if spec.with_routines else None, with_ops=not only_routines)
    if not units:
        raise SetupError("nothing selected. Fix: check --ops/--dialect")
    return Plan(spec, registry, corpus, units)


def shard_units(units: list[Any], index: int, count: int) -> list[Any]:
    """Shard ``index`` of ``count``: every count-th unit (merging the shards gives the whole run)."""
    return [u for i, u in enumerate(units) if i % count == index]


def certify(spec: RunSpec, backend: str, index: int = 0, count: int = 1, capsules: Path | None = None,
            progress: Callable[[str], None] = lambda s: None, the_plan: Plan | None = None) -> dict[str, Any]:
    """Certify shard ``index``/``count`` of ``spec`` on ``backend`` (a name, ``cuda:1`` for one
    device); the certificate. ``SetupError`` when the backend cannot start;
    ``isolation.DeviceLost`` when its device is lost during the run."""
    from .._version import __version__
    from .accuracy import measure_accuracy
    from .certificate import build, corpus_fingerprint
    from .isolation import CaseError, is_reference, make_runner
    from .runner import Conformance, run_units

    p = the_plan or plan(spec)
    mine = shard_units(p.units, index, count)
    try:
        runner = make_runner(backend)
    except CaseError as err:
        raise SetupError(f"cannot start the {backend} backend: {err}") from None
    started, t0 = now(), time.perf_counter()
    try:
        conf = Conformance(runner, p.registry, seed=spec.seed, cases=spec.cases, capsule_dir=capsules)
        progress(f"certifying {backend} ({runner.info.get('device')}): {len(mine)} of {len(p.units)} units "
                 f"(shard {index}/{count}), seed {spec.seed}")
        results = run_units(conf, mine, len(mine), progress)
        if spec.accuracy:
            measure_accuracy(runner, mine, results, spec.accuracy, spec.seed, progress)
        progress("")
    finally:
        runner.close()
    header = {
        "vyre_decl_version": __version__,
        "backend": runner.info,
        "self_consistency": is_reference(backend),  # the reference against itself: no backend is certified
        "registry_fingerprint": p.registry.fingerprint,
        "corpus_fingerprint": corpus_fingerprint(p.corpus) if spec.with_programs else None,
        "seed": spec.seed,
        "cases_per_op": spec.cases,
        "accuracy_samples": spec.accuracy,
        "selection": {"ops": sorted(spec.ops), "dialects": sorted(spec.dialects), "programs": spec.with_programs,
                      "routines": sorted(spec.routines) if spec.with_routines else None},
        "units_total": len(p.units),
        "shard": f"{index}/{count}",
        "capsules": str(capsules) if capsules is not None else None,
        "devices": [{"slot": backend, "device": runner.info.get("device"), "shards": [f"{index}/{count}"],
                     "units": len(mine)}],
        "started": started,
        "finished": now(),
        "elapsed_s": round(time.perf_counter() - t0, 3),
    }
    return build(header, results)


def run_shard(spec: RunSpec, backend: str, index: int, count: int) -> dict[str, Any]:
    """``certify`` for another process or machine: ``{"certificate": ..., "capsules": {file name:
    text}}``, the capsules read back from a private directory."""
    with tempfile.TemporaryDirectory(prefix="vyre-shard-") as tmp:
        cert = certify(spec, backend, index, count, Path(tmp))
        capsules = {p.name: p.read_text() for p in sorted(Path(tmp).glob("*.json"))}
    cert["capsules"] = None
    return {"certificate": cert, "capsules": capsules}
