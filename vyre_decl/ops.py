"""``python -m vyre_decl.ops``: the op-file command line (see vyre_decl.registry.cli)."""

import sys

from .registry.cli import main

if __name__ == "__main__":
    sys.exit(main())
