"""The fuzzer's shrinker: smaller programs that still fail, never racy ones."""

from __future__ import annotations

from vyre_decl.conform.shrink import shrink_program
from vyre_decl.ir.nodes import Atomic, Op, Program, Select, Store, Var
from vyre_decl.ir.text import parse_program, print_program
from vyre_decl.ir.walk import body_exprs, statements, subexprs
from vyre_decl.registry import default_registry

REG = default_registry()

SRC = """program t workgroup(64, 1, 1) {
  buffer a: read i32[] @0
  buffer acc: read_write i32[8] @1
  buffer o: write i32[len(a)] @2
  let i = gid.x
  let j = i + 0u32
  if i < len(o) {
    let v = primitive.math.abs(a[i]) % 7i32 + 3i32
    o[j] = select(atomic primitive.atomic.add(acc[i % 9u32], v) != 0i32, v * 2i32, v * 2i32)
  }
}"""


def _ops(p: Program) -> set[str]:
    return {x.op for e in body_exprs(p.body) for x in subexprs(e) if isinstance(x, Op)}


def test_it_shrinks_to_what_keeps_failing() -> None:
    p = parse_program(SRC)
    small = shrink_program(p, REG, lambda q: "primitive.math.abs" in _ops(q))
    assert "primitive.math.abs" in _ops(small)
    assert len(print_program(small)) < len(print_program(p))


def test_every_store_keeps_its_address() -> None:
    """A store index made a constant (or a let it reads made one) has every invocation store to one
    element: a race, which once shrank a real mismatch into a false one (fuzz seed 614)."""
    small = shrink_program(parse_program(SRC), REG, lambda q: any(isinstance(n, Store) for n in statements(q.body)))
    stores = [n for n in statements(small.body) if isinstance(n, Store)]
    assert stores, print_program(small)
    for s in stores:
        assert isinstance(s.index, Var) and s.index.name == "j", print_program(small)
    assert "let j = i + 0u32" in print_program(small) and "let i = gid.x" in print_program(small)


def test_an_update_whose_old_value_never_shows_stays_hidden() -> None:
    """select(atomic != 0, c, c): the arms change only together, and the select is never replaced
    by its condition (the old value, which depends on the order of the invocations)."""
    seen: list[Program] = []

    def record(q: Program) -> bool:
        seen.append(q)
        return False

    shrink_program(parse_program(SRC), REG, record, attempts=10_000)
    assert len(seen) > 20
    for q in seen:
        for e in body_exprs(q.body):
            for x in subexprs(e):
                if isinstance(x, Select) and any(isinstance(y, Atomic) for y in subexprs(x.cond)):
                    assert x.if_true == x.if_false, print_program(q)
        for n in statements(q.body):
            if isinstance(n, Store):
                assert not any(isinstance(y, Atomic) for y in subexprs(n.value)) or isinstance(n.value, Select), \
                    print_program(q)
