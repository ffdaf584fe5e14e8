"""Shared fixtures: the standard registry, the reference backend, and a `run` helper that parses
a program from text and dispatches it on the reference backend."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
# every test process (and the processes tests start) caches in a fresh directory, never in ~/.cache
os.environ.setdefault("VYRE_DECL_CACHE_DIR", tempfile.mkdtemp(prefix="vyre_decl_test_cache_"))
# the suite tests the standard ops: a user's extra op directories must not change what it counts
# (the tests of VYRE_DECL_OPS_PATH itself set it for themselves)
os.environ.pop("VYRE_DECL_OPS_PATH", None)

from vyre_decl.backends.config import DispatchConfig  # noqa: E402
from vyre_decl.libcuda import SIM_ENV  # noqa: E402
from vyre_decl.backends.reference import ReferenceBackend  # noqa: E402
from vyre_decl.ir import parse_program  # noqa: E402
from vyre_decl.registry import default_registry  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def registry():
    return default_registry()


@pytest.fixture(scope="session")
def backend(registry):
    return ReferenceBackend(registry)


@pytest.fixture
def run(backend):
    def run(src: str, *inputs: Any, grid: tuple[int, int, int] | None = None, **config: Any) -> list[np.ndarray]:
        return backend.dispatch(parse_program(src), list(inputs), DispatchConfig(grid=grid, **config))

    return run


def pytest_collection_modifyitems(config, items):
    """On the simulated device (VYRE_DECL_CUDA_SIM set) the GPU tests run too, except those marked
    ``hardware_only(why)``: they measure the hardware or need what the model leaves out."""
    if not os.environ.get(SIM_ENV, "").strip():
        return
    for item in items:
        mark = item.get_closest_marker("hardware_only")
        if mark is not None:
            why = mark.args[0] if mark.args else "it needs a real GPU"
            item.add_marker(pytest.mark.skip(reason=f"not on the simulated device: {why}"))


@pytest.fixture(autouse=True)
def _simulated_sanitizer(request):
    """On the simulated device a gpu test fails when its kernels gave sanitizer findings (shared
    races, out-of-bounds shared accesses, divergent barriers, unwritten registers), unless it is
    marked ``sanitizer_findings`` (it plants them)."""
    if (not os.environ.get(SIM_ENV, "").strip() or request.node.get_closest_marker("gpu") is None
            or request.node.get_closest_marker("sanitizer_findings") is not None):
        yield
        return
    from vyre_decl import libcuda

    driver = libcuda.lib()
    before = len(driver.ptx_findings)
    yield
    found = [str(f) for f in driver.ptx_findings[before:] if f.kind != "approx"]
    assert not found, f"{len(found)} sanitizer findings: " + "\n".join(found[:5])
