"""The routine file format (``*.routines.toml``): its keys, declared once, checked fast, exported as JSON Schema.

The tables below are the schema, in the op format's machinery (``registry/schema.py``: ``Key``,
``check_table``, ``check_classes``, the pydantic export), so both kinds of file are checked the
same way, ``[class.NAME]`` tables included (any routine key but ``id`` and ``class``): unknown
keys and values of the wrong kind are errors naming the field, before anything is built from the
file. What a shape cannot express (type sets that exist, sizes that parse, kernels that validate,
known answers that fit their types, ...) is checked by ``build.py`` and ``loader.py``.
docs/routines.md is the author's reference.
"""

from __future__ import annotations

from typing import Any, Final, Mapping

from ..registry.schema import Key, Problem, check_classes, check_table, pydantic_fields

__all__ = ["FAMILY_KEYS", "KERNEL_KEYS", "ROUTINE_KEYS", "ROUTINE_ONLY_KEYS", "STEP_KEYS", "REPEAT_KEYS", "check_routine_shape",
           "check_steps_shape", "json_schema", "MAX_REPEAT_NESTING"]

DOC: Final = "docs/routines.md"
MAX_REPEAT_NESTING: Final = 4  # { repeat, steps } inside { repeat, steps }: the depth allowed

FAMILY_KEYS: Final[Mapping[str, Key]] = {
    "name": Key("str", "the family: the prefix of every routine id of the file", True),
    "version": Key("str", "semantic version MAJOR.MINOR.PATCH", True),
    "summary": Key("str", "one line about the family"),
}
KERNEL_KEYS: Final[Mapping[str, Key]] = {
    "summary": Key("str", "what the kernel computes"),
    "params": Key("list[str]", "the $name parameters of the source, given by each routine's with"),
    "source": Key("str", "one program in the text form (docs/text-form.md)", True),
}
# keys of a routine, which a [class.NAME] table may also give
ROUTINE_KEYS: Final[Mapping[str, Key]] = {
    "summary": Key("str", "what the routine computes, including empty inputs, NaNs and ties"),
    "doc": Key("str", "longer documentation"),
    "types": Key("map[str]", 'type variable -> type set, e.g. { T = "numeric" }'),
    "attrs": Key("list[str]", "integer attributes a caller gives by keyword"),
    "with": Key("map[str]", "kernel parameter -> an op id, an element, a type, true or false"),
    "buffers": Key("map[str]", 'name -> "in T[]", "out T[size]", "temp T[size]" or "const u32[e1, ...]"'),
    "require": Key("list[str]", "conditions on lengths and attributes checked before any launch"),
    "steps": Key("list[table]", "the launches in order: { kernel, args, grid } or { repeat, steps }"),
    "then": Key("list[table]", "steps run after those of steps (the routine's or its class's)"),
    "sample": Key("map[str]", "conformance: input lengths and attributes as size expressions of N"),
    "written": Key("list[str]", "outputs and temporaries the steps fill before reading them"),
    "kat": Key("list|table", "known answers [inputs..., outputs...] or { in, attrs, out }, or type-keyed"),
}
# a [[routine]] table: its id and class, and every key a [class.NAME] table may give it too
ROUTINE_ONLY_KEYS: Final[Mapping[str, Key]] = {
    "id": Key("str", "the routine id: the family name, a dot, the routine's name", True),
    "class": Key("str", "a [class.NAME] table of this file whose keys the routine takes unless it gives them (a key "
                 "it gives replaces the class's whole)"),
}
STEP_KEYS: Final[Mapping[str, Key]] = {
    "kernel": Key("str", "a kernel of the file, or family.kernel of another file", True),
    "args": Key("list[str]", "routine buffers bound to the kernel's non-workgroup buffers in order", True),
    "grid": Key("str", "the number of workgroups along x (a size expression)", True),
    "types": Key("map[str]", "kernel type variable -> a routine type variable or a type"),
    "with": Key("map[str]", "parameters that differ from the routine's with"),
}
REPEAT_KEYS: Final[Mapping[str, Key]] = {
    "repeat": Key("str", "how many times the steps run in a row (a size expression)", True),
    "steps": Key("list[table]", "the steps repeated", True),
}
# `like = "<an earlier routine's id>"` was the routine files' own way to share keys; classes replace it
_RENAMED: Final = {"like": 'routine files share keys as op files do: put the keys in [class.NAME] (e.g. [class.fold] '
                           'steps = [...]) and write class = "fold" in each routine; a key a routine gives replaces '
                           "the class's whole (with included: restate every parameter)"}


def check_steps_shape(steps: list[Any], where: str, rid: str | None, out: list[Problem], depth: int = 0) -> None:
    """The shape of a list of steps (``steps``/``then``), nested repeats included (at most
    ``MAX_REPEAT_NESTING`` deep, so a hostile nesting costs no recursion)."""
    for i, step in enumerate(steps):
        fld = f"{where}[{i}]"
        if not isinstance(step, dict):
            out.append((rid, fld, "a step must be a table", 'write { kernel = "blocks", args = ["x", "out"], grid = "1" }'))
        elif "repeat" in step:
            check_table(step, REPEAT_KEYS, fld + ".", rid, out, DOC)
            if isinstance(step.get("steps"), list) and all(isinstance(s, dict) for s in step["steps"]):
                if depth + 1 >= MAX_REPEAT_NESTING:
                    out.append((rid, f"{fld}.steps", f"repeats are nested more than {MAX_REPEAT_NESTING} deep",
                                "flatten the repeats (a repeat of a repeat is one repeat of the product)"))
                else:
                    check_steps_shape(step["steps"], f"{fld}.steps", rid, out, depth + 1)
        else:
            check_table(step, STEP_KEYS, fld + ".", rid, out, DOC)


def check_routine_shape(raw: Mapping[str, Any]) -> list[Problem]:
    """Every key of a parsed routine file that the schema does not allow, with a fix: problems
    ``(routine id or None, field, message, fix)``."""
    out: list[Problem] = []
    for name in raw:
        if name not in ("family", "kernel", "class", "routine"):
            out.append((None, name, f"unknown top-level key {name!r}", "a routine file has [family], [kernel.NAME], "
                        "[class.NAME] and [[routine]]"))
    family = raw.get("family")
    if not isinstance(family, dict):
        out.append((None, "family", "the file has no [family] table",
                    'start the file with [family] name = "reduce" version = "1.0.0" summary = "..."'))
    else:
        check_table(family, FAMILY_KEYS, "family.", None, out, DOC)
    kernels = raw.get("kernel", {})
    if not isinstance(kernels, dict) or not all(isinstance(k, dict) for k in kernels.values()):
        out.append((None, "kernel", "kernel must hold [kernel.NAME] tables", 'write [kernel.blocks] source = """..."""'))
    else:
        for name, kernel in kernels.items():
            check_table(kernel, KERNEL_KEYS, f"kernel.{name}.", None, out, DOC)
    before = len(out)
    check_classes(raw, ROUTINE_KEYS, out, DOC, _RENAMED)
    if len(out) == before:
        for name, cls in raw.get("class", {}).items():
            _steps_shape(cls, f"class.{name}.", None, out)
    routines = raw.get("routine", [])
    if not isinstance(routines, list) or not all(isinstance(r, dict) for r in routines):
        out.append((None, "routine", "routine must be an array of [[routine]] tables", "write [[routine]] for each routine"))
        return out
    for i, r in enumerate(routines):
        rid = r.get("id") if isinstance(r.get("id"), str) else None
        where = "" if rid else f"routine[{i}]."
        check_table(r, {**ROUTINE_ONLY_KEYS, **ROUTINE_KEYS}, where, rid, out, DOC, _RENAMED)
        _steps_shape(r, where, rid, out)
    return out


def _steps_shape(table: Mapping[str, Any], where: str, rid: str | None, out: list[Problem]) -> None:
    for key in ("steps", "then"):
        if isinstance(table.get(key), list) and all(isinstance(s, dict) for s in table[key]):
            check_steps_shape(table[key], where + key, rid, out)


def json_schema() -> dict[str, Any]:
    """JSON Schema of a routine file, for editors (``python -m vyre_decl.ops schema --routines``)."""
    from typing import Union

    from pydantic import ConfigDict, Field, create_model

    config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)
    step = create_model("StepSpec", __config__=config, **pydantic_fields(STEP_KEYS))
    repeat = create_model("RepeatSpec", __config__=config, **pydantic_fields(REPEAT_KEYS, {"list[table]": list[Any]}))
    steps = list[Union[step, repeat]]  # type: ignore[valid-type]
    family = create_model("FamilySpec", __config__=config, **pydantic_fields(FAMILY_KEYS))
    kernel = create_model("KernelSpec", __config__=config, **pydantic_fields(KERNEL_KEYS))
    cls = create_model("RoutineClassSpec", __config__=config, **pydantic_fields(ROUTINE_KEYS, {"list[table]": steps}))
    routine = create_model("RoutineSpec", __config__=config,
                           **pydantic_fields({**ROUTINE_ONLY_KEYS, **ROUTINE_KEYS}, {"list[table]": steps}))
    file = create_model("RoutineFile", __config__=config, family=(family, ...),
                        kernel=(dict[str, kernel], Field(default_factory=dict)),  # type: ignore[valid-type]
                        class_=(dict[str, cls], Field(default_factory=dict, alias="class")),  # type: ignore[valid-type]
                        routine=(list[routine], Field(default_factory=list)))  # type: ignore[valid-type]
    schema: dict[str, Any] = file.model_json_schema(by_alias=True)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "vyre_decl routine file (*.routines.toml)"
    return schema
