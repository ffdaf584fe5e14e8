"""vyre_decl: a small declarative GPU compute stack.

Build a ``Program`` (typed buffers and a structured body; with ``ProgramBuilder`` or the
``.vyre`` text form), then run it: ``vyre_decl.dispatch(program, inputs)`` on the best available
backend, or ``vyre_decl.acquire("reference")`` for the CPU reference. Every operation is defined
in TOML under ``ops/``; see ``python -m vyre_decl.ops list``.

Names are imported lazily so that ``import vyre_decl`` stays cheap (no registry load, no
pydantic import).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._version import __version__

_EXPORTS = {
    # IR
    "DataType": "vyre_decl.ir.types",
    "Access": "vyre_decl.ir.nodes",
    "BufferDecl": "vyre_decl.ir.nodes",
    "Program": "vyre_decl.ir.nodes",
    "ProgramBuilder": "vyre_decl.ir.builder",
    "parse_program": "vyre_decl.ir.text",
    "print_program": "vyre_decl.ir.text",
    "Diagnostic": "vyre_decl.ir.diagnostics",
    "VyreError": "vyre_decl.ir.diagnostics",
    # registry
    "Registry": "vyre_decl.registry",
    "default_registry": "vyre_decl.registry",
    "load_registry": "vyre_decl.registry:load",
    # backends
    "DispatchConfig": "vyre_decl.backends.config",
    "acquire": "vyre_decl.backends",
    "list_backends": "vyre_decl.backends",
    "register_backend": "vyre_decl.backends",
    "BackendInfo": "vyre_decl.backends",
    # routines
    "routine": "vyre_decl.routines",
    "routines": "vyre_decl.routines",
}

__all__ = [
    "Access",
    "BackendInfo",
    "BufferDecl",
    "DataType",
    "Diagnostic",
    "DispatchConfig",
    "Program",
    "ProgramBuilder",
    "Registry",
    "VyreError",
    "__version__",
    "acquire",
    "list_backends",
    "default_registry",
    "dispatch",
    "load_program",
    "load_registry",
    "parse_program",
    "print_program",
    "register_backend",
    "routine",
    "routines",
    "validate",
]


def __getattr__(name: str) -> Any:
    target = _EXPORTS.get(name)
    if target is None:
        raise AttributeError(f"module 'vyre_decl' has no attribute {name!r}")
    module, _, attr = target.partition(":")
    value = getattr(importlib.import_module(module), attr or name)
    globals()[name] = value
    return value


def validate(program: "Program", registry: "Registry | None" = None) -> list["Diagnostic"]:
    """Every problem in ``program`` against ``registry`` (default: the standard ops plus
    VYRE_DECL_OPS_PATH); an empty list means it is valid."""
    from .ir.validation import validate as _validate
    from .registry import default_registry as _default

    return _validate(program, registry or _default())


def dispatch(program: "Program", inputs: Any, config: "DispatchConfig | None" = None, backend: str = "auto",
             registry: "Registry | None" = None) -> list[Any]:
    """Run ``program`` once on ``inputs`` with the named backend (default: the best available),
    against ``registry`` (default: the standard ops plus VYRE_DECL_OPS_PATH)."""
    from .backends import acquire as _acquire

    return _acquire(backend, registry).dispatch(program, inputs, config)


def load_program(path: str) -> "Program":
    """Read a program from a ``.vyre`` text file (UTF-8). A file that cannot be read is P009, one
    that is not UTF-8 P010, one over 1 MiB P011 (read no further), each with the path and a Fix."""
    from .ir.parser import parse_program as _parse, read_program

    return _parse(read_program(path), filename=str(path))


if TYPE_CHECKING:  # pragma: no cover
    from .backends import BackendInfo, acquire, list_backends, register_backend
    from .backends.config import DispatchConfig
    from .ir.builder import ProgramBuilder
    from .ir.diagnostics import Diagnostic, VyreError
    from .ir.nodes import Access, BufferDecl, Program
    from .ir.text import parse_program, print_program
    from .ir.types import DataType
    from .registry import Registry, default_registry
    from .registry import load as load_registry
    from .routines import routine, routines
