"""``break`` on the reference: the invocations that run it leave their innermost loop.

They are masked off like returned ones (``Frame.alive``, so every enclosing block and the loop
itself stop running them) and remembered in the frame under the loop's own key; when that loop
ends they are alive again and go on after it. Invocations that returned stay ended.
"""

from __future__ import annotations

import numpy as np

from .frame import Frame, Mask, StmtFn

__all__ = ["break_statement", "leaving"]


def break_statement(key: str) -> StmtFn:
    """The closure of a ``break`` whose innermost loop keeps its leavers under ``key``."""

    def break_(fr: Frame, m: Mask) -> None:
        lanes = np.ones(fr.n, bool) if m is None else np.array(np.broadcast_to(m, (fr.n,)))
        if fr.alive is not None:
            lanes &= fr.alive
        before = fr.vars.get(key)
        fr.vars[key] = lanes if before is None else before | lanes
        fr.alive = ~lanes if fr.alive is None else fr.alive & ~lanes
        fr.epoch += 1

    return break_


def leaving(loop: StmtFn, key: str) -> StmtFn:
    """``loop`` (a loop's closure) such that the invocations that broke out of it run on after it."""

    def run(fr: Frame, m: Mask) -> None:
        outer = fr.vars.pop(key, None)  # the same loop, running again (nested in another loop)
        try:
            loop(fr, m)
        finally:
            left = fr.vars.pop(key, None)
            if outer is not None:
                fr.vars[key] = outer
        if left is not None:
            assert fr.alive is not None
            fr.alive = fr.alive | left

    return run
