"""Replay capsules: a failing case as a small JSON file (program text, inputs, grid, seed) that
``python -m vyre_decl.conform replay CAPSULE`` runs again on the backend and the reference."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import numpy as np

from ..backends.hostio import as_storage
from ..ir.nodes import Program
from ..ir.text import parse_program, print_program

__all__ = ["write_capsule", "read_capsule", "clear_capsules", "current_known_answer", "FORMAT"]

FORMAT = "vyre_decl.capsule/1"


def write_capsule(directory: Path, unit: str, program: Program, inputs: list[np.ndarray],
                  grid: tuple[int, int, int] | None, backend: str, seed: int, note: str,
                  expect: list[np.ndarray] | None = None, kat: dict[str, Any] | None = None) -> Path:
    """Write a capsule for a failing case (``expect``: known answers for the first outputs, when
    the case is a known-answer test, and ``kat`` where the answer came from: op id, binding,
    attributes and input bits, so that a replay reads the registry's current answer); returns its
    path."""
    items = []
    for decl, arr in zip(program.inputs, inputs):
        raw = as_storage(decl, arr)
        items.append({"name": decl.name, "type": decl.dtype.value, "count": int(raw.size), "hex": raw.tobytes().hex()})
    data = {"format": FORMAT, "unit": unit, "backend": backend, "seed": seed, "note": note,
            "grid": list(grid) if grid else None, "program": print_program(program), "inputs": items}
    if kat is not None:
        data["kat"] = kat
    if expect is not None:
        data["expect"] = [{"name": d.name, "hex": as_storage(d, np.asarray(e)).tobytes().hex()}
                          for d, e in zip(program.outputs, expect)]
    text = json.dumps(data, indent=1)
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", unit).strip("_")[:80]
    path = directory / f"{name}-{hashlib.sha256(text.encode()).hexdigest()[:8]}.json"
    directory.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def read_capsule(path: Path) -> tuple[Program, list[np.ndarray], tuple[int, int, int] | None, dict[str, Any]]:
    """(program, inputs, grid, the capsule's data) of a capsule file."""
    data = json.loads(Path(path).read_text())
    if data.get("format") != FORMAT:
        raise ValueError(f"{path} is not a vyre_decl replay capsule (format {data.get('format')!r}). "
                         "Fix: pass a file the conformance runner wrote")
    program = parse_program(data["program"], filename=str(path))
    inputs = []
    for decl, item in zip(program.inputs, data["inputs"]):
        inputs.append(np.frombuffer(bytes.fromhex(item["hex"]), dtype=decl.dtype.storage_dtype).copy())
    grid = tuple(data["grid"]) if data.get("grid") else None
    outputs = {d.name: d for d in program.outputs}
    data["expect_arrays"] = [np.frombuffer(bytes.fromhex(e["hex"]), dtype=outputs[e["name"]].dtype.storage_dtype).copy()
                             for e in data.get("expect", [])]
    return program, inputs, grid, data  # type: ignore[return-value]


def clear_capsules(directory: Path) -> int:
    """Remove the capsules (and only capsules: JSON files of this format) a run left in
    ``directory``; returns how many."""
    removed = 0
    for path in sorted(directory.glob("*.json")) if directory.is_dir() else ():
        try:
            if json.loads(path.read_text()).get("format") == FORMAT:
                path.unlink()
                removed += 1
        except (OSError, ValueError, AttributeError):
            continue  # not ours, or unreadable: left alone
    return removed


def current_known_answer(kat: dict[str, Any], registry: Any) -> int | None:
    """The known answer's bits for these inputs in ``registry`` now, or None when the op or that
    known answer is gone (a KAT capsule replays against the registry of the replay, not the run)."""
    if kat.get("op") not in registry:
        return None
    op = registry.get(kat["op"])
    binding = tuple(kat.get("binding", ()))
    attrs = tuple(tuple(a) for a in kat.get("attrs", ()))
    inputs = tuple(kat.get("inputs", ()))
    for k in op.kats:
        if tuple(t.value for t in k.binding) == binding and tuple(k.attrs) == attrs:
            for case in k.cases:
                if tuple(case[:-1]) == inputs:
                    return int(case[-1])
    return None
