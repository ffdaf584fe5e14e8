"""Expression typing: ``infer_type`` gives the type of one expression or raises ``ExprFault``
(code, message, fix and the node path of the culprit). Shared by validation and the interpreters;
the statement-level checks are ``validation.py``'s."""

from __future__ import annotations

from typing import Callable, Final, Mapping

from .diagnostics import Diagnostic
from .nodes import (
    Access,
    Atomic,
    BufferDecl,
    BufLen,
    Expr,
    Id,
    IdKind,
    Lit,
    Load,
    MemoryScope,
    Op,
    Select,
    Var,
    Wait,
)
from .byteview import view_problem
from .ordering import Problem, access_problem, wait_problem
from .signature import OpTable, SignatureError
from .types import DataType
from .walk import subexprs

__all__ = ["ExprFault", "infer_type", "MAX_EXPR_DEPTH"]

MAX_EXPR_DEPTH: Final = 128
_DEVICE: Final = MemoryScope.DEVICE


class ExprFault(Exception):
    """An invalid expression: code, message, fix and the node path of the culprit."""

    def __init__(self, code: str, message: str, fix: str, path: str) -> None:
        super().__init__(message)
        self.code, self.message, self.fix, self.path = code, message, fix, path

    def diagnostic(self) -> Diagnostic:
        return Diagnostic(self.code, self.message, self.path, self.fix)


def _buffer(name: str, buffers: Mapping[str, BufferDecl], path: str) -> BufferDecl:
    try:
        return buffers[name]
    except KeyError:
        known = ", ".join(buffers) or "none"
        raise ExprFault("V004", f"unknown buffer {name!r}", f"declare it or use one of: {known}", path) from None


def infer_type(
    e: Expr,
    path: str,
    variables: Mapping[str, DataType],
    buffers: Mapping[str, BufferDecl],
    ops: OpTable,
    depth: int = 0,
    max_depth: int = MAX_EXPR_DEPTH,
) -> DataType:
    """The type of ``e``; raises ExprFault for the first problem found in it."""
    if depth > max_depth:
        raise ExprFault("V016", f"expression nested deeper than {max_depth}", "split it with let bindings", path)
    sub = depth + 1

    def ty(child: Expr, where: str) -> DataType:
        return infer_type(child, f"{path}.{where}", variables, buffers, ops, sub, max_depth)

    def index_u32(index: Expr) -> None:
        t = ty(index, "index")
        if t is not DataType.U32:
            raise ExprFault("V023", f"index must be u32, got {t}", "cast it: `i as u32`", f"{path}.index")

    if isinstance(e, Lit):
        if not e.dtype.is_value_type or type(e.bits) is not int or not 0 <= e.bits <= e.dtype.mask:
            raise ExprFault("V007", f"invalid {e.dtype} literal bits {e.bits!r}", "build literals with Lit.of", path)
        return e.dtype
    if isinstance(e, Var):
        if e.name not in variables:
            raise ExprFault("V018", f"variable {e.name!r} is not bound here", f"bind it first: let {e.name} = ...", path)
        return variables[e.name]
    if isinstance(e, (Id, BufLen)):
        if isinstance(e, BufLen):
            _buffer(e.buffer, buffers, path)
        elif e.axis not in (0, 1, 2) or not isinstance(e.kind, IdKind):
            raise ExprFault("V020", f"bad id axis {e.axis!r}", "use axis 0, 1 or 2 (x, y, z)", path)
        return DataType.U32
    if isinstance(e, Load):
        decl = _buffer(e.buffer, buffers, path)
        index_u32(e.index)
        if e.view is not None:  # x.u32[i] (ir/byteview.py)
            _fault(view_problem(decl, e), path)
            return e.view.value_type
        if e.order is not None or e.scope is not _DEVICE:  # an atomic load
            _fault(access_problem("load", decl, e.order, e.scope), path)
        return decl.dtype.value_type
    if isinstance(e, Select):
        return _select_type(e, path, ty)
    if isinstance(e, Op):
        return _op_type(e, path, ops, ty)
    if isinstance(e, Atomic):
        return _atomic_type(e, path, buffers, ops, ty, index_u32)
    if isinstance(e, Wait):
        decl = _buffer(e.buffer, buffers, path)
        index_u32(e.index)
        _fault(wait_problem(e, decl, ty(e.value, "value"), ty(e.bound, "bound")), path)
        return decl.dtype
    raise ExprFault("V020", f"not an expression node: {type(e).__name__}", "build expressions from vyre_decl.ir nodes", path)


_Typer = Callable[[Expr, str], DataType]  # a child expression's type, by its field name


def _fault(problem: Problem | None, path: str) -> None:
    if problem is not None:
        raise ExprFault(*problem, path)


def _select_type(e: Select, path: str, ty: _Typer) -> DataType:
    cond = ty(e.cond, "cond")
    if cond is not DataType.BOOL:
        raise ExprFault("V022", f"select condition must be bool, got {cond}", "compare it, e.g. `x != 0u32`", f"{path}.cond")
    a, b = ty(e.if_true, "if_true"), ty(e.if_false, "if_false")
    if e.lazy:
        _no_effects(e, path)
    if a is not b:
        raise ExprFault("V007", f"select arms differ: {a} vs {b}", f"cast one arm: `... as {a}`", path)
    return a


def _op_type(e: Op, path: str, ops: OpTable, ty: _Typer) -> DataType:
    sig = ops.signature(e.op)
    if sig is None:
        raise ExprFault("V005", f"unknown op {e.op!r}", ops.unknown_op_hint(e.op), path)
    if sig.is_atomic:
        raise ExprFault("V013", f"{e.op} is an atomic op", f"write atomic {e.op}(buf[i], ...)", path)
    arg_types = [ty(a, f"args[{i}]") for i, a in enumerate(e.args)]
    _check_attrs(e, sig.attrs, path)
    try:
        return sig.bind(arg_types, dict(e.types))[1]
    except SignatureError as err:
        raise ExprFault(err.code, err.message, err.fix, path) from None


def _atomic_type(e: Atomic, path: str, buffers: Mapping[str, BufferDecl], ops: OpTable, ty: _Typer,
                 index_u32: Callable[[Expr], None]) -> DataType:
    sig = ops.signature(e.op)
    if sig is None:
        raise ExprFault("V005", f"unknown op {e.op!r}", ops.unknown_op_hint(e.op), path)
    if not sig.is_atomic:
        raise ExprFault("V013", f"{e.op} is not an atomic op", "use an op of the primitive.atomic dialect", path)
    decl = _buffer(e.buffer, buffers, path)
    if decl.access is Access.PRIVATE:
        raise ExprFault("V033", f"atomic on private array {decl.name!r}: it belongs to one invocation",
                        f"read, combine and store instead: {decl.name}[k] = {decl.name}[k] + v", path)
    if decl.access not in (Access.READ_WRITE, Access.WRITE, Access.WORKGROUP):
        raise ExprFault(
            "V012",
            f"atomic on {decl.access.value} buffer {decl.name!r}",
            "declare the buffer read_write (or write)",
            path,
        )
    if not decl.dtype.is_value_type or decl.dtype is DataType.BOOL:
        raise ExprFault(
            "V013",
            f"atomics need 32- or 64-bit words; {decl.name!r} holds {decl.dtype}",
            "use a u32, i32, u64 or i64 buffer",
            path,
        )
    index_u32(e.index)
    arg_types = [decl.dtype] + [ty(a, f"args[{i}]") for i, a in enumerate(e.args)]
    try:
        sig.bind(arg_types)
    except SignatureError as err:
        raise ExprFault("V013" if err.code == "V007" else err.code, err.message, err.fix, path) from None
    _fault(access_problem("atomic", decl, e.order, e.scope), path)
    return decl.dtype


def _no_effects(e: Select, path: str) -> None:
    """A lazy branch runs only its chosen arm, so an effect in an arm would run on some backends and
    not on others: an arm is pure (docs/semantics.md, "branch")."""
    for where, arm in (("if_true", e.if_true), ("if_false", e.if_false)):
        if any(isinstance(x, Atomic) for x in subexprs(arm)):
            raise ExprFault("V026", "an atomic in an arm of a lazy branch() runs only where that arm is chosen",
                            "update memory in an if statement (`if c { let old = atomic ... }`), or use "
                            "select(c, a, b) if it is meant to run whichever arm is chosen", f"{path}.{where}")


def _check_attrs(e: Op, attr_sigs: tuple, path: str) -> None:
    known = {a.name: a for a in attr_sigs}
    given = dict(e.attrs)
    for name, lit in given.items():
        sig = known.get(name)
        if sig is None:
            raise ExprFault("V021", f"{e.op} has no attribute {name!r}",
                            f"remove it; attributes: {', '.join(known) or 'none'}", path)
        if not isinstance(lit, Lit) or lit.dtype is not sig.dtype:
            raise ExprFault("V021", f"attribute {name} of {e.op} must be {sig.dtype}",
                            f"write {name}=<value>{sig.dtype}", path)
    for name, sig in known.items():
        if sig.default is None and name not in given:
            raise ExprFault("V021", f"{e.op} needs attribute {name!r}",
                            f"write {e.op}<{name}=...>(...)", path)
