"""Checking an op's declared algebraic laws on any evaluator (the reference, or a backend).

``check_laws(op, binding, evaluate, samples)`` tries every law that applies to ``binding`` on the
sample values and returns one ``LawResult`` per law, with a counterexample when it fails.
Values are compared bit-exactly, except that all NaNs are equal.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from ..ir.scalars import decode
from ..ir.signature import Binding
from ..ir.types import DataType
from ..registry.model import LawDef, OpDef
from .values import from_bits, mismatches, to_bits

__all__ = ["LawResult", "check_laws"]

Evaluate = Callable[[str, Binding, Sequence[np.ndarray]], np.ndarray]
"""evaluate(op_id, binding, args) -> results, elementwise."""


@dataclass(frozen=True)
class LawResult:
    op: str
    binding: Binding
    law: str
    holds: bool
    checked: int  # number of cases tried
    counterexample: dict[str, object] | None = None

    def describe(self) -> str:
        types = ",".join(t.value for t in self.binding) or "-"
        if self.holds:
            return f"{self.op} [{types}] {self.law}: holds on {self.checked} case(s)"
        return f"{self.op} [{types}] {self.law}: FAILS, e.g. {self.counterexample}"


def _columns(samples: list[int], arity: int, limit: int, seed: int) -> list[list[int]]:
    """Every ``arity``-tuple of ``samples`` (as columns) or, past ``limit`` tuples, a seeded random
    choice of ``limit`` of them."""
    n = len(samples)
    if n**arity <= limit:
        idx = np.indices((n,) * arity).reshape(arity, -1)
    else:
        idx = np.random.default_rng(seed).integers(0, n, (arity, limit))
    pool = np.array(samples, dtype=object)
    return [pool[row].tolist() for row in idx]


def check_laws(
    op: OpDef,
    binding: Binding,
    evaluate: Evaluate,
    samples: list[int],
    limit: int = 20000,
) -> list[LawResult]:
    """Check every law of ``op`` that applies to ``binding`` on ``samples`` (bit patterns of the
    op's operand type)."""
    m = op.binding_map(binding)
    laws = [law for law in op.laws if law.applies(m)]
    if not laws:
        return []
    t: DataType = op.input_types(binding)[0]
    results = []
    for law in laws:
        results.append(_check(op, binding, law, t, evaluate, samples, limit))
    return results


def _check(op: OpDef, binding: Binding, law: LawDef, t: DataType, evaluate: Evaluate,
           samples: list[int], limit: int) -> LawResult:
    f = lambda *args: evaluate(op.id, binding, args)  # noqa: E731
    kind = law.law
    unary = len(op.signature.inputs) == 1
    arity = 3 if kind in ("associative", "distributive") else 2 if kind == "commutative" else 1
    cols = _columns(samples, arity, limit, arity)
    xs = [from_bits(t, list(c)) for c in cols]
    n = len(xs[0])
    checks: list[tuple[str, np.ndarray, np.ndarray]] = []  # (equation, left, right)
    if kind in ("identity", "left_identity", "right_identity", "absorbing", "left_absorbing",
                "right_absorbing", "self_inverse"):
        e = from_bits(t, [law.element_bits(t)] * n)
        a = xs[0]
    if kind == "commutative":
        checks.append(("f(a,b) = f(b,a)", f(xs[0], xs[1]), f(xs[1], xs[0])))
    elif kind == "associative":
        a, b, c = xs
        checks.append(("f(f(a,b),c) = f(a,f(b,c))", f(f(a, b), c), f(a, f(b, c))))
    elif kind in ("identity", "left_identity"):
        checks.append(("f(e,a) = a", f(e, a), a))
    if kind in ("identity", "right_identity"):
        checks.append(("f(a,e) = a", f(a, e), a))
    if kind in ("absorbing", "left_absorbing"):
        checks.append(("f(z,a) = z", f(e, a), e))
    if kind in ("absorbing", "right_absorbing"):
        checks.append(("f(a,z) = z", f(a, e), e))
    if kind == "self_inverse":
        checks.append(("f(a,a) = e", f(a, a), e))
    if kind == "idempotent":
        a = xs[0]
        if unary:
            checks.append(("f(f(a)) = f(a)", f(f(a)), f(a)))
        else:
            checks.append(("f(a,a) = a", f(a, a), a))
    if kind == "involution":
        checks.append(("f(f(a)) = a", f(f(xs[0])), xs[0]))
    if kind == "distributive":
        a, b, c = xs
        g = lambda x, y: evaluate(law.over, binding, (x, y))  # noqa: E731
        checks.append(("f(a,g(b,c)) = g(f(a,b),f(a,c))", f(a, g(b, c)), g(f(a, b), f(a, c))))
        checks.append(("f(g(b,c),a) = g(f(b,a),f(c,a))", f(g(b, c), a), g(f(b, a), f(c, a))))
    out_t = op.output_type(binding)
    ulp = op.tolerance(out_t) if out_t.is_float else 0
    for equation, left, right in checks:
        bad = mismatches(out_t, left, right, ulp)
        if bad.size:
            i = int(bad[0])
            example: dict[str, object] = {"equation": equation}
            for name, col in zip("abc", xs):
                example[name] = _show(t, col[i])
            if law.element is not None:
                example["element"] = law.element
            example["left"] = _show(out_t, np.asarray(left)[i])
            example["right"] = _show(out_t, np.asarray(right)[i])
            return LawResult(op.id, binding, kind, False, n, example)
    return LawResult(op.id, binding, kind, True, n)


def _show(t: DataType, value: object) -> str:
    bits = int(to_bits(t, np.asarray([value]))[0])
    return f"{decode(t, bits)!r} ({bits:#x})"
