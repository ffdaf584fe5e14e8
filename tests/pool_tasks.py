"""Shard tasks for the multi-device pool tests, importable by the pool's spawned worker processes."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from vyre_decl.conform.certify import RunSpec, run_shard

MARKER = "VYRE_TEST_DIE_ONCE"


def die_once(spec: RunSpec, slot: str, index: int, count: int) -> dict[str, Any]:
    """Shard 1's first attempt kills its worker process (as a GPU driver crash would); the rest run."""
    marker = Path(os.environ[MARKER])
    if index == 1 and not marker.exists():
        marker.write_text(slot)
        os._exit(3)
    return run_shard(spec, slot, index, count)


def lose_the_device(spec: RunSpec, slot: str, index: int, count: int) -> dict[str, Any]:
    """Slot "reference:lost" behaves as a device that is lost mid-shard."""
    from vyre_decl.conform.isolation import DeviceLost

    if slot == "reference:lost":
        raise DeviceLost("cuda:1 cannot be started again after a fault: CUDA_ERROR_ECC_UNCORRECTABLE")
    return run_shard(spec, slot, index, count)
