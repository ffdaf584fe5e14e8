"""The kernels room: PTX and cubins for programs, cached in memory and on disk, and the loaded
modules.

The key of a program is its content hash with the registry fingerprint, the emitter contract,
the package version, the PTX target, the compute capability and the driver version. PTX text and
the compiled cubin are kept in memory and on disk, loaded modules in memory; a second process
loads the cubin and never JITs.

Both in-memory caches hold at most ``limit`` entries, least recently used first out. A loaded
module is counted in use while a pipeline made from it lives (``use``/``release``); a module in use
is never unloaded, so the cache can exceed its limit while more pipelines than that are alive.
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from ctypes import byref, c_int, c_void_p
from dataclasses import dataclass
from typing import Any, Callable

from ... import libcuda as cu
from ..._version import __version__
from ...diskcache import DiskCache, cache_dir
from ...emit import EMITTER_CONTRACT, PtxModule, emit, explain, kernel_abi, vector_entry
from ...ir.diagnostics import Diagnostic, VyreError
from ...ir.nodes import Program
from ...ir.validation import check
from ...registry import Registry
from .device import Device

__all__ = ["KernelCache", "LoadedKernel"]

_MAX_THREADS_PER_BLOCK = 0  # CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK
_MAX_DYNAMIC_SHARED = 8  # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES


@dataclass(frozen=True)
class LoadedKernel:
    """A module loaded on the device: its handle, the kernel function, and the most invocations
    per workgroup its register use allows."""

    module: c_void_p
    function: c_void_p
    max_threads: int
    vector_function: c_void_p | None = None  # the vectorised entry of a map-shaped program


class KernelCache:
    """PTX, cubins and loaded modules of one device, for the registry ``registry()`` returns."""

    def __init__(self, device: Device, registry: Callable[[], Registry], limit: int) -> None:
        self.device, self._registry = device, registry
        self.limit = max(limit, 1)
        self._ptx: OrderedDict[str, PtxModule] = OrderedDict()
        self._modules: OrderedDict[str, LoadedKernel] = OrderedDict()
        self._users: dict[str, int] = {}  # live pipelines per loaded module
        self.evictions = {"ptx": 0, "modules": 0}
        root = cache_dir()
        self._ptx_disk, self._cubin_disk = DiskCache(root, "ptx"), DiskCache(root, "cubin")
        # a simulated device reports a real GPU's target and driver: its cubins must not meet the GPU's
        self._driver_kind = "simulated" if cu.is_simulated() else "driver"

    def module_for(self, program: Program) -> tuple[PtxModule, str]:
        """The PTX of ``program`` (validated, emitted or read from a cache) and its cache key."""
        reg = self._registry()
        info = self.device.info
        target, cc = info.target, info.compute_capability
        counters = self.device.counters
        key = hashlib.sha256("|".join([program.content_hash(), reg.fingerprint, EMITTER_CONTRACT, __version__,
                                       str(target.sm), target.version, f"{cc[0]}.{cc[1]}",
                                       str(info.driver_version), self._driver_kind]).encode()).hexdigest()
        module = self._ptx.get(key)
        if module is not None:
            counters["ptx_memory_hits"] += 1
            self._ptx.move_to_end(key)
            return module, key
        check(program, reg)
        text = self._ptx_disk.get(key)
        if text is not None:
            counters["ptx_disk_hits"] += 1
            module = PtxModule(text.decode(), kernel_abi(program), target, EMITTER_CONTRACT, program.content_hash(),
                               vector_entry(program, reg))
        else:
            module = emit(program, reg, target, validated=True)
            self._ptx_disk.put(key, module.text.encode())
        self._ptx[key] = module
        while len(self._ptx) > self.limit:
            self._ptx.popitem(last=False)
            self.evictions["ptx"] += 1
        return module, key

    def use(self, module: PtxModule, key: str) -> LoadedKernel:
        """The module loaded on the device (from memory, the cubin cache, or a JIT), counted in
        use until ``release(key)``. Lock held."""
        found = self._modules.get(key)
        if found is not None:
            self.device.counters["module_hits"] += 1
            self._modules.move_to_end(key)
        else:
            found = self._modules[key] = self._load(module, key)
        self._users[key] = self._users.get(key, 0) + 1
        self._evict()
        return found

    def release(self, key: str) -> None:
        """A pipeline of module ``key`` is gone; unload idle modules beyond the limit. Safe from a
        finalizer on any thread."""
        with self.device.lock:
            left = self._users.get(key, 0) - 1
            if left > 0:
                self._users[key] = left
            else:
                self._users.pop(key, None)
            if not self.device.closed and self.device.poisoned is None:
                self._evict()

    def _evict(self) -> None:
        excess = len(self._modules) - self.limit
        if excess <= 0:
            return
        idle = [k for k in self._modules if k not in self._users][:excess]  # oldest first
        if idle:
            self.device.alive()
        for k in idle:
            cu.call("cuModuleUnload", self._modules.pop(k).module)
            self.evictions["modules"] += 1

    def snapshot(self) -> dict[str, Any]:
        """Entries in memory, and hits, misses and evictions of the disk caches in this process."""
        return {
            "limit": self.limit, "ptx_in_memory": len(self._ptx),
            "ptx_bytes": sum(len(m.text) for m in self._ptx.values()), "modules_loaded": len(self._modules),
            "modules_in_use": len(self._users), "evictions": dict(self.evictions),
            "disk": {kind: {"hits": d.hits, "misses": d.misses, "evictions": d.evictions}
                     for kind, d in (("ptx", self._ptx_disk), ("cubin", self._cubin_disk))},
        }

    def close(self) -> None:
        """Unload every module (the pipelines using them are closed first)."""
        if self.device.poisoned is None:
            for loaded in self._modules.values():
                cu.call("cuModuleUnload", loaded.module)
        self._modules.clear()
        self._users.clear()
        self._ptx.clear()

    def _load(self, module: PtxModule, key: str) -> LoadedKernel:
        counters = self.device.counters
        cubin = self._cubin_disk.get(key)
        if cubin is not None:
            counters["cubin_disk_hits"] += 1
            try:
                return self._load_cubin(cubin, module)
            except cu.CudaError as exc:  # e.g. built for another GPU of the same target: build it again
                if exc.sticky:
                    raise
        t0 = time.perf_counter()
        try:
            cubin, _info = cu.jit_ptx(module.text.encode())
        except cu.ModuleLoadError as exc:
            raise VyreError(Diagnostic("E012", f"the driver's JIT rejected the PTX ({exc.name}):\n"
                                       + explain(module.text, exc.log), f"program {module.entry}",
                                       "this is an emitter or op-template bug: report it with the PTX above")) from None
        counters["jit_compiles"] += 1
        counters["jit_ms"] += int((time.perf_counter() - t0) * 1000)
        self._cubin_disk.put(key, cubin)
        return self._load_cubin(cubin, module)

    def _load_cubin(self, cubin: bytes, module: PtxModule) -> LoadedKernel:
        t0 = time.perf_counter()
        mod = cu.load_cubin(cubin)
        fn = c_void_p()
        cu.call("cuModuleGetFunction", byref(fn), mod, module.entry.encode())
        dynamic = module.abi.dynamic_shared_bytes  # workgroup_memory(large): opt in (more than 48 KiB)
        if dynamic:
            cu.call("cuFuncSetAttribute", fn, _MAX_DYNAMIC_SHARED, dynamic)
        limit = c_int()
        cu.call("cuFuncGetAttribute", byref(limit), _MAX_THREADS_PER_BLOCK, fn)
        vector = None
        if module.vector_entry is not None:
            vector = c_void_p()
            cu.call("cuModuleGetFunction", byref(vector), mod, module.vector_entry.encode())
            if dynamic:
                cu.call("cuFuncSetAttribute", vector, _MAX_DYNAMIC_SHARED, dynamic)
            cu.call("cuFuncGetAttribute", byref(limit2 := c_int()), _MAX_THREADS_PER_BLOCK, vector)
            limit = c_int(min(limit.value, limit2.value))
        self.device.counters["load_us"] += int((time.perf_counter() - t0) * 1e6)
        return LoadedKernel(mod, fn, limit.value, vector)
