"""data.transpose's tiles (routines/data.routines.toml, [kernel.transpose]): tiles of 64 rows x 32
columns, whole tiles stored without per-element tests and edge tiles with them. Every shape kind (empty,
one row, one column, multiples of 64, tiles cut on either side or both, several tiles each way) and
every type the routine takes, with random bits (NaN payloads, -0 and subnormals included), give
numpy's transpose bit for bit on the reference and, marked gpu, on CUDA."""

from __future__ import annotations

import numpy as np
import pytest

from vyre_decl.backends.cuda import cuda_available
from vyre_decl.routines import routine

GPU = pytest.mark.skipif(not cuda_available(), reason="no CUDA GPU: libcuda.so.1 cannot be loaded or reports no device")
TYPES = {"u32": np.uint32, "i32": np.int32, "f32": np.float32, "u64": np.uint64, "i64": np.int64, "f64": np.float64}
# (rows, cols): empty both ways, 1 x n, n x 1, exactly one and several whole tiles, tiles cut in
# rows, in columns and in both, a matrix whose interior tiles sit beside edge tiles each way.
SHAPES = [(0, 5), (5, 0), (1, 1), (1, 200), (200, 1), (64, 32), (64, 64), (128, 192), (63, 64), (64, 65),
          (2, 3), (33, 65), (130, 70), (65, 129), (7, 300)]
FEW = [(1, 200), (200, 1), (128, 192), (130, 70), (65, 129)]


def _bits(dtype: type, rows: int, cols: int) -> np.ndarray:
    """rows * cols random words of ``dtype``'s width, as ``dtype`` (floats: any bit pattern)."""
    width = np.dtype(dtype).itemsize
    words = np.random.default_rng(rows * 1000 + cols).integers(0, 1 << 63, rows * cols, dtype=np.int64)
    raw = words.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    return (raw if width == 8 else raw.astype(np.uint32)).view(dtype)


def _check(backend: str, name: str, rows: int, cols: int) -> None:
    x = _bits(TYPES[name], rows, cols)
    got = routine("data.transpose")(x, backend=backend, rows=rows, cols=cols)
    want = np.ascontiguousarray(x.reshape(rows, cols).T).reshape(-1)
    assert got.dtype == x.dtype and got.shape == want.shape
    unsigned = np.uint64 if x.itemsize == 8 else np.uint32
    np.testing.assert_array_equal(got.view(unsigned), want.view(unsigned), err_msg=f"{name} {rows} x {cols}")


@pytest.mark.parametrize("rows,cols", SHAPES)
def test_reference_transposes_every_shape(rows, cols):
    _check("reference", "f32", rows, cols)


@pytest.mark.parametrize("name", sorted(TYPES))
def test_reference_transposes_every_type_bitwise(name):
    _check("reference", name, 130, 70)


@pytest.mark.gpu
@GPU
@pytest.mark.parametrize("rows,cols", SHAPES)
def test_cuda_transposes_every_shape(rows, cols):
    _check("cuda", "f32", rows, cols)


@pytest.mark.gpu
@GPU
@pytest.mark.parametrize("name", sorted(TYPES))
@pytest.mark.parametrize("rows,cols", FEW)
def test_cuda_transposes_every_type_bitwise(name, rows, cols):
    _check("cuda", name, rows, cols)
