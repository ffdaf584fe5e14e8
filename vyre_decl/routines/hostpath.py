"""The fast host path of routines on the reference backend: steps whose kernel has a known
combination structure — ``reduce.blocks`` (chunks, 256 strided accumulators, a binary tree),
``scan.offsets`` and ``scan.tiles`` (the tiled scan), ``scan.singlef`` (its order in routines/hostscan.py) and the radix sort (``sort.copy`` and a run of
``sort.count``/``scan.tiles``/``sort.scatter``/``sort.advance`` or ``sort.hist``/``sort.sweep`` passes: a stable sort by the digits
it covers) — are computed with whole-array numpy operations in exactly the kernels' order. This
module knows that order only: every combination is the registry op the routine names (``with.combine``,
``with.lift``, ``T.$identity``), through the reference interpreter's vectorised op functions. Any
other step is dispatched to the backend as ``run_host`` does. The interpreter stays the definition:
``interpreted()`` turns this path off and the tests compare both (tests/test_lib_hostpath.py)."""

from __future__ import annotations

import contextlib
import os
import sys
import weakref
from typing import Any, Callable, Iterator, Mapping, Sequence

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ..backends import DispatchConfig
from ..backends.reference import ReferenceBackend
from ..ir.nodes import Program
from ..ir.scalars import element_bits, to_numpy
from ..ir.types import DataType
from ..ir.parser import parse_expr
from ..reference.frame import _Values
from ..reference.interpreter import Compiler, op_function
from ..reference.kernels import KERNELS, ufunc
from ..registry.references import REFERENCES, UFUNC
from ..registry import Registry
from .hostlaws import blocks_any_order, free_any_order, free_order
from .hostscan import TILE, hillis_steele, shifted, singlef_scan
from .model import StepDef
from .runner import CompiledRoutine

__all__ = ["run", "run_steps", "map_values", "interpreted", "enabled", "ENV"]

ENV = "VYRE_DECL_HOST_PATH"  # "0": every step through the interpreter
_state = {"on": os.environ.get(ENV, "1") != "0"}
Fn = Callable[[Sequence[Any]], Any]
Launch = tuple[StepDef, Program, int]
_OPS: weakref.WeakKeyDictionary[CompiledRoutine, dict[Any, Any]] = weakref.WeakKeyDictionary()
_BATCH_BYTES = 1 << 21  # input lifted and combined at a time (stays in cache; measured best of 256 KiB .. 8 MiB)
_PASS = frozenset({"sort.copy", "sort.count", "sort.scan", "scan.tiles", "sort.scatter", "sort.advance", "sort.hist", "sort.sweep"})  # radix passes
_SCATTERS = frozenset({"sort.scatter", "sort.sweep"})  # the passes that write the keys


def enabled() -> bool:
    return _state["on"]


@contextlib.contextmanager
def interpreted() -> Iterator[None]:
    """Within: routines on the reference backend run every step on the interpreter."""
    before = _state["on"]
    _state["on"] = False
    try:
        yield
    finally:
        _state["on"] = before


def run(handle: Any, inputs: Sequence[Any], backend: Any, attrs: Mapping[str, Any]) -> Any | None:
    """``handle`` (a routines.Routine) called on the host path, or None when it does not apply
    (not the reference backend, or turned off): the caller runs the routine as usual."""
    if not _state["on"] or not isinstance(backend, ReferenceBackend):
        return None
    arrays = handle._arrays(inputs)
    values = handle._attrs(attrs)
    compiled = handle.compiled([a.dtype for a in arrays], backend.registry)
    outputs = run_steps(compiled, backend, arrays, values)
    return outputs[0] if len(outputs) == 1 else tuple(outputs)


def run_steps(compiled: CompiledRoutine, backend: Any, arrays: Sequence[np.ndarray],
              attrs: Mapping[str, int]) -> list[np.ndarray]:
    """``compiled.run_host`` with the steps of known structure computed here."""
    routine = compiled.routine
    env: dict[str, np.ndarray] = {s.name: a for s, a in zip(routine.inputs, arrays)}
    sizes, scope = compiled.scope({k: int(v.size) for k, v in env.items()}, attrs)
    for spec in routine.buffers:
        if spec.role == "const":
            env[spec.name] = compiled.const_values(spec, sizes, scope)
        elif spec.role != "in":
            env[spec.name] = np.zeros(sizes[spec.name], compiled.dtypes[spec.name].storage_dtype)
    todo = [launch for launch in compiled.steps(sizes, scope) if launch[2]]
    reg: Registry = backend.registry
    i = 0
    with np.errstate(all="ignore"):
        while i < len(todo):
            done = _radix_run(compiled, todo, i, env, reg) or (1 if _one(compiled, todo[i], env, reg) else 0)
            if not done:
                _dispatch(compiled, backend, todo[i], env)
            i += max(done, 1)
    return [env[s.name] for s in routine.outputs]


def _dispatch(compiled: CompiledRoutine, backend: Any, launch: Launch, env: dict[str, np.ndarray]) -> None:
    step, program, grid = launch
    bound = compiled.bound[step]
    results = backend.dispatch(program, {b.name: env[bound[b.name]] for b in program.inputs},
                               DispatchConfig(grid=(grid, 1, 1)))
    for decl, value in zip(program.outputs, results):
        env[bound[decl.name]] = value


class _Ops:
    """A step's type variables and parameters, and the registry ops they name as vectorised functions."""

    def __init__(self, compiled: CompiledRoutine, step: StepDef, registry: Registry) -> None:
        b = compiled.binding
        self.types: dict[str, DataType] = {**b, **{k: b[v] if v in b else DataType(v) for k, v in step.types}}
        self.params = {**compiled.routine.params, **dict(step.params)}
        self.registry = registry
        self._memo: dict[Any, Any] = {}

    @classmethod
    def of(cls, compiled: CompiledRoutine, step: StepDef, registry: Registry) -> _Ops:
        """The step's ops, made once per compiled routine, step and registry (calls reuse them)."""
        per = _OPS.setdefault(compiled, {})
        found = per.get((step, registry.fingerprint))
        if found is None:
            found = per[(step, registry.fingerprint)] = cls(compiled, step, registry)
        return found

    def once(self, key: Any, make: Callable[[], Any]) -> Any:
        """``make()``, made once per step (its ops, types and parameters are fixed)."""
        if key not in self._memo:
            self._memo[key] = make()
        return self._memo[key]

    def plain(self, *names: str) -> bool:
        """Whether these type variables' values are stored as they are (no packed storage)."""
        return self.once(("plain", names), lambda: all(np.dtype(self.types[n].storage_dtype) == np.dtype(self.types[n].numpy_dtype) for n in names))

    def op(self, op_id: str, args: Sequence[DataType], type_args: Mapping[str, DataType] = {}) -> tuple[Fn, DataType]:
        key = (op_id, tuple(args), tuple(sorted(type_args.items())))
        found = self._memo.get(key)
        if found is None:
            op = self.registry.get(op_id)
            binding, out = op.signature.bind(list(args), dict(type_args))
            found = self._memo[key] = (op_function(self.registry, op, binding), out)
        return found  # type: ignore[no-any-return]

    def element(self, var: str, param: str) -> Any:
        t = self.types[var]
        return self.once(("element", var, param), lambda: to_numpy(t, element_bits(t, self.params[param])))

    def combine(self, var: str = "A") -> Fn:
        t = self.types[var]
        return self.op(self.params["combine"], [t, t])[0]

    def aux_values(self, aux: np.ndarray, n: int, spread: bool) -> Any:
        """aux[i] for i < n as the kernels load it: aux[0] for every i when ``spread`` and
        len(aux) == 1 (a scalar), and 0 past the end of aux."""
        if (spread and aux.size == 1) or aux.size == 0:
            return aux[0] if aux.size else np.zeros((), aux.dtype)[()]
        if aux.size >= n:
            return aux[:n]
        return np.concatenate([aux, np.zeros(n - aux.size, aux.dtype)])

    def lift(self) -> Fn:
        """(x, y) -> ``lift(x, y) as A``, elementwise (a cast to the type the value has already is
        itself, docs/semantics.md "Conversions": left out)."""
        t = self.types["T"]
        lift, lt = self.op(self.params["lift"], [t, t])
        if lt == self.types["A"]:
            return lift
        cast, _ = self.op("primitive.convert.cast", [lt], {"T": self.types["A"]})
        return lambda args: np.asarray(cast((lift(args),)))

    def ufunc(self, var: str = "A") -> np.ufunc | None:
        """The numpy ufunc the interpreter computes ``with.combine`` over ``var`` with (the op's
        reference for that binding), where its result has that type already: ``u(a, b, out=a)``
        then gives the op function's bits in place. None otherwise (a kernel, a composition)."""
        return self.once(("ufunc", var), lambda: self._ufunc(self.types[var]))  # type: ignore[no-any-return]

    def _ufunc(self, t: DataType) -> np.ufunc | None:
        op = self.registry.get(self.params["combine"])
        binding, out = op.signature.bind([t, t], {})
        ref = op.reference_for(binding)
        if out != t or ref is None or ref in KERNELS or REFERENCES.get(ref, ("",))[0] != UFUNC:
            return None
        uf, dt = ufunc(ref), np.dtype(t.numpy_dtype)
        ok = uf.nin == 2 and uf.nout == 1 and uf(np.zeros(1, dt), np.zeros(1, dt)).dtype == dt
        return uf if ok else None

    def lift_free(self, aux: np.ndarray) -> bool:
        """Whether ``lift_for(aux)`` is the elements themselves."""
        return aux.size == 0 and bool(self.once("right_identity_zero", self._right_identity_zero))

    def lift_for(self, aux: np.ndarray) -> Fn:
        """``lift`` for this aux; where aux is empty (every load of it is 0) and the registry's laws
        say ``lift(x, zero) = x`` for T (``right_identity(zero)``: x - 0), with the result in A
        already, the elements themselves (no pass over them)."""
        if self.lift_free(aux):
            return lambda args: args[0]
        return self.lift()

    def _right_identity_zero(self) -> bool:
        op, t = self.registry.get(self.params["lift"]), self.types["T"]
        if self.op(self.params["lift"], [t, t])[1] != self.types["A"]:
            return False
        return any(law.law in ("right_identity", "identity") and law.element == "zero"
                   and (law.when is None or t in law.when.get("T", (t,))) for law in op.laws)

    def lifted(self, src: np.ndarray, aux: np.ndarray, spread: bool) -> np.ndarray:
        """``lift(src[i], aux[i]) as A`` for every i (aux as ``aux_values`` loads it)."""
        return np.asarray(self.lift()((src, self.aux_values(aux, src.size, spread))))


def _one(compiled: CompiledRoutine, launch: Launch, env: dict[str, np.ndarray], registry: Registry) -> bool:
    """One step of known structure computed here; False when its kernel has none (or its types
    are packed, or its grid is not the one the structure assumes)."""
    step, _, grid = launch
    handler = _HANDLERS.get(compiled.routine.kernels[step.kernel].qualified)
    if handler is None:
        return False
    return handler(_Ops.of(compiled, step, registry), step.args, grid, env)


def _chunks(n: int, groups: int) -> tuple[int, np.ndarray]:
    """The chunk length c = ceil(n / groups) and each group's count of elements min(c, n - g c)."""
    c = -(-n // groups)
    return c, np.clip(n - np.arange(groups, dtype=np.int64) * c, 0, c)


def _strided(values: np.ndarray, groups: int, c: int, width: int, rows: int, fill: Any) -> np.ndarray:
    """A (groups, rows, width) array: [g, k, t] is values[g c + k width + t], ``fill`` past the end
    (the caller masks the elements outside each chunk)."""
    need = groups * c + rows * width
    padded = np.concatenate([values, np.full(need - values.size, fill, values.dtype)]) if need > values.size else values
    s = padded.strides[0]
    return as_strided(padded, (groups, rows, width), (c * s, width * s, s), writeable=False)


def _fold_into(ops: _Ops, acc: np.ndarray, data: np.ndarray) -> None:
    """Each row's 256 accumulators (the identity on entry) take in that row of ``data`` (its
    chunk) in order: entry t combines data[:, 256 k + t] in increasing k, while 256 k + t < the
    chunk's length. With the combine's ufunc, the whole rows of 256 are one ``reduce`` over k of
    the (rows, k, 256) view from the identity (``initial``): numpy's reduction over an axis that is
    not the innermost runs its inner loop along t and combines out[r, t] with each k in increasing
    order, the accumulator first — the kernel's order (tests/test_lib_hostpath.py compares bits);
    the last partial row in place. Without a ufunc, row by row by assignment."""
    uf, combine = ops.ufunc(), ops.combine()
    m, k = data.shape[1], 0
    if uf is not None and m >= 512 and data.dtype == acc.dtype:
        k = m // 256 * 256
        uf.reduce(data[:, :k].reshape(data.shape[0], k // 256, 256), axis=1, dtype=acc.dtype, out=acc,
                  initial=ops.element("A", "identity"))
    for k in range(k, m, 256):
        w = min(256, m - k)
        into = acc[:, :w]
        if uf is not None:
            uf(into, data[:, k:k + w], out=into)
        else:
            acc[:, :w] = np.asarray(combine((into, data[:, k:k + w])))


def _blocks(ops: _Ops, args: Sequence[str], grid: int, env: dict[str, np.ndarray]) -> bool:
    """reduce.blocks: chunk g's invocation t folds g c + t + 256 k in increasing k from the
    identity, then the 256 folds combine as a binary tree (docs/routines.md). The chunks that are
    whole fold as one (groups, c) view, the one partial chunk (the last with elements) by itself."""
    src, aux, dst = env[args[0]], env[args[1]], env[args[2]]
    groups, n = dst.size, src.size
    if not ops.plain("T", "A") or grid != groups or groups == 0 or n + groups >= 2**32:
        return False
    combine, ident, lift = ops.combine(), ops.element("A", "identity"), ops.lift_for(aux)
    y = ops.aux_values(aux, n, spread=True)
    c, _ = _chunks(n, groups)
    # groups lifted and folded at a time: all where the lift is the elements themselves (nothing
    # to keep in cache), else what stays in cache
    batch = groups if ops.lift_free(aux) else max(1, _BATCH_BYTES // max(1, c * src.itemsize))
    if free_any_order(ops):
        folded = blocks_any_order(ops, lift, src, y, groups, c, batch)
        env[args[2]] = folded.astype(dst.dtype, copy=True)
        return True
    acc = np.full((groups, 256), ident, np.dtype(ops.types["A"].numpy_dtype))
    whole = min(groups, n // c) if c else 0  # the chunks of c elements; then one partial (or none)
    for g0 in range(0, groups if n else 0, batch):
        g1 = min(groups, g0 + batch)
        lo, hi = g0 * c, min(g1 * c, n)
        if lo >= hi:
            break  # (groups past the end take in nothing)
        lifted = np.asarray(lift((src[lo:hi], y[lo:hi] if isinstance(y, np.ndarray) else y)))
        w1 = max(g0, min(g1, whole))
        _fold_into(ops, acc[g0:w1], lifted[:(w1 - g0) * c].reshape(w1 - g0, c))
        if w1 < g1 and (w1 - g0) * c < lifted.size:
            _fold_into(ops, acc[w1:w1 + 1], lifted[(w1 - g0) * c:].reshape(1, -1))
    uf, half = ops.ufunc(), 128
    while half:  # entries t < half take in t + half; the others are not read again
        if uf is not None:
            uf(acc[:, :half], acc[:, half:2 * half], out=acc[:, :half])
        else:
            acc[:, :half] = np.asarray(combine((acc[:, :half], acc[:, half:2 * half])))
        half //= 2
    env[args[2]] = acc[:, 0].astype(dst.dtype, copy=True)
    return True


def _offsets(ops: _Ops, args: Sequence[str], grid: int, env: dict[str, np.ndarray]) -> bool:
    """scan.offsets: part := the exclusive scan of part, one workgroup (docs/routines.md)."""
    part = env[args[0]]
    g = part.size
    if not ops.plain("A") or grid != 1 or g == 0:
        return False
    combine, ident = ops.combine(), ops.element("A", "identity")
    per = -(-g // 256)
    index = np.arange(256)[:, None] * per + np.arange(per)[None, :]  # [t, k]
    valid = index < g
    padded = np.concatenate([part, np.full(256 * per - g, ident, part.dtype)])[index]
    fold = np.full(256, ident, part.dtype)
    for k in range(per):
        fold = np.where(valid[:, k], combine((fold, padded[:, k])), fold)
    run = shifted(hillis_steele(combine, fold, ident), 1, ident)
    out = np.empty_like(padded)
    for k in range(per):
        out[:, k] = run
        run = np.where(valid[:, k], combine((run, padded[:, k])), run)
    env[args[0]] = out.reshape(-1)[:g].astype(part.dtype, copy=True)
    return True


def _tiles(ops: _Ops, args: Sequence[str], grid: int, env: dict[str, np.ndarray]) -> bool:
    """scan.tiles: each chunk in tiles of 1024, invocation t folding the tile's 4t .. 4t + 3, a
    Hillis-Steele scan of the 256 folds, the carry from the chunk's offset (docs/routines.md);
    computed for a batch of chunks at a time (their input stays in cache)."""
    src, aux, offs, dst = (env[a] for a in args)
    groups, n = offs.size, src.size
    if not ops.plain("T", "A") or grid != groups or groups == 0 or n + groups >= 2**32:
        return False
    combine, ident, lift = ops.combine(), ops.element("A", "identity"), ops.lift_for(aux)
    exclusive = ops.params["exclusive"] == "true"
    y = ops.aux_values(aux, n, spread=False)
    c, count = _chunks(n, groups)
    new, m = dst.copy(), min(n, dst.size)
    batch = max(1, _BATCH_BYTES // max(1, c * src.itemsize))
    for g0 in range(0, groups if c else 0, batch):
        g1 = min(groups, g0 + batch)
        lo, hi = g0 * c, min(g1 * c, m)
        if lo < hi:
            lifted = np.asarray(lift((src[lo:hi], y[lo:hi] if isinstance(y, np.ndarray) else y)))
            new[lo:hi] = _scan_chunks(combine, ident, exclusive, lifted, c, count[g0:g1], offs[g0:g1])[:hi - lo]
    env[args[3]] = new
    return True


def _scan_chunks(combine: Fn, ident: Any, exclusive: bool, lifted: np.ndarray, c: int, count: np.ndarray,
                 offs: np.ndarray) -> np.ndarray:
    """scan.tiles over consecutive chunks (``lifted`` holds them back to back): their scanned
    values, back to back (len(count) * c of them; past each chunk's count: not meaningful)."""
    groups, tiles = count.size, -(-c // 1024)
    valid = np.arange(tiles * 1024).reshape(tiles, 1024)[None] < count[:, None, None]
    v = np.where(valid, _strided(lifted, groups, c, 1024, tiles, ident), ident).reshape(groups, tiles, 256, 4)
    s = [v[..., 0]]
    for r in range(1, 4):
        s.append(np.asarray(combine((s[-1], v[..., r]))))
    tot = hillis_steele(combine, s[3], ident)
    before = shifted(tot, 1, ident)
    carry = np.empty((groups, tiles), v.dtype)
    carry[:, 0] = offs
    for k in range(1, tiles):
        carry[:, k] = combine((carry[:, k - 1], tot[:, k - 1, 255]))
    carry3 = carry[:, :, None]
    out = np.empty_like(v)
    for r in range(4):
        inner = (before if r == 0 else np.asarray(combine((before, s[r - 1])))) if exclusive else combine((before, s[r]))
        out[..., r] = combine((carry3, inner))
    return out.reshape(groups, tiles * 1024)[:, :c].reshape(-1)


def _single(ops: _Ops, args: Sequence[str], grid: int, env: dict[str, np.ndarray]) -> bool:
    """scan.single and scan.single32 (one pass, decoupled look-back; its order depends on the
    run): only where the combination order is free (free_order), computed as the tiled scan (reduce.blocks,
    scan.offsets, scan.tiles over the standard chunks), which then gives the same bits. Its
    look-back scratch (``state``, ``vals``, ``desc``: temporaries no later step reads) is left as it was."""
    src, aux, dst = env[args[0]], env[args[1]], env[args[-1]]
    n = src.size
    if not free_order(ops) or (aux.size and aux.size < n):
        return False
    groups = max(1, min(-(-n // 4096), 4096))
    part = np.zeros(groups, dst.dtype)
    local = {"src": src, "aux": aux, "part": part, "dst": dst}
    if not (_blocks(ops, ("src", "aux", "part"), groups, local) and _offsets(ops, ("part",), 1, local)
            and _tiles(ops, ("src", "aux", "part", "dst"), groups, local)):
        return False
    env[args[-1]] = local["dst"]
    return True


def _singlef(ops: _Ops, args: Sequence[str], grid: int, env: dict[str, np.ndarray]) -> bool:
    """scan.singlef (one pass, 32-bit floats, an order fixed by the length): hostscan's order. Its
    look-back scratch (``desc``) is left as it was."""
    src, aux = env[args[0]], env[args[1]]
    if not ops.plain("T", "A") or grid != -(-src.size // TILE) or aux.size:
        return False
    lifted = np.asarray(ops.lift_for(aux)((src, ops.aux_values(aux, src.size, spread=False))))
    env[args[-1]] = singlef_scan(ops.combine(), ops.element("A", "identity"), ops.params["exclusive"] == "true", lifted)
    return True


_HANDLERS: dict[str, Callable[[_Ops, Sequence[str], int, dict[str, np.ndarray]], bool]] = {
    "reduce.blocks": _blocks, "scan.offsets": _offsets, "scan.tiles": _tiles, "scan.single": _single,
    "scan.single32": _single, "scan.singlef": _singlef}


def _qualified(compiled: CompiledRoutine, step: StepDef) -> str:
    return compiled.routine.kernels[step.kernel].qualified


def _stable_order(field: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """(the stable ascending order (intp indices) of ``field`` (unsigned, ``width`` bits), the
    sorted field): least significant 32-bit words first, each one sort of (word, position in the
    order so far) packed into 64 bits (the word in the high half). A field of one word comes out
    of its one sort already sorted (the high halves): no gather."""
    n = field.size
    order: np.ndarray | None = None
    high = 1 if sys.byteorder == "little" else 0
    position = np.arange(n, dtype=np.uint32)
    passes = range(0, max(width, 1), 32)
    for lo in passes:
        word = field if field.dtype.itemsize <= 4 else ((field >> np.uint64(lo)) & np.uint64(0xFFFFFFFF))
        packed = np.empty(n, np.uint64)
        halves = packed.view(np.uint32).reshape(n, 2)
        halves[:, high] = word if order is None else word[order]
        halves[:, 1 - high] = position
        packed.sort()
        got = halves[:, 1 - high].astype(np.intp)
        order = got if order is None else order[got]
    assert order is not None
    if len(passes) == 1 and field.dtype.itemsize <= 4:
        return order, halves[:, high].astype(field.dtype)
    return order, field[order]


def _radix_run(compiled: CompiledRoutine, todo: Sequence[Launch], i: int, env: dict[str, np.ndarray],
               registry: Registry) -> int:
    """The passes of the sort family's LSD radix sort from ``todo[i]`` (a maximal run of its pass
    kernels, the first reading the keys): the passes cover every bit of the key and each is a
    stable partition by its digit, so the run is the stable sort of ``keys ^ K.$flip``, the values
    (or, with ``$index``, the indices) moving with the keys into the last scatter's outputs.
    Returns the number of launches done here (0: not such a run)."""
    if i or _qualified(compiled, todo[0][0]) not in _PASS:
        return 0
    j = 0
    while j < len(todo) and _qualified(compiled, todo[j][0]) in _PASS:
        j += 1
    run = todo[:j]
    scatters = [s for s, _, _ in run if _qualified(compiled, s) in _SCATTERS]
    keys_name = run[0][0].args[0]
    first = next((s for s, _, _ in run if len(s.args) >= 4 and s.args[0] == keys_name), None)
    if not scatters or first is None or _stale(compiled, todo, run, j):
        return 0
    ops = _Ops.of(compiled, first, registry)
    keys, vals = env[keys_name], env[first.args[1]]
    out_k, out_v = scatters[-1].args[-2], scatters[-1].args[-1]
    if not ops.plain("K", "V") or vals.size not in (0, keys.size) or env[out_k].size != keys.size:
        return 0
    k_t = ops.types["K"]
    xor, _ = ops.op("primitive.bitwise.xor", [k_t, k_t])
    flipped = np.asarray(xor((keys, ops.element("K", "flip")))).astype(keys.dtype, copy=False)
    order, ordered = _stable_order(flipped, k_t.bits)
    env[out_k] = ordered.astype(env[out_k].dtype, copy=False)
    if env[out_v].size:
        if ops.params.get("index") == "true":
            cast, _ = ops.op("primitive.convert.cast", [DataType.U32], {"T": ops.types["V"]})
            vals = np.asarray(cast((np.arange(keys.size, dtype=np.uint32),)))
        env[out_v] = vals[order].astype(env[out_v].dtype, copy=False)
    return j


def _stale(compiled: CompiledRoutine, todo: Sequence[Launch], run: Sequence[Launch], end: int) -> bool:
    """Whether a buffer of the run other than the last scatter's outputs (counts, positions, the
    pass number, the intermediate passes: this path leaves them as they were) is read later or is
    an output of the routine."""
    scat = [s.args for s, _, _ in run if _qualified(compiled, s) in _SCATTERS]
    inputs = {b.name for b in compiled.routine.inputs}
    touched = {a for s, _, _ in run for a in s.args} - inputs - {scat[-1][-2], scat[-1][-1]}
    later = {a for s, _, _ in todo[end:] for a in s.args} | {b.name for b in compiled.routine.outputs}
    return bool(touched & later)


def map_values(expr: str, variables: Mapping[str, tuple[DataType, np.ndarray]], registry: Registry) -> np.ndarray:
    """The text-form expression ``expr`` over whole arrays: every element at once, through the
    reference interpreter's compiled closures and op functions (what a one-invocation-per-element
    program ``out[i] = expr`` computes on the reference backend, without its masks and bounds)."""
    compiler = Compiler(registry, {}, {k: t for k, (t, _) in variables.items()})
    fn, _ = compiler.expr(parse_expr(expr))
    with np.errstate(all="ignore"):
        return np.asarray(fn(_Values({k: a for k, (_, a) in variables.items()}), None))  # type: ignore[arg-type]
