"""EMITTER_CONTRACT moves with every change of the PTX the emitter writes. It is part of every PTX
cache key (with the program's content hash, the registry's fingerprint and the package version),
so a disk cache never hands back PTX an older emitter wrote beside the KernelABI today's code
computes (2026-11-27: lowering changes that kept /5 made stale PTX zero workgroup memory the new
ABI no longer reserves). tests/fixtures/emitter_contract.json records, for the corpus programs,
the routine kernels and 100 fuzz programs (by content hash: an edited program is not compared),
the PTX each gave under one (contract, registry fingerprint, version): while all three are
unchanged the PTX must be too. After a deliberate change, record again:
``python tests/test_emitter_contract.py`` (bump EMITTER_CONTRACT first if the emitter changed)."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import numpy as np

import vyre_decl
from vyre_decl.conform import fuzzrun
from vyre_decl.conform.corpus import load_corpus
from vyre_decl.emit import EMITTER_CONTRACT, emit
from vyre_decl.ir.diagnostics import VyreError
from vyre_decl.ir.nodes import Program
from vyre_decl.routines import routines

FIXTURE = Path(__file__).parent / "fixtures" / "emitter_contract.json"


def _key() -> dict[str, str]:
    reg = vyre_decl.acquire("reference").registry
    return {"contract": EMITTER_CONTRACT, "registry": reg.fingerprint, "version": vyre_decl.__version__}


def _programs() -> list[Program]:
    """The corpus, every routine kernel for u32, f32 and f64 inputs, and 100 fuzz programs: what
    the lowering rules meet (unused workgroup arrays, ifs on literals, collectives, views ...)."""
    reg = vyre_decl.acquire("reference").registry
    out = [c.program for c in load_corpus()]
    for rid in routines():
        r = vyre_decl.routine(rid)
        for dt in ("uint32", "float32", "float64"):
            try:
                out += r.compiled([np.dtype(dt)] * len(r.definition.inputs)).programs.values()
            except VyreError:
                continue  # the routine does not take this type
    ops = fuzzrun.FuzzOps(reg)
    return out + [fuzzrun.random_program(seed, ops) for seed in range(100)]


def _ptx() -> dict[str, str]:
    """content hash of each program -> sha256 of its PTX (sm_90)."""
    reg = vyre_decl.acquire("reference").registry
    return {p.content_hash(): hashlib.sha256(emit(p, reg, "sm_90").text.encode()).hexdigest() for p in _programs()}


def test_the_same_cache_key_gives_the_same_ptx():
    recorded = json.loads(FIXTURE.read_text())
    key = _key()
    assert recorded["key"] == key, (
        f"the PTX cache key's parts changed ({recorded['key']} -> {key}): if the emitter's output changed, "
        "bump EMITTER_CONTRACT in vyre_decl/emit/target.py; then record: python tests/test_emitter_contract.py")
    now = _ptx()
    changed = sorted(h[:16] for h, ptx in now.items() if h in recorded["ptx"] and recorded["ptx"][h] != ptx)
    assert not changed, (f"{len(changed)} program(s) emit other PTX under the same cache key ({key['contract']}): "
                         "bump EMITTER_CONTRACT in vyre_decl/emit/target.py, then record: python tests/test_emitter_contract.py")
    assert len(set(now) & set(recorded["ptx"])) >= len(now) // 2, "most programs changed: record again"


if __name__ == "__main__":
    FIXTURE.write_text(json.dumps({"key": _key(), "ptx": _ptx()}, indent=1, sort_keys=True) + "\n")
    print(f"recorded {FIXTURE}", file=sys.stderr)
