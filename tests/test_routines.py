"""Routines (docs/routines.md): the standard files load, every binding compiles, the known answers
hold, results agree with numpy at sizes 0 to 2^20 + 3, the CUDA backend gives the reference's bits
(marked gpu), a routine file on VYRE_DECL_OPS_PATH works without code changes, and bad routine
files are rejected with a stable code while the rest still load."""

from __future__ import annotations

import numpy as np
import pytest

import vyre_decl
from vyre_decl import lib
from vyre_decl.backends.cuda import cuda_available
from vyre_decl.ir.diagnostics import VyreError
from vyre_decl.routines import CompiledRoutine, Routine, routine, routine_diagnostics, routines

SIZES = [0, 1, 31, 1000, (1 << 20) + 3]
NP = {"u32": np.uint32, "i32": np.int32, "u64": np.uint64, "i64": np.int64, "f32": np.float32, "f64": np.float64}
GPU = pytest.mark.skipif(not cuda_available(), reason="no CUDA GPU: libcuda.so.1 cannot be loaded or reports no device")


def _data(dtype: np.dtype, n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed + n)
    if dtype.kind == "f":
        return rng.standard_normal(n).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)


KAT_ULP = 4


def _cases():
    for rid, d in sorted(routines().items()):
        for binding in d.bindings():
            yield pytest.param(rid, binding, id=f"{rid}-{'-'.join(t.value for t in binding.values())}")


def test_standard_routines_load_cleanly():
    assert routine_diagnostics() == []
    assert {"reduce.sum", "reduce.min", "reduce.max", "reduce.prod", "reduce.and", "reduce.or", "reduce.xor"} <= set(routines())
    assert routines()["reduce.min"].steps == routines()["reduce.sum"].steps  # both take them from [class.fold]


@pytest.mark.parametrize("rid,binding", list(_cases()))
def test_every_binding_compiles_and_its_known_answers_hold(rid, binding, registry):
    d = routines()[rid]
    compiled = CompiledRoutine(d, binding, registry)
    first = next(iter(binding.values()), None)
    cases = [c for c in d.kats if c.within is None or first in c.within]
    assert cases, f"{rid} has no known answer for {binding}"
    for case in cases:
        ins = [np.array(v, dtype=compiled.dtypes[s.name].storage_dtype) for s, v in zip(d.inputs, case.inputs)]
        want = [np.array(v, dtype=compiled.dtypes[s.name].storage_dtype) for s, v in zip(d.outputs, case.outputs)]
        got = routine(rid)(*ins, backend="reference", **case.attrs)
        got = got if isinstance(got, tuple) else (got,)
        for g, w in zip(got, want):
            if g.dtype.kind == "f":  # known answers are the mathematical values, rounded
                np.testing.assert_array_max_ulp(g, w, maxulp=KAT_ULP)
            else:
                np.testing.assert_array_equal(g, w)


INT_ONLY = {"reduce.and": np.bitwise_and, "reduce.or": np.bitwise_or, "reduce.xor": np.bitwise_xor}


def _numpy(rid: str, x: np.ndarray) -> np.ndarray:
    if rid in INT_ONLY:
        identity = {"reduce.and": ~x.dtype.type(0), "reduce.or": x.dtype.type(0), "reduce.xor": x.dtype.type(0)}[rid]
        return INT_ONLY[rid].reduce(x) if x.size else identity
    if rid == "reduce.prod":
        return np.prod(x, dtype=x.dtype) if x.size else x.dtype.type(1)
    if x.dtype.kind == "f":
        wide = x.astype(np.float64)
        empty = {"reduce.sum": 0.0, "reduce.min": np.inf, "reduce.max": -np.inf}[rid]
        fn = {"reduce.sum": np.sum, "reduce.min": np.min, "reduce.max": np.max}[rid]
        return np.float64(fn(wide)) if x.size else np.float64(empty)
    info = np.iinfo(x.dtype)
    empty = {"reduce.sum": 0, "reduce.min": info.max, "reduce.max": info.min}[rid]
    fn = {"reduce.sum": lambda a: a.sum(dtype=x.dtype), "reduce.min": np.min, "reduce.max": np.max}[rid]
    return fn(x) if x.size else x.dtype.type(empty)


REDUCTIONS = ["reduce.sum", "reduce.min", "reduce.max", "reduce.prod", "reduce.and", "reduce.or", "reduce.xor"]


def _pairs(types):
    # bitwise reductions take integers; a float product of random data over- or underflows (its
    # known answers cover floats)
    return [(r, t) for r in REDUCTIONS for t in types if not (t.startswith("f") and (r in INT_ONLY or r == "reduce.prod"))]


@pytest.mark.parametrize("rid,dtype", _pairs(["u32", "i32", "u64", "i64", "f32", "f64"]))
@pytest.mark.parametrize("n", SIZES)
def test_reductions_agree_with_numpy(rid, dtype, n):
    x = _data(np.dtype(NP[dtype]), n)
    got = routine(rid)(x, backend="reference")
    assert got.shape == (1,) and got.dtype == x.dtype
    want = _numpy(rid, x)
    if x.dtype.kind == "f" and rid == "reduce.sum":
        # any order of n - 1 additions is within (n - 1) u sum|x| of the exact sum
        bound = max(n - 1, 0) * np.finfo(x.dtype).eps / 2 * float(np.abs(x.astype(np.float64)).sum())
        assert abs(float(got[0]) - float(want)) <= bound + np.finfo(x.dtype).tiny
    else:
        assert got[0] == want


@pytest.mark.gpu
@GPU
@pytest.mark.parametrize("sizes", [pytest.param(SIZES[:-1], id="small"), pytest.param(
    SIZES[-1:] + [(1 << 24) + 1], id="large", marks=pytest.mark.hardware_only("2^20 and 2^24 elements take minutes "
                                                                              "a routine on the interpreter"))])
@pytest.mark.parametrize("rid,dtype", _pairs(["u32", "i64", "f32", "f64"]))
def test_cuda_gives_the_reference_bits(rid, dtype, sizes):
    np_dtype = np.dtype(NP[dtype])
    for n in sizes:
        x = _data(np_dtype, n, seed=3)
        ref = routine(rid)(x, backend="reference")
        got = routine(rid)(x, backend="cuda")
        assert got.tobytes() == ref.tobytes(), (rid, dtype, n, got, ref)


def test_lib_functions():
    x = np.array([3.0, -1.5, 8.25], np.float32)
    assert lib.sum(x, backend="reference") == np.float32(9.75)
    assert lib.min(x, backend="reference") == np.float32(-1.5)
    assert lib.max(x, backend="reference") == np.float32(8.25)
    assert lib.prod(x, backend="reference") == np.float32(3.0 * -1.5 * 8.25)
    assert isinstance(lib.sum(np.arange(10, dtype=np.int64), backend="reference"), np.int64)


def test_bad_calls_raise_stable_codes():
    with pytest.raises(VyreError) as e:
        routine("reduce.nope")
    assert e.value.codes == ["U015"] and "reduce.sum" in str(e.value)
    # U012's Fix converts only where no value changes (it suggested astype(np.uint32) for float16)
    for rid, arr, fix in [("reduce.sum", np.zeros(4, np.float16), "arr.astype(np.float32)"),
                          ("reduce.sum", np.zeros(4, ">f4"), "arr.astype(np.float32)"),
                          ("reduce.sum", np.zeros(4, np.int8), "arr.astype(np.int32)"),
                          ("sort.radix", np.zeros(4, np.int32), "deliberately")]:
        with pytest.raises(VyreError) as e:
            routine(rid)(arr, backend="reference")
        text = str(e.value)
        assert e.value.codes == ["U012"] and fix in text and ("astype" not in text or fix.startswith("arr.")), text
    for not_an_id in (["reduce.sum"], None, 5):  # a raw TypeError (unhashable list) before
        with pytest.raises(VyreError) as e:
            routine(not_an_id)
        assert e.value.codes == ["U015"] and "string" in str(e.value) and "Fix" in str(e.value)
    with pytest.raises(VyreError) as e:
        routine("reduce.sum")(np.zeros(4, np.int16), backend="reference")
    assert e.value.codes == ["U012"] and "Fix:" in str(e.value)
    with pytest.raises(VyreError) as e:
        routine("reduce.sum")(np.zeros(4, np.float32), np.zeros(4, np.float32), backend="reference")
    assert e.value.codes == ["U014"]
    with pytest.raises(VyreError) as e:
        routine("reduce.sum")(np.array(["a"]), backend="reference")
    assert e.value.codes == ["U012"]


PROD = '''
[family]
name = "mine"
version = "1.0.0"
summary = "a user's routines"

[kernel.one]
params = ["combine"]
source = """
program mine_one workgroup(64, 1, 1) {
  buffer src: read T[] @0
  buffer dst: read_write T[] @1
  if gid.x == 0u32 {
    let acc = T.one
    loop i in 0u32 .. len(src) { acc = $combine(acc, src[i]) }
    dst[0u32] = acc
  }
}
"""

[[routine]]
id = "mine.prod"
summary = "the product, sequentially"
types = { T = "int,f64" }
with = { combine = "primitive.math.mul" }
buffers = { x = "in T[]", out = "out T[1]" }
steps = [{ kernel = "one", args = ["x", "out"], grid = "1" }]
kat = [[[2, 3, 7], [42]]]
'''


def test_a_routine_file_on_the_ops_path_works_without_code(tmp_path, monkeypatch):
    (tmp_path / "mine.routines.toml").write_text(PROD)
    monkeypatch.setenv("VYRE_DECL_OPS_PATH", str(tmp_path))
    assert routine("mine.prod")(np.array([2, 3, 7], np.int64), backend="reference")[0] == 42
    assert not vyre_decl.default_registry().errors  # the op loader leaves routine files alone
    assert "reduce.sum" in routines()


BAD = [
    ("U009", 'buffers = { x = "in T[]", out = "out T[__import__(\'os\').getpid()]" }'),
    ("U009", 'buffers = { x = "in T[]", out = "out T[len(y)]" }'),
    ("U007", 'with = { combine = "primitive.math.mul(a, b) }" }'),
    ("U010", 'steps = [{ kernel = "two", args = ["x", "out"], grid = "1" }]'),
    ("U008", 'buffers = { x = "in T[]", out = "temp T[1]" }'),
    ("U006", 'types = { T = "float128" }'),
    ("U005", 'id = "other.prod"'),
    ("U005", 'with = { combine = "primitive.math.mul" }\nclass = "nothing"'),
    ("U010", 'steps = [{ repeat = "2" }]'),
    ("U009", 'steps = [{ repeat = "bits(Q)", steps = [{ kernel = "one", args = ["x", "out"], grid = "1" }] }]'),
    ("U006", 'types = { t = "int" }'),
    ("U016", 'with = { combine = "primitive.math.mul" }\nattrs = ["x"]'),
    ("U018", 'with = { combine = "primitive.math.mul" }\nattrs = ["bins"]'),
    ("U009", 'with = { combine = "primitive.math.mul" }\nrequire = ["len(x) = 3"]'),
    ("U007", 'steps = [{ kernel = "one", args = ["x", "out"], grid = "1", with = { combine = "a b" } }]'),
    ("U006", 'steps = [{ kernel = "one", args = ["x", "out"], grid = "1", types = { T = "float128" } }]'),
]


@pytest.mark.parametrize("code,line", BAD, ids=[f"{c}-{i}" for i, (c, _) in enumerate(BAD)])
def test_bad_routine_files_are_rejected_whole(tmp_path, monkeypatch, code, line):
    key = line.split(" = ", 1)[0]
    text = "\n".join(line if ln.startswith(key + " = ") else ln for ln in PROD.splitlines())
    assert text != PROD
    (tmp_path / "bad.routines.toml").write_text(text)
    monkeypatch.setenv("VYRE_DECL_OPS_PATH", str(tmp_path))
    codes = [d.code for d in routine_diagnostics()]
    assert code in codes and "U020" in codes, codes
    assert "mine.prod" not in routines() and "reduce.sum" in routines()
    assert all("Fix" not in d.fix and d.location.startswith(str(tmp_path)) for d in routine_diagnostics())


def test_a_kernel_that_does_not_validate_is_rejected_at_load(tmp_path, monkeypatch):
    (tmp_path / "k.routines.toml").write_text(PROD.replace("acc = $combine(acc, src[i])", "acc = $combine(acc, nosuch[i])"))
    monkeypatch.setenv("VYRE_DECL_OPS_PATH", str(tmp_path))
    diags = routine_diagnostics()
    assert [d.code for d in diags] == ["U022", "U020"]
    assert "[routine mine.prod] steps[0]" in diags[0].location and "nosuch" in diags[0].message
    with pytest.raises(VyreError) as e:
        routine("mine.prod")
    assert e.value.codes == ["U015"]
    assert isinstance(routine("reduce.sum"), Routine)


@pytest.mark.gpu
@GPU
def test_resident_form_never_leaves_the_device():
    cuda = vyre_decl.acquire("cuda")
    x = _data(np.dtype(np.float32), 300_001, seed=9)
    buf = cuda.upload(x)
    before = cuda.telemetry()["bytes_d2h"]
    out = routine("reduce.sum").resident(buf, backend=cuda)
    assert cuda.telemetry()["bytes_d2h"] == before  # nothing came back to the host
    assert out.count == 1 and cuda.download(out).tobytes() == routine("reduce.sum")(x, backend="reference").tobytes()
    cuda.free(out)
    cuda.free(buf)


def test_lib_covers_every_family_the_numpy_way():
    be = "reference"
    x = np.array([3.0, -1.5, 8.25, 0.0], np.float32)
    assert lib.mean(x, backend=be) == np.float32(2.4375) and lib.argmin(x, backend=be) == 1 and lib.argmax(x, backend=be) == 2
    assert lib.count_nonzero(x, backend=be) == 3 and lib.any(x, backend=be) and not lib.all(x, backend=be)
    np.testing.assert_array_equal(lib.cumsum(np.arange(5, dtype=np.int64), backend=be), np.cumsum(np.arange(5)))
    np.testing.assert_array_equal(lib.nonzero(x, backend=be), [0, 1, 2])
    m = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(lib.transpose(m, backend=be), m.T)
    np.testing.assert_array_equal(lib.matmul(m, m.T, backend=be), m @ m.T)
    keys, vals = lib.sort(np.array([3, 1, 2, 1], np.uint32), np.array([0, 1, 2, 3], np.uint32), backend=be)
    np.testing.assert_array_equal(keys, [1, 1, 2, 3])
    np.testing.assert_array_equal(vals, [1, 3, 2, 0])  # stable: the two 1s keep their order
    top, at = lib.topk(np.array([4, 9, 1, 9], np.uint32), 2, backend=be)
    np.testing.assert_array_equal(top, [9, 9])
    np.testing.assert_array_equal(at, [1, 3])
    np.testing.assert_allclose(lib.softmax(np.zeros((2, 4), np.float32), backend=be), np.full((2, 4), 0.25))
    import zlib

    assert lib.crc32(b"123456789", backend=be) == zlib.crc32(b"123456789") == 0xCBF43926
    assert lib.find(b"abcabc", ord("c"), backend=be) == 2 and lib.find(b"abc", ord("z"), backend=be) == -1
    assert lib.byte_histogram(b"aab", backend=be)[ord("a")] == 2
    with pytest.raises(VyreError) as e:
        lib.argmin(np.zeros(0, np.float32), backend=be)
    assert e.value.codes == ["L005"]  # numpy raises for the argmin of nothing
    with pytest.raises(VyreError) as e:
        lib.matmul(m, m, backend=be)
    assert e.value.codes == ["L009"]


def test_attributes_and_requirements_are_checked_before_any_launch():
    t = routine("data.transpose")
    with pytest.raises(VyreError) as e:
        t(np.zeros(6, np.float32), backend="reference", rows=4, cols=2)
    assert e.value.codes == ["U017"] and "len(x) == rows * cols" in str(e.value)
    for bad in ({"rows": 2}, {"rows": 2, "cols": 3, "depth": 1}, {"rows": -1, "cols": 3}, {"rows": 2.0, "cols": 3}):
        with pytest.raises(VyreError) as e:
            t(np.zeros(6, np.float32), backend="reference", **bad)
        assert e.value.codes == ["U016"], bad
    with pytest.raises(VyreError) as e:
        routine("sort.radix")(np.zeros(3, np.int32), backend="reference")
    assert e.value.codes == ["U012"] and "u32" in str(e.value)


@pytest.mark.gpu
@GPU
def test_repeated_calls_of_one_shape_replay_one_graph():
    cuda = vyre_decl.acquire("cuda")
    x = _data(np.dtype(np.float32), 100_003, seed=4)
    r = routine("scan.sum")
    first = r(x, backend=cuda)
    before = cuda.telemetry()
    again = r(x, backend=cuda)
    after = cuda.telemetry()
    assert after["graph_launches"] == before["graph_launches"] + 1  # the whole routine: one graph launch
    assert after["launches"] == before["launches"] and after["jit_compiles"] == before["jit_compiles"]
    assert again.tobytes() == first.tobytes() == r(x, backend="reference").tobytes()
    plan = r.plan(x, backend=cuda)
    cuda.upload_at(plan.inputs[0], 0, x)
    d2h = cuda.telemetry()["bytes_d2h"]
    plan.replay()
    plan.replay()  # replays start from zeroed outputs and temporaries: the same bits each time
    assert cuda.telemetry()["bytes_d2h"] == d2h
    assert cuda.download(plan.outputs[0]).tobytes() == first.tobytes()
    plan.close()
