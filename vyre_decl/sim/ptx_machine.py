"""The state of a group of thread blocks running together: one numpy vector of lanes per register
(raw bits, never modified in place), shared memory per block, local memory per lane, special
registers, the carry flag, and the sanitizer's bookkeeping (which lanes wrote which register,
the findings so far). Instruction semantics read and write through this object."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional

import numpy as np

from .memory import DeviceMemory
from .ptx_ast import Instr
from .ptx_types import Finding, KernelFault

__all__ = ["PTYPES", "PType", "Machine", "Mask", "Reader", "Writer", "Fn", "storage_dtype"]

Mask = Optional[np.ndarray]  # None: every lane of the group runs; else a bool vector of lanes
Reader = Callable[["Machine", Mask], Any]
Writer = Callable[["Machine", Any, Mask], None]
Fn = Callable[["Machine", Mask], None]


@dataclass(frozen=True, slots=True)
class PType:
    name: str
    kind: str  # b u s f bf pred
    bits: int
    dtype: np.dtype


def _t(name: str, kind: str, bits: int, dt: Any) -> tuple[str, PType]:
    return name, PType(name, kind, bits, np.dtype(dt))


PTYPES: dict[str, PType] = dict([
    _t("pred", "pred", 1, np.bool_),
    _t("b8", "b", 8, np.uint8), _t("u8", "u", 8, np.uint8), _t("s8", "s", 8, np.int8),
    _t("b16", "b", 16, np.uint16), _t("u16", "u", 16, np.uint16), _t("s16", "s", 16, np.int16),
    _t("f16", "f", 16, np.float16), _t("bf16", "bf", 16, np.uint16),
    _t("b32", "b", 32, np.uint32), _t("u32", "u", 32, np.uint32), _t("s32", "s", 32, np.int32),
    _t("f32", "f", 32, np.float32), _t("f16x2", "b", 32, np.uint32), _t("bf16x2", "b", 32, np.uint32),
    _t("b64", "b", 64, np.uint64), _t("u64", "u", 64, np.uint64), _t("s64", "s", 64, np.int64),
    _t("f64", "f", 64, np.float64),
])

_STORAGE = {1: np.dtype(np.bool_), 8: np.dtype(np.uint8), 16: np.dtype(np.uint16), 32: np.dtype(np.uint32),
            64: np.dtype(np.uint64)}


def storage_dtype(bits: int) -> np.dtype:
    return _STORAGE[bits]


SHARED_FILL = 0xA5  # every byte of a block's shared memory when the block starts


class Machine:
    """Lanes ``0..n-1`` of ``blocks`` consecutive thread blocks of ``threads`` lanes each."""

    def __init__(self, kernel: str, reg_bits: list[int], n_blocks: int, threads: int, memory: DeviceMemory,
                 params: bytes, shared_bytes: int, local_bytes: int, sanitize: bool) -> None:
        self.kernel = kernel
        self.n = n = n_blocks * threads
        self.blocks, self.threads = n_blocks, threads
        zeros = {b: np.zeros(n, dtype=_STORAGE[b]) for b in set(reg_bits)}  # shared: never written in place
        self.regs: list[np.ndarray] = [zeros[b] for b in reg_bits]
        self.memory, self.params = memory, params
        # hardware's shared memory starts holding whatever an earlier block left: a pattern, not 0,
        # so a kernel that reads workgroup memory it never zeroed differs from the reference here too
        self.shared = np.full((n_blocks, shared_bytes), SHARED_FILL, dtype=np.uint8)
        self.local = np.zeros((n, local_bytes), dtype=np.uint8)
        # which local bytes each lane has written (sanitizer): hardware's local memory starts undefined
        self.local_written = np.zeros((n, local_bytes), dtype=np.bool_) if sanitize else None
        self.special: dict[str, np.ndarray] = {}
        self.carry = np.zeros(n, dtype=np.uint64)
        self.block_of = np.repeat(np.arange(n_blocks, dtype=np.int64), threads)
        self.sanitize = sanitize
        # per register: True (every lane wrote it), None (no lane did) or a bool vector of lanes
        self.init: list[Any] | None = [None] * len(reg_bits) if sanitize else None
        self.findings: dict[tuple[str, int], Finding] = {}
        self.instr: Instr | None = None  # the instruction running (for findings and faults)
        self.race: Any = None  # the shared-memory race tracker (ptx_sanitize), when sanitizing
        self.steps = 0  # lane-instructions executed
        self.block_base = 0  # the linear grid index of this group's first block
        self.alive: np.ndarray | None = None  # lanes that have not exited (set by ptx_exec while running)
        self.warps: Any = None  # where each lane sits in its warp (ptx_warp, computed when first needed)

    # --- registers
    def put(self, i: int, value: Any, mask: Mask) -> None:
        """Write raw bits ``value`` (storage dtype, a vector or a scalar) to register ``i``."""
        old = self.regs[i]
        if mask is None:
            if np.ndim(value) == 0:
                value = np.full(self.n, value, dtype=old.dtype)
            self.regs[i] = value
        else:
            self.regs[i] = np.where(mask, value, old)
        if self.init is not None:
            self.wrote(i, mask)

    def wrote(self, i: int, mask: Mask) -> None:
        assert self.init is not None
        seen = self.init[i]
        if seen is True:
            return
        if mask is None:
            self.init[i] = True
        else:
            self.init[i] = mask.copy() if seen is None else (seen | mask)

    def check_init(self, i: int, mask: Mask, name: str) -> None:
        assert self.init is not None
        seen = self.init[i]
        if seen is True:
            return
        if seen is None:
            missing = True
        else:
            missing = bool((~seen).any() if mask is None else (mask & ~seen).any())
        if missing:
            self.report("uninitialised_register", f"{name} is read before any instruction wrote it"
                        + ("" if seen is None else " in some of the lanes reading it"))
            self.init[i] = True  # reported once; the lanes read 0

    # --- findings and faults
    def report(self, kind: str, message: str) -> None:
        ins = self.instr
        line = ins.line if ins is not None else 0
        if (kind, line) not in self.findings:
            self.findings[(kind, line)] = Finding(kind, self.kernel, line, ins.text if ins else "",
                                                  ins.context if ins else "", message)

    def fault(self, kind: str, detail: str) -> KernelFault:
        ins = self.instr
        where = f" ({ins.text})" if ins is not None else ""
        return KernelFault(kind, self.kernel, ins.line if ins is not None else 0, detail + where)

    # --- lanes
    def lanes(self, mask: Mask) -> np.ndarray | slice:
        """An index selecting the active lanes."""
        return slice(None) if mask is None else np.flatnonzero(mask)

    def count(self, mask: Mask) -> int:
        return self.n if mask is None else int(np.count_nonzero(mask))
