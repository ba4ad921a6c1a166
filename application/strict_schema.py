"""JSON schemas made strict: what providers with strict structured output accept (design §7).

OpenAI's documented rules for ``response_format`` ``json_schema`` with ``"strict": true``: the
root is an object; every object lists all its properties in ``required`` and sets
``additionalProperties: false``; a field that may be left out is instead required and nullable
(``anyOf`` with ``{"type": "null"}``); only the supported keywords appear (no ``default``, no
``minLength``/``maxLength``, no ``allOf``/``oneOf``); ``$defs`` and ``$ref`` are allowed.

The ``openai`` package has such a converter (``openai.lib._pydantic.to_strict_json_schema``),
but in a private module, and it keeps keywords the rules do not support and leaves optional
fields optional-by-``default`` only; the application does not import the provider's SDK either.
So this small converter follows the rules itself, and a test checks its output against them
and against the SDK's converter (which must leave it unchanged). The harness still parses every
answer strictly where it is used: a dropped keyword (a length limit) is checked there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic import BaseModel

SUPPORTED_KEYWORDS = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "enum",
        "const",
        "anyOf",
        "$ref",
        "$defs",
        "description",
        "pattern",
        "format",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "minItems",
        "maxItems",
    }
)
"""The keywords strict structured output accepts; every other one is dropped."""

NULL = {"type": "null"}


def strict_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The strict JSON schema of a pydantic model's answers (see the module's rules)."""
    return make_strict(model.model_json_schema())


def make_strict(schema: dict[str, Any]) -> dict[str, Any]:
    """A strict copy of ``schema``, whose root must be an object; ValueError if it is not."""
    strict = _node(schema)
    if strict.get("type") != "object":
        raise ValueError(f"a strict schema's root must be an object, not {schema.get('type')!r}")
    return strict


def _node(schema: dict[str, Any]) -> dict[str, Any]:
    """One schema node made strict, its children first."""
    if "$ref" in schema:
        return {"$ref": schema["$ref"]}  # the rules allow no keyword beside a reference
    node = {key: value for key, value in schema.items() if key in SUPPORTED_KEYWORDS}
    if "$defs" in node:
        node["$defs"] = {name: _node(sub) for name, sub in node["$defs"].items()}
    if "items" in node:
        node["items"] = _node(node["items"])
    if "anyOf" in node:
        node["anyOf"] = [_node(sub) for sub in node["anyOf"]]
    if node.get("type") == "object" or "properties" in node:
        _object(node, set(schema.get("required", ())))
    return node


def _object(node: dict[str, Any], required: set[str]) -> None:
    """Every property required, those that were not made nullable; nothing else allowed."""
    properties = node.get("properties", {})
    node["type"] = "object"
    node["properties"] = {
        name: _node(sub) if name in required else nullable(_node(sub))
        for name, sub in properties.items()
    }
    node["required"] = list(properties)
    node["additionalProperties"] = False


def nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` or null: unchanged when it already allows null."""
    if NULL in schema.get("anyOf", ()) or schema.get("type") == "null":
        return schema
    return {"anyOf": [schema, NULL]}
