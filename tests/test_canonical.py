"""Canonical JSON and the content hash: stable across processes and independent of ordering."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from vyre_decl.ir import DataType, Lit, Op, Program, Let, canonical, dumps, parse_program

ROOT = Path(__file__).resolve().parent.parent
SRC = """program vadd workgroup(64, 1, 1) {
  buffer a: read u32[] @0
  buffer b: read u32[] @1
  buffer out: write u32[len(a)] @2
  let i = gid.x
  if i < len(out) {
    out[i] = a[i] + b[i]
  }
}
"""
# Pinned: changing the canonical form changes every cache key, so it must be a deliberate act.
PINNED = "f303c28f627e096dedc4073c951df2a824b5e62d814c4f0c3f9e99b5540acf3c"


def test_hash_is_pinned_and_stable_across_processes():
    h = parse_program(SRC).content_hash()
    code = f"from vyre_decl.ir import parse_program; print(parse_program({SRC!r}).content_hash())"
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONHASHSEED="12345")
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout
    assert other.strip() == h == PINNED


def test_attribute_and_type_argument_order_does_not_matter():
    k, m = ("k", Lit.of(DataType.U32, 1)), ("m", Lit.of(DataType.F32, 2.0))
    one = Op("x.y", (), (k, m), (("A", DataType.U32), ("B", DataType.I32)))
    two = Op("x.y", (), (m, k), (("B", DataType.I32), ("A", DataType.U32)))
    p1, p2 = (Program((), (1, 1, 1), (Let("v", o),)) for o in (one, two))
    assert p1 == p2 and dumps(p1) == dumps(p2) and p1.content_hash() == p2.content_hash()


def test_any_change_changes_the_hash():
    base = parse_program(SRC)
    for variant in (SRC.replace("a[i] + b[i]", "b[i] + a[i]"), SRC.replace("64", "32"), SRC.replace("@2", "@3"),
                    SRC.replace("vadd", "vadd2")):
        assert parse_program(variant).content_hash() != base.content_hash()


def test_json_is_canonical_text():
    text = dumps(parse_program(SRC))
    assert " " not in text and text.startswith('{"body"')
    assert canonical.loads(text) == parse_program(SRC)
