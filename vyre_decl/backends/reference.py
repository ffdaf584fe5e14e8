"""The ``reference`` backend: validated programs run on the CPU reference interpreter."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections import OrderedDict
from typing import Any, Mapping, Sequence

import numpy as np

from ..ir.diagnostics import VyreError
from ..ir.nodes import Program
from ..ir.validation import check
from ..reference.program import CompiledProgram, compile_program
from ..registry import Registry, default_registry
from ..settings import env_seconds
from .config import DEFAULT_CONFIG, TIMEOUT_ENV, DispatchConfig, Timing
from .hostio import (CallPlan, check_capabilities, check_config, check_out, check_timeout, check_ulp_budget, check_workgroup, deliver, host_output, labelled,
                     prepare, xyz)

__all__ = ["ReferenceBackend", "ReferencePipeline"]

_CACHE_SIZE = 256


class ReferencePipeline:
    """A validated, compiled program; ``dispatch`` runs it on new inputs."""

    def __init__(self, compiled: CompiledProgram, config: DispatchConfig, timeout: float | None = None) -> None:
        self.compiled, self.timeout = compiled, timeout  # the backend's default bound
        self.program = compiled.program
        self.config = config
        self.plan = CallPlan(self.program)  # the calling convention, shared with the CUDA backend

    def dispatch(self, inputs: Sequence[Any] | Mapping[str, Any], config: DispatchConfig | None = None,
                 out: Sequence[np.ndarray] | None = None) -> list[np.ndarray]:
        """Run once; returns the outputs (written into ``out`` when given, see hostio.check_out)."""
        cfg = config or self.config
        try:
            if cfg is not self.config:  # the pipeline's own config was checked at compile
                check_config(cfg)
            check_workgroup(self.program, cfg)
            launch = prepare(self.program, inputs, cfg, self.plan)
            into = check_out(self.program, launch.counts, out) if out is not None else None
            timeout = self.timeout if cfg.timeout is None else cfg.timeout
            self.compiled.run(launch.memory, launch.counts, launch.grid, cfg.repeat, timeout)
        except VyreError as exc:
            raise labelled(exc, cfg) from None
        if into is None:
            return [host_output(d, launch.memory[d.name]) for d in self.program.outputs]
        return [deliver(d, launch.memory[d.name], a) for d, a in zip(self.program.outputs, into)]


class ReferenceBackend:
    """CPU reference backend; always available."""

    name = "reference"
    capabilities = frozenset({"f64", "i64", "atomics", "workgroup_memory", "workgroup_atomics", "exact_f32"})

    def __init__(self, registry: Registry | None = None, timeout: float | None = None) -> None:
        """``timeout``: the default bound, in seconds, of a dispatch that names none (default:
        VYRE_DECL_TIMEOUT, else none); past it D013."""
        check_timeout(timeout, "ReferenceBackend(timeout=...)")
        self.timeout = env_seconds(TIMEOUT_ENV) if timeout is None else timeout
        self._registry = registry
        self._cache: OrderedDict[tuple[str, str], CompiledProgram] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def registry(self) -> Registry:
        return self._registry or default_registry()

    def compile(self, program: Program, config: DispatchConfig | None = None) -> ReferencePipeline:
        """Validate and compile ``program`` (raises VyreError listing every problem)."""
        cfg = config or DEFAULT_CONFIG
        check_config(cfg)
        if cfg.workgroup is not None and tuple(cfg.workgroup) != program.workgroup_size:
            program = dataclasses.replace(program, workgroup_size=xyz(cfg.workgroup))
        registry = self.registry
        check_ulp_budget(program, registry, cfg)
        key = (program.content_hash(), registry.fingerprint)
        with self._lock:
            compiled = self._cache.get(key)
            if compiled is not None:
                self._cache.move_to_end(key)
        if compiled is None:
            check(program, registry)
            check_capabilities(program, registry, self.capabilities, self.name)
            compiled = compile_program(program, registry)
            with self._lock:
                self._cache[key] = compiled
                while len(self._cache) > _CACHE_SIZE:
                    self._cache.popitem(last=False)
        return ReferencePipeline(compiled, cfg, self.timeout)

    def dispatch(
        self,
        program: Program,
        inputs: Sequence[Any] | Mapping[str, Any],
        config: DispatchConfig | None = None,
        out: Sequence[np.ndarray] | None = None,
    ) -> list[np.ndarray]:
        """Run ``program`` once on ``inputs``; returns the output buffers in declaration order
        (written into the caller's arrays ``out`` when given)."""
        return self.compile(program, config).dispatch(inputs, config, out)

    # --- what a CPU backend has no use for: named, with a coded error, instead of AttributeError
    def synchronize(self) -> None:
        """Nothing is ever queued on the reference backend."""

    def dispatch_timed(self, program: Program, inputs: Sequence[Any] | Mapping[str, Any],
                       config: DispatchConfig | None = None) -> tuple[list[np.ndarray], Timing]:
        """Like ``dispatch``, also returning the wall time (``device_s`` is the same: the CPU is the device)."""
        t0 = time.perf_counter()
        outputs = self.dispatch(program, inputs, config)
        elapsed = time.perf_counter() - t0
        return outputs, Timing(elapsed, elapsed)

    def _unsupported(self, what: str) -> VyreError:
        return VyreError.one("B006", f"the reference backend has no {what}", f"backend {self.name!r}",
                             "use a backend with the 'resident_buffers' capability (acquire('cuda')), or dispatch() "
                             "numpy arrays")

    def allocate(self, dtype: Any, count: int) -> Any:
        raise self._unsupported("resident buffers (allocate)")

    def upload(self, data: Any, dtype: Any = None) -> Any:
        raise self._unsupported("resident buffers (upload)")

    def upload_at(self, buf: Any, offset: int, data: Any) -> None:
        raise self._unsupported("resident buffers (upload_at)")

    def download(self, buf: Any) -> Any:
        raise self._unsupported("resident buffers (download)")

    def download_range(self, buf: Any, offset: int, count: int) -> Any:
        raise self._unsupported("resident buffers (download_range)")

    def free(self, buf: Any) -> None:
        raise self._unsupported("resident buffers (free)")

    def wrap(self, obj: Any) -> Any:
        raise self._unsupported("resident buffers (wrap)")

    def sequence(self, steps: Any, prefix: Any = (), repeat: int = 1) -> Any:
        raise self._unsupported("dispatch sequences or graphs (sequence)")

    def dispatch_async(self, program: Program, inputs: Sequence[Any] | Mapping[str, Any],
                       config: DispatchConfig | None = None) -> Any:
        raise self._unsupported("asynchronous dispatch (dispatch_async)")
