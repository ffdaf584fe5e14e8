"""``python -m vyre_decl.conform`` (see vyre_decl.conform.cli)."""

from ..clirun import run
from .cli import main

if __name__ == "__main__":
    run(main)
