"""Private arrays and unrolled loops: the rules under which every index of a private array is a
constant once the ``unroll`` loops are unrolled, so that a GPU compiler can keep the array in
registers (docs/semantics.md, "Private arrays and unrolled loops").

Codes (validation reports them; ``validation.py`` checks V033 where it types atomics):
V029 a bad private array declaration     V030 a private array's index that is not a constant
V031 an unroll loop whose bounds are not literals
V032 unrolling that copies too much      V033 an atomic on a private array

The constant check is structural dataflow, never arithmetic: a *constant* is an expression built
only of literals, counters of ``unroll`` loops, variables bound by a ``let`` of a constant and never
assigned, the lengths of private and workgroup arrays (fixed counts), and selects and ops (not
collective ones) of those. A load, an id, the length of a buffer sized at dispatch, an atomic, a
collective op or any other variable makes an expression non-constant.
"""

from __future__ import annotations

from typing import Callable, Final, Iterator

from .diagnostics import Diagnostic
from .nodes import (
    AXES,
    Access,
    Assign,
    Atomic,
    Block,
    BufferDecl,
    BufLen,
    Copy,
    Expr,
    Id,
    If,
    Let,
    Lit,
    Load,
    Loop,
    Node,
    Op,
    Program,
    Region,
    Select,
    Store,
    Var,
    Wait,
)
from .walk import statements

__all__ = ["MAX_PRIVATE_BYTES", "MAX_UNROLL_COPIES", "MAX_UNROLLED_STATEMENTS", "private_decl_problem",
           "private_bytes_problem", "unroll_problems"]

# the private arrays of one invocation together: a GPU reserves this much local memory for every
# thread it can hold at once (on an H100, 2048 x 132), and a register file holds 1 KiB per thread
MAX_PRIVATE_BYTES: Final = 4096
MAX_UNROLL_COPIES: Final = 256  # copies of one body: the product of the trip counts of nested unroll loops
MAX_UNROLLED_STATEMENTS: Final = 65536  # statements of the whole program once every unroll loop is unrolled

_NOT_CONSTANT_FIX: Final = (
    "index a private array with literals, counters of unroll loops (loop k in 0u32 .. 8u32 unroll { ... }), "
    "lets of those that are never assigned, and ops of them; to reach an element by a run-time index, "
    "unroll over the elements and select: loop k in 0u32 .. 8u32 unroll { v = select(k == i, acc[k], v) }")


def private_decl_problem(b: BufferDecl) -> tuple[str, str] | None:
    """(message, fix) for a private array declared wrongly, else None."""
    if type(b.count) is not int or b.count < 1:
        return f"private array {b.name!r} needs a fixed element count of at least 1, not {b.count!r}", \
            "declare a count, e.g. private f32[8]"
    if b.binding is not None:
        return f"private array {b.name!r} takes no binding (it lives in each invocation)", "remove the @binding"
    if b.is_output or b.count_like is not None:
        return f"private array {b.name!r} cannot be an output or sized like another buffer", \
            "remove output / len(...): copy its elements into an output buffer to return them"
    if b.count * b.dtype.size > MAX_PRIVATE_BYTES:
        return f"private array {b.name!r} needs {b.count * b.dtype.size} bytes, more than {MAX_PRIVATE_BYTES}", \
            "keep per-invocation arrays small (registers), and larger scratch in a workgroup buffer"
    return None


def private_bytes_problem(buffers: tuple[BufferDecl, ...]) -> str | None:
    """The message when the private arrays of one invocation need more than MAX_PRIVATE_BYTES in all."""
    sizes = [b.count * b.dtype.size for b in buffers if b.access is Access.PRIVATE and type(b.count) is int
             and b.count > 0]
    total = sum(s for s in sizes if s <= MAX_PRIVATE_BYTES)  # one array over the limit is its own V029
    if total > MAX_PRIVATE_BYTES:
        return f"the private arrays need {total} bytes per invocation, more than {MAX_PRIVATE_BYTES}"
    return None


def _with_paths(e: Expr, path: str) -> Iterator[tuple[Expr, str]]:
    """``e`` and its sub-expressions with their node paths, pre-order."""
    stack = [(e, path)]
    while stack:
        x, p = stack.pop()
        yield x, p
        if isinstance(x, Op):
            kids = [(a, f"{p}.args[{i}]") for i, a in enumerate(x.args)]
        elif isinstance(x, Select):
            kids = [(x.cond, f"{p}.cond"), (x.if_true, f"{p}.if_true"), (x.if_false, f"{p}.if_false")]
        elif isinstance(x, Load):
            kids = [(x.index, f"{p}.index")]
        elif isinstance(x, Atomic):
            kids = [(x.index, f"{p}.index")] + [(a, f"{p}.args[{i}]") for i, a in enumerate(x.args)]
        elif isinstance(x, Wait):
            kids = [(x.index, f"{p}.index"), (x.value, f"{p}.value"), (x.bound, f"{p}.bound")]
        else:
            kids = []
        stack.extend(reversed(kids))


_FIELDS: Final = {Let: ("value",), Assign: ("value",), Store: ("index", "value"), If: ("cond",), Loop: ("start", "end"),
                   Copy: ("dst_index", "src_index")}


class _Unrolling:
    """One walk over a program: which variables are constants where, the private arrays' indices,
    and how many copies the unroll loops make."""

    def __init__(self, program: Program, collective: Callable[[str], bool] | None) -> None:
        self.private = {b.name for b in program.buffers if b.access is Access.PRIVATE}
        self.fixed = {b.name for b in program.buffers if b.access.is_scratch}  # len() is their count
        self.assigned = {n.name for n in statements(program.body) if isinstance(n, Assign)}
        self.collective = collective
        self.diags: list[Diagnostic] = []

    def culprit(self, e: Expr, consts: set[str]) -> str | None:
        """What makes ``e`` non-constant, or None when it is a constant."""
        for x, _ in _with_paths(e, ""):
            if isinstance(x, (Lit, Select)):
                continue
            if isinstance(x, Op):
                if self.collective is not None and self.collective(x.op):
                    return f"the collective op {x.op}"
                continue
            if isinstance(x, Var):
                if x.name in consts:
                    continue
                why = "assigned after its let" if x.name in self.assigned else \
                    "neither an unroll loop's counter nor a let of constants"
                return f"the variable {x.name} ({why})"
            if isinstance(x, Load):
                return f"a load from {x.buffer}"
            if isinstance(x, BufLen):
                if x.buffer in self.fixed:
                    continue
                return f"len({x.buffer})"
            if isinstance(x, Id):
                return f"{x.kind.value}.{AXES[x.axis] if x.axis in (0, 1, 2) else x.axis}"
            return "an atomic" if isinstance(x, Atomic) else "a wait" if isinstance(x, Wait) else f"a {type(x).__name__}"
        return None

    def indices(self, n: Node, path: str, consts: set[str]) -> None:
        """V030 for each index of a private array in statement ``n``'s own expressions."""
        found: list[tuple[str, Expr, str]] = []
        if isinstance(n, Store) and n.buffer in self.private:
            found.append((n.buffer, n.index, f"{path}.index"))
        if isinstance(n, Copy):  # a vector copy's two sides
            found += [(b, i, f"{path}.{w}") for b, i, w in ((n.dst, n.dst_index, "dst_index"),
                                                           (n.src, n.src_index, "src_index")) if b in self.private]
        for name in _FIELDS.get(type(n), ()):
            for x, p in _with_paths(getattr(n, name), f"{path}.{name}"):
                if isinstance(x, Load) and x.buffer in self.private:
                    found.append((x.buffer, x.index, f"{p}.index"))
        for buf, index, where in found:
            what = self.culprit(index, consts)
            if what is not None:
                self.diags.append(Diagnostic("V030", f"the index of private array {buf!r} is not a constant once the "
                                             f"unroll loops are unrolled: it depends on {what}", where, _NOT_CONSTANT_FIX))

    def trips(self, n: Loop, path: str) -> int:
        """The trip count of an unroll loop (V031 and 1 when its bounds are not literals)."""
        if isinstance(n.start, Lit) and isinstance(n.end, Lit):
            start, end = n.start.value, n.end.value
            if isinstance(start, int) and isinstance(end, int) and not isinstance(start, bool):
                return max(0, int(end) - start)
        self.diags.append(Diagnostic("V031", f"loop {n.var} is marked unroll but its bounds are not literals", path,
                                     "write both bounds as integer literals (loop k in 0u32 .. 8u32 unroll { ... }), "
                                     "or drop unroll"))
        return 1

    def body(self, nodes: tuple[Node, ...], path: str, consts: set[str], copies: int) -> int:
        """Walk ``nodes`` (``copies``: how many times the unroll loops around them copy them); returns
        how many statements they become once unrolled. ``consts`` gains this scope's constant lets."""
        total = 0
        for i, n in enumerate(nodes):
            here = f"{path}[{i}]"
            total += 1
            self.indices(n, here, consts)
            if isinstance(n, Let):
                if n.name not in self.assigned and self.culprit(n.value, consts) is None:
                    consts.add(n.name)
                else:
                    consts.discard(n.name)
            elif isinstance(n, If):
                total += self.body(n.then, f"{here}.then", set(consts), copies)
                total += self.body(n.otherwise, f"{here}.otherwise", set(consts), copies)
            elif isinstance(n, Loop):
                total += self.loop(n, here, consts, copies)
            elif isinstance(n, Block):
                total += self.body(n.body, f"{here}.body", set(consts), copies)
            elif isinstance(n, Region):  # no scope: its lets stay visible
                total += self.body(n.body, f"{here}.body", consts, copies)
        return total

    def loop(self, n: Loop, path: str, consts: set[str], copies: int) -> int:
        inner = set(consts)
        if not n.unroll:
            inner.discard(n.var)
            return self.body(n.body, f"{path}.body", inner, copies)
        trips = self.trips(n, path)
        inner.add(n.var)
        if copies * trips > MAX_UNROLL_COPIES:
            self.diags.append(Diagnostic(
                "V032", f"unrolling loop {n.var} makes {copies * trips:,} copies of its body (its {trips:,} iterations"
                + (f" times {copies:,} from the unroll loops around it" if copies > 1 else "")
                + f"), more than {MAX_UNROLL_COPIES}", path,
                f"unroll at most {MAX_UNROLL_COPIES} copies in all: drop unroll from this loop or an outer one "
                "(a loop that is not unrolled may not index private arrays by its counter)"))
            copies = trips = 1  # reported here: the loops inside are judged on their own
        return trips * self.body(n.body, f"{path}.body", inner, copies * trips)


def unroll_problems(program: Program, collective: Callable[[str], bool] | None = None) -> list[Diagnostic]:
    """V030, V031 and V032 in ``program`` (``collective``: whether an op id is a collective op)."""
    walk = _Unrolling(program, collective)
    if not walk.private and not any(isinstance(n, Loop) and n.unroll for n in statements(program.body)):
        return []
    total = walk.body(program.body, "body", set(), 1)
    if total > MAX_UNROLLED_STATEMENTS:
        walk.diags.append(Diagnostic("V032", f"once its unroll loops are unrolled the program has {total:,} statements, "
                                     f"more than {MAX_UNROLLED_STATEMENTS:,}", "body",
                                     "unroll fewer or smaller loops"))
    return walk.diags
