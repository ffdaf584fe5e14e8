"""Integer settings read from ``VYRE_DECL_*`` environment variables: one parser, one error (B008)
for a value that is not a whole number, so no setting is silently replaced by its default."""

from __future__ import annotations

import os

from .ir.diagnostics import VyreError

__all__ = ["env_int"]


def env_int(name: str, default: int) -> int:
    """The value of environment variable ``name`` as a whole number (ASCII digits), ``default``
    when unset or empty."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    if not (raw.isascii() and raw.isdigit()):
        raise VyreError.one("B008", f"{name}={raw!r} is not a whole number", "environment",
                            f"set {name} to ASCII digits (e.g. {default}) or unset it")
    return int(raw)
