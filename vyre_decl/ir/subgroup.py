"""The subgroup size: how many consecutive invocations of a workgroup (by linear local id) form a
subgroup. Stated once here; the reference uses it, and every CUDA target declares it (a warp), see
``emit/target.py``. docs/semantics.md, "Subgroups", gives the meaning of the collective ops."""

from __future__ import annotations

from typing import Final

__all__ = ["SUBGROUP_SIZE"]

SUBGROUP_SIZE: Final = 32
