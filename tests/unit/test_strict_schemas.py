"""Every schema the harness sends keeps OpenAI's strict structured-output rules, and still parses.

The rules are checked by :mod:`tests.strict_rules`, written apart from the converter
(:mod:`application.strict_schema`), and the ``openai`` package's own converter must find nothing
to change in them.
"""

from __future__ import annotations

import ast
import copy
import importlib
from pathlib import Path
from typing import Any

import pytest

from application import prompts
from application.drafts import DiagnosisDraft, validate_draft
from application.judge import parse_verdicts
from application.strict_schema import make_strict
from domain.answer_rules import knowledge_answer
from domain.release_states import SemanticVerdict
from tests.strict_rules import strict_problems

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", sorted(prompts.SCHEMAS))
def test_every_schema_sent_keeps_the_strict_rules(name: str) -> None:
    assert strict_problems(prompts.SCHEMAS[name]) == []


@pytest.mark.parametrize("name", sorted(prompts.SCHEMAS))
def test_the_openai_converter_finds_nothing_to_change(name: str) -> None:
    # private to the SDK: a version that moves it fails here, and this test is to be updated
    sdk = importlib.import_module("openai.lib._pydantic")
    ensure = sdk._ensure_strict_json_schema
    schema = copy.deepcopy(prompts.SCHEMAS[name])
    assert ensure(schema, path=(), root=schema) == prompts.SCHEMAS[name]


def test_the_rules_see_what_the_old_schemas_broke() -> None:
    judge_before = {
        "type": "object",
        "properties": {"verdicts": {"type": "array", "items": {"enum": ["SUPPORTED"]}}},
        "required": [],
        "additionalProperties": False,
    }
    assert strict_problems(judge_before) == [
        "(root): Missing ['verdicts'] in required (every property must be required)"
    ]
    problems = strict_problems(DiagnosisDraft.model_json_schema())
    assert any("Missing ['conclusion', 'facts', 'missing_info']" in p for p in problems)
    assert any("'default' is not supported" in p for p in problems)
    assert any("'minLength' is not supported" in p for p in problems)


def test_the_converter_makes_optional_fields_required_and_nullable() -> None:
    schema = make_strict(
        {
            "type": "object",
            "properties": {"a": {"type": "string", "default": "x"}, "b": {"type": "integer"}},
            "required": ["b"],
        }
    )
    assert schema == {
        "type": "object",
        "properties": {
            "a": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "b": {"type": "integer"},
        },
        "required": ["a", "b"],
        "additionalProperties": False,
    }
    assert strict_problems(schema) == []


def test_a_root_that_is_not_an_object_is_refused() -> None:
    with pytest.raises(ValueError, match="root must be an object"):
        make_strict({"type": "array", "items": {"type": "string"}})


def _sent_schema_names() -> set[str]:
    """The names every ``json_schema=`` of a model request in the application refers to."""
    names = set()
    for path in (ROOT / "application").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.keyword) and node.arg == "json_schema":
                assert isinstance(node.value, ast.Name | ast.Constant), f"{path}: {node.value}"
                if isinstance(node.value, ast.Name):
                    names.add(node.value.id)
    return names


def test_every_schema_a_request_names_is_among_those_checked() -> None:
    sent = _sent_schema_names()
    assert sent >= {"ROUTE_SCHEMA", "AGENT_SCHEMA", "DRAFT_SCHEMA", "JUDGE_SCHEMA"}
    checked = [id(schema) for schema in prompts.SCHEMAS.values()]
    for name in sent - {"schema"}:  # answers.py passes CHAT_ or KNOWLEDGE_SCHEMA as `schema`
        assert id(getattr(prompts, name)) in checked, name
    assert {"CHAT_SCHEMA", "KNOWLEDGE_SCHEMA"} <= set(vars(prompts))


# -- nullable fields still parse -------------------------------------------------------------


def test_a_draft_with_every_optional_field_null_parses() -> None:
    missing: dict[str, Any] = {"kind": "SERVICE", "service": None, "start": None, "end": None}
    draft = validate_draft({"conclusion": None, "facts": None, "missing_info": [missing]})
    assert draft.conclusion is None
    assert draft.facts == []
    assert [m.service for m in draft.missing_info] == [None]


def test_a_judge_answer_with_a_null_reason_parses() -> None:
    text = '{"verdicts": [{"statement": 0, "verdict": "SUPPORTED"}], "reason": null}'
    assert parse_verdicts(text, 1) == [SemanticVerdict.SUPPORTED]


def test_a_knowledge_answer_in_the_strict_shape_parses() -> None:
    cited = {"reference": "runbook-1", "excerpt": "Page the on-call engineer."}
    answer = {"statements": [{"statement": "Page on call.", "citations": [cited]}]}
    parsed = knowledge_answer(answer)
    assert isinstance(parsed, tuple)
    assert [(f.statement, len(f.citations)) for f in parsed] == [("Page on call.", 1)]


def test_an_agent_answer_with_its_optional_fields_null_parses() -> None:
    from application.drafts import parse_agent_text

    step, error = parse_agent_text(
        '{"progress": {"gain": "NO_GAIN", "facts": null}, "draft": null}'
    )
    assert error is None and step is not None
    assert step.progress is not None and step.progress.facts == [] and step.draft is None
    assert "agent" in prompts.SCHEMAS and strict_problems(prompts.AGENT_SCHEMA) == []
