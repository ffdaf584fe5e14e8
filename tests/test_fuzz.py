"""The program generator of differential fuzzing (issue 13, item 4): 1,000 generated programs are
valid, survive print and parse, run on the reference backend, and their kernels pass ptxas; they
cover every statement kind, workgroup memory with barriers, order-free atomics, every storage
type and every op but the order-dependent atomics, subgroup collectives among them (in uniform
control flow, partial subgroups included), private arrays and unroll loops, ordered atomics, atomic
loads and stores and bounded waits (issue 28, in ways whose outcome cannot change the outputs), partial
and uniform breaks; a NaN reaches an op that shows NaN bits only
as a literal; the ``--fuzz`` command counts mismatches and minimises each one."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from vyre_decl.conform.cli import main
import json
import os

import numpy as np

from vyre_decl.backends.reference import ReferenceBackend
from vyre_decl.conform.fuzz import FuzzOps, check_program, random_inputs, random_program
from vyre_decl.conform.fuzzrun import run_fuzz
from vyre_decl.conform.isolation import InProcessRunner
from vyre_decl.emit import assemble, emit, find_ptxas
from vyre_decl.ir.nodes import (Access, Atomic, Barrier, Block, Break, Id, IdKind, If, Let, Lit, Load, Loop, MemoryOrder,
                                MemoryScope, Op, Region, Return, Select, Store, Var, Wait)
from vyre_decl.ir.subgroup import SUBGROUP_SIZE
from vyre_decl.ir.text import parse_program
from vyre_decl.ir.types import DataType
from vyre_decl.ir.uniformity import divergent_barriers
from vyre_decl.ir.validation import infer_type
from vyre_decl.ir.walk import body_exprs, statements, subexprs
from vyre_decl.registry import default_registry

REG = default_registry()
OPS = FuzzOps(REG)
PROGRAMS = [random_program(seed, OPS) for seed in range(1000)]


def test_a_thousand_generated_programs_are_valid_round_trip_and_run_on_the_reference():
    for seed, program in enumerate(PROGRAMS):
        outputs = check_program(program, REG, seed)
        assert len(outputs) == len(program.outputs) and outputs[-1].size >= 1


def test_the_generator_covers_the_language_and_the_library():
    nodes = {type(n) for p in PROGRAMS for n in statements(p.body)}
    exprs = [e for p in PROGRAMS for e in body_exprs(p.body)]
    assert {If, Loop, Store, Block, Region, Return, Barrier} <= nodes and {Select, Load, Op, Atomic, Wait} <= {type(e) for e in exprs}
    used = {e.op for e in exprs if isinstance(e, (Op, Atomic))}
    order_dependent = {"primitive.atomic.exchange", "primitive.atomic.compare_exchange"}
    assert used == {op.id for op in REG} - order_dependent, {op.id for op in REG} - order_dependent - used
    buffers = [b for p in PROGRAMS for b in p.buffers]
    assert {b.dtype for b in buffers} == set(DataType)  # every storage type, 64-bit and narrow ones included
    assert set(Access) - {Access.UNIFORM} == {b.access for b in buffers}  # private arrays included
    assert random_program(5, OPS) == random_program(5, OPS)  # seeded: the same program every time


def test_the_generator_makes_branches_with_effects_only_where_they_are_legal():
    """Lazy branches appear, some with an atomic in their condition, none with one in an arm (V026:
    a GPU runs only the chosen arm)."""
    branches = [e for p in PROGRAMS for e in body_exprs(p.body) if isinstance(e, Select) and e.lazy]
    assert len(branches) > 100
    with_effect = [b for b in branches if any(isinstance(x, Atomic) for x in subexprs(b.cond))]
    assert len(with_effect) > 10
    for b in branches:
        assert not any(isinstance(x, Atomic) for arm in (b.if_true, b.if_false) for x in subexprs(arm))


def test_a_seed_gives_the_same_program_in_every_process():
    """A seed names one program: in another process (another hash seed) it is the same (an
    iteration over a set made the first GPU run's mismatches irreproducible)."""
    import subprocess
    import sys

    code = ("from vyre_decl.conform.fuzz import FuzzOps, random_program; from vyre_decl.registry import "
            "default_registry; ops = FuzzOps(default_registry()); "
            "print([random_program(s, ops).content_hash() for s in range(40)])")
    runs = {subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONHASHSEED": str(h)},
                           capture_output=True, text=True, check=True).stdout for h in (1, 2, 3)}
    assert runs == {str([p.content_hash() for p in PROGRAMS[:40]]) + "\n"}


COLLECTIVE = {op.id for op in REG if REG.has_trait(op.id, "collective")}


def _collective_calls(body):
    return [e.op for e in body_exprs(body) if isinstance(e, Op) and e.op in COLLECTIVE]


def test_the_generator_calls_collectives_in_uniform_control_flow_with_partial_subgroups():
    """Issue 28: a fair share of the programs call subgroup collectives (every one of them is used:
    the coverage test above), only where every lane of the subgroup runs them (no V027, V028), and
    their subgroups are sometimes partial: the workgroup size is not a multiple of 32, or the
    invocations past the data return early and the data ends inside a subgroup."""
    with_calls = [(seed, p) for seed, p in enumerate(PROGRAMS) if _collective_calls(p.body)]
    assert 0.2 * len(PROGRAMS) <= len(with_calls) <= 0.5 * len(PROGRAMS), len(with_calls)
    assert sum(len(_collective_calls(p.body)) for _, p in with_calls) >= 1.5 * len(with_calls)
    collective = lambda op_id: op_id in COLLECTIVE  # noqa: E731
    for _, p in with_calls:
        assert divergent_barriers(p, collective)[1] == [], p.name
    odd = [p for _, p in with_calls if p.workgroup_size[0] % SUBGROUP_SIZE]
    returning = [(seed, p) for seed, p in with_calls if any(isinstance(n, If) and n.then == (Return(),) for n in p.body)]
    ragged = [seed for seed, p in returning if random_inputs(p, seed)[0].size % SUBGROUP_SIZE]
    assert len(odd) >= 0.2 * len(with_calls) and len(ragged) >= 0.4 * len(with_calls), (len(odd), len(ragged))
    assert len(with_calls) - len(returning) >= 0.1 * len(with_calls)  # every lane present: no vote
    # in the arms of an `if` (whose condition is then uniform), not only at the top level
    inside = [p for _, p in with_calls if any(isinstance(n, If) and _collective_calls(n.then + n.otherwise)
                                              for n in statements(p.body))]
    assert len(inside) >= 0.1 * len(with_calls), len(inside)


def _private(p):
    return [b.name for b in p.buffers if b.access is Access.PRIVATE]


def test_the_generator_makes_private_arrays_and_unroll_loops():
    """Issue 28: a modest share of the programs have a private array, stored and loaded at indices
    constant after unrolling (literals, some past the end; unroll counters; a counter plus a
    literal: V030 is checked by the validity test), and unroll loops, some over the array."""
    with_private = [p for p in PROGRAMS if _private(p)]
    assert 0.08 * len(PROGRAMS) <= len(with_private) <= 0.3 * len(PROGRAMS), len(with_private)
    loads = [(p, e) for p in with_private for e in body_exprs(p.body) if isinstance(e, Load) and e.buffer in _private(p)]
    stores = [(p, n) for p in with_private for n in statements(p.body) if isinstance(n, Store) and n.buffer in _private(p)]
    unrolled = [p for p in PROGRAMS if any(isinstance(n, Loop) and n.unroll for n in statements(p.body))]
    assert len({p.name for p, _ in loads}) >= 50 and len({p.name for p, _ in stores}) >= 40, (len(loads), len(stores))
    assert len(unrolled) >= 40 and all(_private(p) for p in unrolled), len(unrolled)
    for kind in (Lit, Var, Op):
        assert any(isinstance(x.index, kind) for _, x in loads) and any(isinstance(x.index, kind) for _, x in stores)
    assert any(isinstance(n.index, Lit) and n.index.bits >= p.buffer(n.buffer).count for p, n in stores)
    assert len({p.buffer(_private(p)[0]).dtype for p in with_private}) >= 8


def _ordered(p):
    exprs = [e for e in body_exprs(p.body) if isinstance(e, (Atomic, Wait)) or (isinstance(e, Load) and e.order)]
    return exprs + [n for n in statements(p.body) if isinstance(n, Store) and n.order]


def test_the_generator_makes_ordered_atomics_atomic_loads_stores_and_waits_with_deterministic_outcomes():
    """Issue 28: orders and scopes on the accumulator's order-free atomics (the final memory is the
    same in any order), atomic stores only of an element one invocation owns (its output element,
    its workgroup slot), atomic loads and bounded waits only of workgroup memory between barriers
    (nothing writes it then, so a wait yields the word however it ends), never in a lazy arm."""
    accesses = [(p, a) for p in PROGRAMS for a in _ordered(p)]
    qualified = {(type(a).__name__, a.order, a.scope) for _, a in accesses if a.order is not None}
    for order in MemoryOrder:
        assert {("Atomic", order, scope) for scope in MemoryScope} <= qualified, order
    for order in (MemoryOrder.RELAXED, MemoryOrder.ACQUIRE):
        assert ("Load", order, MemoryScope.WORKGROUP) in qualified and ("Wait", order, MemoryScope.WORKGROUP) in qualified
    for order in (MemoryOrder.RELAXED, MemoryOrder.RELEASE):
        assert {("Store", order, scope) for scope in MemoryScope} <= qualified, order
    counts = {kind: len({p.name for p, a in accesses if isinstance(a, kind) and a.order is not None})
              for kind in (Load, Store, Wait)}
    assert min(counts.values()) >= 40 and counts[Store] <= 0.3 * len(PROGRAMS), counts
    waits = [a for _, a in accesses if isinstance(a, Wait)]
    assert any(w.value == Load(w.buffer, w.index) for w in waits)  # the bound runs out: it yields the word too
    for p, a in accesses:
        if isinstance(a, (Load, Wait)):
            assert p.buffer(a.buffer).access is Access.WORKGROUP and isinstance(a.index, (Id, Lit)), p.name
        elif isinstance(a, Store):
            assert a.index == (Id(IdKind.LOCAL, 0) if a.buffer == "sh" else Var("i")), p.name
    for p in PROGRAMS:
        for e in body_exprs(p.body):
            if isinstance(e, Select) and e.lazy:
                arms = [x for arm in (e.if_true, e.if_false) for x in subexprs(arm)]
                assert not any(isinstance(x, Wait) or (isinstance(x, Load) and x.order) for x in arms), p.name


def _loops_with_breaks(body):
    """(loop, its breaks) for every loop whose body breaks out of it (not out of a nested loop)."""
    def own(nodes):
        for n in nodes:
            if isinstance(n, Break):
                yield n
            elif isinstance(n, If):
                yield from own(n.then + n.otherwise)
            elif isinstance(n, (Block, Region)):
                yield from own(n.body)
    return [(n, list(own(n.body))) for n in statements(body) if isinstance(n, Loop) and any(own(n.body))]


def test_the_generator_makes_partial_and_uniform_breaks():
    """Issue 28: loops that are not unrolled sometimes break (``if COND { break }`` anywhere in the
    body), mostly under a condition that differs between invocations (no collective op in such a
    loop: V027) and sometimes under a uniform one; never out of an unroll loop (V040). Validity,
    the reference and ptxas are checked with every other program above."""
    with_breaks = [(p, _loops_with_breaks(p.body)) for p in PROGRAMS]
    with_breaks = [(p, loops) for p, loops in with_breaks if loops]
    assert 0.04 * len(PROGRAMS) <= len(with_breaks) <= 0.2 * len(PROGRAMS), len(with_breaks)
    assert all(not loop.unroll for _, loops in with_breaks for loop, _ in loops)
    buffers = lambda p: {b.name: b for b in p.buffers}  # noqa: E731
    from vyre_decl.ir.uniformity import _uniform
    divergent = uniform = 0
    for p, loops in with_breaks:
        for loop, _ in loops:
            conds = [n.cond for n in loop.body if isinstance(n, If) and n.then == (Break(),)]
            assert conds, p.name  # each break stands alone in an if of the loop's own body
            if all(_uniform(c, {x.name for x in subexprs(c) if isinstance(x, Var)}, buffers(p)) for c in conds):
                uniform += 1
            else:
                divergent += 1
                assert not _collective_calls(loop.body), p.name
    assert divergent >= 25 and uniform >= 10, (divergent, uniform)  # 36 and 47 of seeds 0-999
    assert any(_collective_calls(p.body) for p, _ in with_breaks)  # in programs that call collectives elsewhere


def test_atomic_old_values_and_accumulators_are_never_read():
    """The old value of an atomic and the accumulator's elements depend on the order of the
    updates, so nothing reads them, and one order-free op updates the accumulator: the outputs
    are the same in any order."""
    for p in PROGRAMS:
        atomic_lets = {n.name for n in statements(p.body) if getattr(n, "value", None).__class__ is Atomic}
        for e in body_exprs(p.body):
            assert not (isinstance(e, Var) and e.name in atomic_lets), p.name
            assert not (isinstance(e, Load) and e.buffer == "acc"), p.name
            if isinstance(e, Atomic):
                assert {law.law for law in REG.get(e.op).laws} >= {"commutative", "associative"}
        # one op per program: and then xor on one element differs from xor then and (the H100 run found it)
        assert len({e.op for e in body_exprs(p.body) if isinstance(e, Atomic)}) <= 1, p.name


def test_barriers_stand_in_uniform_control_flow_and_shared_slots_are_written_by_their_owner():
    for p in PROGRAMS:
        top = {id(n) for n in p.body}
        # a workgroup collective's region (top level) has barriers and scratch stores of its own (ir/wgcollect.py)
        body = [n for n in p.body if not (isinstance(n, Region) and n.generator.startswith("workgroup."))]
        for n in statements(body):
            if isinstance(n, Barrier) or (isinstance(n, Store) and p.buffer(n.buffer).access is Access.WORKGROUP):
                assert id(n) in top, p.name
            if isinstance(n, Store) and p.buffer(n.buffer).access is Access.WORKGROUP:
                assert n.index == Id(IdKind.LOCAL, 0), p.name


def _types(p):
    """Every name's type (generated names are unique) and a function typing an expression."""
    names = {"i": DataType.U32}
    buffers = {b.name: b for b in p.buffers}
    for n in statements(p.body):
        if isinstance(n, Let):
            names[n.name] = infer_type(n.value, "", names, buffers, REG)
        elif isinstance(n, Loop):
            names[n.var] = DataType.U32
    return lambda e: infer_type(e, "", names, buffers, REG)


def test_a_nan_reaches_an_op_that_shows_nan_bits_only_as_a_literal():
    """Arithmetic may make any NaN (x86 and GPUs make different ones), so a computed NaN fed to
    bitcast or copysign would make the program's result differ between correct backends: the
    generator replaces any NaN by the literal NaN first (the mismatch the first GPU run found)."""
    checked = 0
    for p in PROGRAMS:
        type_of = _types(p)
        for e in body_exprs(p.body):
            if isinstance(e, Op) and REG.has_trait(e.op, "nan-bits"):
                for a in e.args:
                    if type_of(a).is_float:
                        assert isinstance(a, Select) and isinstance(a.cond, Op), p.name
                        assert a.cond.op == "primitive.compare.ne" and a.cond.args == (a.if_false, a.if_false)
                        assert isinstance(a.if_true, Lit) and a.if_true == Lit.of(a.if_true.dtype, float("nan"))
                        checked += 1
    assert checked > 100
    assert REG.has_trait("primitive.convert.bitcast", "nan-bits") and REG.has_trait("primitive.float.signbit", "nan-bits")
    assert not REG.has_trait("primitive.math.add", "nan-bits")


def test_generated_kernels_assemble():
    ptxas = find_ptxas()
    if ptxas is None:
        pytest.fail("ptxas not found. Fix: pip install -e '.[test]' (nvidia-cuda-nvcc ships ptxas)")

    def module(programs, target):
        texts = [emit(p, REG, target).text for p in programs]
        head = texts[0].split(".visible .entry")[0]
        # the module-scope declaration of a workgroup_memory(large) kernel's dynamic array, once
        head += "".join(dict.fromkeys(line + "\n" for t in texts for line in t.split(".visible .entry")[0].splitlines()
                                      if ".extern .shared" in line and line + "\n" not in head))
        return head + "".join(".visible .entry" + t.split(".visible .entry", 1)[1] for t in texts)

    batches = [(PROGRAMS[k:k + 25], "sm_90") for k in range(0, len(PROGRAMS), 25)]  # all of them, 25 kernels a module
    batches.append(([p for p in PROGRAMS if _collective_calls(p.body)][:25], "sm_75"))  # collectives without redux.sync
    batches.append(([p for p in PROGRAMS if _ordered(p)][:25], "sm_75"))  # ordered accesses before sm_90
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda b: assemble(module(*b), b[1], ptxas, check=False, optimize=False), batches))
    assert all(r.ok for r in results), [r.log[:500] for r in results if not r.ok]


def test_the_fuzz_command_counts_mismatches(tmp_path, capsys):
    """On the reference, --fuzz is a determinism check (the reference run twice gives the same bits)
    and says so; the counting of real mismatches is tested with a planted bug below."""
    assert main(["--backend", "reference", "--fuzz", "40", "--out", str(tmp_path / "c.json"), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "40 programs, 0 mismatches" in out and "reference self-consistency" in out
    assert main(["--fuzz", "-1", "--backend", "reference"]) == 2


class _WrongMulhi(InProcessRunner):
    """A backend with a planted bug: every output element is off by one when the program calls mulhi."""

    def run(self, program, inputs, grid):
        out = super().run(program, inputs, grid)
        if any(isinstance(e, Op) and e.op == "primitive.math.mulhi" for e in body_exprs(program.body)):
            out = [np.asarray(a).view(f"u{np.asarray(a).itemsize}") + 1 for a in out]
            out = [a.view(b.dtype) for a, b in zip(out, super().run(program, inputs, grid))]
        return out


def test_a_mismatch_is_minimised_into_a_small_replay_capsule(tmp_path):
    seeds = [k for k in range(200) if any(isinstance(e, Op) and e.op == "primitive.math.mulhi"
                                          for e in body_exprs(PROGRAMS[k].body))]
    assert seeds
    runner = _WrongMulhi(ReferenceBackend(REG))
    ran, problems = run_fuzz(runner, REG, 200, 0, lambda s: None, tmp_path)
    found = [int(line.split()[1]) for line in problems]
    # every program with a mulhi, but those whose outputs are all NaN (any NaN equals any NaN)
    assert ran == 200 and set(found) <= set(seeds) and len(found) >= 0.9 * len(seeds), (found, seeds)
    capsules = sorted(tmp_path.glob("*.json"))
    assert len(capsules) == len(found)
    for path in capsules:
        small = parse_program(json.loads(path.read_text())["program"])
        assert sum(1 for _ in statements(small.body)) <= 3, small  # just the store of a mulhi, maybe in a block
        assert sum(1 for _ in body_exprs(small.body)) <= 12, small


def test_the_generator_gives_some_programs_a_residency_hint_that_fits():
    hinted = [p for p in PROGRAMS if p.resident]
    assert len(hinted) >= 20 and {p.resident for p in hinted} > {1}
    assert all(p.resident * p.workgroup_size[0] <= 2048 for p in hinted)
