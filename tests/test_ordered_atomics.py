"""Ordered atomics and bounded waits in the IR (issue 28): the text form (atomic.ORDER.SCOPE before a
read-modify-write, a buffer element or wait(...), and as an atomic store), the builder, the
canonical form (hashes of programs without them unchanged), every validation error (V035-V038 and
the older codes they reuse), and the reference's semantics: one read per wait in its lockstep
order, atomic stores in lane order, and corpus 49 (a single-pass look-back scan) whatever its
waits do."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import vyre_decl
from vyre_decl import ProgramBuilder
from vyre_decl.backends.config import DispatchConfig
from vyre_decl.backends.hostio import check_capabilities, grid_basis
from vyre_decl.conform.corpus import load_corpus
from vyre_decl.ir import (
    Atomic,
    DataType,
    Load,
    MemoryOrder,
    MemoryScope,
    ParseError,
    Store,
    VyreError,
    Wait,
    dumps,
    from_json,
    loads,
    parse_program,
    print_program,
    to_json,
)
from vyre_decl.ir.nodes import Lit
from vyre_decl.ir.record import replace
from vyre_decl.ir.validation import validate

ROOT = Path(__file__).resolve().parent.parent
REF = vyre_decl.acquire("reference")
REG = vyre_decl.default_registry()
O, S = MemoryOrder, MemoryScope

ALL_FORMS = """program forms workgroup(64, 1, 1) {
  buffer flags: read_write u32[] @0
  buffer wide: read_write i64[4] @1
  buffer real: write f32[4] @2
  buffer part: workgroup u32[4]
  let a = atomic.acquire flags[gid.x]
  let b = atomic.acquire.workgroup wait(flags[0u32], 0u32, 64u32)
  let c = atomic.acq_rel primitive.atomic.add(flags[1u32], 1u32) + atomic flags[2u32]
  atomic.release flags[3u32] = a + b
  atomic.workgroup part[0u32] = c
  let d = atomic.release.workgroup primitive.atomic.max(part[1u32], 2u32)
  let e = atomic wait(wide[0u32], -1i64, 1u32)
  atomic.release.workgroup real[0u32] = atomic.acquire real[1u32] + 1.0f32
  let f = atomic primitive.atomic.add(flags[4u32], d)
}
"""


def _program(body: str, buffers: str = "  buffer f: read_write u32[] @0\n", wg: int = 64) -> vyre_decl.ir.Program:
    return parse_program(f"program t workgroup({wg}, 1, 1) {{\n{buffers}{body}\n}}\n")


def _codes(body: str, buffers: str = "  buffer f: read_write u32[] @0\n") -> list[str]:
    return [d.code for d in validate(_program(body, buffers), REG)]


# ----------------------------------------------------------------------------- the text form


def test_every_form_parses_prints_back_and_validates():
    p = parse_program(ALL_FORMS)
    assert validate(p, REG) == []
    text = print_program(p)
    assert parse_program(text) == p and print_program(parse_program(text)) == text
    body = [n.value if hasattr(n, "value") and not isinstance(n, Store) else n for n in p.body]
    a, b, c, store, wg_store, d, e, real_store, f = body
    assert a == Load("flags", vyre_decl.ir.Id(vyre_decl.ir.IdKind.GLOBAL, 0), O.ACQUIRE, S.DEVICE)
    assert isinstance(b, Wait) and (b.order, b.scope, b.bound) == (O.ACQUIRE, S.WORKGROUP, Lit(DataType.U32, 64))
    assert c.args[0].order is O.ACQ_REL and c.args[1] == Load("flags", Lit(DataType.U32, 2), O.RELAXED)
    assert (store.order, store.scope, wg_store.order, wg_store.scope) == (O.RELEASE, S.DEVICE, O.RELAXED, S.WORKGROUP)
    assert (d.order, d.scope) == (O.RELEASE, S.WORKGROUP) and (e.order, e.scope) == (O.RELAXED, S.DEVICE)
    assert real_store.value.args[0].order is O.ACQUIRE
    assert (f.order, f.scope) == (O.RELAXED, S.DEVICE)  # the defaults: what every atomic was


@pytest.mark.parametrize("order", list(O))
@pytest.mark.parametrize("scope", list(S))
def test_each_order_and_scope_is_written_and_read_back(order, scope):
    qual = "atomic" + ("" if order is O.RELAXED else f".{order.value}") + ("" if scope is S.DEVICE else f".{scope.value}")
    p = _program(f"  let v = {qual} primitive.atomic.exchange(f[0u32], 1u32)")
    assert (p.body[0].value.order, p.body[0].value.scope) == (order, scope)
    assert f"let v = {qual} primitive.atomic.exchange" in print_program(p)
    explicit = _program(f"  let v = atomic.{order.value}.{scope.value} primitive.atomic.exchange(f[0u32], 1u32)")
    assert explicit == p  # the defaults may be written; the printer leaves them out


@pytest.mark.parametrize("text", ["atomic.seq f[0u32]", "atomic.workgroup.acquire f[0u32]", "atomic.acquire.release f[0u32]",
                                  "atomic.device.device f[0u32]", "atomic.acquire.cluster primitive.atomic.add(f[0u32], 1u32)"])
def test_a_malformed_qualifier_list_is_p014(text):
    with pytest.raises(ParseError) as err:
        _program(f"  let v = {text}")
    assert err.value.diagnostics[0].code == "P014" and "Fix:" in str(err.value)
    with pytest.raises(ParseError) as err:
        _program(f"  {text} = 1u32" if "(" not in text else f"  {text.split(' ')[0]} f[0u32] = 1u32")
    assert err.value.diagnostics[0].code == "P014"


@pytest.mark.parametrize("text", ["let v = atomic 5u32", "let v = atomic.acquire wait(f[0u32], 0u32)",
                                  "let v = atomic.acquire wait(f[0u32], 0u32, 1u32, 2u32)", "atomic.release v = 1u32",
                                  "let v = atomic.acquire f", "atomic.release f[0u32] 1u32"])
def test_what_follows_atomic_must_be_an_op_call_an_element_or_a_wait(text):
    with pytest.raises(ParseError) as err:
        _program(f"  {text}")
    assert err.value.diagnostics[0].code == "P002" and "Fix:" in str(err.value)


def test_wait_is_no_keyword():
    p = _program("  let wait = atomic wait[0u32]\n  let w = atomic.acquire wait(wait[1u32], wait, 2u32)",
                 "  buffer wait: read_write u32[] @0\n")
    assert validate(p, REG) == [] and parse_program(print_program(p)) == p
    assert p.body[0].value == Load("wait", Lit(DataType.U32, 0), O.RELAXED) and isinstance(p.body[1].value, Wait)


@pytest.mark.parametrize("form", ["atomic wait(f[{}], 0u32, 1u32)", "atomic.acquire f[{}]",
                                  "atomic.acq_rel primitive.atomic.add(f[{}], 1u32)"])
def test_nested_atomics_hit_the_nesting_limit_within_the_parser_s_frames(form):
    import inspect
    import sys

    from vyre_decl.ir.exprparse import FRAMES_PER_LEVEL, MAX_NESTING

    def nested(n: int) -> str:
        deep = "0u32"
        for _ in range(n):
            deep = form.format(deep)
        return f"  let v = {deep}"

    with pytest.raises(ParseError) as err:
        _program(nested(250))
    assert err.value.diagnostics[0].code == "P007"
    n = MAX_NESTING
    while True:  # the deepest text the parser takes, parsed within FRAMES_PER_LEVEL frames a level
        try:
            _program(nested(n))
            break
        except ParseError:
            n -= 1
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(len(inspect.stack(0)) + FRAMES_PER_LEVEL * MAX_NESTING + 20)
    try:
        assert _program(nested(n)).name == "t" and n > MAX_NESTING // 2
    finally:
        sys.setrecursionlimit(old)


# ----------------------------------------------------------------------------- builder and canonical form


def test_the_builder_makes_what_the_text_says():
    b = ProgramBuilder("t", workgroup=(64, 1, 1))
    f = b.inout("f", "u32")
    v = b.let("v", f.wait(b.wgid.x, 0, 64, order="acquire"))
    f.atomic_store(0, v + 1, order=O.RELEASE, scope="workgroup")
    b.do(f.atomic("add", 1, 1, order="acq_rel"))
    b.let("w", f.atomic_load(2, order="acquire", scope=S.WORKGROUP))
    built = b.build()
    assert built == _program("  let v = atomic.acquire wait(f[wgid.x], 0u32, 64u32)\n"
                             "  atomic.release.workgroup f[0u32] = v + 1u32\n"
                             "  let _v1 = atomic.acq_rel primitive.atomic.add(f[1u32], 1u32)\n"
                             "  let w = atomic.acquire.workgroup f[2u32]")
    assert validate(built, REG) == []


@pytest.mark.parametrize("kw", [{"order": "seq_cst"}, {"scope": "system"}, {"order": 3}])
def test_the_builder_refuses_an_unknown_order_or_scope_with_v035(kw):
    b = ProgramBuilder("t")
    f = b.inout("f", "u32")
    with pytest.raises(VyreError) as err:
        f.atomic_load(0, **kw)
    assert err.value.diagnostics[0].code == "V035" and "Fix:" in str(err.value)


def test_the_canonical_form_round_trips_and_keeps_the_defaults_out():
    p = parse_program(ALL_FORMS)
    assert loads(dumps(p)) == p and from_json(to_json(p)) == p and loads(dumps(p)).content_hash() == p.content_hash()
    body = to_json(p)["body"]
    assert body[0]["value"] == {"k": "load", "buf": "flags", "index": {"k": "id", "id": "gid", "axis": 0}, "order": "acquire"}
    assert body[1]["value"]["k"] == "wait" and body[1]["value"]["scope"] == "workgroup"
    assert "order" not in body[8]["value"] and "scope" not in body[8]["value"]  # a relaxed device atomic: as before
    assert body[4] == {"k": "store", "buf": "part", "index": {"k": "lit", "t": "u32", "bits": 0},
                       "value": {"k": "var", "name": "c"}, "order": "relaxed", "scope": "workgroup"}


def test_programs_without_orders_keep_their_hashes():
    corpus = {c.name: c.program for c in load_corpus()}
    pinned = {  # the content hashes before ordered atomics existed
        "16_workgroup_scan": "bbdf3bbed2290e26116a3a35be8f5cdacf257233b1ba469e70fad5036f9364bc",
        "20_histogram_global": "7f759ee8bb81d94db4ac44f821bb0a09095b686b6dc399e7478ea9ae8436b87e",
        "22_atomic_minmax": "e59ff9492b1f49038c8f84a1eebdf08cfed91b202846a2fda01aa2bd3296f749",
        "25_atomic_cas_counter": "7867bd3ce1292c384f3752c396a68bbbdaf217caaebce4cba5e4eea5e0d681df",
    }
    for name, digest in pinned.items():
        assert corpus[name].content_hash() == digest, name
    for name, program in corpus.items():
        text = dumps(program)
        new = any(k in text for k in ('"order"', '"scope"', '"k":"wait"'))
        assert new == (name == "49_lookback_scan"), name


# ----------------------------------------------------------------------------- validation

BUFS = ("  buffer f: read_write u32[] @0\n  buffer r: read u32[] @1\n  buffer part: workgroup u32[4]\n"
        "  buffer pv: private u32[2]\n  buffer b8: read_write u8[] @2\n  buffer fl: read_write f32[] @3\n"
        "  buffer bo: read_write bool[] @4\n  buffer h: read_write f16[] @5\n  buffer big: read_write u64[] @6\n")


@pytest.mark.parametrize("body,code", [
    ("atomic.acquire f[0u32] = 1u32", "V035"),
    ("atomic.acq_rel f[0u32] = 1u32", "V035"),
    ("let v = atomic.release f[0u32]", "V035"),
    ("let v = atomic.acq_rel f[0u32]", "V035"),
    ("let v = atomic.release wait(f[0u32], 0u32, 4u32)", "V035"),
    ("let v = atomic.acquire part[0u32]", "V036"),
    ("atomic.release part[0u32] = 1u32", "V036"),
    ("let v = atomic.acq_rel primitive.atomic.add(part[0u32], 1u32)", "V036"),
    ("let v = atomic.acquire wait(part[0u32], 0u32, 4u32)", "V036"),
    ("let v = atomic b8[0u32]", "V037"),
    ("atomic bo[0u32] = true", "V037"),
    ("let v = atomic h[0u32]", "V037"),
    ("let v = atomic.acquire wait(fl[0u32], 0.0f32, 4u32)", "V037"),
    ("let v = atomic.acquire wait(f[0u32], 0u32, 0u32)", "V038"),
    ("let n = 4u32\n  let v = atomic.acquire wait(f[0u32], 0u32, n)", "V038"),
    ("let v = atomic.acquire wait(f[0u32], 0u32, 4i32)", "V038"),
    ("let v = atomic.acquire wait(f[0u32], 0u32, 4u64)", "V038"),
    ("let v = atomic.acquire r[0u32]", "V012"),
    ("let v = atomic.acquire wait(r[0u32], 0u32, 4u32)", "V012"),
    ("atomic.release r[0u32] = 1u32", "V011"),
    ("let v = atomic pv[0u32]", "V033"),
    ("atomic pv[0u32] = 1u32", "V033"),
    ("let v = atomic wait(pv[0u32], 0u32, 2u32)", "V033"),
    ("let v = atomic.acquire wait(f[0u32], 0i32, 4u32)", "V007"),
    ("let v = atomic.acquire wait(big[0u32], 0u32, 4u32)", "V007"),
    ("let v = atomic.acquire wait(f[0i32], 0u32, 4u32)", "V023"),
    ("let v = atomic.acquire wait(nope[0u32], 0u32, 4u32)", "V004"),
])
def test_each_misuse_is_a_stable_code_with_a_fix(body, code):
    diags = validate(_program(f"  {body}", BUFS), REG)
    assert [d.code for d in diags] == [code], diags
    assert diags[0].fix and diags[0].location.startswith("body[")


def test_the_allowed_combinations_validate():
    ok = ["let v = atomic.acquire.workgroup part[0u32]", "atomic.release.workgroup part[0u32] = 1u32",
          "let v = atomic part[0u32]", "let v = atomic primitive.atomic.add(part[0u32], 1u32)",
          "let v = atomic.acquire.workgroup f[0u32]", "let v = atomic.relaxed wait(big[0u32], 1u64, 9u32)",
          "atomic.release fl[0u32] = 1.5f32", "let v = atomic.acquire big[3u32]",
          "let v = atomic.acquire wait(f[0u32], 0u32, 4294967295u32)"]
    for body in ok:
        assert validate(_program(f"  {body}", BUFS), REG) == [], body


def test_nodes_built_by_hand_are_checked_too():
    base = _program("  let v = f[0u32]\n  f[1u32] = v")
    load, store = base.body[0].value, base.body[1]
    bad = [replace(base, body=(replace(base.body[0], value=replace(load, scope=S.WORKGROUP)), store)),
           replace(base, body=(base.body[0], replace(store, scope=S.WORKGROUP))),
           replace(base, body=(replace(base.body[0], value=Atomic("primitive.atomic.add", "f", Lit(DataType.U32, 0),
                                                                   (Lit(DataType.U32, 1),), "acquire")), store))]  # type: ignore[arg-type]
    for p in bad:  # (a let whose value is refused binds nothing: its uses are V018 after it)
        assert [d.code for d in validate(p, REG)][0] == "V035"
    printed = print_program(_program("  atomic.release f[0u32] = 1u32"))
    assert "atomic.release f[0u32] = 1u32" in printed


def test_a_wait_is_not_uniform():
    diags = validate(_program("  if atomic.acquire wait(f[0u32], 0u32, 4u32) == 1u32 {\n    barrier\n  }"), REG)
    assert [d.code for d in diags] == ["V014"]
    diags = validate(_program("  if atomic.acquire f[0u32] == 1u32 {\n    barrier\n  }"), REG)
    assert [d.code for d in diags] == ["V014"]


def test_a_composition_cannot_wait():
    from vyre_decl.ir.text import parse_expr
    from vyre_decl.registry.opbuild import _impure

    assert _impure(parse_expr("atomic.acquire wait(x[0u32], 0u32, 1u32)")) == "Wait"
    assert _impure(parse_expr("atomic.acquire x[0u32]")) == "Load"


def test_a_backend_without_atomics_refuses_an_atomic_load_store_or_wait():
    for body in ("let v = atomic.acquire f[0u32]", "atomic.release f[0u32] = 1u32",
                 "let v = atomic wait(f[0u32], 0u32, 1u32)"):
        with pytest.raises(VyreError) as err:
            check_capabilities(_program(f"  {body}"), REG, frozenset(), "plain")
        assert err.value.diagnostics[0].code == "B007" and "'atomics'" in str(err.value)
    check_capabilities(_program("  let v = f[0u32]"), REG, frozenset(), "plain")
    # an atomic access makes the grid cover every buffer, as an atomic does
    p = _program("  let v = atomic.acquire x[gid.x]\n  o[gid.x] = v",
                 "  buffer x: read_write u32[] @0\n  buffer o: write u32[4] @1\n")
    assert grid_basis(p) == ("x", "o")


# ----------------------------------------------------------------------------- the reference

WAITS = """program waits workgroup(4, 1, 1) {
  buffer f: read_write u32[] @0
  buffer out: write u32[len(f)] @1
  let i = gid.x
  atomic.release f[i] = i + 100u32
  out[i] = atomic.acquire wait(f[(i + 1u32) % len(f)], 0u32, 8u32)
}
"""


def test_a_wait_yields_what_the_invocations_before_it_in_lockstep_wrote():
    f = np.zeros(8, np.uint32)
    f_after, out = REF.dispatch(parse_program(WAITS), [f])
    np.testing.assert_array_equal(f_after, np.arange(8) + 100)
    np.testing.assert_array_equal(out, (np.arange(8) + 1) % 8 + 100)  # every store ran before every wait


def test_a_wait_that_runs_out_yields_its_value_and_out_of_bounds_yields_zero():
    p = _program("  let i = gid.x\n  out[i] = atomic.acquire wait(f[i], 7u32, 3u32)\n"
                 "  out[i + 4u32] = atomic wait(f[i + 100u32], 7u32, 3u32)",
                 "  buffer f: read_write u32[] @0\n  buffer out: write u32[8] @1\n", wg=4)
    f = np.array([7, 1, 7, 0], np.uint32)
    _, out = REF.dispatch(p, [f], DispatchConfig(grid=(1, 1, 1)))
    np.testing.assert_array_equal(out, [7, 1, 7, 0, 0, 0, 0, 0])  # 7: timed out; 1, 0: differed; OOB: 0


def test_a_wait_evaluates_its_value_before_reading():
    p = _program("  let v = atomic wait(f[0u32], atomic primitive.atomic.add(f[0u32], 5u32), 2u32)\n  f[1u32] = v", wg=1)
    f, = REF.dispatch(p, [np.array([3, 0], np.uint32)], DispatchConfig(grid=(1, 1, 1)))
    np.testing.assert_array_equal(f, [8, 8])  # the add ran first; the wait read 8, which differs from 3


@pytest.mark.parametrize("where", ["f", "part"])
def test_atomic_stores_to_one_word_apply_in_invocation_order(where):
    body = (f"  atomic{'' if where == 'f' else '.workgroup'} {where}[0u32] = gid.x * 3u32\n"
            + ("  barrier\n  if lid.x == 0u32 {\n    f[wgid.x + 1u32] = part[0u32]\n  }" if where == "part" else ""))
    p = _program(body, "  buffer f: read_write u32[] @0\n  buffer part: workgroup u32[1]\n", wg=64)
    f, = REF.dispatch(p, [np.zeros(256, np.uint32)], DispatchConfig(grid=(4, 1, 1)))
    if where == "f":
        assert f[0] == 255 * 3  # the highest linear id stores last
    else:
        np.testing.assert_array_equal(f[1:5], [63 * 3, 127 * 3, 191 * 3, 255 * 3])


def test_ordered_accesses_compute_what_plain_ones_do():
    plain = _program("  let i = gid.x\n  let v = f[i] + 1u32\n  f[i] = v\n  let o = atomic primitive.atomic.add(f[0u32], 1u32)")
    ordered = _program("  let i = gid.x\n  let v = atomic.acquire f[i] + 1u32\n  atomic.release f[i] = v\n"
                       "  let o = atomic.acq_rel primitive.atomic.add(f[0u32], 1u32)")
    x = np.arange(100, dtype=np.uint32)
    np.testing.assert_array_equal(REF.dispatch(plain, [x])[0], REF.dispatch(ordered, [x])[0])


LOOKBACK = next(c.program for c in load_corpus() if c.name == "49_lookback_scan")


@pytest.mark.parametrize("n", [0, 1, 63, 64, 65, 130, 1000, 4097])
def test_corpus_49_is_an_inclusive_sum_whatever_its_waits_do(n, monkeypatch):
    x = np.random.default_rng(n).integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    want = np.cumsum(x.astype(np.uint64)).astype(np.uint32)
    nwg = -(-n // 64)
    results = []
    for chunk in (1 << 20, 64, 192):  # one chunk (waits on predecessors see their aggregates, or run out), or
        monkeypatch.setattr("vyre_decl.reference.program.CHUNK_INVOCATIONS", chunk)  # many (earlier chunks finished)
        out, flags, agg, incl = REF.dispatch(LOOKBACK, [x])
        np.testing.assert_array_equal(out, want)
        np.testing.assert_array_equal(flags, np.r_[np.full(nwg, 2), np.zeros(n - nwg)].astype(np.uint32))
        np.testing.assert_array_equal(incl[:nwg], want[np.minimum(np.arange(1, nwg + 1) * 64, n) - 1])
        results.append([a.tobytes() for a in (out, flags, agg, incl)])
    assert results[0] == results[1] == results[2]


def test_the_reference_outcome_of_a_wait_follows_its_chunks(monkeypatch):
    """A wait on a later workgroup's flag, written before the wait in program order: in one chunk the
    flag is there (lockstep); with a chunk per workgroup the later workgroup has not run (timeout)."""
    p = _program("  let w = wgid.x\n  if lid.x == 0u32 {\n    atomic.release f[w] = w + 1u32\n"
                 "    out[w] = atomic.acquire wait(f[w + 1u32], 0u32, 4u32)\n  }",
                 "  buffer f: read_write u32[] @0\n  buffer out: write u32[len(f)] @1\n", wg=64)
    f = np.zeros(4, np.uint32)
    cfg = DispatchConfig(grid=(4, 1, 1))
    np.testing.assert_array_equal(REF.dispatch(p, [f], cfg)[1], [2, 3, 4, 0])
    monkeypatch.setattr("vyre_decl.reference.program.CHUNK_INVOCATIONS", 64)
    np.testing.assert_array_equal(REF.dispatch(p, [f], cfg)[1], [0, 0, 0, 0])


def test_the_wait_example_in_the_docs_reads_its_predecessor():
    (src,) = [b for b in (ROOT / "docs" / "text-form.md").read_text().split("```vyre\n")[1:] if "program publish" in b]
    p = parse_program(src.split("```")[0])
    x = np.arange(1000, dtype=np.uint32)
    out, value, flag = REF.dispatch(p, [x])
    nwg = -(-1000 // 64)
    np.testing.assert_array_equal(out[:nwg], np.r_[0, x[: (nwg - 1) * 64: 64]])
    assert (flag[:nwg] == 1).all() and (flag[nwg:] == 0).all()


def test_a_routine_kernel_s_op_parameter_after_ordered_atomic_is_an_atomic_op():
    from vyre_decl.routines.params import check_value, param_uses

    uses = param_uses("program k workgroup(64, 1, 1) {\n  buffer f: read_write u32[] @0\n"
                      "  let v = atomic.acq_rel.workgroup $combine(f[0u32], 1u32)\n}\n", "k")
    assert uses == {"combine": frozenset({"atomic"})}
    assert check_value("primitive.atomic.max", uses["combine"], REG) is None
    assert check_value("primitive.math.max", uses["combine"], REG) is not None
    p = parse_program("program k workgroup(64, 1, 1) {\n  buffer f: read_write u32[] @0\n"
                      "  let v = atomic.acq_rel.workgroup $combine(f[0u32], 1u32)\n}\n", "k.vyre",
                      params={"combine": "primitive.atomic.max"})
    assert p.body[0].value.op == "primitive.atomic.max" and p.body[0].value.order is O.ACQ_REL
