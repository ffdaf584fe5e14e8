"""The text form of programs (``.vyre`` files): a printer and a parser with ``parse(print(p)) == p``.

```
program vadd workgroup(64, 1, 1) {
  buffer a: read u32[] @0
  buffer b: read u32[] @1
  buffer out: write u32[len(a)] @2
  let i = gid.x
  if i < len(out) {
    out[i] = a[i] + b[i]
  }
}
```

Literals always carry their type (``5u32``, ``-1i32``, ``1.5f32``, ``nan_f32``,
``bits(0x7fc00001)_f32``, ``true``). Operators are sugar for op ids (see ``sugar.py``); any op
is written by id, with type arguments and attributes in angle brackets:
``primitive.convert.cast<T=f32>(x)`` (also ``x as f32``). Atomics: ``atomic OP(buf[i], v)``.
``#`` starts a comment. Statements are separated by newlines or ``;``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Final, NoReturn

from . import sugar
from .diagnostics import Diagnostic, VyreError
from .nodes import (
    AXES,
    Access,
    Assign,
    Atomic,
    Barrier,
    Block,
    BufferDecl,
    BufLen,
    Expr,
    Id,
    IdKind,
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
)
from .scalars import ScalarError, format_literal, parse_value
from .types import DataType

__all__ = ["print_program", "print_expr", "parse_program", "parse_expr", "ParseError", "KEYWORDS"]

KEYWORDS: Final = frozenset(
    "program workgroup buffer output let if else loop in return barrier region select len "
    "atomic as true false gid lid wgid".split()
    + [t.value for t in DataType]
    + [a.value for a in Access]
)

# ============================================================================ printing

_INDENT = "  "


def print_program(program: Program) -> str:
    """The canonical text of ``program`` (ends with a newline)."""
    wx, wy, wz = program.workgroup_size
    lines = [f"program {program.name} workgroup({wx}, {wy}, {wz}) {{"]
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
        out.append(f"{pad}{node.buffer}[{print_expr(node.index)}] = {print_expr(node.value)}")
    elif isinstance(node, If):
        _print_block(f"if {print_expr(node.cond)} ", node.then, depth, out)
        if node.otherwise:
            out[-1] += " else {"
            _print_body(node.otherwise, depth + 1, out)
            out.append(f"{pad}}}")
    elif isinstance(node, Loop):
        head = f"loop {node.var} in {print_expr(node.start)} .. {print_expr(node.end)} "
        _print_block(head, node.body, depth, out)
    elif isinstance(node, Return):
        out.append(f"{pad}return")
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
    return _expr(expr)[0]


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
        return f"{e.buffer}[{print_expr(e.index)}]", prim
    if isinstance(e, BufLen):
        return f"len({e.buffer})", prim
    if isinstance(e, Id):
        return f"{e.kind.value}.{AXES[e.axis]}", prim
    if isinstance(e, Select):
        return f"select({print_expr(e.cond)}, {print_expr(e.if_true)}, {print_expr(e.if_false)})", prim
    if isinstance(e, Atomic):
        args = "".join(", " + print_expr(a) for a in e.args)
        return f"atomic {e.op}({e.buffer}[{print_expr(e.index)}]{args})", prim
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
        operand = _wrap(_expr(e.args[0]), sugar.UNARY_PRECEDENCE)
        return f"{operand} as {e.types[0][1].value}", sugar.CAST_PRECEDENCE
    generics = [f"{name}={dtype.value}" for name, dtype in e.types]
    generics += [f"{name}={format_literal(lit.dtype, lit.bits)}" for name, lit in e.attrs]
    head = e.op + (f"<{', '.join(generics)}>" if generics else "")
    return f"{head}({', '.join(print_expr(a) for a in e.args)})", sugar.PRIMARY_PRECEDENCE


# ============================================================================ lexing

_SUFFIX = "|".join(("bool", "u32", "i32", "u64", "i64", "f32", "f64"))
_TOKEN_RE: Final = re.compile(
    r"""
    (?P<ws>[ \t\r]+|\#[^\n]*)
  | (?P<nl>\n|;)
  | (?P<num>(?:0[xX][0-9a-fA-F]+|\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|inf|nan|bits\(0[xX][0-9a-fA-F]+\))
        _?(?:"""
    + _SUFFIX
    + r""")(?![A-Za-z0-9_]))
  | (?P<int>\d[0-9A-Za-z_.]*)
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)
  | (?P<str>"(?:[^"\\\n]|\\.)*")
  | (?P<punct>\.\.|==|!=|<=|>=|<<|>>|&&|\|\||[-+*/%&|^<>!~=()\[\]{},:@])
    """,
    re.VERBOSE,
)


@dataclass(frozen=True, slots=True)
class _Tok:
    kind: str  # num, int, name, str, punct, nl, eof
    text: str
    pos: int


class ParseError(VyreError):
    """A syntax error in program text, located by line and column."""


def _line_col(src: str, pos: int) -> tuple[int, int]:
    line = src.count("\n", 0, pos) + 1
    col = pos - (src.rfind("\n", 0, pos) + 1) + 1
    return line, col


def _tokenize(src: str, filename: str) -> list[_Tok]:
    toks: list[_Tok] = []
    pos = 0
    while pos < len(src):
        m = _TOKEN_RE.match(src, pos)
        if m is None:
            _fail(src, filename, pos, "P001", f"unexpected character {src[pos]!r}", "remove it")
        kind = m.lastgroup
        assert kind is not None
        if kind != "ws":
            toks.append(_Tok(kind, m.group(), pos))
        pos = m.end()
    toks.append(_Tok("eof", "", len(src)))
    return toks


def _fail(src: str, filename: str, pos: int, code: str, message: str, fix: str) -> NoReturn:
    line, col = _line_col(src, pos)
    text = src.splitlines()[line - 1] if src and line <= len(src.splitlines()) else ""
    context = f"{message}\n    {text}\n    {' ' * (col - 1)}^"
    raise ParseError(Diagnostic(code, context, f"{filename}:{line}:{col}", fix))


# ============================================================================ parsing

_ID_KINDS: Final = {k.value: k for k in IdKind}
_TYPES: Final = {t.value: t for t in DataType}
_ACCESS: Final = {a.value: a for a in Access}


MAX_NESTING: Final = 200  # expression and block nesting the parser accepts


class _Parser:
    def __init__(self, src: str, filename: str) -> None:
        self.src, self.filename = src, filename
        self.toks = _tokenize(src, filename)
        self.i = 0
        self.depth = 0

    def enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_NESTING:
            self.error(self.peek(), "P007", f"nested more than {MAX_NESTING} levels deep",
                       "split the expression with let bindings, or flatten the blocks")

    # --- token helpers
    def peek(self, skip_nl: bool = True) -> _Tok:
        if skip_nl:
            while self.toks[self.i].kind == "nl":
                self.i += 1
        return self.toks[self.i]

    def next(self) -> _Tok:
        tok = self.peek()
        self.i += 1
        return tok

    def at(self, text: str) -> bool:
        tok = self.peek()
        return tok.text == text and tok.kind in ("punct", "name")

    def accept(self, text: str) -> bool:
        if self.at(text):
            self.i += 1
            return True
        return False

    def expect(self, text: str, fix: str = "") -> _Tok:
        tok = self.peek()
        if not self.at(text):
            self.error(tok, "P002", f"expected {text!r}, found {self._describe(tok)}", fix or f"insert {text!r}")
        self.i += 1
        return tok

    def error(self, tok: _Tok, code: str, message: str, fix: str) -> NoReturn:
        _fail(self.src, self.filename, tok.pos, code, message, fix)

    @staticmethod
    def _describe(tok: _Tok) -> str:
        return "end of input" if tok.kind == "eof" else repr(tok.text)

    def ident(self, what: str) -> str:
        tok = self.next()
        if tok.kind != "name" or "." in tok.text or tok.text in KEYWORDS:
            self.error(tok, "P002", f"expected {what} (an identifier), found {self._describe(tok)}",
                       "write a name such as x or my_buf (not a keyword)")
        return tok.text

    def integer(self, what: str) -> int:
        tok = self.next()
        if tok.kind != "int" or not tok.text.isdigit():
            self.error(tok, "P002", f"expected {what} (a plain integer), found {self._describe(tok)}",
                       "write a decimal integer such as 64")
        return int(tok.text)

    def dtype(self) -> DataType:
        tok = self.next()
        if tok.text not in _TYPES:
            self.error(tok, "P005", f"unknown type {self._describe(tok)}", f"use one of {', '.join(_TYPES)}")
        return _TYPES[tok.text]

    # --- program
    def program(self) -> Program:
        self.expect("program", "start the file with: program NAME workgroup(X, Y, Z) {")
        name = self.ident("a program name")
        self.expect("workgroup")
        self.expect("(")
        sizes = [self.integer("a workgroup size")]
        for _ in range(2):
            self.expect(",", "give three workgroup sizes: workgroup(64, 1, 1)")
            sizes.append(self.integer("a workgroup size"))
        self.expect(")")
        self.expect("{")
        buffers = []
        while self.at("buffer"):
            buffers.append(self.buffer())
        body = self.statements()
        self.expect("}", "close the program with '}'")
        tok = self.peek()
        if tok.kind != "eof":
            self.error(tok, "P002", f"unexpected {self._describe(tok)} after the program", "remove it")
        return Program(tuple(buffers), (sizes[0], sizes[1], sizes[2]), body, name=name)

    def buffer(self) -> BufferDecl:
        self.expect("buffer")
        name = self.ident("a buffer name")
        self.expect(":")
        tok = self.next()
        if tok.text not in _ACCESS:
            self.error(tok, "P002", f"expected an access mode, found {self._describe(tok)}",
                       f"use one of {', '.join(_ACCESS)}")
        access = _ACCESS[tok.text]
        dtype = self.dtype()
        self.expect("[")
        count, like = 0, None
        if self.accept("len"):
            self.expect("(")
            like = self.ident("a buffer name")
            self.expect(")")
        elif not self.at("]"):
            count = self.integer("an element count")
        self.expect("]", "close the size with ']' (empty [] = sized at dispatch)")
        binding = None
        if self.accept("@"):
            binding = self.integer("a binding number")
        is_output = self.accept("output")
        return BufferDecl(name, access, dtype, count, binding, is_output, like)

    # --- statements
    def statements(self) -> tuple[Node, ...]:
        body: list[Node] = []
        while not self.at("}") and self.peek().kind != "eof":
            body.append(self.statement())
            tok, prev = self.peek(skip_nl=False), self.toks[self.i - 1]
            ended = prev.kind == "nl" or (prev.kind == "punct" and prev.text == "}")
            if not ended and tok.kind not in ("nl", "eof") and tok.text != "}":
                self.error(tok, "P002", f"expected the end of the statement, found {self._describe(tok)}",
                           "put each statement on its own line or separate them with ';'")
        return tuple(body)

    def block(self) -> tuple[Node, ...]:
        self.expect("{")
        self.enter()
        body = self.statements()
        self.depth -= 1
        self.expect("}", "close the block with '}'")
        return body

    def statement(self) -> Node:
        tok = self.peek()
        text = tok.text
        if tok.kind == "name":
            if text == "let":
                self.next()
                name = self.ident("a variable name")
                self.expect("=")
                return Let(name, self.expr())
            if text == "if":
                return self.if_stmt()
            if text == "loop":
                self.next()
                var = self.ident("a loop variable")
                self.expect("in")
                start = self.expr()
                self.expect("..", "write the range as START .. END")
                end = self.expr()
                return Loop(var, start, end, self.block())
            if text == "return":
                self.next()
                return Return()
            if text == "barrier":
                self.next()
                return Barrier()
            if text == "region":
                self.next()
                gen = self.next()
                if gen.kind != "str":
                    self.error(gen, "P002", f"expected a quoted generator name, found {self._describe(gen)}",
                               'write region "name" { ... }')
                return Region(json.loads(gen.text), self.block())
            if "." not in text and text not in KEYWORDS:
                self.next()
                if self.accept("["):
                    index = self.expr()
                    self.expect("]")
                    self.expect("=", "a store is written buf[index] = value")
                    return Store(text, index, self.expr())
                self.expect("=", "an assignment is written name = value")
                return Assign(text, self.expr())
        if text == "{" and tok.kind == "punct":
            return Block(self.block())
        self.error(tok, "P002", f"expected a statement, found {self._describe(tok)}",
                   "statements are let, assignment, store, if, loop, return, barrier, region or a { block }")

    def if_stmt(self) -> If:
        self.expect("if")
        cond = self.expr()
        then = self.block()
        otherwise: tuple[Node, ...] = ()
        if self.accept("else"):
            otherwise = (self.if_stmt(),) if self.at("if") else self.block()
        return If(cond, then, otherwise)

    # --- expressions (precedence climbing)
    def expr(self, min_level: int = 1) -> Expr:
        left = self.cast_expr()
        while True:
            tok = self.peek(skip_nl=False)
            sym = tok.text if tok.kind == "punct" else None
            level = sugar.BINARY_PRECEDENCE.get(sym) if sym else None
            if level is None or level < min_level:
                return left
            self.i += 1
            right = self.expr(level + 1)
            left = Op(sugar.BINARY[sym], (left, right))

    def cast_expr(self) -> Expr:
        expr = self.unary()
        while self.peek(skip_nl=False).text == "as":
            self.i += 1
            expr = Op(sugar.CAST_OP, (expr,), types=((sugar.CAST_TYPE_VAR, self.dtype()),))
        return expr

    def unary(self) -> Expr:
        tok = self.peek()
        if tok.kind == "punct" and tok.text in sugar.UNARY:
            self.i += 1
            if tok.text == "-" and self.peek().kind in ("num", "int"):
                return self.literal(negative=True)
            self.enter()
            operand = self.unary()
            self.depth -= 1
            return Op(sugar.UNARY[tok.text], (operand,))
        self.enter()
        expr = self.primary()
        self.depth -= 1
        return expr

    def literal(self, negative: bool = False) -> Lit:
        tok = self.next()
        if tok.kind == "int":
            narrow = re.match(r"[0-9xXa-fA-F.]+?_?(u8|u16|i8|i16|f16|bf16)\Z", tok.text)
            if narrow:
                wide = _TYPES[narrow.group(1)].value_type
                self.error(tok, "P003", f"{narrow.group(1)} has no literals: narrow types exist only in buffers",
                           f"write a {wide} literal; a store to a {narrow.group(1)} buffer narrows it")
            self.error(tok, "P004", f"literal {tok.text} has no type suffix",
                       f"write {tok.text}u32, {tok.text}i32, {tok.text}f32, ...")
        m = re.match(r"(.*?)_?(" + _SUFFIX + r")\Z", tok.text)
        assert m is not None
        body, dtype = m.group(1), _TYPES[m.group(2)]
        if negative:
            if body.startswith("bits("):
                self.error(tok, "P003", "a bits(...) literal cannot be negated", "flip the sign bit inside bits(...)")
            body = "-" + body
        try:
            return Lit(dtype, parse_value(dtype, body))
        except ScalarError as exc:
            msg, _, fix = str(exc).partition(" Fix: ")
            self.error(tok, "P003", f"bad literal {'-' if negative else ''}{tok.text}: {msg}", fix or "fix the value")

    def primary(self) -> Expr:
        tok = self.peek()
        if tok.kind in ("num", "int"):
            return self.literal()
        if tok.kind == "punct" and tok.text == "(":
            self.next()
            inner = self.expr()
            self.expect(")")
            return inner
        if tok.kind != "name":
            self.error(tok, "P002", f"expected an expression, found {self._describe(tok)}",
                       "write a literal, a variable, buf[i], an op call or a parenthesised expression")
        self.next()
        text = tok.text
        if text in ("true", "false"):
            return Lit(DataType.BOOL, int(text == "true"))
        if text == "len":
            self.expect("(")
            name = self.ident("a buffer name")
            self.expect(")")
            return BufLen(name)
        if text == "select":
            self.expect("(")
            cond = self.expr()
            self.expect(",")
            a = self.expr()
            self.expect(",")
            b = self.expr()
            self.expect(")")
            return Select(cond, a, b)
        if text == "atomic":
            op = self.next()
            if op.kind != "name" or "." not in op.text:
                self.error(op, "P002", f"expected an atomic op id, found {self._describe(op)}",
                           "write atomic primitive.atomic.add(buf[i], value)")
            self.expect("(")
            buf = self.ident("a buffer name")
            self.expect("[")
            index = self.expr()
            self.expect("]")
            args = []
            while self.accept(","):
                args.append(self.expr())
            self.expect(")")
            return Atomic(op.text, buf, index, tuple(args))
        head, _, axis = text.partition(".")
        if head in _ID_KINDS and axis in AXES and not self.call_follows():
            return Id(_ID_KINDS[head], AXES.index(axis))
        if "." in text:
            return self.op_call(tok)
        if text in KEYWORDS:
            self.error(tok, "P002", f"unexpected keyword {text!r}", "keywords cannot be used as names")
        if self.accept("["):
            index = self.expr()
            self.expect("]")
            return Load(text, index)
        return Var(text)

    def call_follows(self) -> bool:
        """Whether an op call's ``(`` or ``<name=`` comes next (so ``gid.x(...)`` is an op)."""
        t = self.toks[self.i: self.i + 3]
        return t[0].text == "(" or (t[0].text == "<" and len(t) == 3 and t[1].kind == "name" and t[2].text == "=")

    def op_call(self, tok: _Tok) -> Op:
        types: dict[str, DataType] = {}
        attrs: dict[str, Lit] = {}
        if self.accept("<"):
            while True:
                key_tok = self.peek()
                key = self.ident("a type variable or attribute name")
                if key in types or key in attrs:
                    self.error(key_tok, "P006", f"{key} is given twice", "give each type argument or attribute once")
                self.expect("=")
                nxt = self.peek()
                if nxt.kind == "name" and nxt.text in _TYPES:
                    types[key] = self.dtype()
                elif nxt.kind == "name" and nxt.text in ("true", "false"):
                    self.next()
                    attrs[key] = Lit(DataType.BOOL, int(nxt.text == "true"))
                else:
                    negative = self.accept("-")
                    attrs[key] = self.literal(negative)
                if not self.accept(","):
                    break
            self.expect(">")
        self.expect("(", f"call the op: {tok.text}(args)")
        args: list[Expr] = []
        if not self.at(")"):
            args.append(self.expr())
            while self.accept(","):
                args.append(self.expr())
        self.expect(")")
        return Op(tok.text, tuple(args), tuple(attrs.items()), tuple(types.items()))


def parse_program(src: str, filename: str = "<text>") -> Program:
    """Parse the text form of one program. Raises ParseError (line:column, Fix) on bad input."""
    return _Parser(src, filename).program()


def parse_expr(src: str, filename: str = "<expr>") -> Expr:
    """Parse a single expression (used for op ``compose`` definitions)."""
    parser = _Parser(src, filename)
    expr = parser.expr()
    tok = parser.peek()
    if tok.kind != "eof":
        parser.error(tok, "P002", f"unexpected {parser._describe(tok)} after the expression", "remove it")
    return expr
