"""``python -m vyre_decl.conform`` (see vyre_decl.conform.cli)."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
