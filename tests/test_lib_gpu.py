"""lib on the CUDA backend gives the reference backend's bits (small sizes; runs on the simulated
H100 with VYRE_DECL_CUDA_SIM=h100, and on a GPU)."""

from __future__ import annotations

import numpy as np
import pytest

from lib_grid import same_bits, values
from vyre_decl import lib
from vyre_decl.backends.cuda import cuda_available

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not cuda_available(), reason="no CUDA GPU: libcuda.so.1 cannot be loaded or reports no device")]

CALLS = {
    "sum": lambda x, be: lib.sum(x, backend=be), "sum0": lambda x, be: lib.sum(x, axis=0, backend=be),
    "min": lambda x, be: lib.min(x, axis=-1, backend=be), "nanmax": lambda x, be: lib.nanmax(x, backend=be),
    "argmax": lambda x, be: lib.argmax(x, backend=be), "argmin1": lambda x, be: lib.argmin(x, axis=1, backend=be),
    "mean": lambda x, be: lib.mean(x, axis=0, backend=be), "std": lambda x, be: lib.std(x, axis=1, ddof=1, backend=be),
    "cumsum": lambda x, be: lib.cumsum(x, axis=1, backend=be), "cummax": lambda x, be: lib.cummax(x, backend=be),
    "sort": lambda x, be: lib.sort(x, backend=be), "exp": lambda x, be: lib.exp(x, backend=be),
    "fused": lambda x, be: lib.fuse(lambda a: lib.sin(a) * a + 1)(x, backend=be),
    "unique": lambda x, be: lib.unique(x, return_index=True, return_inverse=True, return_counts=True, backend=be),
    "searchsorted": lambda x, be: lib.searchsorted(np.sort(x.ravel()), x, side="right", backend=be),
    "argsort": lambda x, be: lib.argsort(x, axis=0, backend=be),
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int8, np.uint32])
@pytest.mark.parametrize("name", sorted(CALLS))
def test_cuda_gives_the_reference_bits(name, dtype):
    x = values(dtype, (3, 5), 7)
    if np.dtype(dtype).kind == "f":
        x.flat[4] = np.nan
    try:
        want = CALLS[name](x, "reference")
    except Exception as e:  # refused on the reference: refused alike on CUDA
        with pytest.raises(type(e)):
            CALLS[name](x, "cuda")
        return
    got = CALLS[name](x, "cuda")
    pairs = zip(got, want) if isinstance(want, tuple) else [(got, want)]
    assert all(same_bits(g, w) for g, w in pairs), (name, got, want)
