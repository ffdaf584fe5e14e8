"""The simulated driver's modules, JIT linking, functions, their attributes and occupancy.

Modules come from PTX text or from the simulated cubins ``cuLinkComplete`` returns (see
driver_jit). A function's resources are the interpreter's (``Kernel.shared_bytes``,
``local_bytes``, ``registers`` capped: see ``registers``); the limits derived from them follow the
hardware's allocation rules: registers are allocated per warp in units of 256, a block's shared
memory is rounded up to 128 bytes plus the per-block reservation of the device.

Not modelled: linking more than one input (CUDA_ERROR_NOT_SUPPORTED), inputs other than PTX and
simulated cubins (CUDA_ERROR_INVALID_IMAGE), function attributes other than the maximum dynamic
shared memory and the shared memory carveout being set (CUDA_ERROR_INVALID_VALUE).
"""

from __future__ import annotations

import ctypes
import math
from ctypes import c_int, c_size_t, c_void_p
from dataclasses import dataclass, field
from typing import Any

from .driver_errors import INVALID_VALUE, NO_BINARY_FOR_GPU, NOT_FOUND, NOT_SUPPORTED, DriverError
from .driver_jit import JitError, JitOptions, compile_ptx, info_log, invalid_image, make_cubin, read_image
from .driver_state import CtxState, DriverBase, write_out
from .profiles import Profile

__all__ = ["ModuleCalls", "SimModule", "SimFunction", "LinkState", "max_threads", "blocks_per_sm", "registers",
           "ALLOCATED_REGISTERS"]

_INPUT_CUBIN, _INPUT_PTX = 0, 1
_SHARED_UNIT = 128
ALLOCATED_REGISTERS = 32  # registers per thread a kernel is taken to use at most (see ``registers``)


@dataclass(eq=False)
class SimModule:
    owner: CtxState
    module: Any  # vyre_decl.sim.ptx.Module
    text: str
    handle: int = 0
    functions: dict[str, SimFunction] = field(default_factory=dict)


@dataclass(eq=False)
class SimFunction:
    owner: CtxState
    module: SimModule
    name: str
    kernel: Any  # vyre_decl.sim.ptx.Kernel
    max_dynamic_shared: int
    carveout: int = -1
    handle: int = 0


@dataclass(eq=False)
class LinkState:
    owner: CtxState
    options: JitOptions
    inputs: list[str] = field(default_factory=list)
    cubin: Any = None  # the ctypes buffer cuLinkComplete handed out (valid until cuLinkDestroy)
    handle: int = 0


def registers(kernel: Any, profile: Profile) -> int:
    """CU_FUNC_ATTRIBUTE_NUM_REGS. ptxas' register allocation is not modelled: the interpreter
    counts declared register words (an upper bound: 166 for the emitter's saxpy, which ptxas fits
    in about a dozen), so a kernel is taken to use at most ``ALLOCATED_REGISTERS`` per thread.
    Register limits then never refuse a block size the emitter's kernels run with on hardware;
    ``.maxntid``/``.reqntid`` still bound it."""
    declared = int(getattr(kernel, "registers", 1) or 1)
    return max(1, min(declared, ALLOCATED_REGISTERS, profile.max_registers_per_thread))


def _registers_per_warp(kernel: Any, profile: Profile) -> int:
    return -(-registers(kernel, profile) * profile.warp_size // 256) * 256


def max_threads(kernel: Any, profile: Profile) -> int:
    """CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: the block size the kernel's registers and its
    ``.maxntid``/``.reqntid`` directives allow."""
    warps = profile.registers_per_block // _registers_per_warp(kernel, profile)
    limit = min(profile.max_threads_per_block, warps * profile.warp_size)
    directives = getattr(kernel, "directives", {}) or {}
    for name in ("maxntid", "reqntid"):  # the interpreter keeps them under their PTX names (".maxntid")
        dims = directives.get("." + name) or directives.get(name)
        if dims:
            limit = min(limit, math.prod(dims))
    return limit


def blocks_per_sm(fn: SimFunction, profile: Profile, threads: int, dynamic_shared: int) -> int:
    """cuOccupancyMaxActiveBlocksPerMultiprocessor: blocks of ``threads`` resident per SM, the
    least of the limits by blocks, threads (whole warps), registers and shared memory."""
    if threads > max_threads(fn.kernel, profile) or dynamic_shared > fn.max_dynamic_shared:
        return 0
    warps = -(-threads // profile.warp_size)
    by_threads = profile.max_threads_per_sm // (warps * profile.warp_size)
    by_registers = (profile.registers_per_sm // _registers_per_warp(fn.kernel, profile)) // warps
    shared = -(-(fn.kernel.shared_bytes + dynamic_shared) // _SHARED_UNIT) * _SHARED_UNIT
    per_block = shared + profile.reserved_shared_per_block
    by_shared = profile.shared_per_sm // per_block if per_block else profile.max_blocks_per_sm
    return max(0, min(profile.max_blocks_per_sm, by_threads, by_registers, by_shared))


class ModuleCalls(DriverBase):
    """Module loading, JIT linking, functions and occupancy."""

    def cuModuleLoadDataEx(self, module: int | None, image: int | None, count: int, options: int | None,
                           values: int | None) -> int:
        state = self.ctx()
        opts = JitOptions.read(count, options, values)
        if not module:
            raise DriverError(INVALID_VALUE, "NULL module pointer")
        try:
            text, sm = read_image(image)
            if sm is not None and sm != state.device.profile.sm:
                raise JitError(NO_BINARY_FOR_GPU, f"a cubin for sm_{sm} cannot run on sm_{state.device.profile.sm}")
            parsed = compile_ptx(text, state.device.profile, self.errors)
        except JitError as exc:
            opts.write_logs("", exc.log)
            raise
        opts.write_logs(info_log(parsed, state.device.profile) if opts.verbose else "", "")
        write_out(c_void_p, module, self.register(SimModule(state, parsed, text)))
        return 0

    def cuModuleLoadData(self, module: int | None, image: int | None) -> int:
        return self.cuModuleLoadDataEx(module, image, 0, None, None)

    def cuModuleUnload(self, module: int | None) -> int:
        state = self.ctx()
        found = self.lookup(module, SimModule, state)
        for fn in found.functions.values():  # queued launches keep their kernel: they still run
            self.forget(fn.handle)
        self.forget(found.handle)
        return 0

    def cuModuleGetFunction(self, function: int | None, module: int | None, name: bytes | None) -> int:
        state = self.ctx()
        found = self.lookup(module, SimModule, state)
        if not function or not name:
            raise DriverError(INVALID_VALUE, "cuModuleGetFunction needs an output pointer and a name")
        key = ctypes.string_at(name).decode(errors="replace")
        fn = found.functions.get(key)
        if fn is None:
            kernel = found.module.kernels.get(key)
            if kernel is None:
                raise DriverError(NOT_FOUND, f"no kernel {key!r} in the module")
            limit = state.device.profile.shared_per_block - kernel.shared_bytes
            fn = found.functions[key] = SimFunction(state, found, key, kernel, max(0, limit))
            self.register(fn)
        write_out(c_void_p, function, fn.handle)
        return 0

    def cuFuncGetAttribute(self, value: int | None, attribute: int, function: int | None) -> int:
        self.require_init()
        fn = self.lookup(function, SimFunction)
        profile = fn.owner.device.profile
        k = fn.kernel
        isa = _isa(fn.module.text)
        table = {0: max_threads(k, profile), 1: k.shared_bytes, 2: 0, 3: k.local_bytes, 4: registers(k, profile),
                 5: isa, 6: profile.sm, 7: 0, 8: fn.max_dynamic_shared, 9: fn.carveout,
                 10: 0, 11: 0, 12: 0, 13: 0, 14: 0, 15: 0}
        if attribute not in table:
            raise DriverError(INVALID_VALUE, f"function attribute {attribute}")
        write_out(c_int, value, table[attribute])
        return 0

    def cuFuncSetAttribute(self, function: int | None, attribute: int, value: int) -> int:
        self.require_init()
        fn = self.lookup(function, SimFunction)
        profile = fn.owner.device.profile
        if attribute == 8 and 0 <= value <= profile.shared_per_block_optin - fn.kernel.shared_bytes:
            fn.max_dynamic_shared = value
        elif attribute == 9 and -1 <= value <= 100:
            fn.carveout = value
        else:
            raise DriverError(INVALID_VALUE, f"function attribute {attribute} = {value} cannot be set")
        return 0

    def cuOccupancyMaxActiveBlocksPerMultiprocessor(self, blocks: int | None, function: int | None, threads: int,
                                                    dynamic_shared: int) -> int:
        state = self.ctx()
        fn = self.lookup(function, SimFunction, state)
        if threads <= 0:
            raise DriverError(INVALID_VALUE, "block size must be positive")
        write_out(c_int, blocks, blocks_per_sm(fn, state.device.profile, threads, dynamic_shared))
        return 0

    # --- JIT linking
    def cuLinkCreate_v2(self, count: int, options: int | None, values: int | None, link: int | None) -> int:
        state = self.ctx()
        opts = JitOptions.read(count, options, values)
        if not link:
            raise DriverError(INVALID_VALUE, "NULL link state pointer")
        write_out(c_void_p, link, self.register(LinkState(state, opts)))
        return 0

    def cuLinkAddData_v2(self, link: int | None, kind: int, data: int | None, size: int, name: bytes | None,
                         count: int, options: int | None, values: int | None) -> int:
        state = self.ctx()
        ls = self.lookup(link, LinkState, state)
        JitOptions.read(count, options, values)
        if not data or size <= 0:
            raise DriverError(INVALID_VALUE, "cuLinkAddData needs data")
        if ls.inputs:
            raise DriverError(NOT_SUPPORTED, "the simulator links one input per link state")
        try:
            if kind == _INPUT_PTX:
                text = ctypes.string_at(data, size).rstrip(b"\0").decode(errors="replace")
            elif kind == _INPUT_CUBIN:
                text, sm = read_image(data)
                if sm is None:
                    raise invalid_image("not a simulated cubin")
            else:
                raise invalid_image(f"input type {kind}: the simulator links PTX and its own cubins")
            parsed = compile_ptx(text, state.device.profile, self.errors)
        except JitError as exc:
            ls.options.write_logs("", exc.log)
            raise
        ls.options.write_logs(info_log(parsed, state.device.profile) if ls.options.verbose else "", "")
        ls.inputs.append(text)
        return 0

    def cuLinkComplete(self, link: int | None, cubin: int | None, size: int | None) -> int:
        state = self.ctx()
        ls = self.lookup(link, LinkState, state)
        if not ls.inputs or not cubin or not size:
            raise DriverError(INVALID_VALUE, "nothing to link, or NULL outputs")
        data = make_cubin(ls.inputs[0], state.device.profile.sm)
        ls.cubin = ctypes.create_string_buffer(data, len(data))
        write_out(c_void_p, cubin, ctypes.addressof(ls.cubin))
        write_out(c_size_t, size, len(data))
        return 0

    def cuLinkDestroy(self, link: int | None) -> int:
        self.require_init()
        self.forget(self.lookup(link, LinkState).handle)
        return 0


def _isa(text: str) -> int:
    """CU_FUNC_ATTRIBUTE_PTX_VERSION: 10 * major + minor of the module's ``.version``."""
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0] == ".version":
            major, _, minor = parts[1].partition(".")
            if major.isdigit() and minor.isdigit():
                return int(major) * 10 + int(minor)
    return 0
