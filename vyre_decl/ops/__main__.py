"""``python -m vyre_decl.ops``: the op-file command line (see vyre_decl.ops.cli)."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
