"""Conformance triage of a known answer the reference misses (issue 27, smaller items): a single wrong
known answer is the known answer's fault ("may be wrong"), as ops check says (R030), never "the
reference is probably wrong" because one of one answers disagrees; an independent backend that
agrees with the reference says so; the reference is blamed on evidence (a backend meeting the
answer, a broken law, several answers of a table disagreeing)."""

from __future__ import annotations

import numpy as np

import vyre_decl
from vyre_decl.backends.reference import ReferenceBackend
from vyre_decl.conform.corpus import load_corpus
from vyre_decl.conform.isolation import InProcessRunner
from vyre_decl.conform.runner import Conformance, select_units

OPS = '''[dialect]
name = "triage"
version = "1.0.0"
summary = "known answers of an add"

[[op]]
id = "triage.add"
summary = "a + b, wrapping"
signature = "(a: T, b: T) -> T"
types = { T = "u32" }
laws = ["commutative"]
reference = "add"
ptx = "add.{T} {out}, {a}, {b};"
kat.u32 = KATS
'''


class _Stand:
    """An independent backend (not the reference by name) computing the reference's results,
    except ``triage.add`` gives 5 where ``plant`` says so."""

    capabilities = frozenset()

    def __init__(self, registry, plant: bool = False) -> None:
        self.inner, self.plant, self.name = ReferenceBackend(registry), plant, "stand_in"

    def dispatch(self, program, inputs, config=None):
        outs = self.inner.dispatch(program, inputs, config)
        if self.plant and program.name == "triage_add_u32":
            outs[0] = np.where((np.asarray(inputs[0]) == 2) & (np.asarray(inputs[1]) == 2), np.uint32(5), outs[0])
        return outs


def _kat_failures(tmp_path, kats: str, backend=None):
    (tmp_path / "triage.toml").write_text(OPS.replace("KATS", kats))
    reg = vyre_decl.load_registry([tmp_path])
    assert not reg.errors, reg.errors
    backend = backend(reg) if backend else ReferenceBackend(reg)
    conf = Conformance(InProcessRunner(backend), reg, capsule_dir=None)
    (unit,) = [u for u in select_units(reg, load_corpus(), ops=["triage.add"]) if u.key == "op:triage.add[u32]"]
    return [f for f in conf.run(unit).failures if f.kind in ("kat", "reference")]


def test_a_single_wrong_known_answer_is_the_known_answers_fault(tmp_path):
    (f,) = _kat_failures(tmp_path, "[[2, 2, 5]]")
    assert f.kind == "kat" and "the known answer may be wrong" in f.message, f.message
    assert "reference is probably wrong" not in f.message and "1 of 1" not in f.message


def test_an_independent_backend_agreeing_with_the_reference_is_said(tmp_path):
    (f,) = _kat_failures(tmp_path, "[[2, 2, 5]]", lambda reg: _Stand(reg))
    assert f.kind == "kat" and "the reference and the backend agree" in f.message and "may be wrong" in f.message


def test_the_reference_is_blamed_on_evidence(tmp_path):
    (f,) = _kat_failures(tmp_path, "[[2, 2, 5]]", lambda reg: _Stand(reg, plant=True))
    assert f.kind == "reference" and "the backend meets the known answer" in f.message
    fs = _kat_failures(tmp_path, "[[2, 2, 1], [2, 3, 9], [2, 4, 0]]")
    assert {f.kind for f in fs} == {"reference"} and "3 of 3 known answers disagree" in fs[0].message
    (f,) = _kat_failures(tmp_path, "[[2, 2, 5], [2, 3, 5], [2, 4, 6]]")  # 1 of 3: the answer
    assert f.kind == "kat"
