"""numpy-style functions over the standard routines: ``vyre_decl.lib.sum(x, backend="cuda")``.

Each is one routine call (``vyre_decl.routines``); results are numpy scalars or arrays, the same
bits on every backend.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .routines import routine

__all__ = ["sum", "prod", "min", "max"]


def _scalar(routine_id: str, x: Any, backend: Any) -> np.generic:
    out = routine(routine_id)(x, backend=backend)
    return out[0]  # type: ignore[no-any-return]


def sum(x: Any, *, backend: Any = "auto") -> np.generic:  # noqa: A001 - numpy's name
    """The sum of all elements of ``x`` (integers wrap; floats in a fixed order: docs/routines.md)."""
    return _scalar("reduce.sum", x, backend)


def prod(x: Any, *, backend: Any = "auto") -> np.generic:
    """The product of all elements of ``x`` (integers wrap; floats in a fixed order)."""
    return _scalar("reduce.prod", x, backend)


def min(x: Any, *, backend: Any = "auto") -> np.generic:  # noqa: A001 - numpy's name
    """The smallest element of ``x`` (NaNs lose, like ``np.nanmin``; +inf or the type's max when empty)."""
    return _scalar("reduce.min", x, backend)


def max(x: Any, *, backend: Any = "auto") -> np.generic:  # noqa: A001 - numpy's name
    """The largest element of ``x`` (NaNs lose, like ``np.nanmax``; -inf or the type's min when empty)."""
    return _scalar("reduce.max", x, backend)
