"""``python -m vyre_decl.emit PROGRAM.vyre [--target sm_90] [-o out.ptx] [--check]``: ahead-of-time PTX.

Reads a program in the text form, validates it against the registry (standard ops plus
VYRE_DECL_OPS_PATH) and writes its PTX to ``-o`` (default: stdout). ``--check`` also assembles
the result with ptxas for the target. Exit status: 0 on success, 1 on an invalid program or an
assembler error, 2 on usage errors.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..ir.diagnostics import VyreError
from ..ir.parser import read_program
from ..ir.text import parse_program
from .module import emit
from .ptxas import assemble
from .target import DEFAULT_TARGET, choose_target
from ..clirun import run


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m vyre_decl.emit", description="Emit PTX for a .vyre program.")
    ap.add_argument("program", help="program file in the text form (.vyre)")
    ap.add_argument("--target", default=DEFAULT_TARGET, help=f"sm_XY (default {DEFAULT_TARGET})")
    ap.add_argument("-o", "--output", help="write the PTX here (default: stdout)")
    ap.add_argument("--check", action="store_true", help="assemble the PTX with ptxas")
    args = ap.parse_args(argv)
    try:
        src = read_program(args.program)  # P009 unreadable, P010 not UTF-8, P011 too long
    except VyreError as exc:
        print(exc, file=sys.stderr)
        return 2
    try:
        target = choose_target(None, args.target)
        module = emit(parse_program(src, filename=args.program), target=target)
        if args.check:
            assemble(module.text, target.name)
    except VyreError as exc:
        print(exc, file=sys.stderr)
        return 1
    if args.output:
        Path(args.output).write_text(module.text)
        print(f"wrote {args.output}: {module.entry}, {target}" + (", assembled by ptxas" if args.check else ""),
              file=sys.stderr)
    else:
        sys.stdout.write(module.text)
    return 0


if __name__ == "__main__":
    run(main)
