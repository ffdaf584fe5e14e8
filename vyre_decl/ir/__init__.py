"""The vyre_decl IR: types, nodes, programs, validation, text and JSON forms, and the builder.

Names are imported on first use, so that importing one module of the IR (as a registry snapshot
does) does not import all of them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "content_hash": "canonical",
    "dumps": "canonical",
    "from_json": "canonical",
    "loads": "canonical",
    "to_json": "canonical",
    "Diagnostic": "diagnostics",
    "VyreError": "diagnostics",
    "AXES": "nodes",
    "Access": "nodes",
    "Assign": "nodes",
    "Atomic": "nodes",
    "Barrier": "nodes",
    "Block": "nodes",
    "Break": "nodes",
    "BufferDecl": "nodes",
    "BufLen": "nodes",
    "Expr": "nodes",
    "Id": "nodes",
    "IdKind": "nodes",
    "If": "nodes",
    "Let": "nodes",
    "Lit": "nodes",
    "Load": "nodes",
    "Loop": "nodes",
    "MemoryOrder": "nodes",
    "MemoryScope": "nodes",
    "Node": "nodes",
    "Op": "nodes",
    "Program": "nodes",
    "Region": "nodes",
    "Return": "nodes",
    "Select": "nodes",
    "Store": "nodes",
    "Copy": "nodes",
    "Var": "nodes",
    "Wait": "nodes",
    "AttrSig": "signature",
    "OpSignature": "signature",
    "OpTable": "signature",
    "Param": "signature",
    "SignatureError": "signature",
    "ParseError": "text",
    "parse_expr": "text",
    "parse_program": "text",
    "print_expr": "text",
    "print_program": "text",
    "FLOAT_TYPES": "types",
    "INT_TYPES": "types",
    "VALUE_TYPES": "types",
    "DataType": "types",
    "parse_type": "types",
    "Limits": "validation",
    "check": "validation",
    "infer_type": "validation",
    "validate": "validation",
}

__all__ = sorted(_EXPORTS)



def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'vyre_decl.ir' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


if TYPE_CHECKING:  # pragma: no cover
    from .canonical import content_hash, dumps, from_json, loads, to_json
    from .diagnostics import Diagnostic, VyreError
    from .nodes import AXES, Access, Assign, Atomic, Barrier, Block, Break, BufferDecl, BufLen, Expr, Id, IdKind, If, Let, Lit, Load, Loop, MemoryOrder, MemoryScope, Node, Op, Program, Region, Return, Select, Store, Copy, Var, Wait
    from .signature import AttrSig, OpSignature, OpTable, Param, SignatureError
    from .text import ParseError, parse_expr, parse_program, print_expr, print_program
    from .types import FLOAT_TYPES, INT_TYPES, VALUE_TYPES, DataType, parse_type
    from .validation import Limits, check, infer_type, validate
