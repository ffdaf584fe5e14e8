"""Parsing an op's ``compose`` definition: named steps, reassignment, bounded repetition, a result.

The grammar, for one binding of the op's type variables (a type variable stands for its type)::

    let NAME = EXPR                       a new value
    NAME = EXPR                           a new value under an existing step's name
    repeat N { STEPS }                    the steps N times (N a plain integer)
    repeat VAR in A .. B { STEPS }        the steps for VAR = A .. B-1 (a u32 constant in them)
    EXPR                                  the result (last)

Steps are separated by newlines or ``;``. A ``let`` inside a repetition lives for that round.
Everything unrolls here, so the definition becomes straight-line steps with unique names
(``x``, then ``x.1``, ``x.2``... for its later values): both backends evaluate the same list.
Unrolling stops at ``MAX_UNROLLED_STEPS`` steps and at as many rounds of ``repeat`` (an empty
round makes no step but still costs time): either limit raises ``UnrollLimitError``. A definition
is read once for each binding, so the op loader also gives every file a ``ComposeBudget``: the
tokens, steps and rounds of all its definitions, over all their bindings (``ComposeBudgetError``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Mapping

from .lexer import ParseError, fail
from .nodes import Expr, Lit, Var
from .exprparse import ExprParser
from .types import DataType
from .walk import substitute

__all__ = ["parse_compose", "ComposeSteps", "MAX_UNROLLED_STEPS", "MAX_UNROLLED_ROUNDS", "UnrollLimitError",
           "ComposeBudget", "ComposeBudgetError"]

ComposeSteps = tuple[tuple[tuple[str, Expr], ...], Expr]
"""A parsed compose definition: the named steps (name, value) in order, then the result."""

MAX_UNROLLED_STEPS: Final = 8192
MAX_UNROLLED_ROUNDS: Final = MAX_UNROLLED_STEPS  # rounds of every repeat, nested ones counted each time


class UnrollLimitError(ParseError):
    """P008: a compose definition that unrolls past ``MAX_UNROLLED_STEPS`` steps or
    ``MAX_UNROLLED_ROUNDS`` rounds (the op loader reports it as R036)."""


class ComposeBudgetError(ParseError):
    """P008: the definitions sharing a ``ComposeBudget`` take more than it (the op loader: R037)."""


class ComposeBudget:
    """Work shared by several ``parse_compose`` calls (those of one op file): each token read, step
    unrolled and round run costs one. The standard library's largest file spends about 15,000."""

    LIMIT: Final = 1 << 18

    def __init__(self) -> None:
        self.left = self.LIMIT

    def spend(self, parser: ExprParser, units: int, pos: int) -> None:
        self.left -= units
        if self.left < 0:
            fail(parser.src, parser.filename, pos, "P008", f"the compose definitions of this file, read once for "
                 f"each binding, take more than {self.LIMIT:,} tokens, steps and rounds in all",
                 "give the ops with many type combinations PTX templates, or split the file", ComposeBudgetError)


@dataclass
class _Let:
    name: str
    value: Expr
    pos: int
    new: bool  # let (True) or reassignment (False)


@dataclass
class _Repeat:
    var: str | None
    start: int
    end: int
    body: list[object]
    pos: int


class _ComposeParser(ExprParser):
    def steps(self, in_block: bool) -> list[object]:
        out: list[object] = []
        while True:
            tok = kind, text, pos = self.peek()
            if kind == "eof" or (in_block and text == "}"):
                return out
            if kind == "name" and text == "let":
                self.next()
                name = self.ident("a step name")
                self.expect("=")
                out.append(_Let(name, self.expr(), pos, True))
            elif kind == "name" and text == "repeat":
                out.append(self.repeat())
            elif kind == "name" and self.toks[self.i + 1][:2] == ("punct", "="):
                name = self.ident("a step name")
                self.expect("=")
                out.append(_Let(name, self.expr(), pos, False))
            elif in_block:
                self.error(tok, "P002", f"expected a step in the repeat block, found {self.describe(tok)}",
                           "a repeat block holds let steps, reassignments and repeats")
            else:
                return out  # the result expression follows
            end = self.peek(skip_nl=False)
            if end[0] not in ("nl", "eof") and end[1] != "}":
                self.error(end, "P002", f"expected the end of the step, found {self.describe(end)}",
                           "put each step on its own line or end it with ';'")

    def count(self) -> int:
        tok = kind, text, _ = self.next()
        if kind != "int" or not text.isdigit() or len(text) > 6:
            self.error(tok, "P002", f"expected a repeat count (a plain integer), found {self.describe(tok)}",
                       "write repeat 10 { ... } or repeat i in 0 .. 10 { ... }")
        return int(text)

    def repeat(self) -> _Repeat:
        tok = self.next()
        var = None
        if self.peek()[0] == "name" and self.toks[self.i + 1][1] == "in":
            var = self.ident("a repeat variable")
            self.expect("in")
            start = self.count()
            self.expect("..", "write repeat i in A .. B { ... }")
            end = self.count()
        else:
            start, end = 0, self.count()
        self.expect("{")
        self.enter()
        body = self.steps(in_block=True)
        self.depth -= 1
        self.expect("}", "close the repeat block with '}'")
        return _Repeat(var, start, end, body, tok[2])


class _Unroller:
    """Turns parsed steps into straight-line steps with unique names."""

    def __init__(self, parser: _ComposeParser, operands: frozenset[str], budget: ComposeBudget) -> None:
        self.parser, self.operands, self.budget = parser, operands, budget
        self.steps: list[tuple[str, Expr]] = []
        self.versions: dict[str, int] = {}
        self.rounds = 0

    def fail(self, pos: int, message: str, fix: str) -> None:
        fail(self.parser.src, self.parser.filename, pos, "P008", message, fix)

    def too_far(self, pos: int, what: str) -> None:
        fail(self.parser.src, self.parser.filename, pos, "P008", f"compose unrolls to more than {what}",
             "repeat fewer times, or give the op a PTX template", UnrollLimitError)

    def run(self, items: list[object], env: dict[str, Expr], fresh: list[str]) -> None:
        """Unroll ``items`` into ``env`` (in place); the names they newly bind are added to ``fresh``."""
        for item in items:
            if isinstance(item, _Repeat):
                self.repeat(item, env)
                continue
            assert isinstance(item, _Let)
            if item.name in self.operands:
                self.fail(item.pos, f"{item.name!r} is an operand or attribute of the op", "name the step differently")
            if item.new and item.name in env:
                self.fail(item.pos, f"let {item.name}: the name is already bound", f"write {item.name} = ... to "
                          "give it a new value, or choose another name")
            if not item.new and item.name not in env:
                self.fail(item.pos, f"{item.name} = ...: no step of that name exists here", f"write let {item.name} = ...")
            version = self.versions.get(item.name, -1) + 1
            self.versions[item.name] = version
            unique = item.name if version == 0 else f"{item.name}.{version}"
            self.steps.append((unique, substitute(item.value, env)))
            if len(self.steps) > MAX_UNROLLED_STEPS:
                self.too_far(item.pos, f"{MAX_UNROLLED_STEPS:,} steps")
            self.budget.spend(self.parser, 1, item.pos)
            if item.new:
                fresh.append(item.name)
            env[item.name] = Var(unique)

    def repeat(self, item: _Repeat, env: dict[str, Expr]) -> None:
        """Each round binds the round constant, runs the body in ``env`` (so reassignments carry
        over to the next round) and then unbinds what the round bound: a round costs its own
        steps, never the size of ``env``."""
        outer = env.get(item.var) if item.var is not None else None
        for i in range(item.start, item.end):
            self.rounds += 1
            if self.rounds > MAX_UNROLLED_ROUNDS:
                self.too_far(item.pos, f"{MAX_UNROLLED_ROUNDS:,} rounds of repeat")
            self.budget.spend(self.parser, 1, item.pos)
            if item.var is not None:
                env[item.var] = Lit(DataType.U32, i & 0xFFFFFFFF)
            fresh: list[str] = []
            self.run(item.body, env, fresh)
            for name in fresh:
                del env[name]
        if item.var is not None:  # the round constant is gone after the repeat
            if outer is None:
                env.pop(item.var, None)
            else:
                env[item.var] = outer


def parse_compose(src: str, type_vars: Mapping[str, DataType], filename: str = "<compose>",
                  operands: frozenset[str] = frozenset(), budget: ComposeBudget | None = None) -> ComposeSteps:
    """Parse and unroll an op's compose definition for one binding of its type variables.
    ``operands`` are the op's operand and attribute names, which steps may not rebind; ``budget``
    (default: one of its own) is shared with the other definitions read for the same file."""
    budget = budget or ComposeBudget()
    parser = _ComposeParser(src, filename, type_vars)
    budget.spend(parser, len(parser.toks), 0)
    items = parser.steps(in_block=False)
    if parser.peek()[0] == "eof":
        parser.error(parser.peek(), "P002", "compose ends without its result expression",
                     "write the result after the steps")
    result = parser.expr()
    tok = parser.peek()
    if tok[0] != "eof":
        parser.error(tok, "P002", f"unexpected {parser.describe(tok)} after the result expression",
                     "the result expression comes last; name earlier values with let")
    unroller = _Unroller(parser, operands, budget)
    env: dict[str, Expr] = {}
    unroller.run(items, env, [])
    return tuple(unroller.steps), substitute(result, env)
