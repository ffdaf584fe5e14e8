"""The kernel's calling convention (which parameters, in which order) and the record of an
emitted PTX module.

Kernel ABI (what the CUDA backend packs, in this order, all by value):

* one ``.param .u64 p_<buffer>``: the device address of each non-workgroup buffer, in binding
  order;
* then one ``.param .u32 n_<buffer>``: the element count of each of those buffers at dispatch,
  in the same order (used for bounds checks and ``len(buf)``).

There is no parameter buffer in device memory and no implicit guard: every invocation of the
grid runs the body, exactly as on the reference backend.

A map-shaped program's module has a second entry, ``<entry>_v4`` (``PtxModule.vector_entry``),
with the same parameters, in which each invocation handles ``VECTOR_LANES`` consecutive
elements: launched with a grid of ``ceil(n / (VECTOR_LANES * workgroup))`` it computes what the
scalar entry computes with ``ceil(n / workgroup)`` (see ``vector.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir.nodes import Access, BufferDecl, Program
from ..ir.wgmem import dynamic_workgroup_bytes, live_workgroup_arrays
from .target import Target

__all__ = ["AbiParam", "KernelABI", "PtxModule", "kernel_abi", "shared_words", "VECTOR_LANES"]

VECTOR_LANES = 4  # elements per invocation of a vectorised entry (one 128-bit access of 32-bit elements)


@dataclass(frozen=True, slots=True)
class AbiParam:
    name: str  # PTX parameter name
    kind: str  # "ptr" (u64 device address) or "len" (u32 element count)
    buffer: str


@dataclass(frozen=True, slots=True)
class KernelABI:
    entry: str
    params: tuple[AbiParam, ...]
    shared_bytes: int  # static workgroup memory
    dynamic_shared_bytes: int = 0  # a workgroup_memory(large) program's, passed at launch (emit/wgmem.py)


@dataclass(frozen=True, slots=True)
class PtxModule:
    text: str
    abi: KernelABI
    target: Target
    contract: str
    program_hash: str
    vector_entry: str | None = None  # the vectorised entry of a map-shaped program

    @property
    def entry(self) -> str:
        return self.abi.entry


def shared_words(b: BufferDecl) -> int:
    return -(-(b.count * b.dtype.size) // 4)


def kernel_abi(program: Program) -> KernelABI:
    """The entry name, parameters and static workgroup memory of ``program``'s kernel."""
    buffers = sorted((b for b in program.buffers if not b.access.is_scratch), key=lambda b: b.binding)  # type: ignore[arg-type, return-value]
    params = tuple(AbiParam(f"p_{b.name}", "ptr", b.name) for b in buffers)
    params += tuple(AbiParam(f"n_{b.name}", "len", b.name) for b in buffers)
    dynamic = dynamic_workgroup_bytes(program)
    live = live_workgroup_arrays(program)  # the arrays the body may touch (ir/wgmem.py)
    shared = 0 if dynamic else sum(shared_words(b) * 4 for b in program.buffers
                                   if b.access is Access.WORKGROUP and b.name in live)
    return KernelABI(f"vyre_{program.name}", params, shared, dynamic)
