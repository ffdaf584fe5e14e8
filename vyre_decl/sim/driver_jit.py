"""What the simulated driver's JIT does with an image: read it from the caller's memory, tell PTX
from a simulated cubin, check ``.version``/``.target`` against the driver and the device, parse
it with the PTX interpreter (vyre_decl.sim.ptx), and write the JIT logs where the caller's
options point, as ``cuModuleLoadDataEx`` and ``cuLink*`` do.

A *simulated cubin* is what ``cuLinkComplete`` returns: ``CUBIN_MAGIC``, the compute capability
it was linked for and the PTX length (two little-endian u32), then the PTX text. Loading it on a
device of another compute capability is CUDA_ERROR_NO_BINARY_FOR_GPU, as a real cubin would be.
A real cubin (ELF) or fatbinary is CUDA_ERROR_NO_BINARY_FOR_GPU too: the simulator runs PTX.

Logs follow ptxas' form (``ptxas application ptx input, line N; error   : ...``), so callers that
point at the named line (vyre_decl.emit.explain) work unchanged.
"""

from __future__ import annotations

import ctypes
import importlib
import re
import struct
import traceback
from ctypes import c_int, c_void_p
from dataclasses import dataclass
from typing import Any, Final

from .driver_errors import (INVALID_IMAGE, INVALID_PTX, INVALID_VALUE, JIT_COMPILER_NOT_FOUND, NO_BINARY_FOR_GPU,
                            UNSUPPORTED_PTX_VERSION, DriverError)
from .profiles import MAX_PTX_ISA, Profile

__all__ = ["CUBIN_MAGIC", "JitOptions", "JitError", "read_image", "compile_ptx", "make_cubin", "info_log",
           "invalid_image"]

CUBIN_MAGIC: Final = b"VYRESIM-CUBIN\x00\x01\x00"  # 16 bytes
_HEADER: Final = struct.Struct("<II")  # compute capability (e.g. 90), PTX length
_ELF, _FATBIN = b"\x7fELF", b"\x50\xed\x55\xba"
_INFO_BUF, _INFO_SIZE, _ERROR_BUF, _ERROR_SIZE, _VERBOSE = 3, 4, 5, 6, 12
_NUM_OPTIONS: Final = 34  # CU_JIT_NUM_OPTIONS (CUDA 13.0)
_VERSION_RE = re.compile(r"^\s*\.version\s+(\d+)\.(\d+)", re.M)
_TARGET_RE = re.compile(r"^\s*\.target\s+sm_(\d+)([af]?)", re.M)


class JitError(DriverError):
    """A JIT failure: the code and the error log the caller's buffer receives."""

    def __init__(self, code: int, log: str) -> None:
        self.log = log
        super().__init__(code, log)


@dataclass
class JitOptions:
    """The options of a cuModuleLoadDataEx / cuLinkCreate call: option -> (index, value), and
    the caller's values array (sizes are written back into it)."""

    values: dict[int, tuple[int, int]]
    array: int

    @classmethod
    def read(cls, count: int, options: int | None, values: int | None) -> JitOptions:
        if count < 0 or (count and (not options or not values)):
            raise DriverError(INVALID_VALUE, "JIT options without their arrays")
        found: dict[int, tuple[int, int]] = {}
        for i in range(count):
            option = c_int.from_address((options or 0) + 4 * i).value
            if not 0 <= option < _NUM_OPTIONS:
                raise DriverError(INVALID_VALUE, f"unknown JIT option {option}")
            found[option] = (i, c_void_p.from_address((values or 0) + 8 * i).value or 0)
        return cls(found, values or 0)

    @property
    def verbose(self) -> bool:
        return bool(self.values.get(_VERBOSE, (0, 0))[1])

    def write_logs(self, info: str, error: str) -> None:
        """Write the info and error logs into the caller's buffers (NUL-terminated, cut to their
        sizes), and the bytes written back into the size options' values."""
        for buf, size, text in ((_INFO_BUF, _INFO_SIZE, info), (_ERROR_BUF, _ERROR_SIZE, error)):
            if buf not in self.values or size not in self.values:
                continue
            address, capacity = self.values[buf][1], self.values[size][1]
            if not address or capacity <= 0:
                continue
            data = text.encode()[: capacity - 1] + b"\0"
            ctypes.memmove(address, data, len(data))
            c_void_p.from_address(self.array + 8 * self.values[size][0]).value = len(data) - 1


def read_image(address: int | None) -> tuple[str, int | None]:
    """(PTX text, compute capability a simulated cubin was linked for, or None for PTX) of the
    image at ``address``."""
    if not address:
        raise DriverError(INVALID_VALUE, "NULL image")
    head = b""
    for i in range(len(CUBIN_MAGIC)):  # byte by byte: a short PTX string ends at its NUL
        head += ctypes.string_at(address + i, 1)
        if head != CUBIN_MAGIC[: i + 1]:
            break
    if head == CUBIN_MAGIC:
        sm, length = _HEADER.unpack(ctypes.string_at(address + len(CUBIN_MAGIC), _HEADER.size))
        text = ctypes.string_at(address + len(CUBIN_MAGIC) + _HEADER.size, length)
        return text.decode(errors="replace"), sm
    if head[:1] in (_ELF[:1], _FATBIN[:1]) and ctypes.string_at(address, 4) in (_ELF, _FATBIN):
        raise JitError(NO_BINARY_FOR_GPU, "a device binary (ELF cubin or fatbinary): the simulator runs PTX only")
    return ctypes.string_at(address).decode(errors="replace"), None


def make_cubin(ptx: str, sm: int) -> bytes:
    data = ptx.encode()
    return CUBIN_MAGIC + _HEADER.pack(sm, len(data)) + data


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _check_header(text: str, profile: Profile) -> None:
    version = _VERSION_RE.search(text)
    if version is not None:
        isa = (int(version.group(1)), int(version.group(2)))
        if isa > MAX_PTX_ISA:
            raise JitError(UNSUPPORTED_PTX_VERSION, f"ptxas application ptx input, line {_line_of(text, version.start(1))}; "
                           f"fatal   : Unsupported .version {isa[0]}.{isa[1]}; current version is "
                           f"'{MAX_PTX_ISA[0]}.{MAX_PTX_ISA[1]}'")
    target = _TARGET_RE.search(text)
    if target is not None:
        sm, suffix = int(target.group(1)), target.group(2)
        if sm > profile.sm or (suffix and sm != profile.sm):
            raise JitError(INVALID_PTX, f"ptxas application ptx input, line {_line_of(text, target.start(1))}; error   : "
                           f"SM version specified by .target (sm_{sm}{suffix}) is higher than default SM version "
                           f"assumed (sm_{profile.sm})")


def compile_ptx(text: str, profile: Profile, errors: list[str]) -> Any:
    """The parsed module (vyre_decl.sim.ptx.Module) of PTX ``text`` for ``profile``'s device;
    JitError with the log the driver's JIT would give otherwise."""
    _check_header(text, profile)
    try:
        ptx = importlib.import_module(".ptx", __package__)
    except ImportError as exc:
        raise JitError(JIT_COMPILER_NOT_FOUND, f"the simulator's PTX interpreter is not available: {exc}") from None
    try:
        module = ptx.load_module(text, profile.sm)
    except ptx.PtxError as exc:
        raise JitError(INVALID_PTX, f"ptxas application ptx input, line {exc.line}; error   : {exc.message}\n"
                       "ptxas fatal   : Ptx assembly aborted due to errors") from None
    except Exception as exc:  # a defect of the interpreter's parser: say so, keep the traceback
        errors.append("".join(traceback.format_exception(exc)))
        raise JitError(INVALID_PTX, f"ptxas fatal   : the simulator's PTX parser failed: {exc!r}") from None
    for name, kernel in module.kernels.items():
        if kernel.shared_bytes > profile.shared_per_block:
            raise JitError(INVALID_PTX, f"ptxas error   : Entry function '{name}' uses too much shared data "
                           f"(0x{kernel.shared_bytes:x} bytes, 0x{profile.shared_per_block:x} max)")
    return module


def info_log(module: Any, profile: Profile) -> str:
    """The JIT's verbose info log for a module: one entry per kernel."""
    lines = []
    for name, k in module.kernels.items():
        lines.append(f"ptxas info    : Compiling entry function '{name}' for 'sm_{profile.sm}' (simulated)")
        lines.append(f"ptxas info    : Used {k.registers} registers, {k.shared_bytes} bytes smem, "
                     f"{k.local_bytes} bytes lmem")
    return "\n".join(lines)


def invalid_image(detail: str) -> JitError:
    return JitError(INVALID_IMAGE, detail)
