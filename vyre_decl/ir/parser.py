"""Parsing the text form: programs (their buffers, blocks and statements) and single expressions.

Expressions are read by ``exprparse.ExprParser``, which also keeps the nesting limit (P007): a
block costs a level, as a bracket does. With ``type_vars`` (routine kernels, op ``compose``
definitions) a type variable stands for its bound type.
"""

from __future__ import annotations

import json
from typing import Final, Mapping

from .diagnostics import Diagnostic
from .exprparse import MAX_NESTING, ExprParser
from .lexer import KEYWORDS, ParseError, Token
from .nodes import MAX_RESIDENT
from .nodes import Access, Assign, Atomic, Barrier, Block, Break, BufferDecl, Copy, Expr, If, Let, Loop, Node, Program, Region, \
    Return, Store, Wait
from .ordering import parse_qualifiers
from .types import DataType
from .walk import subexprs
from .wgcollect import KINDS, arity, collective_problem, expand

__all__ = ["Parser", "parse_program", "parse_expr", "read_program", "MAX_NESTING", "MAX_PROGRAM_TEXT"]

_ACCESS: Final = {a.value: a for a in Access}

# the longest program text parsed (characters; for a file, bytes), as for op and routine files: 128
# bytes for each of the 8,192 statements validation allows. Parsing is linear but pure Python (1.3
# to 7 us a byte on a slow 2-core machine, by the shape of the text), so this bounds it to seconds.
MAX_PROGRAM_TEXT: Final = 1 << 20


def too_long(size: int, where: str) -> ParseError:
    """P011: program text over ``MAX_PROGRAM_TEXT``."""
    return ParseError(Diagnostic("P011", f"the program text is {size:,} characters or bytes long, over the limit "
                                 f"of {MAX_PROGRAM_TEXT:,}", where, "split the work into several programs (or build "
                                 "it with ProgramBuilder, whose size validation bounds by statements)"))


class Parser(ExprParser):
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
        self.workgroup = (sizes[0], sizes[1], sizes[2])  # for the collectives (wgcollect.py)
        large = self.accept("workgroup_memory")
        if large:  # workgroup_memory(large): docs/semantics.md, "Large workgroup memory"
            self.expect("(")
            if (tok := self.next())[1] != "large":
                self.error(tok, "P015", f"workgroup_memory takes 'large', found {self.describe(tok)}",
                           "write workgroup_memory(large), or leave it out for the 48 KiB every GPU has")
            self.expect(")")
        resident = self.resident()
        self.expect("{")
        buffers: list[BufferDecl] = []
        self.decls = buffers
        while self.at("buffer"):
            buffers.append(self.buffer())
        body = self.statements()
        self.expect("}", "close the program with '}'")
        tok = self.peek()
        if tok[0] != "eof":
            self.error(tok, "P002", f"unexpected {self.describe(tok)} after the program", "remove it")
        return Program(tuple(buffers), (sizes[0], sizes[1], sizes[2]), body, name=name,
                       large_workgroup_memory=large, resident=resident)

    def resident(self) -> int:
        """``resident(N)`` after the workgroup size (docs/semantics.md, "Residency"), or 0."""
        if not self.accept("resident"):
            return 0
        self.expect("(")
        tok = self.peek()
        n = self.integer("a workgroup count")
        if not 1 <= n <= MAX_RESIDENT:
            self.error(tok, "P016", f"resident takes a whole number of workgroups from 1 to {MAX_RESIDENT}, found {n}",
                       "write resident(2) for two workgroups a multiprocessor, or leave it out")
        self.expect(")")
        return n

    def buffer(self) -> BufferDecl:
        self.expect("buffer")
        name = self.ident("a buffer name")
        self.expect(":")
        tok = self.next()
        if tok[1] not in _ACCESS:
            self.error(tok, "P002", f"expected an access mode, found {self.describe(tok)}",
                       f"use one of {', '.join(_ACCESS)}")
        access = _ACCESS[tok[1]]
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

    # --- statements: a nested block costs three frames (statements, if_stmt or statement, block)
    def statements(self) -> tuple[Node, ...]:
        body: list[Node] = []
        while not self.at("}") and self.peek()[0] != "eof":
            body.append(self.if_stmt() if self.at("if") else self.statement())
            tok, prev = self.peek(skip_nl=False), self.toks[self.i - 1]
            ended = prev[0] == "nl" or (prev[0] == "punct" and prev[1] == "}")
            if not ended and tok[0] not in ("nl", "eof") and tok[1] != "}":
                self.error(tok, "P002", f"expected the end of the statement, found {self.describe(tok)}",
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
        tok = kind, text, _ = self.peek()
        if kind == "punct" and text == "{":
            return Block(self.block())
        if kind == "name" and (text == "atomic" or text.startswith("atomic.")):
            return self.atomic_store(tok)
        if kind != "name" or (text in KEYWORDS and text not in _STATEMENTS):
            self.error(tok, "P002", f"expected a statement, found {self.describe(tok)}",
                       "statements are let, assignment, store, if, loop, return, barrier, region or a { block }")
        self.i += 1
        if text == "let":
            name = self.ident("a variable name")
            self.expect("=")
            if self.peek()[1].startswith("workgroup."):
                return self.collective(name, True)
            return Let(name, self.expr())
        if text == "loop":
            var = self.ident("a loop variable")
            self.expect("in")
            start = self.expr()
            self.expect("..", "write the range as START .. END")
            end = self.expr()
            unroll = self.accept("unroll")
            return Loop(var, start, end, self.block(), unroll)
        if text == "return":
            return Return()
        if text == "break":
            return Break()
        if text == "barrier":
            return Barrier()
        if text == "region":
            return self.region()
        if "." not in text:
            if self.accept("["):
                index = self.expr(grouped=True)
                if self.at(".."):
                    return self.vector_copy(text, index)
                self.expect("]")
                self.expect("=", "a store is written buf[index] = value")
                return Store(text, index, self.expr())
            self.expect("=", "an assignment is written name = value")
            if self.peek()[1].startswith("workgroup."):
                return self.collective(text, False)
            return Assign(text, self.expr())
        self.error(tok, "P002", f"expected a statement, found {self.describe(tok)}",
                   "statements are let, assignment, store, if, loop, return, barrier, region or a { block }")

    def vector_width(self) -> tuple[int, bool]:
        """``..+ N]`` (or ``..* N]``, an index counting whole vectors) after the index of a vector
        access: its width N and whether the index counts vectors."""
        self.expect("..")
        units = self.peek()[1] == "*"
        self.expect("*" if units else "+", "a vector access is written buf[index ..+ 4] (or buf[vector ..* 4])")
        width = self.integer("a vector width (2 or 4)")
        self.expect("]")
        return width, units

    def vector_copy(self, dst: str, dst_index: Expr) -> Copy:
        """``dst[i ..+ N] = src[j ..+ N]``: a vector copy (the widths on the two sides agree);
        ``..* N`` on a side: its index counts vectors of N elements."""
        tok = self.peek()
        width, dst_units = self.vector_width()
        self.expect("=", "a vector copy is written dst[i ..+ 4] = src[j ..+ 4]")
        src = self.ident("a buffer name (a vector copy reads src[j ..+ N])")
        self.expect("[", "a vector copy is written dst[i ..+ 4] = src[j ..+ 4]")
        src_index = self.expr(grouped=True)
        src_width, src_units = self.vector_width()
        if src_width != width:
            self.error(tok, "P002", "the two sides of a vector copy have different widths",
                       "write the same width on both sides: dst[i ..+ 4] = src[j ..+ 4]")
        return Copy(dst, dst_index, src, src_index, width, dst_units, src_units)

    def atomic_store(self, tok: Token) -> Store:
        """``atomic[.order][.scope] buf[index] = value``: an atomic store."""
        found = parse_qualifiers(text := tok[1])
        if isinstance(found, str):
            self.error(tok, "P014", found, "write atomic buf[i] = v or atomic.release buf[i] = v (scope: .workgroup)")
        self.i += 1
        name = self.ident("a buffer name")
        if not self.at("["):
            self.error(self.peek(), "P002", f"a statement starting with {text} is an atomic store, buf[index] = value; "
                       f"found {self.describe(self.peek())} after {name}", f"write {text} {name}[i] = value, or bind "
                       f"an atomic expression with let: let old = {text} primitive.atomic.add(...)")
        self.i += 1
        index = self.expr(grouped=True)
        self.expect("]")
        self.expect("=", "an atomic store is written atomic.release buf[index] = value")
        return Store(name, index, self.expr(), *found)

    def region(self) -> Region:
        gen = self.next()
        if gen[0] != "str":
            self.error(gen, "P002", f"expected a quoted generator name, found {self.describe(gen)}",
                       'write region "name" { ... }')
        try:
            name = json.loads(gen[1])
        except ValueError as exc:  # a bad escape or a raw control character in the string
            self.error(gen, "P002", f"the region name {gen[1][:40]} is not a valid string: {exc.args[0]}",
                       'write a plain string such as "reduce.sum"; escapes as in JSON')
        if not isinstance(name, str):
            self.error(gen, "P002", "a region name must be a string", 'write a string such as "reduce.sum"')
        return Region(name, self.block())

    def collective(self, dest: str, declare: bool) -> Region:
        """``workgroup.KIND(...)`` after ``let dest =`` or ``dest =``: the region it expands to
        (wgcollect.py); V051 for a malformed one, V052 for its scratch array."""
        tok = self.next()
        kind = tok[1].partition(".")[2]
        forms = "e.g. let r = workgroup.reduce(primitive.math.add, v, part)"
        if kind not in KINDS:
            self.error(tok, "V051", f"{tok[1]} is no workgroup collective", f"write reduce, inclusive_scan, "
                       f"exclusive_scan or broadcast, {forms}")
        takes_op, count = arity(kind)
        self.expect("(", f"call it: {forms}")
        op = None
        if takes_op:
            op_tok = self.next()
            if op_tok[0] != "name" or "." not in op_tok[1] or not self.at(","):
                self.error(op_tok, "V051", f"{tok[1]} takes an op id first, found {self.describe(op_tok)}",
                           f"name a binary op (T, T) -> T without calling it: {forms}")
            op = op_tok[1]
            self.expect(",")
        operands = [self.expr(grouped=True)]
        for _ in range(count - 1):
            self.expect(",", f"{tok[1]} takes {count} operands after the op (see docs/text-form.md)")
            operands.append(self.expr(grouped=True))
        scratch = self.ident("a workgroup array") if self.accept(",") else None
        self.expect(")", f"close the call: {forms}")
        if any(isinstance(e, (Atomic, Wait)) for o in operands[1:] for e in subexprs(o)):
            self.error(tok, "V051", f"an atomic in an operand of {tok[1]} after its value (read where used)",
                       "bind the atomic's result with let first and pass the variable")
        decl = next((b for b in self.decls if b.name == scratch), None)
        problem = collective_problem(kind, scratch, decl, self.workgroup)
        if problem is not None:
            self.error(tok, *problem)
        return expand(kind, dest, declare, op, operands, scratch, self.workgroup, decl.count if decl else 0)

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


_STATEMENTS: Final = frozenset({"let", "loop", "return", "break", "barrier", "region"})


def read_program(path: str) -> str:
    """The text of a ``.vyre`` file (UTF-8): P009 if it cannot be read, P010 if it is not UTF-8,
    P011 if it is over ``MAX_PROGRAM_TEXT`` bytes (read no further), each with the path and a Fix."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_PROGRAM_TEXT + 1)
    except OSError as exc:
        raise ParseError(Diagnostic("P009", f"cannot read the program file: {exc.strerror or exc}", str(path),
                                    "check the path and its permissions")) from None
    if len(raw) > MAX_PROGRAM_TEXT:
        raise too_long(len(raw), str(path))
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ParseError(Diagnostic("P010", f"the file is not UTF-8 (byte 0x{raw[exc.start]:02x} at offset "
                                    f"{exc.start})", str(path), "save the file as UTF-8")) from None


def parse_program(src: str, filename: str = "<text>", type_vars: Mapping[str, DataType] | None = None,
                  params: Mapping[str, str] | None = None) -> Program:
    """Parse the text form of one program. Raises ParseError (line:column, Fix) on bad input.
    ``type_vars`` binds type variables as in compose (``T[]`` buffers, ``x as T``, ``T.zero``):
    the kernels of routines are written once for every type they take. ``params`` gives the
    values of a routine kernel's ``$name`` parameters, each one name (``lexer.fill_params``)."""
    if len(src) > MAX_PROGRAM_TEXT:
        raise too_long(len(src), filename)
    program = Parser(src, filename, type_vars, params).program()
    if filename != "<text>":  # a named text: validation problems are located in it (sourcemap.py)
        program._source.append((filename, src, type_vars, params))
    return program


def parse_expr(src: str, filename: str = "<expr>") -> Expr:
    """Parse a single expression (used for op ``compose`` definitions)."""
    parser = Parser(src, filename)
    expr = parser.expr()
    tok = parser.peek()
    if tok[0] != "eof":
        parser.error(tok, "P002", f"unexpected {parser.describe(tok)} after the expression", "remove it")
    return expr
