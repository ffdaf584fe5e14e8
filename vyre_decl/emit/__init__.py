"""The PTX emitter: Program -> PTX text from the op templates; target choice; ptxas checks."""

from ..registry.templates import immediate
from .abi import AbiParam, KernelABI, PtxModule, kernel_abi
from .module import emit, vector_entry
from .ptxas import assemble, explain, find_ptxas
from .target import DEFAULT_TARGET, EMITTER_CONTRACT, Target, choose_target, driver_max_ptx, parse_target

__all__ = [
    "AbiParam",
    "DEFAULT_TARGET",
    "EMITTER_CONTRACT",
    "KernelABI",
    "PtxModule",
    "Target",
    "assemble",
    "choose_target",
    "driver_max_ptx",
    "emit",
    "explain",
    "find_ptxas",
    "immediate",
    "kernel_abi",
    "parse_target",
    "vector_entry",
]
