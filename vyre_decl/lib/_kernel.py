"""Programs that lib generates (elementwise functions, fused expressions, reductions along an axis):
the mapping of numpy dtypes to storage and value types, the text of loads (with numpy's
broadcasting as index arithmetic), stores, literals and exact narrowing, and running a program
text once on a backend (parsed once per text)."""

from __future__ import annotations

import functools
from typing import Any, Sequence

import numpy as np

from ..ir.text import parse_program
from ._core import check_backend, is_bf16

__all__ = ["storage_type", "value_type", "to_storage", "from_storage", "literal", "narrow", "load", "store_value",
           "broadcast_index", "run_text", "WORKGROUP"]

WORKGROUP = 256
_STORAGE = {"bool": "u8", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "u8",
            "uint16": "u16", "uint32": "u32", "uint64": "u64", "float16": "f16", "float32": "f32",
            "float64": "f64", "bfloat16": "bf16"}
_VALUE = {"bool": "bool", "int8": "i32", "int16": "i32", "int32": "i32", "int64": "i64", "uint8": "u32",
          "uint16": "u32", "uint32": "u32", "uint64": "u64", "float16": "f32", "float32": "f32",
          "float64": "f64", "bfloat16": "f32"}
# a value of the wider value type brought to the narrow type's value (exact for values of that
# type; the narrowing numpy's loops of that type do after each operation)
_NARROW = {"int8": "((({e}) << 24i32) >> 24i32)", "int16": "((({e}) << 16i32) >> 16i32)",
           "uint8": "(({e}) & 255u32)", "uint16": "(({e}) & 65535u32)",
           "float16": "primitive.convert.unpack_f16_lo(primitive.convert.f16_bits({e}))",
           "bfloat16": "primitive.convert.unpack_bf16_lo(primitive.convert.bf16_bits({e}))"}


def _name(dtype: np.dtype) -> str:
    return "bfloat16" if is_bf16(dtype) else np.dtype(dtype).name


def storage_type(dtype: np.dtype) -> str:
    return _STORAGE[_name(dtype)]


def value_type(dtype: np.dtype) -> str:
    return _VALUE[_name(dtype)]


def to_storage(arr: np.ndarray) -> np.ndarray:
    """The buffer a program reads for ``arr``: bool as bytes, bfloat16 as its 16-bit patterns."""
    if arr.dtype == np.bool_:
        return arr.view(np.uint8)
    if is_bf16(arr.dtype):
        return arr.view(np.uint16)
    return arr


def from_storage(raw: np.ndarray, dtype: np.dtype) -> np.ndarray:
    if dtype == np.bool_:
        return raw.astype(np.uint8).view(np.bool_)
    if is_bf16(dtype):
        return raw.view(dtype)
    return raw


def literal(value: Any, dtype: np.dtype) -> str:
    """``value`` (already a value of ``dtype``) as a literal of its value type."""
    vt = value_type(dtype)
    if vt == "bool":
        return "true" if bool(value) else "false"
    if vt in ("f32", "f64"):
        width = np.uint32 if vt == "f32" else np.uint64
        bits = np.array([value], np.float32 if vt == "f32" else np.float64).view(width)[0]
        return f"bits({int(bits):#x})_{vt}"
    return f"{int(value)}{vt}" if int(value) >= 0 else f"({int(value)}{vt})"


def narrow(expr: str, dtype: np.dtype) -> str:
    """``expr`` (of the value type) rounded or wrapped to a value of a narrow ``dtype``."""
    form = _NARROW.get(_name(dtype))
    return form.format(e=expr) if form else expr


def load(buf: str, index: str, dtype: np.dtype) -> str:
    text = f"{buf}[{index}]"
    return f"({text} != 0u32)" if dtype == np.bool_ else text


def store_value(expr: str, dtype: np.dtype) -> str:
    return f"select({expr}, 1u32, 0u32)" if dtype == np.bool_ else expr


def broadcast_index(shape: Sequence[int], out_shape: Sequence[int], flat: str = "i") -> str:
    """The index into a C-contiguous array of ``shape`` that numpy's broadcasting reads for the
    element ``flat`` of ``out_shape``."""
    shape = (1,) * (len(out_shape) - len(shape)) + tuple(shape)
    if tuple(shape) == tuple(out_shape):
        return flat
    if int(np.prod(shape)) == 1:
        return "0u32"
    terms = []
    out_stride, in_stride = 1, 1
    for d in range(len(out_shape) - 1, -1, -1):
        if shape[d] != 1:
            term = f"(({flat} / {out_stride}u32) % {out_shape[d]}u32)"
            terms.append(term if in_stride == 1 else f"{term} * {in_stride}u32")
        out_stride *= out_shape[d]
        in_stride *= shape[d]
    return " + ".join(reversed(terms))


@functools.lru_cache(maxsize=256)
def _parsed(text: str) -> Any:
    return parse_program(text)


def run_text(where: str, text: str, inputs: Sequence[np.ndarray], backend: Any) -> list[np.ndarray]:
    """Run the program ``text`` once on ``inputs`` (storage arrays); its outputs."""
    be = check_backend(where, backend)
    return list(be.dispatch(_parsed(text), [np.ascontiguousarray(a).ravel() for a in inputs]))
