"""OpenAI's documented rules for strict structured output, checked independently of the harness.

From the Structured Outputs guide ("Supported schemas"): the root is an object (not ``anyOf``);
every object sets ``additionalProperties: false`` and lists every property in ``required``
(optional fields are expressed as a union with ``null``); only the supported keywords appear
(``default``, ``minLength``, ``maxLength``, ``allOf``, ``oneOf``, ``not``, ``if``… do not); a
``$ref`` points into the schema's own ``$defs`` and stands alone; at most 10 levels of nesting,
5000 object properties in all and 1000 enum values. The conformance server (``_conformance``)
refuses a strict schema that breaks them with HTTP 400, as OpenAI does.
"""

from __future__ import annotations

from typing import Any

ALLOWED = {
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
    "definitions",
    "description",
    "title",
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
TYPES = {"string", "number", "integer", "boolean", "object", "array", "null"}
MAX_DEPTH = 10
MAX_PROPERTIES = 5000
MAX_ENUM_VALUES = 1000


def strict_problems(schema: Any) -> list[str]:
    """Every way ``schema`` breaks the strict rules, each naming where; [] when it keeps them."""
    if not isinstance(schema, dict):
        return ["(root): the schema is not an object"]
    problems: list[str] = []
    if schema.get("type") != "object" or "anyOf" in schema:
        problems.append("(root): the root must be an object schema, not anyOf")
    counts = {"properties": 0, "enum": 0}
    _check(schema, schema, "(root)", 1, problems, counts)
    if counts["properties"] > MAX_PROPERTIES:
        problems.append(f"(root): {counts['properties']} properties, over {MAX_PROPERTIES}")
    if counts["enum"] > MAX_ENUM_VALUES:
        problems.append(f"(root): {counts['enum']} enum values, over {MAX_ENUM_VALUES}")
    return problems


def _check(
    node: Any, root: dict[str, Any], where: str, depth: int, out: list[str], counts: dict[str, int]
) -> None:
    if not isinstance(node, dict):
        out.append(f"{where}: a subschema must be an object")
        return
    if depth > MAX_DEPTH:
        out.append(f"{where}: nested deeper than {MAX_DEPTH} levels")
    out += [f"{where}: keyword {key!r} is not supported" for key in node if key not in ALLOWED]
    if "$ref" in node:
        _check_ref(node, root, where, out)
        return
    kinds = node.get("type")
    kinds = kinds if isinstance(kinds, list) else [kinds] if kinds is not None else []
    if not kinds and not {"anyOf", "enum", "const"} & set(node):
        out.append(f"{where}: no type, anyOf, enum or const")
    out += [f"{where}: unknown type {kind!r}" for kind in kinds if kind not in TYPES]
    if "enum" in node:
        counts["enum"] += len(node["enum"])
    if "object" in kinds or "properties" in node:
        _check_object(node, root, where, depth, out, counts)
    if "array" in kinds:
        _check_array(node, root, where, depth, out, counts)
    for index, sub in enumerate(node.get("anyOf", ())):
        _check(sub, root, f"{where}|{index}", depth, out, counts)
    for name, sub in node.get("$defs", {}).items():
        _check(sub, root, f"$defs.{name}", 1, out, counts)


def _check_array(
    node: dict[str, Any],
    root: dict[str, Any],
    where: str,
    depth: int,
    out: list[str],
    counts: dict[str, int],
) -> None:
    if "items" not in node:
        out.append(f"{where}: an array needs items")
    else:
        _check(node["items"], root, f"{where}[]", depth + 1, out, counts)


def _check_object(
    node: dict[str, Any],
    root: dict[str, Any],
    where: str,
    depth: int,
    out: list[str],
    counts: dict[str, int],
) -> None:
    properties = node.get("properties")
    if not isinstance(properties, dict):
        out.append(f"{where}: an object needs properties")
        return
    if node.get("additionalProperties") is not False:
        out.append(f"{where}: additionalProperties must be false")
    missing = [name for name in properties if name not in node.get("required", ())]
    if missing:
        out.append(f"{where}: Missing {missing} in required (every property must be required)")
    counts["properties"] += len(properties)
    for name, sub in properties.items():
        _check(sub, root, f"{where}.{name}", depth + 1, out, counts)


def _check_ref(node: dict[str, Any], root: dict[str, Any], where: str, out: list[str]) -> None:
    ref = node["$ref"]
    if len(node) > 1:
        out.append(f"{where}: $ref must stand alone, found {sorted(set(node) - {'$ref'})}")
    if not isinstance(ref, str) or not ref.startswith("#/$defs/"):
        out.append(f"{where}: $ref {ref!r} does not point into #/$defs")
    elif ref.removeprefix("#/$defs/") not in root.get("$defs", {}):
        out.append(f"{where}: $ref {ref!r} names no definition")
