"""Subgroups (docs/semantics.md, "Subgroups"): the reference semantics of every op of
ops/subgroup.toml against plain-Python oracles written from the document (full and partial
subgroups, lanes that returned, float orders bit for bit), validation (V027, V028), the emitted PTX
on the simulated sm_90 and sm_75 devices against the reference, and the CUDA backend end to end
(on a GPU, or on the simulated device under VYRE_DECL_CUDA_SIM)."""

from __future__ import annotations

import numpy as np
import pytest

import vyre_decl
from vyre_decl.emit import emit
from sim_ptx_helpers import assert_matches
from test_sim_driver_support import real_ptx, use_sim
from vyre_decl.backends.cuda import CudaBackend, cuda_available
from vyre_decl.ir import VyreError, parse_program
from vyre_decl.ir.subgroup import SUBGROUP_SIZE

S = SUBGROUP_SIZE
REF = vyre_decl.acquire("reference")


def _program(expr: str, t: str = "u32", out: str | None = None, wg: int = 64, ret: str = "") -> vyre_decl.Program:
    """o[i] = expr over x[i] (called v) and y[i] (called w), after an optional early return."""
    out = out or t
    return parse_program(f"""program p workgroup({wg}, 1, 1) {{
  buffer x: read {t}[] @0
  buffer y: read u32[len(x)] @1
  buffer o: write {out}[len(x)] @2
  let i = gid.x
  {ret}
  let v = x[i]
  let w = y[i]
  let r = {expr}
  o[i] = r
}}""")


def _groups(n: int, wg: int, present=None):
    """The subgroups of a grid of whole workgroups covering n elements: lists of invocation ids
    (lane k at position k), only the present ones (by the predicate on the invocation id)."""
    total = -(-n // wg) * wg
    out = []
    for w0 in range(0, total, wg):
        for s0 in range(w0, w0 + wg, S):
            lanes = [(k, i) for k, i in enumerate(range(s0, min(s0 + S, w0 + wg)))]
            out.append([(k, i) for k, i in lanes if present is None or present(i)])
    return out


def _load(a: np.ndarray, i: int):
    return a[i] if i < a.size else a.dtype.type(0)


def _run(p, *inputs):
    return REF.dispatch(p, list(inputs))[0]


RNG = np.random.default_rng(28)


@pytest.mark.parametrize("wg", [64, 48, 20])
def test_lane_id_and_shuffle_follow_the_oracle(wg: int) -> None:
    n = 150
    x = RNG.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    y = RNG.integers(0, 40, n, dtype=np.uint64).astype(np.uint32)
    lane = _run(_program("subgroup.lane_id()", wg=wg), x, y)
    shuf = _run(_program("subgroup.shuffle(v, w)", wg=wg), x, y)
    down = _run(_program("subgroup.shuffle_down(v, w)", wg=wg), x, y)
    up = _run(_program("subgroup.shuffle_up(v, w)", wg=wg), x, y)
    xor = _run(_program("subgroup.shuffle_xor(v, w)", wg=wg), x, y)
    for group in _groups(n, wg):
        by_lane = {k: i for k, i in group}
        for k, i in group:
            if i >= n:
                continue
            assert lane[i] == k
            for got, src in ((shuf, y[i]), (down, k + y[i]), (up, k - int(y[i])), (xor, k ^ int(y[i]))):
                j = by_lane.get(int(src)) if 0 <= src < S else None
                assert got[i] == (_load(x, j) if j is not None else x[i]), (i, k, src)


def test_lanes_that_returned_are_missing() -> None:
    n = 96
    x = np.arange(n, dtype=np.uint32) + 1000
    y = np.zeros(n, np.uint32)
    gone = lambda i: i % 3 == 1 or i >= 90  # noqa: E731
    ret = "if (i % 3u32 == 1u32) || (i >= 90u32) { return }"
    ballot = _run(_program("subgroup.ballot(v > 0u32)", ret=ret), x, y)
    shuf = _run(_program("subgroup.shuffle(v, 1u32)", ret=ret), x, y)
    red = _run(_program("subgroup.reduce_add(v)", ret=ret), x, y)
    scan = _run(_program("subgroup.exclusive_add(v)", ret=ret), x, y)
    for group in _groups(n, 64, lambda i: not gone(i)):
        mask = sum(1 << k for k, _ in group)
        total = sum(int(x[i]) for _, i in group)
        lane1 = {k: i for k, i in group}.get(1)
        before = 0
        for k, i in group:
            assert ballot[i] == mask
            assert shuf[i] == (x[lane1] if lane1 is not None else x[i])
            assert red[i] == total
            assert scan[i] == before
            before += int(x[i])
    assert all(red[i] == 0 for i in range(n) if gone(i))  # they returned before the store


def test_votes_and_match() -> None:
    n = 100
    x = RNG.integers(0, 4, n, dtype=np.uint64).astype(np.uint32)
    y = np.zeros(n, np.uint32)
    anyv = _run(_program("subgroup.any(v == 3u32) as u32", wg=48), x, y)
    allv = _run(_program("subgroup.all(v != 3u32) as u32", wg=48), x, y)
    match = _run(_program("subgroup.match_any(v)", wg=48), x, y)
    for group in _groups(n, 48):
        vals = {k: int(_load(x, i)) for k, i in group}  # lanes past the input read 0, and are present
        for k, i in group:
            if i < n:
                assert anyv[i] == int(any(v == 3 for v in vals.values())), i
                assert allv[i] == int(all(v != 3 for v in vals.values())), i
                assert match[i] == sum(1 << kk for kk, v in vals.items() if v == x[i]), i


def _tree_reduce(vals: list, comb) -> object:
    """docs/semantics.md: v[r] = comb(v[r], v[r+k]) where r+k < count, k = 16, 8, 4, 2, 1."""
    v = list(vals)
    for k in (16, 8, 4, 2, 1):
        v = [comb(v[r], v[r + k]) if r + k < len(v) else v[r] for r in range(len(v))]
    return v[0]


def _scan(vals: list, comb) -> list:
    """docs/semantics.md: v[r] = comb(v[r-k], v[r]) where r >= k, k = 1, 2, 4, 8, 16."""
    v = list(vals)
    for k in (1, 2, 4, 8, 16):
        v = [comb(v[r - k], v[r]) if r >= k else v[r] for r in range(len(v))]
    return v


F32 = np.float32


@pytest.mark.parametrize("wg,ret", [(64, ""), (48, ""), (64, "if i % 5u32 == 2u32 { return }")])
def test_float_reductions_and_scans_are_bit_exact_in_the_documented_order(wg: int, ret: str) -> None:
    n = 200
    x = (RNG.standard_normal(n) * 10.0 ** RNG.integers(-8, 8, n)).astype(F32)
    x[7], x[40] = -0.0, np.inf
    y = np.zeros(n, np.uint32)
    add = lambda a, b: F32(F32(a) + F32(b))  # noqa: E731
    fmin = lambda a, b: F32(min(a, b)) if a != b else (a if np.signbit(a) else b)  # noqa: E731
    present = (lambda i: True) if not ret else (lambda i: i % 5 != 2)
    red = _run(_program("subgroup.reduce_add(v)", "f32", wg=wg, ret=ret), x, y)
    inc = _run(_program("subgroup.inclusive_add(v)", "f32", wg=wg, ret=ret), x, y)
    exc = _run(_program("subgroup.exclusive_add(v)", "f32", wg=wg, ret=ret), x, y)
    mn = _run(_program("subgroup.reduce_min(v)", "f32", wg=wg, ret=ret), x, y)
    for group in _groups(n, wg, present):
        vals = [F32(_load(x, i)) for _, i in group]
        total, scan, low = _tree_reduce(vals, add), _scan(vals, add), _tree_reduce(vals, fmin)
        for r, (_, i) in enumerate(group):
            if i < n:
                assert red[i].tobytes() == F32(total).tobytes(), i
                assert inc[i].tobytes() == F32(scan[r]).tobytes(), i
                assert exc[i].tobytes() == (F32(scan[r - 1]) if r else F32(0.0)).tobytes(), i
                assert mn[i].tobytes() == F32(low).tobytes(), i


@pytest.mark.parametrize("op,fold", [("add", lambda a, b: (a + b) & 0xFFFFFFFF), ("min", min), ("max", max),
                                     ("and", lambda a, b: a & b), ("or", lambda a, b: a | b),
                                     ("xor", lambda a, b: a ^ b)])
def test_integer_reductions_and_scans(op: str, fold) -> None:
    n = 100
    x = RNG.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    y = np.zeros(n, np.uint32)
    red = _run(_program(f"subgroup.reduce_{op}(v)", wg=48), x, y)
    exc = _run(_program(f"subgroup.exclusive_{op}(v)", wg=48), x, y)
    ident = {"add": 0, "min": 0xFFFFFFFF, "max": 0, "and": 0xFFFFFFFF, "or": 0, "xor": 0}[op]
    for group in _groups(n, 48):
        vals = [int(_load(x, i)) for _, i in group]
        acc = ident
        for r, (_, i) in enumerate(group):
            if i < n:
                assert red[i] == _tree_reduce(vals, fold), (op, i)
                assert exc[i] == acc, (op, i)
            acc = fold(acc, vals[r])


def test_64_bit_and_bool_shuffles() -> None:
    n = 70
    x = RNG.integers(-2**63, 2**63 - 1, n, dtype=np.int64)
    y = ((np.arange(n) * 7) % 33).astype(np.uint32)
    got = _run(_program("subgroup.shuffle(v, w)", "i64"), x, y)
    b = _run(_program("subgroup.shuffle(v < 0i64, w) as u32", "i64", out="u32"), x, y)
    for group in _groups(n, 64):
        by_lane = {k: i for k, i in group}
        for k, i in group:
            if i < n:
                j = by_lane.get(int(y[i]))
                want = _load(x, j) if j is not None else x[i]
                assert got[i] == want and b[i] == int(want < 0)


# ----------------------------------------------------------------------------- validation


@pytest.mark.parametrize("body,code,where", [
    ("if i < len(o) { o[i] = subgroup.reduce_add(x[i]) }", "V027", "body[1].then[0].value"),
    ("let ln = subgroup.lane_id()\n  if ln < 16u32 { o[i] = subgroup.ballot(true) }", "V027", "body[2].then[0].value"),
    ("loop k in 0u32 .. x[i] { o[i] = subgroup.shuffle(x[i], k) }", "V027", "body[1].body[0].value"),
    ("o[i] = branch(i < 3u32, subgroup.reduce_add(x[i]), 0u32)", "V028", "body[1].value"),
])
def test_collectives_in_divergent_flow_are_refused(body: str, code: str, where: str) -> None:
    src = f"program p workgroup(64, 1, 1) {{\n  buffer x: read u32[] @0\n  buffer o: write u32[len(x)] @1\n" \
          f"  let i = gid.x\n  {body}\n}}"
    with pytest.raises(VyreError) as err:
        vyre_decl.acquire("reference").dispatch(parse_program(src, "t.vyre"), [np.zeros(4, np.uint32)])
    d = next(d for d in err.value.diagnostics if d.code == code)
    assert where in d.location and d.location.startswith("t.vyre:") and d.fix


@pytest.mark.parametrize("body", [
    "if i >= len(o) { return }\n  o[i] = subgroup.reduce_add(x[i])",
    "if wgid.x == 0u32 { o[i] = subgroup.reduce_add(x[i]) }",
    "loop k in 0u32 .. len(x) { o[i] = subgroup.shuffle(x[i], k) }",
    "let s = subgroup.reduce_add(x[i])\n  if i < len(o) { o[i] = s }",
])
def test_collectives_in_uniform_flow_are_accepted(body: str) -> None:
    src = f"program p workgroup(64, 1, 1) {{\n  buffer x: read u32[] @0\n  buffer o: write u32[len(x)] @1\n" \
          f"  let i = gid.x\n  {body}\n}}"
    from vyre_decl.ir.validation import validate

    assert validate(parse_program(src), vyre_decl.default_registry()) == []


# ----------------------------------------------------------------------------- emitted PTX


_EMITTED = [
    ("subgroup.reduce_add(v)", "f32", ""), ("subgroup.inclusive_min(v)", "f32", ""),
    ("subgroup.exclusive_add(v)", "f64", ""), ("subgroup.reduce_max(v)", "i32", ""),
    ("subgroup.reduce_xor(v)", "u32", ""), ("subgroup.inclusive_add(v)", "u64", ""),
    ("subgroup.shuffle(v, w)", "f64", ""), ("subgroup.shuffle_up(v, w)", "i32", ""),
    ("subgroup.match_any(v & 3u32)", "u32", ""), ("subgroup.ballot(v > 2147483648u32)", "u32", ""),
    ("subgroup.all(v > 100u32) as u32", "u32", ""), ("subgroup.any(v > 4000000000u32) as u32", "u32", ""),
    ("subgroup.reduce_add(v)", "f32", "if i % 3u32 == 1u32 { return }"),
    ("subgroup.exclusive_or(v)", "u32", "if (i & 7u32) == 5u32 { return }"),
    ("subgroup.reduce_min(v)", "u32", "if i % 7u32 == 0u32 { return }"),
]


@pytest.mark.parametrize("target", ["sm_90", "sm_75"])
@pytest.mark.parametrize("expr,t,ret", _EMITTED)
def test_emitted_collectives_match_the_reference_on_the_simulator(expr: str, t: str, ret: str, target: str) -> None:
    for wg, n in ((64, 130), (48, 100)):
        p = _program(expr, t, out="u32" if "as u32" in expr or "ballot" in expr or "match" in expr else t,
                     wg=wg, ret=ret)
        dt = {"u32": np.uint32, "i32": np.int32, "f32": np.float32, "f64": np.float64, "u64": np.uint64}[t]
        x = RNG.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
        if t in ("f32", "f64"):
            x = RNG.standard_normal(n).astype(dt)
        else:
            x = x.astype(dt)
        y = RNG.integers(0, 35, n, dtype=np.uint64).astype(np.uint32)
        assert_matches(p, [x, y], REF.dispatch(p, [x, y]), target=target)


def test_integer_reductions_use_redux_on_sm80_and_a_tree_before() -> None:
    p = _program("subgroup.reduce_add(v)")
    assert "redux.sync.add.u32" in emit(p, target="sm_90").text
    old = emit(p, target="sm_75").text
    assert "redux" not in old and "shfl.sync.idx.b32" in old


def test_no_vectorised_entry_for_a_program_with_collectives() -> None:
    p = parse_program("program p workgroup(64, 1, 1) {\n  buffer x: read u32[] @0\n  buffer o: write u32[len(x)] @1\n"
                      "  let i = gid.x\n  o[i] = subgroup.reduce_add(x[i])\n}")
    assert emit(p).vector_entry is None


# ----------------------------------------------------------------------------- the CUDA backend


@pytest.fixture
def cuda_on_sim(monkeypatch):
    real_ptx()
    use_sim(monkeypatch)
    backend = CudaBackend()
    yield backend
    backend.close()


def test_the_cuda_backend_runs_subgroups_on_the_simulated_device(cuda_on_sim) -> None:
    p = _program("subgroup.reduce_add(v) + subgroup.exclusive_add(v)", "f32", wg=96,
                 ret="if i % 11u32 == 3u32 { return }")
    x, y = RNG.standard_normal(1000).astype(np.float32), np.zeros(1000, np.uint32)
    (want,) = REF.dispatch(p, [x, y])
    (got,) = cuda_on_sim.dispatch(p, [x, y])
    assert got.tobytes() == want.tobytes()


@pytest.mark.gpu
@pytest.mark.skipif(not cuda_available(), reason="no CUDA GPU: libcuda.so.1 cannot be loaded")
@pytest.mark.parametrize("expr,t,ret", _EMITTED)
def test_collectives_on_the_gpu_match_the_reference(expr: str, t: str, ret: str) -> None:
    cuda = vyre_decl.acquire("cuda")
    p = _program(expr, t, out="u32" if "as u32" in expr or "ballot" in expr or "match" in expr else t,
                 wg=48, ret=ret)
    dt = {"u32": np.uint32, "i32": np.int32, "f32": np.float32, "f64": np.float64, "u64": np.uint64}[t]
    n = 4097
    x = (RNG.standard_normal(n) if t in ("f32", "f64") else RNG.integers(0, 2**32, n, dtype=np.uint64)).astype(dt)
    y = RNG.integers(0, 35, n, dtype=np.uint64).astype(np.uint32)
    (want,), (got,) = REF.dispatch(p, [x, y]), cuda.dispatch(p, [x, y])
    assert got.tobytes() == want.tobytes()


@pytest.mark.parametrize("target", ["sm_90", "sm_75"])
def test_the_subgroup_corpus_programs_match_the_reference_on_the_simulator(target: str) -> None:
    from vyre_decl.conform.corpus import load_corpus, make_inputs

    entries = [e for e in load_corpus() if "subgroup" in e.name]
    assert len(entries) == 2
    for entry in entries:
        for size in (0, 1, 7, 64, 65, 1000):
            inputs = make_inputs(entry.program, size, np.random.default_rng(size))
            want = REF.dispatch(entry.program, inputs, vyre_decl.DispatchConfig(grid=entry.grid))
            assert_matches(entry.program, inputs, want, grid=entry.grid, target=target)
