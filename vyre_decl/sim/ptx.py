"""The PTX interpreter's facade: load a module's text once (parsed, checked and decoded, then
cached), and run its kernels over a grid on a DeviceMemory, with the sanitizer.

It is an independent reading of PTX, written from the PTX ISA: it imports nothing else of
vyre_decl (numpy and the standard library only), so that agreeing with the reference backend means
two readings of the semantics agree. Interface (the driver model relies on exactly this)::

    class PtxError(Exception): line: int; message: str       # malformed or unsupported PTX
    class KernelFault(Exception): kind: str; kernel: str; line: int; detail: str
        # kind: 'illegal_address' | 'misaligned_address' | 'illegal_instruction' | 'trap' (sticky faults)
    @dataclass class Param: name: str; nbytes: int; align: int; offset: int   # in the packed buffer
    @dataclass class Finding: kind: str; kernel: str; line: int; instruction: str; context: str; message: str
        # kind: 'oob_shared' | 'shared_race' | 'divergent_barrier' | 'uninitialised_register' | 'approx'
        #       | 'warp_divergence' | 'shfl_inactive_source' | 'oob_local' | 'uninitialised_local'
    def load_module(text: str, sm: int) -> Module   # PtxError: syntax, unknown instructions,
                                                     # .target above sm_<sm>, .version too new
    class Module: kernels: dict[str, Kernel]
    class Kernel:
        name: str; params: list[Param]; shared_bytes: int; local_bytes: int; registers: int
        def run(self, grid, block, params: bytes, memory: DeviceMemory, sanitize: bool = True) -> list[Finding]
            # KernelFault on a fault (global out of bounds: 'illegal_address', the address in the detail)

Beyond the contract (keyword arguments with defaults, an extra exception): ``load_module(...,
max_version=(9, 0))`` sets the newest PTX ISA version accepted; ``Kernel.run(..., dynamic_shared=0,
deadline=None, stats=None)`` gives the launch's dynamic shared memory bytes, a time.monotonic()
deadline (past it the run raises KernelTimeout) and a dict that receives 'lane_instructions'.

'approx' findings are reported with or without the sanitizer (they concern the result, not the
program's correctness); the other kinds only with sanitize=True. Without the sanitizer, an
out-of-bounds shared or local access is KernelFault 'illegal_address' instead of an 'oob_shared' or
'oob_local' finding.
"""

from __future__ import annotations

import gc
import hashlib
import threading
from collections import OrderedDict
from typing import Any

from .memory import DeviceMemory
from .ptx_decode import Program, check_header, decode
from .ptx_exec import launch
from .ptx_parse import parse
from .ptx_types import Finding, KernelFault, KernelTimeout, Param, PtxError

__all__ = ["PtxError", "KernelFault", "KernelTimeout", "Param", "Finding", "Module", "Kernel", "load_module",
           "MAX_VERSION"]

MAX_VERSION = (9, 0)  # the newest PTX ISA this interpreter reads by default (CUDA 13.0)
_CACHE_SIZE = 128
_cache: OrderedDict[tuple[str, int, tuple[int, int]], "Module"] = OrderedDict()
_lock = threading.Lock()


class Kernel:
    """One entry of a loaded module."""

    def __init__(self, program: Program) -> None:
        self.program = program
        self.name = program.name
        self.params: list[Param] = list(program.params)
        self.shared_bytes = program.shared_bytes
        self.local_bytes = program.local_bytes
        self.registers = program.registers
        self.directives = dict(program.directives)  # .maxntid / .reqntid / ... as declared

    @property
    def param_bytes(self) -> int:
        return self.program.param_bytes

    def run(self, grid: tuple[int, int, int], block: tuple[int, int, int], params: bytes, memory: DeviceMemory,
            sanitize: bool = True, *, dynamic_shared: int = 0, deadline: float | None = None,
            stats: dict[str, Any] | None = None) -> list[Finding]:
        found = launch(self.program, tuple(grid), tuple(block), params, memory, sanitize,  # type: ignore[arg-type]
                       dynamic_shared, deadline, stats)
        return found if sanitize else [f for f in found if f.kind == "approx"]

    def __repr__(self) -> str:
        return f"<Kernel {self.name}: {len(self.params)} params, {self.shared_bytes} B shared>"


class Module:
    """A loaded PTX module: its kernels by name, the PTX version and target it declares."""

    def __init__(self, kernels: dict[str, Kernel], version: tuple[int, int], target: str) -> None:
        self.kernels = kernels
        self.version, self.target = version, target


def load_module(text: str, sm: int, max_version: tuple[int, int] = MAX_VERSION) -> Module:
    """Parse, check and decode ``text`` for a device of compute capability ``sm`` (90 for 9.0)."""
    key = (hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest(), sm, tuple(max_version))
    with _lock:
        hit = _cache.get(key)  # type: ignore[arg-type]
        if hit is not None:
            _cache.move_to_end(key)  # type: ignore[arg-type]
            return hit
    collecting = gc.isenabled()
    gc.disable()  # parsing and decoding allocate many small objects: the collector's passes cost half the time
    try:
        module = _load(text, sm, max_version)
    finally:
        if collecting:
            gc.enable()
    with _lock:
        _cache[key] = module  # type: ignore[index]
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return module


def _load(text: str, sm: int, max_version: tuple[int, int]) -> Module:
    ast = parse(text)
    check_header(ast, sm, tuple(max_version))  # type: ignore[arg-type]
    kernels: dict[str, Kernel] = {}
    for ent in ast.entries:
        if ent.name in kernels:
            raise PtxError(ent.line, f"the entry {ent.name} is defined twice")
        kernels[ent.name] = Kernel(decode(ent, ast))
    return Module(kernels, ast.version, ast.target_text)
