"""Validation: one program per diagnostic code, asserting the code, the node path and a Fix."""

from __future__ import annotations

import pytest

from vyre_decl.ir import (
    Access, BufferDecl, DataType, Limits, Lit, Loop, Program, Var, Let, parse_program, validate,
)

HEAD = "program m workgroup(64, 1, 1) {\n"


def diags(src: str, registry, limits: Limits = Limits()):
    return validate(parse_program(src), registry, limits)


CASES = [
    ("V001", "buffers[1]", "buffer a: read u32[] @0\nbuffer a: read u32[] @1\n"),
    ("V002", "buffers[1]", "buffer a: read u32[] @0\nbuffer b: read u32[] @0\n"),
    ("V004", "body[0].value", "let x = nope[0u32]\n"),
    ("V005", "body[0].value", "let x = primitive.math.nope(1u32, 2u32)\n"),
    ("V006", "body[0].value", "let x = primitive.math.add(1u32)\n"),
    ("V007", "body[0].value", "let x = 1u32 + 1i32\n"),
    ("V008", "body[1]", "let x = 1u32\nlet x = 2u32\n"),
    ("V008", "body[1].then[0]", "let x = 1u32\nif true { let x = 2u32 }\n"),
    ("V009", "body[0]", "y = 1u32\n"),
    ("V010", "body[0].body[0]", "loop i in 0u32 .. 4u32 { i = 1u32 }\n"),
    ("V011", "body[0]", "buffer a: read u32[] @0\na[0u32] = 1u32\n"),
    ("V011", "body[0]", "buffer a: uniform u32[] @0\na[0u32] = 1u32\n"),
    ("V012", "body[0].value", "buffer a: read u32[] @0\nlet o = atomic primitive.atomic.add(a[0u32], 1u32)\n"),
    ("V013", "body[0].value", "buffer a: read_write f32[] @0\nlet o = atomic primitive.atomic.add(a[0u32], 1.0f32)\n"),
    ("V013", "body[0].value", "buffer a: read_write u32[] @0\nlet o = atomic primitive.math.add(a[0u32], 1u32)\n"),
    ("V013", "body[0].value", "let o = primitive.atomic.add(1u32, 1u32)\n"),
    ("V013", "body[0].value", "buffer a: read_write u8[] @0\nlet o = atomic primitive.atomic.add(a[0u32], 1u32)\n"),
    ("V014", "body[0].then[0]", "if gid.x < 4u32 { barrier }\n"),
    ("V014", "body[1]", "if lid.x == 0u32 { return }\nbarrier\n"),
    ("V014", "body[1].body[1]", "let n = gid.x\nloop i in 0u32 .. n { let t = i\nbarrier }\n"),
    ("V014", "body[1].body[0]", "let k = 0u32\nloop i in 0u32 .. 4u32 { barrier\nif gid.x == i { return } }\n"),
    ("V014", "body[2].then[0]", "let k = 0u32\nloop i in 0u32 .. 4u32 { k = gid.x }\nif k == 1u32 { barrier }\n"),
    ("V018", "body[0].value", "let x = y\n"),
    ("V018", "body[1].value", "if true { let t = 1u32 }\nlet x = t\n"),
    ("V019", "buffers[0]", "buffer s: workgroup f32[] \n"),
    ("V019", "buffers[0]", "buffer s: workgroup f32[4] @3\n"),
    ("V019", "buffers[0]", "buffer a: read u32[]\n"),
    ("V019", "buffers[0]", "buffer a: read u32[] @0 output\n"),
    ("V019", "buffers[0]", "buffer o: write u32[] @0\n"),
    ("V019", "buffers[0]", "buffer o: write u32[len(o)] @0\n"),
    ("V019", "buffers[1]", "buffer o: write u32[4] @0\nbuffer p: write u32[len(o)] @1\n"),
    ("V021", "body[0].value", "let x = primitive.convert.cast(1u32)\n"),
    ("V021", "body[0].value", "let x = primitive.math.add<T=u32>(1u32, 2u32)\n"),
    ("V021", "body[0].value", "let x = primitive.math.add<k=1u32>(1u32, 2u32)\n"),
    ("V022", "body[0].cond", "if 1u32 { return }\n"),
    ("V022", "body[0].value.cond", "let x = select(0u32, 1u32, 2u32)\n"),
    ("V023", "body[0].value.index", "buffer a: read u32[] @0\nlet x = a[1i32]\n"),
    ("V023", "body[0].index", "buffer a: read_write u32[] @0\na[1u64] = 1u32\n"),
    ("V024", "body[0]", "loop i in 0u32 .. 4i32 { return }\n"),
    ("V024", "body[0]", "loop i in 0.0f32 .. 4.0f32 { return }\n"),
    ("V007", "body[0].value", "buffer a: read_write u8[] @0\na[0u32] = 1u64\n"),
    ("V007", "body[0].value", "let x = select(true, 1u32, 1.0f32)\n"),
    ("V007", "body[1]", "let x = 1u32\nx = 1.0f32\n"),
]


@pytest.mark.parametrize("code, path, body", CASES)
def test_each_code(code, path, body, registry):
    found = diags(HEAD + body + "}\n", registry)
    assert any(d.code == code and d.location == path for d in found), [str(d) for d in found]
    for d in found:
        assert d.fix and "Fix:" in str(d)


def test_every_code_is_exercised():
    exercised = {c for c, _, _ in CASES} | {"V003", "V015", "V016", "V017", "V020", "V025"}
    assert exercised == {f"V{i:03d}" for i in range(1, 26)}


def test_kernel_parameters_are_bounded_before_ptxas_sees_them(registry):
    def many(n: int) -> Program:
        return Program(tuple(BufferDecl(f"b{i}", Access.READ, DataType.U32, binding=i) for i in range(n)), (1, 1, 1), ())

    assert validate(many(341), registry) == []  # 341 x 12 bytes fit in 4096
    found = validate(many(342), registry)
    assert [d.code for d in found] == ["V025"] and "at most 341 buffers" in str(found[0])


def test_zero_workgroup_dimension(registry):
    p = Program((), (64, 0, 1), ())
    assert [d.code for d in validate(p, registry)] == ["V003"]


def test_bad_identifiers(registry):
    p = Program((BufferDecl("if", Access.READ, DataType.U32, binding=0),), (1, 1, 1),
                (Let("nan_f32", Lit.of(DataType.U32, 1)),), name="9x")
    codes = [(d.code, d.location) for d in validate(p, registry)]
    assert ("V020", "name") in codes and ("V020", "buffers[0]") in codes and ("V020", "body[0]") in codes


def test_limits(registry):
    nested = "let x = 1u32\n" + "if true {\n" * 5 + "x = 2u32\n" + "}\n" * 5
    assert any(d.code == "V015" for d in diags(HEAD + nested + "}", registry, Limits(max_nesting=3)))
    deep = "let x = " + "(" * 10 + "1u32" + " + 1u32)" * 10 + "\n"
    assert any(d.code == "V016" for d in diags(HEAD + deep + "}", registry, Limits(max_expr_depth=5)))
    many = "let x = 1u32\n" + "x = 2u32\n" * 20
    found = diags(HEAD + many + "}", registry, Limits(max_statements=10))
    assert [d.code for d in found] == ["V017"]


def test_valid_programs_have_no_diagnostics(registry):
    src = HEAD + """
      buffer a: read u32[] @0
      buffer o: write u32[len(a)] @1
      buffer s: workgroup u32[64]
      buffer h: read_write u32[16] @2
      let i = gid.x
      s[lid.x] = a[i]
      barrier
      if i < len(o) {
        o[i] = s[lid.x] + 1u32
        let old = atomic primitive.atomic.add(h[a[i] % 16u32], 1u32)
      }
      loop k in 0u32 .. 4u32 { barrier }
      region "r" { let t = 1u32 }
      let t2 = t + 1u32
    }"""
    assert diags(src, registry) == []


def test_sibling_scopes_may_reuse_a_name(registry):
    src = HEAD + "if true { let t = 1u32 } else { let t = 1.0f32 }\nloop i in 0u32 .. 2u32 { }\nloop i in 0u32 .. 2u32 { }\n}"
    assert diags(src, registry) == []


def test_loop_variable_is_in_scope_only_inside(registry):
    p = Program((), (1, 1, 1), (Loop("i", Lit.of(DataType.U32, 0), Lit.of(DataType.U32, 2), ()), Let("j", Var("i"))))
    assert [d.code for d in validate(p, registry)] == ["V018"]


def test_launch_size_limits(registry):
    assert [d.code for d in validate(Program((), (1024, 2, 1), ()), registry)] == ["V003"]
    assert [d.code for d in validate(Program((), (1, 1, 65), ()), registry)] == ["V003"]
    big = Program((BufferDecl("s", Access.WORKGROUP, DataType.F64, 8192),), (64, 1, 1), ())
    assert [(d.code, d.location) for d in validate(big, registry)] == [("V019", "buffers")]


def test_literal_bits_must_be_integers(registry):
    p = Program((), (1, 1, 1), (Let("x", Lit(DataType.U32, 1.5)),))
    assert [d.code for d in validate(p, registry)] == ["V007"]


def test_barrier_analysis_survives_very_deep_expressions(registry):
    from vyre_decl.ir import Op

    e = Lit.of(DataType.I32, 1)
    for _ in range(1500):
        e = Op("primitive.math.neg", (e,))
    codes = {d.code for d in validate(Program((), (1, 1, 1), (Let("x", e),)), registry)}
    assert codes == {"V016"}
