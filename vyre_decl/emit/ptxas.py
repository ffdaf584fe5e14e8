"""The PTX assembler (ptxas) as a checker, and PTX error reports that point at their source.

``find_ptxas`` looks at ``VYRE_DECL_PTXAS``, then NVIDIA's ``nvidia-cuda-nvcc`` wheel, then
``PATH``. ``explain`` turns an assembler log (from ptxas or from the driver's JIT) into a report
with the offending PTX line in context and the IR statement / op template that produced it.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..ir.diagnostics import Diagnostic, VyreError

__all__ = ["find_ptxas", "assemble", "explain", "PtxasResult", "PTXAS_ENV"]

PTXAS_ENV = "VYRE_DECL_PTXAS"
_LINE_RE = re.compile(r"line (\d+)")


def find_ptxas() -> str | None:
    """Path of a ptxas binary, or None."""
    explicit = os.environ.get(PTXAS_ENV)
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    spec = importlib.util.find_spec("nvidia")
    for root in (spec.submodule_search_locations or []) if spec else []:
        for candidate in sorted(Path(root).glob("cu*/bin/ptxas"), reverse=True) + [Path(root) / "cuda_nvcc/bin/ptxas"]:
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return str(candidate)
    return shutil.which("ptxas")


def explain(ptx: str, log: str, context: int = 3) -> str:
    """The assembler log, followed for each line it names by that PTX line with ``context`` lines
    around it, and the IR statement and op template that emitted it."""
    lines = ptx.splitlines()
    parts = [log.strip()]
    for n in sorted({int(m) for m in _LINE_RE.findall(log)})[:5]:
        if not 1 <= n <= len(lines):
            continue
        lo, hi = max(1, n - context), min(len(lines), n + context)
        shown = [f"{'>>' if i == n else '  '} {i:5d} | {lines[i - 1]}" for i in range(lo, hi + 1)]
        origin = [ln.strip()[3:] for ln in reversed(lines[: n - 1]) if ln.strip().startswith("// ")]
        op = next((o for o in origin if o.startswith("op ") or o.startswith("inline ")), None)
        stmt = next((o for o in origin if o.startswith("body")), None)
        where = "; ".join(x for x in (f"from {op}" if op else "", f"in {stmt}" if stmt else "") if x)
        parts.append(f"PTX line {n}{' (' + where + ')' if where else ''}:\n" + "\n".join(shown))
    return "\n".join(parts)


@dataclass(frozen=True)
class PtxasResult:
    arch: str
    ok: bool
    log: str


def assemble(ptx: str, arch: str = "sm_90", ptxas: str | None = None, check: bool = True,
             optimize: bool = True) -> PtxasResult:
    """Assemble ``ptx`` for ``arch`` with ptxas (output discarded). With ``check``, a failure
    raises VyreError E010 carrying the explained log. Without ``optimize`` (``-O0``) ptxas still
    checks everything the PTX says, in about a third less time (a test of many kernels)."""
    exe = ptxas or find_ptxas()
    if exe is None:
        raise VyreError.one("E011", "ptxas was not found", "ptxas",
                            f"pip install nvidia-cuda-nvcc, put ptxas on PATH, or set {PTXAS_ENV}")
    with tempfile.TemporaryDirectory(prefix="vyre_ptxas_") as tmp:
        src = Path(tmp) / "kernel.ptx"
        src.write_text(ptx)
        proc = subprocess.run([exe, f"-arch={arch}", *([] if optimize else ["-O0"]), str(src), "-o",
                               str(Path(tmp) / "kernel.cubin")],
                              capture_output=True, text=True)
    log = (proc.stdout + proc.stderr).replace(str(src), "kernel.ptx")
    result = PtxasResult(arch, proc.returncode == 0, log)
    if check and not result.ok:
        raise VyreError(Diagnostic("E010", "ptxas rejected the emitted PTX:\n" + explain(ptx, log), f"ptxas -arch={arch}",
                                   "this is an emitter or op-template bug: report it with the PTX above"))
    return result
