"""The op file format (``ops/*.toml``) as pydantic models; unknown keys are errors.

This module imports pydantic, so it is loaded only when op files are read or the JSON Schema is
exported, never at ``import vyre_decl``. The structural rules pydantic cannot express (types
that exist, placeholders that resolve, laws that fit the signature, ...) live in ``loader.py``.

One file holds one dialect::

    [dialect]
    name = "primitive.math"
    version = "1.0.0"
    summary = "..."

    [[op]]
    id = "primitive.math.add"
    summary = "wrapping integer / IEEE float addition"
    category = "intrinsic"                  # or "composite" (defined by `compose`)
    type_vars = { T = ["u32", "i32", "f32"] }
    inputs = [{ name = "a", type = "T" }, { name = "b", type = "T" }]
    outputs = [{ name = "out", type = "T" }]
    laws = [{ law = "commutative" }, { law = "identity", element = 0, when = { T = ["u32", "i32"] } }]
    reference = { ufunc = "add" }           # or { kernel = "..." }, a list with `when`, or `compose`
    ptx = { u32 = "add.u32 {out}, {a}, {b};", ... }   # nested one level per type variable

    [[op.kat]]
    types = { T = "u32" }
    cases = [[0xFFFFFFFF, 1, 0]]            # inputs..., expected output
"""

from __future__ import annotations

from typing import Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictInt, StrictStr

__all__ = ["OpFile", "OpSpec", "DialectSpec", "LAW_KINDS", "json_schema"]

Scalar = Union[StrictBool, StrictInt, StrictFloat, StrictStr]

LAW_KINDS = (
    "commutative",
    "associative",
    "identity",
    "left_identity",
    "right_identity",
    "absorbing",
    "left_absorbing",
    "right_absorbing",
    "idempotent",
    "involution",
    "self_inverse",
    "distributive",
)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DialectSpec(_Strict):
    name: str = Field(description="dialect name; every op id starts with it and a dot")
    version: str = Field(description="semantic version MAJOR.MINOR.PATCH; of two files of one dialect the higher wins")
    summary: str = ""
    requires: list[str] = Field(default_factory=list, description="capabilities a backend needs for this dialect")


class PortSpec(_Strict):
    name: str
    type: str = Field(description="a value type (bool, u32, i32, u64, i64, f32, f64) or a type variable")
    memory: bool = Field(False, description="atomic ops: this first input is the memory operand")
    summary: str = ""


class AttrSpec(_Strict):
    name: str
    type: str = Field(description="a value type")
    default: Scalar | None = Field(None, description="omit to make the attribute required")
    summary: str = ""


class LawSpec(_Strict):
    law: Literal[LAW_KINDS]  # type: ignore[valid-type]
    element: Scalar | None = Field(None, description="the identity/absorbing/result element")
    over: str | None = Field(None, description="distributive: the op this one distributes over")
    when: dict[str, list[str]] | None = Field(None, description="restrict to these type-variable bindings")


class RefSpec(_Strict):
    ufunc: str | None = Field(None, description="a whitelisted numpy ufunc name")
    kernel: str | None = Field(None, description="a named built-in reference kernel")
    when: dict[str, list[str]] | None = None


class KatSpec(_Strict):
    types: dict[str, str] = Field(default_factory=dict, description="binding of every type variable")
    attrs: dict[str, Scalar] = Field(default_factory=dict)
    cases: list[list[Scalar]] = Field(description="rows of input values followed by the expected output")
    note: str = ""


class OpSpec(_Strict):
    id: str
    summary: str
    category: Literal["intrinsic", "composite"]
    type_vars: dict[str, list[str]] = Field(default_factory=dict)
    inputs: list[PortSpec]
    outputs: list[PortSpec]
    attrs: list[AttrSpec] = Field(default_factory=list)
    laws: list[LawSpec] = Field(default_factory=list)
    reference: RefSpec | list[RefSpec] | None = None
    compose: str | None = Field(None, description="an expression in the program text syntax over the inputs")
    tolerance_ulp: dict[str, int] = Field(default_factory=dict, description="ULP budget per float output type")
    temps: dict[str, str] = Field(default_factory=dict, description="PTX temporaries: name -> type or type variable")
    ptx: str | dict[str, Any] | None = Field(None, description="templates, nested one level per type variable")
    kat: list[KatSpec] = Field(default_factory=list)
    doc: str = ""


class OpFile(_Strict):
    dialect: DialectSpec
    op: list[OpSpec] = Field(default_factory=list)


def json_schema() -> dict[str, Any]:
    """JSON Schema of an op file, for editors (e.g. with taplo or Even Better TOML)."""
    schema = OpFile.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "vyre_decl op file"
    return schema
