"""The cooperative routines on subgroup ops (issue 28): the 8-bit-digit radix sort (ranked by
match_any), compaction by one ballot per subgroup and 32 elements, and histograms aggregated in a
subgroup before the atomics. Sizes cross the sort's tiles (the keys a sweep workgroup exchanges:
6144), the chunks (4096 keys and more a workgroup) and partial subgroups; values are compared by
their bits (NaN payloads, -0.0); the CUDA backend (marked gpu; the simulated device on a machine
without one) gives the reference's bits."""

from __future__ import annotations

import numpy as np
import pytest

from vyre_decl.backends.cuda import cuda_available
from vyre_decl.routines import routine

GPU = pytest.mark.skipif(not cuda_available(), reason="no CUDA GPU: libcuda.so.1 cannot be loaded or reports no device")
# across sweep tiles of 6144 keys (and chunks of 4096); 13000: 3 tiles, the last one short
SIZES = [0, 1, 33, 2048, 2049, 4096, 4097, 6144, 6145, 13000]


def _keys(dtype: type, n: int, rng: np.random.Generator) -> np.ndarray:
    """Random words, a third of them few distinct small values (long runs of equal digits)."""
    bits = np.dtype(dtype).itemsize * 8
    k = rng.integers(0, 2**bits, n, dtype=np.uint64).astype(dtype)
    k[::3] = (k[::3] % 5).astype(dtype)
    return k


def _values(n: int, rng: np.random.Generator) -> np.ndarray:
    """f32 values with distinct NaN payloads and -0.0, so a moved value keeps its bits."""
    v = rng.standard_normal(n).astype(np.float32)
    w = v.view(np.uint32)
    w[1::7] = 0x7FC00000 | (np.arange(w[1::7].size, dtype=np.uint32) & 0x3FFFFF)
    w[2::7] = 0x80000000
    return v


def _sort_case(dtype: type, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return _keys(dtype, n, rng), _values(n, rng)


@pytest.mark.parametrize("dtype", [np.uint32, np.uint64])
@pytest.mark.parametrize("n", SIZES)
def test_radix_pairs_is_numpys_stable_sort_bit_for_bit(dtype, n):
    keys, vals = _sort_case(dtype, n, n + 1)
    got_k, got_v = routine("sort.radix_pairs")(keys, vals, backend="reference")
    order = np.argsort(keys, kind="stable")
    assert got_k.tobytes() == keys[order].tobytes()
    assert got_v.tobytes() == vals[order].tobytes()


@pytest.mark.parametrize("rid", ["sort.radix", "sort.radix_pairs", "sort.topk"])
@pytest.mark.parametrize("key,passes", [("u32", 4), ("u64", 8)])
def test_one_histogram_then_one_sweep_per_8_bit_digit(rid, key, passes, registry):
    """Onesweep's structure: one histogram launch for all digits, then bits(K) / 8 sweeps of
    ceil(n / tile) tiles each, tile the keys its workgroup exchanges (no count or scan launch per
    pass), the first reading the input."""
    from vyre_decl.routines import CompiledRoutine, routines

    d = routines()[rid]
    binding = next(b for b in d.bindings() if b["K"].value == key)
    compiled = CompiledRoutine(d, binding, registry)
    lengths = {"keys": 9000} | ({"vals": 9000} if rid == "sort.radix_pairs" else {})
    sizes, env = compiled.scope(lengths, {"k": 3} if rid == "sort.topk" else {})
    launched = [(step.kernel, grid) for step, _, grid in compiled.steps(sizes, env) if grid]
    kernels = [k for k, _ in launched]
    assert kernels[:1 + passes] == ["hist"] + ["sweep"] * passes, kernels
    tiles = -(-9000 // _tile())
    assert all(grid in (tiles, (tiles, 1, 1)) for k, grid in launched if k == "sweep"), launched
    first = next(step for step, _, _ in compiled.steps(sizes, env) if step.kernel == "sweep")
    assert first.args[0] == "keys"


@pytest.mark.parametrize("n", [5, 6145])
def test_topk_takes_the_largest_keys_lower_index_first(n):
    keys = _keys(np.uint32, n, np.random.default_rng(n))
    keys[: n // 2] = 3  # many ties
    top, ix = routine("sort.topk")(keys, backend="reference", k=5)
    order = np.argsort(-keys.astype(np.int64), kind="stable")[:5]
    assert np.array_equal(top, keys[order]) and np.array_equal(ix, order.astype(np.uint32))


def _mask_case(dtype: type, n: int, seed: int, share: float) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = np.where(rng.random(n) < share, rng.standard_normal(n) * 100 + 1, 0).astype(dtype)
    if n > 10 and np.dtype(dtype).kind == "f":
        x[3], x[4] = np.nan, -0.0  # a NaN is kept, -0.0 is not
    return x


@pytest.mark.parametrize("dtype", [np.float32, np.int64])
@pytest.mark.parametrize("share", [0.0, 0.5, 1.0])
@pytest.mark.parametrize("n", [0, 1, 33, 2049, 20000])
def test_compact_gives_numpys_nonzero(dtype, share, n):
    x = _mask_case(dtype, n, n, share)
    indices, count = routine("data.compact")(x, backend="reference")
    want = np.flatnonzero(x)
    assert count.tolist() == [want.size]
    assert np.array_equal(indices[: want.size], want) and not indices[want.size:].any()


@pytest.mark.parametrize("n", [0, 1, 33, 140000])
def test_byte_histogram_counts_skewed_and_random_bytes(n):
    rng = np.random.default_rng(n)
    b = rng.integers(0, 256, n).astype(np.uint8)
    b[: n // 2] = 200  # whole subgroups of one byte: one aggregated atomic each
    assert np.array_equal(routine("bytes.histogram")(b, backend="reference"), np.bincount(b, minlength=256))


@pytest.mark.parametrize("dtype", [np.uint32, np.uint64])
@pytest.mark.parametrize("bins", [1, 256, 1025])
def test_histogram_counts_values_below_bins(dtype, bins):
    rng = np.random.default_rng(bins)
    x = rng.integers(0, bins + 40, 70000).astype(dtype)
    x[:7000] = bins - 1
    x[7000:7100] = np.iinfo(dtype).max  # past every bin, and past u32 for u64
    got = routine("data.histogram")(x, backend="reference", bins=bins)
    assert np.array_equal(got, np.bincount(x[x < bins].astype(np.int64), minlength=bins))


def _same(a, b) -> bool:
    return all(x.dtype == y.dtype and x.tobytes() == y.tobytes()
               for x, y in zip(*(o if isinstance(o, tuple) else (o,) for o in (a, b))))


def _gpu_calls():
    for n in (2049, 6145, 13000):  # 1, 2 and 3 sweep tiles of 6144 keys
        yield pytest.param("sort.radix_pairs", _sort_case(np.uint32, n, n), {}, id=f"pairs-u32-{n}")
    yield pytest.param("sort.radix_pairs", _sort_case(np.uint64, 9000, 3), {}, id="pairs-u64-9000")
    yield pytest.param("sort.radix", _sort_case(np.uint32, 13000, 4)[:1], {}, id="radix-u32-13000")
    yield pytest.param("sort.topk", _sort_case(np.uint32, 6145, 5)[:1], {"k": 7}, id="topk-6145")
    yield pytest.param("data.compact", [_mask_case(np.float32, 20000, 6, 0.5)], {}, id="compact-f32-20000")
    b = np.random.default_rng(7).integers(0, 256, 140000).astype(np.uint8)
    b[:70000] = 9
    yield pytest.param("bytes.histogram", [b], {}, id="bytes-140000")
    x = np.random.default_rng(8).integers(0, 1100, 70000).astype(np.uint64)
    x[:30000] = 3
    for bins in (256, 1025):
        yield pytest.param("data.histogram", [x], {"bins": bins}, id=f"histogram-u64-{bins}")


@pytest.mark.gpu
@GPU
@pytest.mark.parametrize("rid,inputs,attrs", list(_gpu_calls()))
def test_cuda_gives_the_reference_bits(rid, inputs, attrs):
    ref = routine(rid)(*inputs, backend="reference", **attrs)
    assert _same(routine(rid)(*inputs, backend="cuda", **attrs), ref)
    assert _same(routine(rid)(*inputs, backend="cuda", **attrs), ref)  # the graph's replay


def _sweep_program(rid: str = "sort.radix", dtypes: tuple[str, ...] = ("uint32",)):
    compiled = routine(rid).compiled([np.dtype(d) for d in dtypes])
    return next(p for s, p in compiled.programs.items() if s.kernel == "sweep")


def _tile() -> int:
    """The keys one sweep workgroup ranks and exchanges: the count of its workgroup array keys."""
    return next(b.count for b in _sweep_program().buffers if b.name == "keys")


# what the look-back finds in look[] for the two tiles before the swept one (tile 2 of 3): nothing
# (their workgroups never ran: each digit's count comes from the tiles' keys), words of the pass
# before (stale tags), aggregates, and an inclusive prefix in tile 1 (tile 0 never read)
LOOKS = ["none", "stale", "aggregates", "inclusive"]


def _sweep_case(look: str):
    """Tile 2 of a 3-tile pass 1 (ticket 3 + 2), swept alone: the keys, the dispatch inputs and
    what a stable sort by digit 1 gives for the tile's keys (their places and the published
    inclusive counts)."""
    rng = np.random.default_rng(LOOKS.index(look))
    tile = _tile()
    n, pas = 2 * tile + 1808, 1
    keys = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    keys[::3] = keys[::3] % 7 << 8  # long runs of equal digits
    digit = (keys >> np.uint32(8 * pas)) & np.uint32(255)
    per_tile = np.stack([np.bincount(digit[tile * j:tile * j + tile], minlength=256) for j in range(3)]).astype(np.uint64)
    gh = np.zeros(4 * 256, np.uint32)
    gh[256 * pas:256 * pas + 256] = per_tile.sum(axis=0)
    words = np.zeros(3 * 256, np.uint64)
    tag = {"stale": 2 * pas, "aggregates": 2 * pas + 1, "inclusive": 2 * pas + 2}.get(look)
    if tag is not None:
        words[:512] = (np.uint64(tag) << np.uint64(32)) | (per_tile[:2].ravel() if tag != 2 * pas + 2 else 0)
    if look == "inclusive":
        words[:256] = np.uint64(7) << np.uint64(32)  # garbage that must not be read
        words[256:512] = (np.uint64(2 * pas + 2) << np.uint64(32)) | per_tile[:2].sum(axis=0)
    order = np.argsort(digit, kind="stable")
    place = np.empty(n, np.int64)
    place[order] = np.arange(n)
    inputs = [keys, np.zeros(0, np.uint32), np.array([3 + 2], np.uint32), gh, words,
              np.zeros(n, np.uint32), np.zeros(0, np.uint32)]
    incl = (np.uint64(2 * pas + 2) << np.uint64(32)) | per_tile.sum(axis=0)
    return keys, inputs, place[2 * tile:], incl


def _check_sweep(got, keys, place, incl) -> None:
    assert np.array_equal(got[-2][place], keys[2 * _tile():])  # the tile's keys, at their stable places
    assert np.array_equal(got[-3][512:], incl)  # its inclusive counts, published (outputs: state, look, dst, dst_v)


@pytest.mark.parametrize("look", LOOKS)
def test_sweep_takes_each_digits_offset_from_what_the_look_back_finds(look):
    """The look-back's outcomes on the reference: a predecessor that never published (or holds an
    earlier pass's word) is counted from its keys, an aggregate is added, an inclusive prefix ends
    the walk; each gives the same places."""
    import vyre_decl
    from vyre_decl.backends.config import DispatchConfig

    keys, inputs, place, incl = _sweep_case(look)
    got = vyre_decl.acquire("reference").dispatch(_sweep_program(), inputs, DispatchConfig(grid=(1, 1, 1)))
    _check_sweep(got, keys, place, incl)


@pytest.mark.gpu
@pytest.mark.parametrize("look", ["stale", "inclusive"])
def test_sweep_look_back_on_the_simulator(look):
    from vyre_decl.ops.simcheck import run_program

    keys, inputs, place, incl = _sweep_case(look)
    got, findings = run_program(_sweep_program(), inputs, (1, 1, 1))
    assert not findings
    _check_sweep(got, keys, place, incl)


def _sweep_ptxas(rid: str, dtypes: list[str]) -> tuple[int, int]:
    """``ptxas -v`` sm_90 of the routine's sweep kernel (the first pass's): its registers and the
    size of its cubin in bytes (the emitter writes the value code under ``if moves`` either way;
    ptxas drops it where moves is false)."""
    import re
    import subprocess
    import tempfile
    from pathlib import Path

    from vyre_decl.emit import emit
    from vyre_decl.emit.ptxas import find_ptxas

    with tempfile.TemporaryDirectory() as tmp:
        src, out = Path(tmp) / "k.ptx", Path(tmp) / "k.cubin"
        src.write_text(emit(_sweep_program(rid, tuple(dtypes)), target="sm_90").text)
        log = subprocess.run([str(find_ptxas()), "-arch=sm_90", "-v", str(src), "-o", str(out)],
                             capture_output=True, text=True).stderr
        found = re.search(r"Used (\d+) registers", log)
        assert found, log
        return int(found.group(1)), out.stat().st_size


def _has_ptxas() -> bool:
    from vyre_decl.emit.ptxas import find_ptxas

    return find_ptxas() is not None


@pytest.mark.skipif(not _has_ptxas(), reason="ptxas not found (pip install '.[test]' ships it)")
def test_the_keys_only_sweep_leaves_the_value_code_out():
    """sort.radix binds the sweep's moves = false, so no value is loaded, kept or stored: a smaller
    cubin than the same kernel moving u32 values, and no more registers (values are loaded only
    after the keys are written, so the ranking holds none: 64 and 64 with ptxas 13.0, the cap
    of the resident(4) sort.radix binds; sort.radix_pairs' resident(2) would allow 128)."""
    keys_regs, keys_bytes = _sweep_ptxas("sort.radix", ["uint32"])
    pairs_regs, pairs_bytes = _sweep_ptxas("sort.radix_pairs", ["uint32", "uint32"])
    assert keys_bytes < pairs_bytes and keys_regs <= pairs_regs


@pytest.mark.parametrize("rid", ["sort.radix", "sort.radix_pairs", "sort.topk"])
def test_lengths_whose_last_tile_would_wrap_u32_indices_are_refused(rid, registry):
    """With tiles of 6144 keys the last tile's places run to T * 6144 - 1, past 2^32 - 1 (a wrapped
    index would load or store a real element) above 699050 * 6144 keys: U017 names the bound."""
    from vyre_decl.ir.diagnostics import VyreError
    from vyre_decl.routines import CompiledRoutine, routines

    d = routines()[rid]
    compiled = CompiledRoutine(d, next(iter(d.bindings())), registry)
    attrs = {"k": 3} if rid == "sort.topk" else {}
    for n, refused in ((699050 * 6144, False), (699050 * 6144 + 1, True), (2**32 - 1, True)):
        lengths = {"keys": n} | ({"vals": n} if rid == "sort.radix_pairs" else {})
        try:
            compiled.scope(lengths, attrs)
            codes = []
        except VyreError as e:
            codes = e.codes
            assert not refused or "len(keys) <= 4294963200" in str(e), str(e)
        assert ("U017" in codes) == refused, (n, codes)
