"""The sort sweep's residency per routine (routines/sort.routines.toml, resident($res)), with tiles
of 6144 keys: 4 workgroups a multiprocessor for sort.radix, 2 for sort.radix_pairs and sort.topk
(their 6144 keys and values fill 58 KiB of workgroup memory for 32-bit types, 3 an SM; 107 KiB for
u64 keys and f64 values, 2), and no binding that the benchmarks or the certification run spills
under its register cap (ptxas 13 sm_90 -O3: 64 registers at 4, 128 at 2; at 5, u64 keys spill
100/176 bytes, at 4 and 3 u64 keys + f64 values spill 60 and 16). It holds because the early
counts take a key's digit by another formula than the ranking, so ptxas recomputes it instead of
holding the tile's digits across two barriers."""

from __future__ import annotations

import re

import numpy as np
import pytest

from sim_ptx_helpers import ptxas_verbose
from vyre_decl.emit import emit
from vyre_decl.emit.ptxas import find_ptxas
from vyre_decl.routines import routine


def _sweep(rid: str, dtypes: tuple[str, ...]):
    compiled = routine(rid).compiled([np.dtype(d) for d in dtypes])
    return next(p for s, p in compiled.programs.items() if s.kernel == "sweep")


@pytest.mark.skipif(find_ptxas() is None, reason="ptxas is not installed")
@pytest.mark.parametrize("rid,dtypes,res", [("sort.radix", ("uint32",), 4), ("sort.radix", ("uint64",), 4),
                                            ("sort.radix_pairs", ("uint32", "uint32"), 2),
                                            ("sort.radix_pairs", ("uint64", "float64"), 2),
                                            ("sort.topk", ("uint32",), 2)])
def test_the_sweep_fits_its_residency_without_spilling(rid, dtypes, res):
    program = _sweep(rid, dtypes)
    assert program.resident == res
    log = ptxas_verbose(emit(program).text)
    used = int(re.search(r"Used (\d+) registers", log).group(1))
    spilled = [int(x) for x in re.findall(r"(\d+) bytes spill (?:stores|loads)", log)]
    assert used <= 65536 // (res * 256) and spilled and not any(spilled), log
