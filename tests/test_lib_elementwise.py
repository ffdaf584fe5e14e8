"""lib's generated elementwise functions and lib.fuse against numpy (reference backend), and
every bad case of issue 29 as a coded VyreError."""

from __future__ import annotations

import numpy as np
import pytest

from lib_grid import values
from vyre_decl import lib
from vyre_decl.ir.diagnostics import VyreError
from vyre_decl.lib.elementwise import TABLE

B = "reference"
EXACT = {"add", "subtract", "multiply", "divide", "maximum", "minimum", "fmax", "fmin", "negative", "absolute",
         "sign", "invert", "bitwise_and", "bitwise_or", "bitwise_xor", "equal", "not_equal", "less", "less_equal",
         "greater", "greater_equal", "where", "clip", "sqrt", "floor", "ceil", "trunc", "rint", "isnan", "isinf",
         "isfinite", "signbit", "copysign", "logical_and", "logical_or", "logical_xor", "logical_not", "fmod", "gcd",
         "reciprocal", "nextafter"}


def _operands(name, dtype):
    arity, forms = TABLE[name]
    kinds = "".join(forms)
    if np.dtype(dtype).kind not in kinds and not (np.dtype(dtype) == np.bool_ and "b" in kinds):
        return None
    a = values(dtype, (3, 4), 1)
    b = values(dtype, (4,), 2)  # broadcast along the rows
    if name in ("left_shift", "right_shift"):
        b = (np.abs(b.astype(np.int64)) % 7).astype(dtype)
    if name == "where":
        return [a.astype(bool), a, b]
    if name == "clip":
        return [a, b, np.full((), 3, dtype)]
    if name in ("log", "log2", "log10", "sqrt", "arccosh"):
        a = np.abs(a) + dtype(1) if np.dtype(dtype).kind == "f" else a
    if name in ("arcsin", "arccos", "arctanh"):
        a = (a / dtype(10)).astype(dtype)
    return [a, b][:arity]


@pytest.mark.parametrize("name", sorted(TABLE))
@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.int32, np.uint16, np.uint64, np.float16, np.float32, np.float64])
def test_elementwise_matches_numpy(name, dtype):
    ops = _operands(name, dtype)
    if ops is None:
        return
    fn = getattr(np, name)
    try:
        with np.errstate(all="ignore"):
            want = fn(*ops)
    except TypeError:
        with pytest.raises(VyreError):
            getattr(lib, name)(*ops, backend=B)
        return
    try:
        got = getattr(lib, name)(*ops, backend=B)
    except VyreError as e:  # a loop the registry has no op for is refused, never wrong
        assert e.codes[0] in ("L013", "L002"), e
        return
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype)
    if name in EXACT or want.dtype.kind != "f":
        assert np.array_equal(got, want, equal_nan=True), (got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=4 * np.finfo(want.dtype).eps, atol=np.finfo(want.dtype).tiny,
                                   equal_nan=True)


def test_fuse_is_one_program_with_numpy_promotion():
    a = np.linspace(-2, 2, 13, dtype=np.float32)
    b = np.arange(13, dtype=np.int16)
    f = lib.fuse(lambda x, y: lib.exp(x) * y + 1)
    got = f(a, b, backend=B)
    want = np.exp(a) * b + 1
    assert got.dtype == want.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-6)
    g = lib.fuse(lambda x: (x * x + 3 > 100, lib.where(x > 0, x, -x)))
    big, absval = g(np.arange(-20, 20, dtype=np.int8), backend=B)
    x8 = np.arange(-20, 20, dtype=np.int8)
    assert np.array_equal(big, x8 * x8 + 3 > 100) and np.array_equal(absval, np.where(x8 > 0, x8, -x8))


@pytest.mark.parametrize("bad,code", [
    (lambda: lib.sum([[1, 2], [3]], backend=B), "L001"),
    (lambda: lib.sum(np.array(["a"]), backend=B), "L001"),
    (lambda: lib.sum([1, 2], backend=None), "L003"),
    (lambda: lib.sum([1, 2], backend=5), "L003"),
    (lambda: lib.sum(np.ones((2, 2)), axis=2, backend=B), "L004"),
    (lambda: lib.sum(np.ones((2, 2)), axis=(0, 0), backend=B), "L004"),
    (lambda: lib.min(np.zeros(0), backend=B), "L005"),
    (lambda: lib.argmax(np.zeros((2, 0)), axis=1, backend=B), "L005"),
    (lambda: lib.nanargmin([np.nan, np.nan], backend=B), "L006"),
    (lambda: lib.take([1, 2], [0.5], backend=B), "L007"),
    (lambda: lib.take([1, 2], [np.nan], backend=B), "L007"),
    (lambda: lib.take([1, 2], [2], backend=B), "L008"),
    (lambda: lib.take([1, 2], [-3], backend=B), "L008"),
    (lambda: lib.matmul(np.ones((2, 3)), np.ones((2, 3)), backend=B), "L009"),
    (lambda: lib.add(np.ones(3), np.ones(4), backend=B), "L009"),
    (lambda: lib.sum(np.ones(3, np.int64), dtype=np.int32, backend=B), "L010"),
    (lambda: lib.sum(np.ones(3, np.float32), dtype=np.int64, backend=B), "L010"),
    (lambda: lib.sum(np.ones((2, 2)), axis=0, out=np.zeros(3), backend=B), "L011"),
    (lambda: lib.sum(np.ones((2, 2)), axis=0, out=np.zeros(2, np.float32), backend=B), "L011"),
    (lambda: lib.var(np.ones(3), ddof=-1, backend=B), "L012"),
    (lambda: lib.bitwise_and(np.ones(2), np.ones(2), backend=B), "L013"),
    (lambda: lib.add(np.ones(2, np.int8), 300, backend=B), "L014"),
    (lambda: lib.fuse(lambda x: 3)(np.ones(2), backend=B), "L015"),
    (lambda: lib.mean(np.ones(3, np.int64), backend=B), "L002"),
    (lambda: lib.exp(np.ones(2, np.int64), backend=B), "L002"),
    (lambda: lib.crc32(np.ones(2, np.uint32), backend=B), "L002"),
    (lambda: lib.topk(np.ones(3), 4, backend=B), "L016"),
])
def test_every_bad_case_is_a_coded_error_with_a_safe_fix(bad, code):
    with pytest.raises(VyreError) as e:
        bad()
    assert e.value.codes == [code]
    text = str(e.value)
    assert "Fix:" in text and "astype(np.uint32)" not in text and "astype(np.uint8)" not in text


def test_float16_and_bool_inputs_are_widened_exactly():
    h = np.array([1.5, -2.25, 65504], np.float16)
    assert lib.sum(h, backend=B) == np.float32(65503.25) and lib.min(h, backend=B).dtype == np.float16
    assert lib.sum(np.array([True, True, False]), backend=B) == 2
    assert lib.max(np.array([3, -7], np.int8).astype(">i2"), backend=B) == 3
