"""The sort sweep's residency per routine (routines/sort.routines.toml, resident($res)): 5 workgroups
a multiprocessor for sort.radix, 4 for sort.radix_pairs, and no binding that the benchmarks or
the certification run spills under its register cap (ptxas 13 sm_90 -O3: 48 registers at 5, 64 at
4). It holds because the early counts take a key's digit by another formula than the ranking, so
ptxas recomputes it instead of holding 16 digits across two barriers (they spilled: 52 bytes for
u32 keys at 5, 44 for u64 keys at 4)."""

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
@pytest.mark.parametrize("rid,dtypes,res", [("sort.radix", ("uint32",), 5), ("sort.radix", ("uint64",), 5),
                                            ("sort.radix_pairs", ("uint32", "uint32"), 4),
                                            ("sort.radix_pairs", ("uint64", "float64"), 4)])
def test_the_sweep_fits_its_residency_without_spilling(rid, dtypes, res):
    program = _sweep(rid, dtypes)
    assert program.resident == res
    log = ptxas_verbose(emit(program).text)
    used = int(re.search(r"Used (\d+) registers", log).group(1))
    spilled = [int(x) for x in re.findall(r"(\d+) bytes spill (?:stores|loads)", log)]
    assert used <= 65536 // (res * 256) and spilled and not any(spilled), log
