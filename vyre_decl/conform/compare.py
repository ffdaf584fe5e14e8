"""Comparison: the backend under test and the reference on the same cases, bit for bit.

``Checker`` holds what every kind of unit needs: the runner of the backend, the reference, the
registry, the seed and where capsules go. It evaluates an op on columns of operands on either
side, compares them (atomics on the old value too) and writes replay capsules; ``show`` spells
a value as its type, hex bits and decimal for reports.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..ir.scalars import decode
from ..ir.signature import Binding
from ..ir.types import DataType
from ..reference.interpreter import op_function
from ..registry import OpDef, Registry
from .capsule import write_capsule
from .isolation import CaseError, Runner, is_reference
from .oneop import one_op_program
from .values import mismatches, to_bits

__all__ = ["Checker", "show", "inputs_shown"]


def show(t: DataType, value: Any) -> dict[str, str]:
    bits = int(to_bits(t, np.asarray([value]))[0])
    return {"type": t.value, "hex": f"{bits:#0{2 + max(1, t.bits // 4)}x}", "dec": repr(decode(t, bits))}


def inputs_shown(op: OpDef, types: Sequence[DataType], columns: Sequence[np.ndarray], j: int) -> dict[str, Any]:
    return {p.name: show(t, c[j]) for p, t, c in zip(op.signature.inputs, types, columns)}


class Checker:
    """Runs cases on the backend under test and on the reference."""

    def __init__(self, runner: Runner, registry: Registry, seed: int, capsule_dir: Path | None) -> None:
        from ..backends.reference import ReferenceBackend

        self.runner, self.registry, self.seed, self.capsule_dir = runner, registry, seed, capsule_dir
        self.reference = ReferenceBackend(registry)

    @property
    def backend_is_reference(self) -> bool:
        """Whether the backend under test is the executable definition itself."""
        return is_reference(self.runner.name)

    def ref_eval(self, op_id: str, binding: Binding, args: Sequence[np.ndarray]) -> np.ndarray:
        with np.errstate(all="ignore"):
            return np.asarray(op_function(self.registry, self.registry.get(op_id), binding)(list(args)))

    def backend_eval(self, op_id: str, binding: Binding, args: Sequence[np.ndarray]) -> np.ndarray:
        op = self.registry.get(op_id)
        n = len(args[0]) if args else 1
        outputs = self.runner.run(one_op_program(op, binding), [np.asarray(a) for a in args], None)
        if not outputs or np.shape(outputs[0]) != (n,):
            raise CaseError(f"the backend returned {len(outputs)} output(s) of shape(s) "
                            f"{[np.shape(o) for o in outputs]} for {n} cases")
        return outputs[0]  # the result (for atomics: the new memory values)

    def compare(self, op: OpDef, binding: Binding, attrs: tuple[tuple[str, int], ...],
                cols: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray, str | None]:
        """Run cases ``cols`` on the backend and the reference: (indices that differ, reference
        results, backend results, what is wrong with the backend's outputs if their number or shape
        is off). Atomic ops are also checked on the old value they yield. Raises CaseError."""
        types, out_t = op.input_types(binding), op.output_type(binding)
        n = len(cols[0]) if cols else 1
        with np.errstate(all="ignore"):
            expected = np.broadcast_to(np.asarray(op_function(self.registry, op, binding, attrs)(cols)), (n,))
        outputs = self.runner.run(one_op_program(op, binding, attrs), cols, None)
        want = 2 if op.is_atomic else 1
        shapes = [np.shape(o) for o in outputs]
        if len(outputs) != want or any(sh != (n,) for sh in shapes):
            return np.arange(n), expected, np.zeros(n, expected.dtype), \
                f"the backend returned {len(outputs)} output(s) of shape(s) {shapes}, expected {want} of ({n},)"
        bad = mismatches(out_t, expected, outputs[0])  # backends agree with the reference bit for bit
        if op.is_atomic:
            bad = np.union1d(bad, mismatches(types[0], cols[0], outputs[1]))
        return bad, expected, np.asarray(outputs[0]), None

    def capsule(self, unit: str, program: Any, inputs: list[np.ndarray], grid: Any, note: str,
                expect: list[np.ndarray] | None = None, kat: dict[str, Any] | None = None) -> str | None:
        """Write a replay capsule (when a capsule directory is set); its name, relative to that
        directory, so that shards merge exactly."""
        if self.capsule_dir is None:
            return None
        return write_capsule(self.capsule_dir, unit, program, inputs, grid, self.runner.name, self.seed, note,
                             expect, kat).name
