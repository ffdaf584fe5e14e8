"""Choosing the PTX ISA version and ``.target`` for a device and driver.

The ``.target`` is the device's compute capability (or the newest one we know below it: PTX for
an older target JIT-compiles on newer GPUs). The ISA version is the lowest one that knows the
target and the instructions we emit, so the module loads on every driver new enough for it; a
driver too old for that version is refused up front with a clear message, instead of
CUDA_ERROR_UNSUPPORTED_PTX_VERSION at load time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Final

from ..ir.diagnostics import VyreError

__all__ = ["Target", "choose_target", "target_candidates", "pick_target", "probe_module", "parse_target", "driver_max_ptx", "EMITTER_CONTRACT", "MIN_SM", "DEFAULT_TARGET"]

# Changes whenever a lowering rule changes (it is part of every PTX cache key).
EMITTER_CONTRACT: Final = "vyre_decl.ptx/6"

# Lowest compute capability we emit for (CUDA 13's ptxas no longer assembles for sm_70). Below
# sm_80, bf16 stores are rounded with integer instructions and op templates that need sm_80 give
# way to the op's compose definition (see registry/templates.py NEEDS_SM).
MIN_SM: Final = 75
# Lowest PTX ISA version our own instructions need (cvt.rn.bf16.f32: PTX 7.0).
MIN_FEATURE_ISA: Final = (7, 0)

# compute capability -> (target name, first PTX ISA version that knows it)
_SM_TABLE: Final = {
    75: ("sm_75", (6, 3)),
    80: ("sm_80", (7, 0)),
    86: ("sm_86", (7, 1)),
    87: ("sm_87", (7, 4)),
    89: ("sm_89", (7, 8)),
    90: ("sm_90", (7, 8)),
    100: ("sm_100", (8, 6)),
    101: ("sm_101", (8, 6)),
    120: ("sm_120", (8, 7)),
}

# CUDA driver API version (cuDriverGetVersion: 1000*major + 10*minor) -> newest PTX ISA it accepts
_DRIVER_TABLE: Final = (
    (11000, (7, 0)), (11010, (7, 1)), (11020, (7, 2)), (11030, (7, 3)), (11040, (7, 4)), (11050, (7, 5)),
    (11060, (7, 6)), (11070, (7, 7)), (11080, (7, 8)), (12000, (8, 0)), (12010, (8, 1)), (12020, (8, 2)),
    (12030, (8, 3)), (12040, (8, 4)), (12050, (8, 5)), (12060, (8, 5)), (12080, (8, 7)), (12090, (8, 8)),
    (13000, (9, 0)),
)

DEFAULT_TARGET: Final = "sm_90"
_WARP_SIZE: Final = 32  # threads of a warp on every CUDA GPU (a target's subgroup size)


@dataclass(frozen=True, slots=True)
class Target:
    """``.version`` and ``.target`` of an emitted module."""

    sm: int  # e.g. 90
    isa: tuple[int, int]  # e.g. (7, 8)

    @property
    def name(self) -> str:
        return f"sm_{self.sm}"

    @property
    def version(self) -> str:
        return f"{self.isa[0]}.{self.isa[1]}"

    @property
    def subgroup_size(self) -> int:
        """The lanes of a subgroup on this target: a warp, 32 on every CUDA GPU. The emitter refuses
        a program with collective ops where it differs from the IR's SUBGROUP_SIZE (E006)."""
        return _WARP_SIZE

    def __str__(self) -> str:
        return f"PTX {self.version} {self.name}"


def driver_max_ptx(driver_version: int) -> tuple[int, int]:
    """Newest PTX ISA a driver of this version JIT-compiles (newer drivers: the newest we know)."""
    best = None
    for version, isa in _DRIVER_TABLE:
        if driver_version >= version:
            best = isa
    if best is None:
        raise VyreError.one("E001", f"CUDA driver version {driver_version} is older than CUDA 11.0", "driver",
                            "update the NVIDIA driver")
    return best


def _isa_for(sm: int) -> tuple[int, int]:
    known = [k for k in _SM_TABLE if k <= sm]
    if sm < MIN_SM or not known:
        raise VyreError.one("E002", f"compute capability {sm // 10}.{sm % 10} is below the supported minimum "
                            f"{MIN_SM // 10}.{MIN_SM % 10}", "target", "use a Turing (sm_75) or newer GPU")
    return max(_SM_TABLE[max(known)][1], MIN_FEATURE_ISA)


def parse_target(text: str) -> int:
    """The compute capability in ``sm_90`` / ``90`` / ``9.0``."""
    t = text.strip().lower().removeprefix("sm_").removesuffix("a")
    try:
        sm = int(float(t) * 10) if "." in t else int(t)
    except ValueError:
        raise VyreError.one("E003", f"bad target {text!r}", "target", "write e.g. sm_90") from None
    return sm


def choose_target(driver_version: int | None = None, compute_capability: tuple[int, int] | int | str | None = None) -> Target:
    """The target for a device of ``compute_capability`` ((9, 0), 90 or "sm_90"; default sm_90) and a
    driver of ``driver_version`` (cuDriverGetVersion; None = no driver check)."""
    if compute_capability is None:
        compute_capability = DEFAULT_TARGET
    if isinstance(compute_capability, tuple):
        sm = compute_capability[0] * 10 + compute_capability[1]
    elif isinstance(compute_capability, str):
        sm = parse_target(compute_capability)
    else:
        sm = int(compute_capability)
    known = max(k for k in _SM_TABLE if k <= sm) if sm >= MIN_SM else sm
    isa = _isa_for(sm)
    if driver_version is not None:
        limit = driver_max_ptx(driver_version)
        if isa > limit:
            raise VyreError.one(
                "E004",
                f"sm_{known} needs PTX ISA {isa[0]}.{isa[1]} but this driver ({driver_version // 1000}."
                f"{driver_version % 1000 // 10}) accepts at most {limit[0]}.{limit[1]}",
                "driver",
                "update the NVIDIA driver",
            )
    return Target(known, isa)


def target_candidates(driver_version: int | None, compute_capability: tuple[int, int]) -> list[Target]:
    """Targets to try on a device, best first: ``choose_target``'s, then each older target we know
    whose PTX ISA the driver accepts (PTX for an older target JIT-compiles on a newer GPU)."""
    sm = compute_capability[0] * 10 + compute_capability[1]
    _isa_for(sm)  # E002 below the minimum
    limit = driver_max_ptx(driver_version) if driver_version is not None else None
    out = []
    for known in sorted((k for k in _SM_TABLE if k <= sm), reverse=True):
        isa = max(_SM_TABLE[known][1], MIN_FEATURE_ISA)
        if limit is None or isa <= limit:
            out.append(Target(known, isa))
    return out


def pick_target(driver_version: int | None, compute_capability: tuple[int, int],
                loads: Callable[[Target], bool]) -> Target:
    """The first of ``target_candidates`` that ``loads`` (a test load of a tiny module on the
    device) accepts; if none does, ``choose_target``'s error (or E004 when it had none)."""
    for target in target_candidates(driver_version, compute_capability):
        if loads(target):
            return target
    best = choose_target(driver_version, compute_capability)  # raises when the tables say why
    raise VyreError.one("E004", f"the driver loads no PTX we can emit for compute capability "
                        f"{compute_capability[0]}.{compute_capability[1]} (tried down from {best})", "driver",
                        "update the NVIDIA driver")


def probe_module(target: Target) -> str:
    """The smallest module of ``target``: what a test load JIT-compiles."""
    return f".version {target.version}\n.target {target.name}\n.address_size 64\n.visible .entry probe()\n{{\n  ret;\n}}\n"
