"""The op registry: ``ops/*.toml`` loaded, checked and looked up by id.

``default_registry()`` is the standard ops plus the directories in ``VYRE_DECL_OPS_PATH``,
loaded once per process (and again if that variable changes). ``load(paths)`` builds a registry
from explicit directories or files.
"""

from __future__ import annotations

import os
import threading

from .loader import ENV_VAR, MAX_FILE_BYTES, env_ops_dirs, load, standard_ops_dir
from .model import DialectInfo, Kat, LawDef, OpDef, RefDef, Template
from .registry import Registry

__all__ = [
    "ENV_VAR",
    "MAX_FILE_BYTES",
    "DialectInfo",
    "Kat",
    "LawDef",
    "OpDef",
    "RefDef",
    "Registry",
    "Template",
    "default_registry",
    "env_ops_dirs",
    "load",
    "standard_ops_dir",
]

_lock = threading.Lock()
_cached: tuple[str, Registry] | None = None


def default_registry() -> Registry:
    """The standard ops plus VYRE_DECL_OPS_PATH, loaded once per value of that variable."""
    global _cached
    key = os.environ.get(ENV_VAR, "")
    with _lock:
        if _cached is None or _cached[0] != key:
            _cached = (key, load())
        return _cached[1]
