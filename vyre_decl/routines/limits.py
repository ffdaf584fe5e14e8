"""The bounds of one routine call, checked before any launch or allocation.

A routine file is data from anywhere, so what a call may cost is bounded whatever its sizes say:
the launches of a call with every repeat unrolled (``MAX_LAUNCHES``), a step's workgroups
(``MAX_GRID``, CUDA's limit along x, and at most 2^32 invocations: ``gid.x`` is a u32), and the
bytes of its outputs, temporaries and constants together (``MAX_CALL_BYTES``). A negative repeat
count or grid is an error, never "no passes". ``U023`` is a size that divides by zero for the
call's lengths and attributes, ``U024`` a bound broken; both name the routine and the field
(``steps[2].grid``, ``buffers.partial``, ...).
"""

from __future__ import annotations

from typing import Final, Mapping, Sequence

from ..ir.diagnostics import VyreError
from .model import RepeatDef, RoutineDef, StepDef
from .sizes import DivisionByZero, SizeExpr

__all__ = ["MAX_LAUNCHES", "MAX_GRID", "MAX_INVOCATIONS", "MAX_CALL_BYTES", "evaluate", "launches", "check_bytes"]

MAX_LAUNCHES: Final = 4096  # kernel launches of one call, repeats unrolled
MAX_GRID: Final = 2**31 - 1  # workgroups of one launch (along x)
MAX_INVOCATIONS: Final = 2**32  # workgroups x workgroup size of one launch: gid.x is a u32
MAX_CALL_BYTES: Final = 2**34  # outputs, temporaries and constants of one call: 16 GiB


def _where(routine: RoutineDef, fld: str) -> str:
    return f"{routine.file} [routine {routine.id}] {fld}".rstrip()


def evaluate(routine: RoutineDef, expr: SizeExpr, sizes: Mapping[str, int], env: Mapping[str, int], fld: str) -> int:
    """``expr`` for a call; U023 when it divides by zero."""
    try:
        return expr.evaluate(sizes, env)
    except DivisionByZero as exc:
        shown = ", ".join(f"len({k})={v}" for k, v in sizes.items()) + "".join(f", {k}={v}" for k, v in env.items())
        raise VyreError.one("U023", f"{fld} = {expr.text} is {exc} for this call ({shown})", _where(routine, fld),
                            "guard the divisor with a require (require = [\"cols > 0\"]) or max(1, ...)") from None


def _too_many(routine: RoutineDef, fld: str, count: int) -> VyreError:
    return VyreError.one("U024", f"the call would make {count:,} launches or more, over the limit of {MAX_LAUNCHES:,}",
                         _where(routine, fld), "repeat fewer times, or split the work into several calls")


def launches(routine: RoutineDef, workgroup: Mapping[StepDef, int], sizes: Mapping[str, int],
             env: Mapping[str, int]) -> list[tuple[StepDef, int]]:
    """Every launch of the call in order, with its number of workgroups: all repeat counts and
    grids evaluated and bounded before the first launch (``workgroup``: each step's invocations
    per workgroup)."""
    out: list[tuple[StepDef, int]] = []
    _unroll(routine, routine.steps, workgroup, sizes, env, out)
    return out


def _unroll(routine: RoutineDef, steps: Sequence[StepDef | RepeatDef], workgroup: Mapping[StepDef, int],
            sizes: Mapping[str, int], env: Mapping[str, int], out: list[tuple[StepDef, int]]) -> None:
    for s in steps:
        if isinstance(s, RepeatDef):
            fld = f"{s.where}.repeat"
            count = evaluate(routine, s.count, sizes, env, fld)
            if count < 0:
                raise VyreError.one("U024", f"repeat = {s.count.text} is {count} for this call: a negative count",
                                    _where(routine, fld), "write a count that is never negative (max(0, ...))")
            if count > MAX_LAUNCHES or len(out) + count > MAX_LAUNCHES:
                raise _too_many(routine, fld, len(out) + count)
            for _ in range(count):
                _unroll(routine, s.steps, workgroup, sizes, env, out)
            continue
        fld = f"{s.where}.grid"
        grid = evaluate(routine, s.grid, sizes, env, fld)
        threads = workgroup.get(s, 1)
        if grid < 0 or grid > MAX_GRID or grid * threads > MAX_INVOCATIONS:
            raise VyreError.one("U024", f"grid = {s.grid.text} is {grid} workgroups of {threads} for this call, outside "
                                f"0 .. {min(MAX_GRID, MAX_INVOCATIONS // threads):,}", _where(routine, fld),
                                "size the grid by the data (ceil_div(len(x), 256)) or pass smaller inputs")
        out.append((s, grid))
        if len(out) > MAX_LAUNCHES:
            raise _too_many(routine, s.where, len(out))


def check_bytes(routine: RoutineDef, sizes: Mapping[str, int], itemsize: Mapping[str, int]) -> None:
    """U024 when the outputs, temporaries and constants of a call need more than MAX_CALL_BYTES."""
    total = 0
    for spec in routine.buffers:
        if spec.role != "in":
            total += sizes[spec.name] * itemsize[spec.name]
            if total > MAX_CALL_BYTES:
                raise VyreError.one("U024", f"the outputs, temporaries and constants of the call need {total:,} bytes or "
                                    f"more (at buffers.{spec.name}), over the limit of {MAX_CALL_BYTES:,}",
                                    _where(routine, f"buffers.{spec.name}"), "pass smaller inputs or attributes")
