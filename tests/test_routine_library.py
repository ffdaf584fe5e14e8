"""Every standard routine against numpy (tests/routine_cases.py) at sizes 0, 1, 31, 1000 and
2^20 + 3 (2-D routines at odd shapes), on the reference backend; on a GPU, the CUDA backend gives
the reference's bits for the same inputs (marked gpu)."""

from __future__ import annotations

import numpy as np
import pytest

from routine_cases import CASES, SIZES, check, same_bits
from vyre_decl.backends.cuda import cuda_available
from vyre_decl.routines import routine, routines

GPU = pytest.mark.skipif(not cuda_available(), reason="no CUDA GPU: libcuda.so.1 cannot be loaded or reports no device")
BIG = SIZES[-1]
# at the largest size, the reference backend runs these bindings only (it interprets every
# workgroup; a radix sort of 2^20 keys takes seconds)
BIG_ONLY = {"sort.radix_pairs": {("u32", "f32"), ("u64", "i64")}, "sort.radix": {("u32",), ("u64",)},
            "sort.topk": {("u32",)}}


def _bindings():
    for rid, d in sorted(routines().items()):
        if rid not in CASES:
            continue
        for binding in d.bindings():
            yield rid, binding


def _params(gpu: bool = False):
    for rid, binding in _bindings():
        names = tuple(t.value for t in binding.values())
        for n in SIZES:
            if n == BIG and not gpu and rid in BIG_ONLY and names not in BIG_ONLY[rid]:
                continue
            marks = [pytest.mark.hardware_only("2^20 elements take minutes a routine on the interpreter")] \
                if gpu and n == BIG else []
            yield pytest.param(rid, binding, n, id=f"{rid}-{'-'.join(names) or 'bytes'}-{n}", marks=marks)


def test_every_standard_routine_has_a_numpy_oracle():
    assert set(CASES) == set(routines()), set(routines()) ^ set(CASES)
    assert len(routines()) >= 20 and len({rid.split(".")[0] for rid in routines()}) >= 5


def _case(rid, binding, n, seed=None):
    """The numpy case of ``rid`` for a binding and size (seeded by size and id unless given)."""
    rng = np.random.default_rng(n * 7 + len(rid) if seed is None else seed)
    return CASES[rid]({k: np.dtype(t.storage_dtype) for k, t in binding.items()}, n, rng)


@pytest.mark.parametrize("rid,binding,n", list(_params()))
def test_routine_agrees_with_numpy(rid, binding, n):
    case = _case(rid, binding, n)
    got = routine(rid)(*case.inputs, backend="reference", **case.attrs)
    check(case, got)


@pytest.mark.gpu
@GPU
@pytest.mark.parametrize("rid,binding,n", list(_params(gpu=True)))
def test_cuda_gives_the_reference_bits_and_numpy_agrees(rid, binding, n):
    case = _case(rid, binding, n)
    got = routine(rid)(*case.inputs, backend="cuda", **case.attrs)
    check(case, got)
    again = routine(rid)(*case.inputs, backend="cuda", **case.attrs)  # the second call replays the graph
    ref = routine(rid)(*case.inputs, backend="reference", **case.attrs)
    for g, a, r in zip(*(o if isinstance(o, tuple) else (o,) for o in (got, again, ref))):
        assert same_bits(g, r) and same_bits(a, r), rid


@pytest.mark.parametrize("rid", sorted(CASES))
def test_written_buffers_are_written_before_they_are_read(rid, registry):
    """A replay does not zero a routine's ``written`` buffers: starting them as garbage must not
    change any output."""
    from vyre_decl.backends.reference import ReferenceBackend
    from vyre_decl.routines import CompiledRoutine

    d = routines()[rid]
    binding = d.bindings()[0]
    compiled = CompiledRoutine(d, binding, registry)
    ref = ReferenceBackend(registry)
    for n in (0, 1, 1000):
        case = _case(rid, binding, n, seed=n)
        clean = compiled.run_host(ref, case.inputs, case.attrs)
        dirty = compiled.run_host(ref, case.inputs, case.attrs, fill=0xAB)
        assert all(same_bits(a, b) for a, b in zip(clean, dirty)), (rid, n)
