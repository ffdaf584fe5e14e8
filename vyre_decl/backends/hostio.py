"""The host calling convention, shared by every backend.

Inputs are the non-output, non-workgroup buffers in declaration order (a sequence, or a mapping
by buffer name); each is a numpy array of the buffer's storage dtype (bool buffers also take
numpy bool arrays), raw bytes, or a list/tuple of values. Outputs (``write`` buffers, buffers
flagged ``output``, and ``read_write`` inputs) are returned in declaration order; outputs are
allocated and zero-filled. Every check happens before any work, and each error names the buffer
and ends with a Fix.

Codes: D001 input count, D002 dtype, D003 size, D004 bytes length, D005 grid, D006 unknown
buffer name, D007 too many elements, D008 bad config, D009 a grid beyond ``MAX_GRID``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, Mapping, Sequence

import numpy as np

from ..ir.diagnostics import VyreError
from ..ir.nodes import Access, Atomic, BufferDecl, Lit, Op, Program
from ..ir.ordering import uses_ordering
from ..ir.types import DataType
from ..ir.walk import body_exprs
from .config import DispatchConfig

__all__ = ["Launch", "CallPlan", "check_config", "check_timeout", "labelled", "check_workgroup", "prepare", "infer_grid", "grid_basis", "host_output", "as_storage", "MAX_ELEMENTS",
           "xyz", "check_ulp_budget", "check_capabilities", "check_out", "deliver", "MAX_GRID", "check_grid"]

MAX_ELEMENTS: Final = 2**32 - 1
# workgroups per axis (x, y, z) of the abstract machine, on every backend: what CUDA launches on
# every GPU (a device reports the same limits; the CUDA backend checks its own as well)
MAX_GRID: Final = (2**31 - 1, 65535, 65535)


@dataclass(frozen=True, slots=True)
class Launch:
    """Validated dispatch arguments: storage arrays for every non-workgroup buffer (inputs
    contiguous, read_write inputs copied, outputs zero-filled), all counts, and the grid."""

    memory: dict[str, np.ndarray]
    counts: dict[str, int]
    grid: tuple[int, int, int]
    workgroup: tuple[int, int, int]


def _fail(code: str, message: str, where: str, fix: str) -> VyreError:
    return VyreError.one(code, message, where, fix)


def as_storage(decl: BufferDecl, value: Any) -> np.ndarray:
    """``value`` as a flat contiguous array of the buffer's storage dtype, by strict rules: raw
    bytes (``bytes``, ``bytearray``, a byte ``memoryview``) are the storage itself; a typed
    ``memoryview`` or an array must already have the storage dtype (bool buffers also take numpy
    bools); a list or tuple must be flat and hold values of the buffer's kind — integers for
    integer buffers, integers or floats for float buffers, bools or integers for bool buffers.
    Nothing is truncated, parsed or reinterpreted (D002, D004)."""
    where = f"buffer {decl.name!r}"
    want = decl.dtype.storage_dtype
    if isinstance(value, memoryview) and value.format not in ("B", "b", "c"):
        value = np.asarray(value)  # a typed view: the array rules below apply to its type
    if isinstance(value, (bytes, bytearray, memoryview)):
        raw = memoryview(value)
        if not raw.c_contiguous:
            raise _fail("D004", "the bytes are not contiguous", where, "pass bytes(view) or a contiguous buffer")
        raw = raw.cast("B")
        if raw.nbytes % want.itemsize:
            raise _fail("D004", f"{raw.nbytes} bytes is not a whole number of {decl.dtype} elements "
                        f"({want.itemsize} bytes each)", where, f"pass a multiple of {want.itemsize} bytes")
        return np.frombuffer(raw, dtype=want)
    if isinstance(value, (list, tuple)):
        return _from_list(decl, value, where)
    if not isinstance(value, np.ndarray):
        raise _fail("D002", f"expected a numpy array, bytes or a list, got {type(value).__name__}", where,
                    f"pass np.asarray(..., dtype=np.{want.name})")
    if decl.dtype is DataType.BOOL and value.dtype == np.bool_:
        return value.ravel().astype(np.uint32)
    if value.dtype != want:
        hint = "np.bool_ or np.uint32 words" if decl.dtype is DataType.BOOL else f"np.{want.name}"
        if decl.dtype is DataType.BF16:
            hint += " (bf16 bit patterns)"
        raise _fail("D002", f"expected {decl.dtype} elements ({hint}), got a {value.dtype} array", where,
                    f"convert it: arr.astype(np.{want.name}) — no implicit conversion happens")
    return np.ascontiguousarray(value).ravel()


# the element kinds (numpy dtype.kind) a list may hold, by the buffer's kind
_LIST_KINDS: Final = {"int": "iu", "float": "iuf", "bool": "biu"}


def _from_list(decl: BufferDecl, value: Sequence[Any], where: str) -> np.ndarray:
    t = decl.dtype
    kind = "bool" if t is DataType.BOOL else "float" if t.is_float else "int"
    try:
        probe = np.asarray(value)
    except (ValueError, TypeError, OverflowError):
        probe = np.asarray(value, dtype=object)
    if probe.ndim != 1 and probe.size:
        raise _fail("D002", f"expected a flat list of values, got nesting of depth {probe.ndim}", where,
                    "flatten it (or pass a numpy array, which is flattened in C order)")
    if probe.size and probe.dtype.kind not in _LIST_KINDS[kind] + "O":
        what = {"f": "floats", "U": "strings", "S": "bytes strings", "b": "bools", "c": "complex numbers"}.get(
            probe.dtype.kind, f"{probe.dtype} values")
        raise _fail("D002", f"a list of {what} cannot fill a {t} buffer", where,
                    f"pass {'integers' if kind == 'int' else 'numbers'} (or a numpy array of np.{t.storage_dtype.name})")
    if probe.dtype.kind == "O":  # mixed or huge Python numbers: each must be of the buffer's kind
        allowed = (bool, int, np.integer) if kind == "bool" else (int, np.integer) if kind == "int" else \
            (int, float, np.integer, np.floating)
        bad = next((v for v in value if not isinstance(v, allowed) or (kind != "bool" and isinstance(v, bool))), None)
        if bad is not None:
            raise _fail("D002", f"{bad!r} ({type(bad).__name__}) cannot be an element of a {t} buffer", where,
                        f"pass {'integers' if kind == 'int' else 'numbers'} only")
    try:
        return np.ascontiguousarray(np.asarray(value, dtype=t.numpy_dtype).astype(t.storage_dtype))
    except (OverflowError, ValueError, TypeError) as exc:
        raise _fail("D002", f"cannot convert the list to {t}: {exc}", where, f"pass values that fit {t}") from None


def grid_basis(program: Program) -> tuple[str, ...]:
    """The buffers whose largest element count sets an inferred grid: the outputs — or every
    non-workgroup buffer when the program uses workgroup memory or atomics, or has no outputs."""
    outputs = tuple(b.name for b in program.buffers if b.is_output)
    wide = any(b.access is Access.WORKGROUP for b in program.buffers) or uses_ordering(program)
    if wide or not outputs:
        return tuple(b.name for b in program.buffers if not b.access.is_scratch)
    return outputs


def infer_grid(program: Program, counts: Mapping[str, int], workgroup: tuple[int, int, int],
               basis: tuple[str, ...] | None = None) -> tuple[int, int, int]:
    """vyre's rule: one invocation per element of the largest buffer of ``grid_basis``, rounded
    up to whole 1-D workgroups. Programs with 2-D/3-D workgroups must give the grid explicitly."""
    if workgroup[1] != 1 or workgroup[2] != 1:
        raise _fail("D005", f"cannot infer a grid for the {workgroup} workgroup", f"program {program.name!r}",
                    "pass DispatchConfig(grid=(gx, gy, gz))")
    names = grid_basis(program) if basis is None else basis
    n = max((counts[name] for name in names), default=0)
    return (-(-n // workgroup[0]), 1, 1)


class CallPlan:
    """The calling convention of one program, worked out once: the inputs (storage dtype and fixed
    count of each), the counts of the other buffers (static, or following another's ``len``) and
    the buffers that size an inferred grid. ``prepare`` checks a dispatch with it, a backend's
    steady state takes ``fast``, resident launches take ``counts`` over their buffers."""

    __slots__ = ("program", "inputs", "specs", "static", "likes", "basis", "workgroup", "flat")

    def __init__(self, program: Program) -> None:
        self.program, self.inputs = program, program.inputs
        self.specs = [(d.name, d.dtype.storage_dtype, d.count, d) for d in self.inputs]
        self.static = {d.name: d.count for d in program.buffers if not d.is_input and d.count_like is None}
        self.likes = [(d.name, d.count_like, d.is_input) for d in program.buffers if d.count_like is not None]
        self.basis = grid_basis(program)
        self.workgroup = program.workgroup_size
        self.flat = program.workgroup_size[1:] == (1, 1)

    def counts(self, given: Mapping[str, int], exact: bool = True) -> dict[str, int]:
        """Every buffer's element count from the counts ``given`` for the inputs (or all bound
        buffers). ``exact``: an input declared ``len(x)`` must have exactly that many (D003)."""
        counts = dict(self.static)
        counts.update(given)
        for name, like, is_input in self.likes:
            want = counts[like]
            if exact and is_input and counts[name] != want:
                raise _fail("D003", f"expected len({like}) = {want} elements, got {counts[name]}",
                            f"buffer {name!r}", f"pass {want} elements")
            counts[name] = want
        return counts

    def grid(self, counts: Mapping[str, int], workgroup: tuple[int, int, int] | None = None,
             lanes: int = 1) -> tuple[int, int, int]:
        """The inferred grid (``infer_grid``) for these counts; ``lanes``: elements per invocation
        of a vectorised entry (its grid is that much smaller)."""
        wg = workgroup or self.workgroup
        if wg is self.workgroup and self.flat:
            return (-(-max((counts[n] for n in self.basis), default=0) // (wg[0] * lanes)), 1, 1)
        return infer_grid(self.program, counts, wg, self.basis)

    def fast(self, inputs: Any, config: DispatchConfig,
             lanes: int = 1) -> tuple[list[np.ndarray], dict[str, int], tuple[int, int, int]] | None:
        """The steady state of a dispatch: positional numpy arrays of the right dtypes and sizes
        and an inferred grid give (input arrays, counts, grid); anything else gives None, and the
        caller takes ``prepare``, which checks everything and names what is wrong. ``lanes``: as
        for ``grid``."""
        if type(inputs) not in (list, tuple) or len(inputs) != len(self.specs) or config.grid is not None:
            return None
        arrays, given = [], {}
        for (name, st, fixed, decl), a in zip(self.specs, inputs):
            if type(a) is not np.ndarray or a.dtype is not st or not a.flags.c_contiguous:
                a = as_storage(decl, a)
            n = a.size
            if (fixed and n != fixed) or n > MAX_ELEMENTS:
                return None
            given[name] = n
            arrays.append(a)
        for name, like, is_input in self.likes:
            if is_input and given[name] != given[like]:
                return None
        counts = self.counts(given, exact=False)
        return arrays, counts, self.grid(counts, lanes=lanes)


def prepare(program: Program, inputs: Sequence[Any] | Mapping[str, Any], config: DispatchConfig,
            plan: CallPlan | None = None) -> Launch:
    """Check ``inputs`` against the program and build the launch arguments (with the program's
    ``plan`` when the caller keeps one). ``config`` has passed ``check_config`` (every backend
    checks a config once, before it reads it)."""
    plan = plan or CallPlan(program)
    expected = program.inputs
    if isinstance(inputs, Mapping):
        unknown = [k for k in inputs if k not in {b.name for b in expected}]
        if unknown:
            raise _fail("D006", f"{unknown[0]!r} is not an input buffer", f"program {program.name!r}",
                        f"pass the inputs {', '.join(b.name for b in expected) or '(none)'}")
        missing = [b.name for b in expected if b.name not in inputs]
        if missing:
            raise _fail("D001", f"missing input {missing[0]!r}", f"program {program.name!r}",
                        f"pass every input: {', '.join(b.name for b in expected)}")
        values = [inputs[b.name] for b in expected]
    else:
        if not isinstance(inputs, (list, tuple)):
            raise _fail("D001", f"inputs must be a list or tuple (one value per input buffer) or a dict by name, "
                        f"got {type(inputs).__name__}", f"program {program.name!r}",
                        f"pass [{', '.join(b.name for b in expected)}] or {{name: array}}")
        values = list(inputs)
        if len(values) != len(expected):
            names = ", ".join(b.name for b in expected) or "none"
            raise _fail("D001", f"expected {len(expected)} input(s) ({names}), got {len(values)}",
                        f"program {program.name!r}", "pass one array per input buffer, in declaration order")
    memory: dict[str, np.ndarray] = {}
    given: dict[str, int] = {}
    for decl, value in zip(expected, values):
        arr = as_storage(decl, value)
        where = f"buffer {decl.name!r}"
        if arr.size > MAX_ELEMENTS:
            raise _fail("D007", f"{arr.size} elements exceed the 2^32-1 limit", where, "split the work")
        if decl.count and arr.size != decl.count:
            raise _fail("D003", f"expected {decl.count} elements, got {arr.size}", where,
                        f"pass exactly {decl.count} elements (or declare the buffer runtime-sized: {decl.dtype}[])")
        if decl.access is Access.READ_WRITE:
            arr = arr.copy()  # the caller's array is never modified
        memory[decl.name] = arr
        given[decl.name] = int(arr.size)
    counts = plan.counts(given)
    for decl in program.outputs:
        if decl.is_output:
            memory[decl.name] = np.zeros(counts[decl.name], decl.dtype.storage_dtype)
    workgroup = config.workgroup or program.workgroup_size
    if len(workgroup) != 3 or any(not isinstance(v, int) or v < 1 for v in workgroup):
        raise _fail("D008", f"bad workgroup override {workgroup!r}", "DispatchConfig.workgroup", "give three positive integers")
    if config.grid is not None:
        grid = tuple(config.grid)
        if len(grid) != 3 or any(not isinstance(v, int) or v < 0 for v in grid):
            raise _fail("D005", f"bad grid {config.grid!r}", "DispatchConfig.grid", "give three non-negative integers")
    else:
        grid = plan.grid(counts, tuple(workgroup))  # type: ignore[arg-type]
    check_grid(program, grid)  # type: ignore[arg-type]
    return Launch(memory, counts, grid, tuple(workgroup))  # type: ignore[arg-type]


def check_grid(program: Program, grid: tuple[int, int, int]) -> None:
    """D009 for a grid (given or inferred) beyond ``MAX_GRID``."""
    if any(g > m for g, m in zip(grid, MAX_GRID)):
        raise _fail("D009", f"grid {grid} exceeds the limits of {MAX_GRID[0]:,} x {MAX_GRID[1]:,} x {MAX_GRID[2]:,} "
                    "workgroups", f"program {program.name!r}", "split the dispatch or use larger workgroups")


def check_config(config: DispatchConfig) -> None:
    """The values of a DispatchConfig: repeat at least 1, timeout None or a positive number, label
    a string (and that it is a DispatchConfig at all)."""
    if not isinstance(config, DispatchConfig):
        raise _fail("D008", f"a config must be a DispatchConfig, got {type(config).__name__}", "config",
                    "pass vyre_decl.DispatchConfig(...) (or None for the defaults)")
    if not isinstance(config.repeat, int) or config.repeat < 1:
        raise _fail("D008", f"repeat must be at least 1, got {config.repeat!r}", "DispatchConfig.repeat",
                    "use repeat=1 or more")
    check_timeout(config.timeout, "DispatchConfig.timeout")
    if not isinstance(config.label, str):
        raise _fail("D008", f"label must be a string, got {config.label!r}", "DispatchConfig.label",
                    "use a short name such as label=\"step 3\"")


def check_timeout(t: object, where: str) -> None:
    """A bound on a wait: None (the default) or a positive, finite number of seconds (D008)."""
    if t is not None and (isinstance(t, bool) or not isinstance(t, (int, float)) or not 0 < t < float("inf")):
        raise _fail("D008", f"timeout must be a positive number of seconds, got {t!r}", where,
                    "use timeout=None (the default bound) or a number of seconds such as 5.0")


def labelled(error: VyreError, config: DispatchConfig) -> VyreError:
    """``error`` naming the dispatch's label, when it has one."""
    label = config.label if isinstance(config, DispatchConfig) else ""
    return error.within(f"in dispatch {label!r}") if label else error


def check_workgroup(program: Program, config: DispatchConfig) -> None:
    """A pipeline runs with the workgroup size it was compiled for; asking for another is an error."""
    if config.workgroup is not None and tuple(config.workgroup) != program.workgroup_size:
        raise _fail("D008", f"this pipeline was compiled for workgroup {program.workgroup_size}, not "
                    f"{tuple(config.workgroup)}", f"program {program.name!r}",
                    "compile a pipeline with that DispatchConfig (backend.compile(program, config)), "
                    "or dispatch through the backend")


def host_output(decl: BufferDecl, raw: np.ndarray) -> np.ndarray:
    """A returned buffer as the user sees it: bool buffers as numpy bool arrays, others as their
    storage dtype (bf16 as uint16 bit patterns)."""
    return raw != 0 if decl.dtype is DataType.BOOL else raw


def check_out(program: Program, counts: Mapping[str, int], out: Sequence[Any]) -> list[np.ndarray]:
    """Caller-provided arrays for a dispatch's outputs (``dispatch(..., out=[...])``): one per
    output, in order, each a writeable C-contiguous numpy array of the output's host dtype (bool
    for bool buffers, else the storage dtype) and element count. Checked before anything runs."""
    outputs = program.outputs
    if not isinstance(out, (list, tuple)) or len(out) != len(outputs):
        raise _fail("D015", f"out must be a list of {len(outputs)} array(s), one per output "
                    f"({', '.join(d.name for d in outputs)})", f"program {program.name!r}",
                    "pass out=[np.empty(n, dtype), ...] in output order, or leave out=None")
    arrays = []
    for d, a in zip(outputs, out):
        want = np.dtype(np.bool_) if d.dtype is DataType.BOOL else d.dtype.storage_dtype
        n = counts[d.name]
        if not isinstance(a, np.ndarray) or a.dtype != want or a.size != n or not a.flags.c_contiguous \
                or not a.flags.writeable:
            got = f"{type(a).__name__} {getattr(a, 'dtype', '')} x {getattr(a, 'size', '?')}"
            raise _fail("D015", f"out for {d.name!r} must be a writeable C-contiguous {want} array of {n} elements, "
                        f"got {got}", f"buffer {d.name!r}", f"pass np.empty({n}, np.{want.name})")
        arrays.append(a if a.ndim == 1 else a.reshape(-1))
    return arrays


def deliver(decl: BufferDecl, raw: np.ndarray, into: np.ndarray | None) -> np.ndarray:
    """A returned buffer (its storage ``raw``) as a new host array, or written into ``into``."""
    if into is None:
        return host_output(decl, raw.copy())
    if decl.dtype is DataType.BOOL:
        np.not_equal(raw, 0, out=into)
    else:
        np.copyto(into, raw, casting="no")
    return into


def xyz(size: Sequence[int]) -> tuple[int, int, int]:
    """A workgroup size or grid given as any 3-sequence, as a tuple of three ints."""
    x, y, z = size
    return int(x), int(y), int(z)


def check_ulp_budget(program: Program, registry: Any, config: DispatchConfig) -> None:
    """With ``config.ulp_budget``, refuse a program that calls an op declared less accurate than
    the budget for a float type the program uses (its buffers, literals and casts): D014 names
    every such op. Both backends give the same bits either way; the budget is the caller's bound
    on the distance from the true result."""
    budget = config.ulp_budget
    if budget is None:
        return
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 0:
        raise _fail("D008", f"ulp_budget must be a non-negative integer, got {budget!r}", "DispatchConfig.ulp_budget",
                    "use ulp_budget=None (no bound) or a number of ULP such as 1")
    floats = {b.dtype.value_type for b in program.buffers if b.dtype.is_float}
    used: set[str] = set()
    for e in body_exprs(program.body):
        if isinstance(e, Lit) and e.dtype.is_float:
            floats.add(e.dtype)
        elif isinstance(e, Op):
            used.add(e.op)
            floats.update(t for _, t in e.types if t.is_float)
    over = []
    for op_id in sorted(used):
        op = registry.get(op_id)
        worst = max((op.accuracy(t) for t in floats), default=0)
        if worst > budget:
            over.append(f"{op_id} ({worst} ULP)")
    if over:
        raise _fail("D014", f"program {program.name!r} calls op(s) less accurate than ulp_budget={budget}: "
                    + ", ".join(over), f"program {program.name!r}",
                    "raise ulp_budget, or use ops within the budget (the accuracy table: docs/accuracy.md)")


def check_capabilities(program: Program, registry: Any, capabilities: frozenset[str], backend: str) -> None:
    """Refuse, before any transfer, a program this backend cannot run (B007): a dialect whose
    ``requires`` names a capability the backend lacks, f64/i64 values, atomics or workgroup
    memory without the matching capability flag."""
    needs: dict[str, str] = {}
    for b in program.buffers:
        if b.dtype.value_type in (DataType.F64,):
            needs.setdefault("f64", f"buffer {b.name!r} holds f64")
        if b.dtype.value_type in (DataType.I64, DataType.U64):
            needs.setdefault("i64", f"buffer {b.name!r} holds {b.dtype.value}")
        if b.access is Access.WORKGROUP:
            needs.setdefault("workgroup_memory", f"workgroup buffer {b.name!r}")
    for e in body_exprs(program.body):
        if isinstance(e, Atomic):
            needs.setdefault("atomics", f"atomic {e.op}")
        if isinstance(e, (Op, Atomic)):
            op = registry.get(e.op)
            dialect = registry.dialects.get(op.dialect)
            for flag in dialect.requires if dialect is not None else ():
                needs.setdefault(flag, f"op {e.op} (dialect {op.dialect} requires it)")
    if "atomics" not in needs and uses_ordering(program):
        needs["atomics"] = "an atomic load, store or wait"
    missing = {flag: why for flag, why in needs.items() if flag not in capabilities}
    if missing:
        flag, why = next(iter(sorted(missing.items())))
        raise _fail("B007", f"backend {backend!r} lacks the capability {flag!r} that program {program.name!r} needs "
                    f"({why})" + (f"; also missing: {', '.join(sorted(missing)[1:])}" if len(missing) > 1 else ""),
                    f"program {program.name!r}", "run it on a backend with that capability (vyre_decl.list_backends() "
                    "shows each backend's flags), or avoid what needs it")