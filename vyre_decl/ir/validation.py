"""Program validation: typing, scoping, memory rules, uniform barriers and size limits
(which control flow is uniform is ``uniformity.py``'s to say).

``validate`` returns every problem it finds as a ``Diagnostic`` with a stable code, the node
path where it is (``body[2].then[0].value.args[1]``) and a ``Fix:`` hint; ``check`` raises them
as one ``VyreError``. Expressions are typed by ``exprtypes.infer_type`` (re-exported here).

Codes:
V001 duplicate buffer name        V002 duplicate binding          V003 bad workgroup size
V004 unknown buffer               V005 unknown op                 V006 wrong arity
V007 type mismatch                V008 shadowing a variable       V009 assign to unbound name
V010 assign to a loop variable    V011 store to read-only buffer  V012 atomic on non-writable
V013 atomic op/type misuse        V014 barrier in divergent flow  V015 nesting too deep
V016 expression too deep          V017 too many statements        V018 unbound variable
V019 bad buffer declaration       V020 bad identifier             V021 bad type args/attrs
V022 condition is not bool        V023 index is not u32           V024 bad loop bounds
V025 too many buffers (kernel parameters)  V026 an atomic in an arm of a lazy branch
V027 a collective (subgroup) op in divergent control flow   V028 a collective op in an arm of a lazy branch
V029 bad private array             V030 private index not constant V031 unroll bounds not literals
V032 unrolling copies too much     V033 atomic on a private array  (V029-V032: ``unrolling.py``)
V035-V038 ordered atomics and waits: orders, scopes, buffers, bounds (``ordering.py``)
V039 a break outside a loop            V040 a break in an unroll loop
V043-V046 vector copies: width, element types, one buffer, word types (``vcopy.py``)
V051-V052 workgroup collectives, raised where they are written (``wgcollect.py``; their expansions
are validated here as any statements)
V053 a resident(N) that cannot fit one multiprocessor
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from .diagnostics import Diagnostic, VyreError
from .nodes import (
    MAX_RESIDENT,
    MAX_RESIDENT_INVOCATIONS,
    Access,
    Assign,
    Barrier,
    Block,
    Break,
    BufferDecl,
    Copy,
    Expr,
    If,
    Let,
    Loop,
    MemoryScope,
    Node,
    Program,
    Region,
    Return,
    Store,
)
from .exprtypes import MAX_EXPR_DEPTH, ExprFault, infer_type
from .ordering import access_problem
from .signature import OpTable
from .lexer import KEYWORDS, TOKEN_RE
from .types import DataType
from .uniformity import divergent_barriers
from .vcopy import copy_problems
from .wgmem import workgroup_memory_problems
from .unrolling import private_bytes_problem, private_decl_problem, unroll_problems

__all__ = ["Limits", "validate", "check", "infer_type", "ExprFault", "is_identifier"]

_IDENT_RE: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_LOOP_TYPES: Final = (DataType.U32, DataType.I32, DataType.U64, DataType.I64)
_MAX_COUNT: Final = 2**32 - 1
_DEVICE: Final = MemoryScope.DEVICE


MAX_WORKGROUP_INVOCATIONS: Final = 1024  # what every CUDA GPU since sm_20 launches
# a kernel takes each non-workgroup buffer's address (8 bytes) and element count (4 bytes) as a
# parameter; PTX before ISA 8.1 allows 4 KB of parameters (what every target we emit accepts)
MAX_PARAM_BYTES: Final = 4096
PARAM_BYTES_PER_BUFFER: Final = 12


@dataclass(frozen=True, slots=True)
class Limits:
    max_nesting: int = 64
    max_expr_depth: int = MAX_EXPR_DEPTH
    max_statements: int = 8192


def is_identifier(name: object) -> bool:
    """A valid variable/buffer/program name: an identifier that is no keyword and does not read
    as a literal (``nan_f32`` would)."""
    if not isinstance(name, str) or not _IDENT_RE.match(name) or name in KEYWORDS:
        return False
    m = TOKEN_RE.match(name)
    return not (m and m.lastgroup == "num" and m.end() == len(name))


class _Validator:
    def __init__(self, program: Program, ops: OpTable, limits: Limits) -> None:
        self.program, self.ops, self.limits = program, ops, limits
        self.diags: list[Diagnostic] = []
        self.buffers: dict[str, BufferDecl] = {}
        self.scopes: list[dict[str, tuple[DataType, bool]]] = [{}]
        self.visible: dict[str, tuple[DataType, bool]] = {}
        self.types: dict[str, DataType] = {}  # the same names with their types alone
        self.statements = 0
        self.too_many_reported = False
        self.loops: list[bool] = []  # the enclosing loops, innermost last: whether each is unrolled

    def error(self, code: str, message: str, path: str, fix: str) -> None:
        self.diags.append(Diagnostic(code, message, path, fix))

    def run(self) -> list[Diagnostic]:
        self.check_header()
        self.walk(self.program.body, "body", 0)
        has_trait = getattr(self.ops, "has_trait", None)  # a registry knows which ops are collective
        collective = None if has_trait is None else (lambda op_id: self.ops.signature(op_id) is not None
                                                     and bool(has_trait(op_id, "collective")))
        if not self.too_many_reported:  # past the statement limit nothing more is walked
            self.diags += unroll_problems(self.program, collective)
        barriers, collectives = divergent_barriers(self.program, collective)
        for path in barriers:
            self.error("V014", "barrier in non-uniform control flow", path,
                       "move the barrier out of branches/loops that depend on per-invocation values, "
                       "and do not return early before it")
        for path, op_id, lazy in collectives:
            if lazy:
                self.error("V028", f"the collective op {op_id} in an arm of a lazy branch() runs only in the lanes "
                           "that choose that arm", path, "compute it before the branch with let, or use select()")
            else:
                self.error("V027", f"the collective op {op_id} is called in control flow that not every invocation "
                           "of the workgroup takes alike: the lanes of its subgroup would not run it together", path,
                           "call it before the if/loop whose condition or bounds depend on per-invocation values "
                           "(let v = op(...)), and use the value inside; an early return before it is fine")
        return self.diags

    # --- header
    def check_resident(self) -> None:
        """V053: ``resident(N)`` asks for N workgroups at once on one multiprocessor; they must fit
        the largest (32 workgroups, 2048 invocations)."""
        p, n = self.program, self.program.resident
        threads = p.workgroup_size[0] * p.workgroup_size[1] * p.workgroup_size[2] if len(p.workgroup_size) == 3 else 0
        if type(n) is not int or not 0 <= n <= MAX_RESIDENT or n * threads > MAX_RESIDENT_INVOCATIONS:
            self.error("V053", f"resident({n!r}) with workgroups of {threads} invocations: a multiprocessor holds at most "
                       f"{MAX_RESIDENT} workgroups and {MAX_RESIDENT_INVOCATIONS} invocations", "resident",
                       f"ask for at most {max(1, min(MAX_RESIDENT, MAX_RESIDENT_INVOCATIONS // max(threads, 1)))} "
                       "workgroups, or leave resident out")

    def check_header(self) -> None:
        p = self.program
        if not is_identifier(p.name):
            self.error("V020", f"bad program name {p.name!r}", "name", "use an identifier that is not a keyword")
        wg = p.workgroup_size
        if (len(wg) != 3 or any(not isinstance(v, int) or v < 1 for v in wg) or wg[0] > 1024 or wg[1] > 1024
                or wg[2] > 64 or wg[0] * wg[1] * wg[2] > MAX_WORKGROUP_INVOCATIONS):
            self.error("V003", f"workgroup size {tuple(wg)} must be three positive integers, at most (1024, 1024, 64) "
                       f"and {MAX_WORKGROUP_INVOCATIONS} invocations in all", "workgroup_size", "use e.g. (64, 1, 1)")
        self.diags += workgroup_memory_problems(p)  # V019 / V048 (ir/wgmem.py)
        self.check_resident()
        private = private_bytes_problem(p.buffers)
        if private is not None:
            self.error("V029", private, "buffers", "keep per-invocation arrays small (registers), and larger scratch "
                       "in a workgroup buffer")
        bound = sum(1 for b in p.buffers if not b.access.is_scratch)
        if bound * PARAM_BYTES_PER_BUFFER > MAX_PARAM_BYTES:
            self.error("V025", f"{bound} buffers need {bound * PARAM_BYTES_PER_BUFFER} bytes of kernel parameters, more "
                       f"than {MAX_PARAM_BYTES}", "buffers",
                       f"use at most {MAX_PARAM_BYTES // PARAM_BYTES_PER_BUFFER} buffers (pack related data into one)")
        bindings: dict[int, str] = {}
        for i, b in enumerate(p.buffers):
            where = f"buffers[{i}]"
            if not is_identifier(b.name):
                self.error("V020", f"bad buffer name {b.name!r}", where, "use an identifier that is not a keyword")
            if b.name in self.buffers:
                self.error("V001", f"buffer {b.name!r} declared twice", where, "rename one of them")
                continue
            self.buffers[b.name] = b
            self.check_buffer(b, where)
            if b.binding is not None:
                if b.binding in bindings:
                    self.error("V002", f"binding {b.binding} used by {bindings[b.binding]!r} and {b.name!r}", where,
                               "give every non-workgroup buffer its own binding")
                bindings.setdefault(b.binding, b.name)

    def check_buffer(self, b: BufferDecl, where: str) -> None:
        bad = lambda msg, fix: self.error("V019", f"buffer {b.name!r}: {msg}", where, fix)  # noqa: E731
        if b.access is Access.PRIVATE:
            problem = private_decl_problem(b)
            if problem is not None:
                self.error("V029", problem[0], where, problem[1])
            return
        if not isinstance(b.count, int) or not 0 <= b.count <= _MAX_COUNT:
            bad(f"count {b.count!r} out of range", "use 0 (sized at dispatch) or a count below 2^32")
        if b.access is Access.WORKGROUP:
            if b.binding is not None:
                bad("workgroup buffers take no binding", "remove the @binding")
            if b.count == 0:
                bad("workgroup buffers need a fixed count", "declare a count, e.g. f32[256]")
            if b.is_output or b.count_like is not None:
                bad("workgroup buffers cannot be outputs or sized like another buffer", "remove output/len(...)")
            return
        if b.binding is None or not isinstance(b.binding, int) or b.binding < 0:
            bad("needs a binding number", "add @N with a unique N >= 0")
        if b.is_output and b.access in (Access.READ, Access.UNIFORM):
            bad(f"a {b.access.value} buffer cannot be an output", "declare it read_write or write")
        if b.count_like is not None:
            other = self.program_buffer(b.count_like)
            if other is None or other is b or not other.is_input:
                bad(f"len({b.count_like}) must name another input buffer",
                    "size it like a read, uniform or read_write (non-output) buffer")
        elif b.is_output and b.count == 0:
            bad("an output needs a size", f"declare a count (e.g. {b.dtype}[1024]) or len(<input buffer>)")

    def program_buffer(self, name: str) -> BufferDecl | None:
        return next((x for x in self.program.buffers if x.name == name), None)

    # --- scopes
    def push(self) -> None:
        self.scopes.append({})

    def pop(self) -> None:
        for name in self.scopes.pop():
            del self.visible[name]
            del self.types[name]

    def bind(self, name: str, dtype: DataType, loop_var: bool, path: str) -> None:
        if not is_identifier(name):
            self.error("V020", f"bad variable name {name!r}", path, "use an identifier that is not a keyword")
        if name in self.visible:
            self.error("V008", f"{name!r} shadows a variable that is still in scope", path,
                       f"pick a new name, or assign the existing one: {name} = ...")
            return
        self.scopes[-1][name] = (dtype, loop_var)
        self.visible[name] = (dtype, loop_var)
        self.types[name] = dtype  # what type_of reads: kept beside visible, never rebuilt

    def type_of(self, e: Expr, path: str) -> DataType | None:
        try:
            return infer_type(e, path, self.types, self.buffers, self.ops, 0, self.limits.max_expr_depth)
        except ExprFault as fault:
            self.diags.append(fault.diagnostic())
            return None

    # --- statements
    def walk(self, body: tuple[Node, ...], path: str, depth: int) -> None:
        if depth > self.limits.max_nesting:
            self.error("V015", f"statements nested deeper than {self.limits.max_nesting}", path,
                       "flatten the control flow")
            return
        for i, node in enumerate(body):
            self.statements += 1
            if self.statements > self.limits.max_statements:  # report once, then stop: no work past the limit
                if not self.too_many_reported:
                    self.too_many_reported = True
                    self.error("V017", f"more than {self.limits.max_statements} statements", f"{path}[{i}]",
                               "split the program")
                return
            self.node(node, f"{path}[{i}]", depth)

    def store(self, n: Store, path: str) -> None:
        decl = self.buffers.get(n.buffer)
        t = self.type_of(n.value, f"{path}.value")
        it = self.type_of(n.index, f"{path}.index")
        if decl is None:
            self.error("V004", f"unknown buffer {n.buffer!r}", path, "declare it")
            return
        if not decl.access.writable:
            self.error("V011", f"store to {decl.access.value} buffer {decl.name!r}", path,
                       "declare the buffer read_write (or write)")
        if it is not None and it is not DataType.U32:
            self.error("V023", f"index must be u32, got {it}", f"{path}.index", "cast it: `i as u32`")
        want = decl.dtype.value_type
        if t is not None and t is not want:
            self.error("V007", f"buffer {decl.name!r} stores {want} values ({decl.dtype} in memory), got {t}",
                       f"{path}.value", f"cast the value: `... as {want}`")
        problem = access_problem("store", decl, n.order, n.scope) if n.order or n.scope is not _DEVICE else None
        if problem is not None:  # an atomic store that cannot be
            self.error(problem[0], problem[1], path, problem[2])

    def copy(self, n: Copy, path: str) -> None:
        decls = []
        for name, index, where in ((n.dst, n.dst_index, "dst_index"), (n.src, n.src_index, "src_index")):
            it = self.type_of(index, f"{path}.{where}")
            if it is not None and it is not DataType.U32:
                self.error("V023", f"index must be u32, got {it}", f"{path}.{where}", "cast it: `i as u32`")
            decls.append(self.buffers.get(name))
            if decls[-1] is None:
                self.error("V004", f"unknown buffer {name!r}", path, "declare it")
        dst, src = decls
        if dst is None or src is None:
            return
        if not dst.access.writable:
            self.error("V011", f"vector copy to {dst.access.value} buffer {dst.name!r}", path,
                       "declare the buffer read_write (or write)")
        for code, message, fix in copy_problems(n, dst, src):
            self.error(code, message, path, fix)

    def assign(self, n: Assign, path: str) -> None:
        t = self.type_of(n.value, f"{path}.value")
        have = self.visible.get(n.name)
        if have is None:
            self.error("V009", f"assignment to {n.name!r}, which is not bound here", path,
                       f"declare it first: let {n.name} = ...")
        elif have[1]:
            self.error("V010", f"assignment to loop variable {n.name!r}", path,
                       "copy it into a let variable and change that")
        elif t is not None and t is not have[0]:
            self.error("V007", f"{n.name!r} is {have[0]} but the value is {t}", path, f"cast the value: `... as {have[0]}`")

    def loop(self, n: Loop, path: str, depth: int) -> None:
        a, b = self.type_of(n.start, f"{path}.start"), self.type_of(n.end, f"{path}.end")
        var_type = a if a in _LOOP_TYPES else DataType.U32
        if a is not None and b is not None and (a is not b or a not in _LOOP_TYPES):
            self.error("V024", f"loop bounds must be one integer type (u32, i32, u64, i64), got {a} and {b}", path,
                       "cast the bounds to the same integer type")
        self.push()
        self.bind(n.var, var_type, True, path)
        self.loops.append(n.unroll)
        self.walk(n.body, f"{path}.body", depth + 1)
        self.loops.pop()
        self.pop()

    def break_(self, path: str) -> None:
        if not self.loops:
            self.error("V039", "break outside a loop", path, "put the break inside a loop, or end the invocation with return")
        elif self.loops[-1]:
            self.error("V040", "break in an unroll loop (its copies are straight-line code with no loop to leave)", path,
                       "remove unroll from the loop, or guard the rest of its body with an if")

    def node(self, n: Node, path: str, depth: int) -> None:
        if isinstance(n, Let):
            t = self.type_of(n.value, f"{path}.value")
            if t is not None:
                self.bind(n.name, t, False, path)
        elif isinstance(n, Assign):
            self.assign(n, path)
        elif isinstance(n, Store):
            self.store(n, path)
        elif isinstance(n, Copy):
            self.copy(n, path)
        elif isinstance(n, If):
            t = self.type_of(n.cond, f"{path}.cond")
            if t is not None and t is not DataType.BOOL:
                self.error("V022", f"if condition must be bool, got {t}", f"{path}.cond", "compare it, e.g. `x != 0u32`")
            for name, body in (("then", n.then), ("otherwise", n.otherwise)):
                self.push()
                self.walk(body, f"{path}.{name}", depth + 1)
                self.pop()
        elif isinstance(n, Loop):
            self.loop(n, path, depth)
        elif isinstance(n, Block):
            self.push()
            self.walk(n.body, f"{path}.body", depth + 1)
            self.pop()
        elif isinstance(n, Region):
            if not isinstance(n.generator, str):
                self.error("V020", "region generator must be a string", path, "name what produced the region")
            self.walk(n.body, f"{path}.body", depth + 1)
        elif isinstance(n, Break):
            self.break_(path)
        elif not isinstance(n, (Return, Barrier)):
            self.error("V020", f"not a statement node: {type(n).__name__}", path, "build statements from vyre_decl.ir nodes")


# ----------------------------------------------------------------------------- entry points


def validate(program: Program, ops: OpTable, limits: Limits = Limits()) -> list[Diagnostic]:
    """Every problem in ``program`` (empty when it is valid)."""
    return _Validator(program, ops, limits).run()


def check(program: Program, ops: OpTable, limits: Limits = Limits()) -> None:
    """Raise VyreError listing every problem in ``program``; return None when it is valid."""
    diags = validate(program, ops, limits)
    if diags:
        from .sourcemap import locate  # a program read from a named text: file:line:col

        raise VyreError(locate(program, diags), f"program {program.name!r} is invalid ({len(diags)} problem(s)):")
