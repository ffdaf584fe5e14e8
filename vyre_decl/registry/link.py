"""Joining checked op files into one registry: dialect versions, duplicate ids, cross-op checks.

Of two files of one dialect the higher semantic version wins (a note names the loser); an op id
defined by two files is an error naming both. Then every compose definition is type-checked
against the whole candidate registry (per binding, step by step), every ``distributive(over)``
law must name a binary op of the same types, and compose definitions may not call each other in
a cycle. A file with such a problem is rejected whole, which may break files that use it, so the
checks repeat until nothing changes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final, Mapping, Sequence

from ..ir.diagnostics import Diagnostic
from ..ir.nodes import Expr, Op
from ..ir.signature import Binding
from ..ir.types import DataType
from ..ir.signature import OpSignature, SignatureError
from ..ir.validation import ExprFault, infer_type
from ..ir.walk import children, subexprs
from .files import FileResult, semver_key
from .rewrites import parse_rewrite
from .model import DialectInfo, OpDef
from .opsig import location
from .registry import Registry

__all__ = ["link", "MAX_INLINE_NODES", "MAX_INLINE_DEPTH"]

MAX_INLINE_NODES: Final = 50_000
# levels of composition inlined into one call (the standard library needs 28 for sin); with a
# program's 128 levels it keeps the emitter's and the reference's recursion within the stack
MAX_INLINE_DEPTH: Final = 40
Node = tuple[str, Binding]


def link(results: Sequence[FileResult], diags: list[Diagnostic]) -> Registry:
    """The registry of the accepted files among ``results`` (diagnostics are appended to ``diags``)."""
    live = [r for r in results if r.ok and r.dialect is not None]
    by_dialect: dict[str, FileResult] = {}
    for r in live:
        assert r.dialect is not None
        other = by_dialect.get(r.dialect.name)
        if other is None:
            by_dialect[r.dialect.name] = r
            continue
        assert other.dialect is not None
        new_key, old_key = semver_key(r.dialect.version), semver_key(other.dialect.version)
        if new_key == old_key:
            diags.append(Diagnostic("R005", f"dialect {r.dialect.name} {r.dialect.version} is also defined by {other.path}",
                                    location(r.path, None, "dialect.version"),
                                    "remove one file or give them different versions"))
            continue
        win, lose = (r, other) if new_key > old_key else (other, r)  # type: ignore[operator]
        assert win.dialect is not None and lose.dialect is not None
        by_dialect[r.dialect.name] = win
        diags.append(Diagnostic("R018", f"dialect {win.dialect.name} {lose.dialect.version} is shadowed by version "
                                f"{win.dialect.version} from {win.path}", location(lose.path),
                                "remove the older file if it is no longer needed", "note"))

    owner: dict[str, FileResult] = {}
    kept: list[FileResult] = []
    for r in sorted(by_dialect.values(), key=results.index):
        clash = next((i for i in r.ops if i in owner), None)
        if clash is not None:
            diags.append(Diagnostic("R005", f"op {clash!r} is already defined in {owner[clash].path}",
                                    location(r.path, clash, "id"), "rename one of the two ops"))
            continue
        owner.update(dict.fromkeys(r.ops, r))
        kept.append(r)

    while True:
        ops = {i: op for r in kept for i, op in r.ops.items()}
        problems = _cross_checks(ops)
        bad = [r for r in kept if any(i in problems for i in r.ops)]
        if not bad:
            break
        for r in bad:
            for i in r.ops:
                diags.extend(problems.get(i, []))
            diags.append(Diagnostic("R020", "the file is rejected: none of its ops is registered", location(r.path),
                                    "fix the errors reported for it"))
            kept.remove(r)
    rejected = {i: r.path for r in results if r not in kept for i in r.declared}
    dialects: dict[str, DialectInfo] = {r.dialect.name: r.dialect for r in kept if r.dialect is not None}
    sources: dict[Path, bytes] = {r.path: r.digest for r in kept}
    return Registry(ops, dialects, tuple(diags), sources, rejected)


class _Table:
    """The candidate registry as validation's OpTable."""

    def __init__(self, ops: Mapping[str, OpDef]) -> None:
        self.ops = ops

    def signature(self, op_id: str) -> OpSignature | None:
        op = self.ops.get(op_id)
        return op.signature if op else None

    def unknown_op_hint(self, op_id: str) -> str:
        return "define that op (in this or another loaded op file) or fix the id"


def _over_vars(fix: str, binding: Mapping[str, Any]) -> str:
    """A validator's "cast it with `as f32`" said of a composition over type variables: the cast
    (and a constant) is written with the variable the type is bound to, for every binding."""
    for var, dtype in binding.items():
        if f"`as {dtype}`" in fix:
            return (fix.replace(f"`as {dtype}`", f"`as {var}`") + f" (the composition is over {var}: a constant is "
                    f"`3.0 as {var}` or `{var}.one`, not a literal of one type such as 3.0{dtype})")
    return fix


def _cross_checks(ops: Mapping[str, OpDef]) -> dict[str, list[Diagnostic]]:
    problems: dict[str, list[Diagnostic]] = {}
    table = _Table(ops)

    def fail(op: OpDef, code: str, fld: str, message: str, fix: str) -> None:
        problems.setdefault(op.id, []).append(Diagnostic(code, message, location(op.source, op.id, fld), fix))

    graph: dict[Node, list[Node]] = {}  # (op, binding) -> the (op, binding) of each call its compose makes
    sites: dict[Node, dict[int, Node]] = {}  # (op, binding) -> id of each of its Op nodes -> what it calls
    for op in ops.values():
        for binding, comp in op.compose.items():
            m = op.binding_map(binding)
            where = ", ".join(f"{v}={t}" for v, t in m.items()) or "the op"
            variables = {p.name: op.signature.resolve(p.type, m) for p in op.signature.inputs}
            variables.update({a.name: a.dtype for a in op.signature.attrs})
            calls: list[tuple[Op, Node]] = []
            try:
                for name, value in comp.steps:
                    if name in variables:
                        raise ExprFault("R010", f"step {name!r} reuses a name already bound", "give each step a new name",
                                        f"let {name}")
                    variables[name] = infer_type(value, f"let {name}", variables, {}, table)
                    calls += _calls(value, variables, table)
                got = infer_type(comp.result, "result", variables, {}, table)
                calls += _calls(comp.result, variables, table)
            except ExprFault as fault:
                fail(op, "R010", "compose", f"for {where}: {fault.message} (at {fault.path})", _over_vars(fault.fix, m))
                break
            want = op.output_type(binding)
            if got is not want:
                fail(op, "R010", "compose", f"for {where}: compose yields {got} where the result is {want}",
                     f"make the expression produce {want}")
                break
            graph[(op.id, binding)] = [n for _, n in calls]
            sites[(op.id, binding)] = {id(x): n for x, n in calls}
        for law in op.laws:
            if law.over is not None:
                _check_over(op, law.over, ops, fail)
        for i, law in enumerate(op.rewrites):
            _check_rewrite(op, i, law.text, ops, fail)
    if not problems and not _check_cycles(graph, ops, fail):
        _check_inline_size(graph, sites, ops, fail)
    return problems


def _check_rewrite(op: OpDef, i: int, text: str, ops: Mapping[str, OpDef], fail: Any) -> None:
    """A rewrite law's result has the op's result type for every binding it applies to: the op it
    calls exists and takes the operands' types (formulas: the result type) (D022)."""
    operands = tuple(p.name for p in op.signature.inputs)
    rule, _ = parse_rewrite(text, operands, tuple(op.signature.type_var_names()))
    for binding in op.bindings():
        if not op.rewrites[i].applies(op.binding_map(binding)):
            continue
        out = op.output_type(binding)
        types = dict(zip(operands, op.input_types(binding)))
        args = [types[a] if isinstance(a, str) else out for a in rule.args]
        if _rewrite_type(rule.op, args, ops) is not out:
            fail(op, "D022", f"rewrites[{i}]", f"rewrite law {text!r}: for {out}, {rule.op or 'its result'} does not "
                 f"exist or does not give a {out} from {', '.join(t.value for t in args)}",
                 "call an op that exists and takes these types, or restrict the law with @")
            return


def _rewrite_type(callee: str | None, args: list[DataType], ops: Mapping[str, OpDef]) -> DataType | None:
    """The type of a rewrite's result: its one argument's, or what ``callee`` gives for ``args``
    (None where it does not exist or does not take them)."""
    if callee is None:
        return args[0]
    target = ops.get(callee)
    if target is None:
        return None
    try:
        return target.signature.bind(args, {})[1]
    except SignatureError:
        return None


def _calls(e: Expr, variables: Mapping[str, DataType], table: _Table) -> list[tuple[Op, Node]]:
    """Each op call in ``e`` (which type-checks) with the (op, binding) it calls."""
    out = []
    for x in subexprs(e):
        if isinstance(x, Op):
            sig = table.signature(x.op)
            types = [infer_type(a, "", variables, {}, table) for a in x.args]
            if sig is not None:
                out.append((x, (x.op, sig.bind(types, dict(x.types))[0])))
    return out


def _check_over(op: OpDef, over: str, ops: Mapping[str, OpDef], fail: Any) -> None:
    other = ops.get(over)
    if other is None or len(other.signature.inputs) != 2 or other.is_atomic:
        fail(op, "R014", "laws", f"distributive over {over!r}: no such binary (non-atomic) op",
             "name a registered binary op")
        return
    if any(a.default is None for a in other.signature.attrs):
        fail(op, "R014", "laws", f"distributive over {over}: it has an attribute without a default, so the law "
             "has no single meaning", "name an op whose attributes all have defaults")
        return
    for binding in op.bindings():
        law_applies = any(law.over == over and law.applies(op.binding_map(binding)) for law in op.laws)
        if not law_applies:
            continue
        t = op.output_type(binding)
        try:
            ok = other.signature.bind([t, t])[1] is t
        except SignatureError:
            ok = False
        if not ok:
            fail(op, "R014", "laws", f"distributive over {over}: it does not map two {t} values to a {t}",
                 "name an op of the same type, or restrict the law with @types")
            return


def _check_cycles(graph: Mapping[Node, list[Node]], ops: Mapping[str, OpDef], fail: Any) -> bool:
    """Report compose definitions that call themselves through other ops, binding by binding (an f32
    definition may call the f64 one); iterative DFS, so a long chain cannot exhaust the stack.
    True if there was a cycle."""
    found = False
    state: dict[Node, int] = {}  # 1 = on the current path, 2 = done
    for root in graph:
        if root in state:
            continue
        path: list[Node] = [root]
        todo: list[list[Node]] = [sorted(set(graph[root]), key=_key)]
        state[root] = 1
        while todo:
            if not todo[-1]:
                state[path.pop()] = 2
                todo.pop()
                continue
            nxt = todo[-1].pop(0)
            if state.get(nxt) == 1:
                found = True
                cycle = " -> ".join(_show(n) for n in path[path.index(nxt):] + [nxt])
                fail(ops[path[-1][0]], "R023", "compose", f"compose calls itself through {cycle}",
                     "define one of the ops without calling the others")
            elif nxt not in state and nxt in graph:
                state[nxt] = 1
                path.append(nxt)
                todo.append(sorted(set(graph[nxt]), key=_key))
    return found


def _check_inline_size(graph: Mapping[Node, list[Node]], sites: Mapping[Node, Mapping[int, Node]],
                       ops: Mapping[str, OpDef], fail: Any) -> None:
    """Refuse compositions that grow past MAX_INLINE_NODES nodes, or nest past MAX_INLINE_DEPTH
    levels, when the emitter inlines the composites they call (each call is inlined anew, so a
    chain of ops calling the previous one twice doubles per link; a chain of single calls nests one
    definition inside the next, and the emitter and the reference recurse through all of them).
    Callees come first; a binding with a PTX template counts as one node and one level."""
    size: dict[Node, int] = {}
    depth: dict[Node, int] = {}
    pending = [n for n in graph if n[1] not in ops[n[0]].templates]
    while pending:
        progress = []
        for node in pending:
            if all(c in size or c not in graph or c[1] in ops[c[0]].templates for c in graph[node]):
                op = ops[node[0]]
                comp = op.compose[node[1]]
                exprs: list[Expr] = [v for _, v in comp.steps] + [comp.result]
                total = sum(1 for e in exprs for _ in subexprs(e))
                total += sum(size[c] - 1 for c in graph[node] if c in size)
                size[node] = total
                below = {site: depth[c] for site, c in sites[node].items() if c in depth}
                depth[node] = max(_inlined_height(e, below) for e in exprs)
                progress.append(node)
                if total > MAX_INLINE_NODES:
                    fail(op, "R033", "compose", f"compose for {_show(node)} grows to {total} expression nodes when "
                         f"the composites it calls are inlined (at most {MAX_INLINE_NODES})",
                         "give a called composite a PTX template, or name repeated values with let steps")
                elif depth[node] > MAX_INLINE_DEPTH:
                    fail(op, "R033", "compose", f"compose for {_show(node)} nests {depth[node]} levels deep when the "
                         f"composites it calls are inlined (at most {MAX_INLINE_DEPTH})",
                         "give a called composite a PTX template, or call fewer composites inside one another")
        if not progress:
            return  # unreachable without a cycle, which is reported before this check runs
        done = set(progress)
        pending = [n for n in pending if n not in done]


def _inlined_height(e: Expr, below: Mapping[int, int]) -> int:
    """The height of ``e``'s tree (a leaf is 1) once the composite calls in it are inlined: a call
    whose node id is in ``below`` stands on a definition that many levels deep. No recursion."""
    heights: dict[int, int] = {}
    stack: list[tuple[Expr, bool]] = [(e, False)]
    while stack:
        x, ready = stack.pop()
        if ready:
            heights[id(x)] = 1 + max([heights[id(c)] for c in children(x)] + [below.get(id(x), 0)])
        else:
            stack.append((x, True))
            stack.extend((c, False) for c in children(x))
    return heights[id(e)]


def _key(n: Node) -> tuple[str, str]:
    return n[0], ",".join(t.value for t in n[1])


def _show(n: Node) -> str:
    return n[0] + (f"<{','.join(t.value for t in n[1])}>" if n[1] else "")
