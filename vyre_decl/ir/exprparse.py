"""Parsing expressions of the text form, with the nesting limit counted where the stack is spent.

Binary operators are read with an explicit operator stack and prefix operators and ``as`` casts
in loops, so only brackets recurse: ``( )``, ``[ ]``, and the operands of op calls, ``select``,
``branch`` and ``atomic``, each one ``expr`` call (at most three Python frames: expr, operand,
and name or named). ``depth`` counts those calls and the enclosing blocks (``parser.py``);
``height`` is the height of the tree just built (a leaf is 1). ``P007`` is raised when either
would pass ``MAX_NESTING``: the depth bounds the parser's own stack (under ``FRAMES_PER_LEVEL``
frames a level), the depth above a node plus its height bounds the tree every later stage walks
(validation, printing, hashing, the emitter, the reference), however long an operator chain is.

With ``type_vars`` the parser reads the expressions of an op's ``compose`` definition for one
binding (``compose.py``): a type variable stands for its bound type (``x as T``, ``op<T=T>(...)``),
``3 as T`` is a constant of that type and ``T.max`` a symbolic one (``scalars.ELEMENTS``).
"""

from __future__ import annotations

import re
from typing import Final, Mapping

from . import sugar
from .diagnostics import message_and_fix
from .lexer import KEYWORDS, SUFFIX_PATTERN, Token, TokenCursor
from .nodes import AXES, Atomic, BufLen, Expr, Id, IdKind, Lit, Load, Op, Select, Var, Wait
from .byteview import view_type
from .ordering import parse_qualifiers
from .scalars import ELEMENTS, ScalarError, element_bits, parse_value
from .types import DataType

__all__ = ["ExprParser", "MAX_NESTING", "FRAMES_PER_LEVEL", "TYPES"]

MAX_NESTING: Final = 200  # blocks, brackets and tree levels (validation needs 64 blocks + 129 levels)
FRAMES_PER_LEVEL: Final = 3  # the most Python frames one level of nesting costs the parser
TYPES: Final = {t.value: t for t in DataType}
_ID_KINDS: Final = {k.value: k for k in IdKind}
_LITERAL_RE: Final = re.compile(r"(.*?)_?(" + SUFFIX_PATTERN + r")\Z")
_NARROW_RE: Final = re.compile(r"[0-9xXa-fA-F.]+?_?(u8|u16|i8|i16|f16|bf16)\Z")
_NUMBER: Final = ("num", "int")


class ExprParser(TokenCursor):
    """Expressions, with the depth and height bookkeeping; ``parser.Parser`` adds programs."""

    def __init__(self, src: str, filename: str, type_vars: Mapping[str, DataType] | None = None,
                 params: Mapping[str, str] | None = None) -> None:
        type_names = dict(TYPES)
        if type_vars:
            type_names.update(type_vars)
        super().__init__(src, filename, type_names, params)
        self.depth = 0
        self.height = 0  # of the expression just parsed
        self.grouped = 0  # inside ( ), [ ] or call arguments, where an expression may span lines
        # compose mode: type variables bound to their types (None: program text)
        self.type_vars = dict(type_vars) if type_vars is not None else None

    def enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_NESTING:
            self.too_deep(self.peek())

    def too_deep(self, tok: Token) -> None:
        self.error(tok, "P007", f"nested more than {MAX_NESTING} levels deep (blocks, brackets and "
                   "operators each count a level)", "split the expression with let bindings, or flatten the blocks")

    def made(self, expr: Expr, height: int, tok: Token) -> Expr:
        """``expr`` of tree height ``height``, built at the current depth (P007 past the limit)."""
        if self.depth + height - 1 > MAX_NESTING:
            self.too_deep(tok)
        self.height = height
        return expr

    def expr(self, grouped: bool = False) -> Expr:
        """Operands joined by binary operators, all left-associative: a chain costs no recursion,
        and each operator applied is a tree level (``made``)."""
        self.enter()
        self.grouped += grouped
        first = self.operand()
        tok = kind, text, _ = self.peek(skip_nl=self.grouped > 0)
        if kind == "punct" and text in sugar.BINARY_PRECEDENCE:
            first = self.chain(first, tok)
        self.grouped -= grouped
        self.depth -= 1
        return first

    def chain(self, first: Expr, tok: Token) -> Expr:
        """The rest of ``expr`` from its first binary operator ``tok`` on: operands wait on a stack
        until an operator that binds no tighter comes."""
        values, heights = [first], [self.height]
        pending: list[tuple[int, str]] = []  # operators waiting for their right operand
        precedence, binary = sugar.BINARY_PRECEDENCE, sugar.BINARY
        while True:
            kind, text, _ = tok
            level = precedence.get(text) if kind == "punct" else None
            while pending and (level is None or pending[-1][0] >= level):
                right, hr = values.pop(), heights.pop()
                values[-1] = self.made(Op(binary[pending.pop()[1]], (values[-1], right)), max(heights[-1], hr) + 1, tok)
                heights[-1] = self.height
            if level is None:
                break
            self.i += 1
            pending.append((level, text))
            values.append(self.operand())
            heights.append(self.height)
            tok = self.peek(skip_nl=self.grouped > 0)
        self.height = heights[0]
        return values[0]

    def operand(self) -> Expr:
        """Prefix operators, a primary, then ``as`` casts (a prefix binds tighter than a cast).
        Brackets recurse from here: ``(`` straight to ``expr``, the rest through one method."""
        prefixes: list[Token] = []
        negative = False
        tok = kind, text, _ = self.peek()
        if kind == "name":  # the common case first: a variable, a load, an id, a call
            self.i += 1
            expr: Expr = self.named(tok) if self.is_call(text) else self.name(tok)
            return self.casts(expr) if self.peek(skip_nl=self.grouped > 0)[1] == "as" else expr
        while kind == "punct" and text in sugar.UNARY:
            self.i += 1
            if text == "-" and self.peek()[0] in _NUMBER:
                negative = True
            else:
                prefixes.append(tok)
                self.made(Var(text), len(prefixes) + 1, tok)  # a long run of prefixes is refused as it is read
            tok = kind, text, _ = self.peek()
            if negative:
                break
        if kind in _NUMBER:
            expr = self.literal(negative)
        elif kind == "punct" and text == "(":
            self.i += 1
            expr = self.expr(grouped=True)
            self.expect(")")
        elif kind == "name":
            self.i += 1
            expr = self.named(tok) if self.is_call(text) else self.name(tok)
        else:
            self.error(tok, "P002", f"expected an expression, found {self.describe(tok)}",
                       "write a literal, a variable, buf[i], an op call or a parenthesised expression")
        for tok in reversed(prefixes):
            expr = self.made(Op(sugar.UNARY[tok[1]], (expr,)), self.height + 1, tok)
        return self.casts(expr)

    def casts(self, expr: Expr) -> Expr:
        """``expr`` followed by any ``as`` casts, each a tree level."""
        while self.peek(skip_nl=self.grouped > 0)[1] == "as":
            tok = self.next()
            expr = self.made(Op(sugar.CAST_OP, (expr,), types=((sugar.CAST_TYPE_VAR, self.dtype()),)),
                             self.height + 1, tok)
        return expr

    def is_call(self, text: str) -> bool:
        """Whether the name just read starts an op call, ``select``, ``branch`` or ``atomic``
        (``gid.x`` is an id and, in compose, ``T.max`` a constant, unless a call follows)."""
        if text in ("select", "branch", "atomic") or text.startswith("atomic."):
            return True
        if "." not in text or self.call_follows():
            return "." in text
        head, _, axis = text.partition(".")
        constant = self.type_vars is not None and head in self.type_names and axis in ELEMENTS
        view = view_type(axis) is not None and self.peek(skip_nl=False)[1] == "["  # x.u32[i]: a byte view
        return not constant and not view and not (head in _ID_KINDS and axis in AXES)

    def call_follows(self) -> bool:
        """Whether an op call's ``(`` or ``<name=`` comes next (so ``gid.x(...)`` is an op)."""
        t = self.toks[self.i: self.i + 3]
        return t[0][1] == "(" or (t[0][1] == "<" and len(t) == 3 and t[1][0] == "name" and t[2][1] == "=")

    def name(self, tok: Token) -> Expr:
        """What a name read as no call is: true/false, len(b), an id, a compose constant, a
        variable or a load."""
        text = tok[1]
        if text in ("true", "false"):
            return self.made(Lit(DataType.BOOL, int(text == "true")), 1, tok)
        if text == "len":
            self.expect("(")
            name = self.ident("a buffer name")
            self.expect(")")
            return self.made(BufLen(name), 1, tok)
        head, _, axis = text.partition(".")
        if view_type(axis) is not None and head not in self.type_names and self.peek(skip_nl=False)[1] == "[":
            self.i += 1  # x.u32[i]: a byte view (ir/byteview.py)
            index = self.expr(grouped=True)
            self.expect("]")
            return self.made(Load(head, index, view=view_type(axis)), self.height + 1, tok)
        if axis:  # is_call said: an id, or in compose a constant such as T.max or f32.inf
            if head in _ID_KINDS and axis in AXES:
                return self.made(Id(_ID_KINDS[head], AXES.index(axis)), 1, tok)
            return self.typed_constant(tok, axis, self.type_names[head])
        if text in KEYWORDS:
            self.error(tok, "P002", f"unexpected keyword {text!r}", "keywords cannot be used as names")
        if self.peek(skip_nl=False)[1] != "[":  # not across a newline: `x` then a line starting with [
            return self.made(Var(text), 1, tok)
        self.i += 1
        index = self.expr(grouped=True)
        self.expect("]")
        return self.made(Load(text, index), self.height + 1, tok)

    def atomic_form(self, tok: Token, op: Token) -> str:
        """What follows ``atomic[.order][.scope]`` (``tok``), from its next token ``op``: ``load``
        (``buf[i]``), ``wait`` (``wait(buf[i], value, bound)``) or ``rmw`` (an op call on a buffer
        element); P002 for anything else."""
        follows = self.peek()[1]
        if op[0] == "name" and "." not in op[1] and (follows == "[" or follows == "(" and op[1] == "wait"):
            return "load" if follows == "[" else "wait"
        if op[0] != "name" or "." not in op[1]:
            self.error(op, "P002", f"expected an atomic op id, wait(...) or a buffer element after {tok[1]}, found "
                       f"{self.describe(op)}", "write atomic primitive.atomic.add(buf[i], value), "
                       "atomic.acquire buf[i] or atomic.acquire wait(buf[i], 0u32, 1024u32)")
        return "rmw"

    def named(self, tok: Token) -> Expr:
        """An op call, ``select``/``branch`` or ``atomic``, whose operands are parsed here."""
        text, args = tok[1], []
        if text == "atomic" or text.startswith("atomic."):  # parsed here: a level costs no more frames
            found = parse_qualifiers(text)
            if isinstance(found, str):
                self.error(tok, "P014", found, "write atomic, atomic.acquire, atomic.release.workgroup, ...")
            order, scope = found
            op = self.next()
            form = self.atomic_form(tok, op)
            if form == "load":
                self.i += 1
                index = self.expr(grouped=True)
                self.expect("]")
                return self.made(Load(op[1], index, order, scope), self.height + 1, tok)
            self.expect("(")
            buf = self.ident("a buffer name")
            self.expect("[")
            args.append(self.expr(grouped=True))
            height = self.height
            self.expect("]")
            while self.accept(","):
                args.append(self.expr(grouped=True))
                height = max(height, self.height)
            self.expect(")")
            if form == "rmw":
                return self.made(Atomic(op[1], buf, args[0], tuple(args[1:]), order, scope), height + 1, tok)
            if len(args) != 3:
                self.error(op, "P002", f"wait takes a buffer element, a value and a bound; found {len(args) - 1} "
                           "operand(s) after the element", "write atomic.acquire wait(flags[i], 0u32, 1024u32)")
            return self.made(Wait(buf, args[0], args[1], args[2], order, scope), height + 1, tok)
        if text.startswith("workgroup."):  # a statement-level building block (wgcollect.py)
            self.error(tok, "V051", f"{text} inside an expression: a workgroup collective is a statement",
                       f"bind it first: let r = {text}(...), then use r")
        attrs, types = self.op_header() if "." in text else ({}, {})
        self.expect("(", f"call the op: {text}(args)")
        height = 0
        if not self.at(")"):
            args.append(self.expr(grouped=True))
            height = self.height
            while self.accept(","):
                args.append(self.expr(grouped=True))
                height = max(height, self.height)
        self.expect(")")
        if "." in text:
            return self.made(Op(text, tuple(args), tuple(attrs.items()), tuple(types.items())), height + 1, tok)
        if len(args) != 3:
            self.error(tok, "P002", f"{text} takes 3 operands, found {len(args)}",
                       f"write {text}(condition, if_true, if_false)")
        return self.made(Select(args[0], args[1], args[2], lazy=text == "branch"), height + 1, tok)

    def op_header(self) -> tuple[dict[str, Lit], dict[str, DataType]]:
        """An op call's ``<T=type, name=literal, ...>``, if any: its attributes and type arguments."""
        types: dict[str, DataType] = {}
        attrs: dict[str, Lit] = {}
        if not self.accept("<"):
            return attrs, types
        while True:
            key_tok = self.peek()
            key = self.ident("a type variable or attribute name")
            if key in types or key in attrs:
                self.error(key_tok, "P006", f"{key} is given twice", "give each type argument or attribute once")
            self.expect("=")
            kind, text, _ = self.peek()
            if kind == "name" and text in self.type_names:
                types[key] = self.dtype()
            elif kind == "name" and text in ("true", "false"):
                self.next()
                attrs[key] = Lit(DataType.BOOL, int(text == "true"))
            else:
                negative = self.accept("-")
                if self.peek()[0] not in _NUMBER:
                    self.error(self.peek(), "P002", f"attribute {key} must be a literal, found "
                               f"{self.describe(self.peek())}", f"write a typed literal, e.g. <{key}=3u32>")
                attrs[key] = self.literal(negative)
            if not self.accept(","):
                break
        self.expect(">")
        return attrs, types

    def literal(self, negative: bool = False) -> Lit:
        tok = kind, text, _ = self.next()
        sign = "-" if negative else ""
        if kind == "int" and self.type_vars is not None and self.peek(skip_nl=self.grouped > 0)[1] == "as":
            self.i += 1  # compose: `3 as T` is the constant 3 of T's type
            return self.typed_constant(tok, sign + text, self.dtype())
        if kind == "int":
            narrow = _NARROW_RE.match(text)
            if narrow:
                wide = TYPES[narrow.group(1)].value_type
                self.error(tok, "P003", f"{narrow.group(1)} has no literals: narrow types exist only in buffers",
                           f"write a {wide} literal; a store to a {narrow.group(1)} buffer narrows it")
            if self.type_vars:  # a composition or kernel over type variables: the constant follows the binding
                var = next(iter(self.type_vars))
                self.error(tok, "P004", f"literal {text} has no type",
                           f"write `{text} as {var}`: the constant {text} of the type {var} stands for in each binding")
            self.error(tok, "P004", f"literal {text} has no type suffix",
                       f"write {text}u32, {text}i32, {text}f32, ...")
        m = _LITERAL_RE.match(text)
        assert m is not None
        body, dtype = m.group(1), TYPES[m.group(2)]
        if negative and body.startswith("bits("):
            self.error(tok, "P003", "a bits(...) literal cannot be negated", "flip the sign bit inside bits(...)")
        try:
            lit = Lit(dtype, parse_value(dtype, sign + body))
        except ScalarError as exc:
            msg, fix = message_and_fix(exc)
            self.error(tok, "P003", f"bad literal {sign}{text}: {msg}", fix)
        self.height = 1
        return lit

    def typed_constant(self, tok: Token, body: str, dtype: DataType) -> Lit:
        if not dtype.is_value_type:
            self.error(tok, "P005", f"{dtype} has no constants", f"use its value type {dtype.value_type}")
        try:
            lit = Lit(dtype, element_bits(dtype, body))
        except ScalarError as exc:
            msg, fix = message_and_fix(exc)
            self.error(tok, "P003", f"bad constant {body} of type {dtype}: {msg}", fix)
        self.height = 1
        return lit
