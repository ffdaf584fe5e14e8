"""``python -m vyre_decl.ops``: list, show, check, scaffold and describe op files.

    python -m vyre_decl.ops list [--json] [--dialect NAME]
    python -m vyre_decl.ops show ID [--json]
    python -m vyre_decl.ops check [PATHS...] [--json]    exit 1 on any error
    python -m vyre_decl.ops new ID [--types u32,i32] [--arity 2] [--file PATH]
    python -m vyre_decl.ops schema                        JSON Schema of op files
"""

from __future__ import annotations

import argparse
import json
import sys
import tomllib
from pathlib import Path
from typing import Any, Sequence

from ..ir.scalars import format_literal
from ..ir.text import print_expr
from ..ir.types import VALUE_TYPES
from .loader import load
from .model import OpDef

__all__ = ["main"]


def _types_text(op: OpDef) -> str:
    parts = [f"{var}∈{{{','.join(t.value for t in allowed)}}}" for var, allowed in op.signature.type_vars]
    return " ".join(parts) or "-"


def _signature_text(op: OpDef) -> str:
    sig = op.signature
    ins = ", ".join(f"{p.name}: {p.type}" + (" (memory)" if p.memory else "") for p in sig.inputs)
    return f"({ins}) -> {sig.output.name}: {sig.output.type}"


def _op_json(op: OpDef) -> dict[str, Any]:
    sig = op.signature
    return {
        "id": op.id,
        "dialect": op.dialect,
        "summary": op.summary,
        "category": op.category,
        "atomic": op.is_atomic,
        "type_vars": {v: [t.value for t in a] for v, a in sig.type_vars},
        "inputs": [{"name": p.name, "type": p.type, "memory": p.memory} for p in sig.inputs],
        "output": {"name": sig.output.name, "type": sig.output.type},
        "attrs": [{"name": a.name, "type": a.dtype.value,
                   "default": None if a.default is None else format_literal(a.dtype, a.default)} for a in sig.attrs],
        "laws": [{"law": law.law, "element": law.element, "over": law.over,
                  "when": {v: [t.value for t in a] for v, a in law.when.items()} if law.when else None} for law in op.laws],
        "reference": [{"ufunc": r.ufunc, "kernel": r.kernel,
                       "when": {v: [t.value for t in a] for v, a in r.when.items()} if r.when else None}
                      for r in op.references],
        "compose": op.compose_text,
        "ptx_types": [",".join(t.value for t in b) or "-" for b in op.templates],
        "tolerance_ulp": {t.value: u for t, u in op.tolerance_ulp.items()},
        "kat_cases": sum(len(k.cases) for k in op.kats),
        "source": str(op.source),
    }


def _cmd_list(args: argparse.Namespace) -> int:
    reg = load()
    ops = [op for op in reg if not args.dialect or op.dialect == args.dialect]
    if args.json:
        print(json.dumps([_op_json(op) for op in ops], indent=2))
        return 0
    rows = [("id", "category", "types", "laws", "kats")]
    rows += [(op.id, op.category + (" atomic" if op.is_atomic else ""), _types_text(op), str(len(op.laws)),
              str(sum(len(k.cases) for k in op.kats))) for op in ops]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
    print(f"\n{len(ops)} ops in {len({op.dialect for op in ops})} dialects")
    return 0


def _cmd_show(args: argparse.Namespace) -> int:
    reg = load()
    if args.id not in reg:
        print(f"error: unknown op {args.id!r}. Fix: {reg.unknown_op_hint(args.id)}", file=sys.stderr)
        return 1
    op = reg.get(args.id)
    if args.json:
        print(json.dumps(_op_json(op), indent=2))
        return 0
    info = _op_json(op)
    print(f"{op.id}  ({op.category}{', atomic' if op.is_atomic else ''})")
    print(f"  {op.summary}")
    print(f"  signature : {_signature_text(op)}")
    print(f"  types     : {_types_text(op)}")
    if info["attrs"]:
        print(f"  attrs     : {', '.join(a['name'] + ': ' + a['type'] for a in info['attrs'])}")
    for law in info["laws"]:
        extra = "".join(f" {k}={v}" for k, v in law.items() if k != "law" and v is not None)
        print(f"  law       : {law['law']}{extra}")
    for ref in info["reference"]:
        what = f"ufunc {ref['ufunc']}" if ref["ufunc"] else f"kernel {ref['kernel']}"
        print(f"  reference : {what}" + (f" when {ref['when']}" if ref["when"] else ""))
    if op.compose is not None:
        print(f"  compose   : {print_expr(op.compose)}")
    print(f"  ptx       : {len(op.templates)} template(s)")
    print(f"  kats      : {info['kat_cases']} case(s)")
    print(f"  source    : {op.source}")
    return 0


def _cmd_check(args: argparse.Namespace) -> int:
    reg = load(args.paths, env=not args.paths)
    if args.json:
        print(json.dumps({"ops": len(reg), "dialects": len(reg.dialects),
                          "diagnostics": [d.as_dict() for d in reg.diagnostics]}, indent=2))
    else:
        for d in reg.diagnostics:
            print(d, file=sys.stderr)
        status = "FAILED" if reg.errors else "ok"
        print(f"{status}: {len(reg)} ops in {len(reg.dialects)} dialects from {len(reg.sources)} file(s); "
              f"{len(reg.errors)} error(s), {len(reg.diagnostics) - len(reg.errors)} note(s)/warning(s)")
    return 1 if reg.errors else 0


def _scaffold(op_id: str, types: list[str], arity: int) -> dict[str, Any]:
    names = ["a", "b", "c", "d"][:arity]
    return {
        "id": op_id,
        "summary": "TODO: one line saying what the op computes",
        "category": "composite",
        "type_vars": {"T": types},
        "inputs": [{"name": n, "type": "T"} for n in names],
        "outputs": [{"name": "out", "type": "T"}],
        "compose": names[0],
        "doc": "Scaffolded by `python -m vyre_decl.ops new`. Replace compose (or make the op intrinsic with "
        "reference + ptx templates), declare its laws and add [[op.kat]] known-answer tests.",
    }


def _cmd_new(args: argparse.Namespace) -> int:
    import tomli_w

    dialect, _, name = args.id.rpartition(".")
    if not dialect or not name:
        print(f"error: op id {args.id!r} needs a dialect prefix. Fix: write e.g. my_project.math.{args.id}",
              file=sys.stderr)
        return 2
    types = [t.strip() for t in args.types.split(",") if t.strip()]
    bad = [t for t in types if t not in {v.value for v in VALUE_TYPES}]
    if bad or not types or not 1 <= args.arity <= 4:
        print(f"error: bad --types {bad or args.types!r} or --arity {args.arity}. Fix: use value types "
              f"({', '.join(v.value for v in VALUE_TYPES)}) and an arity of 1 to 4", file=sys.stderr)
        return 2
    entry = _scaffold(args.id, types, args.arity)
    if args.file is None:
        print(tomli_w.dumps({"dialect": {"name": dialect, "version": "0.1.0", "summary": "TODO"}, "op": [entry]}))
        return 0
    path = Path(args.file)
    if not path.exists():
        path.write_text(tomli_w.dumps({"dialect": {"name": dialect, "version": "0.1.0", "summary": "TODO"}, "op": [entry]}))
        print(f"created {path} with op {args.id}")
        return 0
    existing = tomllib.loads(path.read_text(encoding="utf-8"))
    have = existing.get("dialect", {}).get("name")
    if have != dialect:
        print(f"error: {path} holds dialect {have!r}, not {dialect!r}. Fix: pick the file of dialect {dialect}",
              file=sys.stderr)
        return 2
    if any(o.get("id") == args.id for o in existing.get("op", [])):
        print(f"error: {path} already defines {args.id}. Fix: choose another id", file=sys.stderr)
        return 2
    with open(path, "a", encoding="utf-8") as fh:  # append, so the file's comments survive
        fh.write("\n" + tomli_w.dumps({"op": [entry]}))
    print(f"appended op {args.id} to {path}")
    return 0


def _cmd_schema(args: argparse.Namespace) -> int:
    from .schema import json_schema

    print(json.dumps(json_schema(), indent=2))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m vyre_decl.ops", description="Inspect and check vyre_decl op files.")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("list", help="list the registered ops")
    p.add_argument("--json", action="store_true")
    p.add_argument("--dialect")
    p.set_defaults(run=_cmd_list)
    p = sub.add_parser("show", help="show one op")
    p.add_argument("id")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=_cmd_show)
    p = sub.add_parser("check", help="validate op files (default: the standard ops and VYRE_DECL_OPS_PATH)")
    p.add_argument("paths", nargs="*", help="op files or directories to check together with the standard ops")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=_cmd_check)
    p = sub.add_parser("new", help="scaffold an op entry")
    p.add_argument("id")
    p.add_argument("--types", default="u32", help="comma-separated types of T (default u32)")
    p.add_argument("--arity", type=int, default=2)
    p.add_argument("--file", help="dialect file to create or append to (default: print)")
    p.set_defaults(run=_cmd_new)
    p = sub.add_parser("schema", help="print the JSON Schema of op files")
    p.set_defaults(run=_cmd_schema)
    args = parser.parse_args(argv)
    return int(args.run(args))
