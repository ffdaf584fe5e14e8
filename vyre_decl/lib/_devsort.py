"""``sort`` and ``argsort`` of a device array: the order-preserving keys (lib/sorting.py's program)
and, for argsort, the indices made on the device, then the stable ``sort.radix_pairs`` over
resident buffers; the result is a resident buffer (sorted values, or int64 indices as numpy's) and
nothing goes through the host. Device arrays sort along their one axis (or flattened)."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..routines import routine
from ._core import fail
from ._device import resident
from ._fusedev import prepare
from ._kernel import WORKGROUP, _parsed

__all__ = ["device_sort"]

_SHORT = {"uint32": "u32", "uint64": "u64", "int32": "i32", "int64": "i64", "float32": "f32", "float64": "f64"}


def _one_launch(where: str, text: str, inputs: list[Any], out_type: str, n: int, be: Any) -> Any:
    plan = prepare(where, _parsed(text), inputs, [out_type], n, be)
    plan.replay()
    return plan.release_outputs()[0]


def _map_text(name: str, decls: list[str], out_type: str, n: int, value: str) -> str:
    return "\n".join([f"program {name} workgroup({WORKGROUP}, 1, 1) {{", *decls,
                      f"  buffer out: write {out_type}[{n}] @{len(decls)}", "  let i = gid.x", f"  if i < {n}u32 {{",
                      f"    out[i] = {value}", "  }", "}", ""])


def device_sort(where: str, x: Any, backend: Any, axis: Any, keys_text: Callable[..., str], values: Any = None,
                order: bool = False, descending: bool = False) -> Any:
    """``lib.sort``/``lib.argsort`` (``order``) of a device array as a resident buffer."""
    from ..backends.cuda.memory import DeviceBuffer
    shape = (x.count,) if isinstance(x, DeviceBuffer) else tuple(getattr(x, "shape", ()))
    if values is not None or (axis is not None and not (len(shape) <= 1 and axis in (0, -1))):
        what = "values=" if values is not None else f"axis={axis!r} of a {len(shape)}-D array"
        raise fail("L022", where, f"lib.{where} of a device array takes no {what} (device arrays sort as one "
                   "axis: 1-D, or axis=None)", "leave it out, or download the array and call lib on the host copy")
    buf, be = resident(where, x, backend)
    name = np.dtype(buf.dtype.storage_dtype).name
    if name not in _SHORT or buf.dtype.value_type != buf.dtype:
        raise fail("L021", where, f"lib.{where} of a device array of {name} (it sorts {', '.join(_SHORT)} on the "
                   "device)", "download it and call lib on the host copy (which widens exactly)")
    n, vt = buf.count, _SHORT[name]
    if n == 0:
        return be.allocate("i64" if order else vt, 0)
    if not order and not descending and vt in ("u32", "u64"):
        return routine("sort.radix").resident(buf, backend=be)
    kt = "u32" if vt in ("u32", "i32", "f32") else "u64"
    made = [_one_launch(where, keys_text(vt, n, descending), [buf], kt, n, be)]
    if order:
        made.append(_one_launch(where, _map_text("lib_iota", [], "u32", n, "i"), [], "u32", n, be))
    try:
        sorted_keys, moved = routine("sort.radix_pairs").resident(made[0], made[-1] if order else buf, backend=be)
        made.append(sorted_keys)
        if not order:
            return moved
        made.append(moved)
        return _one_launch(where, _map_text("lib_index", ["  buffer x: read u32[] @0"], "i64", n, "x[i] as i64"),
                           [moved], "i64", n, be)
    finally:
        for b in made:
            b.free()
