"""Printing programs and expressions in the text form, with the fewest parentheses that parse back."""

from __future__ import annotations

import json

from . import sugar
from .nodes import (
    AXES,
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
    If,
    Let,
    Lit,
    Load,
    Loop,
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
from .ordering import qualifier_text
from .scalars import format_literal

__all__ = ["print_program", "print_expr"]


_INDENT = "  "


def print_program(program: Program) -> str:
    """The canonical text of ``program`` (ends with a newline; V016 if it is too deep to print)."""
    try:
        return _print_program(program)
    except RecursionError:
        raise nested_too_deeply("print") from None


def _print_program(program: Program) -> str:
    wx, wy, wz = program.workgroup_size
    large = " workgroup_memory(large)" if program.large_workgroup_memory else ""
    resident = f" resident({program.resident})" if program.resident else ""
    lines = [f"program {program.name} workgroup({wx}, {wy}, {wz}){large}{resident} {{"]
    for decl in program.buffers:
        lines.append(_INDENT + _print_buffer(decl))
    _print_body(program.body, 1, lines)
    lines.append("}")
    return "\n".join(lines) + "\n"


def _print_buffer(decl: BufferDecl) -> str:
    if decl.count_like is not None:
        size = f"len({decl.count_like})"
    else:
        size = str(decl.count) if decl.count else ""
    text = f"buffer {decl.name}: {decl.access.value} {decl.dtype.value}[{size}]"
    if decl.binding is not None:
        text += f" @{decl.binding}"
    if decl.is_output and decl.access is not Access.WRITE:
        text += " output"
    return text


def _print_body(body: tuple[Node, ...], depth: int, out: list[str]) -> None:
    for node in body:
        _print_node(node, depth, out)


def _print_block(head: str, body: tuple[Node, ...], depth: int, out: list[str]) -> None:
    pad = _INDENT * depth
    out.append(f"{pad}{head}{{")
    _print_body(body, depth + 1, out)
    out.append(f"{pad}}}")


def _print_node(node: Node, depth: int, out: list[str]) -> None:
    pad = _INDENT * depth
    if isinstance(node, Let):
        out.append(f"{pad}let {node.name} = {print_expr(node.value)}")
    elif isinstance(node, Assign):
        out.append(f"{pad}{node.name} = {print_expr(node.value)}")
    elif isinstance(node, Store):
        atomic = "" if node.order is None else qualifier_text(node.order, node.scope) + " "
        out.append(f"{pad}{atomic}{node.buffer}[{print_expr(node.index)}] = {print_expr(node.value)}")
    elif isinstance(node, Copy):
        w, dk, sk = node.width, "*" if node.dst_units else "+", "*" if node.src_units else "+"
        out.append(f"{pad}{node.dst}[{print_expr(node.dst_index)} ..{dk} {w}] = {node.src}[{print_expr(node.src_index)} ..{sk} {w}]")
    elif isinstance(node, If):
        _print_block(f"if {print_expr(node.cond)} ", node.then, depth, out)
        if node.otherwise:
            out[-1] += " else {"
            _print_body(node.otherwise, depth + 1, out)
            out.append(f"{pad}}}")
    elif isinstance(node, Loop):
        head = f"loop {node.var} in {print_expr(node.start)} .. {print_expr(node.end)} {'unroll ' if node.unroll else ''}"
        _print_block(head, node.body, depth, out)
    elif isinstance(node, Return):
        out.append(f"{pad}return")
    elif isinstance(node, Break):
        out.append(f"{pad}break")
    elif isinstance(node, Barrier):
        out.append(f"{pad}barrier")
    elif isinstance(node, Block):
        _print_block("", node.body, depth, out)
    elif isinstance(node, Region):
        _print_block(f"region {json.dumps(node.generator)} ", node.body, depth, out)
    else:
        raise TypeError(f"not a statement node: {node!r}")


def print_expr(expr: Expr) -> str:
    """The text of one expression, with the fewest parentheses that parse back to it."""
    try:
        return _expr(expr)[0]
    except RecursionError:
        raise nested_too_deeply("print") from None


def _wrap(part: tuple[str, int], need: int) -> str:
    text, level = part
    return text if level >= need else f"({text})"


def _expr(e: Expr) -> tuple[str, int]:
    prim = sugar.PRIMARY_PRECEDENCE
    if isinstance(e, Lit):
        return format_literal(e.dtype, e.bits), prim
    if isinstance(e, Var):
        return e.name, prim
    if isinstance(e, Load):
        atomic = "" if e.order is None else qualifier_text(e.order, e.scope) + " "
        view = "" if e.view is None else f".{e.view.value}"  # a byte view: x.u32[i]
        return f"{atomic}{e.buffer}{view}[{print_expr(e.index)}]", prim
    if isinstance(e, BufLen):
        return f"len({e.buffer})", prim
    if isinstance(e, Id):
        return f"{e.kind.value}.{AXES[e.axis]}", prim
    if isinstance(e, Select):
        name = "branch" if e.lazy else "select"
        return f"{name}({print_expr(e.cond)}, {print_expr(e.if_true)}, {print_expr(e.if_false)})", prim
    if isinstance(e, Atomic):
        args = "".join(", " + print_expr(a) for a in e.args)
        return f"{qualifier_text(e.order, e.scope)} {e.op}({e.buffer}[{print_expr(e.index)}]{args})", prim
    if isinstance(e, Wait):
        return (f"{qualifier_text(e.order, e.scope)} wait({e.buffer}[{print_expr(e.index)}], {print_expr(e.value)}, "
                f"{print_expr(e.bound)})", prim)
    if isinstance(e, Op):
        return _op_expr(e)
    raise TypeError(f"not an expression node: {e!r}")


def _op_expr(e: Op) -> tuple[str, int]:
    plain = not e.attrs
    if plain and not e.types and len(e.args) == 2 and e.op in sugar.BINARY_BY_OP:
        sym = sugar.BINARY_BY_OP[e.op]
        level = sugar.BINARY_PRECEDENCE[sym]
        left = _wrap(_expr(e.args[0]), level)
        right = _wrap(_expr(e.args[1]), level + 1)
        return f"{left} {sym} {right}", level
    if plain and not e.types and len(e.args) == 1 and e.op in sugar.UNARY_BY_OP:
        operand = _expr(e.args[0])
        # a literal operand keeps its parentheses so -(5i32) is not read back as the literal -5i32
        if isinstance(e.args[0], Lit):
            operand = (operand[0], 0)
        return f"{sugar.UNARY_BY_OP[e.op]}{_wrap(operand, sugar.UNARY_PRECEDENCE)}", sugar.UNARY_PRECEDENCE
    if (
        plain
        and e.op == sugar.CAST_OP
        and len(e.args) == 1
        and len(e.types) == 1
        and e.types[0][0] == sugar.CAST_TYPE_VAR
    ):
        cast_operand = _wrap(_expr(e.args[0]), sugar.UNARY_PRECEDENCE)
        return f"{cast_operand} as {e.types[0][1].value}", sugar.CAST_PRECEDENCE
    generics = [f"{name}={dtype.value}" for name, dtype in e.types]
    generics += [f"{name}={format_literal(lit.dtype, lit.bits)}" for name, lit in e.attrs]
    head = e.op + (f"<{', '.join(generics)}>" if generics else "")
    return f"{head}({', '.join(print_expr(a) for a in e.args)})", sugar.PRIMARY_PRECEDENCE


