"""The simulated GPUs: one ``Profile`` per product, with the attributes the CUDA driver reports for
it (``cuDeviceGetAttribute``, ``cuDeviceGetName``, ``cuDeviceTotalMem``) and the per-SM limits the
occupancy calculator uses.

Values are those of the CUDA programming guide's table of technical specifications per compute
capability (threads, blocks, warps, registers and shared memory per SM and per block) and of the
product (SM count, clocks, memory bus, memory size as ``nvidia-smi`` reports it, name as
``nvidia-smi`` shows it). Every profile reports driver version 13000 (CUDA 13.0), which accepts
PTX ISA up to 9.0.

An attribute the table does not hold is not guessed: ``cuDeviceGetAttribute`` answers
CUDA_ERROR_INVALID_VALUE for it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

__all__ = ["Profile", "PROFILES", "DRIVER_VERSION", "MAX_PTX_ISA", "ATTRIBUTES", "profile"]

DRIVER_VERSION: Final = 13000  # cuDriverGetVersion: 1000 * major + 10 * minor
MAX_PTX_ISA: Final = (9, 0)  # the newest PTX ISA version CUDA 13.0's JIT accepts
_MIB: Final = 1 << 20

# CUdevice_attribute numbers (cuda.h) -> Profile field (or a constant shared by every profile)
ATTRIBUTES: Final[dict[int, str]] = {
    1: "max_threads_per_block", 2: "max_block_x", 3: "max_block_y", 4: "max_block_z",
    5: "max_grid_x", 6: "max_grid_y", 7: "max_grid_z", 8: "shared_per_block", 9: "constant_memory",
    10: "warp_size", 11: "max_pitch", 12: "registers_per_block", 13: "clock_khz", 14: "texture_alignment",
    15: "one", 16: "multiprocessors", 17: "zero", 18: "zero", 19: "one", 20: "zero",
    31: "one", 32: "one", 35: "zero", 36: "memory_clock_khz", 37: "memory_bus_bits", 38: "l2_bytes",
    39: "max_threads_per_sm", 41: "one", 75: "cc_major", 76: "cc_minor", 78: "one", 79: "one", 80: "one",
    81: "shared_per_sm", 82: "registers_per_sm", 83: "one", 84: "zero", 89: "one",
    95: "cooperative_launch", 97: "shared_per_block_optin", 106: "max_blocks_per_sm",
    111: "reserved_shared_per_block",
}


@dataclass(frozen=True)
class Profile:
    """One simulated GPU product."""

    key: str  # the name in VYRE_DECL_CUDA_SIM
    name: str  # cuDeviceGetName, as nvidia-smi shows it
    cc_major: int
    cc_minor: int
    multiprocessors: int
    max_threads_per_sm: int
    max_blocks_per_sm: int
    shared_per_block_optin: int  # bytes a block may use after cuFuncSetAttribute opts in
    shared_per_sm: int
    reserved_shared_per_block: int  # shared memory the system keeps per resident block
    total_memory: int  # bytes, cuDeviceTotalMem
    clock_khz: int
    memory_clock_khz: int
    memory_bus_bits: int
    l2_bytes: int
    max_threads_per_block: int = 1024
    max_block_x: int = 1024
    max_block_y: int = 1024
    max_block_z: int = 64
    max_grid_x: int = 2**31 - 1
    max_grid_y: int = 65535
    max_grid_z: int = 65535
    shared_per_block: int = 48 * 1024  # without opting in (static shared memory limit too)
    warp_size: int = 32
    registers_per_block: int = 65536
    registers_per_sm: int = 65536
    max_registers_per_thread: int = 255
    constant_memory: int = 65536
    max_pitch: int = 2**31 - 1
    texture_alignment: int = 512
    cooperative_launch: int = 1
    one: int = field(default=1, repr=False)
    zero: int = field(default=0, repr=False)

    @property
    def sm(self) -> int:
        """The compute capability as a number: 90 for 9.0."""
        return self.cc_major * 10 + self.cc_minor

    @property
    def max_block(self) -> tuple[int, int, int]:
        return (self.max_block_x, self.max_block_y, self.max_block_z)

    @property
    def max_grid(self) -> tuple[int, int, int]:
        return (self.max_grid_x, self.max_grid_y, self.max_grid_z)

    def attribute(self, number: int) -> int | None:
        """The value of CUdevice_attribute ``number``; None for one not modelled."""
        name = ATTRIBUTES.get(number)
        return None if name is None else int(getattr(self, name))

    def memory_bandwidth(self) -> float:
        """Device memory bandwidth in bytes per nanosecond (double data rate)."""
        return self.memory_clock_khz * 1e3 * 2 * (self.memory_bus_bits // 8) / 1e9


PROFILES: Final[dict[str, Profile]] = {
    p.key: p for p in (
        Profile("h100", "NVIDIA H100 80GB HBM3", 9, 0, multiprocessors=132, max_threads_per_sm=2048,
                max_blocks_per_sm=32, shared_per_block_optin=227 * 1024, shared_per_sm=228 * 1024,
                reserved_shared_per_block=1024, total_memory=81559 * _MIB, clock_khz=1980000,
                memory_clock_khz=2619000, memory_bus_bits=5120, l2_bytes=50 * _MIB),
        Profile("h200", "NVIDIA H200", 9, 0, multiprocessors=132, max_threads_per_sm=2048,
                max_blocks_per_sm=32, shared_per_block_optin=227 * 1024, shared_per_sm=228 * 1024,
                reserved_shared_per_block=1024, total_memory=143771 * _MIB, clock_khz=1980000,
                memory_clock_khz=3201000, memory_bus_bits=6144, l2_bytes=50 * _MIB),
        Profile("a100", "NVIDIA A100-SXM4-80GB", 8, 0, multiprocessors=108, max_threads_per_sm=2048,
                max_blocks_per_sm=32, shared_per_block_optin=163 * 1024, shared_per_sm=164 * 1024,
                reserved_shared_per_block=1024, total_memory=81920 * _MIB, clock_khz=1410000,
                memory_clock_khz=1593000, memory_bus_bits=5120, l2_bytes=40 * _MIB),
        Profile("l4", "NVIDIA L4", 8, 9, multiprocessors=58, max_threads_per_sm=1536,
                max_blocks_per_sm=24, shared_per_block_optin=99 * 1024, shared_per_sm=100 * 1024,
                reserved_shared_per_block=1024, total_memory=23034 * _MIB, clock_khz=2040000,
                memory_clock_khz=6251000, memory_bus_bits=192, l2_bytes=48 * _MIB),
        Profile("t4", "Tesla T4", 7, 5, multiprocessors=40, max_threads_per_sm=1024,
                max_blocks_per_sm=16, shared_per_block_optin=64 * 1024, shared_per_sm=64 * 1024,
                reserved_shared_per_block=0, total_memory=15360 * _MIB, clock_khz=1590000,
                memory_clock_khz=5001000, memory_bus_bits=256, l2_bytes=4 * _MIB),
    )
}


def profile(key: str) -> Profile:
    """The profile named ``key`` (case and surrounding spaces ignored); ValueError naming the
    known ones otherwise."""
    found = PROFILES.get(key.strip().lower())
    if found is None:
        raise ValueError(f"unknown simulated GPU profile {key!r} in VYRE_DECL_CUDA_SIM; known profiles: "
                         f"{', '.join(PROFILES)} (several separated by commas, e.g. 'h100,t4')")
    return found
