"""Immutable records: classes that declare typed fields and get ``__init__``, equality, hashing,
``repr``, pickling, pattern matching (``__match_args__``), ``__slots__`` and ``replace`` from one
base class.

The IR's nodes and the registry's op model are records rather than dataclasses because a frozen,
slotted dataclass generates and compiles its methods when its class is created: ~0.7 ms a class,
which was 31 ms of a 58 ms fresh-process first dispatch (import, registry, reference dispatch; a
2-core machine). A record's methods are written once, here. Type checkers see records as frozen
dataclasses (``dataclass_transform``).

Fields are the class's annotations, in order, after those of its record bases; a class attribute
of the same name is the default (immutable values only); ``__post_init__`` runs after ``__init__``
and may set fields with ``object.__setattr__``.
"""

from __future__ import annotations

from typing import Any, ClassVar, TypeVar, dataclass_transform

__all__ = ["Record", "RecordMeta", "FrozenRecordError", "replace"]

_MISSING: Any = object()
R = TypeVar("R")


class FrozenRecordError(AttributeError):
    """A field of a record was assigned or deleted."""


def _is_field(annotation: object) -> bool:
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")
    return not str(text).startswith(("ClassVar", "typing.ClassVar", "Final"))


@dataclass_transform(eq_default=True, frozen_default=True)
class RecordMeta(type):
    """Collects a record class's fields and defaults and gives it ``__slots__``."""

    def __new__(mcls, name: str, bases: tuple[type, ...], ns: dict[str, Any], **kwargs: Any) -> RecordMeta:
        inherited: tuple[str, ...] = ()
        defaults: dict[str, Any] = {}
        for base in bases:
            inherited += tuple(f for f in getattr(base, "__fields__", ()) if f not in inherited)
            defaults.update(getattr(base, "__defaults__", {}))
        own = tuple(n for n, a in ns.get("__annotations__", {}).items() if _is_field(a) and n not in inherited)
        for field_name in own:
            if field_name in ns:
                defaults[field_name] = ns.pop(field_name)
        fields = inherited + own
        ns.setdefault("__slots__", own)
        ns["__fields__"] = fields
        ns["__defaults__"] = defaults
        ns["__match_args__"] = fields
        return super().__new__(mcls, name, bases, ns, **kwargs)


class Record(metaclass=RecordMeta):
    """Base of immutable records (see the module docstring)."""

    __slots__ = ()
    __fields__: ClassVar[tuple[str, ...]] = ()
    __defaults__: ClassVar[dict[str, Any]] = {}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        cls = type(self)
        fields = cls.__fields__
        if len(args) > len(fields):
            raise TypeError(f"{cls.__name__}() takes {len(fields)} arguments, {len(args)} were given")
        set_field = object.__setattr__
        for name, value in zip(fields, args):
            set_field(self, name, value)
        for name in fields[len(args):]:
            value = kwargs.pop(name, _MISSING)
            if value is _MISSING:
                value = cls.__defaults__.get(name, _MISSING)
                if value is _MISSING:
                    raise TypeError(f"{cls.__name__}() is missing the argument {name!r}")
            set_field(self, name, value)
        if kwargs:
            raise TypeError(f"{cls.__name__}() got unexpected or repeated arguments {sorted(kwargs)}")
        post_init = getattr(self, "__post_init__", None)
        if post_init is not None:
            post_init()

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in type(self).__fields__)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in type(self).__fields__)
        return f"{type(self).__name__}({shown})"

    def __setattr__(self, name: str, value: Any) -> None:
        raise FrozenRecordError(f"cannot assign to field {name!r} of a {type(self).__name__}")

    def __delattr__(self, name: str) -> None:
        raise FrozenRecordError(f"cannot delete field {name!r} of a {type(self).__name__}")

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), self._values())


def replace(record: R, **changes: Any) -> R:
    """A copy of ``record`` with ``changes`` to its fields (a record's, or a dataclass's such as a
    ``Program``)."""
    if not isinstance(record, Record):
        import dataclasses

        return dataclasses.replace(record, **changes)  # type: ignore[type-var]
    values = {name: getattr(record, name) for name in type(record).__fields__}
    unknown = set(changes) - set(values)
    if unknown:
        raise TypeError(f"{type(record).__name__} has no field(s) {sorted(unknown)}")
    values.update(changes)
    return type(record)(**values)
