"""``python -m vyre_decl.cache``: what the on-disk cache holds, and emptying it.

    python -m vyre_decl.cache info            entries and bytes per kind, the directory and the cap
    python -m vyre_decl.cache clear [--kind K] delete every entry (of one kind: ptx, cubin, registry)

Exit status 0, or 2 on a usage error (or a bad ``VYRE_DECL_CACHE_MAX_MB``).
"""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

from .ir.diagnostics import VyreError
from .diskcache import MAX_ENV, cache_dir, clear, max_bytes, usage
from .clirun import run

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m vyre_decl.cache", description="Show or empty vyre_decl's on-disk cache.")
    sub = ap.add_subparsers(dest="command", required=True)
    sub.add_parser("info", help="entries and bytes per kind")
    c = sub.add_parser("clear", help="delete entries")
    c.add_argument("--kind", help="only this kind (ptx, cubin, registry, ...)")
    try:
        args = ap.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0) and 2
    root = cache_dir()
    if args.command == "info":
        try:
            cap = max_bytes()
        except VyreError as exc:
            print(exc, file=sys.stderr)
            return 2
        kinds = usage(root)
        print(f"cache: {root}  (cap {cap >> 20} MB, {MAX_ENV})")
        for kind, (n, b) in kinds.items():
            print(f"  {kind:12s} {n:7d} entries {b / 2**20:10.2f} MB")
        total = sum(b for _, b in kinds.values())
        print(f"  {'total':12s} {sum(n for n, _ in kinds.values()):7d} entries {total / 2**20:10.2f} MB")
        return 0
    gone = clear(args.kind, root)
    print(f"removed {gone} entr{'y' if gone == 1 else 'ies'}" + (f" of kind {args.kind}" if args.kind else "") + f" from {root}")
    return 0


if __name__ == "__main__":
    run(main)
