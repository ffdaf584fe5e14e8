"""Replaying a capsule: its program and inputs on a backend and on the reference, again.

A known-answer capsule is also checked against the registry's answer now (not the one of the run
that wrote it), within the op's ULP budget as everywhere (the sign of a zero exactly); every
output is compared element by element and the first differences printed.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..backends.config import DispatchConfig
from ..backends.hostio import host_output
from ..backends.reference import ReferenceBackend
from ..ir.diagnostics import VyreError
from ..ir.nodes import Program
from .isolation import SELF_CONSISTENCY, CaseError, is_reference, make_runner
from .values import buffer_mismatches

__all__ = ["replay", "ReplayError"]


class ReplayError(Exception):
    """The capsule cannot be replayed here (a usage or environment problem: exit status 2)."""


def _current_answer(program: Program, data: dict[str, Any]) -> int:
    """Put the registry's known answer now (not the one of the run) into ``data["expect_arrays"]``
    (nothing when it is gone); the op's ULP budget for it."""
    from ..registry import default_registry
    from .capsule import current_known_answer

    registry = default_registry()
    bits = current_known_answer(data["kat"], registry)
    out = program.outputs[0]
    if bits is None:
        print("  the known answer is no longer in the registry: comparing the backend with the reference only")
        data["expect_arrays"] = []
        return 0
    storage = out.dtype.storage_dtype  # the answer is a bit pattern: reinterpret, never convert
    data["expect_arrays"] = [np.array([bits], dtype=f"u{storage.itemsize}").view(storage)]
    return registry.get(data["kat"]["op"]).accuracy(out.dtype) if out.dtype.is_float else 0


def replay(program: Program, inputs: list[np.ndarray], grid: tuple[int, int, int] | None, data: dict[str, Any],
           name: str) -> int:
    """Replay on backend ``name``, printing what matches and what differs; 0 when everything matches."""
    self_check = is_reference(name)
    print(f"replaying {data.get('unit')} ({data.get('note', '')}) on {name}, seed {data.get('seed')}"
          + (f" ({SELF_CONSISTENCY}: the reference against itself; only a known answer can differ)" if self_check else ""))
    budget = _current_answer(program, data) if data.get("kat") and program.outputs else 0
    try:
        expected = ReferenceBackend().dispatch(program, inputs, DispatchConfig(grid=grid))
    except VyreError as exc:  # e.g. its op is no longer in the registry
        raise ReplayError(f"the capsule's program cannot run here: {exc}\nFix: replay with the op files the capsule "
                          "was made with (VYRE_DECL_OPS_PATH), or run the conformance again") from None
    runner = make_runner(name)
    try:
        actual = runner.run(program, inputs, grid)
    except CaseError as err:
        print(f"the backend failed: {err}")
        return 1
    finally:
        runner.close()
    failed = False
    for decl, want in zip(program.outputs, data["expect_arrays"]):  # a known-answer capsule
        want = host_output(decl, want)
        ref_out = expected[program.outputs.index(decl)]
        got = actual[program.outputs.index(decl)]
        for who, arr in (("reference", ref_out), ("backend", got)):
            bad = buffer_mismatches(decl.dtype, want, arr, budget)
            print(f"  {decl.name}: the {who} {'differs from' if bad.size else 'meets'} the known answer "
                  f"{want.tolist()}{f' within {budget} ULP' if budget else ''} (gives {arr.tolist()})")
            failed |= bool(bad.size)
    for decl, e, a in zip(program.outputs, expected, actual):
        bad = buffer_mismatches(decl.dtype, e, a)
        if not bad.size:
            print(f"  {decl.name}: {e.size} elements match")
            continue
        failed = True
        print(f"  {decl.name}: {bad.size} of {e.size} elements differ")
        for i in bad[:8]:
            ev, av = (e[i] if i < e.size else None), (a[i] if i < a.size else None)
            hexof = lambda v: v.tobytes()[::-1].hex() if isinstance(v, np.generic) else "-"  # noqa: E731
            print(f"    [{i}] reference {ev!r} (0x{hexof(ev)}), backend {av!r} (0x{hexof(av)})")
    print("FAIL: still differs" if failed else f"PASS ({SELF_CONSISTENCY} only: replay with --backend NAME to test "
          "a backend)" if self_check else "PASS: the backend now matches the reference")
    return 1 if failed else 0


