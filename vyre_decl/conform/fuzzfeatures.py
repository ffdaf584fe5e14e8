"""The fuzzer's private arrays, unrolled loops and ordered accesses (issue 28), apart from the core
generator in ``fuzz.py``.

Whether a program uses them is drawn from a generator of its own (``features``), so a program
without them is the one its seed gave before they existed; within a program that has them, the
choices come from the program's own stream.

- **Private arrays** (``buffer pv: private T[N]``, zero-filled): loads and stores at indices that
  are constant after unrolling (V030): literals (some past the end: load 0, store nothing), the
  counters of the ``unroll`` loops around, and a counter plus a literal. Loops there are
  mostly ``unroll`` (literal bounds: up to 4 iterations, or one per element in a loop that
  stores each element first).
- **Vector copies** (half the programs with a private array, a draw of their own): the private
  array takes the word type of an input or of workgroup memory, and most of its stores are copies
  ``pv[c ..+ N] = src[j ..+ N]`` from such a buffer (nothing writes it then), j mostly a multiple of
  N (the 64/128-bit path), else any index (the element path, windows past the end).
- **Ordered accesses**: the accumulator's order-free atomics take any order and scope (the final
  memory is the same in any order of the updates); the stores of the workgroup memory rounds and
  of the invocation's own output element are sometimes atomic stores (relaxed or release; one
  writer per element, so the order is moot); reads of workgroup memory between two barriers
  (nothing writes it then) are sometimes atomic loads or bounded waits. A wait there yields the
  word whether it ends by a change or by its bound (a value different from the word: the first
  read; the word itself: every read, then the value, which is the word), so the outputs do not
  depend on how it ends. Never in a lazy branch's arms.
- **Workgroup collectives** (a draw of their own): one or two ``workgroup.KIND`` calls at the top
  level over an expression of the program (``wg_collective``).
- **Breaks**: a loop that is not unrolled sometimes gets ``if COND { break }`` at any place in its
  body. Mostly COND may differ between invocations (partial breaks): the body is then generated as
  divergent control flow, with no collective op in it (V027); else COND is uniform (every
  invocation of the workgroup leaves at the same iteration).
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from ..ir.nodes import (Access, Break, BufferDecl, Expr, Id, IdKind, If, Let, Lit, Load, MemoryOrder, MemoryScope, Node, Op,
                        Store, Var, Wait)
from ..ir.nodes import Copy
from ..ir.types import DataType as D
from ..ir.wgcollect import KINDS, expand

if TYPE_CHECKING:
    from .fuzz import _Gen

__all__ = ["Features", "features", "private_decl", "private_load", "private_store", "ordered_read", "shared_read",
           "ordered_store", "acc_order", "break_plan", "place_break", "PRIVATE_PROGRAMS", "ORDERED_PROGRAMS",
           "BREAK_PROGRAMS", "byte_views", "view_load", "large_memory", "wg_collectives", "wg_collective"]

PRIVATE_PROGRAMS = 0.15  # the share of programs with a private array (and unroll loops)
VECTOR_PROGRAMS = 0.5  # the share of those whose private array is also filled by vector copies
ORDERED_PROGRAMS = 0.25  # the share of programs whose atomics, stores and shared reads may be ordered
BREAK_PROGRAMS = 0.25  # the share of programs whose loops may break
VIEW_PROGRAMS = 0.2  # the share of programs whose u32/u64 leaves may be byte views of an input
LARGE_PROGRAMS = 0.2  # the share of programs declared workgroup_memory(large)
WG_PROGRAMS = 0.2  # the share of programs calling workgroup collectives
RESIDENT_PROGRAMS = 0.1  # the share of programs with a resident(N) hint
_WORDS = (D.U32, D.I32, D.U64, D.I64, D.F32, D.F64)  # atomic loads and stores
_INT_WORDS = (D.U32, D.I32, D.U64, D.I64)  # waits
_PRIVATE_TYPES = (D.U32, D.I32, D.F32, D.U64, D.I64, D.F64, D.U8, D.I16, D.F16, D.BF16, D.BOOL)
_ADD = "primitive.math.add"
_MUL = "primitive.math.mul"


class Features:
    """What one program uses beyond the core generator."""

    def __init__(self, private: bool, ordered: bool, breaks: bool = False) -> None:
        self.private, self.ordered, self.breaks = private, ordered, breaks


def features(seed: int) -> Features:
    """The features of the program of ``seed``, from a generator apart from the program's (each
    feature's draw comes after the earlier ones', so adding one changes none of theirs)."""
    r = random.Random(seed * 1_000_003 + 28)
    return Features(r.random() < PRIVATE_PROGRAMS, r.random() < ORDERED_PROGRAMS, r.random() < BREAK_PROGRAMS)


def break_plan(gen: _Gen, unroll: bool) -> bool | None:
    """Before a loop's body is generated: None (no break in it), or whether its break's condition
    may differ between invocations (then the caller generates the body as divergent control flow).
    Draws from the program's stream only in a program with breaks."""
    if not gen.breaks or unroll or gen.rng.random() < 0.2:
        return None
    return gen.rng.random() < 0.75


def place_break(gen: _Gen, body: list[Node], var: str, divergent: bool) -> None:
    """``if COND { break }`` at a random place of ``body`` (COND may read the counter ``var``)."""
    r = gen.rng
    gen.scopes.append({var: D.U32})
    gen.divergent += 1  # no collective op in the condition, either way
    cond = gen.expr(D.BOOL, 2) if divergent else gen.uniform(D.BOOL, 2)
    gen.divergent -= 1
    gen.scopes.pop()
    body.insert(r.randint(0, len(body)), If(cond, (Break(),)))


def private_decl(r: random.Random, like: list[D] | None = None) -> BufferDecl:
    """A private array of 1 to 8 elements of a random storage type (of one of ``like``, if any)."""
    return BufferDecl("pv", Access.PRIVATE, r.choice(like or _PRIVATE_TYPES), count=r.randint(1, 8))


def vector_copies(seed: int) -> bool:
    """Whether the program of ``seed`` fills its private array (if it has one) with vector copies
    too: a draw of its own, so no other program changes."""
    return random.Random(seed * 1_000_003 + 43).random() < VECTOR_PROGRAMS


def byte_views(seed: int) -> bool:
    """Whether the program of ``seed`` may read its inputs through byte views (``x.u32[i]``,
    ir/byteview.py): a draw of its own, so no other program changes."""
    return random.Random(seed * 1_000_003 + 49).random() < VIEW_PROGRAMS


def large_memory(seed: int) -> bool:
    """Whether the program of ``seed`` declares ``workgroup_memory(large)`` (its workgroup array,
    if any, then lives in dynamic shared memory: emit/wgmem.py): a draw of its own."""
    return random.Random(seed * 1_000_003 + 53).random() < LARGE_PROGRAMS


def resident(seed: int, workgroup: int) -> int:
    """The ``resident(N)`` hint of the program of ``seed`` (0: none), N workgroups of ``workgroup``
    invocations that fit one multiprocessor: a draw of its own (results must not change)."""
    r = random.Random(seed * 1_000_003 + 61)
    return r.randint(1, min(32, 2048 // workgroup)) if r.random() < RESIDENT_PROGRAMS else 0


def wg_collectives(seed: int) -> bool:
    """Whether the program of ``seed`` calls workgroup collectives (ir/wgcollect.py): a draw of its own."""
    return random.Random(seed * 1_000_003 + 59).random() < WG_PROGRAMS


def wg_collective(gen: _Gen, buffers: list[BufferDecl], workgroup: int) -> list[Node]:
    """In a program drawing ``wg_collectives``, at the top level (uniform control flow, before any
    return): one or two collectives over an expression of the program, OP a binary (T, T) -> T op
    of the registry that shows no NaN's bits, the scratch a workgroup array ``wc`` of W or 2 W elements
    it declares (left out half the time where the workgroup is one subgroup); each result is a variable the rest of
    the program may read. Draws from the program's stream only in such a program."""
    r = gen.rng
    if not gen.ops.collective[D.U32]:  # no subgroup ops in this registry: the expansion needs them
        return []
    t = r.choice((D.U32, D.I32, D.F32, D.U64, D.F64))
    uses = [u for u in gen.ops.by_result[t] if u.args == (t, t) and not u.types and not u.attrs and not u.nan_bits]
    if not uses:
        return []
    scratch: str | None = "wc"
    count = workgroup * r.choice((1, 2))  # 2 W: a scan uses the two halves in turn
    if workgroup <= 32 and r.random() < 0.5:
        scratch, count = None, 0
    else:
        buffers.append(BufferDecl("wc", Access.WORKGROUP, t, count=count))
    out: list[Node] = []
    for _ in range(r.randint(1, 2)):
        kind = r.choice(tuple(KINDS))
        value = gen.expr(t, 3)
        if kind == "broadcast":
            k: Expr = Lit.of(D.U32, r.randrange(workgroup + 2)) if r.random() < 0.5 else \
                Op("primitive.bitwise.xor", (Id(IdKind.LOCAL, 0), Lit.of(D.U32, r.randrange(64))))
            operands = [value, k]
        else:
            operands = [value] + ([Lit.of(t, r.randrange(5))] if kind == "exclusive_scan" else [])
        name = gen.fresh()
        out.append(expand(kind, name, True, None if kind == "broadcast" else r.choice(uses).op, operands, scratch,
                          (workgroup, 1, 1), count))
        gen.scopes[-1][name] = t
    return out


def view_load(gen: _Gen, t: D, depth: int) -> Load | None:
    """Sometimes, in a program with byte views, a leaf of type u32 or u64 read through a view of
    a non-bool input (u8, u16 or u32 views for u32; u64 for u64) at a random index."""
    sources = [b for b in gen.inputs if b.dtype is not D.BOOL]
    if not gen.views or t not in (D.U32, D.U64) or not sources or gen.rng.random() >= 0.2:
        return None
    view = gen.rng.choice((D.U8, D.U16, D.U32)) if t is D.U32 else D.U64
    return Load(gen.rng.choice(sources).name, gen.index(depth), view=view)


def vector_types(gen: _Gen) -> list[D]:
    """In a program with vector copies, the word types of the buffers a copy may read anywhere (the
    inputs, workgroup memory once its rounds are done): the private array's type is one of them."""
    if not gen.vector:
        return []
    return sorted({b.dtype for b in (*gen.inputs, gen.shared) if b is not None and b.dtype in _WORDS},
                  key=lambda t: t.value)


def vector_copy(gen: _Gen) -> Copy | None:
    """``pv[c ..+ N] = src[j ..+ N]`` from a buffer nothing writes while it runs (None where none holds
    the private array's type): N = 2 or 4, c a constant index (some windows past the end), j mostly
    a multiple of N (the vector path) and sometimes any index (the element path, past the end too);
    either side may count whole vectors (``pv[c ..* N]``, ``src[i + l ..* N]``) where V047 allows."""
    r, pv = gen.rng, gen.private
    assert pv is not None
    sources = [b for b in (*gen.inputs, gen.shared) if b is not None and b.dtype is pv.dtype and b.dtype in _WORDS]
    if not sources:
        return None
    width = r.choice((2, 4))
    aligned = Op(_MUL, (Op(_ADD, (Var("i"), Lit.of(D.U32, r.randrange(3)))), Lit.of(D.U32, width)))
    index = aligned if r.random() < 0.6 else gen.index(2)
    dst_index, src = _private_index(gen), r.choice(sources)
    # sides counting whole vectors (src[q ..* N]): a global source, or workgroup memory of whole vectors (V047)
    src_units = r.random() < 0.3 and (not src.access.is_scratch or src.count % width == 0)
    if src_units:
        index = Op(_ADD, (Var("i"), Lit.of(D.U32, r.randrange(3))))
    dst_units = r.random() < 0.3 and pv.count % width == 0
    return Copy(pv.name, dst_index, src.name, index, width, dst_units, src_units)


def _private_index(gen: _Gen) -> Expr:
    """An index constant after unrolling: a literal (up to two past the end), an unroll counter
    around, or a counter plus a literal."""
    r, decl = gen.rng, gen.private
    assert decl is not None and isinstance(decl.count, int)
    pick = r.random()
    if gen.counters and pick < 0.6:
        counter = Var(r.choice(gen.counters))
        return counter if pick < 0.4 else Op(_ADD, (counter, Lit.of(D.U32, r.randrange(3))))
    return Lit.of(D.U32, r.randrange(decl.count + 2))


def private_load(gen: _Gen) -> Load:
    assert gen.private is not None
    return Load(gen.private.name, _private_index(gen))


def vector_prelude(gen: _Gen) -> list[Node]:
    """In a program with vector copies, one or two copies into the private array before the body
    (nothing, and no draw, in any other program)."""
    if not gen.vector:
        return []
    copies = [vector_copy(gen) for _ in range(gen.rng.randint(1, 2))]
    return [c for c in copies if c is not None]


def private_store(gen: _Gen) -> Store | Copy:
    assert gen.private is not None
    copy = vector_copy(gen) if gen.vector and gen.rng.random() < 0.8 else None  # no draw without copies
    if copy is not None:
        return copy
    return Store(gen.private.name, _private_index(gen), gen.expr(gen.private.dtype.value_type, 2))


def _read_order(r: random.Random) -> tuple[MemoryOrder, MemoryScope]:
    """An order a load or wait of workgroup memory may have (stronger than relaxed: workgroup scope, V036)."""
    order = r.choice((MemoryOrder.RELAXED, MemoryOrder.ACQUIRE))
    return order, (r.choice(tuple(MemoryScope)) if order is MemoryOrder.RELAXED else MemoryScope.WORKGROUP)


def ordered_read(gen: _Gen, b: BufferDecl, index: Expr, always: bool = False) -> Expr | None:
    """Sometimes (``always``: where it can) an atomic load or a bounded wait of workgroup memory
    ``b`` (read between barriers), else None (the caller makes a plain load)."""
    r = gen.rng
    if not gen.ordered or gen.lazy_arms or b.dtype not in _WORDS or (not always and r.random() < 0.3):
        return None
    order, scope = _read_order(r)
    if b.dtype in _INT_WORDS and r.random() < 0.5:
        value = Load(b.name, index) if r.random() < 0.5 else gen.expr(b.dtype, 1)  # equal: the bound runs out
        return Wait(b.name, index, value, Lit.of(D.U32, r.randint(1, 4)), order, scope)
    return Load(b.name, index, order, scope)


def shared_read(gen: _Gen, b: BufferDecl) -> list[Let]:
    """In an ordered program, right after a round of workgroup memory: a let of an ordered read of
    a slot (its own or a literal one), which later expressions may use."""
    if not gen.ordered:
        return []
    slot: Expr = Id(IdKind.LOCAL, 0) if gen.rng.random() < 0.5 else Lit.of(D.U32, gen.rng.randrange(8))
    read = ordered_read(gen, b, slot, always=True)
    if read is None:
        return []
    name = gen.fresh()
    gen.scopes[-1][name] = b.dtype
    return [Let(name, read)]


def ordered_store(gen: _Gen, store: Store, workgroup: bool) -> Store:
    """``store`` (of the invocation's own element) as an atomic store, sometimes, where its buffer holds words."""
    r, b = gen.rng, None
    if not gen.ordered or r.random() < 0.5:
        return store
    b = next((d for d in gen.buffers if d.name == store.buffer), None)
    if b is None or b.dtype not in _WORDS:
        return store
    order = r.choice((MemoryOrder.RELAXED, MemoryOrder.RELEASE))
    scope = MemoryScope.WORKGROUP if workgroup and order is not MemoryOrder.RELAXED else r.choice(tuple(MemoryScope))
    return Store(store.buffer, store.index, store.value, order, scope)


def acc_order(gen: _Gen) -> tuple[MemoryOrder, MemoryScope]:
    """The order and scope of an accumulator update: any, in an ordered program."""
    if not gen.ordered:
        return MemoryOrder.RELAXED, MemoryScope.DEVICE
    return gen.rng.choice(tuple(MemoryOrder)), gen.rng.choice(tuple(MemoryScope))
