"""``ops check`` beyond loading: known answers and laws on the reference, templates through ptxas
(and, in ``simcheck.py``, templates executed on the simulated GPU).

Loading already checked the schema, the templates' instructions, types, laws' fit and KAT
values. This runs what needs evaluation: every known answer against the reference function or
compose definition, every declared law on witnesses and seeded random values, and every PTX
template assembled by ptxas inside a one-op kernel (all in one module, so one ptxas run).
Problems are diagnostics naming file, op and types:

R030 a known answer disagrees with the reference    R031 a declared law does not hold (a warning when
                                                         an attribute without a value keeps it unchecked)
R032 ptxas rejects a template                       (note) ptxas was not found: templates unassembled
R040 (warning) an op still a scaffold of ``ops new``: its summary says TODO, or it has no known answer
R038 a template executed on the simulated GPU       R039 a template the simulator could not check (the
     gives another result than the reference             interpreter rejects it, it faults, the sanitizer
     (``simcheck.py``)                                   reports it); a note for an ``.approx`` instruction,
                                                         a warning when the op also claims 0 ULP
"""

from __future__ import annotations

import hashlib
import re
from typing import Any, Iterable, Mapping

import numpy as np

from ..conform.laws import check_laws
from ..conform.oneop import one_op_program
from ..conform.values import from_bits, mismatches, zero_sign_note
from ..conform.witnesses import random_bits, witnesses
from ..emit import assemble, emit, find_ptxas
from ..emit.target import DEFAULT_TARGET
from ..ir.diagnostics import Diagnostic
from ..ir.scalars import decode
from ..ir.signature import Binding
from ..reference.interpreter import op_function
from ..registry import OpDef, Registry
from ..registry.opsig import location

__all__ = ["check_scaffold", "check_semantics", "check_templates", "reference_evaluator", "seeded_rng"]


def seeded_rng(seed: int, key: str) -> np.random.Generator:
    """A generator that depends only on the seed and the key (not on the process)."""
    return np.random.default_rng(int.from_bytes(hashlib.sha256(f"{seed}|{key}".encode()).digest()[:8], "little"))


def _types(binding: Binding) -> str:
    return ",".join(t.value for t in binding) or "-"


def reference_evaluator(registry: Registry, attrs: Mapping[str, tuple[tuple[str, int], ...]] | None = None) -> Any:
    """evaluate(op_id, binding, args) on the reference; ``attrs`` gives attribute values by op id."""
    given = dict(attrs or {})

    def evaluate(op_id: str, binding: Binding, args: Any) -> np.ndarray:
        with np.errstate(all="ignore"):
            fn = op_function(registry, registry.get(op_id), binding, given.get(op_id, ()))
            return np.asarray(fn(list(args)))

    return evaluate


def required_attrs(op: OpDef, binding: Binding) -> tuple[tuple[str, int], ...] | None:
    """Values for the op's attributes without a default, from its first known answer for
    ``binding`` that gives them (() when there are none; None when no known answer does)."""
    required = [a.name for a in op.signature.attrs if a.default is None]
    if not required:
        return ()
    for kat in op.kats:
        given = dict(kat.attrs)
        if kat.binding == binding and all(r in given for r in required):
            return tuple(sorted((r, given[r]) for r in required))
    return None


def check_scaffold(ops: Iterable[OpDef]) -> list[Diagnostic]:
    """R040 warnings for ops that are not finished: a summary still ``TODO`` (``ops new`` writes
    one), or no known answer to hold the definition to."""
    diags = []
    for op in ops:
        if op.summary.strip().upper().startswith("TODO"):
            diags.append(Diagnostic("R040", "the summary still says TODO", location(op.source, op.id, "summary"),
                                    "say in one line what the op computes", "warning"))
        if not op.kats and "collective" not in op.traits:  # a collective op's answers need whole subgroups
            diags.append(Diagnostic("R040", "the op has no known answer: nothing holds its definition to the true "
                                    "values", location(op.source, op.id, "kat"),
                                    "add kat.<type> = [[inputs..., output], ...] with values worked out "
                                    "independently (see docs/ops-format.md, Known answers)", "warning"))
    return diags


def check_semantics(registry: Registry, ops: Iterable[OpDef], seed: int = 1) -> list[Diagnostic]:
    """Known answers and declared laws of ``ops``, evaluated on the reference."""
    diags: list[Diagnostic] = []
    for op in ops:
        for kat in op.kats:
            diags += _check_kat(registry, op, kat)
        for b in op.bindings():
            types = op.input_types(b)
            if not types or not any(law.applies(op.binding_map(b)) for law in op.laws):
                continue
            attrs = required_attrs(op, b)
            if attrs is None:
                diags.append(Diagnostic("R031", f"[{_types(b)}] the laws were not checked: an attribute has no default "
                                        "and no known answer gives it a value", location(op.source, op.id, "laws"),
                                        "give the attribute a default or add a known answer with attrs = {...}",
                                        "warning"))
                continue
            evaluate = reference_evaluator(registry, {op.id: attrs})
            samples = witnesses(types[0]) + random_bits(types[0], 24, seeded_rng(seed, f"{op.id}[{_types(b)}]"))
            for r in check_laws(op, b, evaluate, samples, registry):
                if not r.holds:
                    ce = dict(r.counterexample or {})
                    diags.append(Diagnostic("R031", f"[{_types(b)}] the law {r.law} does not hold on the reference: "
                                            f"{ce.pop('equation', '')} fails for "
                                            + ", ".join(f"{k}={v}" for k, v in ce.items()),
                                            location(op.source, op.id, "laws"),
                                            "remove the law, restrict it with @types, or fix the reference"))
    return diags


def _check_kat(registry: Registry, op: OpDef, kat: Any) -> list[Diagnostic]:
    types, out_t = op.input_types(kat.binding), op.output_type(kat.binding)
    if not kat.cases:
        return []
    cols = list(zip(*kat.cases))
    args = [from_bits(t, list(c)) for t, c in zip(types, cols[:-1])]
    want = from_bits(out_t, list(cols[-1]))
    with np.errstate(all="ignore"):
        got = np.broadcast_to(np.asarray(op_function(registry, op, kat.binding, kat.attrs)(args)), want.shape)
    ulp = op.accuracy(out_t) if out_t.is_float else 0  # known answers are the true values, rounded
    diags = []
    for j in mismatches(out_t, want, got, ulp)[:3]:
        shown = ", ".join(repr(decode(t, int(kat.cases[j][i]))) for i, t in enumerate(types))
        diags.append(Diagnostic("R030", f"[{_types(kat.binding)}] known answer {op.id}({shown}) = "
                                f"{decode(out_t, kat.cases[j][-1])!r}, but the reference gives "
                                f"{got[j]!r}{zero_sign_note(want[j], got[j])}",
                                location(op.source, op.id, f"kat.{_types(kat.binding)}"),
                                "fix the known answer (or the reference if the answer is right)"))
    return diags


def check_templates(registry: Registry, ops: Iterable[OpDef], arch: str = DEFAULT_TARGET) -> list[Diagnostic]:
    """Assemble every template of ``ops`` with ptxas, one one-op kernel per binding, one module."""
    exe = find_ptxas()
    if exe is None:
        return [Diagnostic("R032", "ptxas was not found, so the PTX templates were not assembled", "ptxas",
                           "pip install nvidia-cuda-nvcc (the test extra has it), put ptxas on PATH or set "
                           "VYRE_DECL_PTXAS", "note")]
    header: list[str] = []
    body: list[str] = []
    owners: list[tuple[int, OpDef, Binding]] = []  # (first line of the kernel, op, binding)
    for op in ops:
        for b in op.templates:
            # attributes without a default take a known answer's value, or zero: any value assembles alike
            attrs = required_attrs(op, b) or tuple((a.name, 0) for a in op.signature.attrs if a.default is None)
            text = emit(one_op_program(op, b, attrs), registry, arch).text
            lines = text.splitlines()
            start = next(i for i, ln in enumerate(lines) if ln.startswith(".visible .entry"))
            header = header or lines[:start]
            owners.append((len(header) + len(body) + 1, op, b))
            body += lines[start:]
    if not owners:
        return []
    ptx = "\n".join(header + body) + "\n"
    result = assemble(ptx, arch, exe, check=False)
    if result.ok:
        return []
    diags = []
    blamed: set[tuple[str, Binding]] = set()
    for n in sorted({int(m) for m in re.findall(r"line (\d+)", result.log)}):
        owner = max((o for o in owners if o[0] <= n), key=lambda o: o[0], default=None)
        if owner is None or (owner[1].id, owner[2]) in blamed:
            continue
        _, op, b = owner
        blamed.add((op.id, b))
        lines = [ln for ln in result.log.splitlines() if f"line {n}" in ln]
        diags.append(Diagnostic("R032", f"[{_types(b)}] ptxas rejects the template: {'; '.join(lines)[:300]}",
                                location(op.source, op.id, "ptx"), "fix the instruction ptxas names"))
    if not diags:
        diags.append(Diagnostic("R032", f"ptxas rejects the templates: {result.log.strip()[:500]}", "ptxas",
                                "fix the instruction ptxas names"))
    return diags
