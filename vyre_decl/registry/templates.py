"""PTX templates: parsed into instructions when an op file loads, filled by our own substitution.

A template is a sequence of PTX instruction statements, each ``[@[!]{pred}] opcode operands;``.
The opcode is a whitelisted arithmetic, logic, comparison, move or conversion instruction whose
modifiers may come from type placeholders (``add{T.rn}.{T}``); operands are placeholders of the
op's inputs, attributes, result and declared temporaries, immediates, or type-derived immediates
(``{T.max}``). Atomic ops alone may use ``atom{space}...`` with the address operand ``[{addr}]``
and the result ``{old}``. Everything else is rejected at load time with an R-code: directives,
labels and branches, ``ret``/``exit``/``trap``/``brkpt``, braces, comments, memory instructions,
registers that no placeholder introduces, and placeholders with a format spec, conversion, index
or attribute. Every instruction writes its first operand, which must be the result or a
temporary; the result must be written, and nothing is read before it is written.

Type placeholders, for a type variable ``T`` bound to a type (see ``TYPE_PROPERTIES``)::

    {T}            u32 s32 u64 s64 f32 f64 pred      {T.b}      b32 b64 (pred for bool)
    {T.u} {T.s}    u32/u64, s32/s64 of T's width     {T.rn}     .rn for floats, nothing otherwise
    {T.width}      32 or 64                          {T.shift_mask}  31 or 63
    {T.zero} {T.one} {T.min} {T.max} {T.all_ones} {T.inf} {T.neg_inf} {T.neg_zero} {T.nan}
                   the symbolic elements as immediates of T
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Final, Mapping

from ..ir.diagnostics import message_and_fix
from ..ir.scalars import ELEMENTS, ScalarError, element_bits
from ..ir.types import DataType
from .model import Template

__all__ = [
    "ATOMIC_PLACEHOLDERS",
    "COLLECTIVE_PLACEHOLDERS",
    "COLLECTIVE_OPCODES",
    "BIT_REGISTERS",
    "PTX_TYPE",
    "PTX_BITS",
    "TYPE_PROPERTIES",
    "ALLOWED_OPCODES",
    "NEEDS_SM",
    "ParsedTemplate",
    "Template",
    "TemplateError",
    "parse_template",
    "instantiate",
    "immediate",
]

# Placeholders the emitter fills in atomic templates: the element address (u64, or u32 in shared
# memory), the state space (.global / .shared) and the old value, which is the result.
ATOMIC_PLACEHOLDERS: Final = ("addr", "space", "old")

# Placeholders the emitter fills in the templates of collective ops (trait "collective"): the
# invocation's lane in its subgroup (u32) and the mask of the subgroup's present lanes (b32: the
# lanes that have not returned), the membermask of every shfl/vote/match/redux .sync it uses.
COLLECTIVE_PLACEHOLDERS: Final = ("lane", "members")
# what a collective op's template may use beyond ALLOWED_OPCODES
COLLECTIVE_OPCODES: Final = frozenset(("shfl", "vote", "match", "redux"))

# Untyped PTX registers a template may declare as temporaries, for instructions whose operands are
# bit types only (cvt.rn.f16x2.f32 writes a .b32): temps = { t = "b32" }.
BIT_REGISTERS: Final = ("b32", "b64")

PTX_TYPE: Final[Mapping[DataType, str]] = {
    DataType.BOOL: "pred", DataType.U32: "u32", DataType.I32: "s32", DataType.U64: "u64",
    DataType.I64: "s64", DataType.F32: "f32", DataType.F64: "f64",
}
PTX_BITS: Final[Mapping[DataType, str]] = {t: ("pred" if t is DataType.BOOL else f"b{t.bits}") for t in PTX_TYPE}

# type properties: opcode modifiers, and numbers used as operands (None: no value for that type)
_MODIFIERS: Final[Mapping[str, Callable[[DataType], str | None]]] = {
    "": lambda t: PTX_TYPE[t],
    "b": lambda t: PTX_BITS[t],
    "u": lambda t: None if t is DataType.BOOL else f"u{t.bits}",
    "s": lambda t: None if t is DataType.BOOL else f"s{t.bits}",
    "rn": lambda t: ".rn" if t.is_float else "",
}
_NUMBERS: Final[Mapping[str, Callable[[DataType], str | None]]] = {
    "width": lambda t: None if t is DataType.BOOL else str(t.bits),
    "shift_mask": lambda t: None if t is DataType.BOOL else str(t.bits - 1),
}
TYPE_PROPERTIES: Final = tuple(p for p in _MODIFIERS if p) + tuple(_NUMBERS) + ELEMENTS

ALLOWED_OPCODES: Final = frozenset(
    # integer arithmetic
    "add sub mul mad mul24 mad24 sad div rem abs neg min max popc clz bfind fns brev bfe bfi szext bmsk "
    "dp4a dp2a addc subc madc "
    # floating point
    "testp copysign fma rcp sqrt rsqrt sin cos lg2 ex2 tanh "
    # comparison and selection, logic and shifts, moves and conversions
    "set setp selp slct and or xor not cnot lop3 shf shl shr prmt mov cvt".split()
)
_REFUSED: Final = {
    **dict.fromkeys(("ret", "exit", "trap", "brkpt"), "ends or stops the kernel"),
    **dict.fromkeys(("bra", "brx", "call"), "is a branch or call; templates are straight-line code"),
    **dict.fromkeys(("ld", "ldu", "st", "red", "cp", "prefetch", "prefetchu", "cvta", "isspacep", "mapa",
                     "atom", "suld", "sust", "tex", "tld4", "stackrestore", "stacksave", "alloca"),
                    "touches memory; only an atomic op's atom instruction may, through [{addr}]"),
    **dict.fromkeys(("bar", "barrier", "membar", "fence", "mbarrier", "vote", "shfl", "match", "redux",
                     "activemask", "elect", "nanosleep", "pmevent", "griddepcontrol", "setmaxnreg"),
                    "synchronises or talks to other threads (shfl, vote, match and redux .sync only in the "
                    "templates of an op with the collective trait)"),
}

_STATE_SPACES: Final = (".global", ".shared", ".local", ".param", ".const", ".tex", ".cluster")
_NAME: Final = r"[A-Za-z_][A-Za-z0-9_]*"
_PLACEHOLDER_RE: Final = re.compile(r"\{(" + _NAME + r")(?:\.(" + _NAME + r"))?\}")
_IMMEDIATE_RE: Final = re.compile(r"-?(?:0[xX][0-9a-fA-F]+U?|0[fF][0-9a-fA-F]{8}|0[dD][0-9a-fA-F]{16}|[0-9]+U?)\Z")
_OPCODE_TEXT_RE: Final = re.compile(r"[a-z][a-z0-9_]*(?:\.[a-z0-9_]+)*\Z")


# Instructions newer than the oldest target we emit for (sm_75), by a fragment of the filled
# opcode, with the compute capability that brought them (PTX ISA, "Target ISA notes"). On an
# older target the emitter inlines the op's compose definition instead of such a template.
NEEDS_SM: Final = ((".bf16", 80), (".f16x2.f32", 80), ("redux.sync", 80))


class TemplateError(ValueError):
    """A template that is not a list of allowed instructions; ``code`` is the R-code."""

    def __init__(self, code: str, message: str, fix: str) -> None:
        super().__init__(message)
        self.code, self.message, self.fix = code, message, fix


@dataclass(frozen=True, slots=True)
class Ref:
    """A placeholder: ``name``, or a type variable's property ``name.prop``."""

    name: str
    prop: str | None = None


@dataclass(frozen=True, slots=True)
class Instr:
    guard: tuple[bool, str] | None  # (negated, predicate placeholder)
    opcode: tuple[str | Ref, ...]
    operands: tuple[tuple[str, str | Ref], ...]  # ("reg", Ref) | ("imm", text) | ("type", Ref) | ("addr", Ref)


@dataclass(frozen=True, slots=True)
class ParsedTemplate:
    text: str
    instrs: tuple[Instr, ...]
    collective: bool = False


def immediate(dtype: DataType, bits: int) -> str:
    """A constant as a PTX immediate operand (floats as exact hex: 0f3F800000, 0d...)."""
    if dtype is DataType.F32:
        return f"0f{bits:08X}"
    if dtype is DataType.F64:
        return f"0d{bits:016X}"
    if dtype is DataType.BOOL:
        return "1" if bits else "0"
    if dtype.is_signed and bits >> (dtype.bits - 1):
        return str(bits - (1 << dtype.bits))
    return str(bits)


# ============================================================================ parsing


def _statements(text: str) -> list[str]:
    if not text.isascii():
        raise TemplateError("R024", "the template has characters that are not ASCII", "write the PTX in ASCII")
    for bad, what in (("//", "a comment"), ("/*", "a comment"), ("{{", "a brace"), ("}}", "a brace")):
        if bad in text:
            raise TemplateError("R024", f"the template contains {what} ({bad!r})",
                                "write only instructions; explain the template in a TOML comment instead")
    if re.search(r"\{\s|\{$|(^|[\s;])\}", text):
        raise TemplateError("R024", "the template contains a brace block (PTX scopes and vector operands are not "
                            "allowed)", "write straight-line instructions; braces only enclose placeholders like {a}")
    parts = text.split(";")
    if parts[-1].strip():
        raise TemplateError("R024", f"{parts[-1].strip()[:40]!r} is not ended by ';'", "end every instruction with ';'")
    stmts = [p.strip() for p in parts[:-1]]
    if not stmts or any(not s for s in stmts):
        raise TemplateError("R024", "the template has an empty statement" if stmts else "the template is empty",
                            "write one instruction per ';'")
    return stmts


def _ref(match: re.Match[str], type_vars: frozenset[str], names: frozenset[str], where: str) -> Ref:
    name, prop = match.group(1), match.group(2)
    if prop is not None:
        if name not in type_vars:
            raise TemplateError("R007", f"placeholder {match.group()} in {where}: only type variables have "
                                "properties", f"write {{{name}}}" if name in names else "name a type variable")
        if prop not in TYPE_PROPERTIES:
            raise TemplateError("R007", f"{match.group()} in {where}: {prop!r} is not a type property",
                                f"use one of {', '.join('{' + name + '.' + p + '}' for p in TYPE_PROPERTIES)}")
        return Ref(name, prop)
    if name not in names and name not in type_vars:
        raise TemplateError("R007", f"placeholder {match.group()} in {where} names no input, output, attribute, "
                            "temporary or type variable",
                            f"use one of {', '.join('{' + n + '}' for n in sorted(names))} or declare it in temps")
    return Ref(name)


def _placeholders(text: str, type_vars: frozenset[str], names: frozenset[str], where: str) -> list[str | Ref]:
    """Split ``text`` into literal pieces and placeholders; any other brace is an error."""
    pieces: list[str | Ref] = []
    pos = 0
    for m in re.finditer(r"\{[^{}]*\}|[{}]", text):
        pieces.append(text[pos:m.start()])
        if m.group() in "{}" or _PLACEHOLDER_RE.fullmatch(m.group()) is None:
            raise TemplateError("R007", f"{m.group()!r} in {where} is not a placeholder: a placeholder is a bare "
                                "name in braces, without format spec, conversion, index or spaces",
                                "write {name} or {T.prop}; PTX vector operands and blocks are not allowed")
        pieces.append(_ref(_PLACEHOLDER_RE.fullmatch(m.group()), type_vars, names, where))  # type: ignore[arg-type]
        pos = m.end()
    pieces.append(text[pos:])
    return [p for p in pieces if p != ""]


def parse_template(
    text: str,
    *,
    inputs: frozenset[str],
    attrs: frozenset[str],
    temps: frozenset[str],
    result: str,
    type_vars: frozenset[str],
    atomic: bool,
    collective: bool = False,
) -> ParsedTemplate:
    """Parse and check one template; raises TemplateError with the R-code of the first problem.
    ``collective``: the op has the collective trait, so shfl/vote/match/redux and the placeholders
    {lane} and {members} are allowed."""
    extra = frozenset(ATOMIC_PLACEHOLDERS) if atomic else frozenset()
    extra |= frozenset(COLLECTIVE_PLACEHOLDERS) if collective else frozenset()
    names = inputs | attrs | temps | {result} | extra
    written: set[str] = set()
    instrs = []
    for n, stmt in enumerate(_statements(text), 1):
        where = f"instruction {n} ({stmt[:50]!r})"
        guard = None
        m = re.match(r"@(!?)(\{[^{}]*\})\s+", stmt)
        if stmt.startswith("@"):
            if m is None:
                raise TemplateError("R024", f"{where}: a guard is @{{pred}} or @!{{pred}} followed by a space",
                                    "write @{p} opcode ...")
            ref = _placeholders(m.group(2), type_vars, names, where)[0]
            if not isinstance(ref, Ref) or ref.prop is not None or ref.name in attrs:
                raise TemplateError("R024", f"{where}: the guard must be a predicate placeholder", "write @{p}")
            _check_read(ref.name, written, inputs | attrs, result, where)
            guard = (m.group(1) == "!", ref.name)
            stmt = stmt[m.end():]
        head, _, rest = stmt.partition(" ")
        opcode = _opcode(head, type_vars, names, where, atomic, collective)
        operands = _operands(rest, type_vars, names, where, atomic, opcode)
        dest = operands[0][1] if operands else None
        if not isinstance(dest, Ref) or operands[0][0] != "reg" or dest.name not in temps | {result}:
            shown = f"{{{dest.name}}}" if isinstance(dest, Ref) else repr(dest)
            raise TemplateError("R025", f"{where} writes {shown}; an instruction may write only the result "
                                f"{{{result}}} or a declared temporary", "write to the result or a temporary")
        for kind, op in operands[1:]:
            if kind in ("reg", "addr") and isinstance(op, Ref):
                _check_read(op.name, written, inputs | attrs | extra - {result}, result, where)
        if guard is None:
            written.add(dest.name)
        instrs.append(Instr(guard, opcode, operands))
    if result not in written:
        raise TemplateError("R007", f"the template never writes its result {{{result}}} (unconditionally)",
                            f"make some unguarded instruction write {{{result}}}")
    if atomic:
        atoms = [i for i in instrs if i.opcode[0] == "atom"]
        if len(atoms) != 1 or atoms[0].guard is not None or atoms[0].operands[0][1] != Ref(result):
            raise TemplateError("R026", f"an atomic op's template has exactly one unguarded atom instruction, which "
                                f"writes {{{result}}} (this one has {len(atoms)})",
                                "write atom{space}.op.type {old}, [{addr}], {value}; once")
    return ParsedTemplate(text, tuple(instrs), collective)


def _check_read(name: str, written: set[str], given: frozenset[str], result: str, where: str) -> None:
    if name not in given and name not in written:
        raise TemplateError("R025", f"{where} reads {{{name}}} before any instruction writes it",
                            "write it first (an unguarded instruction), or read an input instead")


def _opcode(head: str, type_vars: frozenset[str], names: frozenset[str], where: str,
            atomic: bool, collective: bool = False) -> tuple[str | Ref, ...]:
    if head.startswith(".") or head.endswith(":") or not head:
        what = "a directive" if head.startswith(".") else "a label" if head.endswith(":") else "nothing"
        raise TemplateError("R024", f"{where} is {what}, not an instruction",
                            "write only instructions (no directives, labels or declarations)")
    pieces = _placeholders(head, type_vars, names, where)
    first = pieces[0]
    base = re.match(r"[a-z][a-z0-9]*", first) if isinstance(first, str) else None
    if base is None or not isinstance(first, str):
        raise TemplateError("R024", f"{where} does not start with an opcode", "write opcode.modifiers operands;")
    name = base.group()
    _check_opcode_name(name, where, atomic, collective)
    rest: list[str | Ref] = [first[base.end():], *pieces[1:]]
    for i, p in enumerate(rest):
        if isinstance(p, Ref):
            if p.name == "space" and atomic and p.prop is None and name == "atom" and i == 1 and rest[0] == "":
                continue
            if p.name not in type_vars or (p.prop or "") not in _MODIFIERS:
                raise TemplateError("R007", f"{where}: only type placeholders ({{T}}, {{T.b}}, {{T.rn}} ...) and, "
                                    "right after atom, {space} may appear in an opcode", "put operands after the opcode")
        elif p and not re.fullmatch(r"(\.[a-z0-9_]+)+\.?|\.", p) or (p and p.endswith(".") and i == len(rest) - 1):
            raise TemplateError("R024", f"{where}: unexpected text {p!r} in the opcode: modifiers are .name parts",
                                "write opcode{T.rn}.modifier.{T}")
        elif any(space in p for space in _STATE_SPACES):
            raise TemplateError("R026", f"{where}: the opcode names a state space ({p!r}); an atomic op takes it from "
                                "{space}, which the emitter fills", "write atom{space}.op.type")
    if name == "atom" and Ref("space") not in pieces:
        raise TemplateError("R026", f"{where}: an atom instruction takes its state space from {{space}}",
                            "write atom{space}.op.type {old}, [{addr}], ...")
    return tuple(pieces)


def _check_opcode_name(name: str, where: str, atomic: bool, collective: bool = False) -> None:
    if name == "atom" and atomic or name in COLLECTIVE_OPCODES and collective:
        return
    if name not in ALLOWED_OPCODES:
        why = _REFUSED.get(name, "is not an arithmetic, logic, comparison, move or conversion instruction")
        raise TemplateError("R026", f"{where}: {name!r} {why}", "compute the result with allowed instructions")


def _operands(text: str, type_vars: frozenset[str], names: frozenset[str], where: str, atomic: bool,
              opcode: tuple[str | Ref, ...]) -> tuple[tuple[str, str | Ref], ...]:
    is_atom = isinstance(opcode[0], str) and opcode[0].startswith("atom")
    out: list[tuple[str, str | Ref]] = []
    for raw in (t.strip() for t in text.split(",")) if text.strip() else ():
        if raw.startswith("[") and raw.endswith("]"):
            inner = _placeholders(raw[1:-1].strip(), type_vars, names, where)
            if not (is_atom and len(inner) == 1 and inner[0] == Ref("addr")):
                raise TemplateError("R026", f"{where}: the memory operand {raw!r} is not allowed; only an atomic "
                                    "op's atom instruction addresses memory, through [{addr}]",
                                    "compute with registers only")
            out.append(("addr", Ref("addr")))
            continue
        pieces = _placeholders(raw, type_vars, names, where)
        if len(pieces) == 1 and isinstance(pieces[0], Ref):
            ref = pieces[0]
            if ref.prop is None and ref.name in type_vars:
                raise TemplateError("R007", f"{where}: {{{ref.name}}} is a type, not an operand",
                                    f"use {{{ref.name}.zero}}-style constants or a register placeholder")
            if ref.prop is not None and ref.prop in _MODIFIERS:
                raise TemplateError("R007", f"{where}: {{{ref.name}.{ref.prop}}} is an opcode modifier, not an operand",
                                    "use it in the opcode")
            if ref.name == "space" or (ref.name == "addr" and ref.prop is None and atomic):
                raise TemplateError("R026", f"{where}: {{{ref.name}}} may only appear as atom{{space}} and [{{addr}}]",
                                    "write atom{space}.op.type {old}, [{addr}], ...")
            out.append(("type" if ref.prop else "reg", ref))
        elif len(pieces) == 1 and isinstance(pieces[0], str) and _IMMEDIATE_RE.match(pieces[0]):
            out.append(("imm", pieces[0]))
        else:
            raise TemplateError("R027", f"{where}: operand {raw!r} is neither a placeholder nor an immediate "
                                "(registers such as %r1 or %tid.x are not allowed)",
                                "use placeholders for values and declare temporaries in temps")
    if is_atom and not any(k == "addr" for k, _ in out):
        raise TemplateError("R026", f"{where}: an atom instruction needs the address operand [{{addr}}]",
                            "write atom{space}.op.type {old}, [{addr}], {value};")
    return tuple(out)


# ============================================================================ instantiation


def instantiate(parsed: ParsedTemplate, binding: Mapping[str, DataType],
                temps: Mapping[str, DataType | str]) -> Template:
    """The template for one binding: type placeholders replaced, operands left for the emitter.
    Raises TemplateError if a property has no value for a bound type (``{T.inf}`` of u32)."""
    lines = []
    min_sm = 0
    for instr in parsed.instrs:
        parts: list[str] = [""]

        def literal(text: str) -> None:
            parts[-1] += text

        def operand(name: str) -> None:
            parts.extend((name, ""))

        if instr.guard is not None:
            literal("@!" if instr.guard[0] else "@")
            operand(instr.guard[1])
            literal(" ")
        opcode = "".join(p if isinstance(p, str) else ("{space}" if p.name == "space" else
                                                        _modifier(p, binding[p.name])) for p in instr.opcode)
        if not _OPCODE_TEXT_RE.match(opcode.replace("{space}", "")):
            raise TemplateError("R024", f"the opcode {opcode!r} is malformed for {_show(binding)}",
                                "check the type placeholders in the opcode")
        base = opcode.split(".", 1)[0].split("{", 1)[0]
        if base != "atom":  # the parser allowed atom only in atomic ops; check the rest once more as filled
            _check_opcode_name(base, f"the opcode {opcode!r} for {_show(binding)}", False, parsed.collective)
        min_sm = max([min_sm] + [sm for fragment, sm in NEEDS_SM if fragment in opcode])
        head, sep, tail = opcode.partition("{space}")
        literal(head)
        if sep:
            operand("space")
            literal(tail)
        for i, (kind, value) in enumerate(instr.operands):
            literal(" " if i == 0 else ", ")
            if kind == "imm":
                literal(str(value))
            elif kind == "type":
                assert isinstance(value, Ref)
                literal(_number(value, binding[value.name]))
            elif kind == "addr":
                literal("[")
                operand("addr")
                literal("]")
            else:
                assert isinstance(value, Ref)
                operand(value.name)
        literal(";")
        lines.append(tuple(parts))
    used = {name for line in lines for name in line[1::2]}
    return Template(parsed.text, tuple(lines), tuple((n, t) for n, t in temps.items() if n in used), min_sm)


def _show(binding: Mapping[str, DataType]) -> str:
    return ", ".join(f"{v}={t}" for v, t in binding.items()) or "the op"


def _modifier(ref: Ref, dtype: DataType) -> str:
    value = _MODIFIERS[ref.prop or ""](dtype)
    if value is None:
        raise TemplateError("R007", f"{{{ref.name}.{ref.prop}}} has no value for {ref.name}={dtype}",
                            "give that type its own template")
    return value


def _number(ref: Ref, dtype: DataType) -> str:
    assert ref.prop is not None
    if ref.prop in _NUMBERS:
        value = _NUMBERS[ref.prop](dtype)
        if value is None:
            raise TemplateError("R007", f"{{{ref.name}.{ref.prop}}} has no value for {ref.name}={dtype}",
                                "give that type its own template")
        return value
    try:
        return immediate(dtype, element_bits(dtype, ref.prop))
    except ScalarError as exc:
        msg = message_and_fix(exc)[0]
        raise TemplateError("R007", f"{{{ref.name}.{ref.prop}}} for {ref.name}={dtype}: {msg}",
                            "give that type its own template") from None
