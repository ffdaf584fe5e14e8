"""The program corpus: ``.vyre`` files exercising every IR feature, shipped with the package.

A file may start with comment lines; the first is its summary, and ``# grid: X Y Z`` gives the
grid for programs whose workgroups are not 1-D. ``make_inputs`` builds seeded random inputs of a
chosen size for any program (runtime-sized inputs get ``size`` elements).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..ir.nodes import Program
from ..ir.text import parse_program
from ..ir.types import DataType

__all__ = ["CorpusProgram", "corpus_dir", "load_corpus", "make_inputs"]

_GRID_RE = re.compile(r"#\s*grid:\s*(\d+)\s+(\d+)\s+(\d+)")


@dataclass(frozen=True)
class CorpusProgram:
    name: str
    path: Path
    program: Program
    summary: str
    grid: tuple[int, int, int] | None


def corpus_dir() -> Path:
    """The shipped corpus: inside the installed package (``_corpus``) or ``corpus/`` at the
    repository root in a source checkout."""
    pkg = Path(__file__).resolve().parent.parent
    for candidate in (pkg / "_corpus", pkg.parent / "corpus"):
        if candidate.is_dir():
            return candidate
    return pkg / "_corpus"


def load_corpus(directory: Path | None = None) -> list[CorpusProgram]:
    """Every ``*.vyre`` program of ``directory`` (default: the shipped corpus), by file name."""
    out = []
    for path in sorted((directory or corpus_dir()).glob("*.vyre")):
        text = path.read_text(encoding="utf-8")
        comments = [ln.strip() for ln in text.splitlines() if ln.strip().startswith("#")]
        grid = next((tuple(int(g) for g in m.groups()) for m in map(_GRID_RE.match, comments) if m), None)
        summary = next((c.lstrip("# ") for c in comments if not _GRID_RE.match(c)), "")
        out.append(CorpusProgram(path.stem, path, parse_program(text, filename=str(path)), summary, grid))  # type: ignore[arg-type]
    return out


def _random_storage(dtype: DataType, n: int, rng: np.random.Generator) -> np.ndarray:
    st = dtype.storage_dtype
    if dtype is DataType.BOOL:
        return rng.integers(0, 3, n).astype(np.uint32)  # words 0, 1 and 2: nonzero is true
    if dtype.is_float and dtype is not DataType.BF16:
        vals = rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4, n)
        specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, 2.5])
        pick = rng.random(n) < 0.1
        vals[pick] = rng.choice(specials, int(pick.sum()))
        return vals.astype(st)
    raw = rng.integers(0, 256, n * st.itemsize, dtype=np.uint8).view(st)
    if st.kind in "iu":  # mix in small values, where most interesting arithmetic happens
        small = rng.integers(-50, 50, n).astype(np.int64).astype(st)
        raw = np.where(rng.random(n) < 0.5, small, raw)
    return raw


def make_inputs(program: Program, size: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Random inputs for ``program``: fixed-count buffers get their count, runtime-sized ones
    ``size`` elements (or the size of the buffer they are declared like)."""
    sizes: dict[str, int] = {}
    arrays = []
    for b in program.inputs:
        n = b.count or (sizes.get(b.count_like, size) if b.count_like else size)
        sizes[b.name] = n
        arrays.append(_random_storage(b.dtype, n, rng))
    return arrays
