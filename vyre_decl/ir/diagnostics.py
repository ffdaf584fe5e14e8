"""Diagnostics: what went wrong, where, and how to fix it.

Every error a user can cause is a ``Diagnostic`` with a stable ``code`` (``V...`` for program
validation, ``P...`` for the text parser, ``R...`` for op files, ``D...`` for dispatch), a
location (a node path such as ``body[2].then[0].value.args[1]``, or ``file:line:col``, or
``file › op › field``), a message and a ``Fix:`` hint. ``VyreError`` carries one or more of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Literal

__all__ = ["Diagnostic", "VyreError", "Severity", "message_and_fix"]

Severity = Literal["error", "warning", "note"]


@dataclass(frozen=True, slots=True)
class Diagnostic:
    code: str
    message: str
    location: str
    fix: str
    severity: Severity = "error"

    def __str__(self) -> str:
        where = f"{self.location}: " if self.location else ""
        return f"{where}{self.severity} {self.code}: {self.message}. Fix: {self.fix}"

    def as_dict(self) -> dict[str, str]:
        return {
            "code": self.code,
            "severity": self.severity,
            "location": self.location,
            "message": self.message,
            "fix": self.fix,
        }


class VyreError(ValueError):
    """An error the user caused, carrying its diagnostics."""

    def __init__(self, diagnostics: Iterable[Diagnostic] | Diagnostic, summary: str = "") -> None:
        diags = (diagnostics,) if isinstance(diagnostics, Diagnostic) else tuple(diagnostics)
        self.diagnostics: tuple[Diagnostic, ...] = diags
        self.summary = summary
        lines = [summary] if summary else []
        lines += [str(d) for d in diags]
        super().__init__("\n".join(lines))

    def __reduce__(self) -> tuple[object, ...]:
        # pickled as its diagnostics (an error raised in a worker process arrives whole), not as
        # the message that Exception's default would pass back to __init__
        return (type(self), (self.diagnostics, self.summary), self.__dict__)

    @property
    def codes(self) -> list[str]:
        return [d.code for d in self.diagnostics]

    def within(self, context: str) -> VyreError:
        """The same error (class and diagnostics) with ``context`` leading its summary line."""
        return type(self)(self.diagnostics, f"{context}: {self.summary}" if self.summary else context)

    @classmethod
    def one(cls, code: str, message: str, location: str, fix: str) -> VyreError:
        return cls(Diagnostic(code, message, location, fix))


def message_and_fix(exc: BaseException, default_fix: str = "fix the value") -> tuple[str, str]:
    """The text of an error that ends in ``" Fix: ..."`` (as the scalar, type-set and template
    errors do), split into its message (without the closing period) and its fix."""
    message, _, fix = str(exc).partition(" Fix: ")
    return message.rstrip("."), fix or default_fix


def nested_too_deeply(what: str) -> VyreError:
    """The error of a traversal (hashing, printing, JSON) that ran out of Python's stack on a
    pathologically deep program: validation would refuse it too (V015/V016)."""
    return VyreError.one("V016", f"the program is nested too deeply to {what}", "program",
                         "split deep expressions with let bindings and flatten nested blocks (validation allows "
                         "128 expression levels and 64 statement levels)")
