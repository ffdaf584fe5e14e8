"""Running a command-line entry point: exit with its status, and end quietly when whoever reads
its output goes away (``python -m vyre_decl.ops list | head``) instead of printing a traceback."""

from __future__ import annotations

import os
import sys
from typing import Callable, NoReturn

__all__ = ["run"]


def run(main: Callable[[], int]) -> NoReturn:
    try:
        status = main()
        sys.stdout.flush()  # a closed pipe shows here at the latest, not at interpreter exit
    except BrokenPipeError:
        # the reader is gone: what is left to print has nowhere to go, and Python's own flush of
        # stdout at exit must not fail again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        status = 1
    sys.exit(status)
