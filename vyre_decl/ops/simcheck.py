"""Templates executed for ``ops check``: every PTX template of the checked ops runs on the simulated
GPU (the PTX interpreter of ``vyre_decl.sim``) and its results are compared with the op's meaning
evaluated on the reference backend. That is this module's one job.

Each op × type binding with a template becomes its one-op kernel (``conform.oneop``: ``out[i] =
op(in0[i], ...)``), once for each attribute assignment conformance uses (``conform.cases.
attr_sets``). The kernels of one target are emitted into one module, loaded once, for a simulated
sm_90 and a simulated sm_75 device. A template that needs a newer target than sm_75
(``Template.min_sm``: the bf16 and f16x2 conversions need sm_80) runs on sm_90 alone, and the
summary says so: on sm_75 the emitter inlines the op's composition instead. The cases are the
operand types' boundary witnesses (every combination; a seeded sample of ``MAX_WITNESS_ROWS``
where there are more) and the inputs of the op's known answers for that binding and attribute
assignment; not conformance's sweep or random cases.

Comparison: bit for bit, all NaNs equal; a float result of an op that declares an accuracy
(``ulp``) may be that many ULP away, never with the other sign of zero. Problems are diagnostics
naming the file, op and types, and the simulated devices:

R038 the template's result differs from the reference's (the inputs, both results, how many cases)
R039 the template could not be checked (errors): the interpreter rejects its PTX, the kernel
     faults, the sanitizer reports it, or the reference cannot run the cases. Also a note for an
     ``.approx`` instruction, whose result the PTX ISA leaves to the hardware: the interpreter
     computes it exactly (in f64, rounded) and the comparison uses that value, so the hardware's
     own error stays unchecked (``conform --backend cuda`` on a GPU measures it); a warning when
     the op declares no ULP budget for the type, as such an instruction promises no correctly
     rounded result.

``run_program`` runs any emitted program on the interpreter with the CUDA backend's calling
convention (the interpreter's tests use it too).
"""

from __future__ import annotations

import dataclasses
import struct
from dataclasses import dataclass, field
from typing import Any, Final, Iterable, Sequence

import numpy as np

from ..backends.config import DispatchConfig
from ..backends.hostio import CallPlan, host_output, prepare
from ..backends.reference import ReferenceBackend
from ..conform.cases import attr_sets, unit_rng
from ..conform.oneop import one_op_program
from ..conform.values import buffer_mismatches, to_bits, zero_sign_note
from ..conform.witnesses import witnesses
from ..emit import emit
from ..emit.abi import VECTOR_LANES, PtxModule
from ..ir.diagnostics import Diagnostic, VyreError
from ..ir.nodes import Program
from ..ir.scalars import decode
from ..ir.signature import Binding
from ..ir.types import DataType
from ..registry import OpDef, Registry
from ..registry.opsig import location
from ..sim.memory import DeviceMemory
from ..sim.ptx import Finding, Kernel, KernelFault, PtxError, load_module

__all__ = ["SIM_TARGETS", "MAX_WITNESS_ROWS", "SimCheck", "Unit", "check_templates_on_sim", "template_units",
           "unit_cases", "run_program", "SIM_BASE"]

SIM_TARGETS: Final = ("sm_90", "sm_75")  # the simulated devices every template runs on (an H100's, a T4's)
MAX_WITNESS_ROWS: Final = 4096  # witness combinations per template, at most (a seeded sample beyond)
SIM_BASE: Final = 0x7F00_0000_0000  # where the simulated device's allocations start
_SHOWN: Final = 3  # differing cases quoted per diagnostic


@dataclass
class Unit:
    """One template with one attribute assignment: its one-op program, the cases and the
    reference's outputs for them (None until computed, or when the reference failed)."""

    op: OpDef
    binding: Binding
    attrs: tuple[tuple[str, int], ...]
    program: Program
    inputs: list[np.ndarray]
    expected: list[np.ndarray] | None = None

    @property
    def types(self) -> str:
        return ",".join(t.value for t in self.binding) or "-"

    @property
    def min_sm(self) -> int:
        return self.op.templates[self.binding].min_sm


@dataclass
class SimCheck:
    """What ``check_templates_on_sim`` found and what it ran."""

    diagnostics: list[Diagnostic] = field(default_factory=list)
    targets: tuple[str, ...] = SIM_TARGETS
    executed: dict[str, set[tuple[str, Binding]]] = field(default_factory=dict)  # target -> templates run there
    too_new: dict[str, dict[tuple[str, Binding], int]] = field(default_factory=dict)  # target -> {template: sm}

    @property
    def templates(self) -> int:
        """Templates (op × type binding) executed on at least one simulated device."""
        return len(set().union(*self.executed.values())) if self.executed else 0

    def summary(self) -> str:
        """``N templates executed on the simulated sm_90 and sm_75 devices`` and which ones ran on
        fewer devices because they need a newer target."""
        names = " and ".join(self.targets)
        text = f"{self.templates} template{'s' if self.templates != 1 else ''} executed on the simulated {names} " \
               f"device{'s' if len(self.targets) > 1 else ''}"
        notes = []
        for target in self.targets:
            skipped = self.too_new.get(target, {})
            if skipped:
                need = ", ".join(f"sm_{sm}" for sm in sorted(set(skipped.values())))
                notes.append(f"{len(skipped)} of them not on {target}: they need {need}")
        return text + (f" ({'; '.join(notes)})" if notes else "")

    def as_dict(self) -> dict[str, Any]:
        return {"templates": self.templates,
                "executed": {t: len(self.executed.get(t, ())) for t in self.targets},
                "needs_newer_target": {t: sorted(f"{op}[{','.join(x.value for x in b) or '-'}]"
                                                 for op, b in self.too_new.get(t, {})) for t in self.targets}}


def unit_cases(op: OpDef, binding: Binding, attrs: tuple[tuple[str, int], ...] = ()) -> list[np.ndarray]:
    """One column per operand: every combination of the operand types' witnesses (a seeded sample
    of ``MAX_WITNESS_ROWS`` where there are more; mixed types cycled to one length), then the
    inputs of the known answers for ``binding`` given with the attribute assignment ``attrs``."""
    types = op.input_types(binding)
    k = len(types)
    if k == 0:
        return []
    if all(t is types[0] for t in types):
        w = np.array(witnesses(types[0]), dtype=np.uint64)
        if len(w) ** k <= MAX_WITNESS_ROWS:
            grid = np.indices((len(w),) * k).reshape(k, -1)
        else:
            key = f"{op.id}[{','.join(t.value for t in binding)}]"
            grid = unit_rng(0, key).integers(0, len(w), (k, MAX_WITNESS_ROWS))
        cols = [w[row] for row in grid]
    else:
        n = max(len(witnesses(t)) for t in types)
        cols = [np.resize(np.array(witnesses(t), dtype=np.uint64), n) for t in types]
    rows = [case[:-1] for kat in op.kats if kat.binding == binding and _assignment(op, kat.attrs) == attrs
            for case in kat.cases]
    if rows:
        kat_cols = np.array(rows, dtype=object).T
        cols = [np.concatenate([c, np.array([int(v) for v in kc], dtype=np.uint64)]) for c, kc in zip(cols, kat_cols)]
    return [_values(t, c) for t, c in zip(types, cols)]


def _values(t: DataType, bits: np.ndarray) -> np.ndarray:
    if t is DataType.BOOL:
        return bits.astype(bool)
    return bits.astype(f"u{t.numpy_dtype.itemsize}").view(t.numpy_dtype)


def _assignment(op: OpDef, given: Iterable[tuple[str, int]]) -> tuple[tuple[str, int], ...]:
    """Attribute values as ``attr_sets`` writes them: sorted, those at their default left out."""
    defaults = {a.name: a.default for a in op.signature.attrs}
    return tuple(sorted((n, v) for n, v in given if v != defaults.get(n)))


def template_units(registry: Registry, ops: Iterable[OpDef]) -> list[Unit]:
    """A unit for every template of ``ops`` and attribute assignment (attributes without a default
    and without a known answer giving one take zero), each program named uniquely."""
    units: list[Unit] = []
    for op in ops:
        for b in op.templates:
            sets = attr_sets(op, b) or [tuple((a.name, 0) for a in op.signature.attrs if a.default is None)]
            for attrs in sets:
                program = one_op_program(op, b, attrs)
                program = dataclasses.replace(program, name=f"t{len(units)}_{program.name}")
                units.append(Unit(op, b, attrs, program, unit_cases(op, b, attrs)))
    return units


def run_program(program: Program, inputs: Sequence[Any], grid: tuple[int, int, int] | None = None,
                target: str = "sm_90", vector: bool = False, stats: dict[str, Any] | None = None,
                registry: Registry | None = None, ptx: PtxModule | None = None, kernel: Kernel | None = None,
                sanitize: bool = True) -> tuple[list[np.ndarray], list[Finding]]:
    """An emitted program on the PTX interpreter as the CUDA backend runs it: each buffer in device
    memory (outputs zero-filled), parameters packed as emit/abi.py says, the inferred grid (a
    quarter of it, in workgroups, for the vectorised entry). Returns the outputs as dispatch does
    and the interpreter's findings. ``ptx``: the program's emitted module for ``target``, when the
    caller has it; ``kernel``: its entry, already loaded (in a module of many, say)."""
    ptx = ptx or emit(program, registry, target)
    if kernel is None:
        name = ptx.vector_entry if vector else ptx.entry
        assert name is not None, f"{program.name} has no vectorised entry"
        kernel = load_module(ptx.text, int(target[3:])).kernels[name]
    call = prepare(program, inputs, DispatchConfig(grid=grid))
    mem = DeviceMemory(SIM_BASE)
    addr = {}
    for p in ptx.abi.params:
        if p.kind == "ptr":
            arr = call.memory[p.buffer]
            addr[p.buffer] = mem.allocate(max(arr.nbytes, 16))
            mem.write(addr[p.buffer], arr.tobytes())
    params = bytearray(kernel.param_bytes)
    for prm, p in zip(kernel.params, ptx.abi.params):
        value = addr[p.buffer] if p.kind == "ptr" else call.counts[p.buffer]
        struct.pack_into("<Q" if prm.nbytes == 8 else "<I", params, prm.offset, value)
    g = CallPlan(program).grid(call.counts, lanes=VECTOR_LANES) if vector else call.grid
    findings = [] if 0 in g else kernel.run(g, program.workgroup_size, bytes(params), mem, sanitize, stats=stats,
                                            dynamic_shared=ptx.abi.dynamic_shared_bytes)
    outs = []
    for d in program.outputs:
        host = call.memory[d.name]
        raw = np.frombuffer(mem.read(addr[d.name], host.nbytes), dtype=host.dtype) if host.nbytes else host
        outs.append(host_output(d, raw.copy()))
    return outs, findings


class _Problems:
    """Per-device problems of the units, merged across devices: the same problem of a unit on
    sm_90 and on sm_75 is one diagnostic naming both."""

    def __init__(self, units: list[Unit]) -> None:
        self.order = {id(u): i for i, u in enumerate(units)}
        self.units = {id(u): u for u in units}
        self.found: dict[tuple[int, str, str, str, str], list[str]] = {}

    def add(self, u: Unit, target: str, code: str, message: str, fix: str, severity: str = "error") -> None:
        self.found.setdefault((id(u), code, message, fix, severity), []).append(target)

    def diagnostics(self) -> list[Diagnostic]:
        out = []
        for (key, code, message, fix, severity), ts in sorted(self.found.items(), key=lambda kv: self.order[kv[0][0]]):
            devices = f"on the simulated {' and '.join(ts)} device{'s' if len(ts) > 1 else ''}"
            out.append(_diag(self.units[key], code, f"{devices}: {message}", fix, severity))
        return out


def check_templates_on_sim(registry: Registry, ops: Iterable[OpDef],
                           targets: Sequence[str] = SIM_TARGETS) -> SimCheck:
    """Run every template of ``ops`` on the simulated devices of ``targets`` (see the module's
    docstring) and compare it with the reference backend."""
    result = SimCheck(targets=tuple(targets))
    units = template_units(registry, ops)
    reference = ReferenceBackend(registry)
    for u in units:
        try:
            u.expected = reference.dispatch(u.program, u.inputs, DispatchConfig())
        except VyreError as exc:
            result.diagnostics.append(_diag(u, "R039", f"the reference cannot run the template's cases: {exc}",
                                            "give the attribute a default or a known answer with a valid value"))
    problems = _Problems(units)
    for target in targets:
        sm = int(target[3:])
        result.too_new[target] = {(u.op.id, u.binding): u.min_sm for u in units if u.min_sm > sm}
        runnable = [u for u in units if u.expected is not None and u.min_sm <= sm]
        result.executed[target] = set()
        for u, kernel, ptx in _load(registry, runnable, target, problems):
            result.executed[target].add((u.op.id, u.binding))
            outs = _run(u, kernel, ptx, target, problems)
            wrong = "" if outs is None else _differences(u, outs)
            if wrong:
                problems.add(u, target, "R038", f"the PTX template gives {wrong}",
                             "fix the template (or the op's reference/compose if the template is right)")
    result.diagnostics += problems.diagnostics()
    return result


def _load(registry: Registry, units: list[Unit], target: str,
          problems: _Problems) -> list[tuple[Unit, Kernel, PtxModule]]:
    """Emit the units for ``target`` into one module (one per distinct header) and load it once;
    a unit that cannot be emitted, or whose PTX the interpreter rejects, is an R039 and is left out."""
    groups: dict[tuple[str, ...], list[tuple[Unit, PtxModule, list[str]]]] = {}
    for u in units:
        try:
            ptx = emit(u.program, registry, target)
        except VyreError as exc:
            problems.add(u, target, "R039", f"the one-op kernel cannot be emitted: {exc}",
                         "fix the problem the emitter names")
            continue
        lines = ptx.text.splitlines()
        start = lines.index(f".visible .entry {ptx.entry}(")
        end = lines.index("}", start)
        header = tuple(ln for ln in lines[:start] if ln and not ln.startswith("//"))
        groups.setdefault(header, []).append((u, ptx, lines[start:end + 1]))
    loaded = []
    for header, members in groups.items():
        loaded += _load_group(list(header), members, target, problems)
    return loaded


def _load_group(header: list[str], members: list[tuple[Unit, PtxModule, list[str]]], target: str,
                problems: _Problems) -> list[tuple[Unit, Kernel, PtxModule]]:
    """Load the members' entries as one module; when the interpreter rejects a line, blame the
    member whose entry holds it (every member when none does) and load the others again."""
    while members:
        text, firsts = list(header), []
        for _, _, entry in members:
            firsts.append(len(text) + 1)
            text += entry
        try:
            module = load_module("\n".join(text) + "\n", int(target[3:]))
        except PtxError as exc:
            owner = max((i for i, first in enumerate(firsts) if first <= exc.line), default=None)
            bad = set(range(len(members))) if owner is None else {owner}
            line = text[exc.line - 1].strip() if 0 < exc.line <= len(text) else ""
            where = f" (at `{line}`)" if line and line not in exc.message else ""
            for i in bad:
                problems.add(members[i][0], target, "R039", f"the PTX interpreter rejects the one-op kernel: "
                             f"{exc.message}{where}", _FIX_UNSUPPORTED)
            members = [m for i, m in enumerate(members) if i not in bad]
            continue
        return [(u, module.kernels[ptx.entry], ptx) for u, ptx, _ in members]
    return []


_FIX_UNSUPPORTED: Final = ("fix the template; if ptxas accepts it and the PTX ISA defines the instruction, the "
                           "simulator lacks it: report it, and skip this check with --no-sim meanwhile")


def _run(u: Unit, kernel: Kernel, ptx: PtxModule, target: str, problems: _Problems) -> list[np.ndarray] | None:
    """The unit's outputs on the simulated ``target`` device; None (and an R039) when it faults or
    the sanitizer reports it. An ``.approx`` finding is a note (see ``_approx``)."""
    try:
        outs, findings = run_program(u.program, u.inputs, target=target, ptx=ptx, kernel=kernel)
    except KernelFault as exc:
        problems.add(u, target, "R039", f"the one-op kernel faults: {exc}",
                     "fix the template (it must compute its result from its operands alone)")
        return None
    except Exception as exc:  # noqa: BLE001 - the interpreter failing on a template is its bug, reported as such
        problems.add(u, target, "R039", f"the PTX interpreter failed on the one-op kernel (a simulator bug): "
                     f"{type(exc).__name__}: {exc}", _FIX_UNSUPPORTED)
        return None
    approx = next((f for f in findings if f.kind == "approx"), None)
    if approx is not None:
        _approx(u, approx, target, problems)
    others = [f for f in findings if f.kind != "approx"]
    if others:
        shown = "; ".join(f"{f.kind} at `{f.instruction}`: {f.message}" for f in others[:2])
        problems.add(u, target, "R039", f"the sanitizer reports the one-op kernel: {shown}", "fix the template")
        return None
    return outs


def _approx(u: Unit, finding: Finding, target: str, problems: _Problems) -> None:
    """The template uses an ``.approx`` instruction: a note, or a warning when the op declares its
    result correctly rounded (0 ULP), which such an instruction does not promise."""
    t = u.op.output_type(u.binding)
    exact = t.is_float and u.op.accuracy(t) == 0
    claim = (f"; the op declares its {t.value} results correctly rounded (no ulp budget), which this instruction "
             "does not promise") if exact else ""
    problems.add(u, target, "R039", f"{finding.message}; the results were compared with that value, so the "
                 f"hardware's own error is unchecked{claim}",
                 ("declare the op's ulp budget for the type, or use a correctly rounded instruction" if exact else
                  "measure the hardware's error with python -m vyre_decl.conform --backend cuda on a GPU"),
                 "warning" if exact else "note")


def _differences(u: Unit, got: list[np.ndarray]) -> str:
    """The first differing cases of the outputs, as text ('' when none differ)."""
    assert u.expected is not None
    types = u.op.input_types(u.binding)
    meaning = u.op.reference_for(u.binding)
    meaning = f"reference function {meaning!r}" if meaning else "compose"
    attrs = "".join(f"; {n} = {v}" for n, v in u.attrs)
    parts = []
    for decl, want, have in zip(u.program.outputs, u.expected, got):
        t = decl.dtype.value_type
        ulp = u.op.accuracy(t) if t.is_float and decl.name == "out" else 0
        bad = buffer_mismatches(decl.dtype, want, have, ulp)
        if not bad.size:
            continue
        what = "" if len(u.program.outputs) == 1 else f" leaving {decl.name}"
        cases = []
        for j in bad[:_SHOWN]:
            args = ", ".join(_show(ti, col[j]) for ti, col in zip(types, u.inputs)) + attrs
            cases.append(f"{u.op.id}({args}){what} = {_show(t, have[j])}, but the op's {meaning} on the reference "
                         f"backend gives {_show(t, want[j])}{zero_sign_note(want[j], have[j])}")
        budget = f", beyond the op's {ulp}-ULP accuracy" if ulp else ""
        parts.append("; ".join(cases) + f" ({bad.size} of {want.size} case(s) differ{budget})")
    return "; ".join(parts)


def _show(t: DataType, value: Any) -> str:
    """A value as R030 shows it (``decode``), an integer beyond 9 with its bits in hex too."""
    bits = int(to_bits(t, np.asarray([value]))[0])
    shown = repr(decode(t, bits))
    if t.is_int and bits > 9:
        shown += f" (0x{bits:0{t.bits // 4}x})"
    return shown


def _diag(u: Unit, code: str, message: str, fix: str, severity: str = "error") -> Diagnostic:
    return Diagnostic(code, f"[{u.types}] {message}", location(u.op.source, u.op.id, "ptx"), fix,
                      severity)  # type: ignore[arg-type]
