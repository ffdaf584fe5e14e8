"""Random programs for property tests of the text and JSON forms (structure, not validity)."""

from __future__ import annotations

import random

from vyre_decl.conform.witnesses import witnesses
from vyre_decl.ir import (
    Access,
    Assign,
    Atomic,
    Barrier,
    Block,
    BufferDecl,
    BufLen,
    DataType,
    Id,
    IdKind,
    If,
    Let,
    Lit,
    Load,
    Loop,
    Op,
    Program,
    Region,
    Return,
    Select,
    Store,
    Var,
)
from vyre_decl.ir import sugar

LIT_TYPES = [DataType.BOOL, DataType.U32, DataType.I32, DataType.U64, DataType.I64, DataType.F32, DataType.F64]
NAMES = ["a", "b", "x", "y", "idx", "acc", "tmp_1", "N", "_q", "v2"]
OP_IDS = list(sugar.BINARY.values()) + list(sugar.UNARY.values()) + ["my.dialect.op", "x.y.z_w", "primitive.convert.cast"]
STRINGS = ["r", "primitive.math.add", 'with "quotes" and \\ slash', "tab\tnew\nline", "ünïcode"]


class Gen:
    def __init__(self, seed: int) -> None:
        self.r = random.Random(seed)

    def lit(self) -> Lit:
        t = self.r.choice(LIT_TYPES)
        if self.r.random() < 0.6:
            bits = self.r.choice(witnesses(t))
        else:
            bits = self.r.getrandbits(t.bits) if t is not DataType.BOOL else self.r.getrandbits(1)
        return Lit(t, bits)

    def expr(self, depth: int) -> object:
        r = self.r
        if depth <= 0:
            return r.choice([self.lit, lambda: Var(r.choice(NAMES)), lambda: Id(r.choice(list(IdKind)), r.randrange(3)),
                             lambda: BufLen(r.choice(NAMES))])()
        kind = r.randrange(8)
        if kind == 0:
            return Load(r.choice(NAMES), self.expr(depth - 1))
        if kind == 1:
            return Select(self.expr(depth - 1), self.expr(depth - 1), self.expr(depth - 1))
        if kind == 2:
            return Atomic("primitive.atomic." + r.choice(["add", "max", "compare_exchange"]), r.choice(NAMES),
                          self.expr(depth - 1), tuple(self.expr(depth - 1) for _ in range(r.randrange(1, 3))))
        if kind == 3:  # any op, possibly with attributes and type arguments
            attrs = tuple((f"k{i}", self.lit()) for i in range(r.randrange(3)))
            types = tuple((f"T{i}", r.choice(list(DataType))) for i in range(r.randrange(3)))
            return Op(r.choice(OP_IDS), tuple(self.expr(depth - 1) for _ in range(r.randrange(4))), attrs, types)
        if kind == 4:
            return Op(sugar.CAST_OP, (self.expr(depth - 1),), types=((sugar.CAST_TYPE_VAR, r.choice(LIT_TYPES)),))
        if kind == 5:
            return Op(r.choice(list(sugar.UNARY.values())), (self.expr(depth - 1),))
        return Op(r.choice(list(sugar.BINARY.values())), (self.expr(depth - 1), self.expr(depth - 1)))

    def body(self, depth: int, n: int) -> tuple:
        return tuple(self.stmt(depth) for _ in range(n))

    def stmt(self, depth: int) -> object:
        r = self.r
        e = lambda: self.expr(r.randrange(4))  # noqa: E731
        kinds = ["let", "assign", "store", "return", "barrier"] + (["if", "loop", "block", "region"] if depth > 0 else [])
        k = r.choice(kinds)
        if k == "let":
            return Let(r.choice(NAMES), e())
        if k == "assign":
            return Assign(r.choice(NAMES), e())
        if k == "store":
            return Store(r.choice(NAMES), e(), e())
        if k == "return":
            return Return()
        if k == "barrier":
            return Barrier()
        inner = self.body(depth - 1, r.randrange(3))
        if k == "if":
            return If(e(), inner, self.body(depth - 1, r.randrange(3)) if r.random() < 0.5 else ())
        if k == "loop":
            return Loop(r.choice(NAMES), e(), e(), inner, r.random() < 0.3)
        if k == "block":
            return Block(inner)
        return Region(r.choice(STRINGS), inner)

    def buffer(self, i: int) -> BufferDecl:
        r = self.r
        access = r.choice(list(Access))
        binding = None if access is Access.WORKGROUP and r.random() < 0.8 else r.randrange(16)
        like = r.choice(NAMES) if r.random() < 0.2 else None
        count = 0 if like else r.choice([0, 1, 64, 4096])
        return BufferDecl(f"buf{i}", access, r.choice(list(DataType)), count, binding, r.random() < 0.3, like)

    def program(self) -> Program:
        r = self.r
        wg = (r.randrange(1, 257), r.randrange(1, 5), r.randrange(1, 3))
        return Program(tuple(self.buffer(i) for i in range(r.randrange(5))), wg, self.body(3, r.randrange(1, 6)),
                       name=r.choice(["main", "k", "vadd_2"]))
