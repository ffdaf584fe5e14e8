"""The Registry: every loaded op by id, the dialects they came from, and what was rejected."""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from ..ir.diagnostics import Diagnostic, VyreError
from ..ir.signature import OpSignature
from .model import DialectInfo, OpDef

__all__ = ["Registry", "LazyOps"]


class LazyOps(Mapping[str, OpDef]):
    """Op definitions kept as bytes and rebuilt on first use (a snapshot holds each op's pickle):
    a process that dispatches a program unpickles only the ops it calls."""

    def __init__(self, raw: Mapping[str, bytes], load: Callable[[bytes], OpDef]) -> None:
        self._raw, self._load = dict(raw), load
        self._done: dict[str, OpDef] = {}
        self._lock = threading.Lock()

    def __getitem__(self, op_id: str) -> OpDef:
        op = self._done.get(op_id)
        if op is None:
            raw = self._raw[op_id]
            with self._lock:
                op = self._done.get(op_id)
                if op is None:
                    op = self._done[op_id] = self._load(raw)
        return op

    def __contains__(self, op_id: object) -> bool:
        return op_id in self._raw

    def __iter__(self) -> Iterator[str]:
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)

    def __reduce__(self) -> tuple[Any, ...]:  # pickled (e.g. to a worker process) as a plain dict
        return (dict, (dict(self.items()),))


class Registry:
    """An immutable set of op definitions; implements the IR's ``OpTable`` protocol."""

    # where the registry was loaded from (set by ``load``): whether the standard library is in it,
    # and the directories and files beside it (VYRE_DECL_OPS_PATH, explicit paths), where the
    # routine loader finds routine files
    standard: bool = True
    search_paths: tuple[Path, ...] = ()

    def __init__(
        self,
        ops: Mapping[str, OpDef],
        dialects: Mapping[str, DialectInfo],
        diagnostics: tuple[Diagnostic, ...],
        sources: Mapping[Path, bytes],
        rejected: Mapping[str, Path],
    ) -> None:
        self._ops = dict(sorted(ops.items()))
        self.dialects = dict(sorted(dialects.items()))
        self.diagnostics = diagnostics
        self._sources = dict(sources)  # accepted file -> sha256 digest of its bytes
        self._rejected = dict(rejected)  # op id -> the rejected file that declared it
        h = hashlib.sha256()
        for name, digest in sorted((p.name, d) for p, d in self._sources.items()):
            h.update(name.encode() + b"\0" + digest)
        self._fingerprint = h.hexdigest()

    # --- snapshots
    def parts(self) -> tuple[Any, ...]:
        """What a snapshot stores: dialects, diagnostics, sources, rejected ids, fingerprint, and
        the ops by id (see ``restore``)."""
        return self.dialects, self.diagnostics, self._sources, self._rejected, self._fingerprint, self._ops

    @classmethod
    def restore(cls, dialects: Mapping[str, DialectInfo], diagnostics: tuple[Diagnostic, ...],
                sources: Mapping[Path, bytes], rejected: Mapping[str, Path], fingerprint: str,
                ops: Mapping[str, OpDef]) -> Registry:
        """A registry from ``parts()`` as they were (ops may be a ``LazyOps``), checked by nothing:
        only for snapshots of registries that were built and checked."""
        self = cls.__new__(cls)
        self._ops = ops  # type: ignore[assignment]
        self.dialects, self.diagnostics = dict(dialects), diagnostics
        self._sources, self._rejected, self._fingerprint = dict(sources), dict(rejected), fingerprint
        return self

    # --- lookup
    def __contains__(self, op_id: object) -> bool:
        return op_id in self._ops

    def __iter__(self) -> Iterator[OpDef]:
        return iter(self._ops.values())

    def __len__(self) -> int:
        return len(self._ops)

    def get(self, op_id: str) -> OpDef:
        try:
            return self._ops[op_id]
        except KeyError:
            raise VyreError.one("V005", f"unknown op {op_id!r}", "registry", self.unknown_op_hint(op_id)) from None

    __getitem__ = get

    def signature(self, op_id: str) -> OpSignature | None:
        op = self._ops.get(op_id)
        return op.signature if op is not None else None

    def has_trait(self, op_id: str, trait: str) -> bool:
        """Whether the op declares ``trait`` (model.TRAITS) or its composition calls an op that has it
        (remembered: validation asks it of every op node of every program)."""
        memo: dict[tuple[str, str], bool] = self.__dict__.setdefault("_trait_memo", {})
        found = memo.get((op_id, trait))
        if found is None:
            found = memo[(op_id, trait)] = self._walk_trait(op_id, trait)
        return found

    def _walk_trait(self, op_id: str, trait: str) -> bool:
        from ..ir.nodes import Op  # the walk is only needed for composites
        from ..ir.walk import subexprs

        seen, todo = {op_id}, [op_id]
        while todo:
            op = self.get(todo.pop())
            if trait in op.traits:
                return True
            for comp in op.compose.values():
                for e in (*(v for _, v in comp.steps), comp.result):
                    calls = {x.op for x in subexprs(e) if isinstance(x, Op)} - seen
                    seen |= calls
                    todo.extend(calls)
        return False

    def unknown_op_hint(self, op_id: str) -> str:
        if op_id in self._rejected:
            path = self._rejected[op_id]
            return f"its op file {path} was rejected; run `python -m vyre_decl.ops check {path}` and fix it"
        dialect = op_id.rpartition(".")[0]
        near = [o for o in self._ops if o.startswith(dialect + ".")] if dialect else []
        if near:
            return f"use an op of {dialect}: {', '.join(near)}"
        return "check the op id, or add the op file's directory to VYRE_DECL_OPS_PATH"

    # --- provenance
    @property
    def sources(self) -> tuple[Path, ...]:
        """The op files whose ops are registered."""
        return tuple(self._sources)

    @property
    def fingerprint(self) -> str:
        """SHA-256 over the names and bytes of every accepted op file (order independent)."""
        return self._fingerprint

    @property
    def errors(self) -> tuple[Diagnostic, ...]:
        return tuple(d for d in self.diagnostics if d.severity == "error")

    def raise_for_errors(self) -> None:
        if self.errors:
            raise VyreError(self.errors, f"{len(self.errors)} op file error(s):")

    def __repr__(self) -> str:
        return f"<Registry {len(self._ops)} ops, {len(self.dialects)} dialects, {len(self.errors)} errors>"
