"""The single-pass integer scan (routines/scan.routines.toml, kernel single; issue 28): several
tiles on the reference against numpy, every integer type and scan; the look-back's timeout path
(a predecessor that never publishes: its bounded waits run out, and its aggregate is summed from
its input, Decoupled Fallback) on the reference and the simulated device; floats still take the
three launches of the fixed order."""

from __future__ import annotations

import numpy as np
import pytest

import vyre_decl
from vyre_decl.routines.kernels import kernel_program
from vyre_decl.backends.config import DispatchConfig
from vyre_decl.ops.simcheck import run_program

REF = vyre_decl.acquire("reference")
TILE = 4096

_SCANS = {
    "scan.sum": lambda x: np.cumsum(x, dtype=x.dtype),
    "scan.exclusive_sum": lambda x: np.concatenate([np.zeros(1, x.dtype), np.cumsum(x, dtype=x.dtype)[:-1]]),
    "scan.min": np.minimum.accumulate,
    "scan.max": np.maximum.accumulate,
}


def _single(rid: str, dtype: type, kernel: str = "single"):
    """The routine compiled for ``dtype`` and ``kernel`` as its step binds it, also where the routine
    never launches it for ``dtype`` (single for 32-bit types: they take single32)."""
    compiled = vyre_decl.routine(rid).compiled([np.dtype(dtype)])
    (step,) = [s for s in compiled.routine.all_steps() if s.kernel == kernel]
    if step in compiled.programs:
        return compiled, compiled.programs[step]
    r = compiled.routine
    params = {**r.params, **dict(step.params)}
    return compiled, kernel_program(r.kernels[kernel], {**compiled.binding, "A": compiled.binding["T"]}, params, REF.registry, r.id)


def _words(n: int, dtype: type, seed: int) -> np.ndarray:
    info = np.iinfo(dtype)
    return np.random.default_rng(seed).integers(info.min, info.max, n, dtype=dtype, endpoint=True)


@pytest.mark.parametrize("rid", sorted(_SCANS))
@pytest.mark.parametrize("dtype", [np.uint32, np.int32, np.uint64, np.int64])
def test_several_tiles_on_the_reference_match_numpy(rid, dtype):
    x = _words(3 * TILE + 17, dtype, 5)
    got = vyre_decl.routine(rid)(x, backend="reference")
    assert got.dtype == x.dtype and got.tobytes() == _SCANS[rid](x).tobytes()


def test_integers_take_one_launch_and_f64_three():
    x = np.zeros(10 * TILE, np.uint64)  # 32-bit integers take single32: tests/test_scan_packed.py
    compiled = vyre_decl.routine("scan.sum").compiled([x.dtype])
    sizes, env = compiled.scope({"x": x.size}, {})
    assert [(s.kernel, grid) for s, _, grid in compiled.steps(sizes, env) if grid] == [("single", 10)]
    assert sizes["state"] == 11 and sizes["vals"] == 20
    compiled = vyre_decl.routine("scan.sum").compiled([np.dtype(np.float64)])  # f32: test_scan_singlef.py
    sizes, env = compiled.scope({"x": x.size}, {})
    assert [s.kernel for s, _, grid in compiled.steps(sizes, env) if grid] == ["reduce.blocks", "offsets", "tiles"]
    assert sizes["state"] == 0 and sizes["vals"] == 0 and sizes["desc"] == 0


def _no_first_tile(n: int, dtype: type):
    """The kernel's inputs with the ticket counter starting at 1: no workgroup takes tile 0, whose
    flag stays 0, so every look-back that reaches it times out and sums its input instead."""
    tiles = -(-n // TILE)
    state = np.zeros(tiles + 1, np.uint32)
    state[tiles] = 1
    return [_words(n, dtype, n), np.zeros(0, dtype), state, np.zeros(2 * tiles, dtype), np.zeros(n, dtype)], tiles


@pytest.mark.parametrize("dtype", [np.uint32, np.int64])
def test_a_predecessor_that_never_publishes_is_summed_from_its_input(dtype):
    _, program = _single("scan.sum", dtype)
    inputs, tiles = _no_first_tile(3 * TILE + 100, dtype)
    state, vals, out = REF.dispatch(program, inputs, DispatchConfig(grid=(tiles, 1, 1)))
    want = np.cumsum(inputs[0], dtype=dtype)
    assert not out[:TILE].any() and out[TILE:].tobytes() == want[TILE:].tobytes()
    assert state[:tiles].tolist() == [0] + [2] * (tiles - 1)
    assert vals[3::2].tobytes() == want[2 * TILE - 1::TILE].tobytes() + want[-1:].tobytes()


@pytest.mark.parametrize("target", ["sm_90", "sm_75"])
def test_the_timeout_path_on_the_simulator_matches_the_reference(target):
    _, program = _single("scan.sum", np.uint32)
    inputs, tiles = _no_first_tile(2 * TILE + 5, np.uint32)
    want = REF.dispatch(program, inputs, DispatchConfig(grid=(tiles, 1, 1)))
    got, findings = run_program(program, inputs, (tiles, 1, 1), target=target)
    assert not findings and [g.tobytes() for g in got] == [w.tobytes() for w in want]


@pytest.mark.parametrize("rid", sorted(_SCANS))
def test_the_simulator_runs_several_tiles_bit_for_bit(rid):
    _, program = _single(rid, np.int32)
    n = 3 * TILE + 1
    tiles = -(-n // TILE)
    inputs = [_words(n, np.int32, 9), np.zeros(0, np.int32), np.zeros(tiles + 1, np.uint32),
              np.zeros(2 * tiles, np.int32), np.zeros(n, np.int32)]
    got, findings = run_program(program, inputs, (tiles, 1, 1))
    assert not findings and got[-1].tobytes() == _SCANS[rid](inputs[0]).tobytes()
    assert got[0].tolist() == [2] * tiles + [tiles]  # every flag inclusive, the counter at the tile count


def test_is_float_is_a_size_of_a_type_variable():
    from vyre_decl.routines.sizes import SizeError, parse_size

    e = parse_size("(1 - is_float(T)) * len(x)", frozenset({"x"}), frozenset(), frozenset({"T"}))
    assert e.evaluate({"x": 7}, {"is_float(T)": 0}) == 7 and e.evaluate({"x": 7}, {"is_float(T)": 1}) == 0
    assert e.constant() is None
    for bad in ("is_float(x)", "is_float(U)", "is_float(T, T)", "is_float()"):
        with pytest.raises(SizeError, match="is_float"):
            parse_size(bad, frozenset({"x"}), frozenset(), frozenset({"T"}))


def _half_done(dtype: type, inclusive: tuple[int, ...], tiles: int = 40, done: int = 36):
    """``tiles`` tiles whose first ``done`` are already published (an aggregate each, an inclusive
    prefix where ``inclusive`` says), the counter at ``done``: the lanes of the look-back meet
    inclusive prefixes at different distances; the aggregates they read above the nearest one are
    combined from workgroup memory (up to 256 tiles back), farther ones by walking them again."""
    x = _words(tiles * TILE - 7, dtype, 3)
    sums = np.cumsum(x, dtype=dtype)
    ends = np.minimum(np.arange(1, tiles + 1) * TILE, x.size) - 1
    incl = sums[ends]
    agg = np.concatenate([incl[:1], incl[1:] - incl[:-1]]).astype(dtype)  # wrapping differences
    vals = np.zeros(2 * tiles, dtype)
    vals[0:2 * done:2], vals[1:2 * done:2] = agg[:done], incl[:done]
    state = np.zeros(tiles + 1, np.uint32)
    state[:done] = 1
    state[list(inclusive)] = 2
    state[tiles] = done
    return [x, np.zeros(0, dtype), state, vals, np.zeros(x.size, dtype)], sums, done, tiles


@pytest.mark.parametrize("inclusive", [(0, 3, 20, 33), (0,), (0, 35), (0, 1, 2, 3, 4, 5)])
def test_lanes_that_meet_different_inclusive_prefixes_agree(inclusive):
    _, program = _single("scan.sum", np.uint64)
    inputs, sums, done, tiles = _half_done(np.uint64, inclusive)
    state, vals, out = REF.dispatch(program, inputs, DispatchConfig(grid=(tiles - done, 1, 1)))
    assert out[done * TILE:].tobytes() == sums[done * TILE:].tobytes() and not out[:done * TILE].any()
    assert state[done:tiles].tolist() == [2] * (tiles - done)
    got, findings = run_program(program, inputs, (tiles - done, 1, 1))
    assert not findings and [g.tobytes() for g in got] == [a.tobytes() for a in (state, vals, out)]


@pytest.mark.parametrize("dtype", [np.uint32, np.int64])
def test_a_look_back_past_256_tiles_walks_them_again(dtype):
    """The nearest inclusive prefix lies more than 256 tiles back: more aggregates than the look-back
    keeps in workgroup memory, so the lanes walk their tiles above it again (reference and simulator)."""
    _, program = _single("scan.sum", dtype)
    inputs, sums, done, tiles = _half_done(dtype, (0, 3), tiles=268, done=264)
    state, vals, out = REF.dispatch(program, inputs, DispatchConfig(grid=(tiles - done, 1, 1)))
    assert out[done * TILE:].tobytes() == sums[done * TILE:].tobytes()
    assert state[done:tiles].tolist() == [2] * (tiles - done)
    got, findings = run_program(program, [a.copy() for a in inputs], (tiles - done, 1, 1))
    assert not findings and [g.tobytes() for g in got] == [a.tobytes() for a in (state, vals, out)]
