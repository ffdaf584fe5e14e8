"""Assembling a PTX module: the header, the program's entry, and for a map-shaped program the
vectorised entry beside it (``vector.py``)."""

from __future__ import annotations

from ..ir.nodes import Access, Program
from ..ir.validation import check
from ..registry import Registry, default_registry
from .abi import KernelABI, PtxModule, kernel_abi
from .private import private_bytes
from .ptx import _Emitter
from .target import EMITTER_CONTRACT, Target, choose_target
from .vector import VectorEmitter, map_shape
from .wgmem import entry_declarations, module_declarations

__all__ = ["emit", "vector_entry"]


def vector_entry(program: Program, registry: Registry | None = None) -> str | None:
    """The name of the program's vectorised entry, or None when it is not map-shaped (a program
    calling collective ops is not: ``registry`` tells which ops are; default: the standard one)."""
    reg = registry or default_registry()
    return f"{kernel_abi(program).entry}_v4" if map_shape(program, reg) is not None else None


def _entry(name: str, abi: KernelABI, program: Program, em: _Emitter) -> list[str]:
    private = [b for b in program.buffers if b.access is Access.PRIVATE and b.name not in em.promoted]
    return [
        f".visible .entry {name}(",
        ",\n".join(f"\t.param .{'u64' if p.kind == 'ptr' else 'u32'} {p.name}" for p in abi.params),
        ")",
        *em.entry_directives(),
        "{",
        *em.declarations(),
        *entry_declarations(program),
        *(f"\t.local .align 16 .b8 pv_{b.name}[{private_bytes(b)}];" for b in private),
        *em.lines,
        "$L_exit:",
        "\tret;",
        "}",
        "",
    ]


def emit(
    program: Program,
    registry: Registry | None = None,
    target: Target | str | None = None,
    *,
    validated: bool = False,
) -> PtxModule:
    """PTX for ``program``. ``target`` is a Target, ``"sm_90"``-style text or None (sm_90);
    the program is validated first unless ``validated`` says it already was."""
    reg = registry or default_registry()
    if not validated:
        check(program, reg)
    tgt = target if isinstance(target, Target) else choose_target(None, target)
    em = _Emitter(program, reg, tgt)
    em.prologue()
    em.body(program.body, "body")
    abi = kernel_abi(program)
    h = program.content_hash()
    out = [
        f"// vyre_decl {EMITTER_CONTRACT}: program {program.name} {h[:16]}",
        f".version {tgt.version}",
        f".target {tgt.name}",
        ".address_size 64",
        "",
        *module_declarations(program),
        *_entry(abi.entry, abi, program, em),
    ]
    shape = map_shape(program, reg)
    vector = None
    if shape is not None:
        vector = f"{abi.entry}_v4"
        vem = VectorEmitter(program, reg, tgt, shape)
        vem.prologue()
        vem.vector_body()
        out += [f"// {vector}: four consecutive elements per invocation (grid: a quarter of {abi.entry}'s)",
                *_entry(vector, abi, program, vem)]
    return PtxModule("\n".join(out), abi, tgt, EMITTER_CONTRACT, h, vector)
