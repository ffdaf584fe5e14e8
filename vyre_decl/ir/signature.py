"""Op signatures as the IR sees them: typed inputs, one output, type variables and attributes.

The registry builds an ``OpSignature`` for every op it loads; validation and the interpreters
only need this view (``OpTable``), so the IR does not depend on the registry.
"""

from __future__ import annotations

import itertools
from typing import Mapping, Protocol, Sequence

from .record import Record, record
from .types import DataType

__all__ = ["Param", "AttrSig", "OpSignature", "OpTable", "SignatureError", "Binding"]

Binding = tuple[DataType, ...]
"""The types bound to an op's type variables, in declaration order."""


class SignatureError(ValueError):
    """Arguments that do not fit a signature; ``code`` is the validation code to report."""

    def __init__(self, code: str, message: str, fix: str) -> None:
        super().__init__(message)
        self.code, self.message, self.fix = code, message, fix


@record
class Param(Record):
    name: str
    type: str  # a concrete type name or a type variable name
    memory: bool = False  # the memory operand of an atomic op


@record
class AttrSig(Record):
    name: str
    dtype: DataType
    default: int | None = None  # bit pattern, None = required


@record
class OpSignature(Record):
    op_id: str
    inputs: tuple[Param, ...]
    output: Param
    type_vars: tuple[tuple[str, tuple[DataType, ...]], ...] = ()
    attrs: tuple[AttrSig, ...] = ()
    combos: tuple[Binding, ...] | None = None  # the allowed bindings when not every combination is

    def bindings(self) -> tuple[Binding, ...]:
        """Every allowed binding of the type variables, in declaration order."""
        if self.combos is not None:
            return self.combos
        return tuple(itertools.product(*(allowed for _, allowed in self.type_vars)))

    @property
    def is_atomic(self) -> bool:
        return bool(self.inputs) and self.inputs[0].memory

    @property
    def operands(self) -> tuple[Param, ...]:
        """The inputs an expression supplies (all but an atomic op's memory operand)."""
        return self.inputs[1:] if self.is_atomic else self.inputs

    def type_var_names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.type_vars)

    def free_type_vars(self) -> tuple[str, ...]:
        """Type variables no input determines; a use of the op must bind them explicitly."""
        used = {p.type for p in self.inputs}
        return tuple(name for name, _ in self.type_vars if name not in used)

    def resolve(self, type_name: str, binding: Mapping[str, DataType]) -> DataType:
        return binding[type_name] if type_name in binding else DataType(type_name)

    def bind(
        self, arg_types: Sequence[DataType], explicit: Mapping[str, DataType] = {}
    ) -> tuple[Binding, DataType]:
        """Bind type variables from the argument types (all inputs, memory operand included)
        and the explicit type arguments; returns the binding and the result type."""
        if len(arg_types) != len(self.inputs):
            n_given, n_want = len(arg_types), len(self.inputs)
            if self.is_atomic:
                n_given, n_want = n_given - 1, n_want - 1
            names = ", ".join(p.name for p in self.operands)
            raise SignatureError(
                "V006",
                f"{self.op_id} takes {n_want} argument(s) ({names}), got {n_given}",
                f"pass exactly {n_want} argument(s)",
            )
        vars_ = dict(self.type_vars)
        bound = self._bind_explicit(explicit, vars_)
        self._bind_args(arg_types, vars_, bound)
        self._check_bound(bound)
        binding = tuple(bound[name] for name, _ in self.type_vars)
        if self.combos is not None and binding not in self.combos:
            shown = ", ".join(f"{v}={t}" for (v, _), t in zip(self.type_vars, binding))
            raise SignatureError(
                "V007",
                f"{self.op_id} does not accept the combination {shown}",
                f"use one of its combinations: {'; '.join(','.join(t.value for t in c) for c in self.combos[:8])}"
                + (" ..." if len(self.combos) > 8 else ""),
            )
        return binding, self.resolve(self.output.type, bound)

    def _bind_explicit(self, explicit: Mapping[str, DataType], vars_: Mapping[str, object]) -> dict[str, DataType]:
        """The explicit type arguments: each names a type variable that no input determines."""
        free = set(self.free_type_vars())
        bound: dict[str, DataType] = {}
        for name, dtype in explicit.items():
            if name not in vars_:
                raise SignatureError(
                    "V021",
                    f"{self.op_id} has no type variable {name!r}",
                    f"remove <{name}=...>; its type variables are {', '.join(vars_) or 'none'}",
                )
            if name not in free:
                raise SignatureError(
                    "V021",
                    f"type variable {name} of {self.op_id} is determined by the arguments",
                    f"remove <{name}=...>",
                )
            bound[name] = dtype
        return bound

    def _bind_args(self, arg_types: Sequence[DataType], vars_: Mapping[str, object], bound: dict[str, DataType]) -> None:
        """Each argument's type into ``bound`` (a type variable) or checked (a concrete type)."""
        for param, dtype in zip(self.inputs, arg_types):
            if param.type in vars_:
                have = bound.setdefault(param.type, dtype)
                if have is not dtype:
                    raise SignatureError(
                        "V007",
                        f"{self.op_id}: argument {param.name!r} is {dtype} but {param.type} is "
                        f"already {have} (no implicit conversion)",
                        f"cast it with `as {have}`",
                    )
            elif dtype.value != param.type:
                raise SignatureError(
                    "V007",
                    f"{self.op_id}: argument {param.name!r} must be {param.type}, got {dtype}",
                    f"cast it with `as {param.type}`",
                )

    def _check_bound(self, bound: Mapping[str, DataType]) -> None:
        """Every type variable bound, to a type it allows."""
        for name, allowed in self.type_vars:
            if name not in bound:
                raise SignatureError(
                    "V021",
                    f"{self.op_id}: type variable {name} is not determined by the arguments",
                    f"bind it explicitly, e.g. {self.op_id}<{name}={allowed[0]}>(...)",
                )
            if bound[name] not in allowed:
                names = ", ".join(t.value for t in allowed)
                raise SignatureError(
                    "V007",
                    f"{self.op_id} does not accept {name}={bound[name]} (allowed: {names})",
                    f"cast the argument to one of {names}",
                )


class OpTable(Protocol):
    """What validation needs from an op registry."""

    def signature(self, op_id: str) -> OpSignature | None: ...

    def unknown_op_hint(self, op_id: str) -> str: ...
