"""Running a routine: its kernels compiled per binding, temporaries sized, steps launched in order.

On any backend the steps go through ``dispatch`` with host arrays (the reference backend runs
them exactly like a GPU, workgroups and barriers included, so results are bit-identical). A
backend with resident buffers (CUDA) keeps everything on the device: inputs uploaded once,
temporaries and outputs allocated there, the steps run as one dispatch sequence — captured as a
graph and replayed when the routine is called again with the same lengths.
"""

from __future__ import annotations

import re
import threading
from typing import Any, Sequence

import numpy as np

from ..backends import DispatchConfig
from ..ir.diagnostics import VyreError
from ..ir.nodes import Program
from ..ir.parser import parse_program
from ..ir.types import DataType
from ..ir.validation import check
from ..registry import Registry
from .model import RoutineDef

__all__ = ["CompiledRoutine", "bind_types"]

_BY_STORAGE = {}
for _t in (DataType.U32, DataType.I32, DataType.U64, DataType.I64, DataType.F32, DataType.F64):
    _BY_STORAGE[np.dtype(_t.numpy_dtype)] = _t


def bind_types(routine: RoutineDef, arrays: Sequence[np.ndarray]) -> dict[str, DataType]:
    """The binding of the routine's type variable, read from the inputs' dtypes."""
    binding: dict[str, DataType] = {}
    for spec, arr in zip(routine.inputs, arrays):
        if spec.dtype in routine.types:
            got = _BY_STORAGE.get(arr.dtype)
            allowed = routine.types[spec.dtype]
            if got is None or got not in allowed:
                raise VyreError.one("U012", f"input {spec.name!r} has dtype {arr.dtype}, which {routine.id} does not take",
                                    f"routine {routine.id}", f"pass one of {', '.join(t.value for t in allowed)} "
                                    f"(convert with arr.astype(np.{np.dtype(allowed[0].numpy_dtype).name}))")
            if binding.get(spec.dtype, got) is not got:
                raise VyreError.one("U012", f"inputs disagree on {spec.dtype}: {binding[spec.dtype].value} and {got.value}",
                                    f"routine {routine.id}", "pass inputs of one element type")
            binding[spec.dtype] = got
    return binding


class CompiledRoutine:
    """A routine for one binding of its type variables: one validated program per step."""

    def __init__(self, routine: RoutineDef, binding: dict[str, DataType], registry: Registry) -> None:
        self.routine, self.binding = routine, binding
        cache: dict[str, Program] = {}
        self.programs: list[Program] = []
        for step in routine.steps:
            if step.kernel not in cache:
                cache[step.kernel] = self._kernel_program(step.kernel, registry)
            self.programs.append(cache[step.kernel])
        for step, program in zip(routine.steps, self.programs):
            arity = len([b for b in program.buffers if b.access.value != "workgroup"])
            if len(step.args) != arity:
                raise VyreError.one("U013", f"step {step.kernel} binds {len(step.args)} buffer(s), the kernel has {arity}",
                                    f"{routine.file} [routine {routine.id}]", "bind every non-workgroup buffer of the kernel, in order")
        self.dtypes = {b.name: (binding[b.dtype] if b.dtype in binding else DataType(b.dtype)) for b in routine.buffers}
        self._lock = threading.Lock()
        self._graphs: dict[Any, Any] = {}

    def _kernel_program(self, name: str, registry: Registry) -> Program:
        kernel = self.routine.kernels[name]
        source = re.sub(r"\$([a-z_][a-z0-9_]*)", lambda m: self.routine.params[m.group(1)], kernel.source)
        where = f"{self.routine.file} [kernel.{name}] for {self.routine.id}" + "".join(
            f" {k}={v.value}" for k, v in self.binding.items())
        try:
            program = parse_program(source, where, type_vars=self.binding)
            check(program, registry)
        except VyreError as exc:
            raise VyreError([d for d in exc.diagnostics], f"routine {self.routine.id}: kernel {name} is invalid") from None
        return program

    def sizes(self, lengths: dict[str, int]) -> dict[str, int]:
        out = dict(lengths)
        for spec in self.routine.buffers:
            if spec.size is not None:
                out[spec.name] = spec.size.evaluate(out, self.routine.attrs)
        return out

    def run_host(self, backend: Any, arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Every step through ``backend.dispatch`` with host arrays; returns the outputs."""
        env: dict[str, np.ndarray] = {s.name: a for s, a in zip(self.routine.inputs, arrays)}
        sizes = self.sizes({k: int(v.size) for k, v in env.items()})
        for spec in self.routine.buffers:
            if spec.role != "in":
                env[spec.name] = np.zeros(sizes[spec.name], self.dtypes[spec.name].storage_dtype)
        for step, program in zip(self.routine.steps, self.programs):
            grid = step.grid.evaluate(sizes, self.routine.attrs)
            if grid == 0:
                continue
            bound = dict(zip([b.name for b in program.buffers if b.access.value != "workgroup"], step.args))
            inputs = {b.name: env[bound[b.name]] for b in program.inputs}
            results = backend.dispatch(program, inputs, DispatchConfig(grid=(grid, 1, 1)))
            for decl, value in zip(program.outputs, results):
                env[bound[decl.name]] = value
        return [env[s.name] for s in self.routine.outputs]

    def run_resident(self, backend: Any, inputs: Sequence[Any]) -> list[Any]:
        """Every step over resident buffers of ``backend`` (one with allocate/compile/sequence, as
        CUDA has): ``inputs`` are device buffers; temporaries and outputs are allocated zero-filled,
        the steps are enqueued back to back, the temporaries freed, and the output buffers returned
        (nothing leaves the device)."""
        lengths = {s.name: int(b.count) for s, b in zip(self.routine.inputs, inputs)}
        sizes = self.sizes(lengths)
        env: dict[str, Any] = {s.name: b for s, b in zip(self.routine.inputs, inputs)}
        made = []
        for spec in self.routine.buffers:
            if spec.role != "in":
                env[spec.name] = backend.allocate(self.dtypes[spec.name], sizes[spec.name])
                made.append(spec)
        steps = []
        for step, program in zip(self.routine.steps, self.programs):
            grid = step.grid.evaluate(sizes, self.routine.attrs)
            if grid:
                steps.append((backend.compile(program), [env[a] for a in step.args], (grid, 1, 1)))
        try:
            backend.sequence(steps).run()
        finally:
            for spec in made:
                if spec.role == "temp":
                    backend.free(env[spec.name])
        return [env[s.name] for s in self.routine.outputs]
