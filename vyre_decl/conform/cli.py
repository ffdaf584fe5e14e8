"""``python -m vyre_decl.conform``: certify a backend against the reference.

    python -m vyre_decl.conform [--backend auto|cuda|reference|NAME] [--ops GLOB ...] [--dialect NAME ...]
                                [--programs DIR] [--routines GLOB] [--no-routines] [--seed N] [--cases N] [--shard I/N] [--out cert.json]
                                [--capsules DIR] [--accuracy [N]] [--json] [--quiet]
    python -m vyre_decl.conform merge OUT SHARD.json ...
    python -m vyre_decl.conform replay CAPSULE.json [--backend NAME]

Exit status: 0 when everything passed, 1 on any failure, 2 on usage or environment errors.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import defaultdict
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Sequence

__all__ = ["main"]


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _err(msg: str) -> int:
    print(f"error: {msg}", file=sys.stderr)
    return 2


class _UsageError(Exception):
    pass


def _pick_backend(name: str) -> tuple[str, str | None]:
    """(backend name, a note to print); _UsageError when it cannot run here."""
    from ..backends import list_backends

    infos = {b.name: b for b in list_backends()}
    if name == "auto":
        for info in list_backends():
            if info.is_available():
                note = None if info.name != "reference" else \
                    "no GPU backend was found on this machine: certifying the reference backend"
                return info.name, note
        return "reference", None
    if name not in infos:
        raise _UsageError(f"no backend named {name!r}. Fix: use one of auto, {', '.join(infos)}")
    if not infos[name].is_available():
        raise _UsageError(f"backend {name!r} is not available on this machine (no GPU or driver?). "
                          "Fix: run where it is available, or use --backend reference")
    return name, None


def _table(cert: dict[str, Any]) -> str:
    b = cert["backend"]
    lines = [f"vyre_decl conformance: backend {b['id']} on {b['device']}"
             + (f", cc {b['compute_capability']}, driver {b['driver_version']}, {b['ptx_target']}" if b.get("ptx_target") else ""),
             f"registry {cert['registry_fingerprint'][:16]}  corpus {(cert['corpus_fingerprint'] or '-')[:16]}  "
             f"seed {cert['seed']}  "
             f"random cases per op x type {cert['cases_per_op']}  shard {cert['shard']}", ""]
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
              f"{s['laws_checked']:,} law checks ({s['laws_failed']} failed): {s['verdict'].upper()} "
              f"in {cert.get('elapsed_s', 0):.1f} s"]
    return "\n".join(lines)


def _run(argv: Sequence[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m vyre_decl.conform",
                                 description="Certify a backend against the reference semantics.",
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="other commands:\n"
                                        "  python -m vyre_decl.conform merge OUT SHARD.json ...   "
                                        "one certificate from the shards' certificates\n"
                                        "  python -m vyre_decl.conform replay CAPSULE.json [--backend NAME]   "
                                        "re-run one failed case\n\n"
                                        "exit status: 0 all passed, 1 a failure, 2 a usage or environment error")
    ap.add_argument("--backend", default="auto", help="auto (default), cuda, reference or a registered backend")
    ap.add_argument("--ops", action="append", default=[], metavar="GLOB", help="only ops whose id matches (repeatable)")
    ap.add_argument("--dialect", action="append", default=[], help="only ops of this dialect (repeatable)")
    ap.add_argument("--programs", metavar="DIR", help="program corpus directory (default: the shipped corpus; "
                    "with --ops/--dialect programs run only when this is given)")
    ap.add_argument("--routines", action="append", default=[], metavar="GLOB",
                    help="only routines whose id matches (repeatable; with --ops/--dialect routines run only when given)")
    ap.add_argument("--no-routines", action="store_true", help="leave the routines out")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cases", type=int, default=1000, help="random cases per op x type (default 1000)")
    ap.add_argument("--shard", default="0/1", metavar="I/N", help="run the I-th of N shards (0-based)")
    ap.add_argument("--out", default="vyre-certificate.json", help="certificate path (default vyre-certificate.json)")
    ap.add_argument("--capsules", help="directory for replay capsules (default: next to the certificate)")
    ap.add_argument("--accuracy", nargs="?", type=int, const=2000, default=0, metavar="N",
                    help="also measure each float function's error in ULP against mpmath on N sampled inputs "
                    "(default 2000) per op x type, failing where it exceeds the op's declared budget")
    ap.add_argument("--fuzz", type=int, default=0, metavar="N",
                    help="instead of certifying: run N generated programs on the backend and the reference and "
                    "compare them bit for bit (seeds from --seed); mismatches become replay capsules")
    ap.add_argument("--json", action="store_true", help="print the certificate on stdout instead of the table")
    ap.add_argument("--quiet", action="store_true", help="no progress on stderr")
    args = ap.parse_args(argv)
    try:
        index, count = (int(x) for x in args.shard.split("/"))
        if not 0 <= index < count:
            raise ValueError
    except ValueError:
        return _err(f"bad --shard {args.shard!r}. Fix: write I/N with 0 <= I < N, e.g. 0/4")
    if args.cases < 0:
        return _err("--cases must be >= 0")
    if args.accuracy < 0:
        return _err("--accuracy must be >= 0")
    if args.fuzz < 0:
        return _err("--fuzz must be >= 0")
    if args.accuracy:
        try:
            import mpmath  # type: ignore[import-untyped]  # noqa: F401 - a test dependency, needed only here
        except ImportError:
            return _err("--accuracy needs mpmath. Fix: pip install mpmath (a test dependency)")

    from .._version import __version__
    from ..registry import default_registry
    from .capsule import clear_capsules
    from .certificate import build, corpus_fingerprint
    from .corpus import corpus_dir, load_corpus
    from .isolation import CaseError, make_runner
    from .accuracy import measure_accuracy
    from .runner import Conformance, run_units, select_units

    registry = default_registry()
    if registry.errors:
        for d in registry.errors:
            print(d, file=sys.stderr)
        print("warning: some op files were rejected (see above); their ops are not certified", file=sys.stderr)
    programs_dir = Path(args.programs) if args.programs else corpus_dir()
    if not programs_dir.is_dir():
        return _err(f"no program directory {programs_dir}. Fix: pass an existing --programs DIR")
    try:
        corpus = load_corpus(programs_dir)
    except Exception as exc:  # noqa: BLE001 - a corpus that does not parse is a usage error
        return _err(f"cannot read the program corpus: {exc}")
    with_programs = bool(args.programs) or not (args.ops or args.dialect or args.routines)
    with_routines = not args.no_routines and (bool(args.routines) or not (args.ops or args.dialect or args.programs))
    only_routines = bool(args.routines) and not (args.ops or args.dialect)
    units = select_units(registry, corpus, args.ops, args.dialect, with_programs, args.routines if with_routines else None,
                         with_ops=not only_routines)
    if not units:
        return _err("nothing selected. Fix: check --ops/--dialect")
    mine = [u for i, u in enumerate(units) if i % count == index]
    try:
        name, note = _pick_backend(args.backend)
    except _UsageError as exc:
        return _err(str(exc))
    progress = (lambda s: None) if args.quiet else _progress(sys.stderr)
    if note:
        print(note, file=sys.stderr)
    out = Path(args.out)
    if not out.parent.is_dir() or not os.access(out.parent, os.W_OK):  # refuse now, not after the run
        return _err(f"cannot write the certificate to {out}: {out.parent} is not a writable directory. "
                    "Fix: create the directory or pass another --out")
    capsules = Path(args.capsules) if args.capsules else out.with_name(out.stem + "-capsules")
    removed = clear_capsules(capsules)  # an earlier run's capsules would read as this run's failures
    if removed:
        progress(f"removed {removed} capsule(s) of an earlier run from {capsules}")
    try:
        runner = make_runner(name)
    except CaseError as err:
        return _err(f"cannot start the {name} backend: {err}")
    if args.fuzz:
        return _fuzz(runner, registry, args.fuzz, args.seed, progress, capsules)
    started, t0 = _now(), time.perf_counter()
    try:
        conf = Conformance(runner, registry, seed=args.seed, cases=args.cases, capsule_dir=capsules)
        progress(f"certifying {name} ({runner.info.get('device')}): {len(mine)} of {len(units)} units "
                 f"(shard {index}/{count}), seed {args.seed}")
        results = run_units(conf, mine, len(mine), progress)
        if args.accuracy:
            measure_accuracy(runner, mine, results, args.accuracy, args.seed, progress)
        progress("")
    finally:
        runner.close()
    header = {
        "vyre_decl_version": __version__,
        "backend": runner.info,
        "registry_fingerprint": registry.fingerprint,
        "corpus_fingerprint": corpus_fingerprint(corpus) if with_programs else None,
        "seed": args.seed,
        "cases_per_op": args.cases,
        "accuracy_samples": args.accuracy,
        "selection": {"ops": sorted(args.ops), "dialects": sorted(args.dialect), "programs": with_programs,
                      "routines": sorted(args.routines) if with_routines else None},
        "units_total": len(units),
        "shard": f"{index}/{count}",
        "capsules": str(capsules),
        "started": started,
        "finished": _now(),
        "elapsed_s": round(time.perf_counter() - t0, 3),
    }
    return _finish(build(header, results), out, args.json)


def _fuzz(runner: Any, registry: Any, count: int, seed: int, progress: Any, capsules: Path) -> int:
    from .fuzzrun import run_fuzz

    t0 = time.perf_counter()
    try:
        ran, problems = run_fuzz(runner, registry, count, seed, progress, capsules)
    finally:
        runner.close()
    progress("")
    for line in problems:
        print(line)
    print(f"fuzz on {runner.name}: {ran} programs, {len(problems)} mismatches, {time.perf_counter() - t0:.1f} s")
    return 1 if problems else 0


def _progress(stream: Any) -> Any:
    """Progress lines: on a terminal one line rewritten in place, elsewhere one line each."""
    if not stream.isatty():
        return lambda s: print(s, file=stream, flush=True) if s else None

    def show(s: str) -> None:  # a failing unit keeps its line; "" clears the line for what follows
        print("\r\033[K" + s[:200], end="\n" if s.endswith("FAIL") else "", file=stream, flush=True)
    return show


def _finish(cert: dict[str, Any], out: Path, as_json: bool) -> int:
    """Write the certificate, show it, and give the exit status for its verdict."""
    out.write_text(json.dumps(cert, indent=1))
    if as_json:
        print(json.dumps(cert, indent=1))
    else:
        print(_table(cert))
        print(f"certificate: {out}")
    return 0 if cert["summary"]["verdict"] == "pass" else 1


def _merge(argv: Sequence[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m vyre_decl.conform merge")
    ap.add_argument("out")
    ap.add_argument("shards", nargs="+")
    args = ap.parse_args(argv)
    from .certificate import CertificateError, merge

    try:
        certs = [json.loads(Path(p).read_text()) for p in args.shards]
        cert = merge(certs)
    except (OSError, json.JSONDecodeError, KeyError) as exc:
        return _err(f"cannot read the shard certificates: {exc}")
    except CertificateError as exc:
        return _err(str(exc))
    return _finish(cert, Path(args.out), False)


def _replay(argv: Sequence[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m vyre_decl.conform replay")
    ap.add_argument("capsule")
    ap.add_argument("--backend", help="backend to replay on (default: the capsule's)")
    args = ap.parse_args(argv)
    from .capsule import read_capsule
    from .replay import ReplayError, replay

    try:
        program, inputs, grid, data = read_capsule(Path(args.capsule))
    except (OSError, ValueError, KeyError) as exc:
        return _err(f"cannot read {args.capsule}: {exc}")
    try:
        name, _ = _pick_backend(args.backend or data.get("backend", "auto"))
        return replay(program, inputs, grid, data, name)
    except (_UsageError, ReplayError) as exc:
        return _err(str(exc))


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] == "merge":
        return _merge(args[1:])
    if args and args[0] == "replay":
        return _replay(args[1:])
    return _run(args)
