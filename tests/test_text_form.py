"""The text form: parse(print(p)) == p on random programs, readable output, located parse errors."""

from __future__ import annotations

import pytest

from progen import Gen
from vyre_decl.ir import (
    DataType, Lit, Op, ParseError, loads, dumps, parse_expr, parse_program, print_expr, print_program,
)
from vyre_decl.ir.scalars import format_literal, parse_value


@pytest.mark.parametrize("seed", range(400))
def test_print_parse_round_trip(seed):
    program = Gen(seed).program()
    text = print_program(program)
    assert parse_program(text) == program, text
    assert print_program(parse_program(text)) == text


@pytest.mark.parametrize("seed", range(100))
def test_json_round_trip(seed):
    program = Gen(seed).program()
    assert loads(dumps(program)) == program


def test_every_f32_pattern_class_round_trips():
    import numpy as np

    rng = np.random.default_rng(0)
    for bits in list(rng.integers(0, 2**32, 20000)) + [0x7FC00000, 0xFFC00000, 0x7F800001, 1, 0x80000000]:
        text = format_literal(DataType.F32, int(bits))
        body = text[: -len("f32")].rstrip("_")
        assert parse_value(DataType.F32, body) == int(bits), text


def test_precedence_and_casts_print_minimally():
    e = parse_expr("a + b * c - (d - e) << 2u32 & f | g ^ h")
    assert print_expr(e) == "a + b * c - (d - e) << 2u32 & f | g ^ h"
    assert print_expr(parse_expr("-x as u32")) == "-x as u32"
    assert print_expr(parse_expr("-(x as u32)")) == "-(x as u32)"
    assert parse_expr("-5i32") == Lit.of(DataType.I32, -5)
    assert parse_expr("-(5i32)") == Op("primitive.math.neg", (Lit.of(DataType.I32, 5),))
    assert parse_expr("a < b == c") == parse_expr("(a < b) == c")
    assert parse_expr("primitive.convert.cast<T=f32>(x)") == parse_expr("x as f32")


def test_else_if_and_separators():
    p = parse_program(
        "program m workgroup(1, 1, 1) { let x = 1u32; if x == 1u32 { x = 2u32 } else if x == 2u32 { return } }"
    )
    assert "else {\n    if x == 2u32" in print_program(p)


@pytest.mark.parametrize(
    "src, code, where, snippet",
    [
        ("program m workgroup(1, 1, 1) {\n  let x = 5\n}", "P004", "2:11", "no type suffix"),
        ("program m workgroup(1, 1, 1) {\n  let x = 300u8\n}", "P003", "2:11", "exist only in buffers"),
        ("program m workgroup(1, 1, 1) {\n  let x = 3u32 4u32\n}", "P002", "2:16", "expected the end of the statement"),
        ("program m workgroup(1, 1) {\n}", "P002", "1:25", "expected ','"),
        ("program m workgroup(1, 1, 1) {\n  let = 1u32\n}", "P002", "2:7", "variable name"),
        ("program m workgroup(1, 1, 1) {\n  x = 99999999999u32\n}", "P003", "2:7", "does not fit"),
        ("program m workgroup(1, 1, 1) {\n  buffer a: readonly u32[] @0\n}", "P002", "2:13", "access mode"),
        ("program m workgroup(1, 1, 1) {\n  let x = 1u32 $ 2u32\n}", "P001", "2:16", "unexpected character"),
        ("program m workgroup(1, 1, 1) {\n  let x = 1u32\n", "P002", "3:1", "close the program"),
        ("program m workgroup(1, 1, 1) {\n  let let = 1u32\n}", "P002", "2:7", "keyword"),
        ("program m workgroup(1, 1, 1) {\n  let x = y as u128\n}", "P005", "2:16", "unknown type"),
        ("program m workgroup(1, 1, 1) {\n  let x = f.g<T=u32, T=i32>(y)\n}", "P006", "2:22", "given twice"),
    ],
)
def test_parse_errors_are_located_and_fixable(src, code, where, snippet):
    with pytest.raises(ParseError) as info:
        parse_program(src, filename="k.vyre")
    d = info.value.diagnostics[0]
    assert d.code == code
    assert d.location == f"k.vyre:{where}"
    assert snippet in str(info.value)
    assert "Fix:" in str(info.value) and d.fix


def test_deep_nesting_is_a_parse_error_not_a_crash():
    with pytest.raises(ParseError) as info:
        parse_expr("-" * 1200 + "a")
    assert info.value.codes == ["P007"]
    with pytest.raises(ParseError) as info:
        parse_program("program m workgroup(1, 1, 1) {" + "{" * 400 + "}" * 400 + "}")
    assert info.value.codes == ["P007"]


def test_an_op_of_a_dialect_named_like_an_id_still_parses():
    assert isinstance(parse_expr("gid.x(1u32)"), Op) and isinstance(parse_expr("gid.x<k=1u32>(1u32)"), Op)
    assert print_expr(parse_expr("gid.x < 3u32")) == "gid.x < 3u32"


def test_load_program_reports_unreadable_and_non_utf8_files_with_codes(tmp_path):
    import vyre_decl

    from vyre_decl.ir.parser import MAX_PROGRAM_TEXT

    bad = tmp_path / "bad.vyre"
    bad.write_bytes(b"program p workgroup(1, 1, 1) { let x = 1u32 }\n\xff\xfe")
    huge = tmp_path / "huge.vyre"
    huge.write_bytes(b"program p workgroup(1, 1, 1) {\n" + b"// padding\n" * (MAX_PROGRAM_TEXT // 11) + b"}\n")
    for path, code in ((bad, "P010"), (tmp_path / "missing.vyre", "P009"), (huge, "P011")):
        with pytest.raises(vyre_decl.VyreError) as e:
            vyre_decl.load_program(str(path))
        assert e.value.codes == [code] and str(path) in str(e.value) and "Fix:" in str(e.value)


def test_program_text_over_the_size_limit_is_p011_before_any_parsing():
    from vyre_decl.ir.parser import MAX_PROGRAM_TEXT

    with pytest.raises(ParseError) as e:
        parse_program("program p workgroup(1, 1, 1) {\n" + " " * MAX_PROGRAM_TEXT + "}")
    assert e.value.codes == ["P011"] and "Fix:" in str(e.value)


def test_non_ascii_digits_are_not_sizes():
    with pytest.raises(ParseError) as e:
        parse_program("program p workgroup(\u0661, 1, 1) { let x = 1u32 }")
    assert e.value.codes == ["P002"]


@pytest.mark.parametrize("src, code", [
    ("program p workgroup(" + "9" * 5000 + ", 1, 1) { buffer o: write u32[4] @0 }", "P003"),
    ("program p workgroup(1, 1, 1) { buffer o: write u32[" + "9" * 5000 + "] @0 }", "P003"),
    ("program p workgroup(1, 1, 1) {\n buffer o: write u32[4] @0\n region \"a\\x01b\" { o[0u32] = 1u32 }\n}", "P002"),
    ("program p workgroup(1, 1, 1) {\n buffer o: write u32[4] @0\n region \"a\x01b\" { o[0u32] = 1u32 }\n}", "P002"),
    ("program p workgroup(1, 1, 1) {\n buffer o: write u32[4] @0\n if gid.x == 0u32 { o[0u32] = 1u32 }"
     + "".join(f" else if gid.x == {i}u32 {{ o[0u32] = {i}u32 }}" for i in range(1, 3000)) + "\n}", "P007"),
    ("program p workgroup(1, 1, 1) {\n buffer o: write u32[4] @0\n o[0u32] = " + "7" * 5000 + "u32\n}", "P003"),
    ("program p workgroup(1, 1, 1) {\n buffer o: write f32[4] @0\n o[0u32] = 1e999f32\n}", "P003"),
    ("program p workgroup(1, 1, 1) {\n buffer o: write f32[4] @0\n o[0u32] = -3.5e38f32\n}", "P003"),
    ("program p workgroup(1, 1, 1) {\n buffer o: write f64[4] @0\n o[0u32] = 1e309f64\n}", "P003"),
    ("program p workgroup(1, 1, 1) {\n buffer o: write u32[4] @0\n let x = 1u32\n"
     " o[0u32] = hash.crc32r_word<poly=x>(1u32, 2u32)\n}", "P002"),
    ("program p workgroup(1, 1, 1) {\n buffer o: write u32[4] @0\n o[0u32] = hash.crc32r_word<poly=T>(1u32, 2u32)\n}",
     "P002"),
], ids=["huge workgroup", "huge size", "bad region escape", "raw control character in a region name", "else-if chain", "huge literal", "f32 beyond range",
        "f32 beyond range below", "f64 beyond range", "attribute is a name", "attribute is a type variable"])
def test_hostile_program_text_gets_a_code_not_a_crash(src, code):
    with pytest.raises(ParseError) as info:
        parse_program(src)
    assert info.value.codes == [code] and "Fix:" in str(info.value)


def test_a_program_too_deep_to_hash_or_print_is_v016_not_a_recursion_error():
    import vyre_decl
    from vyre_decl.ir import VyreError, print_program

    from vyre_decl.ir import Access, BufferDecl, DataType, Lit, Program, Store

    value = one = Lit(DataType.U32, 1)
    for _ in range(10000):  # a left-deep chain 10,000 deep (the parser refuses it: P007)
        value = Op("primitive.math.add", (value, one))
    deep = Program((BufferDecl("o", Access.WRITE, DataType.U32, 4, 0, True),), (1, 1, 1),
                   (Store("o", Lit(DataType.U32, 0), value),), name="p")
    from vyre_decl.emit import emit

    for call in (deep.content_hash, lambda: print_program(deep), lambda: emit(deep),
                 lambda: vyre_decl.acquire("reference").dispatch(deep, [])):
        with pytest.raises(VyreError) as info:
            call()
        assert info.value.codes == ["V016"] and "Fix:" in str(info.value)
