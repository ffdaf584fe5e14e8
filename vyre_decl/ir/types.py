"""Scalar data types of the IR: their names, sizes, memory formats and register (value) types.

Two roles meet here. A *storage* type is what a buffer element looks like in memory; a *value*
type is what an expression computes with. Narrow types live only in memory and are widened on
load (u8/u16 -> u32, i8/i16 -> i32, f16/bf16 -> f32) and narrowed on store; bool is a 32-bit
word (0 or 1) in memory and a predicate in registers.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:  # numpy is imported on first use, so the IR (and a registry snapshot) loads without it
    import numpy as np

__all__ = ["DataType", "VALUE_TYPES", "INT_TYPES", "FLOAT_TYPES", "parse_type"]


class DataType(enum.Enum):
    """A scalar type. The enum value is its text spelling (``u32``, ``f32``, ...)."""

    BOOL = "bool"
    U8 = "u8"
    U16 = "u16"
    I8 = "i8"
    I16 = "i16"
    U32 = "u32"
    I32 = "i32"
    U64 = "u64"
    I64 = "i64"
    F16 = "f16"
    BF16 = "bf16"
    F32 = "f32"
    F64 = "f64"

    def __repr__(self) -> str:
        return f"DataType.{self.name}"

    def __str__(self) -> str:
        return self.value

    @property
    def size(self) -> int:
        """Bytes one element occupies in a buffer."""
        return _INFO[self][0]

    @property
    def kind(self) -> str:
        """One of ``bool``, ``uint``, ``int``, ``float``."""
        return _INFO[self][1]

    @property
    def bits(self) -> int:
        """Width in bits of the value in registers (bool: 1)."""
        return _INFO[self][2]

    @property
    def value_type(self) -> DataType:
        """The register type a load of this storage type yields."""
        return _VALUE_OF[self]

    @property
    def is_value_type(self) -> bool:
        return _VALUE_OF[self] is self

    @property
    def is_int(self) -> bool:
        return self.kind in ("uint", "int")

    @property
    def is_signed(self) -> bool:
        return self.kind == "int"

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def storage_dtype(self) -> np.dtype:
        """numpy dtype of the raw memory words (bool: uint32 words, bf16: uint16 bit patterns)."""
        if not _STORAGE_DTYPE:
            _numpy_tables()
        return _STORAGE_DTYPE[self]

    @property
    def numpy_dtype(self) -> np.dtype:
        """numpy dtype of values of this type in the reference interpreter and at the host API."""
        if not _NUMPY_DTYPE:
            _numpy_tables()
        return _NUMPY_DTYPE[self]

    @property
    def min(self) -> int | float:
        return _RANGE[self][0]

    @property
    def max(self) -> int | float:
        return _RANGE[self][1]

    @property
    def mask(self) -> int:
        """All-ones bit pattern of the value width."""
        return (1 << self.bits) - 1


# size in memory, kind, register bit width
_INFO: Final = {
    DataType.BOOL: (4, "bool", 1),
    DataType.U8: (1, "uint", 8),
    DataType.U16: (2, "uint", 16),
    DataType.I8: (1, "int", 8),
    DataType.I16: (2, "int", 16),
    DataType.U32: (4, "uint", 32),
    DataType.I32: (4, "int", 32),
    DataType.U64: (8, "uint", 64),
    DataType.I64: (8, "int", 64),
    DataType.F16: (2, "float", 16),
    DataType.BF16: (2, "float", 16),
    DataType.F32: (4, "float", 32),
    DataType.F64: (8, "float", 64),
}

_VALUE_OF: Final = {
    DataType.U8: DataType.U32,
    DataType.U16: DataType.U32,
    DataType.I8: DataType.I32,
    DataType.I16: DataType.I32,
    DataType.F16: DataType.F32,
    DataType.BF16: DataType.F32,
}
for _t in DataType:
    _VALUE_OF.setdefault(_t, _t)

_STORAGE_DTYPE: Final[dict[DataType, np.dtype]] = {}
_NUMPY_DTYPE: Final[dict[DataType, np.dtype]] = {}
_STORAGE_NAMES: Final = {
    DataType.BOOL: "uint32",  # a 32-bit word, 0 or 1
    DataType.BF16: "uint16",  # the bit pattern: numpy has no bfloat16
}


def _numpy_tables() -> None:
    """Fill the numpy dtype tables (on first use)."""
    import numpy as np

    for t in DataType:
        name = _STORAGE_NAMES.get(t, {"uint": "uint", "int": "int", "float": "float"}.get(t.kind, "") + str(t.bits))
        _STORAGE_DTYPE[t] = np.dtype(name)
        _NUMPY_DTYPE[t] = np.dtype(np.bool_) if t is DataType.BOOL else _STORAGE_DTYPE[t]


_RANGE: Final = {
    DataType.BOOL: (0, 1),
    DataType.U8: (0, 2**8 - 1),
    DataType.U16: (0, 2**16 - 1),
    DataType.I8: (-(2**7), 2**7 - 1),
    DataType.I16: (-(2**15), 2**15 - 1),
    DataType.U32: (0, 2**32 - 1),
    DataType.I32: (-(2**31), 2**31 - 1),
    DataType.U64: (0, 2**64 - 1),
    DataType.I64: (-(2**63), 2**63 - 1),
    DataType.F16: (-65504.0, 65504.0),
    DataType.BF16: (-3.3895313892515355e38, 3.3895313892515355e38),
    DataType.F32: (-3.4028234663852886e38, 3.4028234663852886e38),
    DataType.F64: (-1.7976931348623157e308, 1.7976931348623157e308),
}

VALUE_TYPES: Final = tuple(t for t in DataType if t.is_value_type)
INT_TYPES: Final = tuple(t for t in VALUE_TYPES if t.is_int)
FLOAT_TYPES: Final = tuple(t for t in VALUE_TYPES if t.is_float)
_BY_NAME: Final = {t.value: t for t in DataType}


def parse_type(name: str) -> DataType:
    """The DataType spelled ``name``; ValueError (with the valid spellings) otherwise."""
    try:
        return _BY_NAME[name]
    except (KeyError, TypeError):
        valid = ", ".join(_BY_NAME)
        raise ValueError(f"unknown type {name!r}. Fix: use one of {valid}") from None
