"""One-op programs: a kernel computing a single op for one type binding, elementwise (how the
conformance runner puts one op on a backend)."""

from __future__ import annotations

import re

from ..ir.nodes import Access, Atomic, BufferDecl, Expr, Id, IdKind, Let, Lit, Load, Op, Program, Store, Var
from ..ir.signature import Binding
from ..registry.model import OpDef

__all__ = ["one_op_program"]


def one_op_program(op: OpDef, binding: Binding, attrs: tuple[tuple[str, int], ...] = ()) -> Program:
    """out[i] = op(in0[i], in1[i], ...); for an atomic op, out[i] = atomic op(in0[i], in1[i], ...)
    (so in0 ends holding the new values and out the old ones)."""
    ins = op.input_types(binding)
    i = Id(IdKind.GLOBAL, 0)
    free = op.signature.free_type_vars()
    types = tuple((v, t) for v, t in op.binding_map(binding).items() if v in free)
    attr_types = {a.name: a.dtype for a in op.signature.attrs}
    attr_lits = tuple((n, Lit(attr_types[n], bits)) for n, bits in attrs)
    bufs = [BufferDecl(f"in{j}", Access.READ_WRITE if op.is_atomic and j == 0 else Access.READ, t, binding=j)
            for j, t in enumerate(ins)]
    if op.is_atomic:
        value: Expr = Atomic(op.id, "in0", i, tuple(Load(f"in{j}", i) for j in range(1, len(ins))))
        out_t = ins[0]
    else:
        value = Op(op.id, tuple(Load(f"in{j}", i) for j in range(len(ins))), attr_lits, types)
        out_t = op.output_type(binding)
    bufs.append(BufferDecl("out", Access.WRITE, out_t, binding=len(ins), count=0 if ins else 1,
                           count_like="in0" if ins else None))
    name = re.sub(r"\W", "_", f"{op.id}_{'_'.join(t.value for t in binding)}")
    return Program(tuple(bufs), (64, 1, 1), (Let("v", value), Store("out", i, Var("v"))), name=name)
