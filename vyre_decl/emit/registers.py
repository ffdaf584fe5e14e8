"""An entry being written as PTX: its registers, labels and lines, and the PTX types that values
take in registers and in memory (the state the prologue and the emitter share)."""

from __future__ import annotations

from collections import defaultdict
from typing import Final

from ..ir.nodes import IdKind, Program, Return
from ..ir.subgroup import SUBGROUP_SIZE
from ..ir.types import DataType
from ..ir.walk import statements
from ..registry import Registry
from ..registry.templates import PTX_TYPE
from .target import Target

# value type -> (PTX register type, register prefix)
_REG: Final = {t: (PTX_TYPE[t], prefix) for t, prefix in (
    (DataType.BOOL, "%p"), (DataType.U32, "%r"), (DataType.I32, "%s"), (DataType.U64, "%rd"),
    (DataType.I64, "%sd"), (DataType.F32, "%f"), (DataType.F64, "%fd"))}
_B16: Final = ("b16", "%h")
_BITS: Final = {"b32": ("b32", "%b"), "b64": ("b64", "%bd")}  # untyped template temporaries
# storage type -> ld/st instruction type for the value register
_MEM_TYPE: Final = {
    DataType.U8: "u8",
    DataType.U16: "u16",
    DataType.I8: "s8",
    DataType.I16: "s16",
    DataType.U32: "u32",
    DataType.I32: "s32",
    DataType.U64: "u64",
    DataType.I64: "s64",
    DataType.F32: "f32",
    DataType.F64: "f64",
}
_COMMENT_WIDTH: Final = 110


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _COMMENT_WIDTH else text[: _COMMENT_WIDTH - 3] + "..."


class _Lines:
    """The state of one entry being written: the program's buffers and variables in registers,
    the register counts per prefix, labels, and the lines written so far."""

    def __init__(self, program: Program, registry: Registry, target: Target) -> None:
        self.program, self.registry, self.target = program, registry, target
        self.buffers = {b.name: b for b in program.buffers}
        self.lines: list[str] = []
        self.counts: dict[str, int] = defaultdict(int)
        self.kinds: dict[str, str] = {}
        self.labels = 0
        self.vars: dict[str, tuple[str, DataType]] = {}
        self.base: dict[str, str] = {}  # buffer -> register holding its address
        self.length: dict[str, str] = {}  # buffer -> register holding its element count
        # (buffer, view size) -> register: how many whole elements of the wider byte view can be
        # loaded as one access (0 when the buffer's base is not aligned to the view): emit/byteview.py
        self.view_whole: dict[tuple[str, int], str] = {}
        self.ids: dict[tuple[IdKind, int], str] = {}
        self.exit_label = "$L_exit"  # where ``return`` goes (an entry handling several elements moves it)
        # value numbering while one outermost composite call is inlined (straight-line code whose
        # registers are written once): a literal, select or op call repeated on the same registers
        # reuses the first result (e.g. an argument reduction shared by several parts of a result)
        self.inlined: dict[tuple[object, ...], tuple[str, DataType]] | None = None
        # subgroups (collective ops): the lane register, the mask of the warp's existing lanes, and
        # whether the present lanes must be voted at each collective (the program can return)
        self.lane_reg = self.exist_reg = self.true_reg = ""
        wx, wy, wz = program.workgroup_size
        self.full_warps = (wx * wy * wz) % SUBGROUP_SIZE == 0
        self.returns = any(isinstance(n, Return) for n in statements(program.body))

    # --- registers, labels, lines
    def reg(self, t: DataType | tuple[str, str]) -> str:
        kind, prefix = _REG[t] if isinstance(t, DataType) else t
        n = self.counts[prefix]
        self.counts[prefix] += 1
        self.kinds[prefix] = kind
        return f"{prefix}{n}"

    def label(self, what: str) -> str:
        self.labels += 1
        return f"$L{self.labels}_{what}"

    def emit(self, line: str) -> None:
        self.lines.append("\t" + line)

    def comment(self, text: str) -> None:
        self.lines.append("\t// " + _short(text))

    def place(self, label: str) -> None:
        self.lines.append(label + ":")

    def declarations(self) -> list[str]:
        return [f"\t.reg .{self.kinds[p]} {p}<{n}>;" for p, n in sorted(self.counts.items())]
