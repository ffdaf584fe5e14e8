"""Running a routine: its kernels compiled per binding, temporaries sized, steps launched in order.

On any backend the steps go through ``dispatch`` with host arrays (the reference backend runs
them exactly like a GPU, workgroups and barriers included, so results are bit-identical). A
backend with resident buffers (CUDA) keeps everything on the device: inputs uploaded once,
temporaries and outputs allocated there, the steps run as one dispatch sequence — captured as a
graph and replayed when the routine is called again with the same lengths.
"""

from __future__ import annotations

import re
from typing import Any, Sequence

import numpy as np

from ..backends import DispatchConfig
from ..ir.diagnostics import VyreError
from ..ir.nodes import Access, Program
from ..ir.parser import parse_program
from ..ir.types import DataType
from ..ir.validation import check
from ..registry import Registry
from .model import RoutineDef

__all__ = ["CompiledRoutine", "bind_types"]

def bind_types(routine: RoutineDef, dtypes: Sequence[np.dtype]) -> dict[str, DataType]:
    """The binding of the routine's type variable, read from the inputs' numpy dtypes."""
    binding: dict[str, DataType] = {}
    for spec, dtype in zip(routine.inputs, dtypes):
        if spec.dtype in routine.types:
            allowed = routine.types[spec.dtype]
            got = next((t for t in allowed if np.dtype(t.numpy_dtype) == dtype), None)
            if got is None:
                raise VyreError.one("U012", f"input {spec.name!r} has dtype {dtype}, which {routine.id} does not take",
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
        # per step: the kernel's non-workgroup buffers (in declaration order) -> routine buffers
        self.bound: list[dict[str, str]] = []
        for step, program in zip(routine.steps, self.programs):
            names = [b.name for b in program.buffers if b.access is not Access.WORKGROUP]
            if len(step.args) != len(names):
                raise VyreError.one("U013", f"step {step.kernel} binds {len(step.args)} buffer(s), the kernel has {len(names)}",
                                    f"{routine.file} [routine {routine.id}]", "bind every non-workgroup buffer of the kernel, in order")
            self.bound.append(dict(zip(names, step.args)))
        self.dtypes = {b.name: (binding[b.dtype] if b.dtype in binding else DataType(b.dtype)) for b in routine.buffers}

    def _kernel_program(self, name: str, registry: Registry) -> Program:
        kernel = self.routine.kernels[name]
        source = re.sub(r"\$([a-z_][a-z0-9_]*)", lambda m: self.routine.params[m.group(1)], kernel.source)
        where = f"{self.routine.file} [kernel.{name}] for {self.routine.id}" + "".join(
            f" {k}={v.value}" for k, v in self.binding.items())
        try:
            program = parse_program(source, where, type_vars=self.binding)
            check(program, registry)
        except VyreError as exc:
            raise VyreError(list(exc.diagnostics), f"routine {self.routine.id}: kernel {name} is invalid") from None
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
        for step, program, bound in zip(self.routine.steps, self.programs, self.bound):
            grid = step.grid.evaluate(sizes, self.routine.attrs)
            if grid == 0:
                continue
            inputs = {b.name: env[bound[b.name]] for b in program.inputs}
            results = backend.dispatch(program, inputs, DispatchConfig(grid=(grid, 1, 1)))
            for decl, value in zip(program.outputs, results):
                env[bound[decl.name]] = value
        return [env[s.name] for s in self.routine.outputs]

    def resident_steps(self, backend: Any, inputs: Sequence[Any]) -> tuple[Any, dict[str, Any]]:
        """The steps over resident buffers of ``backend`` (one with allocate/compile/sequence, as
        CUDA has) for the device buffers ``inputs``: temporaries and outputs are allocated
        zero-filled. Returns the dispatch sequence (``run()`` enqueues the steps back to back) and
        every routine buffer by name; the caller frees what it allocated."""
        env: dict[str, Any] = {s.name: b for s, b in zip(self.routine.inputs, inputs)}
        sizes = self.sizes({name: int(b.count) for name, b in env.items()})
        for spec in self.routine.buffers:
            if spec.role != "in":
                env[spec.name] = backend.allocate(self.dtypes[spec.name], sizes[spec.name])
        steps = []
        for step, program in zip(self.routine.steps, self.programs):
            grid = step.grid.evaluate(sizes, self.routine.attrs)
            if grid:
                steps.append((backend.compile(program), [env[a] for a in step.args], (grid, 1, 1)))
        return backend.sequence(steps), env

    def run_resident(self, backend: Any, inputs: Sequence[Any]) -> list[Any]:
        """Every step over resident buffers; the temporaries are freed and the output buffers
        returned (nothing leaves the device)."""
        sequence, env = self.resident_steps(backend, inputs)
        try:
            sequence.run()
        finally:
            for spec in self.routine.buffers:
                if spec.role == "temp":
                    backend.free(env[spec.name])
        return [env[s.name] for s in self.routine.outputs]
