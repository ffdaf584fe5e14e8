"""``python -m vyre_decl.conform``: certify a backend against the reference.

    python -m vyre_decl.conform [--backend auto|cuda|reference|NAME] [--ops GLOB ...] [--dialect NAME ...]
                                [--programs DIR] [--routines GLOB] [--no-routines] [--seed N] [--cases N] [--shard I/N] [--out cert.json]
                                [--capsules DIR] [--accuracy [N]] [--json] [--quiet]
    python -m vyre_decl.conform [...] --devices all|0,1 | --dask ADDRESS|local:N [--shards N]
    python -m vyre_decl.conform fleet --dask ADDRESS|local:N [--out DIR] [selection options]
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
from pathlib import Path
from typing import Any, Sequence

__all__ = ["main"]


def _err(msg: str) -> int:
    print(f"error: {msg}", file=sys.stderr)
    return 2


class _UsageError(Exception):
    pass


def _pick_backend(name: str) -> tuple[str, str | None]:
    """(backend name, a note to print); _UsageError when it cannot run here."""
    from ..backends import list_backends

    infos = {b.name: b for b in list_backends()}
    base, colon, ordinal = name.partition(":")
    if colon:  # one device of a backend: cuda:1
        if not (ordinal.isascii() and ordinal.isdigit()) or base == "auto":
            raise _UsageError(f"bad backend {name!r}. Fix: write NAME:DEVICE, e.g. cuda:1")
        _pick_backend(base)  # an unknown or unavailable backend is refused here
        return name, None
    if name == "auto":
        for info in list_backends():
            if info.is_available():
                note = None if not info.defines_semantics else \
                    f"no GPU backend was found on this machine: certifying the {info.name} backend"
                return info.name, note
        return "reference", None
    if name not in infos:
        raise _UsageError(f"no backend named {name!r}. Fix: use one of auto, {', '.join(infos)}")
    if not infos[name].is_available():
        raise _UsageError(f"backend {name!r} is not available on this machine (no GPU or driver?). "
                          "Fix: run where it is available, or use --backend reference")
    return name, None


def _selection(ap: argparse.ArgumentParser) -> None:
    """The options saying what to certify and how (shared by a run and a fleet run)."""
    ap.add_argument("--backend", default="auto", help="auto (default), cuda, cuda:1 (one device), reference or a "
                    "registered backend")
    ap.add_argument("--ops", action="append", default=[], metavar="GLOB", help="only ops whose id matches (repeatable)")
    ap.add_argument("--dialect", action="append", default=[], help="only ops of this dialect (repeatable)")
    ap.add_argument("--programs", metavar="DIR", help="program corpus directory (default: the shipped corpus; "
                    "with --ops/--dialect programs run only when this is given)")
    ap.add_argument("--routines", action="append", default=[], metavar="GLOB",
                    help="only routines whose id matches (repeatable; with --ops/--dialect routines run only when given)")
    ap.add_argument("--no-routines", action="store_true", help="leave the routines out")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cases", type=int, default=1000, help="random cases per op x type (default 1000)")
    ap.add_argument("--accuracy", nargs="?", type=int, const=2000, default=0, metavar="N",
                    help="also measure each float function's error in ULP against mpmath on N sampled inputs "
                    "(default 2000) per op x type, failing where it exceeds the op's declared budget")
    ap.add_argument("--quiet", action="store_true", help="no progress on stderr")


def _spec(args: argparse.Namespace) -> Any:
    """The RunSpec of the parsed options; _UsageError for a bad value."""
    if args.cases < 0:
        raise _UsageError("--cases must be >= 0. Fix: pass a count >= 0 (0: known answers and laws only)")
    if args.accuracy < 0:
        raise _UsageError("--accuracy must be >= 0. Fix: pass a sample count >= 1, or leave --accuracy out")
    if args.accuracy:
        try:
            import mpmath  # type: ignore[import-untyped]  # noqa: F401 - a test dependency, needed only here
        except ImportError:
            raise _UsageError("--accuracy needs mpmath. Fix: pip install mpmath (a test dependency)") from None
    from .certify import RunSpec

    return RunSpec(ops=tuple(args.ops), dialects=tuple(args.dialect), programs=args.programs,
                   routines=tuple(args.routines), no_routines=args.no_routines, seed=args.seed, cases=args.cases,
                   accuracy=args.accuracy)


def _device_slots(backend: str, devices: str) -> list[str]:
    """``cuda:0``, ``cuda:1``, ... for ``--devices all`` or ``--devices 0,1``."""
    from ..backends import list_backends

    base = backend.partition(":")[0]
    infos = [i for i in list_backends() if i.is_available() and i.device_count() is not None]
    info = next((i for i in infos if i.name == base or base == "auto"), None)
    if info is None:
        raise _UsageError(f"--devices needs a backend with devices here, and {backend!r} is not one. "
                          "Fix: run on a machine with a GPU and use --backend cuda (or leave --backend out)")
    have = info.device_count() or 0
    if devices == "all":
        chosen = list(range(have))
    else:
        try:
            chosen = [int(d) for d in devices.split(",")]
        except ValueError:
            raise _UsageError(f"bad --devices {devices!r}. Fix: write all, or device numbers like 0,1") from None
        if len(set(chosen)) != len(chosen) or any(not 0 <= d < have for d in chosen):
            raise _UsageError(f"bad --devices {devices!r}: this machine has devices 0..{have - 1}, each named "
                              "once. Fix: write all, or distinct numbers of existing devices")
    if not chosen:
        raise _UsageError(f"the {info.name} backend sees no device here. Fix: check the driver (nvidia-smi)")
    return [f"{info.name}:{d}" for d in chosen]


def _parser() -> argparse.ArgumentParser:
    """The command line of a certification or fuzz run."""
    ap = argparse.ArgumentParser(prog="python -m vyre_decl.conform",
                                 description="Certify a backend against the reference semantics.",
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="other commands:\n"
                                        "  python -m vyre_decl.conform merge OUT SHARD.json ...   "
                                        "one certificate from the shards' certificates\n"
                                        "  python -m vyre_decl.conform replay CAPSULE.json [--backend NAME]   "
                                        "re-run one failed case\n"
                                        "  python -m vyre_decl.conform fleet --dask ADDRESS [--out DIR] ...   "
                                        "one certification per worker's device, side by side\n\n"
                                        "exit status: 0 all passed, 1 a failure, 2 a usage or environment error")
    _selection(ap)
    ap.add_argument("--shard", default="0/1", metavar="I/N", help="run the I-th of N shards (0-based)")
    ap.add_argument("--devices", metavar="all|0,1", help="run on these GPUs of this host at once, one worker process "
                    "each; a device that faults gives its shards to the others")
    ap.add_argument("--dask", metavar="ADDRESS", help="run the shards as tasks on the Dask cluster at ADDRESS "
                    "(tcp://HOST:8786), or on a new local one with local:N (N workers; pip install 'vyre-decl[dask]')")
    ap.add_argument("--shards", type=int, default=0, metavar="N",
                    help="with --devices or --dask: cut the run into N shards (default four per device or worker)")
    ap.add_argument("--out", default="vyre-certificate.json", help="certificate path (default vyre-certificate.json)")
    ap.add_argument("--capsules", help="directory for replay capsules (default: next to the certificate)")
    ap.add_argument("--fuzz", type=int, default=0, metavar="N",
                    help="instead of certifying: run N generated programs on the backend and the reference and "
                    "compare them bit for bit (seeds from --seed); mismatches become replay capsules")
    ap.add_argument("--json", action="store_true", help="print the certificate on stdout instead of the table")
    return ap


def _shard_of(args: argparse.Namespace) -> tuple[int, int] | int:
    """(index, count) of --shard, or the exit status of a usage error in the options."""
    try:
        index, count = (int(x) for x in args.shard.split("/"))
        if not 0 <= index < count:
            raise ValueError
    except ValueError:
        return _err(f"bad --shard {args.shard!r}. Fix: write I/N with 0 <= I < N, e.g. 0/4")
    if args.fuzz < 0:
        return _err("--fuzz must be >= 0. Fix: pass how many programs to generate, >= 1")
    if args.shards < 0:
        return _err("--shards must be >= 0. Fix: pass how many shards to cut the run into, or 0 for four per device")
    spread = [opt for opt, v in (("--devices", args.devices), ("--dask", args.dask)) if v]
    clash = spread[1:] + [opt for opt, v in (("--shard", count > 1), ("--fuzz", args.fuzz)) if v and spread]
    if clash:
        return _err(f"{spread[0]} cannot be combined with {clash[0]}. Fix: leave one of them out")
    if args.shards and not spread:
        return _err("--shards goes with --devices or --dask. Fix: use --shard I/N to run one shard yourself")
    return index, count


def _run(argv: Sequence[str]) -> int:
    args = _parser().parse_args(argv)
    shard = _shard_of(args)
    if isinstance(shard, int):
        return shard
    index, count = shard

    from .capsule import clear_capsules
    from .certify import SetupError, certify, plan

    try:
        spec = _spec(args)
        the_plan = plan(spec)
        if args.dask:
            name, note = args.backend, None  # the workers' machines decide what runs there
        elif args.devices:
            name, note = args.backend, None
            slots = _device_slots(args.backend, args.devices)
        else:
            name, note = _pick_backend(args.backend)
    except (_UsageError, SetupError) as exc:
        return _err(str(exc))
    if the_plan.registry.errors:
        for d in the_plan.registry.errors:
            print(d, file=sys.stderr)
        print("warning: some op files were rejected (see above); their ops are not certified", file=sys.stderr)
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
    if args.fuzz:
        return _fuzz(name, the_plan.registry, args.fuzz, args.seed, progress, capsules)
    if args.devices or args.dask:
        return _spread(args, spec, slots if args.devices else [], out, capsules, progress)
    try:
        cert = certify(spec, name, index, count, capsules, progress, the_plan)
    except SetupError as exc:
        return _err(str(exc))
    return _finish(cert, out, args.json)


def _spread(args: argparse.Namespace, spec: Any, slots: list[str], out: Path, capsules: Path, progress: Any) -> int:
    """A run on several devices of this host, or on a Dask cluster: shards, merged."""
    from .cluster import ClusterError, certify_on_dask, cluster_backend, connect
    from .devicepool import PoolError, certify_on_slots

    try:
        if slots:
            progress(f"certifying on {len(slots)} devices: {', '.join(slots)}")
            run = certify_on_slots(spec, slots, args.shards or None, progress)
        else:
            with connect(args.dask, args.backend) as client:
                backend = cluster_backend(client, args.backend)
                progress(f"certifying {backend} on the Dask cluster {args.dask}")
                run = certify_on_dask(client, spec, backend, args.shards or None, progress)
    except (PoolError, ClusterError) as exc:
        return _err(str(exc))
    if run.capsules:
        capsules.mkdir(parents=True, exist_ok=True)
        for file_name, text in run.capsules.items():
            (capsules / file_name).write_text(text)
    run.certificate["capsules"] = str(capsules)
    for fault in run.faults:
        print(f"fault: {fault['slot']} on shard {fault['shard']}: {fault['message']}", file=sys.stderr)
    return _finish(run.certificate, out, args.json)


def _fleet(argv: Sequence[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m vyre_decl.conform fleet",
                                 description="One certification on every Dask worker's device; a report of which "
                                 "device and driver fails which unit (text, JSON and a standalone HTML page).")
    ap.add_argument("--dask", required=True, metavar="ADDRESS", help="the cluster: tcp://HOST:8786 or local:N")
    ap.add_argument("--out", default="vyre-fleet", metavar="DIR",
                    help="directory for fleet.json, fleet.html and each device's certificate (default vyre-fleet)")
    _selection(ap)
    args = ap.parse_args(argv)
    from .certify import now
    from .cluster import ClusterError, cluster_backend, connect, fleet_certificates
    from .fleet import fleet_html, fleet_report, fleet_table

    out = Path(args.out)
    try:
        spec = _spec(args)
        out.mkdir(parents=True, exist_ok=True)
    except _UsageError as exc:
        return _err(str(exc))
    except OSError as exc:
        return _err(f"cannot create the report directory {out}: {exc}. Fix: pass another --out")
    progress = (lambda s: None) if args.quiet else _progress(sys.stderr)
    started = now()
    try:
        with connect(args.dask, args.backend) as client:
            results = fleet_certificates(client, spec, cluster_backend(client, args.backend), progress)
    except ClusterError as exc:
        return _err(str(exc))
    for i, result in enumerate(results):
        if result.get("certificate") is not None:
            result["certificate"]["capsules"] = str(out / f"capsules-{i}")
            (out / f"certificate-{i}.json").write_text(json.dumps(result["certificate"], indent=1))
        for file_name, text in result.get("capsules", {}).items():
            (out / f"capsules-{i}").mkdir(exist_ok=True)
            (out / f"capsules-{i}" / file_name).write_text(text)
    report = fleet_report(results, started, now())
    (out / "fleet.json").write_text(json.dumps(report, indent=1))
    (out / "fleet.html").write_text(fleet_html(report))
    print(fleet_table(report))
    print(f"fleet report: {out / 'fleet.json'}, {out / 'fleet.html'}")
    return 0 if report["verdict"] == "pass" else 1


def _fuzz(backend: str, registry: Any, count: int, seed: int, progress: Any, capsules: Path) -> int:
    from .fuzzrun import run_fuzz
    from .isolation import SELF_CONSISTENCY, CaseError, is_reference, make_runner

    try:
        runner = make_runner(backend)
    except CaseError as err:
        return _err(f"cannot start the {backend} backend: {err}")
    t0 = time.perf_counter()
    try:
        ran, problems = run_fuzz(runner, registry, count, seed, progress, capsules)
    finally:
        runner.close()
    progress("")
    for line in problems:
        print(line)
    self_check = f" ({SELF_CONSISTENCY}: the reference against itself, no backend tested)" if is_reference(backend) else ""
    print(f"fuzz on {runner.name}{self_check}: {ran} programs, {len(problems)} mismatches, "
          f"{time.perf_counter() - t0:.1f} s")
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
        from .report import certificate_table

        print(certificate_table(cert))
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
    if args and args[0] == "fleet":
        return _fleet(args[1:])
    return _run(args)
