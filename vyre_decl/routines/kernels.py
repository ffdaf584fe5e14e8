"""A routine kernel made a program for one binding: parameters resolved by the parser, then validated.

The kernel's source is parsed with the routine's types bound (``T[]`` buffers, ``x as T``,
``T.zero``) and its ``$name`` parameters given (``lexer.fill_params``: each value is one name
token, so nothing is pasted into text), then validated against the registry. Lines are counted
from the top of the routine file, so a parse error reads ``file:line:col``. A problem is a
``VyreError`` of U022 diagnostics naming the file, the routine, the step and the binding, each
carrying the parser's or validator's own code and location. Programs are cached by kernel,
binding, parameters and registry (the loader's check and the first call share them).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Final, Mapping

from ..ir.diagnostics import Diagnostic, VyreError
from ..ir.nodes import Program
from ..ir.parser import parse_program
from ..ir.types import DataType
from ..ir.validation import check
from ..registry import Registry
from .model import KernelDef

__all__ = ["kernel_program", "CACHE_SIZE"]

CACHE_SIZE: Final = 2048
_cache: OrderedDict[tuple[Any, ...], Program | VyreError] = OrderedDict()
_lock = threading.Lock()


def _describe(types: Mapping[str, DataType]) -> str:
    return ", ".join(f"{k}={v.value}" for k, v in types.items()) or "no type variables"


def _build(kernel: KernelDef, types: Mapping[str, DataType], params: Mapping[str, str], registry: Registry) -> Program:
    source = "\n" * max(0, kernel.line - 1) + kernel.source  # lines as in the routine file
    program = parse_program(source, kernel.file or f"[kernel.{kernel.name}]", type_vars=dict(types), params=params)
    check(program, registry)
    return program


def kernel_program(kernel: KernelDef, types: Mapping[str, DataType], params: Mapping[str, str], registry: Registry,
                   owner: str) -> Program:
    """The kernel as a validated program for ``types`` and ``params``; ``owner`` locates the
    user (``file [routine id] steps[1]``). Raises VyreError (U022 diagnostics) when it does not
    parse or validate."""
    used = {k: params[k] for k in kernel.params if k in params}
    key = (kernel, tuple(sorted(types.items())), tuple(sorted(used.items())), registry.fingerprint)
    with _lock:
        found = _cache.get(key)
        if found is not None:
            _cache.move_to_end(key)
    if found is None:
        try:
            found = _build(kernel, types, used, registry)
        except VyreError as exc:
            found = exc
        with _lock:
            _cache[key] = found
            while len(_cache) > CACHE_SIZE:
                _cache.popitem(last=False)
    if isinstance(found, VyreError):
        what = f"kernel {kernel.qualified} for {_describe(types)}"
        raise VyreError([Diagnostic("U022", f"{what}: {d.code} at {d.location}: {d.message}", owner, d.fix)
                         for d in found.diagnostics], f"{owner}: {what} is invalid") from None
    return found
