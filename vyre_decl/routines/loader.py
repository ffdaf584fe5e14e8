"""Reading routine files (``*.routines.toml``): validation with file, routine, field and Fix.

Standard routines live in ``routines/`` at the repository root (``vyre_decl/_routines`` in a
wheel); more come from the directories of ``VYRE_DECL_OPS_PATH``, beside op files. A file with
any error is rejected whole (none of its routines is registered) and its diagnostics are kept;
the other files still load.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any, Final, Mapping

from ..ir.diagnostics import Diagnostic
from ..ir.scalars import ELEMENTS
from ..ir.types import DataType
from ..registry.sources import MAX_FILE_BYTES, ROUTINE_SUFFIX, env_ops_dirs, read_bytes
from ..registry.typesets import TypeSetError, parse_type_set
from .model import BufferSpec, KatCase, KernelDef, RepeatDef, Role, RoutineDef, StepDef
from .sizes import SizeError, SizeExpr, parse_size

__all__ = ["standard_routines_dir", "load_routine_files", "PARAM_VALUE"]

ID: Final = re.compile(r"[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+\Z")
NAME: Final = re.compile(r"[a-z_][a-z0-9_]*\Z")
# a kernel parameter's value: an op id, an element (zero, max, ...) or a value type, nothing else,
# so a routine cannot inject text into a kernel
PARAM_VALUE: Final = re.compile(r"([a-z][a-z0-9_]*(\.[a-z0-9_]+)+|" + "|".join(ELEMENTS)
                                + r"|u32|i32|u64|i64|f32|f64|bool|true|false)\Z")
BUFFER: Final = re.compile(r"\s*(in|out|temp|const)\s+([A-Za-z][A-Za-z0-9]*)\s*\[(.*)\]\s*\Z", re.S)
TYPE_VAR: Final = re.compile(r"[A-Z][A-Z0-9]*\Z")
CONST_TYPES: Final = ("u32", "u64")
FAMILY_KEYS: Final = {"name", "version", "summary"}
KERNEL_KEYS: Final = {"summary", "params", "source"}
ROUTINE_KEYS: Final = {"id", "summary", "doc", "like", "types", "attrs", "with", "buffers", "require", "steps", "then",
                        "sample", "written", "kat"}
# what `like = "<id>"` takes from an earlier routine of the file unless the routine gives it
INHERITED: Final = ("types", "attrs", "with", "buffers", "require", "steps", "sample", "written")
STEP_KEYS: Final = {"kernel", "args", "grid", "types", "with"}
REPEAT_KEYS: Final = {"repeat", "steps"}
MAX_STEPS: Final = 64  # declared steps per routine (a repeat counts its steps once)


def standard_routines_dir() -> Path:
    pkg = Path(__file__).resolve().parent.parent
    for candidate in (pkg / "_routines", pkg.parent / "routines"):
        if candidate.is_dir():
            return candidate
    return pkg / "_routines"


def load_routine_files() -> tuple[dict[str, RoutineDef], list[Diagnostic]]:
    """Every routine of the standard directory and of VYRE_DECL_OPS_PATH, by id."""
    diags: list[Diagnostic] = []
    files = sorted(standard_routines_dir().glob("*" + ROUTINE_SUFFIX))
    for d in env_ops_dirs():
        if d.is_dir():
            files.extend(sorted(d.glob("*" + ROUTINE_SUFFIX)))
    parsed = [_read_file(path) for path in files]
    # kernels are shared across files by qualified name (family.kernel), first file first
    shared: dict[str, KernelDef] = {}
    for p in parsed:
        for k in p.kernels.values():
            shared.setdefault(f"{k.family}.{k.name}", k)
    found: dict[str, RoutineDef] = {}
    for p in parsed:
        path, routines, problems = p.path, _file_routines(p, shared), p.problems
        taken = [r.id for r in routines if r.id in found]
        for rid in taken:
            problems.append(Diagnostic("U003", f"routine {rid!r} is already defined by {found[rid].file}",
                                       f"{path} [routine {rid}]", "give the routine another id"))
        if problems:
            diags.extend(problems)
            diags.append(Diagnostic("U020", "the file is rejected: none of its routines is registered", str(path),
                                    "fix the errors reported for it"))
            continue
        found.update({r.id: r for r in routines})
    return found, diags


class _Parsed:
    """One routine file read: its TOML, family, kernels and problems so far."""

    def __init__(self, path: Path) -> None:
        self.path, self.where = path, str(path)
        self.doc: dict[str, Any] = {}
        self.family = ""
        self.kernels: dict[str, KernelDef] = {}
        self.problems: list[Diagnostic] = []

    def bad(self, code: str, message: str, location: str, fix: str) -> None:
        self.problems.append(Diagnostic(code, message, location, fix))


def _read_file(path: Path) -> _Parsed:
    parsed = _Parsed(path)
    problems = parsed.problems
    where = str(path)

    bad = parsed.bad
    raw = read_bytes(path)
    if isinstance(raw, OSError):
        bad("U001", f"cannot read the file: {raw.strerror or raw}", where, "check the path and its permissions")
        return parsed
    if len(raw) > MAX_FILE_BYTES:
        bad("U001", f"the file is over {MAX_FILE_BYTES} bytes", where, "split it into several routine files")
        return parsed
    try:
        doc = parsed.doc = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        bad("U001", f"TOML syntax error: {exc}", where, "fix the TOML syntax at that line")
        return parsed
    unknown = set(doc) - {"family", "kernel", "routine"}
    if unknown:
        bad("U002", f"unknown top-level key(s) {sorted(unknown)}", where, "use [family], [kernel.NAME] and [[routine]]")
    family = doc.get("family")
    if not isinstance(family, dict) or not isinstance(family.get("name"), str) or not NAME.match(family["name"]):
        bad("U002", "a [family] table with a lower-case name is required", where,
            'start the file with [family] name = "reduce" version = "1.0.0" summary = "..."')
        return parsed
    fam = parsed.family = family["name"]
    if set(family) - FAMILY_KEYS:
        bad("U002", f"unknown [family] key(s) {sorted(set(family) - FAMILY_KEYS)}", f"{where} [family]",
            f"use {sorted(FAMILY_KEYS)}")
    kernels = parsed.kernels
    raw_kernels = doc.get("kernel", {})
    if not isinstance(raw_kernels, dict):
        bad("U002", "kernel must be a table of [kernel.NAME] tables", where, "write [kernel.blocks] source = \"\"\"...\"\"\"")
        raw_kernels = {}
    for name, k in raw_kernels.items():
        loc = f"{where} [kernel.{name}]"
        if not NAME.match(name) or not isinstance(k, dict):
            bad("U004", f"bad kernel {name!r}", loc, "name kernels in lower case and give each a table")
            continue
        if set(k) - KERNEL_KEYS:
            bad("U004", f"unknown key(s) {sorted(set(k) - KERNEL_KEYS)}", loc, f"use {sorted(KERNEL_KEYS)}")
        params = k.get("params", [])
        if not isinstance(params, list) or not all(isinstance(p, str) and NAME.match(p) for p in params):
            bad("U004", "params must be a list of lower-case names", loc, 'write params = ["combine", "identity"]')
            params = []
        source = k.get("source")
        if not isinstance(source, str) or "program" not in source:
            bad("U004", "source must be a program in the text form", loc, 'write source = """program NAME workgroup(256, 1, 1) { ... }"""')
            continue
        used = set(re.findall(r"\$([a-z_][a-z0-9_]*)", source))
        if used - set(params):
            bad("U004", f"the source uses ${sorted(used - set(params))[0]}, which is not a parameter", loc,
                "declare it in params or remove it")
        kernels[name] = KernelDef(name, str(k.get("summary", "")), tuple(params), source, fam)
    return parsed


def _file_routines(parsed: _Parsed, shared: Mapping[str, KernelDef]) -> list[RoutineDef]:
    """The routines of a file read by ``_read_file``; a step names a kernel of its own file or
    ``family.kernel`` of any file."""
    if not parsed.family:
        return []
    doc, fam, where, bad = parsed.doc, parsed.family, parsed.where, parsed.bad
    kernels = {**shared, **parsed.kernels}
    routines = []
    raw_routines = doc.get("routine", [])
    if not isinstance(raw_routines, list):
        bad("U002", "routine must be an array of [[routine]] tables", where, "write [[routine]] for each routine")
        raw_routines = []
    seen: dict[str, dict[str, Any]] = {}
    for r in raw_routines:
        if isinstance(r, dict) and "like" in r:
            base = seen.get(r["like"])
            if base is None:
                bad("U005", f"like = {r['like']!r} names no earlier routine of this file",
                    f"{where} [routine {r.get('id')}]", f"use one of {sorted(seen) or 'none'} (declared above it)")
                continue
            own_with = r.get("with", {})
            r = {**{k: base[k] for k in INHERITED if k in base}, **{k: v for k, v in r.items() if k != "like"}}
            if isinstance(base.get("with"), dict) and isinstance(own_with, dict):
                r["with"] = {**base["with"], **own_with}  # with merges: a routine restates only what differs
        if isinstance(r, dict) and "then" in r:  # steps run after the (inherited) steps
            then = r["then"]
            r = {k: v for k, v in r.items() if k != "then"}
            r["steps"] = (r.get("steps") or []) + then if isinstance(then, list) and isinstance(r.get("steps") or [], list) else None
        if isinstance(r, dict) and isinstance(r.get("id"), str):
            seen[r["id"]] = r
        routine = _routine(r, fam, kernels, where, bad)
        if routine is not None:
            routines.append(routine)
    return routines


def _routine(r: Any, fam: str, kernels: Mapping[str, KernelDef], where: str, bad: Any) -> RoutineDef | None:
    rid = r.get("id") if isinstance(r, dict) else None
    loc = f"{where} [routine {rid}]"
    if not isinstance(rid, str) or not ID.match(rid) or not rid.startswith(fam + "."):
        bad("U005", f"bad routine id {rid!r}", loc, f"give an id in the family, e.g. \"{fam}.sum\"")
        return None
    ok = True
    if set(r) - ROUTINE_KEYS:
        bad("U005", f"unknown key(s) {sorted(set(r) - ROUTINE_KEYS)}", loc, f"use {sorted(ROUTINE_KEYS)}")
        ok = False
    types: dict[str, tuple[DataType, ...]] = {}
    raw_types = r.get("types") or {}
    for var, text in (raw_types.items() if isinstance(raw_types, dict) else [("types", None)]):
        try:
            if not TYPE_VAR.match(var) or not isinstance(text, str):
                raise TypeSetError(f"{var!r} = {text!r} is not a type variable (upper case: T, K, V) with a type set")
            types[var] = parse_type_set(text)
        except (TypeSetError, AttributeError, TypeError) as exc:
            bad("U006", f"types.{var}: {exc}", loc, 'write types = { T = "numeric" } (groups: uint, sint, int, float, numeric, any)')
            ok = False
    attrs = r.get("attrs", [])
    if not isinstance(attrs, list) or not all(isinstance(a, str) and NAME.match(a) for a in attrs) or len(set(attrs)) != len(attrs):
        bad("U016", f"attrs = {attrs!r} is not a list of distinct lower-case names", loc, 'write attrs = ["bins"]')
        ok, attrs = False, []
    attr_names, type_vars = frozenset(attrs), frozenset(types)
    params = r.get("with") or {}
    if not isinstance(params, dict):
        bad("U007", "with must be a table", loc, 'write with = { combine = "primitive.math.add" }')
        params, ok = {}, False
    for key, value in params.items():
        if not isinstance(value, str) or not PARAM_VALUE.match(value):
            bad("U007", f"with.{key} = {value!r} is not an op id, an element ({', '.join(ELEMENTS)}) or a type", loc,
                'write with = { combine = "primitive.math.add", identity = "zero" }')
            ok = False
    specs: list[BufferSpec] = []
    raw_buffers = r.get("buffers")
    if not isinstance(raw_buffers, dict) or not raw_buffers:
        bad("U008", "buffers must be a table of name = \"in T[]\" / \"out T[size]\" / \"temp T[size]\"", loc,
            'write buffers = { x = "in T[]", out = "out T[1]" }')
        return None
    names = frozenset(raw_buffers)
    if names & attr_names:
        bad("U016", f"{sorted(names & attr_names)[0]!r} is both a buffer and an attribute", loc, "rename one of them")
        ok = False
    for name, text in raw_buffers.items():
        m = BUFFER.match(text) if isinstance(text, str) else None
        if not NAME.match(name) or m is None:
            bad("U008", f"buffers.{name} = {text!r} is not \"in T[]\", \"out T[size]\" or \"temp T[size]\"", loc,
                'write x = "in T[]" or out = "out T[len(x)]"')
            ok = False
            continue
        role, dtype, size_text = m.group(1), m.group(2), m.group(3).strip()
        if dtype not in types and dtype not in {t.value for t in DataType}:
            bad("U008", f"buffers.{name}: unknown type {dtype}", loc, f"use a type variable ({', '.join(types) or 'none'}) or a value type")
            ok = False
        if role == "in":
            if size_text:
                bad("U008", f"buffers.{name}: an input is sized by the caller's array", loc, f'write {name} = "in {dtype}[]"')
                ok = False
            specs.append(BufferSpec(name, "in", dtype, None))
            continue
        try:
            if role == "const":
                if dtype not in CONST_TYPES:
                    raise SizeError(f"a constant holds {' or '.join(CONST_TYPES)} values, not {dtype}")
                values = tuple(parse_size(v.strip(), names, attr_names, type_vars) for v in _split_args(size_text))
                specs.append(BufferSpec(name, "const", dtype, parse_size(str(len(values)), names, attr_names), values))
                continue
            size = parse_size(size_text, names, attr_names, type_vars)
        except SizeError as exc:
            bad("U009", f"buffers.{name}: {exc}", loc, "write a size such as len(x), 1 or ceil_div(len(x), 256)")
            ok = False
            continue
        role_t: Role = "out" if role == "out" else "temp"
        specs.append(BufferSpec(name, role_t, dtype, size))
    if not any(s.role == "out" for s in specs):
        bad("U008", "a routine needs at least one output buffer", loc, 'add out = "out T[1]"')
        ok = False
    requires = []
    raw_require = r.get("require", [])
    for i, text in enumerate(raw_require if isinstance(raw_require, list) else [raw_require]):
        try:
            requires.append(parse_size(text, names, attr_names, type_vars, condition=True))
        except SizeError as exc:
            bad("U009", f"require[{i}]: {exc}", loc, 'write require = ["len(x) == rows * cols"]')
            ok = False
    written = r.get("written", [])
    sized = {b.name for b in specs if b.role in ("out", "temp")}
    if not isinstance(written, list) or not set(written) <= sized:
        bad("U008", f"written = {written!r} must list outputs and temporaries ({', '.join(sorted(sized))})", loc,
            'write written = ["partial", "out"] (buffers the steps fill before reading them)')
        ok, written = False, []
    sample = _sample(r.get("sample", {}), [b.name for b in specs if b.role == "in"], attrs, loc, bad)
    ok = ok and sample is not None
    raw_steps = r.get("steps")
    if not isinstance(raw_steps, list) or not raw_steps:
        bad("U010", "steps must be a non-empty list of { kernel, args, grid }", loc,
            'write steps = [{ kernel = "blocks", args = ["x", "out"], grid = "1" }]')
        return None
    context = _StepContext(kernels, params, names, attr_names, type_vars, loc, bad)
    steps = context.steps(raw_steps, f"{loc} steps")
    ok = ok and context.ok
    kats = _kats(r.get("kat", []), types, sum(b.role == "in" for b in specs), tuple(attrs), loc, bad)
    if kats is None or not ok:
        return None
    used = {step.kernel: kernels[step.kernel] for step in _walk(steps)}
    return RoutineDef(rid, str(r.get("summary", "")), str(r.get("doc", "")), types, dict(params), tuple(specs),
                      steps, kats, used, where, tuple(attrs), tuple(requires), sample or {}, frozenset(written))


def _sample(raw: Any, inputs: list[str], attrs: list[str], loc: str, bad: Any) -> dict[str, SizeExpr] | None:
    """``sample``: how conformance sizes the inputs (default N elements each) and sets every
    attribute, as size expressions of the unit's size N."""
    if not isinstance(raw, dict) or set(raw) - set(inputs) - set(attrs):
        bad("U018", f"sample keys must be inputs ({', '.join(inputs)}) or attributes ({', '.join(attrs) or 'none'})", loc,
            'write sample = { rows = "N // 7 + 1", x = "(N // 7 + 1) * 7" }')
        return None
    missing = [a for a in attrs if a not in raw]
    if missing:
        bad("U018", f"sample gives no value for the attribute {missing[0]}", loc,
            f'add sample = {{ {missing[0]} = "<size expression of N>" }} (conformance needs it)')
        return None
    out = {}
    for key, text in raw.items():
        try:
            out[key] = parse_size(str(text), frozenset(), frozenset({"N"}))
        except SizeError as exc:
            bad("U018", f"sample.{key}: {exc}", loc, 'write an expression of N such as "N // 7 * 7"')
            return None
    return out


def _walk(steps: tuple[StepDef | RepeatDef, ...]) -> list[StepDef]:
    return [x for s in steps for x in (_walk(s.steps) if isinstance(s, RepeatDef) else [s])]


def _split_args(text: str) -> list[str]:
    """``a, min(b, c)`` -> ``["a", "min(b, c)"]``: commas outside parentheses."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        depth += (ch == "(") - (ch == ")")
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    return parts + [cur] if cur.strip() or parts else []


class _StepContext:
    """Validates a routine's steps (and nested ``{ repeat, steps }`` groups)."""

    def __init__(self, kernels: Mapping[str, KernelDef], params: Mapping[str, Any], names: frozenset[str],
                 attrs: frozenset[str], type_vars: frozenset[str], loc: str, bad: Any) -> None:
        self.kernels, self.params, self.names, self.attrs, self.type_vars = kernels, params, names, attrs, type_vars
        self.loc, self.bad, self.ok, self.count = loc, bad, True, 0

    def _fail(self, code: str, message: str, where: str, fix: str) -> None:
        self.bad(code, message, where, fix)
        self.ok = False

    def steps(self, raw: list[Any], where: str) -> tuple[StepDef | RepeatDef, ...]:
        out: list[StepDef | RepeatDef] = []
        for i, s in enumerate(raw):
            sloc = f"{where}[{i}]"
            self.count += 1
            if self.count > MAX_STEPS:
                self._fail("U010", f"more than {MAX_STEPS} steps", sloc, "use { repeat, steps } for passes")
                break
            if isinstance(s, dict) and "repeat" in s:
                if set(s) - REPEAT_KEYS or not isinstance(s.get("steps"), list) or not s["steps"]:
                    self._fail("U010", "a repeat is { repeat = \"<size>\", steps = [...] }", sloc,
                               'write { repeat = "bits(K) // 4", steps = [{ kernel = ..., args = [...], grid = ... }] }')
                    continue
                try:
                    count = parse_size(str(s["repeat"]), self.names, self.attrs, self.type_vars)
                except SizeError as exc:
                    self._fail("U009", f"repeat: {exc}", sloc, 'write repeat = "bits(K) // 4"')
                    continue
                out.append(RepeatDef(count, self.steps(s["steps"], f"{sloc} steps")))
                continue
            step = self.step(s, sloc)
            if step is not None:
                out.append(step)
        return tuple(out)

    def step(self, s: Any, sloc: str) -> StepDef | None:
        if not isinstance(s, dict) or set(s) - STEP_KEYS or "kernel" not in s:
            self._fail("U010", f"a step is a table with {sorted(STEP_KEYS)}", sloc, 'write { kernel = "blocks", args = ["x", "out"], grid = "1" }')
            return None
        kernel = self.kernels.get(s["kernel"]) if isinstance(s["kernel"], str) else None
        if kernel is None:
            self._fail("U010", f"unknown kernel {s['kernel']!r}", sloc, f"define [kernel.{s['kernel']}] or use one of {sorted(self.kernels)}")
            return None
        own = s.get("with", {})
        if not isinstance(own, dict) or not all(isinstance(v, str) and PARAM_VALUE.match(v) for v in own.values()):
            self._fail("U007", f"step with = {own!r}: each value is an op id, an element or a type", sloc,
                       'write with = { lift = "primitive.math.mul" }')
            return None
        missing = [p for p in kernel.params if p not in self.params and p not in own]
        if missing:
            self._fail("U007", f"kernel {kernel.name} needs with.{missing[0]}", sloc, f"give with = {{ {missing[0]} = ... }}")
        args = s.get("args", [])
        if not isinstance(args, list) or not all(isinstance(a, str) and a in self.names for a in args):
            self._fail("U010", f"args must name buffers of the routine ({', '.join(sorted(self.names))})", sloc, "fix the names")
            return None
        try:
            grid = parse_size(str(s.get("grid", "")), self.names, self.attrs, self.type_vars)
        except SizeError as exc:
            self._fail("U009", f"grid: {exc}", sloc, 'write grid = "ceil_div(len(x), 256)"')
            return None
        types = s.get("types", {})
        valid = {t.value for t in DataType} | set(self.type_vars)
        if not isinstance(types, dict) or not all(TYPE_VAR.match(k) and v in valid for k, v in types.items()):
            self._fail("U006", f"step types {types!r}: each kernel type variable takes a routine type variable or a type",
                       sloc, 'write types = { T = "u32" } or types = { T = "A" }')
            return None
        return StepDef(s["kernel"], tuple(args), grid, tuple(sorted(types.items())), tuple(sorted(own.items())))


def _kats(raw: Any, types: Mapping[str, tuple[DataType, ...]], n_inputs: int, attrs: tuple[str, ...],
          loc: str, bad: Any) -> tuple[KatCase, ...] | None:
    """``kat = [case, ...]`` for every binding, or ``kat.<type set> = [...]`` for the bindings whose
    first type variable is in the set. A case is ``[inputs..., outputs...]``, or
    ``{ in = [...], attrs = { bins = 4 }, out = [...] }`` for a routine with attributes."""
    groups = raw.items() if isinstance(raw, dict) else [(None, raw)]
    out: list[KatCase] = []
    for key, cases in groups:
        within = None
        if key is not None:
            try:
                within = frozenset(parse_type_set(key))
            except TypeSetError as exc:
                bad("U011", f"kat.{key}: {exc}", loc, "key known answers by a type set such as float or u32")
                return None
        if not isinstance(cases, list):
            cases = [None]
        for case in cases:
            if isinstance(case, dict) and not set(case) - {"in", "out", "attrs"} and isinstance(case.get("in"), list) \
                    and isinstance(case.get("out"), list) and isinstance(case.get("attrs", {}), dict):
                ins, outs, given = case["in"], case["out"], case.get("attrs", {})
            elif isinstance(case, list):
                ins, outs, given = case[:n_inputs], case[n_inputs:], {}
            else:
                bad("U011", "a known answer is [inputs..., outputs...] or { in = [...], attrs = {...}, out = [...] }", loc,
                    "write kat = [[[1, 2, 3], [6]]]")
                return None
            if len(ins) != n_inputs or not outs or set(given) != set(attrs) \
                    or not all(type(v) is int and v >= 0 for v in given.values()):
                bad("U011", f"a known answer needs {n_inputs} input(s), the outputs and attrs {list(attrs)} (integers)", loc,
                    "give every input, the outputs and every attribute")
                return None
            out.append(KatCase(within, tuple(ins), tuple(outs), dict(given)))
    return tuple(out)
