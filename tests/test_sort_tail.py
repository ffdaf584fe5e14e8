"""The sort sweep's last, partial tile on CUDA (the simulated device on a machine without a GPU):
its missing keys are all-ones keys (digit 255 in every pass), so they take the tile's last places
and are never written, and the tile's published count of digit 255 leaves them out. Keys all of
digit 0 (what a missing key loaded as 0 would have), all of digit 255, and a mix, at sizes that
leave 1, 33 and 6143 keys in the last tile (6144-key tiles), give the reference's bits, which equal
numpy's stable sort."""

from __future__ import annotations

import numpy as np
import pytest

from vyre_decl.backends.cuda import cuda_available
from vyre_decl.routines import routine

GPU = pytest.mark.skipif(not cuda_available(), reason="no CUDA GPU: libcuda.so.1 cannot be loaded or reports no device")


def _keys(kind: str, n: int) -> np.ndarray:
    rng = np.random.default_rng(n)
    if kind == "zeros":  # every digit of every pass is the missing keys' digit 0
        return np.zeros(n, np.uint32)
    if kind == "max":  # digit 255 everywhere: topk's flipped keys are all 0
        return np.full(n, 0xFFFFFFFF, np.uint32)
    k = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    k[::2] &= np.uint32(0xFF00FF00)  # half the keys with digit 0 in passes 0 and 2
    return k


def _same(a, b) -> bool:
    a, b = (x if isinstance(x, tuple) else (x,) for x in (a, b))
    return all(x.dtype == y.dtype and x.tobytes() == y.tobytes() for x, y in zip(a, b))


CASES = [("sort.radix", "zeros", 6145), ("sort.radix", "mix", 6144 + 33), ("sort.radix", "mix", 12287),
         ("sort.radix_pairs", "zeros", 33), ("sort.radix_pairs", "mix", 6145), ("sort.topk", "max", 6144 + 33),
         ("sort.topk", "mix", 6145)]


@pytest.mark.gpu
@GPU
@pytest.mark.parametrize("rid,kind,n", CASES)
def test_the_partial_last_tile_gives_the_reference_bits(rid, kind, n):
    keys = _keys(kind, n)
    args = [keys, np.arange(n, dtype=np.float32)] if rid == "sort.radix_pairs" else [keys]
    attrs = {"k": 5} if rid == "sort.topk" else {}
    ref = routine(rid)(*args, backend="reference", **attrs)
    order = np.argsort(keys, kind="stable")
    if rid == "sort.radix":
        assert ref.tobytes() == keys[order].tobytes()
    elif rid == "sort.radix_pairs":
        assert ref[0].tobytes() == keys[order].tobytes() and ref[1].tobytes() == args[1][order].tobytes()
    assert _same(routine(rid)(*args, backend="cuda", **attrs), ref)
