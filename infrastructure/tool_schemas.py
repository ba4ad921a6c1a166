"""A tool server's JSON schemas, checked and compiled once, when the tool is admitted.

jsonschema's default resolves a ``$ref`` it does not hold by fetching it (an ``http://`` GET, a
``file://`` read) while it validates: a schema could make the harness hang on a port or read a
file into a recorded rejection. Here nothing is ever fetched: the validator's registry refuses
every retrieval, and a schema is refused at admission (:class:`SchemaRefused`, a one-line reason)
when it is nested deeper than MAX_SCHEMA_DEPTH, larger than MAX_SCHEMA_BYTES, names a dialect
jsonschema does not know, is not a valid schema of its dialect, holds a reference that is not
local (``#…``) or does not resolve inside the schema, or a pattern that could backtrack without
bound (``infrastructure.schema_patterns``, which also bounds the text a pattern checks). A
reason quotes only the schema's own words, cut short: never anything a reference points at.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, cast

from jsonschema import exceptions as schema_errors
from jsonschema import validators
from referencing import Registry, Resource
from referencing import exceptions as reference_errors
from referencing.jsonschema import DRAFT202012, specification_with

from application.tool_secrets import NO_SECRETS
from infrastructure.schema_patterns import bounded, pattern_problem, patterns_of

if TYPE_CHECKING:
    from collections.abc import Iterator

    from jsonschema.protocols import Validator
    from referencing._core import Resolver, Specification

    from domain.redactor import Redactor

MAX_SCHEMA_BYTES = 64 * 1024
"""The largest schema admitted, as canonical JSON (sorted keys, compact, UTF-8): real tools'
schemas are a few KiB; one of megabytes slows every run that offers it."""
MAX_SCHEMA_DEPTH = 32
"""The deepest nesting of objects and arrays admitted (``{}`` is 1)."""
REFERENCE_KEYWORDS = ("$ref", "$dynamicRef", "$recursiveRef")
_QUOTED = 80


class SchemaRefused(ValueError):
    """The schema cannot be checked safely; the message is the one-line reason."""


def _refuse_retrieval(uri: str) -> Resource[Any]:
    """The registry's only way to fetch: it fetches nothing."""
    raise reference_errors.NoSuchResource(ref=uri)  # type: ignore[call-arg]


NO_RETRIEVAL: Registry[Any] = Registry(retrieve=_refuse_retrieval)  # type: ignore[call-arg]
"""Resolves only what a schema holds (and jsonschema's bundled metaschemas), never I/O."""


def compiled(
    schema: object, what: str = "inputSchema", secrets: Redactor = NO_SECRETS
) -> Validator:
    """The validator of ``schema``, which refuses every retrieval; SchemaRefused saying why.

    A schema holding one of ``secrets`` (what the tool's server was handed) is refused too: the
    model and every view would be shown it.
    """
    if not isinstance(schema, dict):
        raise SchemaRefused(f"its {what} is not a JSON object")
    if _depth(schema) > MAX_SCHEMA_DEPTH:
        raise SchemaRefused(
            f"its {what} is nested more than {MAX_SCHEMA_DEPTH} deep (MAX_SCHEMA_DEPTH)"
        )
    text = json.dumps(schema, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_SCHEMA_BYTES:
        raise SchemaRefused(
            f"its {what} is {size} bytes of JSON; the most admitted is {MAX_SCHEMA_BYTES}"
        )
    if any(secret in text for secret in secrets.secrets):
        raise SchemaRefused(f"its {what} holds a secret the harness handed its server")
    kind = _dialect(schema, what)
    try:
        kind.check_schema(schema)
    except schema_errors.SchemaError as error:
        raise SchemaRefused(f"its {what} is not a JSON schema: {_line(error.message)}") from None
    _check_references(schema, what)
    for pattern in patterns_of(schema):
        if (problem := pattern_problem(pattern)) is not None:
            raise SchemaRefused(f"its {what} has a pattern that {problem}: {_quoted(pattern)}")
    validator: Validator = bounded(kind)(schema, registry=NO_RETRIEVAL)
    _try(validator, what)
    return validator


def _dialect(schema: dict[str, Any], what: str) -> type[Validator]:
    """The validator class ``$schema`` names (2020-12 without one); SchemaRefused if unknown."""
    dialect = schema.get("$schema")
    if dialect is None:
        return validators.Draft202012Validator
    kind = (
        validators.validator_for(schema, default=cast("Any", None))
        if isinstance(dialect, str)
        else None
    )
    if kind is None:
        raise SchemaRefused(f"its {what} names an unknown $schema {_quoted(dialect)}")
    return kind


def _depth(schema: object) -> int:
    """How deeply objects and arrays nest (without recursion: any depth is measured)."""
    deepest = 0
    stack: list[tuple[object, int]] = [(schema, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        if deepest > MAX_SCHEMA_DEPTH:
            break
        children = list(node.values()) if isinstance(node, dict) else cast("list[object]", node)
        stack += [(c, depth + 1) for c in children if isinstance(c, dict | list)]
    return deepest


def _check_references(schema: dict[str, Any], what: str) -> None:
    """Every reference is local (``#…``) and resolves inside the schema, under its ``$id``s."""
    specification = specification_with(str(schema.get("$schema", "")), default=DRAFT202012)
    root = specification.create_resource(schema)
    top = NO_RETRIEVAL.resolver_with_root(root)
    for keyword, reference, resolver in _references(root, top, specification):
        if not reference.startswith("#"):
            raise SchemaRefused(
                f"its {what} has a {keyword} outside itself ({_quoted(reference)}); only local"
                " references (#…) are admitted"
            )
        try:
            resolver.lookup(reference)
        except reference_errors.Unresolvable:
            raise SchemaRefused(
                f"its {what} has a {keyword} that does not resolve ({_quoted(reference)})"
            ) from None


def _references(
    root: Resource[Any], resolver: Resolver[Any], specification: Specification[Any]
) -> Iterator[tuple[str, str, Resolver[Any]]]:
    """Each reference keyword's text, with the resolver of the (sub)resource it sits in.

    Every object is looked at, not only schema positions: a ``"$ref"`` string under ``const`` or
    ``default`` is refused too when it is not local (a false alarm costs a tool, a miss a fetch).
    """
    stack: list[tuple[object, Resolver[Any]]] = [(root.contents, resolver)]
    while stack:
        node, here = stack.pop()
        if isinstance(node, list):
            stack += [(item, here) for item in node]
            continue
        if not isinstance(node, dict):
            continue
        if node is not root.contents and isinstance(specification.id_of(node), str):
            here = here.in_subresource(specification.create_resource(node))
        for keyword in REFERENCE_KEYWORDS:
            if isinstance(node.get(keyword), str):
                yield keyword, node[keyword], here
        stack += [(child, here) for child in node.values()]


def _try(validator: Validator, what: str) -> None:
    """Check an empty object once: a schema that refers to itself without end is refused."""
    try:
        for _ in validator.iter_errors({}):
            pass
    except RecursionError:
        raise SchemaRefused(f"its {what} refers to itself without end") from None
    except reference_errors.Unresolvable:
        raise SchemaRefused(f"its {what} has a reference that does not resolve") from None


def _quoted(value: object) -> str:
    text = ascii(value) if isinstance(value, str) else ascii(json.dumps(value))
    return text if len(text) <= _QUOTED else f"{text[: _QUOTED - 1]}…"


def _line(text: str) -> str:
    """One line of at most 200 characters: a schema's own words, never a fetched document."""
    flat = " ".join(text.split())
    return flat if len(flat) <= 200 else f"{flat[:199]}…"
