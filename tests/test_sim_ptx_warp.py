"""The PTX interpreter's warp-level instructions against the PTX ISA's pseudocode, written out here
per lane in plain Python: shfl.sync (up/down/bfly/idx, clamp and segmask, the p destination),
vote.sync, match.sync, redux.sync; and the sanitizer's warp findings."""

from __future__ import annotations

import numpy as np
import pytest

from sim_ptx_helpers import launch
from vyre_decl.sim.ptx import PtxError, load_module


def _kernel(body: str, sm: int = 90, extra: str = "") -> str:
    """A kernel with %r0 = a[tid], %l = %laneid, and %r9 written to out[tid] after ``body``."""
    return f"""
.version 8.0
.target sm_{sm}
.address_size 64
.visible .entry k(.param .u64 pa, .param .u64 po)
{{
\t.reg .u64 %ad<4>;
\t.reg .u32 %r<10>;
\t.reg .u32 %t;
\t.reg .u32 %l;
\t.reg .pred %p<4>;
{extra}
\tmov.u32 %t, %tid.x;
\tmov.u32 %l, %laneid;
\tld.param.u64 %ad0, [pa];
\tmul.wide.u32 %ad2, %t, 4;
\tadd.u64 %ad0, %ad0, %ad2;
\tld.global.u32 %r0, [%ad0];
\tmov.u32 %r9, 0;
{body}
\tld.param.u64 %ad1, [po];
\tadd.u64 %ad1, %ad1, %ad2;
\tst.global.u32 [%ad1], %r9;
\tret;
}}
"""


def _run(body: str, a: np.ndarray, threads: int | None = None, sm: int = 90, extra: str = ""):
    n = a.size if threads is None else threads
    (_, out), findings = launch(_kernel(body, sm, extra), "k", (1, 1, 1), (n, 1, 1),
                                [a.astype(np.uint32), np.zeros(n, np.uint32)], sm=sm)
    return out, findings


def _shfl_model(mode: str, a: list[int], b: int, c: int) -> tuple[list[int], list[bool]]:
    """The ISA's pseudocode, one lane at a time."""
    out, preds = [], []
    b &= 31  # bval[4:0] = b[4:0]
    for lane in range(len(a)):
        w = lane % 32
        base = lane - w
        cval, seg = c & 31, (c >> 8) & 31
        max_lane = (w & seg) | (cval & ~seg)
        min_lane = w & seg
        if mode == "up":
            j, p = w - b, w - b >= max_lane
        elif mode == "down":
            j, p = w + b, w + b <= max_lane
        elif mode == "bfly":
            j, p = w ^ b, (w ^ b) <= max_lane
        else:
            j = min_lane | (b & ~seg)
            p = j <= max_lane
        j = j if p else w
        out.append(a[base + j])
        preds.append(p)
    return out, preds


@pytest.mark.parametrize("mode,b,c", [("up", 1, 0), ("up", 5, 0), ("down", 1, 31), ("down", 7, 31), ("bfly", 1, 31),
                                      ("bfly", 16, 31), ("idx", 3, 31), ("idx", 37, 31), ("down", 2, 0x0C07),
                                      ("bfly", 3, 0x1C03), ("idx", 5, 0x1807), ("up", 2, 0x1808)])
def test_shfl_modes_match_the_isa_pseudocode(mode: str, b: int, c: int) -> None:
    a = np.arange(64, dtype=np.uint32) * 7 + 3
    body = (f"\tshfl.sync.{mode}.b32 %r1|%p1, %r0, {b}, {c}, 0xffffffff;\n"
            "\tselp.u32 %r2, 1000000, 0, %p1;\n\tadd.u32 %r9, %r1, %r2;")
    out, findings = _run(body, a)
    want, preds = _shfl_model(mode, [int(x) for x in a], b, c)
    assert out.tolist() == [v + (1000000 if p else 0) for v, p in zip(want, preds)]
    assert findings == []


def test_shfl_idx_with_a_register_lane_and_a_float_register() -> None:
    a = np.arange(32, dtype=np.uint32)
    body = ("\txor.b32 %r1, %l, 31;\n\t.reg .f32 %f<2>;\n\tmov.b32 %f0, %r0;\n"
            "\tshfl.sync.idx.b32 %f1, %f0, %r1, 31, -1;\n\tmov.b32 %r9, %f1;")
    out, findings = _run(body, a)
    assert out.tolist() == list(range(31, -1, -1)) and findings == []


def test_vote_ballot_any_all_uni() -> None:
    a = np.array([1 if i % 3 == 0 else 0 for i in range(64)], dtype=np.uint32)
    body = ("\tsetp.ne.u32 %p0, %r0, 0;\n\tvote.sync.ballot.b32 %r1, %p0, 0xffffffff;\n"
            "\tvote.sync.any.pred %p1, %p0, 0xffffffff;\n\tsetp.lt.u32 %p2, %l, 16;\n"
            "\tselp.b32 %r6, 0x0000ffff, 0xffff0000, %p2;\n\tvote.sync.all.pred %p2, !%p0, %r6;\n"
            "\tvote.sync.uni.pred %p3, %p0, 0xffffffff;\n"
            "\tselp.u32 %r2, 1, 0, %p1;\n\tselp.u32 %r3, 2, 0, %p2;\n\tselp.u32 %r4, 4, 0, %p3;\n"
            "\tadd.u32 %r5, %r2, %r3;\n\tadd.u32 %r5, %r5, %r4;\n\tsetp.eq.u32 %p0, %t, 0;\n"
            "\tselp.u32 %r9, %r1, %r5, %p0;\n\tsetp.eq.u32 %p0, %t, 32;\n\tselp.u32 %r9, %r1, %r9, %p0;")
    out, findings = _run(body, a)
    warp0 = sum(1 << i for i in range(32) if i % 3 == 0)
    warp1 = sum(1 << i for i in range(32) if (i + 32) % 3 == 0)
    assert out[0] == warp0 and out[32] == warp1
    assert set(out[1:16].tolist()) == {1}  # any; not all of !p over lanes 0..15 (lane 0 has p); not uniform
    assert findings == []
    b = np.zeros(32, np.uint32)
    out, _ = _run("\tsetp.ne.u32 %p0, %r0, 0;\n\tvote.sync.all.pred %p2, !%p0, -1;\n"
                  "\tvote.sync.uni.pred %p3, %p0, -1;\n\tselp.u32 %r2, 2, 0, %p2;\n\tselp.u32 %r3, 4, 0, %p3;\n"
                  "\tadd.u32 %r9, %r2, %r3;", b)
    assert set(out.tolist()) == {6}


def test_ballot_in_a_partial_warp_and_after_exits() -> None:
    a = np.ones(40, np.uint32)
    out, findings = _run("\tsetp.ne.u32 %p0, %r0, 0;\n\tvote.sync.ballot.b32 %r9, %p0, 0xffffffff;", a)
    assert out[:32].tolist() == [0xFFFFFFFF] * 32 and out[32:].tolist() == [0xFF] * 8 and findings == []
    body = ("\tand.b32 %r1, %t, 1;\n\tsetp.eq.u32 %p1, %r1, 1;\n\t@%p1 exit;\n"
            "\tsetp.ne.u32 %p0, %r0, 0;\n\tvote.sync.ballot.b32 %r9, %p0, 0xffffffff;")
    out, findings = _run(body, np.ones(32, np.uint32))
    assert out[::2].tolist() == [0x55555555] * 16 and findings == []


def test_match_any_and_all() -> None:
    a = np.array([i % 4 for i in range(32)], dtype=np.uint32)
    out, findings = _run("\tmatch.any.sync.b32 %r9, %r0, 0xffffffff;", a)
    assert out.tolist() == [sum(1 << j for j in range(32) if j % 4 == i % 4) for i in range(32)] and not findings
    out, _ = _run("\tmatch.all.sync.b32 %r1|%p1, %r0, 0xffffffff;\n\tselp.u32 %r2, 7, 0, %p1;\n"
                  "\tadd.u32 %r9, %r1, %r2;", a)
    assert set(out.tolist()) == {0}
    out, _ = _run("\tmatch.all.sync.b32 %r1|%p1, %r0, 0xffffffff;\n\tselp.u32 %r2, 7, 0, %p1;\n"
                  "\tadd.u32 %r9, %r1, %r2;", np.full(32, 5, np.uint32))
    assert set(out.tolist()) == {0xFFFFFFFF + 7 - (1 << 32)}


def test_match_needs_sm70_and_redux_sm80() -> None:
    with pytest.raises(PtxError, match="sm_80"):
        load_module(_kernel("\tredux.sync.add.u32 %r9, %r0, -1;", sm=75), 75)
    load_module(_kernel("\tmatch.any.sync.b32 %r9, %r0, -1;", sm=75), 75)


@pytest.mark.parametrize("op,t,fold", [("add", "u32", lambda xs: sum(xs) & 0xFFFFFFFF), ("min", "u32", min),
                                       ("max", "s32", None), ("and", "b32", None), ("or", "b32", None),
                                       ("xor", "b32", None)])
def test_redux(op: str, t: str, fold) -> None:
    rng = np.random.default_rng(5)
    a = rng.integers(0, 2**32, 48, dtype=np.uint64).astype(np.uint32)
    out, findings = _run(f"\tredux.sync.{op}.{t} %r9, %r0, 0xffffffff;", a)
    for lo, hi in ((0, 32), (32, 48)):
        xs = [int(x) for x in a[lo:hi]]
        if op == "max":
            want = max(x - (1 << 32) if x >> 31 else x for x in xs) & 0xFFFFFFFF
        elif fold is None:
            want = xs[0]
            for x in xs[1:]:
                want = {"and": want & x, "or": want | x, "xor": want ^ x}[op]
        else:
            want = fold(xs)
        assert set(out[lo:hi].tolist()) == {want}, op
    assert findings == []


def test_shfl_from_an_exited_lane_is_reported() -> None:
    body = ("\tsetp.eq.u32 %p1, %t, 5;\n\t@%p1 exit;\n"
            "\tshfl.sync.idx.b32 %r9, %r0, 5, 31, 0xffffffff;")
    _, findings = _run(body, np.arange(32, dtype=np.uint32))
    assert [f.kind for f in findings] == ["shfl_inactive_source"]


def test_shfl_from_a_lane_outside_the_membermask_is_reported() -> None:
    _, findings = _run("\tshfl.sync.idx.b32 %r9, %r0, 20, 31, 0x0000ffff;\n", np.arange(16, dtype=np.uint32))
    assert [f.kind for f in findings] == ["shfl_inactive_source"]


def test_a_divergent_shfl_is_reported() -> None:
    body = ("\tsetp.lt.u32 %p1, %t, 16;\n\t@%p1 bra $A;\n"
            "\tshfl.sync.bfly.b32 %r9, %r0, 1, 31, 0xffffffff;\n\tbra $B;\n$A:\n"
            "\tshfl.sync.bfly.b32 %r9, %r0, 2, 31, 0xffffffff;\n$B:\n\tadd.u32 %r9, %r9, 0;")
    _, findings = _run(body, np.arange(32, dtype=np.uint32))
    assert "warp_divergence" in {f.kind for f in findings}


def test_a_lane_outside_its_own_membermask_is_reported() -> None:
    _, findings = _run("\tvote.sync.ballot.b32 %r9, 1, 0x1;", np.arange(32, dtype=np.uint32),
                       extra="")
    # every lane but 0 executes outside its membermask (and a predicate immediate is fine)
    assert [f.kind for f in findings] == ["warp_divergence"]


def test_the_sanitizer_off_reports_nothing() -> None:
    body = ("\tsetp.eq.u32 %p1, %t, 5;\n\t@%p1 exit;\n"
            "\tshfl.sync.idx.b32 %r9, %r0, 5, 31, 0xffffffff;")
    (_, out), findings = launch(_kernel(body), "k", (1, 1, 1), (32, 1, 1),
                                [np.arange(32, dtype=np.uint32), np.zeros(32, np.uint32)], sanitize=False)
    assert findings == [] and out[0] == 5


def test_shfl_without_sync_is_refused() -> None:
    with pytest.raises(PtxError, match="sync"):
        load_module(_kernel("\tshfl.idx.b32 %r9, %r0, 1, 31;"), 90)
