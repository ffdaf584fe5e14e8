"""Memory-consistency qualifiers of ld, st, atom and red, and the fence and membar instructions:
checked at decode time as ptxas checks them (PTX ISA, "Memory Consistency Model" and each
instruction's syntax), and given no further meaning when run.

The interpreter executes an instruction for all its lanes before the next one starts and makes every
store visible at once, so every access is already sequentially consistent: an order or a scope
changes nothing, and a fence or membar is a no-op. What decoding refuses, with ptxas' reasons (each
checked against CUDA 13's ptxas):

* ``ld``: ``.weak``, ``.volatile``, ``.relaxed`` or ``.acquire``; ``st``: ``.weak``, ``.volatile``,
  ``.relaxed`` or ``.release``; ``atom``: ``.relaxed``, ``.acquire``, ``.release`` or ``.acq_rel``;
  ``red``: ``.relaxed`` or ``.release``. Anything else (``ld.release``, ``st.acquire``,
  ``atom.volatile``, ``red.acquire``) is an illegal modifier; two of them, or two scopes, are refused;
* a scope (``.cta``, ``.cluster``, ``.gpu``, ``.sys``): on ld and st only after ``.relaxed`` or
  ``.acquire``/``.release``, which require one; on atom and red with or without an order;
* ``.relaxed``, ``.acquire``, ``.release`` on ld/st only in ``.global``, ``.shared`` or generic
  addresses, and never with a caching operator (``.ca`` ``.cg`` ``.cs`` ``.lu`` ``.cv`` ``.wb`` ``.wt``
  ``.nc``); ``.volatile`` not with a caching operator nor (before PTX ISA 9.1) on ``.local``;
* orders need sm_70, a scope on atom/red sm_60, ``.cluster`` sm_90;
* ``fence.sc.SCOPE`` and ``fence.acq_rel.SCOPE`` (``fence.SCOPE`` is acq_rel), and
  ``fence.acquire``/``fence.release`` (sm_90, PTX ISA 8.6); ``membar.cta``, ``.gl``, ``.sys``.
  The proxy and restricted fences are not modelled; ``.mmio`` accesses are not modelled.
"""

from __future__ import annotations

from typing import Final

from .ptx_operands import Ctx

__all__ = ["ORDER_MODS", "check_order", "check_fence", "is_strong"]

_SEMS: Final = frozenset(("weak", "volatile", "relaxed", "acquire", "release", "acq_rel", "sc", "mmio"))
_SCOPES: Final = frozenset(("cta", "cluster", "gpu", "sys"))
_CACHING: Final = frozenset(("ca", "cg", "cs", "lu", "cv", "wb", "wt", "nc"))
ORDER_MODS: Final = _SEMS | _SCOPES  # what check_order looks at (space_of passes them over)
_ALLOWED: Final = {
    "ld": frozenset(("weak", "volatile", "relaxed", "acquire")),
    "st": frozenset(("weak", "volatile", "relaxed", "release")),
    "atom": frozenset(("relaxed", "acquire", "release", "acq_rel")),
    "red": frozenset(("relaxed", "release")),
}
_STRONG: Final = frozenset(("relaxed", "acquire", "release", "acq_rel"))


def _split(ctx: Ctx, opcode: str, mods: tuple[str, ...]) -> tuple[str | None, str | None]:
    """The one order and the one scope among ``mods`` (either may be None)."""
    sems = [m for m in mods if m in _SEMS]
    scopes = [m for m in mods if m in _SCOPES]
    if "mmio" in sems:
        raise ctx.error(f"{opcode}.mmio is PTX, but the simulator does not model it")
    if len(sems) > 1:
        raise ctx.error(f"duplicate memory order: .{' and .'.join(sems)} (an access has one)")
    if len(scopes) > 1:
        raise ctx.error(f"multiple scope modifiers: .{' and .'.join(scopes)}")
    sem, scope = (sems[0] if sems else None), (scopes[0] if scopes else None)
    if sem is not None and sem not in _ALLOWED[opcode]:
        raise ctx.error(f"illegal modifier .{sem} for {opcode} (it takes .{', .'.join(sorted(_ALLOWED[opcode]))})")
    if sem in _STRONG and ctx.sm < 70:
        raise ctx.error(f"{opcode}.{sem} needs sm_70 or newer (the module targets sm_{ctx.sm})")
    if scope is not None:
        need = 90 if scope == "cluster" else 60 if opcode in ("atom", "red") else 70
        if ctx.sm < need:
            raise ctx.error(f"the .{scope} scope on {opcode} needs sm_{need} or newer (the module targets sm_{ctx.sm})")
    return sem, scope


def is_strong(mods: tuple[str, ...]) -> bool:
    """Whether an ld or st with ``mods`` is a strong access (``.relaxed``, ``.acquire``, ``.release``,
    or ``.volatile``, which the memory model treats as ``.relaxed.sys``): strong accesses do not race
    with one another, as atomics do not, so the sanitizer does not track them."""
    return any(m in ("relaxed", "acquire", "release", "volatile") for m in mods)


def check_order(ctx: Ctx, opcode: str, mods: tuple[str, ...], space: str) -> None:
    """Refuse, as ptxas does, an order, scope or caching operator of ``opcode`` (ld, st, atom, red)
    that the ISA does not allow on an access to ``space``; accept every other combination."""
    sem, scope = _split(ctx, opcode, mods)
    if opcode in ("atom", "red"):
        return  # the state space is the instruction's own check; a scope alone is .relaxed
    caching = [m for m in mods if m in _CACHING]
    if sem in _STRONG:
        if scope is None:
            raise ctx.error(f".{sem} requires a scope with {opcode} (.cta, .cluster, .gpu or .sys)")
        if space not in ("global", "shared", "generic"):
            raise ctx.error(f".{sem} cannot be applied to the .{space} space")
        if caching:
            raise ctx.error(f".{sem} cannot be combined with .{caching[0]}")
    elif scope is not None:
        why = f"cannot be combined with .{sem}" if sem is not None else f"requires a memory order with {opcode}"
        raise ctx.error(f"the scope .{scope} {why} (write .relaxed.{scope} or .{'acquire' if opcode == 'ld' else 'release'}.{scope})")
    elif sem == "volatile":
        if caching:
            raise ctx.error(f".volatile cannot be combined with .{caching[0]}")
        if space == "local" and ctx.version < (9, 1):
            raise ctx.error(f"{opcode}.volatile.local needs PTX ISA 9.1 or later")


def check_fence(ctx: Ctx, opcode: str, mods: tuple[str, ...]) -> None:
    """``fence{.sc|.acq_rel}.scope``, ``fence.acquire|release.scope`` (sm_90, PTX ISA 8.6) and
    ``membar.cta|gl|sys``; the other forms are refused."""
    if opcode == "membar":
        if len(mods) != 1 or mods[0] not in ("cta", "gl", "sys"):
            raise ctx.error(f"membar takes one level, .cta, .gl or .sys (found {'.' + '.'.join(mods) if mods else 'none'})")
        return
    if any(m.split("::")[0] in ("proxy", "op_restrict", "sync_restrict", "mbarrier_init") for m in mods):
        raise ctx.error(f"fence.{'.'.join(mods)} is PTX, but the simulator does not model it")
    scopes = [m for m in mods if m in _SCOPES]
    sems = [m for m in mods if m not in _SCOPES]
    if len(scopes) != 1:
        raise ctx.error("fence takes exactly one scope (.cta, .cluster, .gpu or .sys)" if not scopes
                        else f"multiple scope modifiers: .{' and .'.join(scopes)}")
    if len(sems) > 1 or sems and sems[0] not in ("sc", "acq_rel", "acquire", "release"):
        raise ctx.error(f"fence takes one order, .sc or .acq_rel (found .{'.'.join(sems)})")
    if sems and sems[0] in ("acquire", "release") and (ctx.sm < 90 or ctx.version < (8, 6)):
        raise ctx.error(f"fence.{sems[0]} needs sm_90 and PTX ISA 8.6 or later")
    need = 90 if scopes[0] == "cluster" else 70
    if ctx.sm < need:
        raise ctx.error(f"fence.{'.'.join(mods)} needs sm_{need} or newer (the module targets sm_{ctx.sm})")
