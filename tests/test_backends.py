"""The backend registry and the host calling convention (errors before any work)."""

from __future__ import annotations

import sys
import textwrap

import numpy as np
import pytest

import vyre_decl
from vyre_decl.backends import BackendInfo, acquire, list_backends, register_backend
from vyre_decl.backends.config import DispatchConfig
from vyre_decl.ir import VyreError, parse_program

VADD = parse_program("""program vadd workgroup(64, 1, 1) {
  buffer a: read u32[] @0
  buffer b: read u32[] @1
  buffer out: write u32[len(a)] @2
  let i = gid.x
  if i < len(out) { out[i] = a[i] + b[i] }
}""")


def test_auto_picks_reference_without_a_gpu():
    assert acquire("auto").name == "reference"
    assert acquire("auto") is acquire("reference")
    builtin = [b.name for b in list_backends() if b.source == "vyre_decl"]  # a test plugin may rank lower
    assert builtin[-1] == "reference" and "cuda" in builtin  # every built-in GPU backend ranks above it


def test_dispatch_convention(backend):
    a = np.arange(100, dtype=np.uint32)
    (out,) = backend.dispatch(VADD, [a, a])
    assert (out == 2 * a).all()
    (out2,) = backend.dispatch(VADD, {"b": a, "a": a})
    assert (out2 == out).all()
    (out3,) = backend.dispatch(VADD, [a.tobytes(), [1] * 100])
    assert (out3 == a + 1).all()
    (out4,) = vyre_decl.dispatch(VADD, [a.reshape(10, 10), a])
    assert (out4 == out).all()


def test_pipeline_reuse(backend):
    pipe = backend.compile(VADD)
    for n in (0, 1, 63, 64, 65, 1000):
        a = np.arange(n, dtype=np.uint32)
        (out,) = pipe.dispatch([a, a])
        assert out.shape == (n,) and (out == 2 * a).all()


@pytest.mark.parametrize(
    "inputs, code, where",
    [
        ([np.zeros(4, np.uint32)], "D001", "vadd"),
        ([np.zeros(4, np.uint32)] * 3, "D001", "vadd"),
        ([np.zeros(4, np.int32), np.zeros(4, np.uint32)], "D002", "'a'"),
        ([np.zeros(4, np.uint32), "text"], "D002", "'b'"),
        ([np.zeros(4, np.uint32), b"\x00" * 7], "D004", "'b'"),
        ({"a": np.zeros(4, np.uint32), "c": np.zeros(4, np.uint32)}, "D006", "vadd"),
        ({"a": np.zeros(4, np.uint32)}, "D001", "vadd"),
        ([np.zeros(4, np.uint32), [1, -1, 2, 3]], "D002", "'b'"),
    ],
)
def test_bad_inputs_are_rejected_before_work(backend, inputs, code, where):
    with pytest.raises(VyreError) as info:
        backend.dispatch(VADD, inputs)
    d = info.value.diagnostics[0]
    assert d.code == code and where in d.location and "Fix:" in str(info.value)


def test_size_and_config_errors(backend):
    fixed = parse_program("""program f workgroup(8, 1, 1) {
      buffer a: read f32[16] @0
      buffer o: write f32[16] @1
      o[gid.x] = a[gid.x]
    }""")
    with pytest.raises(VyreError, match="D003"):
        backend.dispatch(fixed, [np.zeros(15, np.float32)])
    square = parse_program("program s workgroup(8, 8, 1) { buffer o: write u32[64] @0\n o[lid.x] = 1u32 }")
    with pytest.raises(VyreError, match="D005"):
        backend.dispatch(square, [])
    (o,) = backend.dispatch(square, [], DispatchConfig(grid=(1, 1, 1)))
    assert o[:8].tolist() == [1] * 8
    with pytest.raises(VyreError, match="D008"):
        backend.dispatch(square, [], DispatchConfig(grid=(1, 1, 1), repeat=0))


def test_invalid_program_raises_every_diagnostic(backend):
    bad = parse_program("program b workgroup(8, 1, 1) { let x = y\n let z = 1u32 + 1i32 }")
    with pytest.raises(VyreError) as info:
        backend.dispatch(bad, [])
    assert info.value.codes == ["V018", "V007"]


def test_caller_arrays_are_never_modified(backend):
    src = parse_program("program m workgroup(4, 1, 1) { buffer v: read_write u32[4] @0\n v[gid.x] = 9u32 }")
    v = np.zeros(4, np.uint32)
    (out,) = backend.dispatch(src, [v])
    assert out.tolist() == [9] * 4 and v.tolist() == [0] * 4


def test_workgroup_override_and_grid_inference_with_atomics(backend):
    src = parse_program("""program h workgroup(4, 1, 1) {
      buffer k: read u32[] @0
      buffer hist: write u32[2] @1
      let i = gid.x
      if i < len(k) { let o = atomic primitive.atomic.add(hist[k[i]], 1u32) }
    }""")
    k = np.array([0, 1, 1, 1, 0, 1, 1, 1, 1, 1], np.uint32)
    (hist,) = backend.dispatch(src, [k])  # grid covers the 10-element input, not the 2-element output
    assert hist.tolist() == [2, 8]
    (hist2,) = backend.dispatch(src, [k], DispatchConfig(workgroup=(32, 1, 1)))
    assert hist2.tolist() == [2, 8]


def test_register_and_acquire_a_third_party_backend():
    class Echo:
        name = "echo-test"
        capabilities = frozenset({"atomics"})

        def dispatch(self, program, inputs, config=None):
            return ["echo"]

        def compile(self, program, config=None):
            raise NotImplementedError

    register_backend(BackendInfo("echo-test", Echo, precedence=-5, capabilities=frozenset({"atomics"})))
    assert acquire("echo-test").dispatch(VADD, []) == ["echo"]
    assert acquire("auto").name == "reference"  # lower precedence does not win
    with pytest.raises(VyreError, match="B003"):
        register_backend(BackendInfo("echo-test", Echo))
    with pytest.raises(VyreError, match="B002"):
        register_backend(BackendInfo("x", Echo, capabilities=frozenset({"teleport"})))
    register_backend(BackendInfo("gone", Echo, available=lambda: False))
    with pytest.raises(VyreError, match="B004"):
        acquire("gone")
    with pytest.raises(VyreError, match="B001"):
        acquire("nope")


def test_entry_point_backends_are_discovered(tmp_path, monkeypatch):
    dist = tmp_path / "vyre_echo_plugin-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: vyre-echo-plugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[vyre_decl.backends]\nplugged = vyre_echo_plugin:INFO\n")
    (tmp_path / "vyre_echo_plugin.py").write_text(textwrap.dedent("""
        from vyre_decl.backends import BackendInfo
        class Plugged:
            name = "plugged"
            capabilities = frozenset()
            def dispatch(self, program, inputs, config=None):
                return ["plugged"]
            def compile(self, program, config=None):
                raise NotImplementedError
        INFO = BackendInfo("plugged", Plugged, precedence=-1, source="vyre-echo-plugin")
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    import vyre_decl.backends as b

    monkeypatch.setattr(b, "_entry_points_loaded", False)
    assert "plugged" in [i.name for i in list_backends()]
    assert acquire("plugged").dispatch(VADD, []) == ["plugged"]
    sys.modules.pop("vyre_echo_plugin", None)


def test_a_pipeline_keeps_its_workgroup(backend):
    pipe = backend.compile(VADD)
    a = np.arange(1024, dtype=np.uint32)
    with pytest.raises(VyreError) as info:
        pipe.dispatch([a, a], DispatchConfig(workgroup=(256, 1, 1)))
    assert info.value.codes == ["D008"]
    (out,) = backend.dispatch(VADD, [a, a], DispatchConfig(workgroup=(256, 1, 1)))
    assert (out == 2 * a).all()


def test_acquire_and_dispatch_take_a_registry(tmp_path):
    import vyre_decl
    from vyre_decl.registry import load as load_registry

    reg = load_registry()
    be = acquire("reference", registry=reg)
    assert be.registry is reg and acquire("reference", registry=reg) is be
    assert acquire("reference") is not be or acquire("reference").registry.fingerprint == reg.fingerprint
    out = vyre_decl.dispatch(VADD, [np.arange(3, dtype=np.uint32), np.ones(3, np.uint32)], backend="reference", registry=reg)
    np.testing.assert_array_equal(out[0], [1, 2, 3])
    import vyre_decl.backends

    assert callable(vyre_decl.list_backends) and hasattr(vyre_decl.backends, "reference") is not None
    assert isinstance(vyre_decl.backends, type(vyre_decl))  # the subpackage, whatever the import order


def test_the_reference_backend_answers_resident_and_async_calls_with_a_code():
    be = acquire("reference")
    for call in (lambda: be.allocate("u32", 4), lambda: be.upload(np.zeros(4, np.uint32)), lambda: be.sequence([]),
                 lambda: be.dispatch_async(VADD, [np.zeros(4, np.uint32)] * 2), lambda: be.free(None)):
        with pytest.raises(VyreError) as e:
            call()
        assert e.value.codes == ["B006"] and "Fix:" in str(e.value)
    outs, timing = be.dispatch_timed(VADD, [np.arange(3, dtype=np.uint32), np.ones(3, np.uint32)])
    np.testing.assert_array_equal(outs[0], [1, 2, 3])
    assert timing.wall_s > 0 and timing.device_s == timing.wall_s
    be.synchronize()


def test_ulp_budget_refuses_ops_less_accurate_than_it_on_every_backend():
    prog = parse_program("""program e workgroup(64, 1, 1) {
      buffer x: read f32[] @0
      buffer out: write f32[len(x)] @1
      if gid.x < len(x) { out[gid.x] = primitive.float.exp(x[gid.x]) + 1.0f32 }
    }""")
    x = np.zeros(3, np.float32)
    np.testing.assert_array_equal(acquire("reference").dispatch(prog, [x], DispatchConfig(ulp_budget=1))[0], 2.0)
    with pytest.raises(VyreError) as e:
        acquire("reference").dispatch(prog, [x], DispatchConfig(ulp_budget=0))
    assert e.value.codes == ["D014"] and "primitive.float.exp (1 ULP)" in str(e.value)
    assert "primitive.math.add" not in str(e.value)  # correctly rounded ops are within any budget
    with pytest.raises(VyreError) as e:
        acquire("reference").dispatch(prog, [x], DispatchConfig(ulp_budget=-1))
    assert e.value.codes == ["D008"]


def test_a_backend_without_a_capability_refuses_before_any_transfer(tmp_path, monkeypatch):
    from vyre_decl.backends.reference import ReferenceBackend

    class NoF64(ReferenceBackend):
        capabilities = frozenset({"i64", "atomics", "workgroup_memory", "workgroup_atomics"})

    prog = parse_program("""program d workgroup(64, 1, 1) {
      buffer x: read f64[] @0
      buffer out: write f64[len(x)] @1
      if gid.x < len(x) { out[gid.x] = x[gid.x] }
    }""")
    with pytest.raises(VyreError) as e:
        NoF64().dispatch(prog, [np.zeros(2)])
    assert e.value.codes == ["B007"] and "'f64'" in str(e.value) and "Fix:" in str(e.value)
    (tmp_path / "needy.toml").write_text('''[dialect]
name = "needy"
version = "1.0.0"
summary = "a dialect that needs a capability nobody has"
requires = ["tensor_cores"]

[[op]]
id = "needy.twice"
summary = "a + a"
signature = "(a: u32) -> u32"
compose = "a + a"
kat = [[2, 4]]
''')
    monkeypatch.setenv("VYRE_DECL_OPS_PATH", str(tmp_path))
    reg = vyre_decl.load_registry()
    assert not reg.errors, reg.errors
    needy = parse_program("""program n workgroup(64, 1, 1) {
      buffer x: read u32[] @0
      buffer out: write u32[len(x)] @1
      if gid.x < len(x) { out[gid.x] = needy.twice(x[gid.x]) }
    }""")
    with pytest.raises(VyreError) as e:
        ReferenceBackend(reg).dispatch(needy, [np.ones(2, np.uint32)])
    assert e.value.codes == ["B007"] and "tensor_cores" in str(e.value)


def test_acquire_names_a_device_after_a_colon():
    for bad, code in (("reference:0", "B005"), ("cuda:x", "B001"), ("nosuch:1", "B001")):
        with pytest.raises(VyreError) as e:
            acquire(bad)
        assert e.value.codes == [code], bad


def test_capability_protocols_describe_the_backends():
    from vyre_decl.backends import Backend, GraphBackend, ResidentBackend, TimedBackend
    from vyre_decl.backends.reference import ReferenceBackend

    ref = ReferenceBackend()
    assert isinstance(ref, Backend) and isinstance(ref, TimedBackend)
    assert "resident_buffers" not in ref.capabilities  # it has the methods, and they raise B006
    assert isinstance(ref, ResidentBackend) and isinstance(ref, GraphBackend)


def test_dispatch_into_caller_arrays():
    a, b = np.arange(4, dtype=np.uint32), np.ones(4, np.uint32)
    out = np.zeros(4, np.uint32)
    got = acquire("reference").dispatch(VADD, [a, b], out=[out])
    assert got[0] is out and out.tolist() == [1, 2, 3, 4]
    for bad in ([np.zeros(3, np.uint32)], [np.zeros(4, np.int32)], [], [np.zeros(8, np.uint32)[::2]], "x"):
        keep = out.copy()
        with pytest.raises(VyreError) as e:
            acquire("reference").dispatch(VADD, [a, b], out=bad)
        assert e.value.codes == ["D015"] and "Fix:" in str(e.value)
        assert (out == keep).all()


def test_a_label_names_the_dispatch_in_its_errors(backend):
    with pytest.raises(VyreError) as info:
        backend.dispatch(VADD, [np.zeros(4, np.uint32)], DispatchConfig(label="step 3"))
    assert info.value.codes == ["D001"] and str(info.value).splitlines()[0] == "in dispatch 'step 3'"
    with pytest.raises(VyreError) as info:
        backend.dispatch(VADD, [np.zeros(4, np.uint32)])
    assert "in dispatch" not in str(info.value)  # no label, no summary line
    with pytest.raises(VyreError) as info:
        backend.dispatch(VADD, [np.zeros(4, np.uint32)] * 2, DispatchConfig(label=3))  # type: ignore[arg-type]
    assert info.value.codes == ["D008"] and "label" in str(info.value)


BOOLS = parse_program("""program b workgroup(64, 1, 1) {
  buffer a: read bool[] @0
  buffer o: write u32[len(a)] @1
  let i = gid.x
  if i < len(o) { o[i] = select(a[i], 1u32, 0u32) }
}""")


@pytest.mark.parametrize("inputs, config, code", [
    (None, None, "D001"),
    ((x for x in [[1], [1]]), None, "D001"),
    ([[1], [1]], {"grid": (1, 1, 1)}, "D008"),
    ([memoryview(np.zeros(4, np.float64)), np.zeros(8, np.uint32)], None, "D002"),  # never read as u32 words
    ([[[1, 2], [3, 4]], [1, 2, 3, 4]], None, "D002"),
    ([[[1, 2], [3]], [1, 2, 3]], None, "D002"),
    ([[1.7, 2.2], [1, 2]], None, "D002"),  # never truncated
    ([["1", "2"], [1, 2]], None, "D002"),  # never parsed
    ([[True, False], [1, 2]], None, "D002"),
    ([[1, 2.0], [1, 2]], None, "D002"),
    ([[10**400, 2], [1, 2]], None, "D002"),
], ids=["none", "generator", "config dict", "f64 memoryview", "nested", "ragged", "floats", "strings", "bools",
        "mixed", "huge"])
def test_hostile_dispatch_arguments_get_codes_never_reinterpretation(backend, inputs, config, code):
    for call in (lambda: backend.dispatch(VADD, inputs, config), lambda: backend.compile(VADD).dispatch(inputs, config)):
        with pytest.raises(VyreError) as info:
            call()
        assert info.value.codes == [code] and "Fix:" in str(info.value)


def test_strict_conversions_still_take_what_is_meant(backend):
    strided = memoryview(np.arange(8, dtype=np.uint32))[::2]  # a typed view: its values, not its bytes
    assert backend.dispatch(VADD, [strided, [1, 1, 1, 1]])[0].tolist() == [1, 3, 5, 7]
    raw = memoryview(np.arange(2, dtype=np.uint32).tobytes())  # bytes are the storage
    assert backend.dispatch(VADD, [raw, [1, 1]])[0].tolist() == [1, 2]
    assert backend.dispatch(BOOLS, [[True, False, 1, 0]])[0].tolist() == [1, 0, 1, 0]
    assert backend.dispatch(VADD, [[], []])[0].size == 0


@pytest.mark.parametrize("timeout", [-1.0, 0.0, float("nan"), float("inf"), "5"])
def test_a_timeout_that_is_not_a_positive_number_of_seconds_is_d008(backend, timeout):
    with pytest.raises(VyreError) as info:
        backend.dispatch(VADD, [[1], [1]], DispatchConfig(timeout=timeout))  # type: ignore[arg-type]
    assert info.value.codes == ["D008"] and "timeout" in str(info.value) and "Fix:" in str(info.value)


def test_backend_info_names_the_registration_and_its_roles():
    from vyre_decl.backends import backend_info

    ref, cuda = backend_info("reference"), backend_info("cuda:1")
    assert ref is not None and ref.defines_semantics and ref.contained and ref.devices is None
    assert cuda is not None and cuda.name == "cuda" and not cuda.defines_semantics and cuda.devices is not None
    assert backend_info("nope") is None


def test_a_vyre_error_crosses_a_process_boundary_whole():
    import pickle

    from vyre_decl.backends.cuda.device import CudaPoisoned

    for err in (VyreError.one("B005", "no devices", "acquire", "call acquire('reference')"),
                CudaPoisoned.one("C002", "the context is poisoned", "dispatch", "start a new process")):
        back = pickle.loads(pickle.dumps(err))
        assert type(back) is type(err) and back.codes == err.codes and str(back) == str(err)
        assert back.diagnostics == err.diagnostics
