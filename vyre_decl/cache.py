"""``python -m vyre_decl.cache``: what the on-disk cache holds, and emptying it.

    python -m vyre_decl.cache info             entries and bytes per kind, the directory and the cap
    python -m vyre_decl.cache clear [--kind K] delete every entry (of one kind: ptx, cubin, registry)

Only vyre_decl's own entries are counted and deleted (``cachedir.py`` says how they are known); a
missing cache directory is an empty cache and is not made. Exit status 0, or 2 on a usage error,
a bad ``VYRE_DECL_CACHE_MAX_MB`` (B008), a directory that is not vyre_decl's (B009, nothing in it
touched) or one that cannot be read (B010).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Sequence

from .ir.diagnostics import VyreError
from .cachedir import KINDS
from .diskcache import MAX_ENV, cache_dir, clear, max_bytes, usage
from .clirun import run

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m vyre_decl.cache", description="Show or empty vyre_decl's on-disk cache.")
    sub = ap.add_subparsers(dest="command", required=True)
    sub.add_parser("info", help="entries and bytes per kind")
    c = sub.add_parser("clear", help="delete entries")
    c.add_argument("--kind", choices=KINDS, help="only this kind")
    try:
        args = ap.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0) and 2
    root = cache_dir()
    try:
        if args.command == "info":
            _info(root, max_bytes())
        else:
            gone = clear(args.kind, root)
            print(f"removed {gone} entr{'y' if gone == 1 else 'ies'}" + (f" of kind {args.kind}" if args.kind else "")
                  + f" from {root}")
    except VyreError as exc:
        print(exc, file=sys.stderr)
        return 2
    except OSError as exc:
        print(VyreError.one("B010", f"the cache directory cannot be read: {exc}", str(root),
                            "make it a directory you can read and write, or point VYRE_DECL_CACHE_DIR elsewhere"),
              file=sys.stderr)
        return 2
    return 0


def _info(root: Path, cap: int) -> None:
    kinds = usage(root)
    print(f"cache: {root}  (cap {cap >> 20} MB, {MAX_ENV})")
    for kind, (n, b) in kinds.items():
        print(f"  {kind:12s} {n:7d} entries {b / 2**20:10.2f} MB")
    total = sum(b for _, b in kinds.values())
    print(f"  {'total':12s} {sum(n for n, _ in kinds.values()):7d} entries {total / 2**20:10.2f} MB")


if __name__ == "__main__":
    run(main)
