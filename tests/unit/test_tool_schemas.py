"""A tool's schema is admitted only when checking arguments against it can never fetch anything.

Remote, file and relative references, references that do not resolve (under ``$id`` tricks too),
unknown dialects, invalid schemas, schemas too large or too deep are refused with a one-line
reason; local references, anchors and recursive schemas are admitted and check arguments.
"""

from __future__ import annotations

import socket
from typing import Any

import pytest

from application.tool_admission import SHOWN_NAME_CHARS, Refusal, admission_of, shown_name
from domain.redactor import Redactor
from infrastructure.schema_patterns import pattern_problem
from infrastructure.tool_schemas import MAX_SCHEMA_BYTES, MAX_SCHEMA_DEPTH, SchemaRefused, compiled


def _nested(depth: int) -> dict[str, Any]:
    schema: dict[str, Any] = {}
    for _ in range(depth - 1):
        schema = {"not": schema}
    return schema


@pytest.mark.parametrize(
    ("schema", "reason"),
    [
        ({"$ref": "http://127.0.0.1:9/x"}, "a $ref outside itself ('http://127.0.0.1:9/x')"),
        ({"$ref": "file:///etc/passwd"}, "a $ref outside itself ('file:///etc/passwd')"),
        ({"$id": "http://evil/", "$ref": "x.json"}, "a $ref outside itself ('x.json')"),
        ({"properties": {"a": {"$dynamicRef": "https://x/s#m"}}}, "a $dynamicRef outside"),
        ({"$recursiveRef": "other.json"}, "a $recursiveRef outside itself"),
        ({"$ref": "#/$defs/missing"}, "a $ref that does not resolve ('#/$defs/missing')"),
        ({"$ref": "#/nowhere/~2"}, "a $ref that does not resolve"),
        ({"$dynamicRef": "#nameless"}, "a $dynamicRef that does not resolve"),
        (  # a nested $id moves the base: "#/$defs/x" is looked for in the subschema
            {
                "properties": {"a": {"$id": "http://evil/y", "$ref": "#/$defs/x"}},
                "$defs": {"x": {}},
            },
            "a $ref that does not resolve ('#/$defs/x')",
        ),
        ({"$ref": "#"}, "refers to itself without end"),
        ({"type": "objekt"}, "is not a JSON schema: 'objekt' is not valid"),
        ({"$schema": "http://evil/schema"}, "names an unknown $schema 'http://evil/schema'"),
        ({"$schema": {"a": 1}}, "names an unknown $schema"),
        (_nested(MAX_SCHEMA_DEPTH + 1), f"nested more than {MAX_SCHEMA_DEPTH} deep"),
        ({"enum": ["x" * MAX_SCHEMA_BYTES]}, f"the most admitted is {MAX_SCHEMA_BYTES}"),
        ({"const": {"$ref": "http://127.0.0.1:9/"}}, "outside itself"),  # refused, to be safe
    ],
)
def test_a_schema_that_could_fetch_or_swell_is_refused_with_its_reason(
    schema: dict[str, Any], reason: str
) -> None:
    with pytest.raises(SchemaRefused) as refused:
        compiled(schema)
    assert reason in str(refused.value)
    assert str(refused.value).startswith("its inputSchema ")
    assert "\n" not in str(refused.value) and len(str(refused.value)) < 400


@pytest.mark.parametrize(
    ("schema", "good", "bad"),
    [
        (
            {"properties": {"a": {"$ref": "#/$defs/s"}}, "$defs": {"s": {"type": "string"}}},
            {"a": "x"},
            {"a": 1},
        ),
        (  # a root $id that names a host: local references still resolve without it
            {
                "$id": "http://127.0.0.1:9/",
                "properties": {"a": {"$ref": "#/$defs/s"}},
                "$defs": {"s": {"type": "string"}},
            },
            {"a": "x"},
            {"a": 1},
        ),
        ({"properties": {"next": {"$ref": "#"}}, "type": "object"}, {"next": {}}, {"next": 1}),
        (
            {"$defs": {"m": {"$dynamicAnchor": "m", "type": "string"}}, "$dynamicRef": "#m"},
            "x",
            1,
        ),
        (
            {
                "$schema": "http://json-schema.org/draft-07/schema#",
                "definitions": {"n": {"type": "integer"}},
                "items": {"$ref": "#/definitions/n"},
            },
            [1],
            ["x"],
        ),
        (_nested(MAX_SCHEMA_DEPTH), None, None),  # 31 nots of {}: admitted, refuses all
        ({"properties": {"$ref": {"type": "string"}}}, {"$ref": "x"}, {"$ref": 1}),
    ],
)
def test_local_references_are_admitted_and_check_arguments(
    schema: dict[str, Any], good: Any, bad: Any
) -> None:
    validator = compiled(schema)
    if good is not None:
        assert validator.is_valid(good)
    if bad is not None:
        assert not validator.is_valid(bad)


def test_checking_arguments_never_opens_a_connection() -> None:
    # a port that accepts and never answers: a fetch would hang here, and the backlog shows it
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        listener.setblocking(False)
        port = listener.getsockname()[1]
        validator = compiled({"properties": {"a": {"$ref": "#/$defs/s"}}, "$defs": {"s": {}}})
        with pytest.raises(SchemaRefused):
            compiled({"$ref": f"http://127.0.0.1:{port}/x"})
        assert validator.is_valid({"a": 1})
        with pytest.raises(BlockingIOError):
            listener.accept()  # nobody ever connected


def test_the_output_schema_is_named_when_it_is_the_one_refused() -> None:
    with pytest.raises(SchemaRefused, match=r"^its outputSchema has a \$ref outside itself"):
        compiled({"$ref": "https://example.com/s.json"}, "outputSchema")


@pytest.mark.parametrize(
    "name",
    ["tool\n", "a\nb", "<b>bold</b>", "[red]x[/red]", "x" * 5000, "tool\u202eevil", "", "a.b"],
)
def test_a_bad_name_is_refused_and_shown_on_one_bounded_line(name: str) -> None:
    class Named:
        description = ""
        parameters: dict[str, Any] = {}
        read_only = True
        required_scope = "ops:read"
        max_result_bytes = 100
        blocking = False

        def __init__(self) -> None:
            self.name = name

    assert admission_of(Named()).refusal is Refusal.INVALID_NAME  # type: ignore[arg-type]
    shown = shown_name(name)
    assert "\n" not in shown and "\u202e" not in shown and len(shown) <= SHOWN_NAME_CHARS
    assert shown.startswith("'") and shown != name


def test_a_valid_name_is_shown_as_it_is() -> None:
    assert shown_name("search_logs") == "search_logs"


def test_a_schema_holding_a_secret_its_server_was_handed_is_refused_without_it() -> None:
    secret = "env-from-value-Lp03"
    handed = Redactor.of([secret])
    for schema in ({"properties": {"t": {"default": secret}}}, {"description": f"use {secret}"}):
        with pytest.raises(SchemaRefused) as refused:
            compiled(schema, secrets=handed)
        assert "holds a secret the harness handed its server" in str(refused.value)
        assert secret not in str(refused.value)
    compiled({"properties": {"t": {"default": "Bearer-looking text"}}}, secrets=handed)


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        ("^(a+)+$", "repeats a repetition"),
        ("^(a|aa)*$", "repeats an alternation"),
        ("^(\\w+\\s?)*$", "repeats a repetition"),
        ("^(a)\\1$", "refers back to a group"),
        ("^a*b*c*d*$", "has 4 open-ended repetitions"),
        ("x" * 1001, "is 1001 characters"),
    ],
)
def test_a_pattern_that_can_backtrack_without_bound_is_refused(pattern: str, why: str) -> None:
    schemas: list[dict[str, Any]] = [
        {"properties": {"q": {"type": "string", "pattern": pattern}}},
        {"patternProperties": {pattern: {}}},
    ]
    for schema in schemas:
        with pytest.raises(SchemaRefused) as refused:
            compiled(schema)
        assert f"has a pattern that {why}" in str(refused.value)


def test_a_plain_pattern_checks_and_a_long_text_is_refused_before_matching() -> None:
    validator = compiled(
        {
            "properties": {"q": {"type": "string", "pattern": "^[a-z]+-[0-9]{1,4}$"}},
            "patternProperties": {"^x-[a-z]+$": {"type": "string"}},
        }
    )
    assert not list(validator.iter_errors({"q": "checkout-12"}))
    assert list(validator.iter_errors({"q": "checkout"}))
    too_long = [e.message for e in validator.iter_errors({"q": "a" * 300})]
    assert too_long == [
        "a value checked against a pattern may have at most 256 characters, not 300"
    ]
    named = [e.message for e in validator.iter_errors({"x-" + "a" * 300: "v"})]
    assert named == [
        "a property name checked against a pattern may have at most 256 characters, not 302"
    ]


def test_a_pattern_re_cannot_read_is_named_as_such() -> None:
    assert (
        pattern_problem("^(")
        == "is not a regular expression (missing ), unterminated subpattern at position 1)"
    )
