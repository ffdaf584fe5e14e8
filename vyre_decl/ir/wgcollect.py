"""Workgroup collectives (``let r = workgroup.reduce(OP, v, scratch)``): their one definition,
as the existing IR each expands to (docs/semantics.md, "Workgroup collectives").

A collective is a building block, not a node: the parser and the builder replace it by a
``region "workgroup.KIND"`` of plain statements (stores to and loads from the caller's workgroup
array ``scratch``, barriers, subgroup shuffles and applications of the registry op OP), so the
reference, the emitter and the simulator run it as any program and agree bit for bit by
construction; validation checks the expansion (OP's arity and types: V006/V007, divergent control
flow: V014/V027). The order OP is applied in is fixed by the workgroup size W alone:

* ``reduce``: P = the least power of two >= W; for h = P/2, P/4, ..., 1 invocation t < h with
  t + h < W sets v[t] = OP(v[t], v[t + h]); every invocation gets v[0] (the tree of
  ``reduce.blocks``). Strides h >= 32 go through ``scratch`` with a barrier each, those below 32
  by ``subgroup.shuffle_down`` in the first subgroup (the same tree, no barrier).
* ``inclusive_scan``: for k = 1, 2, 4, ... < W, v[t] = OP(v[t - k], v[t]) where t >= k (the order of
  the subgroup scans); ``exclusive_scan(OP, v, first, scratch)``: ``first`` in invocation 0, else
  the inclusive value of t - 1.
* ``broadcast(v, k, scratch)``: v of the invocation with linear local id k (own v where k >= W).

Codes: V051 a malformed collective (unknown kind, argument count, OP not an op id, used inside an
expression) · V052 its scratch array (missing where W > 32, not a workgroup array, fewer than W
elements).
"""

from __future__ import annotations

from typing import Final, Sequence

from .nodes import Access, Assign, Barrier, BufferDecl, Expr, Id, IdKind, If, Let, Lit, Load, Node, Op, Region, Select, Store, Var
from .types import DataType

__all__ = ["KINDS", "SUBGROUP_ONLY", "arity", "collective_problem", "expand"]

# kind -> (takes OP first, operands after OP without the scratch)
KINDS: Final = {"reduce": (True, 1), "inclusive_scan": (True, 1), "exclusive_scan": (True, 2), "broadcast": (False, 2)}
SUBGROUP_ONLY: Final = 32  # a workgroup of at most this many invocations is one subgroup: no scratch needed
_FORMS: Final = ("workgroup.reduce(OP, v, scratch), workgroup.inclusive_scan(OP, v, scratch), "
                 "workgroup.exclusive_scan(OP, v, first, scratch) or workgroup.broadcast(v, k, scratch)")


def arity(kind: str) -> tuple[bool, int]:
    """(whether OP comes first, the operand count after it, scratch excluded)."""
    return KINDS[kind]


def collective_problem(kind: str, scratch: str | None, decl: BufferDecl | None,
                       workgroup: Sequence[int]) -> tuple[str, str, str] | None:
    """(code, message, fix) for a collective ``kind`` over ``scratch`` (declared as ``decl``, None
    where no buffer has that name) in a workgroup of ``workgroup`` invocations, or None."""
    if kind not in KINDS:
        return ("V051", f"workgroup.{kind} is no workgroup collective", f"write {_FORMS}")
    w = workgroup[0] * workgroup[1] * workgroup[2]
    if scratch is None:
        if w <= SUBGROUP_ONLY:
            return None
        return ("V052", f"workgroup.{kind} in a workgroup of {w} invocations needs a scratch array",
                f"declare buffer part: workgroup T[{w}] and pass it last: workgroup.{kind}(..., part)")
    if decl is None or decl.access is not Access.WORKGROUP:
        what = "no buffer" if decl is None else f"a {decl.access.value} buffer"
        return ("V052", f"the scratch of workgroup.{kind}, {scratch!r}, is {what}: it must be a workgroup array",
                f"declare buffer {scratch}: workgroup T[{w}] (T the value's type)")
    if not isinstance(decl.count, int) or decl.count < w:
        return ("V052", f"the scratch {scratch!r} of workgroup.{kind} holds {decl.count} elements, fewer than the "
                f"{w} invocations of the workgroup", f"declare buffer {scratch}: workgroup {decl.dtype.value}[{w}]")
    return None


def _u32(v: int) -> Lit:
    return Lit(DataType.U32, v)


def _linear_id(workgroup: Sequence[int]) -> Expr:
    wx, wy, wz = workgroup
    x: Expr = Id(IdKind.LOCAL, 0)
    if wy == 1 and wz == 1:
        return x
    yz: Expr = Id(IdKind.LOCAL, 1)
    if wz != 1:
        yz = Op("primitive.math.add", (yz, Op("primitive.math.mul", (_u32(wy), Id(IdKind.LOCAL, 2)))))
    return Op("primitive.math.add", (x, Op("primitive.math.mul", (_u32(wx), yz))))


def _lt(a: Expr, b: int) -> Expr:
    return Op("primitive.compare.lt", (a, _u32(b)))


def _reduce(op: str, dest: str, scratch: str | None, w: int, t: Expr) -> list[Node]:
    """The tree: strides of 32 and more through ``scratch``, the rest by shuffles."""
    r = Var(dest)
    p = 1 << max(0, (w - 1).bit_length())
    out: list[Node] = []
    h = p // 2
    if scratch is not None and h >= SUBGROUP_ONLY:
        out += [Barrier(), Store(scratch, t, r), Barrier()]
        while h >= SUBGROUP_ONLY:
            mine = Load(scratch, t)
            out += [If(_lt(t, min(h, w - h)), (Store(scratch, t, Op(op, (mine, Load(scratch, Op(
                "primitive.math.add", (t, _u32(h))))))),)), Barrier()]
            h //= 2
        out.append(Assign(dest, Load(scratch, t)))
    while h >= 1:
        down = Op(op, (r, Op("subgroup.shuffle_down", (r, _u32(h)))))
        out.append(Assign(dest, down if 2 * h <= w else Select(_lt(t, w - h), down, r)))
        h //= 2
    if scratch is not None and w > SUBGROUP_ONLY:
        out += [If(_lt(t, 1), (Store(scratch, _u32(0), r),)), Barrier(), Assign(dest, Load(scratch, _u32(0)))]
    elif w > 1:
        out.append(Assign(dest, Op("subgroup.shuffle", (r, _u32(0)))))
    return out


def _scan(op: str, dest: str, first: Expr | None, scratch: str | None, w: int, t: Expr, double: bool) -> list[Node]:
    """Hillis-Steele over the workgroup: through ``scratch`` where W > 32 (``double``: its two halves
    in turn, one barrier a step), by shuffles in one subgroup."""
    r = Var(dest)
    out: list[Node] = []
    k = 1
    if scratch is None or w <= SUBGROUP_ONLY:
        while k < w:
            up = Op(op, (Op("subgroup.shuffle_up", (r, _u32(k))), r))
            out.append(Assign(dest, Select(Op("primitive.compare.ge", (t, _u32(k))), up, r)))
            k *= 2
        if first is not None:
            out.append(Assign(dest, Select(_lt(t, 1), first, Op("subgroup.shuffle_up", (r, _u32(1))))))
        return out
    out += [Barrier(), Store(scratch, t, r), Barrier()]
    half = 0  # where the values of this step are: scratch[half + s]
    while k < w:
        before = Load(scratch, Op("primitive.math.sub", (_at(t, half), _u32(k))))
        out.append(If(Op("primitive.compare.ge", (t, _u32(k))), (Assign(dest, Op(op, (before, r))),)))
        if 2 * k < w or first is not None:
            if double:
                half = w - half
                out += [Store(scratch, _at(t, half), r), Barrier()]
            else:
                out += [Barrier(), Store(scratch, t, r), Barrier()]
        k *= 2
    if first is not None:
        last = Load(scratch, Op("primitive.math.sub", (_at(t, half), _u32(1))))
        out.append(Assign(dest, Select(_lt(t, 1), first, last)))
    return out


def _at(t: Expr, base: int) -> Expr:
    return t if base == 0 else Op("primitive.math.add", (t, _u32(base)))


def _broadcast(dest: str, k: Expr, scratch: str | None, w: int, t: Expr) -> list[Node]:
    if scratch is None or w <= SUBGROUP_ONLY:
        return [Assign(dest, Op("subgroup.shuffle", (Var(dest), k)))]
    return [Barrier(), Store(scratch, t, Var(dest)), Barrier(),
            Assign(dest, Select(_lt(k, w), Load(scratch, k), Var(dest)))]


def expand(kind: str, dest: str, declare: bool, op: str | None, operands: Sequence[Expr], scratch: str | None,
           workgroup: Sequence[int], scratch_count: int = 0) -> Region:
    """The region a checked collective (``collective_problem`` gave None) stands for: ``dest`` (a
    new variable where ``declare``) is first bound to the value ``operands[0]`` (evaluated once), then
    gets the collective's value in every invocation. The other operand (``first``, ``k``) is read
    where the expansion uses it. A scan whose scratch holds ``scratch_count`` >= 2 W elements uses
    its two halves in turn (one barrier a step instead of two; the same order)."""
    w = workgroup[0] * workgroup[1] * workgroup[2]
    t = _linear_id(workgroup)
    head: list[Node] = [Let(dest, operands[0]) if declare else Assign(dest, operands[0])]
    if kind == "reduce":
        assert op is not None
        body = _reduce(op, dest, scratch, w, t)
    elif kind == "broadcast":
        body = _broadcast(dest, operands[1], scratch, w, t)
    else:
        assert op is not None
        body = _scan(op, dest, operands[1] if kind == "exclusive_scan" else None, scratch, w, t, scratch_count >= 2 * w)
    return Region(f"workgroup.{kind}", tuple(head + body))
