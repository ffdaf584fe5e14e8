"""The records the PTX interpreter hands out: its two exceptions, kernel parameters and sanitizer
findings (re-exported by ``ptx.py``, the facade)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PtxError", "KernelFault", "KernelTimeout", "Param", "Finding", "FAULT_KINDS", "FINDING_KINDS"]

FAULT_KINDS = ("illegal_address", "misaligned_address", "illegal_instruction", "trap")
FINDING_KINDS = ("oob_shared", "shared_race", "divergent_barrier", "uninitialised_register", "approx", "warp_divergence",
                 "shfl_inactive_source", "oob_local", "uninitialised_local")


class PtxError(Exception):
    """Malformed or unsupported PTX (the driver's CUDA_ERROR_INVALID_PTX); ``line`` is 1-based
    (0 when the error concerns the module as a whole)."""

    def __init__(self, line: int, message: str) -> None:
        self.line, self.message = line, message
        super().__init__(f"line {line}: {message}" if line else message)


class KernelFault(Exception):
    """A fault that stops a kernel and, on hardware, poisons its context (a sticky error)."""

    def __init__(self, kind: str, kernel: str, line: int, detail: str) -> None:
        assert kind in FAULT_KINDS, kind
        self.kind, self.kernel, self.line, self.detail = kind, kernel, line, detail
        super().__init__(f"{kind} in kernel {kernel}, PTX line {line}: {detail}")


class KernelTimeout(Exception):
    """A kernel still running at the deadline given to Kernel.run (the driver's watchdog)."""

    def __init__(self, kernel: str, lane_instructions: int) -> None:
        self.kernel, self.lane_instructions = kernel, lane_instructions
        super().__init__(f"kernel {kernel} was still running at its deadline ({lane_instructions} lane-instructions)")


@dataclass(frozen=True, slots=True)
class Param:
    """A kernel parameter: its size, alignment and offset in the packed parameter buffer."""

    name: str
    nbytes: int
    align: int
    offset: int


@dataclass(frozen=True, slots=True)
class Finding:
    """One sanitizer report: ``kind`` is one of FINDING_KINDS; ``context`` holds the emitter's
    nearest preceding comments (the IR statement and the op template)."""

    kind: str
    kernel: str
    line: int
    instruction: str
    context: str
    message: str

    def __str__(self) -> str:
        where = f" [{self.context}]" if self.context else ""
        return f"{self.kind}: kernel {self.kernel}, PTX line {self.line}: {self.instruction}{where}: {self.message}"
