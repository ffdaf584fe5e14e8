"""Inputs and numpy oracles for the standard routines (tests/test_routine_library.py and the GPU
comparison): for each routine id, how to make inputs of a size and what numpy says the outputs
are. Integer outputs are compared exactly; float outputs within the bound each oracle returns."""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

SIZES = [0, 1, 31, 1000, (1 << 20) + 3]
# odd 2-D shapes (rows, cols) whose element counts follow SIZES
SHAPES = [(0, 5), (1, 1), (1, 31), (8, 125), (1021, 1027)]
MATMUL_SHAPES = [(0, 3, 4), (1, 1, 1), (31, 7, 5), (37, 53, 29), (65, 130, 67), (128, 1000, 96)]
NP = {"u32": np.uint32, "i32": np.int32, "u64": np.uint64, "i64": np.int64, "f32": np.float32, "f64": np.float64}
U32_MAX = np.uint32(0xFFFFFFFF)


@dataclass
class Case:
    inputs: list[np.ndarray]
    attrs: dict[str, int]
    want: list[np.ndarray]       # numpy's answer (floats computed in float64)
    bound: list[Any]             # per output: None (exact) or an array/scalar bound on |got - want|


def _values(dtype: np.dtype, n: int, rng: np.random.Generator, small: bool = False) -> np.ndarray:
    if dtype.kind == "f":
        return rng.standard_normal(n).astype(dtype)
    if small:
        return rng.integers(0, 3, n).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)


def _u(dtype: np.dtype) -> float:
    return float(np.finfo(dtype).eps) / 2


def _tiny(dtype: np.dtype) -> float:
    return float(np.finfo(dtype).tiny)


def _sum_bound(x64: np.ndarray, dtype: np.dtype) -> float:
    n = x64.size
    return max(n - 1, 0) * _u(dtype) * float(np.abs(x64).sum()) + _tiny(dtype)


def _reduction(fn: Callable[[np.ndarray], Any], empty: Callable[[np.dtype], Any]) -> Callable[..., Case]:
    def make(dtypes: dict[str, np.dtype], n: int, rng: np.random.Generator) -> Case:
        t = dtypes["T"]
        x = _values(t, n, rng)
        want = np.array([fn(x) if n else empty(t)], dtype=t)
        return Case([x], {}, [want], [None])
    return make


def _sum(dtypes: dict[str, np.dtype], n: int, rng: np.random.Generator) -> Case:
    t = dtypes["T"]
    x = _values(t, n, rng)
    if t.kind == "f":
        x64 = x.astype(np.float64)
        return Case([x], {}, [np.array([x64.sum()])], [_sum_bound(x64, t)])
    return Case([x], {}, [np.array([x.sum(dtype=t)])], [None])


def _prod(dtypes: dict[str, np.dtype], n: int, rng: np.random.Generator) -> Case:
    t = dtypes["T"]
    x = _values(t, n, rng)
    if t.kind == "f":
        x = (np.sign(x) * (1 + np.abs(x) / 64)).astype(t)  # magnitudes near 1: the product stays finite
        p = np.prod(x.astype(np.float64))
        return Case([x], {}, [np.array([p])], [(n + 1) * _u(t) * abs(p) + _tiny(t)])
    return Case([x], {}, [np.array([np.prod(x, dtype=t) if n else t.type(1)])], [None])


def _count(fn: Callable[[np.ndarray], int]) -> Callable[..., Case]:
    def make(dtypes: dict[str, np.dtype], n: int, rng: np.random.Generator) -> Case:
        x = _values(dtypes["T"], n, rng, small=True)
        if dtypes["T"].kind == "f" and n > 3:
            x[::3] = 0.0
            x[1] = np.nan
            x[2] = -0.0
        return Case([x], {}, [np.array([fn(x)], np.uint32)], [None])
    return make


def _arg(kind: str) -> Callable[..., Case]:
    def make(dtypes: dict[str, np.dtype], n: int, rng: np.random.Generator) -> Case:
        t = dtypes["T"]
        x = _values(t, n, rng)
        if n > 10:
            x[n // 2] = x[n // 3]  # a tie somewhere
            if t.kind == "f":
                x[n // 5] = np.nan
        if n == 0:
            want = U32_MAX
        else:
            want = np.nanargmin(x) if kind == "min" else np.nanargmax(x)
        return Case([x], {}, [np.array([want], np.uint32)], [None])
    return make


def _mean(dtypes: dict[str, np.dtype], n: int, rng: np.random.Generator) -> Case:
    t = dtypes["T"]
    x = _values(t, n, rng)
    x64 = x.astype(np.float64)
    if n == 0:
        return Case([x], {}, [np.array([np.nan])], [0.0])
    mean = x64.mean()
    return Case([x], {}, [np.array([mean])], [_sum_bound(x64, t) / n + 2 * _u(t) * abs(mean) + _tiny(t)])


def _var(dtypes: dict[str, np.dtype], n: int, rng: np.random.Generator) -> Case:
    t = dtypes["T"]
    x = _values(t, n, rng) + t.type(3)  # an offset mean, so the two-pass form matters
    x64 = x.astype(np.float64)
    if n == 0:
        return Case([x], {}, [np.array([np.nan])], [0.0])
    var = x64.var()
    scale = float((x64 ** 2).mean())
    return Case([x], {}, [np.array([var])], [8 * (n + 2) * _u(t) * scale + _tiny(t)])


def _segments(fn: Callable[[np.ndarray, Any], Any], empty: Callable[[np.dtype], Any]) -> Callable[..., Case]:
    def make(dtypes: dict[str, np.dtype], n: int, rng: np.random.Generator) -> Case:
        t = dtypes["T"]
        x = _values(t, n, rng)
        cuts = np.sort(rng.integers(0, n + 1, max(n // 50, 1)))
        offsets = np.concatenate([[0], cuts, [n]]).astype(np.uint32)
        want = np.array([fn(x[a:b], t) if b > a else empty(t) for a, b in zip(offsets[:-1], offsets[1:])], dtype=t)
        bound: Any = None
        if t.kind == "f" and fn is _seg_sum:
            bound = np.array([_sum_bound(x[a:b].astype(np.float64), t) for a, b in zip(offsets[:-1], offsets[1:])])
            want = np.array([x[a:b].astype(np.float64).sum() for a, b in zip(offsets[:-1], offsets[1:])])
        return Case([x, offsets], {}, [want], [bound])
    return make


def _seg_sum(v: np.ndarray, t: np.dtype) -> Any:
    return v.sum(dtype=t)


def _scan(kind: str) -> Callable[..., Case]:
    def make(dtypes: dict[str, np.dtype], n: int, rng: np.random.Generator) -> Case:
        t = dtypes["T"]
        x = _values(t, n, rng)
        if kind in ("sum", "exclusive_sum"):
            if t.kind == "f":
                x64 = x.astype(np.float64)
                inc = np.cumsum(x64)
                bound = (n * _u(t)) * np.cumsum(np.abs(x64)) + _tiny(t)
                if kind == "exclusive_sum":
                    inc, bound = np.concatenate([[0.0], inc[:-1]])[:n], np.concatenate([[0.0], bound[:-1]])[:n] + _tiny(t)
                return Case([x], {}, [inc], [bound])
            inc = np.cumsum(x, dtype=t)
            if kind == "exclusive_sum":
                inc = np.concatenate([np.zeros(1, t), inc[:-1]])[:n]
            return Case([x], {}, [inc], [None])
        acc = np.fmin.accumulate if kind == "min" else np.fmax.accumulate
        return Case([x], {}, [acc(x) if n else x.copy()], [None])
    return make


def _compact(dtypes: dict[str, np.dtype], n: int, rng: np.random.Generator) -> Case:
    x = _count(np.count_nonzero)(dtypes, n, rng).inputs[0]
    nz = np.flatnonzero(x).astype(np.uint32)
    indices = np.zeros(n, np.uint32)
    indices[: nz.size] = nz
    return Case([x], {}, [indices, np.array([nz.size], np.uint32)], [None, None])


def _gather(dtypes: dict[str, np.dtype], n: int, rng: np.random.Generator) -> Case:
    src = _values(dtypes["T"], n, rng)
    idx = rng.integers(0, n + 5, n).astype(np.uint32)
    want = np.where(idx < n, src[np.minimum(idx, max(n - 1, 0))] if n else np.zeros(0, src.dtype), 0).astype(src.dtype)
    return Case([src, idx], {}, [want], [None])


def _scatter(dtypes: dict[str, np.dtype], n: int, rng: np.random.Generator) -> Case:
    src = _values(dtypes["T"], n, rng)
    size = n // 2 + 1
    idx = rng.integers(0, size + 3, n).astype(np.uint32)
    want = np.zeros(size, src.dtype)
    keep = idx < size
    want[idx[keep]] = src[keep]  # numpy: the last assignment to an index wins
    return Case([src, idx], {"size": size}, [want], [None])


def _histogram(dtypes: dict[str, np.dtype], n: int, rng: np.random.Generator) -> Case:
    bins = [16, 1024, 5000][n % 3]
    x = rng.integers(0, 6000, n).astype(dtypes["T"])
    want = np.bincount(x[x < bins].astype(np.int64), minlength=bins).astype(np.uint32)
    return Case([x], {"bins": bins}, [want], [None])


def _shape_for(n: int) -> tuple[int, int]:
    return SHAPES[SIZES.index(n)] if n in SIZES else (1, n)


def _transpose(dtypes: dict[str, np.dtype], n: int, rng: np.random.Generator) -> Case:
    rows, cols = _shape_for(n)
    x = _values(dtypes["T"], rows * cols, rng)
    return Case([x], {"rows": rows, "cols": cols}, [x.reshape(rows, cols).T.ravel()], [None])


def _sort(pairs: bool) -> Callable[..., Case]:
    def make(dtypes: dict[str, np.dtype], n: int, rng: np.random.Generator) -> Case:
        keys = _values(dtypes["K"], n, rng)
        if n > 4:
            keys[: n // 4] = keys[n // 4: 2 * (n // 4)]  # duplicates: stability matters
        order = np.argsort(keys, kind="stable")
        if not pairs:
            return Case([keys], {}, [keys[order]], [None])
        vals = _values(dtypes["V"], n, rng)
        return Case([keys, vals], {}, [keys[order], vals[order]], [None, None])
    return make


def _topk(dtypes: dict[str, np.dtype], n: int, rng: np.random.Generator) -> Case:
    keys = rng.integers(0, 1000, n).astype(dtypes["K"])
    k = min(n, 100)
    order = np.lexsort((np.arange(n), -keys.astype(np.float64)))[:k].astype(np.uint32)
    return Case([keys], {"k": k}, [keys[order], order], [None, None])


def _dot(dtypes: dict[str, np.dtype], n: int, rng: np.random.Generator) -> Case:
    t = dtypes["T"]
    a, b = _values(t, n, rng), _values(t, n, rng)
    if t.kind == "f":
        p = a.astype(np.float64) * b.astype(np.float64)
        return Case([a, b], {}, [np.array([p.sum()])], [_sum_bound(p, t) + n * _u(t) * float(np.abs(p).sum())])
    return Case([a, b], {}, [np.array([(a * b).sum(dtype=t)])], [None])


def _matmul_shape(n: int) -> tuple[int, int, int]:
    return MATMUL_SHAPES[min(SIZES.index(n) if n in SIZES else 0, len(MATMUL_SHAPES) - 1)]


def _matmul(dtypes: dict[str, np.dtype], n: int, rng: np.random.Generator) -> Case:
    t = dtypes["T"]
    m, k, nn = _matmul_shape(n)
    a, b = _values(t, m * k, rng), _values(t, k * nn, rng)
    a64, b64 = a.astype(np.float64).reshape(m, k), b.astype(np.float64).reshape(k, nn)
    bound = (k + 1) * _u(t) * (np.abs(a64) @ np.abs(b64)) + _tiny(t)
    return Case([a, b], {"m": m, "k": k, "n": nn}, [(a64 @ b64).ravel()], [bound.ravel()])


def _rows(n: int) -> tuple[int, int]:
    if n == 1000:
        return 3, 4099  # rows longer than the 4096 columns a workgroup keeps in its memory
    rows, cols = _shape_for(n)
    return rows, max(cols, 1)


def _softmax(dtypes: dict[str, np.dtype], n: int, rng: np.random.Generator) -> Case:
    t = dtypes["T"]
    rows, cols = _rows(n)
    x = (_values(t, rows * cols, rng) * t.type(4)).astype(t)
    x64 = x.astype(np.float64).reshape(rows, cols)
    e = np.exp(x64 - x64.max(axis=1, keepdims=True)) if rows else x64
    want = (e / e.sum(axis=1, keepdims=True)).ravel() if rows else x64.ravel()
    return Case([x], {"cols": cols}, [want], [(cols + 8) * _u(t) * np.abs(want) + _tiny(t)])


def _norm(kind: str) -> Callable[..., Case]:
    def make(dtypes: dict[str, np.dtype], n: int, rng: np.random.Generator) -> Case:
        t = dtypes["T"]
        rows, cols = _rows(n)
        x = (_values(t, rows * cols, rng) + t.type(2)).astype(t)
        w, b = _values(t, cols, rng), _values(t, cols, rng)
        x64, w64, b64 = x.astype(np.float64).reshape(rows, cols), w.astype(np.float64), b.astype(np.float64)
        if kind == "layer":
            mean = x64.mean(axis=1, keepdims=True)
            scale = np.sqrt(x64.var(axis=1, keepdims=True) + 1e-5)
            want = ((x64 - mean) / scale * w64 + b64).ravel()
            ins = [x, w, b]
            size = np.abs((x64 - mean) / scale * w64) + np.abs(b64)
        else:
            scale = np.sqrt((x64 ** 2).mean(axis=1, keepdims=True) + 1e-6)
            want = (x64 / scale * w64).ravel()
            ins = [x, w]
            size = np.abs(x64 / scale * w64)
        bound = (8 * cols + 16) * _u(t) * (size.ravel() + np.abs(w64).max(initial=0)) + _tiny(t)
        return Case(ins, {}, [want], [bound])
    return make


def _erf(v: np.ndarray) -> np.ndarray:
    import math
    return np.vectorize(math.erf, otypes=[np.float64])(v) if v.size else v


def _activation(kind: str) -> Callable[..., Case]:
    def make(dtypes: dict[str, np.dtype], n: int, rng: np.random.Generator) -> Case:
        t = dtypes["T"]
        x = (_values(t, n, rng) * t.type(3)).astype(t)
        v = x.astype(np.float64)
        if kind == "gelu":
            want = v * 0.5 * (1 + _erf(v / np.sqrt(2.0)))
            bound = 4 * _u(t) * (np.abs(v) + 1)
        else:
            want = v / (1 + np.exp(-v))
            bound = 16 * _u(t) * np.abs(want) + _tiny(t)
        return Case([x], {}, [want], [bound])
    return make


def _bytes(n: int, rng: np.random.Generator) -> np.ndarray:
    return rng.integers(0, 256, n).astype(np.uint8)


def _byte_histogram(dtypes: dict[str, np.dtype], n: int, rng: np.random.Generator) -> Case:
    x = _bytes(n, rng)
    return Case([x], {}, [np.bincount(x, minlength=256).astype(np.uint32)], [None])


def _crc32c_table() -> list[int]:
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ (0x82F63B78 if c & 1 else 0)
        table.append(c)
    return table


_CRC32C = _crc32c_table()


def _crc32c(data: bytes) -> int:
    c = 0xFFFFFFFF
    for byte in data:
        c = _CRC32C[(c ^ byte) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def _crc(kind: str) -> Callable[..., Case]:
    def make(dtypes: dict[str, np.dtype], n: int, rng: np.random.Generator) -> Case:
        record = [1, 7, 64][n % 3]
        x = _bytes(n - n % record, rng)
        fn = zlib.crc32 if kind == "crc32" else _crc32c
        raw = x.tobytes()
        want = np.array([fn(raw[i:i + record]) for i in range(0, len(raw), record)], np.uint32)
        return Case([x], {"record": record}, [want], [None])
    return make


def _find(dtypes: dict[str, np.dtype], n: int, rng: np.random.Generator) -> Case:
    x = rng.integers(0, 200, n).astype(np.uint8)
    if n > 2:
        x[rng.integers(n // 2, n)] = 250
    hits = np.flatnonzero(x == 250)
    return Case([x], {"byte": 250}, [np.array([hits[0] if hits.size else n], np.uint32)], [None])


def _with_nans(x: np.ndarray, n: int) -> np.ndarray:
    """x with a NaN at a few seeded places (none below 10 elements), for numpy's NaN rules."""
    if n > 10:
        x[n // 2] = x[n // 3]  # a tie
        x[n // 5] = np.nan
        x[(3 * n) // 4] = np.nan
    return x


def _lib_fold(fn: Callable[[np.ndarray], Any], empty: float) -> Callable[..., Case]:
    def make(dtypes: dict[str, np.dtype], n: int, rng: np.random.Generator) -> Case:
        t = dtypes["T"]
        x = _with_nans(_values(t, n, rng), n)
        if n == 31:
            x[:] = np.nan  # all NaN
        with np.errstate(all="ignore"):
            import warnings
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                want = np.array([fn(x) if n else empty], dtype=t)
        return Case([x], {}, [want], [None])
    return make


def _lib_scan(acc: Callable[[np.ndarray], np.ndarray]) -> Callable[..., Case]:
    def make(dtypes: dict[str, np.dtype], n: int, rng: np.random.Generator) -> Case:
        x = _with_nans(_values(dtypes["T"], n, rng), n)
        return Case([x], {}, [acc(x) if n else x.copy()], [None])
    return make


def _lib_arg(fn: Callable[[np.ndarray], Any]) -> Callable[..., Case]:
    def make(dtypes: dict[str, np.dtype], n: int, rng: np.random.Generator) -> Case:
        x = _values(dtypes["T"], n, rng)
        if n > 10:
            x[n // 2] = x[n // 3]
            if n % 2:  # odd sizes: two NaNs, the first must win
                x[(3 * n) // 4] = x[n // 5] = np.nan
        want = U32_MAX if n == 0 else fn(x)
        return Case([x], {}, [np.array([want], np.uint32)], [None])
    return make


CASES: dict[str, Callable[..., Case]] = {
    "reduce.sum": _sum,
    "reduce.prod": _prod,
    "reduce.min": _reduction(np.min, lambda t: np.inf if t.kind == "f" else np.iinfo(t).max),
    "reduce.max": _reduction(np.max, lambda t: -np.inf if t.kind == "f" else np.iinfo(t).min),
    "reduce.and": _reduction(np.bitwise_and.reduce, lambda t: ~t.type(0)),
    "reduce.or": _reduction(np.bitwise_or.reduce, lambda t: t.type(0)),
    "reduce.xor": _reduction(np.bitwise_xor.reduce, lambda t: t.type(0)),
    "reduce.count": _count(np.count_nonzero),
    "reduce.any": _count(lambda x: int(np.any(x))),
    "reduce.all": _count(lambda x: int(np.all(x))),
    "reduce.argmin": _arg("min"),
    "reduce.argmax": _arg("max"),
    "reduce.mean": _mean,
    "reduce.var": _var,
    "reduce.segments_sum": _segments(_seg_sum, lambda t: t.type(0)),
    "reduce.segments_min": _segments(lambda v, t: np.min(v), lambda t: np.inf if t.kind == "f" else np.iinfo(t).max),
    "reduce.segments_max": _segments(lambda v, t: np.max(v), lambda t: -np.inf if t.kind == "f" else np.iinfo(t).min),
    "scan.sum": _scan("sum"),
    "scan.exclusive_sum": _scan("exclusive_sum"),
    "scan.min": _scan("min"),
    "scan.max": _scan("max"),
    "data.compact": _compact,
    "data.gather": _gather,
    "data.scatter": _scatter,
    "data.histogram": _histogram,
    "data.transpose": _transpose,
    "sort.radix": _sort(False),
    "sort.radix_pairs": _sort(True),
    "sort.topk": _topk,
    "linalg.dot": _dot,
    "linalg.matmul": _matmul,
    "nn.softmax": _softmax,
    "nn.layer_norm": _norm("layer"),
    "nn.rms_norm": _norm("rms"),
    "nn.gelu": _activation("gelu"),
    "nn.silu": _activation("silu"),
    "bytes.histogram": _byte_histogram,
    "bytes.crc32": _crc("crc32"),
    "bytes.crc32c": _crc("crc32c"),
    "bytes.find": _find,
    "lib.minimum": _lib_fold(np.min, np.inf),
    "lib.maximum": _lib_fold(np.max, -np.inf),
    "lib.nanmin": _lib_fold(np.nanmin, np.nan),
    "lib.nanmax": _lib_fold(np.nanmax, np.nan),
    "lib.cumminimum": _lib_scan(np.minimum.accumulate),
    "lib.cummaximum": _lib_scan(np.maximum.accumulate),
    "lib.argmin": _lib_arg(np.argmin),
    "lib.argmax": _lib_arg(np.argmax),
}


def check(case: Case, got: Any) -> None:
    """Assert the routine's outputs ``got`` match the case (exact, or within its bounds)."""
    outs = got if isinstance(got, tuple) else (got,)
    assert len(outs) == len(case.want)
    for g, w, bound in zip(outs, case.want, case.bound):
        assert g.shape == np.shape(w), (g.shape, np.shape(w))
        if bound is None:
            np.testing.assert_array_equal(g, np.asarray(w).astype(g.dtype))
            continue
        g64, w64 = g.astype(np.float64), np.asarray(w, np.float64)
        both_nan = np.isnan(g64) & np.isnan(w64)
        with np.errstate(invalid="ignore"):  # inf - inf where both are the same infinity
            err = np.where(both_nan, 0.0, np.abs(g64 - w64))
        ok = (err <= bound) | (g64 == w64) | both_nan
        assert ok.all(), f"{int((~ok).sum())} outside the bound; worst {float(np.max(err - bound))} over"


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal bits, every NaN equal to every NaN (docs/semantics.md: any NaN payload)."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.kind != "f":
        return a.tobytes() == b.tobytes()
    words = np.dtype(f"u{a.dtype.itemsize}")
    return bool(((a.view(words) == b.view(words)) | (np.isnan(a) & np.isnan(b))).all())
