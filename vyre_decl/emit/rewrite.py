"""Rewrite laws applied: an op call replaced by the cheaper equal expression its op file declares.

The op's ``rewrites = [...]`` (``registry/rewrites.py``) are tried in order on the intervals
``emit/ranges.py`` finds for the call's operands (a literal operand has lo = hi); the first law whose
guard holds gives the replacement, built from the call's own operand nodes and literals of the
result type. This module knows no op by name. An operand the replacement leaves out must have no
effect (an atomic or a wait stays); an operand it uses twice, or a formula whose value the result
type cannot hold, leaves the call as it is. The reference never rewrites: the semantics are the same.
"""

from __future__ import annotations

from ..ir.nodes import Atomic, Expr, Lit, Op, Wait
from ..ir.walk import subexprs
from ..registry import Registry
from ..registry.rewrites import parse_rewrite
from .ranges import IndexRanges, law_env, type_range

__all__ = ["rewritten"]


def rewritten(e: Op, registry: Registry, ranges: IndexRanges) -> Expr | None:
    """What the emitter emits in place of ``e``, or None to emit ``e`` itself."""
    op = registry.get(e.op)
    known = [ranges.unsigned(a) for a in e.args]
    if not op.rewrites or any(k is None for k in known):
        return None
    types = [k[0] for k in known if k is not None]
    try:
        binding, out = op.signature.bind(types, dict(e.types))
    except Exception:  # noqa: BLE001 - validation reports a bad call; here it only means "no rewrite"
        return None
    tvars = op.binding_map(binding)
    env = law_env(op, tvars, [k[1] for k in known if k is not None])
    operands, top = tuple(p.name for p in op.signature.inputs), type_range(out)[1]
    for law in op.rewrites:
        if not law.applies(tvars):
            continue
        rule, _ = parse_rewrite(law.text, operands, tuple(tvars))
        if rule.guard.value(env) != 1:
            continue
        args: list[Expr] = []
        for a in rule.args:
            v = a if isinstance(a, str) else a.value(env)
            if v is None or isinstance(v, int) and not 0 <= v <= top:
                break
            args.append(e.args[operands.index(v)] if isinstance(v, str) else Lit(out, v))
        else:
            used = [a for a in rule.args if isinstance(a, str)]
            dropped = [e.args[i] for i, name in enumerate(operands) if name not in used]
            if len(set(used)) == len(used) and not any(isinstance(x, (Atomic, Wait)) for d in dropped for x in subexprs(d)):
                return args[0] if rule.op is None else Op(rule.op, tuple(args))
    return None
