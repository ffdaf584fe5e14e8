"""Parsing the text form: programs and single expressions.

With ``type_vars`` the parser reads the expressions of an op's ``compose`` definition for one
binding (``compose.py``): a type variable stands for its bound type (``x as T``, ``op<T=T>(...)``),
``3 as T`` is a constant of that type and ``T.max`` a symbolic one (``scalars.ELEMENTS``).
"""

from __future__ import annotations

import json
import re
from typing import Final, Mapping, NoReturn

from . import sugar
from .diagnostics import Diagnostic, message_and_fix
from .lexer import KEYWORDS, SUFFIX_PATTERN, ParseError, Token, fail, tokenize
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
from .scalars import ELEMENTS, ScalarError, element_bits, parse_value
from .types import DataType

__all__ = ["Parser", "parse_program", "parse_expr", "MAX_NESTING"]

_ID_KINDS: Final = {k.value: k for k in IdKind}
_TYPES: Final = {t.value: t for t in DataType}
_ACCESS: Final = {a.value: a for a in Access}


MAX_NESTING: Final = 200  # expression and block nesting the parser accepts
# the longest program text parsed (characters; for a file, bytes): bounds parsing time and memory
# before any work (validation allows 8,192 statements, far below this at any sane line length)
MAX_PROGRAM_TEXT: Final = 16 << 20


def too_long(size: int, where: str) -> ParseError:
    """P011: program text over ``MAX_PROGRAM_TEXT``."""
    return ParseError(Diagnostic("P011", f"the program text is {size:,} characters or bytes long, over the limit "
                                 f"of {MAX_PROGRAM_TEXT:,}", where, "split the work into several programs (or build "
                                 "it with ProgramBuilder, whose size validation bounds by statements)"))


class Parser:
    def __init__(self, src: str, filename: str, type_vars: Mapping[str, DataType] | None = None) -> None:
        self.src, self.filename = src, filename
        self.toks = tokenize(src, filename)
        self.i = 0
        self.depth = 0
        self.grouped = 0  # inside ( ), [ ] or call arguments, where an expression may span lines
        # compose mode: type variables bound to their types (None: program text)
        self.type_vars = dict(type_vars) if type_vars is not None else None
        self.type_names = dict(_TYPES)
        if type_vars:
            self.type_names.update(type_vars)

    def enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_NESTING:
            self.error(self.peek(), "P007", f"nested more than {MAX_NESTING} levels deep",
                       "split the expression with let bindings, or flatten the blocks")

    # --- token helpers
    def peek(self, skip_nl: bool = True) -> Token:
        if skip_nl:
            while self.toks[self.i].kind == "nl":
                self.i += 1
        return self.toks[self.i]

    def next(self) -> Token:
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

    def expect(self, text: str, fix: str = "") -> Token:
        tok = self.peek()
        if not self.at(text):
            self.error(tok, "P002", f"expected {text!r}, found {self._describe(tok)}", fix or f"insert {text!r}")
        self.i += 1
        return tok

    def error(self, tok: Token, code: str, message: str, fix: str) -> NoReturn:
        fail(self.src, self.filename, tok.pos, code, message, fix)

    @staticmethod
    def _describe(tok: Token) -> str:
        return "end of input" if tok.kind == "eof" else repr(tok.text)

    def ident(self, what: str) -> str:
        tok = self.next()
        if tok.kind != "name" or "." in tok.text or tok.text in KEYWORDS:
            self.error(tok, "P002", f"expected {what} (an identifier), found {self._describe(tok)}",
                       "write a name such as x or my_buf (not a keyword)")
        return tok.text

    def integer(self, what: str) -> int:
        tok = self.next()
        if tok.kind != "int" or not (tok.text.isascii() and tok.text.isdigit()):
            self.error(tok, "P002", f"expected {what} (a plain integer), found {self._describe(tok)}",
                       "write a decimal integer such as 64")
        if len(tok.text) > 12:  # every size here fits in 32 bits: refuse before converting
            self.error(tok, "P003", f"{what} {tok.text[:16]}... ({len(tok.text)} digits) is out of range",
                       "use a size below 2^32")
        return int(tok.text)

    def dtype(self) -> DataType:
        tok = self.next()
        if tok.kind != "name" or tok.text not in self.type_names:
            self.error(tok, "P005", f"unknown type {self._describe(tok)}", f"use one of {', '.join(self.type_names)}")
        return self.type_names[tok.text]

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
                try:
                    name = json.loads(gen.text)
                except ValueError as exc:  # a bad escape or a raw control character in the string
                    self.error(gen, "P002", f"the region name {gen.text[:40]} is not a valid string: {exc.args[0]}",
                               'write a plain string such as "reduce.sum"; escapes as in JSON')
                if not isinstance(name, str):
                    self.error(gen, "P002", "a region name must be a string", 'write a string such as "reduce.sum"')
                return Region(name, self.block())
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
            if self.at("if"):  # an else-if chain nests: it counts against the nesting limit
                self.enter()
                otherwise = (self.if_stmt(),)
                self.depth -= 1
            else:
                otherwise = self.block()
        return If(cond, then, otherwise)

    # --- expressions (precedence climbing)
    def grouped_expr(self) -> Expr:
        """An expression inside brackets: it may continue on the next line."""
        self.grouped += 1
        try:
            return self.expr()
        finally:
            self.grouped -= 1

    def expr(self, min_level: int = 1) -> Expr:
        left = self.cast_expr()
        while True:
            tok = self.peek(skip_nl=self.grouped > 0)
            sym = tok.text if tok.kind == "punct" else None
            level = sugar.BINARY_PRECEDENCE.get(sym) if sym else None
            if sym is None or level is None or level < min_level:
                return left
            self.i += 1
            right = self.expr(level + 1)
            left = Op(sugar.BINARY[sym], (left, right))

    def cast_expr(self) -> Expr:
        expr = self.unary()
        while self.peek(skip_nl=self.grouped > 0).text == "as":
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
        if tok.kind == "int" and self.type_vars is not None and self.peek(skip_nl=self.grouped > 0).text == "as":
            self.i += 1  # compose: `3 as T` is the constant 3 of T's type
            return self.typed_constant(tok, ("-" if negative else "") + tok.text, self.dtype())
        if tok.kind == "int":
            narrow = re.match(r"[0-9xXa-fA-F.]+?_?(u8|u16|i8|i16|f16|bf16)\Z", tok.text)
            if narrow:
                wide = _TYPES[narrow.group(1)].value_type
                self.error(tok, "P003", f"{narrow.group(1)} has no literals: narrow types exist only in buffers",
                           f"write a {wide} literal; a store to a {narrow.group(1)} buffer narrows it")
            self.error(tok, "P004", f"literal {tok.text} has no type suffix",
                       f"write {tok.text}u32, {tok.text}i32, {tok.text}f32, ...")
        m = re.match(r"(.*?)_?(" + SUFFIX_PATTERN + r")\Z", tok.text)
        assert m is not None
        body, dtype = m.group(1), _TYPES[m.group(2)]
        if negative:
            if body.startswith("bits("):
                self.error(tok, "P003", "a bits(...) literal cannot be negated", "flip the sign bit inside bits(...)")
            body = "-" + body
        try:
            return Lit(dtype, parse_value(dtype, body))
        except ScalarError as exc:
            msg, fix = message_and_fix(exc)
            self.error(tok, "P003", f"bad literal {'-' if negative else ''}{tok.text}: {msg}", fix)

    def typed_constant(self, tok: Token, body: str, dtype: DataType) -> Lit:
        if not dtype.is_value_type:
            self.error(tok, "P005", f"{dtype} has no constants", f"use its value type {dtype.value_type}")
        try:
            return Lit(dtype, element_bits(dtype, body))
        except ScalarError as exc:
            msg, fix = message_and_fix(exc)
            self.error(tok, "P003", f"bad constant {body} of type {dtype}: {msg}", fix)

    def primary(self) -> Expr:
        tok = self.peek()
        if tok.kind in ("num", "int"):
            return self.literal()
        if tok.kind == "punct" and tok.text == "(":
            self.next()
            inner = self.grouped_expr()
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
        if text in ("select", "branch"):
            self.expect("(")
            cond = self.grouped_expr()
            self.expect(",")
            a = self.grouped_expr()
            self.expect(",")
            b = self.grouped_expr()
            self.expect(")")
            return Select(cond, a, b, lazy=text == "branch")
        if text == "atomic":
            op = self.next()
            if op.kind != "name" or "." not in op.text:
                self.error(op, "P002", f"expected an atomic op id, found {self._describe(op)}",
                           "write atomic primitive.atomic.add(buf[i], value)")
            self.expect("(")
            buf = self.ident("a buffer name")
            self.expect("[")
            index = self.grouped_expr()
            self.expect("]")
            args = []
            while self.accept(","):
                args.append(self.grouped_expr())
            self.expect(")")
            return Atomic(op.text, buf, index, tuple(args))
        head, _, axis = text.partition(".")
        if self.type_vars is not None and head in self.type_names and axis in ELEMENTS and not self.call_follows():
            return self.typed_constant(tok, axis, self.type_names[head])  # compose: T.max, f32.inf
        if head in _ID_KINDS and axis in AXES and not self.call_follows():
            return Id(_ID_KINDS[head], AXES.index(axis))
        if "." in text:
            return self.op_call(tok)
        if text in KEYWORDS:
            self.error(tok, "P002", f"unexpected keyword {text!r}", "keywords cannot be used as names")
        if self.peek(skip_nl=False).text == "[":  # not across a newline: `x` then a line starting with [
            self.i += 1
            index = self.grouped_expr()
            self.expect("]")
            return Load(text, index)
        return Var(text)

    def call_follows(self) -> bool:
        """Whether an op call's ``(`` or ``<name=`` comes next (so ``gid.x(...)`` is an op)."""
        t = self.toks[self.i: self.i + 3]
        return t[0].text == "(" or (t[0].text == "<" and len(t) == 3 and t[1].kind == "name" and t[2].text == "=")

    def op_call(self, tok: Token) -> Op:
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
                if nxt.kind == "name" and nxt.text in self.type_names:
                    types[key] = self.dtype()
                elif nxt.kind == "name" and nxt.text in ("true", "false"):
                    self.next()
                    attrs[key] = Lit(DataType.BOOL, int(nxt.text == "true"))
                else:
                    negative = self.accept("-")
                    if self.peek().kind not in ("num", "int"):
                        self.error(self.peek(), "P002", f"attribute {key} must be a literal, found "
                                   f"{self._describe(self.peek())}", f"write a typed literal, e.g. <{key}=3u32>")
                    attrs[key] = self.literal(negative)
                if not self.accept(","):
                    break
            self.expect(">")
        self.expect("(", f"call the op: {tok.text}(args)")
        args: list[Expr] = []
        if not self.at(")"):
            args.append(self.grouped_expr())
            while self.accept(","):
                args.append(self.grouped_expr())
        self.expect(")")
        return Op(tok.text, tuple(args), tuple(attrs.items()), tuple(types.items()))


def parse_program(src: str, filename: str = "<text>", type_vars: Mapping[str, DataType] | None = None) -> Program:
    """Parse the text form of one program. Raises ParseError (line:column, Fix) on bad input.
    ``type_vars`` binds type variables as in compose (``T[]`` buffers, ``x as T``, ``T.zero``):
    the kernels of routines are written once for every type they take."""
    if len(src) > MAX_PROGRAM_TEXT:
        raise too_long(len(src), filename)
    return Parser(src, filename, type_vars).program()


def parse_expr(src: str, filename: str = "<expr>") -> Expr:
    """Parse a single expression (used for op ``compose`` definitions)."""
    parser = Parser(src, filename)
    expr = parser.expr()
    tok = parser.peek()
    if tok.kind != "eof":
        parser.error(tok, "P002", f"unexpected {parser._describe(tok)} after the expression", "remove it")
    return expr
