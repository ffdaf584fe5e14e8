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
