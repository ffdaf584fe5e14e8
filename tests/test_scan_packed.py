"""The single-pass scan of 32-bit integers (routines/scan.routines.toml, kernel single32; issue 28):
each tile's aggregate and inclusive prefix are one 64-bit word each, flag << 32 | the value's bits,
published and read relaxed (no separate flag, no acquire/release fences). Which kernel each type
takes; the timeout path (a predecessor that never publishes is summed from its input); lanes that
meet inclusive prefixes at different distances; a look-back past 256 tiles; several tiles on the
simulated device -- the reference and the simulator bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

import vyre_decl
from vyre_decl.backends.config import DispatchConfig
from vyre_decl.ops.simcheck import run_program
from test_scan_lookback import REF, TILE as TILE64, _SCANS, _single

TILE = 8192  # single32's tile: 256 invocations x 32 elements (single's, TILE64, is 4096)

AGG, INCL = np.uint64(1 << 32), np.uint64(2 << 32)


def _program(rid: str, dtype: type):
    return _single(rid, dtype, "single32")[1]


def _words(n: int, dtype: type, seed: int) -> np.ndarray:
    info = np.iinfo(dtype)
    return np.random.default_rng(seed).integers(info.min, info.max, n, dtype=dtype, endpoint=True)


def _bits(v: np.ndarray) -> np.ndarray:
    return v.view(np.uint32).astype(np.uint64)


@pytest.mark.parametrize("dtype, kernel", [(np.uint32, "single32"), (np.int32, "single32"),
                                           (np.uint64, "single"), (np.int64, "single")])
def test_32_bit_integers_take_the_packed_kernel(dtype, kernel):
    compiled = vyre_decl.routine("scan.sum").compiled([np.dtype(dtype)])
    packed = kernel == "single32"
    sizes, env = compiled.scope({"x": 10 * (TILE if packed else TILE64)}, {})
    assert [(s.kernel, grid) for s, _, grid in compiled.steps(sizes, env) if grid] == [(kernel, 10)]
    assert (sizes["desc"], sizes["state"], sizes["vals"]) == ((21, 0, 0) if packed else (0, 11, 20))


@pytest.mark.parametrize("dtype", [np.uint32, np.int32])
@pytest.mark.parametrize("rid", sorted(_SCANS))
def test_several_tiles_on_the_reference_match_numpy(rid, dtype):
    x = _words(3 * TILE + 17, dtype, 5)
    got = vyre_decl.routine(rid)(x, backend="reference")
    assert got.dtype == x.dtype and got.tobytes() == _SCANS[rid](x).tobytes()


def _no_first_tile(n: int, dtype: type):
    """The ticket counter starts at 1: no workgroup takes tile 0, whose words stay 0, so every
    look-back that reaches it times out and sums its input instead."""
    tiles = -(-n // TILE)
    desc = np.zeros(2 * tiles + 1, np.uint64)
    desc[2 * tiles] = 1
    return [_words(n, dtype, n), np.zeros(0, dtype), desc, np.zeros(n, dtype)], tiles


@pytest.mark.parametrize("dtype", [np.uint32, np.int32])
def test_a_predecessor_that_never_publishes_is_summed_from_its_input(dtype):
    program = _program("scan.sum", dtype)
    inputs, tiles = _no_first_tile(3 * TILE + 100, dtype)
    desc, out = REF.dispatch(program, inputs, DispatchConfig(grid=(tiles, 1, 1)))
    want = np.cumsum(inputs[0], dtype=dtype)
    assert not out[:TILE].any() and out[TILE:].tobytes() == want[TILE:].tobytes()
    ends = np.minimum(np.arange(2, tiles + 1) * TILE, want.size) - 1
    assert desc[3:2 * tiles:2].tolist() == (INCL | _bits(want[ends])).tolist()
    assert desc[:2].tolist() == [0, 0] and all(int(d) >> 32 == 1 for d in desc[2:2 * tiles:2])


@pytest.mark.parametrize("target", ["sm_90", "sm_75"])
def test_the_timeout_path_on_the_simulator_matches_the_reference(target):
    program = _program("scan.sum", np.int32)
    inputs, tiles = _no_first_tile(2 * TILE + 5, np.int32)
    want = REF.dispatch(program, inputs, DispatchConfig(grid=(tiles, 1, 1)))
    got, findings = run_program(program, inputs, (tiles, 1, 1), target=target)
    assert not findings and [g.tobytes() for g in got] == [w.tobytes() for w in want]


@pytest.mark.parametrize("rid", sorted(_SCANS))
def test_the_simulator_runs_several_tiles_bit_for_bit(rid):
    program = _program(rid, np.int32)
    n = 3 * TILE + 1
    tiles = -(-n // TILE)
    x = _words(n, np.int32, 9)
    inputs = [x, np.zeros(0, np.int32), np.zeros(2 * tiles + 1, np.uint64), np.zeros(n, np.int32)]
    got, findings = run_program(program, inputs, (tiles, 1, 1))
    assert not findings and got[-1].tobytes() == _SCANS[rid](x).tobytes()
    assert [int(d) >> 32 for d in got[0][:-1]] == [1, 2] * tiles and got[0][-1] == tiles


def _half_done(dtype: type, inclusive: tuple[int, ...], tiles: int = 40, done: int = 36):
    """``tiles`` tiles whose first ``done`` already published their aggregate (and an inclusive
    prefix where ``inclusive`` says), the counter at ``done``."""
    x = _words(tiles * TILE - 7, dtype, 3)
    sums = np.cumsum(x, dtype=dtype)
    ends = np.minimum(np.arange(1, tiles + 1) * TILE, x.size) - 1
    incl = sums[ends]
    agg = np.concatenate([incl[:1], incl[1:] - incl[:-1]]).astype(dtype)  # wrapping differences
    desc = np.zeros(2 * tiles + 1, np.uint64)
    desc[0:2 * done:2] = AGG | _bits(agg[:done])
    desc[2 * np.array(inclusive) + 1] = INCL | _bits(incl[list(inclusive)])
    desc[2 * tiles] = done
    return [x, np.zeros(0, dtype), desc, np.zeros(x.size, dtype)], sums, done, tiles


@pytest.mark.parametrize("inclusive", [(0, 3, 20, 33), (0,), (0, 35), (0, 1, 2, 3, 4, 5)])
def test_lanes_that_meet_different_inclusive_prefixes_agree(inclusive):
    program = _program("scan.sum", np.uint32)
    inputs, sums, done, tiles = _half_done(np.uint32, inclusive)
    desc, out = REF.dispatch(program, inputs, DispatchConfig(grid=(tiles - done, 1, 1)))
    assert out[done * TILE:].tobytes() == sums[done * TILE:].tobytes() and not out[:done * TILE].any()
    assert [int(d) >> 32 for d in desc[2 * done + 1:2 * tiles:2]] == [2] * (tiles - done)
    got, findings = run_program(program, inputs, (tiles - done, 1, 1))
    assert not findings and [g.tobytes() for g in got] == [a.tobytes() for a in (desc, out)]


@pytest.mark.parametrize("dtype", [np.uint32, np.int32])
def test_a_look_back_past_256_tiles_walks_them_again(dtype):
    program = _program("scan.sum", dtype)
    inputs, sums, done, tiles = _half_done(dtype, (0, 3), tiles=268, done=264)
    desc, out = REF.dispatch(program, inputs, DispatchConfig(grid=(tiles - done, 1, 1)))
    assert out[done * TILE:].tobytes() == sums[done * TILE:].tobytes()
    got, findings = run_program(program, [a.copy() for a in inputs], (tiles - done, 1, 1))
    assert not findings and [g.tobytes() for g in got] == [a.tobytes() for a in (desc, out)]
