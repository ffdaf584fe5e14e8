"""The one-pass scan of 32-bit floats (routines/scan.routines.toml, kernel singlef; issue 28): the
order documented in docs/routines.md, computed independently on whole arrays by the host path
(routines/hostscan.py), equals the interpreter's bit for bit across tiles and groups; a tile
aggregate or group prefix that never arrives is recomputed in the same order (the reference and
the simulated device); a step whose grid is 0 by its types alone is not compiled for them."""

from __future__ import annotations

import numpy as np
import pytest

import vyre_decl
from vyre_decl.backends.config import DispatchConfig
from vyre_decl.ops.simcheck import run_program
from vyre_decl.routines import hostpath
from vyre_decl.routines.sizes import parse_size

REF = vyre_decl.acquire("reference")
TILE, GROUP = 8192, 64
SCANS = ["scan.sum", "scan.exclusive_sum", "scan.min", "scan.max"]


def _values(n: int, seed: int) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal(n).astype(np.float32)
    x[: min(n, 9)] = -0.0  # the identity's sign shows where an identity is combined
    if n == 1031:  # one tile: a NaN makes every later prefix NaN, which would hide the order
        x[1024] = np.nan
    return x


@pytest.mark.parametrize("dtype, kernels", [(np.float32, ["singlef"]), (np.float64, ["reduce.blocks", "offsets", "tiles"])])
def test_f32_takes_one_pass_and_f64_three(dtype, kernels):
    compiled = vyre_decl.routine("scan.sum").compiled([np.dtype(dtype)])
    sizes, env = compiled.scope({"x": 70 * TILE}, {})
    assert [s.kernel for s, _, grid in compiled.steps(sizes, env) if grid] == kernels
    assert sizes["desc"] == (2 * 70 + 1 if dtype == np.float32 else 0)
    assert [s.kernel for s in compiled.programs] == kernels  # the others are not compiled for dtype


@pytest.mark.parametrize("rid", SCANS)
@pytest.mark.parametrize("n", [1, 1031, TILE + 1, GROUP * TILE + 3, 130 * TILE - 77])
def test_the_documented_order_is_the_kernels(rid, n):
    compiled = vyre_decl.routine(rid).compiled([np.dtype(np.float32)])
    x = _values(n, n)
    (model,) = hostpath.run_steps(compiled, REF, [x], {})
    (kernel,) = compiled.run_host(REF, [x], {})
    assert model.tobytes() == kernel.tobytes()
    want = np.cumsum(x.astype(np.float64))
    if rid == "scan.sum":
        assert np.allclose(kernel[1024:], want[1024:], rtol=0, atol=1e-4 * np.abs(x[1025:]).sum() + 1e-6, equal_nan=True)


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    """The same bits, any NaN equal to any NaN (docs/semantics.md: NaN payloads are open)."""
    nan = np.isnan(a)
    return a.shape == b.shape and bool((nan == np.isnan(b)).all()) and a[~nan].tobytes() == b[~nan].tobytes()


def _program(rid: str = "scan.sum"):
    (program,) = vyre_decl.routine(rid).compiled([np.dtype(np.float32)]).programs.values()
    return program


def _run(program, x, desc, grid):
    inputs = [x, np.zeros(0, np.float32), desc, np.zeros(x.size, np.float32)]
    return REF.dispatch(program, inputs, DispatchConfig(grid=(grid, 1, 1)))


@pytest.fixture(scope="module")
def whole():
    """130 tiles (groups 0, 1 and a part of 2) run whole on the reference: x, desc, and the
    documented order's result (the host path's model, not the kernel)."""
    x = _values(130 * TILE - 77, 3)
    tiles = -(-x.size // TILE)
    desc, _ = _run(_program(), x, np.zeros(2 * tiles + 1, np.uint64), tiles)
    (model,) = hostpath.run_steps(vyre_decl.routine("scan.sum").compiled([x.dtype]), REF, [x], {})
    return x, desc, model


def _holes(desc: np.ndarray, tiles: int, done: int, holes: list[int]) -> np.ndarray:
    """desc with tiles ``done`` .. not yet run (their words 0, the counter at ``done``) and the
    words of the tiles in ``holes`` never published."""
    d = desc.copy()
    d[2 * done:2 * tiles] = 0
    d[2 * tiles] = done
    for j in holes:
        d[2 * j:2 * j + 2] = 0
    return d


@pytest.mark.parametrize("holes", [[63], [5, 64], [0, 63, 64, 127]])
def test_a_word_that_never_arrives_is_recomputed_in_the_same_order(whole, holes):
    """Tiles 126 .. 129 run last: a missing aggregate is summed from its tile's input, a missing
    group prefix from the nearest published one (or from the start) -- the same bits."""
    x, desc, out = whole
    tiles = desc.size // 2
    done = tiles - 4
    got_desc, got = _run(_program(), x, _holes(desc, tiles, done, holes), 4)
    assert got[done * TILE:].tobytes() == out[done * TILE:].tobytes()
    published = [2 * j + 1 for j in range(done, tiles) if j % GROUP == GROUP - 1]
    assert got_desc[published].tolist() == desc[published].tolist() and published


def test_the_recomputation_on_the_simulator_matches_the_reference(whole):
    x, desc, out = whole
    tiles = desc.size // 2
    done = tiles - 4
    inputs = [x, np.zeros(0, np.float32), _holes(desc, tiles, done, [63]), np.zeros(x.size, np.float32)]
    got, findings = run_program(_program(), inputs, (4, 1, 1))
    assert not findings and _same(got[-1][done * TILE:], out[done * TILE:])


@pytest.mark.parametrize("text, zero_for_f64, zero_for_f32", [
    ("is_float(T) * (1 - bits(T) // 64) * ceil_div(len(x), 8192)", True, False),
    ("(1 - is_float(T)) * len(x)", True, True),
    ("(len(x) - len(x)) * 2", False, False),  # 0, but through the lengths: compiled
    ("len(x) * (bits(T) // (bits(T) - 32))", False, False),  # divides by 0 for f32: undecided
])
def test_a_grid_zero_by_its_types_alone(text, zero_for_f64, zero_for_f32):
    expr = parse_size(text, frozenset({"x"}), frozenset(), frozenset({"T"}))
    assert expr.zero_by_types({"bits(T)": 64, "is_float(T)": 1}) is zero_for_f64
    assert expr.zero_by_types({"bits(T)": 32, "is_float(T)": 1}) is zero_for_f32
