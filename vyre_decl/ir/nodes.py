"""The IR: immutable expression and statement nodes, buffer declarations and Program.

Nodes are frozen dataclasses compared structurally, so two programs built the same way are
equal and hash alike. Every computation is an ``Op`` whose id resolves in the op registry;
the node kinds here are only structure: memory, control flow, ids and types.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Final, Union

from .record import Record, record
from .scalars import decode, encode
from .types import DataType

__all__ = [
    "Access",
    "IdKind",
    "Expr",
    "Lit",
    "Var",
    "Load",
    "BufLen",
    "Id",
    "Op",
    "Select",
    "Atomic",
    "Wait",
    "MemoryOrder",
    "MemoryScope",
    "Node",
    "Let",
    "Assign",
    "Store",
    "Copy",
    "If",
    "Loop",
    "Return",
    "Break",
    "Block",
    "Barrier",
    "Region",
    "BufferDecl",
    "Program",
    "AXES",
]

AXES: Final = ("x", "y", "z")


class Access(enum.Enum):
    """How a program may use a buffer.

    ``read`` and ``uniform`` buffers are inputs; ``read_write`` buffers are inputs that are also
    returned (or outputs when flagged ``output``); ``write`` buffers are always outputs, allocated
    and zero-filled by the runtime; ``workgroup`` buffers are per-workgroup scratch memory;
    ``private`` buffers are per-invocation arrays (registers once their indices are constants).
    """

    READ = "read"
    READ_WRITE = "read_write"
    WRITE = "write"
    UNIFORM = "uniform"
    WORKGROUP = "workgroup"
    PRIVATE = "private"

    def __repr__(self) -> str:
        return f"Access.{self.name}"

    @property
    def writable(self) -> bool:
        return self in (Access.READ_WRITE, Access.WRITE, Access.WORKGROUP, Access.PRIVATE)

    @property
    def is_scratch(self) -> bool:
        """Memory the kernel owns (``workgroup``, ``private``): no binding, no kernel parameter, never
        an input or an output, zero at the start of its workgroup / invocation."""
        return self in (Access.WORKGROUP, Access.PRIVATE)


class IdKind(enum.Enum):
    """Which invocation id: global (``gid``), local within the workgroup (``lid``) or the
    workgroup's own id (``wgid``). The enum value is the text keyword."""

    GLOBAL = "gid"
    LOCAL = "lid"
    WORKGROUP = "wgid"

    def __repr__(self) -> str:
        return f"IdKind.{self.name}"


class MemoryOrder(enum.Enum):
    """How an atomic access orders the other memory accesses of its invocation (docs/semantics.md,
    "Ordered atomics"): ``relaxed`` not at all; an ``acquire`` read makes what the writer it reads
    from wrote before its ``release`` write visible to what follows; ``acq_rel`` is both (a
    read-modify-write only). The enum value is the text's qualifier (``atomic.acquire``)."""

    RELAXED = "relaxed"
    ACQUIRE = "acquire"
    RELEASE = "release"
    ACQ_REL = "acq_rel"

    def __repr__(self) -> str:
        return f"MemoryOrder.{self.name}"


class MemoryScope(enum.Enum):
    """Which invocations an atomic access synchronises with: those of its own ``workgroup``, or of
    the whole ``device`` (every workgroup of the dispatch). The value is the text's qualifier."""

    WORKGROUP = "workgroup"
    DEVICE = "device"

    def __repr__(self) -> str:
        return f"MemoryScope.{self.name}"


# ----------------------------------------------------------------------------- expressions


class Expr(Record):
    """Base of all expression nodes."""

    __slots__ = ()


@record
class Lit(Expr):
    """A typed constant, stored as its exact bit pattern."""

    dtype: DataType
    bits: int

    @classmethod
    def of(cls, dtype: DataType, value: object) -> Lit:
        """A literal of ``value`` (bool, int, float or literal text) as ``dtype``."""
        return cls(dtype, encode(dtype, value))

    @property
    def value(self) -> bool | int | float:
        return decode(self.dtype, self.bits)


@record
class Var(Expr):
    """The current value of a ``let``-bound or loop variable."""

    name: str


@record
class Load(Expr):
    """Element ``index`` of ``buffer`` (0 when out of bounds), widened to its value type.

    With an ``order`` it is an atomic load (written ``atomic.acquire buf[i]``): a 32- or 64-bit word
    read whole, ordered as ``order`` says within ``scope``. Without one it is a plain load (and
    ``scope`` must stay the default)."""

    buffer: str
    index: Expr
    order: MemoryOrder | None = None
    scope: MemoryScope = MemoryScope.DEVICE
    # ``x.u32[i]``: element i of the buffer's bytes read as this unsigned type, little-endian
    # (ir/byteview.py; docs/semantics.md, "Byte views"); None: the buffer's own elements
    view: DataType | None = None


@record
class BufLen(Expr):
    """The element count of ``buffer`` at dispatch time (u32)."""

    buffer: str


@record
class Id(Expr):
    """An invocation id component (u32): ``kind`` on ``axis`` 0, 1 or 2 (x, y, z)."""

    kind: IdKind
    axis: int


@record
class Op(Expr):
    """Application of registry op ``op`` to ``args``.

    ``attrs`` are compile-time constants, ``types`` bind the op's type variables that its
    inputs do not determine (e.g. the target of a cast). Both are kept sorted by name.
    """

    op: str
    args: tuple[Expr, ...]
    attrs: tuple[tuple[str, Lit], ...] = ()
    types: tuple[tuple[str, DataType], ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "args", tuple(self.args))
        object.__setattr__(self, "attrs", tuple(sorted(self.attrs, key=lambda kv: kv[0])))
        object.__setattr__(self, "types", tuple(sorted(self.types, key=lambda kv: kv[0])))


@record
class Select(Expr):
    """``if_true`` where ``cond`` holds, else ``if_false``. Both arms are evaluated, unless
    ``lazy`` (written ``branch(c, a, b)``): then a GPU runs only the chosen arm, behind a branch —
    for an expensive arm that is rarely taken. The value is the same either way (expressions are
    pure); the reference evaluates both."""

    cond: Expr
    if_true: Expr
    if_false: Expr
    lazy: bool = False


@record
class Atomic(Expr):
    """Atomic read-modify-write of ``buffer[index]`` with atomic op ``op``; yields the old value.

    ``args`` are the op's operands after the memory operand (e.g. the value to add, or the
    expected and new values of a compare-exchange). Out of bounds it does nothing and yields 0.
    ``order`` and ``scope`` (written ``atomic.acq_rel.workgroup op(...)``) default to a relaxed
    atomic of device scope, what every atomic was before they existed.
    """

    op: str
    buffer: str
    index: Expr
    args: tuple[Expr, ...]
    order: MemoryOrder = MemoryOrder.RELAXED
    scope: MemoryScope = MemoryScope.DEVICE

    def __post_init__(self) -> None:
        object.__setattr__(self, "args", tuple(self.args))


@record
class Wait(Expr):
    """A bounded wait on a flag: read ``buffer[index]`` atomically (``order`` relaxed or acquire,
    within ``scope``) until the value read differs from ``value`` or ``bound`` reads (a positive u32
    literal) were made; yields the last value read. So it yields ``value`` itself when the bound ran
    out. Out of bounds it reads nothing and yields 0. The reference reads once (docs/semantics.md,
    "Bounded waits"): a program whose result depends on which outcome occurs is not portable."""

    buffer: str
    index: Expr
    value: Expr
    bound: Expr
    order: MemoryOrder = MemoryOrder.RELAXED
    scope: MemoryScope = MemoryScope.DEVICE


# ----------------------------------------------------------------------------- statements


class Node(Record):
    """Base of all statement nodes."""

    __slots__ = ()


def _freeze_body(obj: object, *names: str) -> None:
    for name in names:
        object.__setattr__(obj, name, tuple(getattr(obj, name)))


@record
class Let(Node):
    """Bind a new variable ``name`` (visible to the rest of the enclosing scope)."""

    name: str
    value: Expr


@record
class Assign(Node):
    """Overwrite an existing ``let`` variable."""

    name: str
    value: Expr


@record
class Store(Node):
    """``buffer[index] = value`` (narrowed to the element type; dropped when out of bounds).

    With an ``order`` it is an atomic store (``atomic.release buf[i] = v``): the word written whole,
    ordered as ``order`` says within ``scope``; without one a plain store."""

    buffer: str
    index: Expr
    value: Expr
    order: MemoryOrder | None = None
    scope: MemoryScope = MemoryScope.DEVICE


@record
class Copy(Node):
    """``dst[dst_index ..+ width] = src[src_index ..+ width]``: a vector access, ``width`` (2 or 4)
    consecutive elements copied between two buffers of one element type (any spaces: global,
    workgroup, private). It means the element-by-element copy, each element under the usual bounds
    rules (out of bounds: loads 0, stores nothing); a GPU makes it one 64- or 128-bit load and store
    where the indices are aligned and the whole vector is in bounds (docs/semantics.md). A side
    whose ``*_units`` is set counts whole vectors (``src[q ..* 4]``: elements 4q .. 4q + 3), so
    it is aligned by construction."""

    dst: str
    dst_index: Expr
    src: str
    src_index: Expr
    width: int
    dst_units: bool = False
    src_units: bool = False


@record
class If(Node):
    cond: Expr
    then: tuple[Node, ...]
    otherwise: tuple[Node, ...] = ()

    def __post_init__(self) -> None:
        _freeze_body(self, "then", "otherwise")


@record
class Loop(Node):
    """``for var in start..end`` (half-open; bounds evaluated once; var is read-only).

    ``unroll`` (bounds must be literals) asks the emitter for one copy of the body per iteration,
    with ``var`` a constant in each: the same meaning, and what makes ``var`` usable as an index of
    a private array (docs/semantics.md)."""

    var: str
    start: Expr
    end: Expr
    body: tuple[Node, ...]
    unroll: bool = False

    def __post_init__(self) -> None:
        _freeze_body(self, "body")


@record
class Return(Node):
    """End this invocation."""


@record
class Break(Node):
    """Leave the innermost enclosing (not unrolled) ``loop``, for this invocation: it runs none of
    the rest of that loop's body nor its later iterations, and goes on after the loop."""


@record
class Block(Node):
    """A nested scope."""

    body: tuple[Node, ...]

    def __post_init__(self) -> None:
        _freeze_body(self, "body")


@record
class Barrier(Node):
    """Workgroup barrier: every invocation of the workgroup waits here; memory is synchronised."""


@record
class Region(Node):
    """A labelled group of statements (``generator`` names what produced it). Unlike ``Block``
    it opens no scope: its lets stay visible after it."""

    generator: str
    body: tuple[Node, ...]

    def __post_init__(self) -> None:
        _freeze_body(self, "body")


Statement = Union[Let, Assign, Store, Copy, If, Loop, Return, Break, Block, Barrier, Region]

# ----------------------------------------------------------------------------- program


@record
class BufferDecl(Record):
    """A buffer the program uses.

    ``count`` is the element count; 0 means sized at dispatch: by the host array for inputs, or
    by ``count_like`` (the dispatch-time count of another buffer) for outputs. ``binding`` orders
    the kernel arguments; workgroup and private buffers have none. ``write`` buffers are always
    outputs.
    """

    name: str
    access: Access
    dtype: DataType
    count: int = 0
    binding: int | None = None
    is_output: bool = False
    count_like: str | None = None

    def __post_init__(self) -> None:
        if self.count_like is not None and self.count:
            raise ValueError(
                f"buffer {self.name!r} has both count={self.count} and count_like={self.count_like!r}. "
                "Fix: keep one of them"
            )
        if self.access is Access.WRITE and not self.is_output:
            object.__setattr__(self, "is_output", True)

    @property
    def is_input(self) -> bool:
        """Whether the host supplies this buffer's contents at dispatch."""
        return not self.access.is_scratch and not self.is_output

    @property
    def is_returned(self) -> bool:
        """Whether dispatch returns this buffer's contents."""
        return self.is_output or self.access is Access.READ_WRITE


MAX_RESIDENT: Final = 32  # workgroups one multiprocessor holds at most (sm_90); resident(N) asks for N
MAX_RESIDENT_INVOCATIONS: Final = 2048  # invocations one multiprocessor holds at most (sm_80, sm_90)


@dataclass(frozen=True, eq=True)
class Program:
    """A compute kernel: buffers, a 3-D workgroup size and a body run by every invocation."""

    buffers: tuple[BufferDecl, ...]
    workgroup_size: tuple[int, int, int]
    body: tuple[Node, ...]
    name: str = "main"
    # ``workgroup_memory(large)``: the workgroup arrays may total more than the 48 KiB every GPU
    # gives, up to the device's opt-in limit (docs/semantics.md, "Large workgroup memory")
    large_workgroup_memory: bool = False
    # ``resident(N)``: a hint that N workgroups should fit on one multiprocessor at once (the emitter
    # asks ptxas to budget registers for it); no effect on results (docs/semantics.md, "Residency")
    resident: int = 0
    _hash: list[str] = field(default_factory=list, init=False, compare=False, repr=False)
    # (file name, text, type variables, parameters) of a program parsed from a named text, so that
    # validation can say file:line:col (``sourcemap.py``); never part of equality or the hash
    _source: list[tuple[str, str, Any, Any]] = field(default_factory=list, init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "buffers", tuple(self.buffers))
        object.__setattr__(self, "workgroup_size", tuple(self.workgroup_size))
        object.__setattr__(self, "body", tuple(self.body))

    def __hash__(self) -> int:
        return hash(self.content_hash())

    def buffer(self, name: str) -> BufferDecl:
        for decl in self.buffers:
            if decl.name == name:
                return decl
        raise KeyError(f"program {self.name!r} has no buffer {name!r}")

    @property
    def inputs(self) -> tuple[BufferDecl, ...]:
        """Buffers the host supplies, in declaration order (the dispatch argument order)."""
        return tuple(b for b in self.buffers if b.is_input)

    @property
    def outputs(self) -> tuple[BufferDecl, ...]:
        """Buffers dispatch returns, in declaration order."""
        return tuple(b for b in self.buffers if b.is_returned)

    def content_hash(self) -> str:
        """SHA-256 of the canonical JSON form; stable across processes and Python versions."""
        if not self._hash:
            from .canonical import content_hash

            self._hash.append(content_hash(self))
        return self._hash[0]

    def to_text(self) -> str:
        from .text import print_program

        return print_program(self)

    def __str__(self) -> str:
        return self.to_text()
