"""A lint over the test suite: assertions that never run or cannot fail are kept out (issue 24).

It reports
- an ``and``/``or`` with an operand that is a call returning None (``np.testing.assert_*``, any
  ``assert*`` function, a helper of the tests that returns no value): ``f() and g()`` never runs
  ``g``, and ``assert f() or x`` checks only ``x``;
- an ``and``/``or`` as a statement: its value is dropped;
- an ``or`` in an assertion with an operand that is always true (a truthy constant), implied by
  another operand (``x[-1] == v or v in x``), or only a loop variable (``... or _``: the check
  is skipped on some iterations); an assertion of a non-empty tuple or a truthy constant;
- a test function that asserts nothing: no ``assert``, no ``pytest.raises``/``warns``/``fail``, no
  call of an ``assert*`` function or of a helper of the tests that asserts (unless ``RAISING_ONLY``
  names it with what its raising would show);
- a random generator seeded with ``hash(...)``: a string's hash changes per process, so a failure
  cannot be replayed.
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

TESTS = Path(__file__).resolve().parent
_CHECKING = {"raises", "warns", "fail", "deprecated_call"}  # pytest's checks, by their last name
_SEEDED = {"default_rng", "seed", "RandomState", "Random", "SeedSequence"}  # what takes a seed
# tests that assert nothing on purpose: they fail by raising (path::name -> what a raise shows)
RAISING_ONLY = {
    "tests/test_hostile_limits.py::test_the_parser_spends_at_most_frames_per_level_times_the_limit":
        "RecursionError: the parser needs more frames per nesting level than the limit allows for",
}


def _last_name(func: ast.expr) -> str:
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _defs(trees: list[ast.Module]) -> list[ast.FunctionDef]:
    return [n for t in trees for n in ast.walk(t) if isinstance(n, ast.FunctionDef)]


def _asserting(trees: list[ast.Module]) -> set[str]:
    """Names of the helpers that assert (directly or through another such helper)."""
    found: set[str] = set()
    while True:
        more = {d.name for d in _defs(trees) if d.name not in found and _asserts(d, found)}
        if not more:
            return found
        found |= more


def _asserts(fn: ast.FunctionDef, helpers: set[str]) -> bool:
    for n in ast.walk(fn):
        if isinstance(n, ast.Assert):
            return True
        if isinstance(n, ast.Call):
            name = _last_name(n.func)
            if "assert" in name.lower() or name in _CHECKING or name in helpers:
                return True
    return False


def _returning_none(trees: list[ast.Module]) -> set[str]:
    """Names whose every definition in the tests returns no value (and yields nothing)."""
    verdicts: dict[str, bool] = {}
    for d in _defs(trees):
        valued = any(isinstance(n, (ast.Yield, ast.YieldFrom)) or (isinstance(n, ast.Return) and n.value is not None)
                     for n in ast.walk(d))
        verdicts[d.name] = verdicts.get(d.name, True) and not valued
    return {name for name, none in verdicts.items() if none}


def _none_call(node: ast.expr, none: set[str]) -> bool:
    if not isinstance(node, ast.Call):
        return False
    name = _last_name(node.func)
    return name.startswith("assert") or name in none


def _truthy_constant(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and bool(node.value)


def _implied(a: ast.expr, b: ast.expr) -> bool:
    """``x[...] == v`` (a) implies ``v in x`` (b)."""
    if not (isinstance(a, ast.Compare) and isinstance(b, ast.Compare) and len(a.ops) == len(b.ops) == 1):
        return False
    if not (isinstance(a.ops[0], ast.Eq) and isinstance(b.ops[0], ast.In)):
        return False
    sides = [(a.left, a.comparators[0]), (a.comparators[0], a.left)]
    return any(isinstance(item, ast.Subscript) and ast.dump(item.value) == ast.dump(b.comparators[0])
               and ast.dump(value) == ast.dump(b.left) for item, value in sides)


def _only_loop_variable(node: ast.expr, loop_vars: set[str]) -> bool:
    if isinstance(node, ast.Name):
        return node.id in loop_vars
    return (isinstance(node, ast.Compare) and isinstance(node.left, ast.Name) and node.left.id in loop_vars
            and all(isinstance(c, ast.Constant) for c in node.comparators))


def _or_problems(test: ast.expr, loop_vars: set[str]) -> list[str]:
    out = []
    for b in ast.walk(test):
        if not (isinstance(b, ast.BoolOp) and isinstance(b.op, ast.Or)):
            continue
        if any(_truthy_constant(v) for v in b.values):
            out.append("an `or` with an operand that is always true")
        if any(_implied(x, y) for x in b.values for y in b.values if x is not y):
            out.append("an `or` whose one operand implies another (it checks only the weaker one)")
        if any(_only_loop_variable(v, loop_vars) for v in b.values):
            out.append("an `or` with a loop variable as an operand (the check is skipped on some iterations)")
    return out


def _loop_variables(tree: ast.Module) -> dict[int, set[str]]:
    """For each node inside a for loop (by id), the names its enclosing loops bind."""
    inside: dict[int, set[str]] = {}

    def visit(node: ast.AST, bound: frozenset[str]) -> None:
        if isinstance(node, (ast.For, ast.AsyncFor)):
            bound = bound | {n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)}
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            bound = frozenset()
        inside[id(node)] = set(bound)
        for child in ast.iter_child_nodes(node):
            visit(child, bound)

    visit(tree, frozenset())
    return inside


def problems(trees: dict[str, ast.Module]) -> list[str]:
    """Every problem in the parsed test modules (path -> tree), as ``path:line: what``."""
    helpers, none = _asserting(list(trees.values())), _returning_none(list(trees.values()))
    out = []
    for path, tree in trees.items():
        loops = _loop_variables(tree)
        for n in ast.walk(tree):
            where = f"{path}:{getattr(n, 'lineno', '?')}"
            if isinstance(n, ast.Expr) and isinstance(n.value, ast.BoolOp):
                out.append(f"{where}: an `and`/`or` as a statement (its value is dropped)")
            if isinstance(n, ast.BoolOp) and any(_none_call(v, none) for v in n.values):
                out.append(f"{where}: an `and`/`or` of a call that returns None (what follows it never runs)")
            if isinstance(n, ast.Assert):
                if (isinstance(n.test, ast.Tuple) and n.test.elts) or _truthy_constant(n.test):
                    out.append(f"{where}: an assertion that is always true")
                out += [f"{where}: {p}" for p in _or_problems(n.test, loops.get(id(n), set()))]
            if isinstance(n, ast.FunctionDef) and n.name.startswith("test_") and not _asserts(n, helpers) \
                    and f"{path}::{n.name}" not in RAISING_ONLY:
                out.append(f"{where}: {n.name} asserts nothing")
            if isinstance(n, ast.Call) and _last_name(n.func) in _SEEDED and any(
                    isinstance(c, ast.Call) and _last_name(c.func) == "hash" for a in n.args for c in ast.walk(a)):
                out.append(f"{where}: a generator seeded with hash(), which changes per process")
    return out


def _suite() -> dict[str, ast.Module]:
    files = [p for p in sorted(TESTS.rglob("*.py")) if "fixtures" not in p.relative_to(TESTS).parts]
    return {str(p.relative_to(TESTS.parent)): ast.parse(p.read_text(), str(p)) for p in files}


def test_the_suite_has_no_assertion_that_never_runs_or_cannot_fail():
    found = problems(_suite())
    assert not found, "\n".join(found)


def test_every_test_allowed_to_assert_nothing_still_exists_and_asserts_nothing():
    suite = _suite()
    helpers = _asserting(list(suite.values()))
    for key in RAISING_ONLY:
        path, name = key.split("::")
        (fn,) = [n for n in ast.walk(suite[path]) if isinstance(n, ast.FunctionDef) and n.name == name]
        assert not _asserts(fn, helpers), f"{key} asserts now: remove it from RAISING_ONLY"


BAD = '''
import numpy as np

def helper(x):
    assert x

def test_and_of_none():
    np.testing.assert_array_equal(a, b) and np.testing.assert_array_equal(c, d)

def test_or_always_true(names):
    assert names[-1] == "reference" or "reference" in names
    assert names or "no names"
    assert (names, "message")

def test_loop_skips(mods):
    for _ in range(2):
        assert "x" not in mods or _
    for i in range(2):
        assert "y" in mods or i == 0

def test_helper_in_and():
    assert helper(1) or True

def test_nothing():
    x = 1

def test_unstable_seed(op_id):
    assert np.random.default_rng(hash(op_id) % 2**32)
'''


def test_the_lint_catches_each_pattern():
    found = problems({"bad.py": ast.parse(textwrap.dedent(BAD))})
    for line, what in [(8, "returns None"), (8, "as a statement"), (11, "implies another"), (12, "always true"),
                       (13, "always true"), (17, "loop variable"), (19, "loop variable"), (22, "returns None"),
                       (22, "always true"), (24, "test_nothing asserts nothing"), (28, "seeded with hash()")]:
        assert any(f.startswith(f"bad.py:{line}:") and what in f for f in found), (line, what, found)
    assert not any("test_helper_in_and asserts nothing" in f for f in found)  # it calls an asserting helper
    assert len(found) == 11, found
