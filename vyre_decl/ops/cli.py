"""``python -m vyre_decl.ops``: the op author's command line.

    python -m vyre_decl.ops list [--json] [--dialect NAME]
    python -m vyre_decl.ops show ID [--json]
    python -m vyre_decl.ops check [PATHS...] [--json] [--no-ptxas] [--no-sim]   exit 1 on any error
    python -m vyre_decl.ops laws [OPS...] [--suggest] [--json]        the catalogue, or what to declare
    python -m vyre_decl.ops new ID [--types u32,i32] [--arity 2] [--file PATH]
    python -m vyre_decl.ops schema [--routines]                       JSON Schema of op (routine) files
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import sys
import time
import tomllib
from pathlib import Path
from typing import Any, Sequence

from ..ir.scalars import format_literal
from ..ir.types import VALUE_TYPES
from ..registry import CATALOGUE, OpDef, Registry, load

__all__ = ["main"]


def _types_text(op: OpDef) -> str:
    parts = [f"{var}∈{{{','.join(t.value for t in allowed)}}}" for var, allowed in op.signature.type_vars]
    return " ".join(parts) or "-"


def _signature_text(op: OpDef) -> str:
    sig = op.signature
    ins = ", ".join(("mem " if p.memory else "") + f"{p.name}: {p.type}" for p in sig.inputs)
    attrs = ", ".join(f"{a.name}: {a.dtype}" + ("" if a.default is None else f" = {format_literal(a.dtype, a.default)}")
                      for a in sig.attrs)
    return f"({ins}{'; ' + attrs if attrs else ''}) -> {sig.output.name}: {sig.output.type}"


def _op_json(op: OpDef) -> dict[str, Any]:
    return {
        "id": op.id,
        "dialect": op.dialect,
        "summary": op.summary,
        "category": op.category,
        "atomic": op.is_atomic,
        "signature": _signature_text(op),
        "type_vars": {v: [t.value for t in a] for v, a in op.signature.type_vars},
        "laws": [law.text for law in op.laws],
        "waive": dict(op.waivers),
        "reference": {",".join(t.value for t in b) or "-": name for b, name in op.references.items()},
        "compose": op.compose_text,
        "ptx_types": [",".join(t.value for t in b) or "-" for b in op.templates],
        "ulp": {t.value: u for t, u in op.accuracy_ulp.items()},
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
    info = _op_json(op)
    if args.json:
        print(json.dumps(info, indent=2))
        return 0
    print(f"{op.id}  ({op.category}{', atomic' if op.is_atomic else ''})")
    print(f"  {op.summary}")
    print(f"  signature : {info['signature']}")
    print(f"  types     : {_types_text(op)}")
    for law in info["laws"]:
        print(f"  law       : {law}")
    for name, why in info["waive"].items():
        print(f"  waived    : {name} ({why})")
    for types, name in info["reference"].items():
        print(f"  reference : {name}" + (f" for {types}" if types != "-" else ""))
    if op.compose_text is not None:
        print(f"  compose   : {' '.join(op.compose_text.split())}")
    print(f"  ptx       : {len(op.templates)} template(s)")
    print(f"  kats      : {info['kat_cases']} case(s)")
    print(f"  source    : {op.source}")
    return 0


def _cmd_check(args: argparse.Namespace) -> int:
    from .check import check_scaffold, check_semantics, check_templates
    from .simcheck import check_templates_on_sim

    t0 = time.perf_counter()
    reg = load(args.paths, env=not args.paths)
    diags = list(reg.diagnostics)
    checked = _checked_ops(reg, args.paths)
    sim = None
    if not reg.errors:
        diags += check_scaffold(checked) + check_semantics(reg, checked)
        if not args.no_ptxas:
            diags += check_templates(reg, checked)
        if not args.no_sim:
            sim = check_templates_on_sim(reg, checked)
            diags += sim.diagnostics
    routines, device_summary = None, ""
    if not reg.errors:  # routine files beside the op files: loaded, every binding compiled, known answers run
        from .routinecheck import check_routines

        routines = check_routines(reg, only_paths=bool(args.paths))
        diags += routines.diagnostics
        if args.paths and routines.kats and not args.no_sim and not any(d.severity == "error" for d in diags):
            from .devicekats import run_device_kats  # the GPU, or the simulated H100 standing in for it

            on_device = run_device_kats(args.paths)
            diags += on_device.diagnostics
            device_summary = on_device.summary()
    errors = [d for d in diags if d.severity == "error"]
    if args.json:
        print(json.dumps({"ops": len(reg), "checked": len(checked), "dialects": len(reg.dialects),
                          "simulated": None if sim is None else sim.as_dict(),
                          "routines": None if routines is None else routines.as_dict(),
                          "diagnostics": [d.as_dict() for d in diags]}, indent=2))
    else:
        for d in diags:
            print(d, file=sys.stderr)
        status = "FAILED" if errors else "ok"
        ran = sim.summary() if sim is not None else "no template executed: " + (
            "a file was rejected" if reg.errors else "--no-sim")
        if routines is not None:
            ran += "; " + routines.summary()
        if device_summary:
            ran += "; " + device_summary
        print(f"{status}: {len(checked)} ops checked ({len(reg)} loaded from {len(reg.sources)} file(s)); {ran}; "
              f"{len(errors)} error(s), {len(diags) - len(errors)} note(s)/warning(s) "
              f"in {time.perf_counter() - t0:.2f} s")
    return 1 if errors else 0


def _checked_ops(reg: Registry, paths: Sequence[str]) -> list[OpDef]:
    """The ops ``ops check PATHS`` checks beyond loading: those of the files under PATHS (the
    standard library loads beside them for their compositions, and is the project's tests'
    business); every op without paths."""
    if not paths:
        return list(reg)
    roots = [Path(p).resolve() for p in paths]
    return [op for op in reg if any(r == Path(op.source).resolve() or r in Path(op.source).resolve().parents
                                    for r in roots)]


def _selected(reg: Registry, globs: Sequence[str]) -> list[OpDef]:
    return [op for op in reg if not globs or any(fnmatch.fnmatchcase(op.id, g) for g in globs)]


def _cmd_laws(args: argparse.Namespace) -> int:
    reg = load()
    if not args.suggest:
        rows = [(k.name, "/".join(map(str, k.arity)), k.element or "-", "op" if k.over else "-", k.summary)
                for k in CATALOGUE.values()]
        if args.json:
            print(json.dumps([dict(zip(("law", "operands", "element", "over", "summary"), r)) for r in rows], indent=2))
            return 0
        for r in [("law", "operands", "element", "over", "meaning")] + rows:
            print(f"{r[0]:20s} {r[1]:8s} {r[2]:8s} {r[3]:5s} {r[4]}")
        return 0
    from .suggest import suggest_laws

    ops = _selected(reg, args.ops)
    if not ops:
        print(f"error: no op matches {' '.join(args.ops)}. Fix: give op ids or globs such as 'primitive.math.*'",
              file=sys.stderr)
        return 2
    found = suggest_laws(reg, ops)
    if args.json:
        print(json.dumps([{"op": s.op, "law": s.law, "types": [",".join(t.value for t in b) or "-" for b in s.bindings]}
                          for s in found], indent=2))
    else:
        for s in found:
            print(f'{s.op}: "{s.law}"')
        print(f"{len(found)} undeclared law(s) hold in {len(ops)} op(s); declare them in laws = [...] or waive them "
              "with waive.<law> = \"why\"" if found else f"ok: every law that holds in {len(ops)} op(s) is declared or waived")
    return 1 if found else 0


def _scaffold(op_id: str, types: list[str], arity: int) -> dict[str, Any]:
    names = ["a", "b", "c", "d"][:arity]
    return {
        "id": op_id,
        "summary": "TODO: one line saying what the op computes",
        "signature": f"({', '.join(n + ': T' for n in names)}) -> T",
        "types": {"T": ",".join(types)},
        "compose": names[0],
        "doc": "Scaffolded by `python -m vyre_decl.ops new`. Replace compose (or give a reference function and PTX "
        "templates), declare its laws (`ops laws --suggest`) and add known answers (kat.<type> = [[...]]).",
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
    head = {"dialect": {"name": dialect, "version": "0.1.0", "summary": "TODO"}}
    if args.file is None:
        print(tomli_w.dumps({**head, "op": [entry]}))
        return 0
    path = Path(args.file)
    if not path.exists():
        path.write_text(tomli_w.dumps({**head, "op": [entry]}))
        print(f"created {path} with op {args.id}")
        return 0
    try:
        existing = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, ValueError) as exc:
        print(f"error: cannot read {path}: {exc}. Fix: repair the file or choose another", file=sys.stderr)
        return 2
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
    from ..registry.schema import json_schema

    if args.routines:
        from ..routines.schema import json_schema as routine_schema

        print(json.dumps(routine_schema(), indent=2))
        return 0
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
    p = sub.add_parser("check", help="load op files, run their known answers and laws on the reference, "
                       "assemble their templates and execute them on the simulated GPU against the reference "
                       "(default: the standard ops and VYRE_DECL_OPS_PATH)")
    p.add_argument("paths", nargs="*", help="op files or directories to check together with the standard ops")
    p.add_argument("--json", action="store_true")
    p.add_argument("--no-ptxas", action="store_true", help="do not assemble the templates")
    p.add_argument("--no-sim", action="store_true", help="do not execute the templates on the simulated GPU, nor the known answers of the routines of PATHS on a CUDA device (the simulated H100 without a GPU)")
    p.set_defaults(run=_cmd_check)
    p = sub.add_parser("laws", help="the law catalogue; with --suggest, laws that hold but are not declared")
    p.add_argument("ops", nargs="*", help="op ids or globs (default: every op)")
    p.add_argument("--suggest", action="store_true")
    p.add_argument("--json", action="store_true")
    p.set_defaults(run=_cmd_laws)
    p = sub.add_parser("new", help="scaffold an op entry")
    p.add_argument("id")
    p.add_argument("--types", default="u32", help="comma-separated types of T (default u32)")
    p.add_argument("--arity", type=int, default=2)
    p.add_argument("--file", help="dialect file to create or append to (default: print)")
    p.set_defaults(run=_cmd_new)
    p = sub.add_parser("schema", help="print the JSON Schema of op files (--routines: of routine files)")
    p.add_argument("--routines", action="store_true", help="the schema of *.routines.toml files")
    p.set_defaults(run=_cmd_schema)
    args = parser.parse_args(argv)
    return int(args.run(args))
