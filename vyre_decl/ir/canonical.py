"""Canonical JSON form of a Program and its content hash.

The JSON form is plain data (dicts, lists, strings, ints; float constants as bit patterns), is
written with sorted keys and no whitespace, and is the input of the SHA-256 content hash, so the
hash does not depend on dict ordering, the Python version or the process. ``from_json`` inverts
``to_json`` exactly.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Final

from .nodes import (
    Access,
    Assign,
    Atomic,
    Barrier,
    Block,
    Break,
    BufferDecl,
    BufLen,
    Copy,
    Expr,
    Id,
    IdKind,
    If,
    Let,
    Lit,
    Load,
    Loop,
    MemoryOrder,
    MemoryScope,
    Node,
    Op,
    Program,
    Region,
    Return,
    Select,
    Store,
    Var,
    Wait,
)
from .diagnostics import nested_too_deeply
from .types import DataType

__all__ = ["to_json", "from_json", "dumps", "loads", "content_hash", "FORMAT"]

FORMAT: Final = "vyre_decl.program/1"


_DEVICE: Final = MemoryScope.DEVICE


def _ordered(d: dict[str, Any], order: MemoryOrder | None, scope: MemoryScope,
             default: MemoryOrder | None = None) -> dict[str, Any]:
    """``d`` with an access's memory order and scope, each only where it is not the default: the
    hashes of programs without them stay what they were."""
    if order is not default:
        d["order"] = order.value if order is not None else None
    if scope is not MemoryScope.DEVICE:
        d["scope"] = scope.value
    return d


def expr_to_json(e: Expr) -> dict[str, Any]:
    if isinstance(e, Lit):
        return {"k": "lit", "t": e.dtype.value, "bits": e.bits}
    if isinstance(e, Var):
        return {"k": "var", "name": e.name}
    if isinstance(e, Load):
        load = {"k": "load", "buf": e.buffer, "index": expr_to_json(e.index)}
        if e.view is not None:  # a byte view (only when set: other loads' hashes unchanged)
            load["view"] = e.view.value
        return load if e.order is None and e.scope is _DEVICE else _ordered(load, e.order, e.scope)
    if isinstance(e, BufLen):
        return {"k": "len", "buf": e.buffer}
    if isinstance(e, Id):
        return {"k": "id", "id": e.kind.value, "axis": e.axis}
    if isinstance(e, Op):
        return {
            "k": "op",
            "op": e.op,
            "args": [expr_to_json(a) for a in e.args],
            "attrs": {name: expr_to_json(lit) for name, lit in e.attrs},
            "types": {name: dtype.value for name, dtype in e.types},
        }
    if isinstance(e, Select):
        return {"k": "branch" if e.lazy else "select", "cond": expr_to_json(e.cond), "a": expr_to_json(e.if_true),
                "b": expr_to_json(e.if_false)}
    if isinstance(e, Atomic):
        return _ordered({
            "k": "atomic",
            "op": e.op,
            "buf": e.buffer,
            "index": expr_to_json(e.index),
            "args": [expr_to_json(a) for a in e.args],
        }, e.order, e.scope, MemoryOrder.RELAXED)
    if isinstance(e, Wait):
        return _ordered({"k": "wait", "buf": e.buffer, "index": expr_to_json(e.index), "value": expr_to_json(e.value),
                         "bound": expr_to_json(e.bound)}, e.order, e.scope, MemoryOrder.RELAXED)
    raise TypeError(f"not an expression node: {e!r}")


def _body(nodes: tuple[Node, ...]) -> list[dict[str, Any]]:
    return [node_to_json(n) for n in nodes]


def node_to_json(n: Node) -> dict[str, Any]:
    if isinstance(n, Let):
        return {"k": "let", "name": n.name, "value": expr_to_json(n.value)}
    if isinstance(n, Assign):
        return {"k": "assign", "name": n.name, "value": expr_to_json(n.value)}
    if isinstance(n, Store):
        store = {"k": "store", "buf": n.buffer, "index": expr_to_json(n.index), "value": expr_to_json(n.value)}
        return store if n.order is None and n.scope is _DEVICE else _ordered(store, n.order, n.scope)
    if isinstance(n, Copy):
        copy = {"k": "copy", "dst": n.dst, "dst_index": expr_to_json(n.dst_index), "src": n.src,
                "src_index": expr_to_json(n.src_index), "width": n.width}
        for side in ("dst_units", "src_units"):  # only when set: other copies' hashes stay what they were
            if getattr(n, side):
                copy[side] = True
        return copy
    if isinstance(n, If):
        return {"k": "if", "cond": expr_to_json(n.cond), "then": _body(n.then), "else": _body(n.otherwise)}
    if isinstance(n, Loop):
        loop: dict[str, Any] = {"k": "loop", "var": n.var, "from": expr_to_json(n.start), "to": expr_to_json(n.end), "body": _body(n.body)}
        if n.unroll:  # only when set: the hashes of programs without it stay what they were
            loop["unroll"] = True
        return loop
    if isinstance(n, Return):
        return {"k": "return"}
    if isinstance(n, Break):
        return {"k": "break"}
    if isinstance(n, Barrier):
        return {"k": "barrier"}
    if isinstance(n, Block):
        return {"k": "block", "body": _body(n.body)}
    if isinstance(n, Region):
        return {"k": "region", "generator": n.generator, "body": _body(n.body)}
    raise TypeError(f"not a statement node: {n!r}")


def to_json(program: Program) -> dict[str, Any]:
    """The canonical JSON-able form of ``program`` (V016 if it is too deep to convert)."""
    try:
        return _program_json(program)
    except RecursionError:
        raise nested_too_deeply("convert to JSON") from None


def _program_json(program: Program) -> dict[str, Any]:
    large = {"workgroup_memory": "large"} if program.large_workgroup_memory else {}  # other hashes unchanged
    resident = {"resident": program.resident} if program.resident else {}
    return {
        **large,
        **resident,
        "format": FORMAT,
        "name": program.name,
        "workgroup": list(program.workgroup_size),
        "buffers": [
            {
                "name": b.name,
                "access": b.access.value,
                "type": b.dtype.value,
                "count": b.count,
                "binding": b.binding,
                "output": b.is_output,
                "count_like": b.count_like,
            }
            for b in program.buffers
        ],
        "body": _body(program.body),
    }


def dumps(program: Program) -> str:
    """Canonical JSON text: sorted keys, no whitespace, ASCII only."""
    data = to_json(program)
    try:
        return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    except RecursionError:
        raise nested_too_deeply("write as JSON") from None


def content_hash(program: Program) -> str:
    """SHA-256 of ``dumps`` (V016 for a program too deep to serialise: nothing could run it)."""
    return hashlib.sha256(dumps(program).encode("ascii")).hexdigest()


# ----------------------------------------------------------------------------- decoding

_IDS: Final = {k.value: k for k in IdKind}


def _lit(d: dict[str, Any]) -> Lit:
    return Lit(DataType(d["t"]), int(d["bits"]))


def _order(d: dict[str, Any], default: MemoryOrder | None = None) -> MemoryOrder | None:
    value = d.get("order", default.value if default is not None else None)
    return None if value is None else MemoryOrder(value)


def _scope(d: dict[str, Any]) -> MemoryScope:
    return MemoryScope(d.get("scope", MemoryScope.DEVICE.value))


def expr_from_json(d: dict[str, Any]) -> Expr:
    k = d["k"]
    if k == "lit":
        return _lit(d)
    if k == "var":
        return Var(d["name"])
    if k == "load":
        return Load(d["buf"], expr_from_json(d["index"]), _order(d), _scope(d),
                    DataType(d["view"]) if "view" in d else None)
    if k == "len":
        return BufLen(d["buf"])
    if k == "id":
        return Id(_IDS[d["id"]], int(d["axis"]))
    if k == "op":
        return Op(
            d["op"],
            tuple(expr_from_json(a) for a in d["args"]),
            tuple((name, _lit(v)) for name, v in d.get("attrs", {}).items()),
            tuple((name, DataType(t)) for name, t in d.get("types", {}).items()),
        )
    if k in ("select", "branch"):
        return Select(expr_from_json(d["cond"]), expr_from_json(d["a"]), expr_from_json(d["b"]), k == "branch")
    if k == "atomic":
        return Atomic(d["op"], d["buf"], expr_from_json(d["index"]), tuple(expr_from_json(a) for a in d["args"]),
                      _order(d, MemoryOrder.RELAXED) or MemoryOrder.RELAXED, _scope(d))
    if k == "wait":
        return Wait(d["buf"], expr_from_json(d["index"]), expr_from_json(d["value"]), expr_from_json(d["bound"]),
                    _order(d, MemoryOrder.RELAXED) or MemoryOrder.RELAXED, _scope(d))
    raise ValueError(f"unknown expression kind {k!r} in program JSON. Fix: produce the JSON with vyre_decl.ir.to_json")


def _nodes(items: list[dict[str, Any]]) -> tuple[Node, ...]:
    return tuple(node_from_json(i) for i in items)


def node_from_json(d: dict[str, Any]) -> Node:
    k = d["k"]
    if k == "let":
        return Let(d["name"], expr_from_json(d["value"]))
    if k == "assign":
        return Assign(d["name"], expr_from_json(d["value"]))
    if k == "store":
        return Store(d["buf"], expr_from_json(d["index"]), expr_from_json(d["value"]), _order(d), _scope(d))
    if k == "copy":
        return Copy(d["dst"], expr_from_json(d["dst_index"]), d["src"], expr_from_json(d["src_index"]), d["width"],
                    d.get("dst_units") is True, d.get("src_units") is True)
    if k == "if":
        return If(expr_from_json(d["cond"]), _nodes(d["then"]), _nodes(d["else"]))
    if k == "loop":
        return Loop(d["var"], expr_from_json(d["from"]), expr_from_json(d["to"]), _nodes(d["body"]), d.get("unroll") is True)
    if k == "return":
        return Return()
    if k == "break":
        return Break()
    if k == "barrier":
        return Barrier()
    if k == "block":
        return Block(_nodes(d["body"]))
    if k == "region":
        return Region(d["generator"], _nodes(d["body"]))
    raise ValueError(f"unknown statement kind {k!r} in program JSON. Fix: produce the JSON with vyre_decl.ir.to_json")


def from_json(d: dict[str, Any]) -> Program:
    """Inverse of ``to_json``."""
    if d.get("format") != FORMAT:
        raise ValueError(
            f"not a vyre_decl program (format {d.get('format')!r}, expected {FORMAT!r}). "
            "Fix: produce the JSON with vyre_decl.ir.to_json"
        )
    buffers = tuple(
        BufferDecl(
            b["name"],
            Access(b["access"]),
            DataType(b["type"]),
            int(b["count"]),
            b["binding"],
            bool(b["output"]),
            b.get("count_like"),
        )
        for b in d["buffers"]
    )
    wx, wy, wz = (int(v) for v in d["workgroup"])
    return Program(buffers, (wx, wy, wz), _nodes(d["body"]), name=d["name"],
                   large_workgroup_memory=d.get("workgroup_memory") == "large", resident=d.get("resident", 0))


def loads(text: str) -> Program:
    return from_json(json.loads(text))
