"""Checking algebraic laws on any evaluator (the reference, or a backend).

The equations come from the law catalogue (``registry.laws.CATALOGUE``); this module only
evaluates them: ``check_law(op, binding, law, evaluate, samples)`` tries one law on every tuple
of the sample values (or a seeded random choice of them), ``check_laws`` every declared law
that applies to a binding. Values are compared bit-exactly, except that all NaNs are equal.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable, Sequence

import numpy as np

from ..ir.scalars import decode
from ..ir.signature import Binding
from ..ir.types import DataType
from ..registry.laws import CATALOGUE
from ..registry.model import LawDef, OpDef
from ..registry.registry import Registry
from .values import from_bits, mismatches, to_bits

__all__ = ["LawResult", "check_law", "check_laws", "Evaluate"]

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
    witness: tuple[int, ...] = ()  # the counterexample's operand bit patterns (the law's variables, a, b, c)

    def describe(self) -> str:
        types = ",".join(t.value for t in self.binding) or "-"
        if self.holds:
            return f"{self.op} [{types}] {self.law}: holds on {self.checked} case(s)"
        return f"{self.op} [{types}] {self.law}: FAILS, e.g. {self.counterexample}"


Term = Any  # a variable name, or (function name, argument terms...)


@lru_cache(maxsize=None)
def _parse(text: str) -> Term:
    """``f(a,g(b,c))`` as nested tuples ('f', 'a', ('g', 'b', 'c'))."""
    tokens = re.findall(r"[a-z]|[(),]", text)
    pos = 0

    def term() -> Term:
        nonlocal pos
        name = tokens[pos]
        pos += 1
        if pos < len(tokens) and tokens[pos] == "(":
            pos += 1
            args = [term()]
            while tokens[pos] == ",":
                pos += 1
                args.append(term())
            pos += 1  # ')'
            return (name, *args)
        return name

    return term()


def _variables(term: Term) -> set[str]:
    if isinstance(term, str):
        return {term} if term in "abc" else set()
    return set().union(*(_variables(t) for t in term[1:]))


def _columns(samples: list[int], arity: int, limit: int, seed: int) -> list[np.ndarray]:
    """Every ``arity``-tuple of ``samples`` (as columns) or, past ``limit`` tuples, a seeded random
    choice of ``limit`` of them."""
    n = len(samples)
    if n**arity <= limit:
        idx = np.indices((n,) * arity).reshape(arity, -1)
    else:
        idx = np.random.default_rng(seed).integers(0, n, (arity, limit))
    pool = np.array(samples, dtype=np.uint64)  # bit patterns
    return [pool[row] for row in idx]


def check_law(op: OpDef, binding: Binding, law: LawDef, evaluate: Evaluate, samples: list[int],
              registry: Registry, limit: int = 20000) -> LawResult:
    """Check one law of ``op`` (declared or a candidate) for ``binding`` on ``samples`` (bit
    patterns of the op's operand type); ``registry`` resolves the op a distributive law names."""
    kind = CATALOGUE[law.law]
    arity = len(op.signature.inputs)
    equations = [(_parse(lhs), _parse(rhs)) for lhs, rhs in kind.equations[arity]]
    names = sorted(set().union(*(_variables(lt) | _variables(rt) for lt, rt in equations)))
    t: DataType = op.input_types(binding)[0]
    out_t = op.output_type(binding)
    cols = _columns(samples, len(names), limit, len(names))
    env: dict[str, np.ndarray] = {name: from_bits(t, c) for name, c in zip(names, cols)}
    n = len(cols[0])
    if law.element is not None:
        et = out_t if kind.element == "result" else t
        env["e"] = from_bits(et, [law.element_bits(et)] * n)
    fns: dict[str, tuple[str, Binding]] = {"f": (op.id, binding)}
    if law.over is not None:
        fns["g"] = (law.over, registry.get(law.over).signature.bind([out_t, out_t])[0])

    def value(term: Term) -> np.ndarray:
        if isinstance(term, str):
            return env[term]
        op_id, b = fns[term[0]]
        return evaluate(op_id, b, [value(a) for a in term[1:]])

    for (lt, rt), (lhs, rhs) in zip(equations, kind.equations[arity]):
        left, right = value(lt), value(rt)
        bad = mismatches(out_t, left, right)
        if bad.size:
            i = int(bad[0])
            example: dict[str, object] = {"equation": f"{lhs} = {rhs}"}
            for name in names:
                example[name] = _show(t, env[name][i])
            if law.element is not None:
                example["element"] = law.element
            example["left"] = _show(out_t, np.asarray(left)[i])
            example["right"] = _show(out_t, np.asarray(right)[i])
            witness = tuple(int(to_bits(t, env[name][i: i + 1])[0]) for name in names)
            return LawResult(op.id, binding, law.text or law.law, False, n, example, witness)
    return LawResult(op.id, binding, law.text or law.law, True, n)


def check_laws(op: OpDef, binding: Binding, evaluate: Evaluate, samples: list[int], registry: Registry,
               limit: int = 20000) -> list[LawResult]:
    """Check every declared law of ``op`` that applies to ``binding``."""
    m = op.binding_map(binding)
    return [check_law(op, binding, law, evaluate, samples, registry, limit) for law in op.laws if law.applies(m)]


def _show(t: DataType, value: object) -> str:
    bits = int(to_bits(t, np.asarray([value]))[0])
    return f"{decode(t, bits)!r} ({bits:#x})"
