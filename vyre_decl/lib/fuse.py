"""Tracing and fusion: an elementwise call on arrays builds a graph of nodes (inputs, constants,
op applications in numpy's loop dtypes), and one program evaluates the whole graph per element —
``lib.exp(x)`` is a graph of one op, ``lib.fuse(fn)`` traces ``fn`` over stand-ins for its
arguments and runs every output it returns in one launch, with the same bits on every backend."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, Sequence, cast

import numpy as np

from ..ir.types import DataType
from ..registry import default_registry
from ._core import exact, fail, intake, is_bf16
from ._device import is_device
from ._fusedev import DeviceInput, FusedPlan, device_leaf, prepare
from ._kernel import (WORKGROUP, _parsed, from_storage, literal, load, narrow, run_text, storage_type, store_value, to_storage,
                      value_type)
from .elementwise import NATIVE_WIDTH, TABLE, numpy_counterpart

__all__ = ["Traced", "apply", "fuse"]

_tracing: list[list[np.ndarray]] = []  # the inputs of the traces under way (innermost last)


@dataclass(eq=False)
class Node:
    """One value per element: an input (``index``), a constant (``value``) or ``name`` applied to ``args``."""
    dtype: np.dtype
    shape: tuple[int, ...]
    index: int = -1
    value: Any = None
    name: str = ""
    form: str = ""
    args: tuple[Node, ...] = field(default=())


class Traced:
    """A stand-in for an array while ``lib.fuse`` traces a function: numpy's operators and lib's
    elementwise functions on it build the fused program."""

    __array_ufunc__ = None  # numpy defers to the reflected operators below

    def __init__(self, node: Node) -> None:
        self.node = node

    dtype = property(lambda self: self.node.dtype)
    shape = property(lambda self: self.node.shape)
    ndim = property(lambda self: len(self.node.shape))
    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return f"Traced({self.node.name or 'input'}, {self.dtype}, {self.shape})"

    def __bool__(self) -> bool:
        raise fail("L015", "fuse", "a traced array has no truth value while lib.fuse traces",
                   "use lib.where(cond, a, b) instead of if/and/or on arrays")


def _binop(name: str, reflected: bool = False) -> Callable[..., Any]:
    if reflected:
        return lambda self, other: apply(name, (other, self), None)
    return lambda self, other: apply(name, (self, other), None)


for _dunder, _name in [("add", "add"), ("sub", "subtract"), ("mul", "multiply"), ("truediv", "divide"),
                       ("pow", "power"), ("and", "bitwise_and"), ("or", "bitwise_or"), ("xor", "bitwise_xor"),
                       ("lshift", "left_shift"), ("rshift", "right_shift")]:
    setattr(Traced, f"__{_dunder}__", _binop(_name))
    setattr(Traced, f"__r{_dunder}__", _binop(_name, True))
for _dunder, _name in [("lt", "less"), ("le", "less_equal"), ("gt", "greater"), ("ge", "greater_equal"),
                       ("eq", "equal"), ("ne", "not_equal")]:
    setattr(Traced, f"__{_dunder}__", _binop(_name))
for _dunder, _name in [("neg", "negative"), ("abs", "absolute"), ("invert", "invert")]:
    setattr(Traced, f"__{_dunder}__", lambda self, _n=_name: apply(_n, (self,), None))


def _leaf(where: str, value: Any, inputs: list[Any], backend: Any = "auto") -> Node | Any:
    """A traced node, or a Python scalar (kept weak, as numpy does), or a new input node (a host
    array, or a device array: lib/_fusedev.py)."""
    if isinstance(value, Traced):
        return value.node
    if isinstance(value, (bool, int, float)) and not isinstance(value, np.generic):
        return value
    if is_device(value):
        bound, dtype, shape = device_leaf(where, value, backend)
        inputs.append(DeviceInput(bound, dtype))
        return Node(dtype, shape, index=len(inputs) - 1)
    arr = intake(where, value)
    if is_bf16(arr.dtype):
        arr = arr.astype(np.float32)  # exact; lib computes bfloat16 in float32
    inputs.append(arr)
    return Node(arr.dtype, arr.shape, index=len(inputs) - 1)


def _loop(where: str, name: str, operands: Sequence[Any]) -> tuple[list[np.dtype], np.dtype]:
    """numpy's loop dtypes for ``name`` over these operands (Python scalars weak)."""
    probe = [o.dtype if isinstance(o, Node) else type(o) for o in operands]
    try:
        if name == "where":
            out = np.result_type(*[p if isinstance(p, np.dtype) else o for p, o in zip(probe[1:], operands[1:])])
            return [np.dtype(np.bool_), out, out], out
        if name == "clip":
            out = np.result_type(*[p if isinstance(p, np.dtype) else o for p, o in zip(probe, operands)])
            return [out, out, out], out
        found = numpy_counterpart(name).resolve_dtypes(tuple(probe) + (None,))
    except (TypeError, ValueError, OverflowError) as e:
        raise fail("L013", where, f"numpy has no {name} for {', '.join(str(p) for p in probe)} ({e})",
                   "pass operands of types numpy's function takes") from None
    return [np.dtype(d) for d in found[:-1]], np.dtype(found[-1])


def _form(where: str, name: str, loop_dt: np.dtype) -> str:
    kind = "b" if loop_dt == np.bool_ else loop_dt.kind
    forms = TABLE[name][1]
    if name in NATIVE_WIDTH and value_type(loop_dt) != storage_type(loop_dt):
        raise fail("L013", where, f"{name} is not computed for {loop_dt}: lib computes {loop_dt} in "
                   f"{value_type(loop_dt)}, and {name}'s answer depends on the width", "pass float32 or float64 operands")
    for kinds, form in forms.items():
        if kind in kinds and _registry_takes(form, value_type(loop_dt)):
            return form
    raise fail("L013", where, f"{name} is not computed for {loop_dt} (numpy's loop for these operands)",
               f"pass operands whose numpy loop is of kind {'/'.join(forms)}")


@functools.lru_cache(maxsize=None)
def _registry_takes(form: str, vt: str) -> bool:
    """Whether the first op of ``form`` has a binding for the value type ``vt`` (registry data)."""
    op_id = form.split("(", 1)[0]
    if "." not in op_id:
        return True
    sig = default_registry().signature(op_id)
    if sig is None:
        return False
    if not sig.type_vars:
        return all(p.type == vt for p in sig.inputs)
    return DataType(vt) in sig.type_vars[0][1]


def _const(where: str, value: Any, dtype: np.dtype) -> Node:
    try:
        v = np.array(value, dtype=dtype)
    except OverflowError:
        raise fail("L014", where, f"{value!r} is not a value of {dtype}", f"pass a value that {dtype} holds") from None
    return Node(dtype, (), value=v[()])


def _cast(where: str, node: Node, dtype: np.dtype) -> Node:
    if node.dtype == dtype:
        return node
    if not exact(node.dtype, dtype):
        raise fail("L002", where, f"an operand of dtype {node.dtype} would be rounded to {dtype} (numpy's loop)",
                   f"pass operands whose values {dtype} holds exactly (e.g. float64 data instead of int64)")
    return Node(dtype, node.shape, name="cast", form="({0}) as " + value_type(dtype), args=(node,))


def _shape(where: str, nodes: Sequence[Node]) -> tuple[int, ...]:
    try:
        return tuple(np.broadcast_shapes(*[n.shape for n in nodes]))
    except ValueError:
        raise fail("L009", where, f"shapes {', '.join(str(n.shape) for n in nodes)} do not broadcast",
                   "pass arrays whose shapes broadcast (numpy's rule: equal, or 1, from the last axis)") from None


def build(name: str, operands: Sequence[Any], inputs: list[Any], backend: Any = "auto") -> Node:
    """The node of ``name`` over ``operands`` (nodes, Python scalars, arrays)."""
    arity = TABLE[name][0]
    if len(operands) != arity:
        raise fail("L013", name, f"{name} takes {arity} operand(s), got {len(operands)}", f"pass {arity} operand(s)")
    leaves = [_leaf(name, o, inputs, backend) for o in operands]
    loop_in, loop_out = _loop(name, name, leaves)
    args = [_cast(name, a, dt) if isinstance(a, Node) else _const(name, a, dt) for a, dt in zip(leaves, loop_in)]
    form = _form(name, name, loop_in[-1] if name == "where" else loop_in[0])
    return Node(loop_out, _shape(name, args), name=name, form=form, args=tuple(args))


def apply(name: str, operands: Sequence[Any], backend: Any) -> Any:
    """``name`` over ``operands``: a Traced inside lib.fuse, else computed now (one kernel)."""
    if any(isinstance(o, Traced) for o in operands):
        if not _tracing:
            raise fail("L015", name, "a traced array was used outside lib.fuse", "call lib functions on arrays")
        return Traced(build(name, operands, _tracing[-1]))
    inputs: list[Any] = []
    backend = "auto" if backend is None else backend
    node = build(name, operands, inputs, backend)
    return run_nodes(name, [node], inputs, backend)[0]


def _emit(nodes: Sequence[Node], shape: tuple[int, ...]) -> tuple[list[str], dict[int, str]]:
    """``let`` lines computing every node of the graph once, in dependency order, and each node's name."""
    from ._kernel import broadcast_index
    names: dict[int, str] = {}
    lines: list[str] = []

    def visit(n: Node) -> str:
        if id(n) in names:
            return names[id(n)]
        if n.index >= 0:
            text = load(f"in{n.index}", broadcast_index(n.shape, shape), n.dtype)
        elif n.form:
            text = n.form.format(*(visit(a) for a in n.args))
            if n.name != "cast":
                text = narrow(text, n.dtype)
        else:
            text = literal(n.value, n.dtype)
        names[id(n)] = f"t{len(names)}"
        lines.append(f"    let {names[id(n)]} = {text}")
        return names[id(n)]

    for n in nodes:
        visit(n)
    return lines, names


def program_text(outputs: Sequence[Node], dtypes: Sequence[np.dtype], shape: tuple[int, ...]) -> str:
    count = int(np.prod(shape, dtype=np.int64))
    decls = [f"  buffer in{k}: read {storage_type(d)}[] @{k}" for k, d in enumerate(dtypes)]
    decls += [f"  buffer out{k}: write {storage_type(n.dtype)}[{count}] @{len(dtypes) + k}" for k, n in enumerate(outputs)]
    lines, names = _emit(outputs, shape)
    stores = [f"    out{k}[i] = {store_value(names[id(n)], n.dtype)}" for k, n in enumerate(outputs)]
    return "\n".join([f"program lib_elementwise workgroup({WORKGROUP}, 1, 1) {{", *decls, "  let i = gid.x",
                      f"  if i < {count}u32 {{", *lines, *stores, "  }", "}", ""])


def _count(where: str, outputs: Sequence[Node]) -> tuple[tuple[int, ...], int]:
    shape = _shape(where, outputs)
    count = int(np.prod(shape, dtype=np.int64))
    if count > 2**32 - 1:
        raise fail("L009", where, f"the result would hold {count} elements", "pass at most 2**32 - 1 elements")
    return shape, count


def plan_nodes(where: str, outputs: Sequence[Node], inputs: Sequence[Any], backend: Any) -> FusedPlan:
    """``outputs`` as a prepared launch over resident buffers (lib/_fusedev.py)."""
    shape, count = _count(where, outputs)
    text = program_text(outputs, [a.dtype for a in inputs], shape)
    return prepare(where, _parsed(text), [to_storage(a) if isinstance(a, np.ndarray) else a.value for a in inputs],
                   [storage_type(n.dtype) for n in outputs], count, backend)


def run_nodes(where: str, outputs: Sequence[Node], inputs: Sequence[Any], backend: Any) -> list[Any]:
    """Evaluate ``outputs`` (broadcast to one shape) in one launch; numpy arrays (0-d: scalars),
    or, where an input is a device array, resident buffers of the result's elements."""
    if any(not isinstance(a, np.ndarray) for a in inputs):
        if any(isinstance(a, np.ndarray) for a in inputs):
            raise fail("L023", where, "host arrays and device arrays in one call", "pass every array on the device "
                       "(backend.upload(x), or the library's own upload) or every array on the host")
        plan = plan_nodes(where, outputs, inputs, backend)
        plan.replay()
        return plan.release_outputs()
    shape, count = _count(where, outputs)
    if count == 0:
        from ._core import check_backend
        check_backend(where, backend)
        raws = [np.zeros(0, np.dtype(np.uint8) if n.dtype == np.bool_ else n.dtype) for n in outputs]
    else:
        raws = run_text(where, program_text(outputs, [a.dtype for a in inputs], shape), [to_storage(a) for a in inputs], backend)
    results = [from_storage(r, n.dtype).reshape(shape) for r, n in zip(raws, outputs)]
    return [r[()] if shape == () else r for r in results]


class Fused(Protocol):
    """What ``lib.fuse`` returns: call it on arrays, or ``plan`` it on resident buffers."""

    def __call__(self, *args: Any, backend: Any = "auto") -> Any: ...

    def plan(self, *args: Any, backend: Any = "cuda") -> FusedPlan: ...


def fuse(fn: Callable[..., Any]) -> Fused:
    """``fn`` (a function of arrays built from lib's elementwise functions and operators) as ONE
    kernel: ``lib.fuse(lambda x, y: lib.exp(x) * y + 1)(a, b, backend="cuda")``. Every output it
    returns is computed in the same launch; Python scalar arguments stay constants of the trace."""

    @functools.wraps(fn)
    def fused(*args: Any, backend: Any = "auto") -> Any:
        outs, many, inputs = _trace(fn, args, backend)
        values = run_nodes("fuse", outs, inputs, backend)
        return tuple(values) if many else values[0]

    def plan(*args: Any, backend: Any = "cuda") -> FusedPlan:
        """The fused kernel bound to resident buffers for ``args`` (device arrays as they are, host
        arrays uploaded once): ``plan.replay()`` is one launch into ``plan.outputs``; ``close()``."""
        outs, _, inputs = _trace(fn, args, backend)
        return plan_nodes("fuse", outs, inputs, backend)

    fused.plan = plan  # type: ignore[attr-defined]
    return cast(Fused, fused)


def _trace(fn: Callable[..., Any], args: Sequence[Any], backend: Any) -> tuple[list[Node], bool, list[Any]]:
    """``fn`` traced over stand-ins for ``args``: its output nodes, whether it returned a tuple, the inputs."""
    inputs: list[Any] = []
    traced = [a if isinstance(a, (bool, int, float)) and not isinstance(a, np.generic)
              else Traced(_leaf("fuse", a, inputs, backend)) for a in args]  # type: ignore[arg-type]
    _tracing.append(inputs)
    try:
        result = fn(*traced)
    finally:
        _tracing.pop()
    many = isinstance(result, tuple)
    outs = list(result) if many else [result]
    if not outs or not all(isinstance(o, Traced) for o in outs):
        raise fail("L015", "fuse", f"the function returned {type(result).__name__}, not traced arrays",
                   "return the result of lib's elementwise functions or operators on the arguments (or a tuple of them)")
    return [o.node for o in outs], many, inputs
