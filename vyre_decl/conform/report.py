"""The text table of a certificate: a line per dialect, programs and routines, accuracy, the
failures with their replay commands, and the summary."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from .isolation import SELF_CONSISTENCY

__all__ = ["certificate_table"]


def certificate_table(cert: dict[str, Any]) -> str:
    b = cert["backend"]
    lines = [f"vyre_decl conformance: backend {b['id']} on {b['device']}"
             + (f", cc {b['compute_capability']}, driver {b['driver_version']}, {b['ptx_target']}" if b.get("ptx_target") else ""),
             f"registry {cert['registry_fingerprint'][:16]}  corpus {(cert['corpus_fingerprint'] or '-')[:16]}  "
             f"seed {cert['seed']}  "
             f"random cases per op x type {cert['cases_per_op']}  shard {cert['shard']}", ""]
    if cert.get("self_consistency"):
        lines[-1:-1] = [f"{SELF_CONSISTENCY}: the backend under test is the reference itself, so only its known "
                        "answers and laws can fail; this certifies no other backend"]
    rows = [("", "op x types", "cases", "failed", "laws", "result")]
    by_dialect: dict[str, list[tuple[str, dict[str, Any]]]] = defaultdict(list)
    for key, entry in cert["ops"].items():
        by_dialect[key.rsplit(".", 1)[0]].append((key, entry))
    for dialect, entries in sorted(by_dialect.items()):
        ok = sum(e["verdict"] == "pass" for _, e in entries)
        rows.append((dialect, f"{ok}/{len(entries)}", f"{sum(e['cases'] for _, e in entries):,}",
                     f"{sum(e['failed'] for _, e in entries):,}", f"{sum(e['laws_checked'] for _, e in entries):,}",
                     "pass" if ok == len(entries) else "FAIL"))
    progs = cert["programs"]
    sized = {**{f"program {k}": v for k, v in progs.items()}, **{f"routine {k}": v for k, v in cert.get("routines", {}).items()}}
    for label, group in (("programs", progs), ("routines", cert.get("routines", {}))):
        if group:
            ok = sum(p["verdict"] == "pass" for p in group.values())
            runs = sum(len(p["runs"]) for p in group.values())
            rows.append((f"{label} ({runs} runs)", f"{ok}/{len(group)}", f"{sum(p['cases'] for p in group.values()):,}",
                         f"{sum(p['failed'] for p in group.values()):,}", "-", "pass" if ok == len(group) else "FAIL"))
    widths = [max(len(r[i]) for r in rows) for i in range(6)]
    for r in rows:
        lines.append("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))))
    measured = [(k, e["accuracy"]) for k, e in cert["ops"].items() if "accuracy" in e]
    if measured:
        lines += ["", f"accuracy against mpmath ({cert.get('accuracy_samples')} sampled inputs per op x type): "
                  "max ULP / declared"]
        lines += [f"  {k:40s} {a['max_ulp']:>4} / {a['budget']:<4} at {a['at']}" for k, a in measured]
    failures = [(k, f) for k, e in cert["ops"].items() for f in e["failures"]]
    failures += [(f"{k}@{size}", f) for k, p in sized.items() for size, r in p["runs"].items() for f in r["failures"]]
    if failures:
        lines += ["", f"failures ({len(failures)}):"]
        for key, f in failures[:40]:
            lines.append(f"  [{f['kind']}] {key}: {f['message']}")
            if f.get("capsule"):
                path = Path(cert.get("capsules") or ".") / f["capsule"]
                lines.append(f"      replay: python -m vyre_decl.conform replay {path}")
        if len(failures) > 40:
            lines.append(f"  ... and {len(failures) - 40} more (see the certificate)")
    s = cert["summary"]
    lines += ["", f"{s['op_types']} op x types ({s['op_types_passed']} pass), {s['programs']} programs "
              f"({s['programs_passed']} pass), {s.get('routines', 0)} routine x types ({s.get('routines_passed', 0)} pass), "
              f"{s['cases']:,} cases ({s['failed_cases']:,} failed), "
              f"{s['laws_checked']:,} law checks ({s['laws_failed']} failed): {s['verdict'].upper()}"
              f"{f' ({SELF_CONSISTENCY})' if cert.get('self_consistency') else ''} in {cert.get('elapsed_s', 0):.1f} s"]
    return "\n".join(lines)
