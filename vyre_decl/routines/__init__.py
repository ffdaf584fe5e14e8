"""Routines: whole-buffer algorithms (reductions, scans, sorts, ...) declared as data.

A routine file (``routines/*.routines.toml``, or beside op files on ``VYRE_DECL_OPS_PATH``)
declares kernels in the text form and routines that run them in order over inputs, outputs and
temporaries sized by expressions (``docs/routines.md``). ``routine("reduce.sum")(x)`` runs one
on a backend; ``vyre_decl.lib`` wraps the standard ones in numpy-style functions.
"""

from __future__ import annotations

import os
import threading
from typing import Any, Sequence

import numpy as np

from ..backends import acquire
from ..ir.diagnostics import Diagnostic, VyreError
from ..registry import default_registry
from ..registry.loader import ENV_VAR
from .loader import load_routine_files, standard_routines_dir
from .model import BufferSpec, KernelDef, RoutineDef, StepDef
from .runner import CompiledRoutine, bind_types

__all__ = ["Routine", "routine", "routines", "routine_diagnostics", "RoutineDef", "KernelDef", "BufferSpec", "StepDef",
           "standard_routines_dir"]

_lock = threading.Lock()
_loaded: dict[str, tuple[dict[str, RoutineDef], list[Diagnostic]]] = {}


def _load() -> tuple[dict[str, RoutineDef], list[Diagnostic]]:
    key = os.environ.get(ENV_VAR, "")
    with _lock:
        if key not in _loaded:
            _loaded[key] = load_routine_files()
        return _loaded[key]


def routines() -> dict[str, RoutineDef]:
    """Every loaded routine by id (standard ones and those on VYRE_DECL_OPS_PATH)."""
    return dict(_load()[0])


def routine_diagnostics() -> list[Diagnostic]:
    """Problems of rejected routine files."""
    return list(_load()[1])


class Routine:
    """A routine ready to call: ``Routine(x, backend="cuda")`` returns its outputs (one array, or a
    tuple for several). Inputs are numpy arrays (or lists) of a dtype the routine takes."""

    def __init__(self, definition: RoutineDef) -> None:
        self.definition = definition
        self._compiled: dict[tuple[Any, ...], CompiledRoutine] = {}
        self._lock = threading.Lock()

    @property
    def id(self) -> str:
        return self.definition.id

    def compiled(self, dtypes: Sequence[np.dtype], registry: Any = None) -> CompiledRoutine:
        """The routine compiled for inputs of these numpy dtypes (cached per binding and registry)."""
        binding = bind_types(self.definition, dtypes)
        reg = registry or default_registry()
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

    def __call__(self, *inputs: Any, backend: Any = "auto") -> Any:
        d = self.definition
        self._check_arity(len(inputs), "array")
        arrays = []
        for spec, value in zip(d.inputs, inputs):
            arr = np.asarray(value)
            if arr.dtype == object or arr.dtype.kind not in "uif":
                raise VyreError.one("U012", f"input {spec.name!r} is not a numeric array ({arr.dtype})", f"routine {d.id}",
                                    "pass a numpy array of a type the routine takes")
            arrays.append(np.ascontiguousarray(arr).ravel())
        be = _backend(backend)
        compiled = self.compiled([a.dtype for a in arrays], getattr(be, "registry", None))
        if "resident_buffers" not in getattr(be, "capabilities", ()):
            outputs = compiled.run_host(be, arrays)
        else:  # one upload per input, one download per output, the steps on the device
            ins = [be.upload(a) for a in arrays]
            try:
                outs = compiled.run_resident(be, ins)
                outputs = [be.download(b) for b in outs]
                for b in outs:
                    be.free(b)
            finally:
                for b in ins:
                    be.free(b)
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def resident(self, *buffers: Any, backend: Any) -> Any:
        """The routine over device buffers of a backend with resident buffers (CUDA); returns the
        output buffers (the caller frees them). Nothing is copied to or from the host."""
        self._check_arity(len(buffers), "device buffer")
        be = _backend(backend)
        dtypes = [np.dtype(b.dtype.storage_dtype) for b in buffers]
        outs = self.compiled(dtypes, getattr(be, "registry", None)).run_resident(be, list(buffers))
        return outs[0] if len(outs) == 1 else tuple(outs)

    def __repr__(self) -> str:
        return f"Routine({self.definition.id!r})"


def _backend(backend: Any) -> Any:
    """A backend instance from a name (``acquire``) or as given."""
    return acquire(backend) if isinstance(backend, str) else backend


_handles: dict[str, Routine] = {}


def routine(routine_id: str) -> Routine:
    """The routine called ``routine_id``; raises VyreError (U015) naming the known ones otherwise."""
    found, diags = _load()
    d = found.get(routine_id)
    if d is None:
        rejected = f" ({len(diags)} problem(s) in routine files: vyre_decl.routines.routine_diagnostics())" if diags else ""
        raise VyreError.one("U015", f"no routine {routine_id!r}{rejected}", "vyre_decl.routines.routine",
                            f"use one of: {', '.join(sorted(found)) or 'none loaded'}")
    with _lock:
        handle = _handles.get(routine_id)
        if handle is None or handle.definition is not d:
            handle = _handles[routine_id] = Routine(d)
        return handle
