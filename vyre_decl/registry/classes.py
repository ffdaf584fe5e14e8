"""Classes: the one way op files and routine files share keys (``[class.NAME]`` and ``class = "NAME"``).

One rule for both kinds of file (docs/ops-format.md, docs/routines.md): a ``[class.NAME]`` table
holds any keys of an entry of the file (an op, a routine) except ``id`` and ``class``, so a class
never names another class (no nesting, no cycles); an entry with ``class = "NAME"`` takes every
key of that class it does not give itself, and a key it gives replaces the class's whole (no
table or list is merged). A class name is a lowercase identifier, and a class that no entry
uses is an error, since nothing would check its keys. The shape of the class tables is checked
with the rest of the file's schema (``schema.check_classes``); the problems here come back
without a code, and each kind of file reports them with its own (R028 ops, U005 routines).
"""

from __future__ import annotations

import re
from typing import Any, Final, Mapping, Sequence

from .schema import Problem

__all__ = ["CLASS_NAME", "ENTRY_ONLY", "class_problems", "with_class"]

CLASS_NAME: Final = re.compile(r"[a-z_][a-z0-9_]*\Z")
ENTRY_ONLY: Final = ("id", "class")  # keys of an entry that a class cannot give


def class_problems(classes: Mapping[str, Any], entries: Sequence[Mapping[str, Any]], kind: str) -> list[Problem]:
    """Each badly named class, each class that no entry (``kind``: op, routine) names, and each
    entry whose ``class`` names no class of the file."""
    out: list[Problem] = []
    used = {e.get("class") for e in entries}
    for name in classes:
        fld = f"class.{name}"
        if not CLASS_NAME.match(name):
            out.append((None, fld, f"bad class name {name[:60]!r}", "use a lowercase identifier, e.g. [class.binary]"))
        elif name not in used:
            out.append((None, fld, f"class {name!r} is used by no {kind}, so nothing checks it",
                        f'remove it or give {"an" if kind[0] in "aeiou" else "a"} {kind} class = "{name}"'))
    known = ", ".join(sorted(classes)) or "(none)"
    for e in entries:
        cname = e.get("class")
        if cname is not None and cname not in classes:
            owner = e.get("id") if isinstance(e.get("id"), str) else None
            out.append((owner, "class", f"unknown class {str(cname)[:60]!r}",
                        f"define [class.{str(cname)[:60]}] in this file or use one of {known}"))
    return out


def with_class(entry: Mapping[str, Any], classes: Mapping[str, Mapping[str, Any]],
               ) -> tuple[dict[str, Any], frozenset[str]] | None:
    """The entry's keys over those of its class, without ``id`` and ``class``, and the keys
    taken from the class; None when ``class`` names no class of the file (``class_problems``
    reports it)."""
    own = {k: v for k, v in entry.items() if k not in ENTRY_ONLY}
    name = entry.get("class")
    if name is None:
        return own, frozenset()
    cls = classes.get(name)
    if cls is None:
        return None
    return {**cls, **own}, frozenset(k for k in cls if k not in own)
