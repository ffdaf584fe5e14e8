"""numpy-style functions over the standard routines: ``vyre_decl.lib.sum(x, backend="cuda")``.

Each is one routine call (``vyre_decl.routines``); results are numpy scalars or arrays, the same
bits on every backend. Shapes are handled here (a routine sees flat buffers): 2-D inputs give
their rows and columns as attributes, and results are reshaped the numpy way.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .ir.diagnostics import VyreError
from .routines import routine

__all__ = ["sum", "prod", "min", "max", "mean", "var", "count_nonzero", "any", "all", "argmin", "argmax", "dot",
           "cumsum", "exclusive_cumsum", "cummin", "cummax", "segment_sum", "nonzero", "take", "scatter", "bincount",
           "transpose", "sort", "topk", "matmul", "softmax", "layer_norm", "rms_norm", "gelu", "silu",
           "byte_histogram", "crc32", "crc32c", "find"]


def _call(routine_id: str, *inputs: Any, backend: Any = "auto", **attrs: Any) -> Any:
    return routine(routine_id)(*inputs, backend=backend, **attrs)


def _scalar(routine_id: str, x: Any, backend: Any) -> Any:
    return _call(routine_id, x, backend=backend)[0]


def _fail(where: str, message: str, fix: str) -> VyreError:
    return VyreError.one("U017", message, f"vyre_decl.lib.{where}", fix)


def _matrix(where: str, x: Any) -> np.ndarray:
    arr = np.asarray(x)
    if arr.ndim != 2:
        raise _fail(where, f"expected a 2-D array, got shape {arr.shape}", "pass a matrix (reshape it first)")
    return arr


# ------------------------------------------------------------------------------- reductions
def sum(x: Any, *, backend: Any = "auto") -> Any:  # noqa: A001 - numpy's name
    """The sum of all elements of ``x`` (integers wrap; floats in a fixed order: docs/routines.md)."""
    return _scalar("reduce.sum", x, backend)


def prod(x: Any, *, backend: Any = "auto") -> Any:
    """The product of all elements of ``x`` (integers wrap; floats in a fixed order)."""
    return _scalar("reduce.prod", x, backend)


def min(x: Any, *, backend: Any = "auto") -> Any:  # noqa: A001 - numpy's name
    """The smallest element of ``x`` (NaNs lose, like ``np.nanmin``; +inf or the type's max when empty)."""
    return _scalar("reduce.min", x, backend)


def max(x: Any, *, backend: Any = "auto") -> Any:  # noqa: A001 - numpy's name
    """The largest element of ``x`` (NaNs lose, like ``np.nanmax``; -inf or the type's min when empty)."""
    return _scalar("reduce.max", x, backend)


def mean(x: Any, *, backend: Any = "auto") -> Any:
    """The mean of a float array (the sum in the order of ``sum``, divided by the length; NaN when empty)."""
    return _scalar("reduce.mean", x, backend)


def var(x: Any, *, backend: Any = "auto") -> Any:
    """The population variance (``ddof=0``) of a float array, in two passes."""
    return _scalar("reduce.var", x, backend)


def count_nonzero(x: Any, *, backend: Any = "auto") -> int:
    """The number of nonzero elements (a NaN counts)."""
    return int(_scalar("reduce.count", x, backend))


def any(x: Any, *, backend: Any = "auto") -> bool:  # noqa: A001 - numpy's name
    """Whether any element is nonzero."""
    return bool(_scalar("reduce.any", x, backend))


def all(x: Any, *, backend: Any = "auto") -> bool:  # noqa: A001 - numpy's name
    """Whether every element is nonzero (True when empty)."""
    return bool(_scalar("reduce.all", x, backend))


def _arg(name: str, x: Any, backend: Any) -> int:
    found = int(_scalar(f"reduce.{name}", x, backend))
    if found == 0xFFFFFFFF:
        raise _fail(name, "no element to choose: the array is empty or all NaN", "pass at least one number")
    return found


def argmin(x: Any, *, backend: Any = "auto") -> int:
    """The index of the first smallest element (NaNs are skipped, like ``np.nanargmin``)."""
    return _arg("argmin", x, backend)


def argmax(x: Any, *, backend: Any = "auto") -> int:
    """The index of the first largest element (NaNs are skipped, like ``np.nanargmax``)."""
    return _arg("argmax", x, backend)


def dot(a: Any, b: Any, *, backend: Any = "auto") -> Any:
    """The dot product of two vectors of one length (products rounded, then summed in a fixed order)."""
    return _call("linalg.dot", a, b, backend=backend)[0]


def segment_sum(x: Any, offsets: Any, *, backend: Any = "auto") -> np.ndarray:
    """``out[s] = x[offsets[s]:offsets[s + 1]].sum()`` for each segment (offsets as uint32)."""
    return _call("reduce.segments_sum", x, np.asarray(offsets, np.uint32), backend=backend)  # type: ignore[no-any-return]


# ------------------------------------------------------------------------------- scans
def cumsum(x: Any, *, backend: Any = "auto") -> np.ndarray:
    """The inclusive prefix sum of the flattened ``x``."""
    return _call("scan.sum", x, backend=backend)  # type: ignore[no-any-return]


def exclusive_cumsum(x: Any, *, backend: Any = "auto") -> np.ndarray:
    """The exclusive prefix sum (``out[0] = 0``)."""
    return _call("scan.exclusive_sum", x, backend=backend)  # type: ignore[no-any-return]


def cummin(x: Any, *, backend: Any = "auto") -> np.ndarray:
    """The running minimum (NaNs lose, like ``np.fmin.accumulate``)."""
    return _call("scan.min", x, backend=backend)  # type: ignore[no-any-return]


def cummax(x: Any, *, backend: Any = "auto") -> np.ndarray:
    """The running maximum (NaNs lose, like ``np.fmax.accumulate``)."""
    return _call("scan.max", x, backend=backend)  # type: ignore[no-any-return]


# ------------------------------------------------------------------------------- data movement
def nonzero(x: Any, *, backend: Any = "auto") -> np.ndarray:
    """The indices of the nonzero elements of the flattened ``x``, increasing (uint32)."""
    indices, count = _call("data.compact", x, backend=backend)
    return indices[: int(count[0])]  # type: ignore[no-any-return]


def take(src: Any, indices: Any, *, backend: Any = "auto") -> np.ndarray:
    """``src[indices]`` (indices as uint32; an index past the end gives 0)."""
    return _call("data.gather", src, np.asarray(indices, np.uint32), backend=backend)  # type: ignore[no-any-return]


def scatter(src: Any, indices: Any, size: int, *, backend: Any = "auto") -> np.ndarray:
    """``out[indices[i]] = src[i]`` into ``size`` zeros; of several writes to one slot the last wins,
    as in numpy's ``out[indices] = src``; indices past the end are dropped."""
    return _call("data.scatter", src, np.asarray(indices, np.uint32), backend=backend, size=size)  # type: ignore[no-any-return]


def bincount(x: Any, minlength: int, *, backend: Any = "auto") -> np.ndarray:
    """Counts of the values ``0 .. minlength - 1`` of an unsigned array (larger values are not
    counted: ``np.bincount(x[x < minlength], minlength=minlength)``), as uint32."""
    return _call("data.histogram", x, backend=backend, bins=minlength)  # type: ignore[no-any-return]


def transpose(x: Any, *, backend: Any = "auto") -> np.ndarray:
    """The transpose of a 2-D array, contiguous."""
    arr = _matrix("transpose", x)
    rows, cols = arr.shape
    return _call("data.transpose", arr, backend=backend, rows=rows, cols=cols).reshape(cols, rows)  # type: ignore[no-any-return]


# ------------------------------------------------------------------------------- sorting
def sort(keys: Any, values: Any = None, *, backend: Any = "auto") -> Any:
    """Unsigned keys sorted ascending (stable); with ``values``, ``(keys, values)`` moved together."""
    if values is None:
        return _call("sort.radix", keys, backend=backend)
    return _call("sort.radix_pairs", keys, values, backend=backend)


def topk(x: Any, k: int, *, backend: Any = "auto") -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` largest unsigned values, descending, and their indices (ties: lower index first)."""
    values, indices = _call("sort.topk", x, backend=backend, k=k)
    return values, indices


# ------------------------------------------------------------------------------- linear algebra, NN
def matmul(a: Any, b: Any, *, backend: Any = "auto") -> np.ndarray:
    """``a @ b`` for float matrices; each element is an fma chain over k in increasing order."""
    x, y = _matrix("matmul", a), _matrix("matmul", b)
    if x.shape[1] != y.shape[0]:
        raise _fail("matmul", f"shapes {x.shape} and {y.shape} do not chain", "pass a (m x k) and b (k x n)")
    m, k, n = x.shape[0], x.shape[1], y.shape[1]
    return _call("linalg.matmul", x, y, backend=backend, m=m, k=k, n=n).reshape(m, n)  # type: ignore[no-any-return]


def _rows(where: str, x: Any) -> np.ndarray:
    arr = np.asarray(x)
    if arr.ndim < 1 or arr.shape[-1] < 1:
        raise _fail(where, f"expected at least one column, got shape {arr.shape}", "pass an array whose last axis is not empty")
    return arr


def softmax(x: Any, *, backend: Any = "auto") -> np.ndarray:
    """Softmax over the last axis."""
    arr = _rows("softmax", x)
    return _call("nn.softmax", arr, backend=backend, cols=arr.shape[-1]).reshape(arr.shape)  # type: ignore[no-any-return]


def layer_norm(x: Any, weight: Any = None, bias: Any = None, *, backend: Any = "auto") -> np.ndarray:
    """Layer norm over the last axis, eps 1e-5 (torch's default), with optional weight and bias."""
    arr = _rows("layer_norm", x)
    cols = arr.shape[-1]
    w = np.ones(cols, arr.dtype) if weight is None else weight
    b = np.zeros(cols, arr.dtype) if bias is None else bias
    return _call("nn.layer_norm", arr, w, b, backend=backend).reshape(arr.shape)  # type: ignore[no-any-return]


def rms_norm(x: Any, weight: Any = None, *, backend: Any = "auto") -> np.ndarray:
    """RMS norm over the last axis, eps 1e-6, with an optional weight."""
    arr = _rows("rms_norm", x)
    w = np.ones(arr.shape[-1], arr.dtype) if weight is None else weight
    return _call("nn.rms_norm", arr, w, backend=backend).reshape(arr.shape)  # type: ignore[no-any-return]


def gelu(x: Any, *, backend: Any = "auto") -> np.ndarray:
    """GELU, the erf form (torch's default), elementwise."""
    arr = np.asarray(x)
    return _call("nn.gelu", arr, backend=backend).reshape(arr.shape)  # type: ignore[no-any-return]


def silu(x: Any, *, backend: Any = "auto") -> np.ndarray:
    """SiLU (x * sigmoid(x)), elementwise."""
    arr = np.asarray(x)
    return _call("nn.silu", arr, backend=backend).reshape(arr.shape)  # type: ignore[no-any-return]


# ------------------------------------------------------------------------------- bytes
def _bytes(data: Any) -> np.ndarray:
    if isinstance(data, (bytes, bytearray, memoryview)):
        return np.frombuffer(bytes(data), np.uint8)
    return np.asarray(data)


def byte_histogram(data: Any, *, backend: Any = "auto") -> np.ndarray:
    """The count of each byte value 0 .. 255 (uint32) of ``bytes`` or a uint8 array."""
    return _call("bytes.histogram", _bytes(data), backend=backend)  # type: ignore[no-any-return]


def _crc(name: str, data: Any, record: int | None, backend: Any) -> Any:
    raw = _bytes(data)
    out = _call(f"bytes.{name}", raw, backend=backend, record=raw.size if record is None else record)
    return int(out[0]) if record is None else out


def crc32(data: Any, record: int | None = None, *, backend: Any = "auto") -> Any:
    """The CRC-32 of ``data`` (as ``zlib.crc32``), or with ``record`` an array of the CRC-32 of each
    ``record``-byte record."""
    return _crc("crc32", data, record, backend)


def crc32c(data: Any, record: int | None = None, *, backend: Any = "auto") -> Any:
    """The CRC-32C (Castagnoli) of ``data``, or of each ``record``-byte record."""
    return _crc("crc32c", data, record, backend)


def find(data: Any, byte: int, *, backend: Any = "auto") -> int:
    """The index of the first ``byte`` in ``data`` (``bytes`` or uint8), -1 when there is none."""
    raw = _bytes(data)
    at = int(_call("bytes.find", raw, backend=backend, byte=byte)[0])
    return -1 if at == raw.size else at
