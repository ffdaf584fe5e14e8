"""NVTX ranges around labelled dispatches, so that they show by name on an Nsight Systems
timeline: ``libnvToolsExt`` through ctypes when it can be loaded (``VYRE_DECL_NVTX`` names the
library; default ``libnvToolsExt.so.1``), nothing otherwise. Only dispatches with a ``label``
call in here, so unlabelled work pays nothing."""

from __future__ import annotations

import ctypes
import os
import threading
from typing import Any

__all__ = ["available", "push", "pop"]

_lock = threading.Lock()
_fns: tuple[Any, Any] | None = None
_tried = False


def _load() -> tuple[Any, Any] | None:
    global _fns, _tried
    with _lock:
        if not _tried:
            _tried = True
            try:
                lib = ctypes.CDLL(os.environ.get("VYRE_DECL_NVTX", "libnvToolsExt.so.1"))
                push, pop = lib.nvtxRangePushA, lib.nvtxRangePop
                push.argtypes, push.restype, pop.argtypes, pop.restype = [ctypes.c_char_p], ctypes.c_int, [], ctypes.c_int
                _fns = (push, pop)
            except (OSError, AttributeError):
                _fns = None
    return _fns


def available() -> bool:
    """Whether an NVTX library was found (ranges are recorded)."""
    return (_fns if _tried else _load()) is not None


def push(label: str) -> None:
    """Open a range named ``label`` on this thread (no-op without NVTX)."""
    fns = _fns if _tried else _load()
    if fns is not None:
        fns[0](label.encode("utf-8", "replace"))


def pop() -> None:
    """Close this thread's innermost range (no-op without NVTX)."""
    if _fns is not None:
        _fns[1]()
