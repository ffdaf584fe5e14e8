"""Workgroup arrays the body never touches where it may run (nowhere, or only in the branch an ``if``
on a literal never takes) are left out by the emitter: not declared, not laid out in the dynamic
array, not zeroed (ir/wgmem.py ``live_workgroup_arrays``). Results stay those of the reference
(the simulated device); validation still counts every declared array. sort.radix's sweep
(``if $moves`` with moves = false) so holds no value array: 16 KiB less a workgroup."""

from __future__ import annotations

import numpy as np
import pytest

from sim_ptx_helpers import assert_matches
from vyre_decl.backends.reference import ReferenceBackend
from vyre_decl.emit import emit, kernel_abi
from vyre_decl.ir import parse_program
from vyre_decl.ir import validate as _validate
from vyre_decl.registry import default_registry

REG = default_registry()

SRC = """program w workgroup(64, 1, 1)LARGE {
  buffer x: read u32[] @0
  buffer out: write u32[len(x)] @1
  buffer a: workgroup u32[64]
  buffer dead: workgroup u32[DEAD]
  buffer other: workgroup u32[256]
  buffer never: workgroup u32[512]
  buffer b: workgroup u32[64]
  let t = lid.x
  a[t] = x[gid.x]
  if COND { dead[t] = 7u32; a[t] = a[t] + dead[t] } else { other[t] = 5u32; a[t] = a[t] * other[t] }
  barrier
  b[63u32 - t] = a[t]
  barrier
  out[gid.x] = b[t]
}
"""


def _program(cond: str = "false", large: bool = False, dead: int = 2048):
    text = SRC.replace("LARGE", " workgroup_memory(large)" if large else "").replace("DEAD", str(dead))
    return parse_program(text.replace("COND", cond))


@pytest.mark.parametrize("large", [False, True])
@pytest.mark.parametrize("cond", ["false", "true", "x[0u32] == 3u32"])
def test_untouched_workgroup_arrays_are_left_out(cond, large):
    p = _program(cond, large)
    assert _validate(p, REG) == []
    module = emit(p)
    text, abi = module.text, module.abi
    kept = {"false": ["a", "other", "b"], "true": ["a", "dead", "b"], "x[0u32] == 3u32": ["a", "dead", "other", "b"]}[cond]
    sizes = {"a": 256, "dead": 8192, "other": 1024, "b": 256}
    if large:  # one dynamic array: the kept arrays laid out in declaration order, 16-byte aligned
        assert abi.dynamic_shared_bytes == sum(sizes[k] for k in kept) and abi.shared_bytes == 0
    else:
        assert abi.shared_bytes == sum(sizes[k] for k in kept)
        for name in ["a", "dead", "other", "never", "b"]:
            assert (f".b8 wg_{name}[" in text) == (name in kept), name
    assert text.count("_zero:") == len(kept)  # one zeroing loop a kept array
    x = (np.arange(200, dtype=np.uint64) * 2654435761 % (1 << 32)).astype(np.uint32)
    x[0] = 3
    want = ReferenceBackend(REG).dispatch(p, [x])
    assert_matches(p, [x], want)


def test_validation_still_counts_every_declared_array():
    p = _program("false", large=False, dead=16384)  # 64 KiB declared, only a, other and b touched
    assert [d.code for d in _validate(p, REG)] == ["V019"]


def test_the_keys_only_sweep_has_no_value_array():
    from vyre_decl.routines import routine

    def sweep(rid: str, dtypes: tuple[str, ...]):
        compiled = routine(rid).compiled([np.dtype(d) for d in dtypes])
        return next(p for s, p in compiled.programs.items() if s.kernel == "sweep")

    keys, pairs = sweep("sort.radix", ("uint32",)), sweep("sort.radix_pairs", ("uint32", "uint32"))
    k_abi, p_abi = kernel_abi(keys), kernel_abi(pairs)
    assert p_abi.dynamic_shared_bytes - k_abi.dynamic_shared_bytes == 6144 * 4  # vals: 6144 u32 (the sweep's tile)
    assert emit(pairs).text.count("_zero:") - emit(keys).text.count("_zero:") == 1
