"""Routines: whole-buffer algorithms (reductions, scans, sorts, ...) declared as data.

A routine file (``routines/*.routines.toml``, or beside op files on ``VYRE_DECL_OPS_PATH``)
declares kernels in the text form and routines that run them in order over inputs, outputs and
temporaries sized by expressions (``docs/routines.md``). ``routine("reduce.sum")(x)`` runs one
on a backend; ``vyre_decl.lib`` wraps the standard ones in numpy-style functions.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any, Mapping, Sequence

import numpy as np

from ..backends import acquire
from ..ir.diagnostics import Diagnostic, VyreError
from ..registry import Registry, default_registry
from .loader import load_routines, standard_routines_dir
from .model import BufferSpec, KatCase, KernelDef, RepeatDef, RoutineDef, StepDef
from .plan import PlanCache, RoutinePlan
from .runner import MAX_COUNT, CompiledRoutine, bind_types

__all__ = ["Routine", "RoutinePlan", "routine", "routines", "routine_diagnostics", "RoutineDef", "KernelDef", "BufferSpec",
           "StepDef", "RepeatDef", "KatCase", "standard_routines_dir"]

_lock = threading.Lock()
# routines loaded per registry (the default one, or one from load_registry), with their handles
_loaded: weakref.WeakKeyDictionary[Registry, tuple[dict[str, RoutineDef], list[Diagnostic], dict[str, Routine]]] = \
    weakref.WeakKeyDictionary()


def _load(registry: Registry | None = None) -> tuple[dict[str, RoutineDef], list[Diagnostic], dict[str, Routine]]:
    reg = registry if registry is not None else default_registry()
    with _lock:
        found = _loaded.get(reg)
        if found is None:
            defs, diags = load_routines(reg)
            found = _loaded[reg] = (defs, diags, {})
        return found


def routines(registry: Registry | None = None) -> dict[str, RoutineDef]:
    """Every loaded routine by id: the standard ones and those on VYRE_DECL_OPS_PATH, or with a
    ``registry`` (``load_registry([dirs])``) the routine files of its sources."""
    return dict(_load(registry)[0])


def routine_diagnostics(registry: Registry | None = None) -> list[Diagnostic]:
    """Problems of rejected routine files."""
    return list(_load(registry)[1])


class Routine:
    """A routine ready to call: ``Routine(x, backend="cuda", **attrs)`` returns its outputs (one
    array, or a tuple for several). Inputs are numpy arrays (or lists) of a dtype the routine
    takes; attributes (``bins=16``) are integers. On a backend with graphs (CUDA) the first call of
    a shape prepares a plan and later calls of that shape replay its captured graph."""

    def __init__(self, definition: RoutineDef, registry: Registry | None = None) -> None:
        self.definition = definition
        self.registry = registry  # None: the default registry
        self._compiled: dict[tuple[Any, ...], CompiledRoutine] = {}
        self._plans = PlanCache()
        self._lock = threading.Lock()

    @property
    def id(self) -> str:
        return self.definition.id

    def compiled(self, dtypes: Sequence[np.dtype], registry: Any = None) -> CompiledRoutine:
        """The routine compiled for inputs of these numpy dtypes (cached per binding and registry)."""
        binding = bind_types(self.definition, dtypes)
        reg = registry or self.registry or default_registry()
        key = (tuple(sorted(binding.items())), reg.fingerprint)
        with self._lock:
            found = self._compiled.get(key)
            if found is None:
                found = self._compiled[key] = CompiledRoutine(self.definition, binding, reg)
            return found

    def _check_arity(self, given: int, what: str) -> None:
        d = self.definition
        if given != len(d.inputs):
            raise VyreError.one("U014", f"{d.id} takes {len(d.inputs)} input(s) ({', '.join(b.name for b in d.inputs)}), "
                                f"got {given}", f"routine {d.id}", f"pass one {what} per input")

    def _attrs(self, given: Mapping[str, Any]) -> dict[str, int]:
        d = self.definition
        where = f"routine {d.id}"
        unknown = sorted(set(given) - set(d.attrs))
        if unknown:
            raise VyreError.one("U016", f"{d.id} has no attribute {unknown[0]!r}", where,
                                f"use {', '.join(d.attrs) or 'no attributes'} (and backend=...)")
        missing = [a for a in d.attrs if a not in given]
        if missing:
            raise VyreError.one("U016", f"{d.id} needs the attribute {missing[0]}", where, f"pass {missing[0]}=<integer>")
        out = {}
        for name, value in given.items():
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or not 0 <= int(value) <= MAX_COUNT:
                raise VyreError.one("U016", f"attribute {name}={value!r} is not an integer in 0 .. {MAX_COUNT}", where,
                                    f"pass {name} as a non-negative int")
            out[name] = int(value)
        return out

    def _arrays(self, inputs: Sequence[Any]) -> list[np.ndarray]:
        d = self.definition
        self._check_arity(len(inputs), "array")
        arrays = []
        for spec, value in zip(d.inputs, inputs):
            arr = np.asarray(value)
            if arr.dtype == object or arr.dtype.kind not in "uif":
                raise VyreError.one("U012", f"input {spec.name!r} is not a numeric array ({arr.dtype})", f"routine {d.id}",
                                    "pass a numpy array of a type the routine takes")
            if arr.size > MAX_COUNT:
                raise VyreError.one("U012", f"input {spec.name!r} has {arr.size} elements", f"routine {d.id}",
                                    f"pass at most {MAX_COUNT} elements")
            arrays.append(np.ascontiguousarray(arr).ravel())
        return arrays

    def __call__(self, *inputs: Any, backend: Any = "auto", **attrs: Any) -> Any:
        arrays = self._arrays(inputs)
        values = self._attrs(attrs)
        be = _backend(backend, self.registry)
        compiled = self.compiled([a.dtype for a in arrays], getattr(be, "registry", None))
        if "graphs" in getattr(be, "capabilities", ()):
            # one plan per call shape: upload, one graph replay, download
            plan = self._plan(compiled, be, [a.size for a in arrays], values)
            outputs = plan.run(arrays)
        else:  # run_host checks requirements and sizes (U017) before the first step
            outputs = compiled.run_host(be, arrays, values)
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def _plan(self, compiled: CompiledRoutine, backend: Any, lengths: Sequence[int], attrs: Mapping[str, int]) -> RoutinePlan:
        key = (id(backend), tuple(sorted(compiled.binding.items())), tuple(lengths), tuple(sorted(attrs.items())))
        return self._plans.get(key, lambda: RoutinePlan(compiled, backend, lengths, attrs), backend)

    def plan(self, *inputs: Any, backend: Any, **attrs: Any) -> RoutinePlan:
        """The routine prepared on ``backend`` (one with resident buffers and graphs) for inputs of
        the lengths and dtypes of ``inputs`` (arrays; their contents are not used): fill
        ``plan.inputs`` (``backend.upload_at``), call ``plan.replay()``, read ``plan.outputs``.
        The caller closes it (``plan.close()``)."""
        arrays = self._arrays(inputs)
        be = _backend(backend, self.registry)
        compiled = self.compiled([a.dtype for a in arrays], getattr(be, "registry", None))
        return RoutinePlan(compiled, be, [a.size for a in arrays], self._attrs(attrs))

    def resident(self, *buffers: Any, backend: Any, **attrs: Any) -> Any:
        """The routine over device buffers of a backend with resident buffers (CUDA); returns the
        output buffers (the caller frees them). Nothing is copied to or from the host."""
        self._check_arity(len(buffers), "device buffer")
        values = self._attrs(attrs)
        be = _backend(backend, self.registry)
        dtypes = [np.dtype(b.dtype.storage_dtype) for b in buffers]
        outs = self.compiled(dtypes, getattr(be, "registry", None)).run_resident(be, list(buffers), values)
        return outs[0] if len(outs) == 1 else tuple(outs)

    def __repr__(self) -> str:
        return f"Routine({self.definition.id!r})"


def _backend(backend: Any, registry: Registry | None = None) -> Any:
    """A backend instance from a name (``acquire``, with the routine's registry) or as given."""
    return acquire(backend, registry=registry) if isinstance(backend, str) else backend


def routine(routine_id: str, registry: Registry | None = None) -> Routine:
    """The routine called ``routine_id`` (of ``registry``'s routine files, default the standard
    ones and VYRE_DECL_OPS_PATH); raises VyreError (U015) naming the known ones otherwise."""
    if not isinstance(routine_id, str):
        raise VyreError.one("U015", f"a routine id is a string, not {type(routine_id).__name__} {routine_id!r:.60}",
                            "vyre_decl.routines.routine", "pass the id as a string, e.g. routine(\"reduce.sum\")")
    found, diags, handles = _load(registry)
    d = found.get(routine_id)
    if d is None:
        rejected = f" ({len(diags)} problem(s) in routine files: vyre_decl.routines.routine_diagnostics())" if diags else ""
        raise VyreError.one("U015", f"no routine {routine_id!r}{rejected}", "vyre_decl.routines.routine",
                            f"use one of: {', '.join(sorted(found)) or 'none loaded'}")
    with _lock:
        handle = handles.get(routine_id)
        if handle is None:
            handle = handles[routine_id] = Routine(d, registry)
        return handle
