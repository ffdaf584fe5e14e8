"""ProgramBuilder: operator sugar maps to op ids, Python numbers take the other operand's type."""

from __future__ import annotations

import numpy as np
import pytest

import vyre_decl
from vyre_decl import ProgramBuilder
from vyre_decl.ir import DataType, Lit, Op, parse_program, print_program, sugar


def test_saxpy_builds_runs_and_round_trips(backend):
    b = ProgramBuilder("saxpy")
    x, y = b.input("x", "f32"), b.input("y", "f32")
    out = b.output("out", "f32", like=x)
    i = b.let("i", b.gid.x)
    with b.if_(i < out.len):
        out[i] = x[i] * 2.0 + y[i]
    p = b.build()
    assert parse_program(print_program(p)) == p
    (o,) = backend.dispatch(p, [np.arange(4, dtype=np.float32), np.ones(4, np.float32)])
    assert o.tolist() == [1.0, 3.0, 5.0, 7.0]


def test_every_sugar_operator_maps_to_its_op(registry):
    b = ProgramBuilder()
    a = b.let("a", b.lit(6, "u32"))
    exprs = {
        "+": a + 1, "-": a - 1, "*": a * 1, "/": a / 1, "%": a % 1, "&": a & 1, "|": a | 1, "^": a ^ 1,
        "<<": a << 1, ">>": a >> 1, "==": a == 1, "!=": a != 1, "<": a < 1, "<=": a <= 1, ">": a > 1, ">=": a >= 1,
    }
    for sym, v in exprs.items():
        assert v.expr.op == sugar.BINARY[sym]
        assert v.expr.args[1] == Lit.of(DataType.U32, 1)
        assert v.expr.op in registry
    flag = a < 3
    assert flag.and_(True).expr.op == "primitive.logical.and" and flag.or_(False).expr.op == "primitive.logical.or"
    assert flag.not_().expr.op == "primitive.logical.not" and (-a).expr.op == "primitive.math.neg"
    assert (~a).expr.op == "primitive.bitwise.not"
    assert (1 - a).expr.args[0] == Lit.of(DataType.U32, 1)  # reflected operators keep the order
    c = a.cast("f64")
    assert c.dtype is DataType.F64 and c.expr == Op(sugar.CAST_OP, (a.expr,), types=(("T", DataType.F64),))
    for op_id in list(sugar.BINARY.values()) + list(sugar.UNARY.values()) + [sugar.CAST_OP]:
        assert op_id in registry


def test_control_flow_atomics_and_shared_memory(backend):
    b = ProgramBuilder("hist", workgroup=(32, 1, 1))
    keys = b.input("keys", "u32")
    hist = b.inout("hist", "u32", 4)
    local = b.shared("local", "u32", 4)
    i = b.let("i", b.gid.x)
    with b.if_(i < keys.len):
        b.do(local.atomic_add(keys[i] % 4, 1))
    b.barrier()
    with b.if_(b.lid.x < 4):
        b.do(hist.atomic_add(b.lid.x, local[b.lid.x]))
    with b.if_(i == 0):
        b.ret()
    with b.else_():
        acc = b.let("acc", b.lit(0, "u32"))
        with b.loop("k", 0, 3) as k:
            b.assign(acc, acc + k)
    p = b.build()
    assert vyre_decl.validate(p) == []
    keys_in = np.arange(50, dtype=np.uint32)
    (h,) = backend.dispatch(p, [keys_in, np.zeros(4, np.uint32)])
    assert h.tolist() == np.bincount(keys_in % 4).tolist()


def test_builder_errors_are_explained():
    b = ProgramBuilder()
    with pytest.raises(TypeError, match="Fix:"):
        b.let("x", 5)  # a bare Python number has no type
    v = b.let("v", b.lit(1, "u32"))
    with pytest.raises(TypeError, match="no Python truth value"):
        if v < 2:
            pass
    with pytest.raises(SyntaxError, match="else_"):
        with b.else_():
            pass


def test_generic_op_with_type_arguments(registry):
    b = ProgramBuilder()
    v = b.let("v", b.lit(3.7, "f32"))
    r = b.op("primitive.convert.cast", v, types={"T": "i64"}, result="i64")
    assert r.dtype is DataType.I64
    b.let("r", r)
    assert vyre_decl.validate(b.build()) == []
