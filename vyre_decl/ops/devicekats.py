"""``ops check``'s run of a user's routine known answers on a CUDA device: the GPU when there is
one, else the simulated H100 (``VYRE_DECL_CUDA_SIM``), in a child process.

The child is its own process because the driver library is chosen once per process: switching
the checking process to the simulated driver would change what ``cuda_available()`` says for
the rest of it (a test process, a notebook). ``python -m vyre_decl.ops.devicekats PATHS`` loads
the registry and routine files of PATHS as ``ops check`` does, runs every known answer of every
binding of their routines (the standard ones are the project's tests' business) on
``acquire("cuda")`` and prints one JSON object: the device's name, how many answers ran, and the
diagnostics (U025 naming file, routine, case and binding, as on the reference).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field, replace
from typing import Sequence

from ..ir.diagnostics import Diagnostic, VyreError
from ..libcuda import SIM_ENV

__all__ = ["DeviceKats", "run_device_kats", "main"]

SIMULATED_STAND_IN = "h100"  # the simulated device that stands in for a missing GPU
_TIMEOUT_S = 600.0


@dataclass
class DeviceKats:
    """What the child ran: on which device, how many known answers, what differed."""

    device: str = ""
    kats: int = 0
    diagnostics: list[Diagnostic] = field(default_factory=list)

    def summary(self) -> str:
        return f"{self.kats} routine known answer(s) run on {self.device}" if self.device else ""


def run_device_kats(paths: Sequence[str]) -> DeviceKats:
    """Run the known answers of the routines under ``paths`` on a CUDA device in a child process."""
    try:
        proc = subprocess.run([sys.executable, "-m", "vyre_decl.ops.devicekats", *paths], capture_output=True,
                              text=True, timeout=_TIMEOUT_S)
        found = json.loads(proc.stdout.strip().splitlines()[-1]) if proc.stdout.strip() else None
    except (subprocess.TimeoutExpired, OSError, ValueError) as exc:
        found, why = None, f"{type(exc).__name__}: {exc}"
    else:
        why = (proc.stderr.strip().splitlines() or ["no output"])[-1]
    if not isinstance(found, dict):
        return DeviceKats(diagnostics=[Diagnostic(
            "U025", f"the routine known answers could not run on a CUDA device: {why[:300]}", "ops check",
            "run `python -m vyre_decl.ops.devicekats PATHS` to see the whole failure", "warning")])
    diags = [Diagnostic(d["code"], d["message"], d["location"], d["fix"], d["severity"])  # type: ignore[arg-type]
             for d in found.get("diagnostics", [])]
    return DeviceKats(str(found.get("device", "")), int(found.get("kats", 0)), diags)


def _child(paths: Sequence[str]) -> DeviceKats:
    from ..backends import acquire
    from ..backends.cuda import cuda_available
    from ..registry import load
    from ..routines.loader import load_routines
    from .routinecheck import RoutineReport, check_routine, selected_routines

    if not os.environ.get(SIM_ENV, "").strip() and not cuda_available():
        os.environ[SIM_ENV] = SIMULATED_STAND_IN  # this process only: no GPU here, a simulated one stands in
    registry = load(list(paths), env=False)
    found, _ = load_routines(registry)  # load errors are the parent's to report
    mine = [d for d in selected_routines(found, registry, only_paths=True) if d.kats]
    if not mine:
        return DeviceKats()
    backend = acquire("cuda", registry=registry)
    device = str(getattr(getattr(backend, "device", None), "name", "a CUDA device"))
    ran = RoutineReport()  # the parent runs this child only when every binding compiled on the reference
    for d in mine:
        check_routine(d, registry, backend, ran)
    return DeviceKats(device, ran.kats, [replace(p, message=f"{p.message} (on {device})") for p in ran.diagnostics])


def main(argv: Sequence[str] | None = None) -> int:
    """The child: print the run as one JSON line (exit 0 even when answers differ: they are data)."""
    paths = list(sys.argv[1:] if argv is None else argv)
    try:
        report = _child(paths)
    except VyreError as exc:
        report = DeviceKats(diagnostics=list(exc.diagnostics))
    print(json.dumps({"device": report.device, "kats": report.kats,
                      "diagnostics": [d.as_dict() for d in report.diagnostics]}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
