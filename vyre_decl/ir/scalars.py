"""Scalar constants: exact bit-pattern encoding, parsing and printing.

A constant is kept as ``(DataType, bits)``: the raw bit pattern of the value in its register
width. That keeps NaN payloads and -0.0 exact and makes equality and hashing trivial. The same
parser reads literals in the program text form and values in op files (KATs, law elements,
attribute defaults), so ``0xFFFFFFFF``, ``-0.0``, ``inf``, ``nan`` and ``bits(0x7fc00001)``
mean the same thing everywhere.
"""

from __future__ import annotations

import math
import re
import struct
from typing import TYPE_CHECKING, Final

from .types import DataType, parse_type

if TYPE_CHECKING:  # numpy is imported on first use (see to_numpy)
    import numpy as np

__all__ = [
    "encode",
    "decode",
    "to_numpy",
    "format_literal",
    "parse_value",
    "LITERAL_SUFFIXES",
    "CANONICAL_NAN",
    "ELEMENTS",
    "element_bits",
]

LITERAL_SUFFIXES: Final = ("bool", "u32", "i32", "u64", "i64", "f32", "f64")
CANONICAL_NAN: Final = {DataType.F32: 0x7FC00000, DataType.F64: 0x7FF8000000000000}
_FLOAT_FMT: Final = {DataType.F32: ("<f", "<I"), DataType.F64: ("<d", "<Q")}
_BITS_RE: Final = re.compile(r"bits\((0x[0-9a-fA-F]+)\)\Z")


class ScalarError(ValueError):
    """A value that does not fit or does not parse as the requested type."""


# Symbolic constants, evaluated per type: the same names serve law elements (`identity(zero)`),
# compose constants (`T.max`) and template immediates (`{T.max}`). min/max are the least and
# greatest values of the type: the integer range ends, -inf/+inf for floats, false/true for bool;
# width is an integer type's bit width (32 or 64) as a value of that type.
ELEMENTS: Final = ("zero", "one", "min", "max", "all_ones", "inf", "neg_inf", "neg_zero", "nan", "width")
_FLOAT_ONLY: Final = ("inf", "neg_inf", "neg_zero", "nan")


def element_bits(dtype: DataType, spelling: str) -> int:
    """Bit pattern of a symbolic element (``zero``, ``max``, ...) or a literal (``-0.0``, ``7``)
    as ``dtype``."""
    _require_value_type(dtype)
    if spelling not in ELEMENTS:
        return parse_value(dtype, spelling)
    if spelling in _FLOAT_ONLY and not dtype.is_float:
        raise ScalarError(f"{spelling} is a floating-point element and {dtype} has none. "
                          f"Fix: restrict it to float types (e.g. @float)")
    if spelling == "width":  # the bit width, as a value of the (integer) type
        if not dtype.is_int:
            raise ScalarError(f"width is an integer element and {dtype} has none. Fix: restrict it to int types")
        return dtype.bits
    if spelling == "zero":
        return 0
    if spelling == "all_ones":
        return dtype.mask
    if dtype is DataType.BOOL:
        return 0 if spelling == "min" else 1
    if dtype.is_int:
        value = {"one": 1, "min": dtype.min, "max": dtype.max}[spelling]
        return int(value) & dtype.mask
    text = {"one": "1.0", "min": "-inf", "max": "inf", "inf": "inf", "neg_inf": "-inf", "neg_zero": "-0.0",
            "nan": "nan"}[spelling]
    return parse_value(dtype, text)


def _require_value_type(dtype: DataType) -> None:
    if not dtype.is_value_type:
        raise ScalarError(
            f"{dtype} is a storage-only type and has no constants. "
            f"Fix: use its value type {dtype.value_type}"
        )


def encode(dtype: DataType, value: object) -> int:
    """Bit pattern of ``value`` (bool, int, float or a literal string) as ``dtype``."""
    _require_value_type(dtype)
    if isinstance(value, str):
        return parse_value(dtype, value)
    if type(value).__module__ == "numpy":  # a numpy scalar, without importing numpy here
        value = value.item()  # type: ignore[attr-defined]
    if dtype is DataType.BOOL:
        if isinstance(value, bool) or value in (0, 1):
            return int(bool(value))
        raise ScalarError(f"{value!r} is not a bool. Fix: use true/false (or 1/0)")
    if dtype.is_int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ScalarError(f"{value!r} is not an integer. Fix: write an integer literal for {dtype}")
        if not dtype.min <= value <= dtype.max:
            shown = str(value) if value.bit_length() <= 128 else f"an integer of {value.bit_length()} bits"
            raise ScalarError(
                f"{shown} does not fit in {dtype} (range {dtype.min}..{dtype.max}). "
                f"Fix: use a value in range or a wider type"
            )
        return value & dtype.mask
    # float
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ScalarError(f"{value!r} is not a number. Fix: write a float literal for {dtype}")
    fmt, ifmt = _FLOAT_FMT[dtype]
    try:
        bits = struct.unpack(ifmt, struct.pack(fmt, float(value)))[0]
        if isinstance(value, int) and decode(dtype, bits) != value:  # an integer must be exact
            near = decode(dtype, bits)
            raise ScalarError(f"the integer {value if value.bit_length() <= 128 else '(huge)'} is not exactly a "
                              f"{dtype} (nearest: {near!r}). Fix: write the float you mean, e.g. {near!r}")
        return bits
    except (OverflowError, struct.error):
        raise ScalarError(
            f"{value!r} is out of range for {dtype}. Fix: use inf or a value within ±{dtype.max:g}"
        ) from None


def decode(dtype: DataType, bits: int) -> bool | int | float:
    """Python value of a bit pattern (NaN payloads are not preserved by Python floats)."""
    if dtype is DataType.BOOL:
        return bool(bits)
    if dtype.is_int:
        if dtype.is_signed and bits >> (dtype.bits - 1):
            return bits - (1 << dtype.bits)
        return bits
    fmt, ifmt = _FLOAT_FMT[dtype]
    return struct.unpack(fmt, struct.pack(ifmt, bits))[0]


def to_numpy(dtype: DataType, bits: int) -> np.generic:
    """The constant as a numpy scalar of ``dtype.numpy_dtype``, bit-exact (NaN payloads kept)."""
    import numpy as np

    if dtype is DataType.BOOL:
        return np.bool_(bits)
    if dtype.is_float:
        raw = np.array([bits], dtype=np.uint32 if dtype is DataType.F32 else np.uint64)
        return raw.view(dtype.numpy_dtype)[0]
    return dtype.numpy_dtype.type(decode(dtype, bits))


def _float_text(dtype: DataType, bits: int) -> str:
    value = decode(dtype, bits)
    if math.isnan(value):
        return "nan" if bits == CANONICAL_NAN[dtype] else f"bits({bits:#x})"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    text = _shortest_f32(value) if dtype is DataType.F32 else repr(value)
    if not any(c in text for c in ".e"):
        text += ".0"
    if parse_value(dtype, text) != bits:  # shortest form did not round-trip: be exact instead
        return f"bits({bits:#x})"
    return text


def _shortest_f32(value: float) -> str:
    """The shortest decimal text that reads back as the same f32 (what numpy's repr prints)."""
    import numpy as np

    return str(np.float32(value))


def format_literal(dtype: DataType, bits: int) -> str:
    """Text-form literal with its type suffix: ``5u32``, ``-1i32``, ``1.5f32``, ``nan_f32``."""
    if dtype is DataType.BOOL:
        return "true" if bits else "false"
    if dtype.is_int:
        return f"{decode(dtype, bits)}{dtype.value}"
    text = _float_text(dtype, bits)
    sep = "_" if text[-1].isalpha() or text.endswith(")") else ""
    return f"{text}{sep}{dtype.value}"


def parse_value(dtype: DataType | str, text: str) -> int:
    """Bit pattern of a literal body (no suffix) such as ``-5``, ``0xff``, ``-0.0``, ``inf``,
    ``nan``, ``0x1.8p1`` or ``bits(0x7fc00001)`` read as ``dtype``."""
    if isinstance(dtype, str):
        dtype = parse_type(dtype)
    _require_value_type(dtype)
    s = text.strip()
    if not s.isascii():
        raise ScalarError(f"{text!r} has characters that are not ASCII. Fix: write the number with ASCII digits")
    m = _BITS_RE.match(s)
    if m:
        bits = int(m.group(1), 16)
        if bits > dtype.mask:
            raise ScalarError(f"bits({m.group(1)}) is wider than {dtype}. Fix: give at most {dtype.bits} bits")
        return bits
    if dtype is DataType.BOOL:
        if s in ("true", "1"):
            return 1
        if s in ("false", "0"):
            return 0
        raise ScalarError(f"{text!r} is not a bool. Fix: use true or false")
    if dtype.is_int:
        try:
            value = int(s, 0)
        except ValueError:
            raise ScalarError(f"{text!r} is not an integer. Fix: write e.g. 42, -7 or 0xff") from None
        return encode(dtype, value)
    low = s.lower().lstrip("+")
    if low in ("nan", "-nan"):
        bits = CANONICAL_NAN[dtype]
        return bits | (1 << (dtype.bits - 1)) if low.startswith("-") else bits
    try:
        number = float.fromhex(s) if "p" in low and "0x" in low else float(s)
    except (ValueError, OverflowError):
        raise ScalarError(
            f"{text!r} is not a float. Fix: write e.g. 1.5, -0.0, 1e-3, inf, nan or bits(0x7fc00001)"
        ) from None
    if math.isinf(number) and "inf" not in low:
        raise ScalarError(f"{text} is out of range for {dtype}. Fix: write inf, or a value within ±{dtype.max:g}")
    return encode(dtype, number)
