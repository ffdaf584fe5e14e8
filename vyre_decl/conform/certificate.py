"""Certificates: the JSON record of a conformance run, and merging the certificates of shards.

A certificate names what was certified (backend, device, driver, PTX target), against what (the
registry fingerprint — a hash of every op file's bytes — and the corpus fingerprint), how (seed,
random cases per op), and the result of every op x type, every program and every routine x type
(each at several sizes). Timing fields aside,
merging the shards of a run gives exactly the certificate of the unsharded run.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from typing import Any, Iterable, Mapping

from .corpus import CorpusProgram
from .units import UnitResult

__all__ = ["SCHEMA", "build", "merge", "merge_devices", "content", "corpus_fingerprint", "CertificateError"]

SCHEMA = "vyre_decl.certificate/1"
# where and when it ran, not what it found: a run on two GPUs certifies what a run on one does
_VOLATILE = ("started", "finished", "elapsed_s", "shard", "capsules", "devices", "faults")


class CertificateError(ValueError):
    pass


def corpus_fingerprint(corpus: Iterable[CorpusProgram]) -> str:
    h = hashlib.sha256()
    for entry in sorted(corpus, key=lambda c: c.name):
        h.update(entry.name.encode() + b"\0" + entry.path.read_bytes() + b"\0")
    return h.hexdigest()


def _entry(r: UnitResult) -> dict[str, Any]:
    accuracy = {"accuracy": r.accuracy} if r.accuracy is not None else {}
    return {
        "cases": r.cases,
        "passed": r.passed,
        "failed": r.failed,
        "laws_checked": r.laws_checked,
        "laws_failed": r.laws_failed,
        "kats": r.kats,
        "verdict": r.verdict,
        "failures": [f.as_dict() for f in r.failures],
        **accuracy,
    }


def _program_totals(runs: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    ordered = dict(sorted(runs.items(), key=lambda kv: int(kv[0])))
    return {
        "cases": sum(r["cases"] for r in ordered.values()),
        "passed": sum(r["passed"] for r in ordered.values()),
        "failed": sum(r["failed"] for r in ordered.values()),
        "verdict": "fail" if any(r["verdict"] == "fail" for r in ordered.values()) else "pass",
        "runs": ordered,
    }


def _summary(ops: Mapping[str, Any], programs: Mapping[str, Any], routines: Mapping[str, Any]) -> dict[str, Any]:
    kinds: Counter[str] = Counter()
    sized = list(programs.values()) + list(routines.values())
    for entry in list(ops.values()) + [r for p in sized for r in p["runs"].values()]:
        kinds.update(f["kind"] for f in entry["failures"])
    everything = list(ops.values()) + sized
    return {
        "op_types": len(ops),
        "op_types_passed": sum(e["verdict"] == "pass" for e in ops.values()),
        "programs": len(programs),
        "programs_passed": sum(e["verdict"] == "pass" for e in programs.values()),
        "routines": len(routines),
        "routines_passed": sum(e["verdict"] == "pass" for e in routines.values()),
        "cases": sum(e["cases"] for e in everything),
        "failed_cases": sum(e["failed"] for e in everything),
        "laws_checked": sum(e["laws_checked"] for e in ops.values()),
        "laws_failed": sum(e["laws_failed"] for e in ops.values()),
        "failures_by_kind": dict(sorted(kinds.items())),
        "verdict": "fail" if any(e["verdict"] == "fail" for e in everything) else "pass",
    }


def build(header: Mapping[str, Any], results: Mapping[str, UnitResult]) -> dict[str, Any]:
    """A certificate from the run's header fields and its unit results."""
    ops: dict[str, Any] = {}
    runs: dict[str, dict[str, dict[str, Any]]] = {"program": {}, "routine": {}}
    for key, r in results.items():
        kind, _, name = key.partition(":")
        if kind == "op":
            ops[name] = _entry(r)
        else:
            unit, _, size = name.rpartition("@")
            runs[kind].setdefault(unit, {})[size] = _entry(r)
    programs = {name: _program_totals(r) for name, r in sorted(runs["program"].items())}
    routines = {name: _program_totals(r) for name, r in sorted(runs["routine"].items())}
    ops = dict(sorted(ops.items()))
    return {"schema": SCHEMA, **header, "summary": _summary(ops, programs, routines), "ops": ops, "programs": programs,
            "routines": routines}


def merge_devices(devices: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One entry per slot (``cuda:0``, ...): its device, the shards it ran and their units."""
    by_slot: dict[str, dict[str, Any]] = {}
    for d in devices:
        entry = by_slot.setdefault(d["slot"], {"slot": d["slot"], "device": d.get("device"), "shards": [], "units": 0})
        entry["shards"] = sorted(set(entry["shards"]) | set(d.get("shards", ())),
                                 key=lambda s: tuple(int(x) for x in s.split("/")))
        entry["units"] += int(d.get("units", 0))
    return [by_slot[k] for k in sorted(by_slot)]


def content(cert: Mapping[str, Any]) -> dict[str, Any]:
    """The certificate without its timing and shard fields (what merging must reproduce)."""
    return {k: v for k, v in cert.items() if k not in _VOLATILE}


def merge(certs: list[Mapping[str, Any]]) -> dict[str, Any]:
    """One certificate from the certificates of a run's shards."""
    if not certs:
        raise CertificateError("no certificates to merge. Fix: pass the shard certificates")
    same = ("schema", "vyre_decl_version", "backend", "registry_fingerprint", "corpus_fingerprint", "seed",
            "cases_per_op", "selection", "units_total")
    first = certs[0]
    for other in certs[1:]:
        for k in same:
            if other.get(k) != first.get(k):
                raise CertificateError(f"the shards disagree on {k!r}: {first.get(k)!r} vs {other.get(k)!r}. "
                                       "Fix: merge shards of one run (same backend, registry, corpus, seed and cases)")
    try:
        shards = sorted((int(i), int(n)) for i, n in (str(c["shard"]).split("/") for c in certs))
    except (KeyError, ValueError):
        raise CertificateError("a certificate is not a shard (its 'shard' is not I/N). Fix: merge the certificates "
                               "written by --shard runs") from None
    count = shards[0][1]
    if shards != [(i, count) for i in range(count)]:
        have = ", ".join(f"{i}/{n}" for i, n in shards)
        raise CertificateError(f"the shards given ({have}) are not exactly 0/{count} .. {count - 1}/{count}. "
                               "Fix: pass every shard of the run once")
    ops: dict[str, Any] = {}
    runs: dict[str, dict[str, dict[str, Any]]] = {"programs": {}, "routines": {}}
    for cert in certs:
        for name, entry in cert["ops"].items():
            if name in ops:
                raise CertificateError(f"{name} appears in two shards. Fix: merge each shard once")
            ops[name] = entry
        for section, found in runs.items():
            for name, prog in cert.get(section, {}).items():
                for size, entry in prog["runs"].items():
                    if size in found.setdefault(name, {}):
                        raise CertificateError(f"{section[:-1]} {name} size {size} appears in two shards. "
                                               "Fix: merge each shard once")
                    found[name][size] = entry
    programs = {name: _program_totals(r) for name, r in sorted(runs["programs"].items())}
    routines = {name: _program_totals(r) for name, r in sorted(runs["routines"].items())}
    ops = dict(sorted(ops.items()))
    units = len(ops) + sum(len(r) for found in runs.values() for r in found.values())
    if first.get("units_total") is not None and units != first["units_total"]:
        raise CertificateError(f"the shards hold {units} units, the run had {first['units_total']}. "
                               "Fix: pass the shards of one complete run")
    header = {k: first[k] for k in first if k not in ("summary", "ops", "programs", "routines")}
    header["started"] = min(c["started"] for c in certs)
    header["finished"] = max(c["finished"] for c in certs)
    header["elapsed_s"] = round(sum(c.get("elapsed_s", 0.0) for c in certs), 3)
    header["shard"] = f"merged {count}/{count}"
    header["devices"] = merge_devices(d for c in certs for d in c.get("devices", ()))
    return {**header, "summary": _summary(ops, programs, routines), "ops": ops, "programs": programs, "routines": routines}
