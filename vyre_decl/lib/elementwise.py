"""The elementwise functions of lib, generated from one data table: each numpy name maps to the op
of the registry (per kind of numpy's loop dtype: b bool, i signed, u unsigned, f float) that
computes it, or to a short composition of ops. ``FUNCTIONS`` holds one generated function per
row; each broadcasts and promotes like numpy (numpy's own type resolution picks the loop) and
runs as one kernel (``lib.fuse`` joins several into one)."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

__all__ = ["TABLE", "FUNCTIONS", "NATIVE_WIDTH", "numpy_counterpart"]

# functions whose meaning depends on the width itself (the next float16 is not the next float32
# rounded): refused for float16/bfloat16 loops, which lib computes in float32
NATIVE_WIDTH = frozenset({"nextafter"})

_F = "primitive.float."
_M = "primitive.math."
_B = "primitive.bitwise."
_C = "primitive.compare."


def _op(op_id: str, arity: int) -> str:
    return f"{op_id}({', '.join('{%d}' % k for k in range(arity))})"


def _unary_float(name: str, op: str) -> tuple[str, int, dict[str, str]]:
    return name, 1, {"f": _op(op, 1)}


# numpy name, arity, {kinds: expression over {0}, {1}, {2} (the operands in numpy's loop dtype)}
_ROWS: list[tuple[str, int, dict[str, str]]] = [
    *(_unary_float(n, _F + op) for n, op in [
        ("exp", "exp"), ("exp2", "exp2"), ("expm1", "expm1"), ("log", "log"), ("log2", "log2"), ("log10", "log10"),
        ("log1p", "log1p"), ("cbrt", "cbrt"), ("sin", "sin"), ("cos", "cos"), ("tan", "tan"), ("arcsin", "asin"),
        ("arccos", "acos"), ("arctan", "atan"), ("sinh", "sinh"), ("cosh", "cosh"), ("tanh", "tanh"),
        ("arcsinh", "asinh"), ("arccosh", "acosh"), ("arctanh", "atanh"), ("isnan", "isnan"), ("isinf", "isinf"),
        ("isfinite", "isfinite"), ("signbit", "signbit"), ("reciprocal", "rcp")]),
    *(_unary_float(n, _M + op) for n, op in [
        ("sqrt", "sqrt"), ("floor", "floor"), ("ceil", "ceil"), ("trunc", "trunc"), ("rint", "round")]),
    ("negative", 1, {"iuf": _op(_M + "neg", 1)}),
    ("absolute", 1, {"iuf": _op(_M + "abs", 1)}),
    ("sign", 1, {"iuf": _op(_M + "sign", 1)}),
    ("invert", 1, {"biu": _op(_B + "not", 1)}),
    ("logical_not", 1, {"b": _op("primitive.logical.not", 1)}),
    ("add", 2, {"iuf": _op(_M + "add", 2)}),
    ("subtract", 2, {"iuf": _op(_M + "sub", 2)}),
    ("multiply", 2, {"iuf": _op(_M + "mul", 2)}),
    ("divide", 2, {"f": _op(_M + "div", 2)}),
    ("maximum", 2, {"f": _op(_M + "maximum", 2), "iu": _op(_M + "max", 2)}),
    ("minimum", 2, {"f": _op(_M + "minimum", 2), "iu": _op(_M + "min", 2)}),
    ("fmax", 2, {"iuf": _op(_M + "max", 2)}),
    ("fmin", 2, {"iuf": _op(_M + "min", 2)}),
    ("fmod", 2, {"f": _op(_M + "fmod", 2), "iu": _op(_M + "mod", 2)}),
    ("power", 2, {"f": _op(_F + "pow", 2)}),
    ("arctan2", 2, {"f": _op(_F + "atan2", 2)}),
    ("hypot", 2, {"f": _op(_F + "hypot", 2)}),
    ("copysign", 2, {"f": _op(_M + "copysign", 2)}),
    ("nextafter", 2, {"f": _op(_F + "nextafter", 2)}),
    ("gcd", 2, {"u": _op(_M + "gcd", 2)}),
    ("bitwise_and", 2, {"biu": _op(_B + "and", 2)}),
    ("bitwise_or", 2, {"biu": _op(_B + "or", 2)}),
    ("bitwise_xor", 2, {"biu": _op(_B + "xor", 2)}),
    ("left_shift", 2, {"iu": _op(_B + "shl", 2)}),
    ("right_shift", 2, {"iu": _op(_B + "shr", 2)}),
    ("logical_and", 2, {"b": _op("primitive.logical.and", 2)}),
    ("logical_or", 2, {"b": _op("primitive.logical.or", 2)}),
    ("logical_xor", 2, {"b": _op(_C + "ne", 2)}),
    ("equal", 2, {"biuf": _op(_C + "eq", 2)}),
    ("not_equal", 2, {"biuf": _op(_C + "ne", 2)}),
    ("less", 2, {"iuf": _op(_C + "lt", 2)}),
    ("less_equal", 2, {"iuf": _op(_C + "le", 2)}),
    ("greater", 2, {"iuf": _op(_C + "gt", 2)}),
    ("greater_equal", 2, {"iuf": _op(_C + "ge", 2)}),
    # not ufuncs: numpy.where(c, a, b) and numpy.clip (minimum(maximum(x, lo), hi), NaN propagating)
    ("where", 3, {"biuf": "select({0}, {1}, {2})"}),
    ("clip", 3, {"f": f"{_M}minimum({_M}maximum({{0}}, {{1}}), {{2}})", "iu": f"{_M}min({_M}max({{0}}, {{1}}), {{2}})"}),
]

TABLE: dict[str, tuple[int, dict[str, str]]] = {name: (arity, forms) for name, arity, forms in _ROWS}


def numpy_counterpart(name: str) -> Any:
    """numpy's function of that name (a ufunc, or numpy.where / numpy.clip)."""
    return getattr(np, name)


def _make(name: str, arity: int) -> Callable[..., Any]:
    from .fuse import apply

    def fn(*args: Any, backend: Any = "auto") -> Any:
        return apply(name, args, backend)

    fn.__name__ = fn.__qualname__ = name
    kinds = "/".join(TABLE[name][1])
    fn.__doc__ = (f"numpy.{name} elementwise ({arity} operand(s); numpy's broadcasting and type promotion; "
                  f"loop kinds {kinds}), one kernel; inside lib.fuse, one step of the fused kernel.")
    return fn


FUNCTIONS: dict[str, Callable[..., Any]] = {name: _make(name, arity) for name, (arity, _) in TABLE.items()}
