"""The op registry: ``ops/*.toml`` (op format v2) loaded, checked and looked up by id.

``default_registry()`` is the standard ops plus the directories in ``VYRE_DECL_OPS_PATH``,
loaded once per process (and again if that variable changes), from a snapshot when one is valid.
``load(paths)`` builds a registry from explicit directories or files. docs/ops-format.md is the
format's reference.
"""

from __future__ import annotations

import os
import threading

from typing import TYPE_CHECKING, Any

from ..ir.diagnostics import VyreError
from .loader import ENV_VAR, MAX_FILE_BYTES, env_ops_dirs, load, standard_ops_dir
from .model import Compose, DialectInfo, Kat, LawDef, OpDef, Template
from .registry import Registry

if TYPE_CHECKING:
    from .laws import CATALOGUE, LawKind

__all__ = [
    "CATALOGUE",
    "ENV_VAR",
    "MAX_FILE_BYTES",
    "Compose",
    "DialectInfo",
    "Kat",
    "LawDef",
    "LawKind",
    "OpDef",
    "Registry",
    "Template",
    "default_registry",
    "env_ops_dirs",
    "load",
    "standard_ops_dir",
]

_LAZY = {"CATALOGUE": "laws", "LawKind": "laws"}


def __getattr__(name: str) -> Any:  # the checking machinery loads only when a snapshot cannot be used
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'vyre_decl.registry' has no attribute {name!r}")


_lock = threading.Lock()
_cached: tuple[str, Registry] | None = None


def default_registry() -> Registry:
    """The standard ops plus VYRE_DECL_OPS_PATH, loaded once per value of that variable.

    Bad files on VYRE_DECL_OPS_PATH are rejected and reported in ``Registry.diagnostics``; the
    only error raised is a VyreError when a file of the standard library itself is rejected (an
    edited or damaged installation), naming each problem."""
    global _cached
    key = os.environ.get(ENV_VAR, "")
    with _lock:
        if _cached is None or _cached[0] != key:
            reg = load()
            std = str(standard_ops_dir())
            broken = tuple(d for d in reg.errors if d.location.startswith(std))
            if broken:
                raise VyreError(broken, "the standard op library is broken:")
            _cached = (key, reg)
        return _cached[1]
