"""Memory formats: converting buffer elements between their storage form and their value type.

Loads widen (u8/u16 -> u32, i8/i16 -> i32 sign-extended, f16/bf16 -> f32 exactly, bool word ->
nonzero); stores narrow (integers wrap, f16/bf16 round to nearest even, bool -> 1/0 word).
"""

from __future__ import annotations

import numpy as np

from ..ir.types import DataType

__all__ = ["to_value", "to_storage"]


def to_value(dtype: DataType, raw: np.ndarray) -> np.ndarray:
    """Values of the register type from raw storage elements."""
    if dtype is DataType.BOOL:
        return raw != 0
    if dtype is DataType.BF16:
        return (raw.astype(np.uint32) << np.uint32(16)).view(np.float32)
    if dtype.is_value_type:
        return raw
    return raw.astype(dtype.value_type.numpy_dtype)


def _to_bf16_bits(values: np.ndarray) -> np.ndarray:
    bits = np.asarray(values, dtype=np.float32).view(np.uint32)
    with np.errstate(over="ignore"):
        rounded = (bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16)
    quiet_nan = (bits >> np.uint32(16)) | np.uint32(0x40)
    return np.where(np.isnan(np.asarray(values, dtype=np.float32)), quiet_nan, rounded).astype(np.uint16)


def to_storage(dtype: DataType, values: np.ndarray) -> np.ndarray:
    """Raw storage elements from values of the register type."""
    if dtype is DataType.BF16:
        return _to_bf16_bits(values)
    return np.asarray(values).astype(dtype.storage_dtype, copy=False)
