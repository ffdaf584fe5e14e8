"""Reductions and scans along axes as one generated program: the array is viewed as (rows, cols)
with the reduced axes last, and invocation r folds row r in index order (the combination order of
every reduction along a subset of the axes: c = 0, 1, ..., cols - 1, from the identity). The
combining ops are registry ops named in the table below."""

from __future__ import annotations

from typing import Any

import numpy as np

from ._core import fail
from ._kernel import WORKGROUP, literal, run_text, storage_type, value_type

__all__ = ["FOLDS", "fold_rows", "fold_text", "arg_rows", "moments_rows", "moments_text", "scan_rows", "scan_text"]

_M = "primitive.math."


def _ident(kind: str, dtype: np.dtype) -> Any:
    if kind == "zero":
        return dtype.type(0)
    if kind == "one":
        return dtype.type(1)
    if kind == "nan":
        return dtype.type(np.nan)
    if dtype.kind == "f":
        return dtype.type(np.inf if kind == "max" else -np.inf)
    info = np.iinfo(dtype)
    return info.max if kind == "max" else info.min


# name: {kinds: (combine over {a} the accumulator and {v} the element, identity)}
FOLDS: dict[str, dict[str, tuple[str, str]]] = {
    "sum": {"iuf": (_M + "add({a}, {v})", "zero")},
    "nansum": {"f": (_M + "add({a}, select({v} != {v}, {zero}, {v}))", "zero"), "iu": (_M + "add({a}, {v})", "zero")},
    "prod": {"iuf": (_M + "mul({a}, {v})", "one")},
    "min": {"f": (_M + "minimum({a}, {v})", "max"), "iu": (_M + "min({a}, {v})", "max")},
    "max": {"f": (_M + "maximum({a}, {v})", "min"), "iu": (_M + "max({a}, {v})", "min")},
    "nanmin": {"f": (_M + "min({a}, {v})", "nan"), "iu": (_M + "min({a}, {v})", "max")},
    "nanmax": {"f": (_M + "max({a}, {v})", "nan"), "iu": (_M + "max({a}, {v})", "min")},
}


def _combine(name: str, dtype: np.dtype) -> tuple[str, Any]:
    for kinds, (form, ident) in FOLDS[name].items():
        if dtype.kind in kinds:
            return form, _ident(ident, dtype)
    raise fail("L002", name, f"{name} along an axis does not take {dtype}", "pass integers or floats")


def _head(name: str, dtype: np.dtype, out_type: str, count: int) -> list[str]:
    return [f"program lib_rows_{name} workgroup({WORKGROUP}, 1, 1) {{",
            f"  buffer x: read {storage_type(dtype)}[] @0",
            f"  buffer out: write {out_type}[{count}] @1"]


def _run(where: str, lines: list[str], x: np.ndarray, backend: Any) -> np.ndarray:
    return run_text(where, "\n".join(lines + ["}", ""]), [x], backend)[0]


def fold_rows(where: str, name: str, x: np.ndarray, rows: int, cols: int, backend: Any) -> np.ndarray:
    """out[r] = the fold of row r of ``x`` (rows x cols, a routine dtype) in index order."""
    return run_text(where, fold_text(name, x.dtype, rows, cols), [x], backend)[0]


def fold_text(name: str, dtype: np.dtype, rows: int, cols: int) -> str:
    """The program of ``fold_rows`` (also run over resident buffers: lib/_device.py)."""
    form, ident = _combine(name, dtype)
    zero = literal(dtype.type(0), dtype)
    step = form.format(a="acc", v="v", zero=zero)
    lines = _head(name, dtype, storage_type(dtype), rows) + [
        "  let r = gid.x", f"  if r < {rows}u32 {{", f"    let acc = {literal(ident, dtype)}",
        f"    loop c in 0u32 .. {cols}u32 {{", f"      let v = x[r * {cols}u32 + c]", f"      acc = {step}", "    }",
        "    out[r] = acc", "  }"]
    return "\n".join(lines + ["}", ""])


def arg_rows(where: str, x: np.ndarray, rows: int, cols: int, largest: bool, nan_wins: bool, backend: Any) -> np.ndarray:
    """out[r] = the index of the first best element of row r (a NaN first when ``nan_wins``, never
    otherwise; 2^32 - 1 when the row has no candidate)."""
    better = "primitive.compare." + ("gt" if largest else "lt")
    ident = literal(_ident("min" if largest else "max", x.dtype), x.dtype)
    take = f"(!bn && !vn && ({better}(v, best) || (v == best && c < bi)))"
    if nan_wins:
        take = f"(vn && !bn) || {take}"
    lines = _head("arg", x.dtype, "u32", rows) + [
        "  let r = gid.x", f"  if r < {rows}u32 {{", f"    let best = {ident}", "    let bi = 4294967295u32",
        f"    loop c in 0u32 .. {cols}u32 {{", f"      let v = x[r * {cols}u32 + c]",
        "      let vn = v != v", "      let bn = best != best",
        f"      if {take} {{", "        best = v", "        bi = c", "      }", "    }", "    out[r] = bi", "  }"]
    return _run(where, lines, x, backend)


def moments_rows(where: str, x: np.ndarray, rows: int, cols: int, kind: str, ddof: int, backend: Any) -> np.ndarray:
    """Per row of a float ``x``: the mean (sum in index order / cols), or the variance (the mean m,
    then the sum of (v - m)^2 in index order / max(cols - ddof, 0)), or its square root."""
    return run_text(where, moments_text(kind, x.dtype, rows, cols, ddof), [x], backend)[0]


def moments_text(kind: str, dtype: np.dtype, rows: int, cols: int, ddof: int) -> str:
    """The program of ``moments_rows`` (also run over resident buffers: lib/_devaxes.py)."""
    t = value_type(dtype)
    zero = literal(dtype.type(0), dtype)
    lines = _head(kind, dtype, t, rows) + [
        "  let r = gid.x", f"  if r < {rows}u32 {{", f"    let s = {zero}",
        f"    loop c in 0u32 .. {cols}u32 {{ s = s + x[r * {cols}u32 + c] }}",
        f"    let m = s / ({cols}u32 as {t})"]
    if kind == "mean":
        lines.append("    out[r] = m")
    else:
        dof = max(cols - ddof, 0)
        lines += [f"    let q = {zero}",
                  f"    loop c in 0u32 .. {cols}u32 {{ q = q + {_M}sq_diff(x[r * {cols}u32 + c], m) }}",
                  f"    let var = q / ({dof}u32 as {t})",
                  "    out[r] = " + (f"{_M}sqrt(var)" if kind == "std" else "var")]
    lines.append("  }")
    return "\n".join(lines + ["}", ""])


def scan_rows(where: str, name: str, x: np.ndarray, rows: int, cols: int, backend: Any) -> np.ndarray:
    """out[r, c] = the fold of x[r, 0 .. c] in index order (inclusive)."""
    return run_text(where, scan_text(name, x.dtype, rows, cols), [x], backend)[0]


def scan_text(name: str, dtype: np.dtype, rows: int, cols: int) -> str:
    """The program of ``scan_rows`` (also run over resident buffers: lib/_devaxes.py)."""
    form, ident = _combine(name, dtype)
    step = form.format(a="acc", v="v", zero=literal(dtype.type(0), dtype))
    lines = _head("scan_" + name, dtype, storage_type(dtype), rows * cols) + [
        "  let r = gid.x", f"  if r < {rows}u32 {{", f"    let acc = {literal(ident, dtype)}",
        f"    loop c in 0u32 .. {cols}u32 {{", f"      let v = x[r * {cols}u32 + c]", f"      acc = {step}",
        f"      out[r * {cols}u32 + c] = acc", "    }", "  }"]
    return "\n".join(lines + ["}", ""])
