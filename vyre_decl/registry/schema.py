"""The op file format v2 (``ops/*.toml``): its keys, declared once, checked fast, exported as JSON Schema.

The tables below are the schema. ``check_shape`` applies them to a parsed file without any
third-party import (the loader's path, so a cold start stays fast); ``pydantic_models`` builds
the same schema as pydantic models, which export the JSON Schema for editors and serve tests as
an independent second validator. Unknown keys are errors. The shape is checked here; what a
shape cannot express (types that exist, templates that parse, laws that fit, KAT values of the
right types, ...) is checked in ``opbuild.py``. docs/ops-format.md is the author's reference::

    [dialect]
    name = "primitive.math"
    version = "2.0.0"
    summary = "..."

    [class.binary]                          # defaults that ops name with class = "binary"
    signature = "(a: T, b: T) -> T"
    types = { T = "numeric" }

    [[op]]
    id = "primitive.math.add"
    class = "binary"
    summary = "a + b: wrapping for integers, IEEE for floats"
    laws = ["commutative", "associative @int", "identity(zero) @int", "identity(-0.0) @float"]
    reference = "add"
    ptx = "add{T.rn}.{T} {out}, {a}, {b};"
    kat.u32 = [[1, 2, 3], [0xFFFFFFFF, 1, 0]]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, Mapping

__all__ = ["Key", "DIALECT_KEYS", "OP_KEYS", "OP_ONLY_KEYS", "V1_KEYS", "Problem", "check_table", "check_classes",
           "check_shape", "pydantic_fields", "pydantic_models", "json_schema"]


@dataclass(frozen=True)
class Key:
    kind: str  # str, int, list[str], map[str], map[int], str|table, list|table, table, list[table]
    doc: str
    required: bool = False


DIALECT_KEYS: Final[Mapping[str, Key]] = {
    "name": Key("str", "dialect name; every op id starts with it and a dot", True),
    "version": Key("str", "semantic version MAJOR.MINOR.PATCH; of two files of one dialect the higher wins", True),
    "summary": Key("str", "one line about the dialect"),
    "requires": Key("list[str]", "capabilities a backend needs for this dialect"),
}
# keys of an op, which a [class.NAME] table may also give (an op's own key replaces its class's)
OP_KEYS: Final[Mapping[str, Key]] = {
    "summary": Key("str", "one line saying what the op computes (required, here or from the class)"),
    "signature": Key("str", '"(a: T, b: T; attr: u32 = 0) -> out: T"; mem before the first operand makes the op '
                     "atomic (required, here or from the class)"),
    "types": Key("map[str]", 'type variable -> type set, e.g. { T = "int,f32" }'),
    "bindings": Key("list[str]", 'the allowed combinations of type variables, e.g. ["S=u32,f32; T=u32,f32"] '
                    "(default: every combination)"),
    "laws": Key("list[str]", 'law strings, e.g. "identity(zero) @int"'),
    "waive": Key("map[str]", "law name -> why the law is not declared although it holds"),
    "ranges": Key("list[str]", 'range laws bounding an unsigned result, e.g. "0 .. b.hi - 1 if b.lo >= 1 @uint"'),
    "rewrites": Key("list[str]", 'cheaper equal results where the operands\' bounds allow, e.g. "a if a.hi < b.lo @uint"'),
    "reference": Key("str|table", "a reference function, or a type-keyed table of them"),
    "compose": Key("str|table", "steps and a result expression over the operands and attributes, or a type-keyed "
                   "table of them"),
    "ulp": Key("map[int]", "accuracy per float result type set: max ULP error against the correctly rounded result"),
    "temps": Key("map[str]", "template temporaries: name -> type or type variable"),
    "ptx": Key("str|table", "a PTX template, or a type-keyed table of templates"),
    "kat": Key("list|table", "known-answer rows [inputs..., expected], type-keyed"),
    "doc": Key("str", "longer documentation"),
    "traits": Key("list[str]", 'what the semantics must know beyond the laws: "nan-bits" (the result depends on '
                  "the payload or sign of a NaN operand, which arithmetic leaves open)"),
}
OP_ONLY_KEYS: Final[Mapping[str, Key]] = {
    "id": Key("str", "the op id: the dialect name, a dot, the op's name", True),
    "class": Key("str", "a [class.NAME] table of this file whose keys the op takes"),
}
# keys of format v1 that v2 spells differently, and how
V1_KEYS: Final = {
    "category": "remove it: an op is defined by `reference` or `compose`",
    "inputs": 'declare the operands in signature = "(a: T, b: T) -> T"',
    "outputs": 'declare the result in signature = "(a: T, b: T) -> T"',
    "attrs": 'declare attributes after ";" in the signature: "(a: f32; k: f32 = 3.0) -> f32"',
    "type_vars": 'write types = { T = "numeric" } (type sets may name groups)',
    "tolerance_ulp": "write ulp = { f32 = 1 }",
}
_V1_FIXES: Final = {k: f"this looks like op format v1; {v}" for k, v in V1_KEYS.items()}
# the fixes for keys a class table cannot hold (registry/classes.py)
_CLASS_FIXES: Final = {
    "id": "a class has no id: write the id in each entry that names the class",
    "class": "a class cannot take another class's keys: write the keys in this class",
}
_KIND_TEXT: Final = {
    "str": "a string", "int": "an integer", "list[str]": "a list of strings", "map[str]": "a table of strings",
    "map[int]": "a table of integers", "str|table": "a string or a table", "list|table": "a list or a table",
    "table": "a table", "list[table]": "a list of tables",
}


def _is(kind: str, value: Any) -> bool:
    if kind == "str":
        return isinstance(value, str)
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "list[str]":
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    if kind in ("map[str]", "map[int]"):
        return isinstance(value, dict) and all(_is(kind[4:-1], v) for v in value.values())
    if kind == "str|table":
        return isinstance(value, (str, dict))
    if kind == "table":
        return isinstance(value, dict)
    if kind == "list[table]":
        return isinstance(value, list) and all(isinstance(v, dict) for v in value)
    return isinstance(value, (list, dict))  # list|table


Problem = tuple[str | None, str, str, str | None]  # (op id, field path, message, fix)


def check_table(value: Mapping[str, Any], keys: Mapping[str, Key], where: str, owner: str | None, out: list[Problem],
                doc: str = "docs/ops-format.md", renamed: Mapping[str, str] = _V1_FIXES) -> None:
    """Every missing required key, unknown key and value of the wrong kind of one table, as
    problems ``(owner, where + key, message, fix)`` (the schema of op and routine files alike);
    ``renamed``: the fix for an unknown key that another spelling replaces."""
    for name, key in keys.items():
        if key.required and name not in value:
            out.append((owner, f"{where}{name}", f"missing key {name!r}", f"add {name} = ..."))
    for name, v in value.items():
        found = keys.get(name)
        if found is None:
            fix = renamed[name] if name in renamed else \
                f"remove it (known keys: {', '.join(keys)}; see {doc})"
            out.append((owner, f"{where}{name}", f"unknown key {name!r}", fix))
        elif not _is(found.kind, v):
            out.append((owner, f"{where}{name}", f"{name} must be {_KIND_TEXT[found.kind]}, not {type(v).__name__}",
                        f"see {doc} for the key's form"))


_table = check_table


def check_classes(raw: Mapping[str, Any], keys: Mapping[str, Key], out: list[Problem], doc: str = "docs/ops-format.md",
                  renamed: Mapping[str, str] = _V1_FIXES) -> None:
    """The shape of a file's ``[class.NAME]`` tables: each holds ``keys``, an entry's keys but
    ``id`` and ``class`` (what a class means: ``classes.py``)."""
    classes = raw.get("class", {})
    if not isinstance(classes, dict) or not all(isinstance(c, dict) for c in classes.values()):
        out.append((None, "class", "class must hold [class.NAME] tables", "write [class.NAME] tables of the keys "
                    "entries share, and class = \"NAME\" in each entry"))
        return
    for cname, cls in classes.items():
        check_table(cls, keys, f"class.{cname}.", None, out, doc, {**renamed, **_CLASS_FIXES})


def check_shape(raw: Mapping[str, Any]) -> list[Problem]:
    """Every key of a parsed op file that the schema does not allow, with a fix."""
    out: list[Problem] = []
    for name in raw:
        if name not in ("dialect", "class", "op"):
            out.append((None, name, f"unknown top-level key {name!r}", "a file has [dialect], [class.NAME] and [[op]]"))
    dialect = raw.get("dialect")
    if not isinstance(dialect, dict):
        out.append((None, "dialect", "the file has no [dialect] table", "add [dialect] with name and version"))
    else:
        _table(dialect, DIALECT_KEYS, "dialect.", None, out)
    check_classes(raw, OP_KEYS, out)
    ops = raw.get("op", [])
    if not isinstance(ops, list) or not all(isinstance(o, dict) for o in ops):
        out.append((None, "op", "op must be an array of [[op]] tables", "write each op as an [[op]] table"))
        return out
    for i, op in enumerate(ops):
        op_id = op.get("id") if isinstance(op.get("id"), str) else None
        _table(op, {**OP_ONLY_KEYS, **OP_KEYS}, "" if op_id else f"op[{i}].", op_id, out)
    return out


def pydantic_fields(keys: Mapping[str, Key], kinds: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """pydantic field definitions for ``create_model`` of the keys of one table (``kinds``: a
    model for a key kind such as ``list[table]``, else the plain kind's type)."""
    from typing import Union

    from pydantic import Field, StrictInt, StrictStr

    py_types: dict[str, Any] = {
        "str": StrictStr, "int": StrictInt, "list[str]": list[StrictStr], "map[str]": dict[str, StrictStr],
        "map[int]": dict[str, StrictInt], "str|table": Union[StrictStr, dict[str, Any]],
        "list|table": Union[list[Any], dict[str, Any]], "table": dict[str, Any], "list[table]": list[dict[str, Any]],
        **(kinds or {}),
    }
    out = {}
    for name, key in keys.items():
        py = py_types[key.kind]
        default = ... if key.required else None
        out[name + "_" if name in ("class", "with") else name] = (py if key.required else py | None,
                                                                  Field(default, description=key.doc, alias=name))
    return out


def pydantic_models() -> dict[str, Any]:
    """The schema as pydantic models (``OpFile``, ``DialectSpec``, ``ClassSpec``, ``OpSpec``)."""
    from pydantic import ConfigDict, Field, create_model

    config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)
    fields = pydantic_fields
    dialect = create_model("DialectSpec", __config__=config, **fields(DIALECT_KEYS))
    cls = create_model("ClassSpec", __config__=config, **fields(OP_KEYS))
    op = create_model("OpSpec", __config__=config, **fields({**OP_ONLY_KEYS, **OP_KEYS}))
    file = create_model("OpFile", __config__=config, dialect=(dialect, ...),
                        class_=(dict[str, cls], Field(default_factory=dict, alias="class")),  # type: ignore[valid-type]
                        op=(list[op], Field(default_factory=list)))  # type: ignore[valid-type]
    return {"OpFile": file, "DialectSpec": dialect, "ClassSpec": cls, "OpSpec": op}


def json_schema() -> dict[str, Any]:
    """JSON Schema of an op file, for editors (e.g. with taplo or Even Better TOML)."""
    schema: dict[str, Any] = pydantic_models()["OpFile"].model_json_schema(by_alias=True)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "vyre_decl op file (format v2)"
    return schema
