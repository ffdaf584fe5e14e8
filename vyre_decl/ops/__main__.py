"""``python -m vyre_decl.ops``: the op-file command line (see vyre_decl.ops.cli)."""

from ..clirun import run
from .cli import main

if __name__ == "__main__":
    run(main)
