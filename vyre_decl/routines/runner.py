"""Running a routine: its kernels compiled per binding, temporaries sized, steps launched in order.

On any backend the steps go through ``dispatch`` with host arrays (the reference backend runs
them exactly like a GPU, workgroups and barriers included, so results are bit-identical). A
backend with resident buffers (CUDA) keeps everything on the device: inputs uploaded once,
temporaries and outputs allocated there, the steps run as one dispatch sequence — captured as a
graph and replayed when the routine is called again with the same lengths.
"""

from __future__ import annotations

from typing import Any, Iterator, Mapping, Sequence

import numpy as np

from ..backends import DispatchConfig
from ..ir.diagnostics import VyreError
from ..ir.nodes import Program
from ..ir.parser import parse_program
from ..ir.types import DataType
from ..registry import Registry
from .kernels import kernel_program
from .limits import check_bytes, evaluate, launches
from .model import BufferSpec, RoutineDef, StepDef

__all__ = ["CompiledRoutine", "bind_types", "zero_program"]

def bind_types(routine: RoutineDef, dtypes: Sequence[np.dtype]) -> dict[str, DataType]:
    """The binding of the routine's type variables, read from the inputs' numpy dtypes (a type
    variable no input has takes the first type of its set)."""
    binding: dict[str, DataType] = {}
    where = f"routine {routine.id}"
    for spec, dtype in zip(routine.inputs, dtypes):
        allowed = routine.types.get(spec.dtype) or (DataType(spec.dtype),)
        got = next((t for t in allowed if np.dtype(t.storage_dtype) == dtype), None)
        if got is None:
            raise VyreError.one("U012", f"input {spec.name!r} has dtype {dtype}, which {routine.id} does not take",
                                where, f"pass one of {', '.join(t.value for t in allowed)}{_exact_conversion(dtype, allowed)}")
        if spec.dtype in routine.types:
            if binding.get(spec.dtype, got) is not got:
                raise VyreError.one("U012", f"inputs disagree on {spec.dtype}: {binding[spec.dtype].value} and {got.value}",
                                    where, "pass inputs of one element type")
            binding[spec.dtype] = got
    for var, types in routine.types.items():
        binding.setdefault(var, types[0])
    return binding


def _exact_conversion(dtype: np.dtype, allowed: Sequence[DataType]) -> str:
    """How to convert ``dtype`` to an allowed type without changing a value (the narrowest type
    that holds every value exactly), or a warning that none does: a Fix never suggests a lossy
    conversion."""
    exact = [np.dtype(t.storage_dtype) for t in allowed if np.can_cast(dtype, np.dtype(t.storage_dtype), "safe")]
    if exact:
        return f" (exact: arr.astype(np.{min(exact, key=lambda d: d.itemsize).name}))"
    return f"; none of them holds every {dtype} value exactly, so choose the conversion deliberately"


MAX_COUNT = 2**32 - 1


class CompiledRoutine:
    """A routine for one binding of its type variables: one validated program per kernel, and for
    each declared step the binding of the kernel's buffers to the routine's."""

    def __init__(self, routine: RoutineDef, binding: dict[str, DataType], registry: Registry) -> None:
        self.routine, self.binding = routine, binding
        self.programs: dict[StepDef, Program] = {}
        # per step: the kernel's non-workgroup buffers (in declaration order) -> routine buffers
        self.bound: dict[StepDef, dict[str, str]] = {}
        self.workgroup: dict[StepDef, int] = {}
        self._bits = {f"bits({v})": t.bits for v, t in binding.items()}
        self._bits.update({f"is_float({v})": int(t.is_float) for v, t in binding.items()})
        for step in routine.all_steps():
            if step.grid.zero_by_types(self._bits):
                continue  # never launched for this binding: its kernel need not exist for these types
            program = self.programs[step] = self._kernel_program(step, registry)
            names = [b.name for b in program.buffers if not b.access.is_scratch]
            if len(step.args) != len(names):
                raise VyreError.one("U013", f"step {step.kernel} binds {len(step.args)} buffer(s), the kernel has "
                                    f"{len(names)} ({', '.join(names)})", f"{routine.file} [routine {routine.id}] "
                                    f"{step.where}.args", "bind every non-workgroup buffer of the kernel, in order")
            self.bound[step] = dict(zip(names, step.args))
            wg = program.workgroup_size
            self.workgroup[step] = wg[0] * wg[1] * wg[2]
        self.dtypes = {b.name: (binding[b.dtype] if b.dtype in binding else DataType(b.dtype)) for b in routine.buffers}

    def _kernel_program(self, step: StepDef, registry: Registry) -> Program:
        binding = self.binding
        types = {**binding, **{k: binding[v] if v in binding else DataType(v) for k, v in step.types}}
        params = {**self.routine.params, **dict(step.params)}
        owner = f"{self.routine.file} [routine {self.routine.id}] {step.where}".rstrip()
        return kernel_program(self.routine.kernels[step.kernel], types, params, registry, owner)

    def scope(self, lengths: Mapping[str, int], attrs: Mapping[str, int]) -> tuple[dict[str, int], dict[str, int]]:
        """Every buffer's element count and the attribute values (``bits(V)`` included) for inputs
        of these lengths; raises U017 when a requirement fails or a size is out of range, U023
        when a size divides by zero and U024 when the call's buffers need too many bytes."""
        env = {**attrs, **self._bits}
        sizes = dict(lengths)
        r = self.routine
        where = f"routine {r.id}"
        shown = ", ".join(f"len({k})={v}" for k, v in lengths.items()) + "".join(f", {k}={v}" for k, v in attrs.items())
        for i, cond in enumerate(r.requires):
            if not evaluate(r, cond, sizes, env, f"require[{i}]"):
                raise VyreError.one("U017", f"{r.id} requires {cond.text} ({shown})", where,
                                    "pass inputs and attributes that satisfy it")
        for spec in r.buffers:
            if spec.size is not None:
                count = sizes[spec.name] = evaluate(r, spec.size, sizes, env, f"buffers.{spec.name}")
                if not 0 <= count <= MAX_COUNT:
                    raise VyreError.one("U017", f"buffer {spec.name} would hold {count} elements ({shown})", where,
                                        f"keep every buffer within 0 .. {MAX_COUNT} elements")
        check_bytes(r, sizes, {name: t.size for name, t in self.dtypes.items()})
        launches(r, self.workgroup, sizes, env)  # every count and grid bounded before anything is allocated
        return sizes, env

    def steps(self, sizes: Mapping[str, int], env: Mapping[str, int]) -> Iterator[tuple[StepDef, Program, int]]:
        """Each launch in order: the step, its kernel and its number of workgroups (0: skipped).
        Every repeat count and grid is evaluated and bounded (U023, U024) before the first."""
        for step, grid in launches(self.routine, self.workgroup, sizes, env):
            if step in self.programs:
                yield step, self.programs[step], grid

    def const_values(self, spec: BufferSpec, sizes: Mapping[str, int], env: Mapping[str, int]) -> np.ndarray:
        t = self.dtypes[spec.name]
        values = [evaluate(self.routine, v, sizes, env, f"buffers.{spec.name}") for v in spec.values]
        if not all(0 <= v <= t.max for v in values):
            raise VyreError.one("U017", f"constant {spec.name} = {values} does not fit {t.value}", f"routine {self.routine.id}",
                                "pass smaller inputs or attributes")
        return np.array(values, dtype=t.storage_dtype)

    def run_host(self, backend: Any, arrays: Sequence[np.ndarray], attrs: Mapping[str, int],
                 fill: int | None = None) -> list[np.ndarray]:
        """Every step through ``backend.dispatch`` with host arrays; returns the outputs. With
        ``fill`` the ``written`` buffers start as that byte repeated instead of zeros (a check
        that the routine really writes them before reading)."""
        env: dict[str, np.ndarray] = {s.name: a for s, a in zip(self.routine.inputs, arrays)}
        sizes, scope = self.scope({k: int(v.size) for k, v in env.items()}, attrs)
        for spec in self.routine.buffers:
            if spec.role == "const":
                env[spec.name] = self.const_values(spec, sizes, scope)
            elif spec.role != "in":
                env[spec.name] = np.zeros(sizes[spec.name], self.dtypes[spec.name].storage_dtype)
                if fill is not None and spec.name in self.routine.written:
                    env[spec.name].view(np.uint8)[:] = fill
        for step, program, grid in self.steps(sizes, scope):
            if grid == 0:
                continue
            bound = self.bound[step]
            inputs = {b.name: env[bound[b.name]] for b in program.inputs}
            results = backend.dispatch(program, inputs, DispatchConfig(grid=(grid, 1, 1)))
            for decl, value in zip(program.outputs, results):
                env[bound[decl.name]] = value
        return [env[s.name] for s in self.routine.outputs]

    def resident_steps(self, backend: Any, inputs: Sequence[Any], attrs: Mapping[str, int],
                       zero_fill: bool = False) -> tuple[Any, dict[str, Any]]:
        """The steps over resident buffers of ``backend`` (one with allocate/compile/sequence, as
        CUDA has) for the device buffers ``inputs``: temporaries, outputs and constants are
        allocated (zero-filled). Returns the dispatch sequence (``run()`` enqueues the steps back
        to back) and every routine buffer by name; the caller frees what it allocated. With
        ``zero_fill`` the sequence starts by zeroing the outputs and temporaries that are not
        ``written``, so it can be captured and replayed."""
        env: dict[str, Any] = {s.name: b for s, b in zip(self.routine.inputs, inputs)}
        sizes, scope = self.scope({name: int(b.count) for name, b in env.items()}, attrs)
        launches = []
        for spec in self.routine.buffers:
            if spec.role == "const":
                env[spec.name] = backend.upload(self.const_values(spec, sizes, scope))
            elif spec.role != "in":
                env[spec.name] = buf = backend.allocate(self.dtypes[spec.name], sizes[spec.name])
                if zero_fill and buf.count and spec.name not in self.routine.written:
                    launches.append((backend.compile(zero_program(buf.dtype)), [buf], (-(-buf.count // ZERO_WORKGROUP), 1, 1)))
        for step, program, grid in self.steps(sizes, scope):
            if grid:
                launches.append((backend.compile(program), [env[a] for a in step.args], (grid, 1, 1)))
        return backend.sequence(launches), env

    def run_resident(self, backend: Any, inputs: Sequence[Any], attrs: Mapping[str, int]) -> list[Any]:
        """Every step over resident buffers; the temporaries and constants are freed and the output
        buffers returned (nothing leaves the device)."""
        sequence, env = self.resident_steps(backend, inputs, attrs)
        try:
            sequence.run()
        finally:
            for spec in self.routine.buffers:
                if spec.role in ("temp", "const"):
                    backend.free(env[spec.name])
        return [env[s.name] for s in self.routine.outputs]


ZERO_WORKGROUP = 256
_ZERO = """program zero_fill workgroup(256, 1, 1) {
  buffer b: read_write T[] @0
  if gid.x < len(b) { b[gid.x] = V.zero }
}"""
_zero_programs: dict[DataType, Program] = {}


def zero_program(dtype: DataType) -> Program:
    """A kernel that zeroes a buffer of ``dtype`` (one element per invocation)."""
    found = _zero_programs.get(dtype)
    if found is None:
        found = _zero_programs[dtype] = parse_program(_ZERO, "zero_fill", type_vars={"T": dtype, "V": dtype.value_type})
    return found
