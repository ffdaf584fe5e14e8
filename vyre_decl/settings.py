"""Integer settings read from ``VYRE_DECL_*`` environment variables: one parser, one error (B008)
for a value that is not a whole number or is beyond ``MAX_SETTING``, so no setting is silently
replaced by its default and no setting can make a size overflow (or a 5,000-digit value reach
``int()``, which refuses it)."""

from __future__ import annotations

import os

from .ir.diagnostics import VyreError

__all__ = ["env_int", "MAX_SETTING"]

MAX_SETTING = 1 << 40  # above any count, device number or size in MB that makes sense


def env_int(name: str, default: int) -> int:
    """The value of environment variable ``name`` as a whole number (ASCII digits, at most
    ``MAX_SETTING``), ``default`` when unset or empty."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    shown = raw if len(raw) <= 40 else raw[:40] + "..."
    if not (raw.isascii() and raw.isdigit()):
        raise VyreError.one("B008", f"{name}={shown!r} is not a whole number", "environment",
                            f"set {name} to ASCII digits (e.g. {default}) or unset it")
    digits = raw.lstrip("0")
    if len(digits) > len(str(MAX_SETTING)) or int(digits or "0") > MAX_SETTING:
        raise VyreError.one("B008", f"{name}={shown!r} is too large (at most {MAX_SETTING})", "environment",
                            f"set {name} to a whole number up to {MAX_SETTING} (e.g. {default}) or unset it")
    return int(digits or "0")


def env_seconds(name: str) -> float | None:
    """The value of environment variable ``name`` as a positive, finite number of seconds (a
    decimal such as ``30`` or ``2.5``); None when unset or empty."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return None
    try:
        value = float(raw) if len(raw) <= 40 and raw.isascii() else float("nan")
    except ValueError:
        value = float("nan")
    if not 0 < value < float("inf"):
        shown = raw if len(raw) <= 40 else raw[:40] + "..."
        raise VyreError.one("B008", f"{name}={shown!r} is not a positive number of seconds", "environment",
                            f"set {name} to a number of seconds such as 30 or 2.5, or unset it (no bound)")
    return value
