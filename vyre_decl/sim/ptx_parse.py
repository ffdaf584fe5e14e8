"""Parsing PTX text into a syntax tree: the module header, entries with their parameters and
declarations, labels and instructions (guard, opcode, modifiers, operands, source line and the
emitter's nearest preceding comments). Meaning is given later, by ``ptx_decode``."""

from __future__ import annotations

import re

from .ptx_ast import Addr, Entry, Instr, Label, ModuleAst, Operand, Pair, Reg, Sym, Var, Vec
from .ptx_lex import FAST, LABEL, SIZES, Tok, line_tokens, number, operands_of, parse_int, strip_block_comments
from .ptx_types import PtxError

__all__ = ["parse"]


# ============================================================================ the parser
class Parser:
    def __init__(self, text: str) -> None:
        self.lines = strip_block_comments(text).split("\n")
        self.raw = text.split("\n")
        self.li = 0  # the next line to tokenize
        self.buf: list[Tok] = []
        self.bi = 0
        self.pending: list[str] = []  # comments waiting for their token
        self.stmt_comment = ""
        self.op_comment = ""
        self._context = ""

    # --- cursor (lines are tokenized when reached)
    def look(self, k: int = 0) -> Tok | None:
        while self.bi + k >= len(self.buf):
            if self.li >= len(self.lines):
                return None
            if self.bi == len(self.buf):
                self.buf, self.bi = [], 0
            self.buf += line_tokens(self.lines[self.li], self.li + 1, self.pending)
            self.li += 1
        return self.buf[self.bi + k]

    def at(self, text: str) -> bool:
        tok = self.look()
        return tok is not None and tok.text == text

    def next(self) -> Tok:
        tok = self.look()
        if tok is None:
            raise PtxError(len(self.lines), "unexpected end of the module")
        self.bi += 1
        for c in tok.comments:
            self.note(c)
        return tok

    def fast_line(self) -> Instr | Label | None:
        """The next line as a label or a simple instruction, when the cursor is at a line start."""
        if self.bi < len(self.buf):
            return None
        while self.li < len(self.lines):  # blank and comment-only lines
            stripped = self.lines[self.li].strip()
            if stripped and not stripped.startswith("//"):
                break
            if stripped:
                self.pending.append(stripped[2:].strip())
            self.li += 1
        if self.li >= len(self.lines):
            return None
        line = self.lines[self.li]
        m = FAST.match(line)
        lab = None if m else LABEL.match(line)
        if m is None and lab is None:
            return None
        operands = operands_of(m.group(4), self.li + 1) if m else ()
        if operands is None:
            return None
        for c in self.pending:
            self.note(c)
        self.pending.clear()
        self.li += 1
        if lab is not None:
            return Label(self.li, lab.group(1))
        neg, pred, op, ops, _ = m.groups()  # type: ignore[union-attr]
        opcode, *mods = op.split(".")
        text = line[:line.find("//")] if "//" in line else line
        return Instr(self.li, (pred, neg == "!") if pred else None, opcode, tuple(mods), operands, text.strip(),
                     self.context())

    def expect(self, text: str) -> Tok:
        tok = self.next()
        if tok.text != text:
            raise PtxError(tok.line, f"expected {text!r}, found {tok.text!r}")
        return tok

    def note(self, comment: str) -> None:
        if comment.startswith("op "):
            self.op_comment = comment
        else:
            self.stmt_comment, self.op_comment = comment, ""
        self._context = " | ".join(c for c in (self.stmt_comment, self.op_comment) if c)

    def context(self) -> str:
        return self._context

    def until_semicolon(self) -> list[Tok]:
        out: list[Tok] = []
        while True:
            tok = self.next()
            if tok.text == ";":
                return out
            if tok.text in ("{", "}"):
                raise PtxError(tok.line, f"expected ';' before {tok.text!r}")
            out.append(tok)

    # --- the module
    def module(self) -> ModuleAst:
        mod = ModuleAst()
        while self.look() is not None:
            tok = self.next()
            self.stmt_comment = self.op_comment = self._context = ""
            if tok.text == ".version":
                mod.version = self.version(tok)
            elif tok.text == ".target":
                self.target(tok, mod)
            elif tok.text == ".address_size":
                mod.address_size = parse_int(self.next().text, tok.line)
                if mod.address_size != 64:
                    raise PtxError(tok.line, ".address_size 32 is not modelled (64-bit addresses only)")
            elif tok.text in (".visible", ".weak", ".extern"):
                continue
            elif tok.text == ".entry":
                mod.entries.append(self.entry(tok))
            elif tok.text == ".func":
                raise PtxError(tok.line, "device functions (.func) are not modelled; inline them into the entry")
            elif tok.text == ".shared":
                mod.shared.append(self.var(tok, extern=False))
            elif tok.text in (".file", ".section", ".pragma", ".loc"):
                self.skip_directive(tok)
            elif tok.text in (".global", ".const"):
                raise PtxError(tok.line, f"module-scope {tok.text} variables are not modelled")
            else:
                raise PtxError(tok.line, f"unexpected {tok.text!r} at module scope")
        if mod.version == (0, 0):
            raise PtxError(1, "the module has no .version directive")
        if not mod.target_text:
            raise PtxError(1, "the module has no .target directive")
        return mod

    def version(self, tok: Tok) -> tuple[int, int]:
        num = self.next()
        m = re.fullmatch(r"(\d+)\.(\d+)", num.text)
        if m is None:
            raise PtxError(tok.line, f".version {num.text!r} is not MAJOR.MINOR")
        return int(m.group(1)), int(m.group(2))

    def target(self, tok: Tok, mod: ModuleAst) -> None:
        name = self.next()
        m = re.fullmatch(r"sm_(\d+)([af]?)", name.text)
        if m is None:
            raise PtxError(tok.line, f".target {name.text!r} is not a supported target (sm_NN)")
        mod.target, mod.target_text = int(m.group(1)), name.text
        while self.at(","):
            self.next()
            self.next()  # texmode_unified, map_f64_to_f32, debug: accepted, nothing to model

    def skip_directive(self, tok: Tok) -> None:
        while self.look() is not None:
            nxt = self.look()
            assert nxt is not None
            if nxt.line != tok.line or nxt.text.startswith("."):
                return
            self.next()
            if nxt.text == ";":
                return

    # --- an entry
    def entry(self, tok: Tok) -> Entry:
        name = self.next()
        if name.kind != "id":
            raise PtxError(name.line, f"expected the entry's name, found {name.text!r}")
        ent = Entry(name.text, name.line)
        if self.at("("):
            self.next()
            while not self.at(")"):
                p = self.next()
                if p.text != ".param":
                    raise PtxError(p.line, f"expected .param in {ent.name}'s parameter list, found {p.text!r}")
                ent.params.append(self.var(p, extern=False, terminator=(",", ")")))
                if self.at(","):
                    self.next()
            self.next()
        while self.look() is not None and not self.at("{"):
            d = self.next()
            if d.text in (".maxntid", ".reqntid", ".minnctapersm", ".maxnreg", ".maxclusterrank", ".reqnctapercluster"):
                ent.directives[d.text] = self.int_list()
            elif d.text == ";":
                raise PtxError(d.line, f"the entry {ent.name} has no body (a declaration alone is not modelled)")
            else:
                raise PtxError(d.line, f"unexpected {d.text!r} before the body of {ent.name}")
        self.expect("{")
        self.stmt_comment = self.op_comment = self._context = ""
        self.body(ent)
        return ent

    def int_list(self) -> tuple[int, ...]:
        vals = [parse_int(self.next().text, 0)]
        while self.at(","):
            self.next()
            vals.append(parse_int(self.next().text, 0))
        return tuple(vals)

    def var(self, tok: Tok, extern: bool, terminator: tuple[str, ...] = (";",)) -> Var:
        """``.shared/.local/.param [.align N] .type name[N]...`` up to the terminator."""
        align, ptype, name, count, dims = 0, "", "", 1, False
        while True:
            t = self.next()
            if t.text == ".align":
                align = parse_int(self.next().text, t.line)
            elif t.text in (".ptr", ".global", ".shared", ".const", ".local"):
                continue
            elif t.text.startswith(".") and t.text[1:] in SIZES:
                ptype = t.text[1:]
            elif t.text == "[":
                dims = True
                if self.at("]"):
                    count = 0
                else:
                    count *= parse_int(self.next().text, t.line)
                self.expect("]")
            elif t.text == "=":
                raise PtxError(t.line, "variable initializers are not modelled")
            elif t.kind == "id" and not name:
                name = t.text
            else:
                raise PtxError(t.line, f"unexpected {t.text!r} in the declaration of a {tok.text} variable")
            nxt = self.look()
            if nxt is not None and nxt.text in terminator:
                if terminator == (";",):
                    self.next()
                break
        if not ptype or not name:
            raise PtxError(tok.line, f"a {tok.text} declaration needs a type and a name")
        size = SIZES[ptype]
        return Var(tok.line, name, ptype, align or size, size * count if dims or count != 1 else size,
                   extern or (dims and count == 0))

    def body(self, ent: Entry) -> None:
        depth = 1
        while depth:
            fast = self.fast_line()
            if fast is not None:
                ent.body.append(fast)
                continue
            tok = self.look()
            if tok is None:
                raise PtxError(ent.line, f"the body of {ent.name} is never closed")
            if tok.text in ("{", "}"):
                self.next()
                depth += 1 if tok.text == "{" else -1
            elif tok.kind == "id" and (nxt := self.look(1)) is not None and nxt.text == ":":
                self.next()
                self.next()
                ent.body.append(Label(tok.line, tok.text))
            elif tok.text.startswith(".") and tok.kind == "id":
                self.declaration(ent)
            else:
                ent.body.append(self.instruction())

    def declaration(self, ent: Entry) -> None:
        tok = self.next()
        if tok.text == ".reg":
            self.registers(tok, ent)
        elif tok.text == ".shared":
            ent.shared.append(self.var(tok, extern=False))
        elif tok.text == ".extern":
            space = self.next()
            if space.text != ".shared":
                raise PtxError(space.line, f".extern {space.text} is not modelled")
            ent.shared.append(self.var(space, extern=True))
        elif tok.text == ".local":
            ent.local.append(self.var(tok, extern=False))
        elif tok.text in (".pragma", ".loc", ".file"):
            self.until_semicolon()
        else:
            raise PtxError(tok.line, f"the directive {tok.text} is not modelled inside an entry")

    def registers(self, tok: Tok, ent: Entry) -> None:
        rest = self.until_semicolon()
        types = [t.text[1:] for t in rest if t.text.startswith(".")]
        if len(types) != 1 or types[0] not in SIZES or types[0] == "b128":
            raise PtxError(tok.line, f"unsupported register declaration {' '.join(t.text for t in rest)!r}")
        rtype = types[0]
        names = rest[1:]
        i = 0
        while i < len(names):
            name = names[i].text
            if names[i].kind != "id":
                raise PtxError(tok.line, f"unexpected {name!r} in a .reg declaration")
            count = 0
            if i + 1 < len(names) and names[i + 1].text == "<":
                count = parse_int(names[i + 2].text, tok.line)
                i += 3
            new = [f"{name}{k}" for k in range(count)] if count else [name]
            for n in new:
                if n in ent.regs:
                    raise PtxError(tok.line, f"register {n} is declared twice")
                ent.regs[n] = rtype
            ent.reg_decls.append((rtype, len(new)))
            i += 1
            if i < len(names) and names[i].text == ",":
                i += 1

    # --- an instruction
    def instruction(self) -> Instr:
        guard = None
        first = self.next()
        if first.text == "@":
            neg = self.at("!")
            if neg:
                self.next()
            pred = self.next()
            guard = (pred.text, neg)
            first = self.next()
        if first.kind != "id":
            raise PtxError(first.line, f"expected an instruction, found {first.text!r}")
        context = self.context()
        opcode, *mods = first.text.split(".")
        operands: list[Operand] = []
        if not self.at(";"):
            operands.append(self.operand())
            while self.at(","):
                self.next()
                operands.append(self.operand())
        end = self.next()
        if end.text != ";":
            raise PtxError(first.line, f"expected ';' after {first.text}'s operands, found {end.text!r}")
        text = self.raw[first.line - 1].split('//')[0].strip()
        return Instr(first.line, guard, opcode, tuple(mods), tuple(operands), text, context)

    def operand(self) -> Operand:
        tok = self.next()
        if tok.text == "{":
            items = [self.operand()]
            while self.at(","):
                self.next()
                items.append(self.operand())
            self.expect("}")
            return Vec(tuple(items))
        if tok.text == "[":
            return self.address(tok)
        if tok.text == "!":
            return Reg(self.next().text, negated=True)
        if tok.text == "-" and (num := self.look()) is not None and num.kind == "num":
            return number(self.next().text, tok.line, negative=True)
        if tok.kind == "num":
            return number(tok.text, tok.line)
        if tok.kind != "id":
            raise PtxError(tok.line, f"unexpected {tok.text!r} as an operand")
        if self.at("|"):
            self.next()
            return Pair(tok.text, self.next().text)
        if self.at("+") or self.at("-"):
            sign = -1 if self.next().text == "-" else 1
            return Sym(tok.text, sign * parse_int(self.next().text, tok.line))
        return Reg(tok.text) if tok.text.startswith("%") or tok.text == "_" else Sym(tok.text)

    def address(self, tok: Tok) -> Addr:
        base: str | None = None
        offset = 0
        first = self.next()
        if first.kind == "id":
            base = first.text
        elif first.kind == "num":
            offset = parse_int(first.text, tok.line)
        else:
            raise PtxError(tok.line, f"unexpected {first.text!r} in an address")
        while not self.at("]"):
            op = self.next()
            if op.text not in "+-":
                raise PtxError(tok.line, f"unexpected {op.text!r} in an address (only [reg+imm] is modelled)")
            value = parse_int(self.next().text, tok.line)
            offset += value if op.text == "+" else -value
        self.next()
        return Addr(base, offset)


def parse(text: str) -> ModuleAst:
    """The syntax tree of a PTX module; PtxError naming the line for anything malformed."""
    return Parser(text).module()
