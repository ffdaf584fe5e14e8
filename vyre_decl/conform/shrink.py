"""Shrinking failing cases to small counterexamples.

An op case is a tuple of operand bit patterns: each operand is replaced by simpler values (0, 1,
-1, half, low byte, fewer mantissa bits, ...) as long as the case still fails, until nothing
simpler fails. A program case is a set of input arrays: runtime-sized inputs are truncated and
runs of elements zeroed while the outputs still differ. A failing program is made smaller too:
statements dropped, ifs and loops replaced by their bodies, expressions by a sub-expression or a
zero literal, as long as the program stays valid and still fails.
"""

from __future__ import annotations

import math
from ..ir.record import replace
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from ..ir.nodes import (Assign, Atomic, Block, Expr, If, Let, Lit, Load, Loop, Node, Op, Program, Region, Select, Store,
                        Var, Wait)
from ..ir.walk import children, statements, subexprs
from ..ir.scalars import CANONICAL_NAN, ScalarError, decode, encode
from ..ir.types import DataType

__all__ = ["shrink_op_case", "shrink_program_inputs", "shrink_program"]


def _complexity(bits: int) -> tuple[int, int]:
    return (bin(bits).count("1"), bits)


def _simpler(t: DataType, bits: int) -> list[int]:
    """Candidate replacements for one operand, simplest first."""
    if t is DataType.BOOL:
        return [0]
    v = decode(t, bits)
    cands: list[object] = [0, 1]
    if t.is_int:
        assert isinstance(v, int)
        cands += [-1 if t.is_signed else t.mask, int(v / 2), v & 0xFF, v >> (t.bits // 2), v - 1 if v > 0 else v + 1]
        if bits:  # clear the lowest or the highest set bit
            cands += [("bits", bits & (bits - 1)), ("bits", bits & ~(1 << (bits.bit_length() - 1)))]
    else:
        assert isinstance(v, float)
        if math.isnan(v):
            return [CANONICAL_NAN[t]] if _complexity(CANONICAL_NAN[t]) < _complexity(bits) else []
        cands += [-1.0, 2.0, 0.5]
        if math.isfinite(v):
            cands += [float(math.trunc(v)), v / 2, float(round(v, 2))]
        mantissa_low = (1 << (23 if t is DataType.F32 else 52)) - 1
        cands.append(("bits", bits & ~(mantissa_low >> 4)))
        cands.append(("bits", bits & ~mantissa_low))
    out = []
    for c in cands:
        try:
            b = c[1] if isinstance(c, tuple) else encode(t, c)
        except (ScalarError, OverflowError, ValueError):
            continue
        if _complexity(b) < _complexity(bits) and b not in out:
            out.append(b)
    return out


def shrink_op_case(
    types: Sequence[DataType],
    case: list[int],
    still_fails: Callable[[list[list[int]]], list[bool]],
    rounds: int = 32,
) -> list[int]:
    """A simpler failing case: ``still_fails`` takes candidate cases (lists of operand bits) and
    says which of them fail; each round tries every one-operand simplification at once."""
    current = list(case)
    for _ in range(rounds):
        candidates = []
        for i, t in enumerate(types):
            for b in _simpler(t, current[i]):
                candidates.append(current[:i] + [b] + current[i + 1:])
        if not candidates:
            break
        verdicts = still_fails(candidates)
        failing = [c for c, bad in zip(candidates, verdicts) if bad]
        if not failing:
            break
        current = min(failing, key=lambda c: [_complexity(b) for b in c])
    return current


def shrink_program_inputs(
    program: Program,
    inputs: list[np.ndarray],
    still_fails: Callable[[list[np.ndarray]], bool],
    attempts: int = 48,
) -> list[np.ndarray]:
    """Smaller failing inputs: truncate the runtime-sized inputs, then zero runs of elements."""
    decls = program.inputs
    resizable = [i for i, d in enumerate(decls) if d.count == 0]
    current = [np.array(a) for a in inputs]
    budget = attempts

    def attempt(candidate: list[np.ndarray]) -> bool:
        nonlocal budget
        if budget <= 0:
            return False
        budget -= 1
        return still_fails(candidate)

    while resizable and budget > 0:  # halve every runtime-sized input together
        n = max(current[i].size for i in resizable)
        if n <= 1:
            break
        trial = [a[: n // 2] if i in resizable else a for i, a in enumerate(current)]
        if not attempt(trial):
            break
        current = trial
    for i, a in enumerate(current):  # zero runs of elements, halving the run length
        run = max(1, a.size // 2)
        while run >= 1 and budget > 0 and a.size:
            changed = False
            for start in range(0, a.size, run):
                if not a[start: start + run].any():
                    continue
                b = a.copy()
                b[start: start + run] = 0
                trial = current[:i] + [b] + current[i + 1:]
                if attempt(trial):
                    current, a, changed = trial, b, True
            if not changed:
                run //= 2
    return current


_ZEROS = tuple(Lit(t, 0) for t in (DataType.U32, DataType.I32, DataType.F32, DataType.U64, DataType.I64,
                                   DataType.F64, DataType.BOOL))
_EXPR_FIELDS = {Let: ("value",), Assign: ("value",), Store: ("value",), If: ("cond",), Loop: ("start", "end")}


def _with_child(e: Expr, k: int, new: Expr) -> Expr:
    kids = list(children(e))
    kids[k] = new
    if isinstance(e, Op):
        return replace(e, args=tuple(kids))
    if isinstance(e, Select):
        return Select(kids[0], kids[1], kids[2], e.lazy)
    if isinstance(e, Load):
        return replace(e, index=kids[0])
    if isinstance(e, Wait):
        return replace(e, index=kids[0], value=kids[1], bound=kids[2])
    assert isinstance(e, Atomic)
    return replace(e, index=kids[0], args=tuple(kids[1:]))


def _hides_an_atomic(e: Expr) -> bool:
    """``select(atomic != 0, c, c)``: an update whose old value never shows, because both arms are
    the same. Its arms change only together, and it is never replaced by its condition."""
    return isinstance(e, Select) and any(isinstance(x, Atomic) for x in subexprs(e.cond))


def _simpler_exprs(e: Expr) -> Iterator[Expr]:
    """``e`` with one part made simpler: the whole a zero or a sub-expression, or one part inside."""
    if not isinstance(e, Lit):
        yield from _ZEROS
    if _hides_an_atomic(e):
        assert isinstance(e, Select)
        yield e.if_true
        for alt in _simpler_exprs(e.cond):
            yield _with_child(e, 0, alt)
        return
    yield from children(e)
    for k, child in enumerate(children(e)):
        for alt in _simpler_exprs(child):
            yield _with_child(e, k, alt)


def _addresses(body: Sequence[Node]) -> frozenset[str]:
    """The variables a store's index reads, directly or through lets: the shrinker keeps them, so
    that a smaller program never has two invocations storing to one element (a race, whose
    winner is unspecified, is no counterexample)."""
    lets = {n.name: n.value for n in statements(body) if isinstance(n, (Let, Assign))}
    todo = [x.name for n in statements(body) if isinstance(n, Store) for x in subexprs(n.index) if isinstance(x, Var)]
    kept: set[str] = set()
    while todo:
        name = todo.pop()
        if name not in kept:
            kept.add(name)
            if name in lets:
                todo.extend(x.name for x in subexprs(lets[name]) if isinstance(x, Var))
    return frozenset(kept)


def _simpler_node(n: Node, kept: frozenset[str]) -> Iterator[Node]:
    if isinstance(n, If):
        yield Block(n.then)
        if n.otherwise:
            yield Block(n.otherwise)
        yield from (replace(n, then=b) for b in _simpler_bodies(n.then, kept))
        yield from (replace(n, otherwise=b) for b in _simpler_bodies(n.otherwise, kept))
    elif isinstance(n, (Loop, Block, Region)):
        yield from (replace(n, body=b) for b in _simpler_bodies(n.body, kept))
    if isinstance(n, (Let, Assign)) and n.name in kept:
        return
    node: Any = n  # every statement class is a dataclass
    for name in _EXPR_FIELDS.get(type(n), ()):
        yield from (replace(node, **{name: alt}) for alt in _simpler_exprs(getattr(n, name)))


def _simpler_bodies(body: tuple[Node, ...], kept: frozenset[str]) -> Iterator[tuple[Node, ...]]:
    for k in range(len(body)):  # drop one statement: the biggest steps first
        yield body[:k] + body[k + 1:]
    for k, n in enumerate(body):  # a block's statements in its place
        if isinstance(n, (Block, Region)):
            yield body[:k] + n.body + body[k + 1:]
    for k, n in enumerate(body):
        yield from (body[:k] + (alt,) + body[k + 1:] for alt in _simpler_node(n, kept))


def shrink_program(program: Program, registry: Any, still_fails: Callable[[Program], bool],
                   attempts: int = 300) -> Program:
    """A smaller valid program that still fails: one simplification at a time, the first that
    keeps failing taken, until none does or ``attempts`` runs were spent."""
    from ..ir.validation import validate

    current, budget, progress = program, attempts, True
    while progress and budget > 0:
        progress = False
        for body in _simpler_bodies(current.body, _addresses(current.body)):
            candidate = replace(current, body=body)
            if validate(candidate, registry):
                continue
            budget -= 1
            if still_fails(candidate):
                current, progress = candidate, True
                break
            if budget <= 0:
                break
    return current
