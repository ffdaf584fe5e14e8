"""Immutable records: ``@record`` classes declare typed fields and get ``__init__``, equality,
hashing, ``repr``, pickling, pattern matching (``__match_args__``), ``__slots__`` and ``replace``.

The IR's nodes, op signatures and the registry's op model are records rather than frozen slotted
dataclasses because a dataclass generates and compiles six methods when its class is created:
~0.7 ms a class, 31 of the 58 ms a fresh process took to import, load the registry and make a
first reference dispatch (a 2-core machine). A record compiles ``__init__``, ``__eq__`` and
``__hash__`` in one go when the class's first instance is made (as fast as a dataclass's from
then on), and shares ``repr``, immutability and pickling through its base class. Type checkers see
records as frozen dataclasses (``dataclass_transform``). The decorator recreates the class with
``__slots__`` (as ``dataclass(slots=True)`` does) rather than using a metaclass: a metaclass would
take ``isinstance`` off CPython's fast path.

Fields are the class's annotations, in order, after those of its record bases; a class attribute
of the same name is the default (immutable values only); ``__post_init__`` runs after ``__init__``
and may set fields with ``object.__setattr__``.
"""

from __future__ import annotations

from typing import Any, ClassVar, TypeVar, dataclass_transform

__all__ = ["Record", "record", "FrozenRecordError", "replace"]

R = TypeVar("R")
T = TypeVar("T", bound=type)


class FrozenRecordError(AttributeError):
    """A field of a record was assigned or deleted."""


def _is_field(annotation: object) -> bool:
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")
    return not str(text).startswith(("ClassVar", "typing.ClassVar", "Final"))


def _first_init(self: Any, *args: Any, **kwargs: Any) -> None:
    _compile_methods(type(self))["__init__"](self, *args, **kwargs)


def _first_eq(self: Any, other: object) -> Any:
    return _compile_methods(type(self))["__eq__"](self, other)


def _first_hash(self: Any) -> int:
    return int(_compile_methods(type(self))["__hash__"](self))


_FIRST = {"__init__": _first_init, "__eq__": _first_eq, "__hash__": _first_hash}


class Record:
    """Base of ``@record`` classes: immutability, ``repr`` and pickling over the fields."""

    __slots__ = ()
    __fields__: ClassVar[tuple[str, ...]] = ()
    __defaults__: ClassVar[dict[str, Any]] = {}

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in type(self).__fields__)
        return f"{type(self).__name__}({shown})"

    def __setattr__(self, name: str, value: Any) -> None:
        raise FrozenRecordError(f"cannot assign to field {name!r} of a {type(self).__name__}")

    def __delattr__(self, name: str) -> None:
        raise FrozenRecordError(f"cannot delete field {name!r} of a {type(self).__name__}")

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), tuple(getattr(self, name) for name in type(self).__fields__))

    def __replace__(self, **changes: Any) -> Any:  # copy.replace (Python 3.13)
        return replace(self, **changes)


@dataclass_transform(eq_default=True, frozen_default=True)
def record(cls: T) -> T:
    """Make ``cls`` (a subclass of ``Record``) a record: its fields, defaults and slots."""
    if not issubclass(cls, Record):
        raise TypeError(f"@record class {cls.__name__} must derive from Record")
    inherited: tuple[str, ...] = ()
    defaults: dict[str, Any] = {}
    for base in cls.__mro__[1:]:
        if "__fields__" in base.__dict__:
            inherited = base.__dict__["__fields__"]
            defaults.update(base.__dict__["__defaults__"])
            break
    ns = dict(cls.__dict__)
    own = tuple(n for n, a in ns.get("__annotations__", {}).items() if _is_field(a) and n not in inherited)
    for name in own:
        if name in ns:
            defaults[name] = ns.pop(name)
    for name in ("__dict__", "__weakref__"):
        ns.pop(name, None)
    ns["__slots__"] = own
    for method, first in _FIRST.items():  # each class its own, compiled on first use
        ns.setdefault(method, first)
    ns["__fields__"] = inherited + own
    ns["__defaults__"] = defaults
    ns["__match_args__"] = inherited + own
    return type(cls.__name__, cls.__bases__, ns)  # type: ignore[return-value]


def _compile_methods(cls: type) -> dict[str, Any]:
    """``cls``'s own ``__init__``, ``__eq__`` and ``__hash__``, compiled when its first instance is
    made and kept on the class: straight-line code, as fast as a dataclass's, paid only for the
    classes a process uses. A method the class body defines is left alone."""
    fields: tuple[str, ...] = cls.__fields__  # type: ignore[attr-defined]
    defaults: dict[str, Any] = cls.__defaults__  # type: ignore[attr-defined]
    params: list[str] = []
    for name in fields:
        if name in defaults:
            params.append(f"{name}=_default_{name}")
        elif params and "=" in params[-1] and "*" not in params:
            params += ["*", name]  # a required field after a defaulted one: keyword only
        else:
            params.append(name)
    init = [f"    _set(self, {name!r}, {name})" for name in fields]
    if hasattr(cls, "__post_init__"):
        init.append("    self.__post_init__()")
    mine, theirs = (f"({''.join(f'{w}.{n}, ' for n in fields)})" for w in ("self", "other"))
    source = "\n".join([
        f"def __init__(self, {', '.join(params)}):", *(init or ["    pass"]),
        "def __eq__(self, other):",
        f"    return {mine} == {theirs} if other.__class__ is self.__class__ else NotImplemented",
        "def __hash__(self):",
        f"    return hash({mine})", ""])
    namespace: dict[str, Any] = {"_set": object.__setattr__, **{f"_default_{n}": v for n, v in defaults.items()}}
    exec(compile(source, f"<record {cls.__qualname__}>", "exec"), namespace)  # noqa: S102 - our own field names
    methods = {}
    for method, first in _FIRST.items():
        current = cls.__dict__.get(method)
        if current is first:  # not written by the class itself
            namespace[method].__qualname__ = f"{cls.__qualname__}.{method}"
            type.__setattr__(cls, method, namespace[method])
        methods[method] = getattr(cls, method)
    return methods


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
