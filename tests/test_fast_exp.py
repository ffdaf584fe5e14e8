"""The f32 exp and erf in f32 arithmetic (issue 28): their kernels (the exp and erf maps, the
nn.gelu and nn.silu routine kernels) emit no f64 instruction and no conversion to or from f64,
which is what brought the maps to the memory's speed; their special values; and their accuracy
against numpy's f64 evaluation around the places where the algorithms switch (the region
boundary of erf at |x| = 1 and its clamp at 3.93, exp's clamps, overflow and underflow
thresholds and the change of k), within the declared 1 ULP. The all-2^32 sweeps are
scripts/accuracy.py --gpu (docs/accuracy.md)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from vyre_decl.bench.kernels import map_program
from vyre_decl.conform.accuracy import ulp_error
from vyre_decl.emit import emit
from vyre_decl.ir.types import DataType
from vyre_decl.reference.interpreter import op_function
from vyre_decl.registry import default_registry
from vyre_decl.routines import routine

REG = default_registry()


def _f32(op_id: str):
    op = REG.get(op_id)
    binding = next(b for b in op.bindings() if op.output_type(b) is DataType.F32)
    fn = op_function(REG, op, binding)

    def call(x: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            return np.asarray(fn([np.asarray(x, np.float32)]), np.float32)
    return call


def _f64_lines(ptx: str) -> list[str]:
    """The instructions that compute in f64 or bring a value to f64. A kernel's f64 literal cast to
    f32 (``0.5f64 as T``: an immediate moved to an f64 register and converted, which ptxas folds)
    is not one."""
    lines = [ln.strip() for ln in ptx.splitlines()]
    return [ln for ln in lines if (".f64" in ln or "%fd" in ln) and not ln.startswith(("//", ".reg"))
            and not (ln.startswith("mov.f64") and ", 0d" in ln) and not ln.startswith("cvt.rn.f32.f64")]


@pytest.mark.parametrize("op_id", ["primitive.float.exp", "primitive.float.erf"])
def test_the_f32_map_emits_no_f64(op_id):
    ptx = emit(map_program(op_id, "f32")).text
    assert "fma.rn.f32" in ptx  # the function is there
    assert _f64_lines(ptx) == []


@pytest.mark.parametrize("rid", ["nn.gelu", "nn.silu"])
def test_the_f32_activation_kernels_emit_no_f64(rid):
    compiled = routine(rid).compiled([np.dtype(np.float32)])
    sizes, env = compiled.scope({"x": 1 << 12}, {})
    for _, program, _ in compiled.steps(sizes, env):
        ptx = emit(program).text
        assert "fma.rn.f32" in ptx and _f64_lines(ptx) == []


def test_special_values():
    exp, erf = _f32("primitive.float.exp"), _f32("primitive.float.erf")
    x = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 89.0, -104.0, 1e30, -1e30], np.float32)
    e = exp(x)
    assert np.isnan(e[:2]).all()
    assert e[2] == np.inf and e[3] == 0 and e[4] == e[5] == 1 and e[6] == np.inf and e[7] == 0
    assert e[8] == np.inf and e[9] == 0
    f = erf(x)
    assert np.isnan(f[:2]).all()
    assert f[2] == 1 and f[3] == -1 and f[8] == 1 and f[9] == -1
    assert f[4] == 0 and not np.signbit(f[4]) and f[5] == 0 and np.signbit(f[5])
    tiny = np.array([1e-45, -1e-45, 1e-40, 1e-38], np.float32)  # subnormal inputs: erf(x) = x 2/sqrt(pi)
    assert np.array_equal(erf(tiny), (tiny.astype(np.float64) * (2 / math.sqrt(math.pi))).astype(np.float32))


def _around(centres: list[float], n: int = 2048) -> np.ndarray:
    out = []
    for c in centres:
        bits = int(np.array(c, np.float32).view(np.uint32))
        out.append(np.arange(bits - n, bits + n, dtype=np.int64).astype(np.uint32).view(np.float32))
    return np.concatenate(out)


def _max_ulp(got: np.ndarray, want64: np.ndarray) -> float:
    with np.errstate(over="ignore"):
        return float(ulp_error(DataType.F32, got, want64.astype(np.float32)).max())


def test_erf_within_1_ulp_at_its_region_boundaries():
    x = _around([1.0, -1.0, 3.93, 3.9192, 0.5, 2.0, 1e-3])
    want = np.vectorize(math.erf, otypes=[np.float64])(x.astype(np.float64))
    assert _max_ulp(_f32("primitive.float.erf")(x), want) <= REG.get("primitive.float.erf").accuracy(DataType.F32)


def test_exp_within_1_ulp_at_its_thresholds():
    ln2 = math.log(2)
    x = _around([88.72, 89.0, -87.33, -103.28, -104.0, ln2 / 2, -ln2 / 2, 1.5 * ln2, 0.0, 1e-8, -1e-8, 10.0, -50.0])
    x = x[np.isfinite(x)]
    with np.errstate(over="ignore"):
        want = np.exp(x.astype(np.float64))
    assert _max_ulp(_f32("primitive.float.exp")(x), want) <= REG.get("primitive.float.exp").accuracy(DataType.F32)
