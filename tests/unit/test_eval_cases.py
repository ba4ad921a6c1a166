"""Eval case files: every problem is one line naming the file, the case and the field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from application.eval_answers import answer_of
from application.ports import ToolArgumentsError, ToolExecutionError
from domain.answer_rules import AnswerRefusal
from domain.evals import Expectation, Expected, Verdict, score
from domain.grounding import Citation
from domain.published import DiagnosisReport, UngroundedAnswer
from domain.values import Fact
from infrastructure.eval_cases import SHIPPED_SUITE, CaseFileError, load_file, load_suite
from infrastructure.fixture_tools import Fixture, fixture_tools

GOOD = {
    "id": "checkout-why",
    "question": "Why was checkout slow on 2026-11-29?",
    "expect": {"outcome": "conclusion", "must": ["v2.14.0"]},
}


def _problem(tmp_path: Path, data: Any, raw: str | None = None) -> str:
    file = tmp_path / "case.yaml"
    file.write_text(raw if raw is not None else yaml.safe_dump(data), encoding="utf-8")
    with pytest.raises(CaseFileError) as refused:
        load_file(file)
    message = str(refused.value)
    assert "\n" not in message
    assert message.startswith(f"{file}: ")
    return message.removeprefix(f"{file}: ")


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"expect": {"outcome": "maybe"}}, "case 'checkout-why': expect.outcome: Input should be"),
        ({"colour": "red"}, "case 'checkout-why': colour: Extra inputs are not permitted"),
        ({"id": "Checkout Why"}, "case 'Checkout Why': id: String should match pattern"),
        ({"question": "  "}, "case 'checkout-why': question: the question is empty"),
        ({"session": "a b"}, "case 'checkout-why': session: a session label must start"),
        (
            {"expect": {"outcome": "conclusion", "fallback_type": "INSUFFICIENT_EVIDENCE"}},
            "case 'checkout-why': expect: fallback_type is only for outcome: fallback",
        ),
        (
            {"expect": {"outcome": "fallback", "fallback_type": "SORRY"}},
            "case 'checkout-why': expect.fallback_type: Input should be 'MISSING_REQUIRED_CONTEXT'",
        ),
        ({"expect": {"outcome": "answer", "must": [""]}}, "expect.must: an empty text occurs"),
        ({"expect": {"outcome": "answer", "must": [2026]}}, "expect.must.0: Input should be a"),
        ({"fixture": {"tools": []}}, "fixture.tools: Tuple should have at least 1 item"),
        (
            {"fixture": {"tools": [{"name": "a b"}]}},
            "fixture.tools.0.name: a tool name is 1 to 64 letters",
        ),
        (
            {"fixture": {"tools": [{"name": "t"}, {"name": "t"}]}},
            "fixture.tools: tool 't' is recorded twice",
        ),
        (
            {"fixture": {"tools": [{"name": "t", "parameters": {"type": 5}}]}},
            "fixture.tools.0.parameters: its parameters is not a JSON schema",
        ),
        (
            {"fixture": {"tools": [{"name": "t", "results": [{"lines": [], "error": "x"}]}]}},
            "fixture.tools.0.results.0: a result has either lines or an error, not both",
        ),
        (
            {"fixture": {"tools": [{"name": "t", "results": [{"line": ["x"]}]}]}},
            "fixture.tools.0.results.0.line: Extra inputs are not permitted",
        ),
    ],
)
def test_a_bad_field_is_named_with_its_case(
    tmp_path: Path, change: dict[str, Any], said: str
) -> None:
    assert said in _problem(tmp_path, GOOD | change)


def test_a_case_in_a_list_is_named_by_its_id_or_its_place(tmp_path: Path) -> None:
    second = GOOD | {"id": "second", "expect": {}}
    said = _problem(tmp_path, {"cases": [GOOD, second]})
    assert said.startswith("case 'second': expect.outcome: Field required")
    assert _problem(tmp_path, {"cases": [GOOD, ["not", "a", "case"]]}).startswith("a case: ")
    assert _problem(tmp_path, {"cases": []}).startswith("a case: cases: Tuple should have")


@pytest.mark.parametrize(
    ("raw", "said"),
    [
        ("", "is empty"),
        ("id: [unclosed", "not valid YAML: "),
        ("- just\n- a list\n", "a case file is a mapping (one case) or cases: [...]"),
        ("a: &x [1]\nb: *x\n", "not valid YAML: aliases are not accepted (line 2, column 4)"),
    ],
)
def test_a_file_that_is_no_case_file_says_what_it_is(tmp_path: Path, raw: str, said: str) -> None:
    assert said in _problem(tmp_path, None, raw)


def test_a_suite_reads_directories_sorted_and_refuses_an_id_used_twice(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "one.yml").write_text(yaml.safe_dump(GOOD | {"id": "b-one"}))
    (tmp_path / "a.yaml").write_text(yaml.safe_dump(GOOD | {"id": "a"}))
    (tmp_path / "notes.txt").write_text("not a case")
    assert [c.id for c in load_suite([tmp_path]).cases] == ["a", "b-one"]
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(GOOD | {"id": "a"}))
    with pytest.raises(CaseFileError, match=r"c\.yaml: case 'a': id: also used in .*a\.yaml$"):
        load_suite([tmp_path])
    with pytest.raises(CaseFileError, match="question: 36 characters; at most 10"):
        load_suite([tmp_path / "a.yaml"], max_question_chars=10)
    (tmp_path / "empty").mkdir()
    with pytest.raises(CaseFileError, match="empty: no case files"):
        load_suite([tmp_path / "empty"])


def test_the_shipped_suite_loads() -> None:
    assert load_suite([SHIPPED_SUITE]).cases


def test_a_recorded_tool_answers_the_first_matching_result_and_checks_its_schema() -> None:
    fixture = Fixture.model_validate(
        {
            "tools": [
                {
                    "name": "search_logs",
                    "parameters": {"type": "object", "required": ["service"]},
                    "results": [
                        {"match": {"service": "payments"}, "error": "permission denied"},
                        {"match": {"service": "checkout", "level": "ERROR"}, "lines": ["e1"]},
                        {"match": {"service": "checkout"}, "lines": ["any"]},
                    ],
                }
            ]
        }
    )
    tool = fixture_tools(fixture)["search_logs"]
    assert tool.run({"service": "checkout", "level": "ERROR", "limit": 5}).lines == ("e1",)
    assert tool.run({"service": "checkout", "level": "WARN"}).lines == ("any",)
    assert tool.run({"service": "search"}).lines == ()
    with pytest.raises(ToolExecutionError, match="permission denied"):
        tool.run({"service": "payments"})
    with pytest.raises(ToolArgumentsError, match="'service' is a required property"):
        tool.normalize_scope({"level": "ERROR"})
    assert tool.calls == 4 and tool.read_only and tool.origin == "fixture"


def _fact(statement: str, excerpt: str) -> Fact:
    return Fact(statement, (Citation("inv-1", excerpt),))


def test_a_must_never_matches_across_two_parts_of_what_was_published() -> None:
    report = DiagnosisReport(_fact("checkout slowed down after v2", "deploy v2.14.0 at 09:52"), ())
    answer = answer_of(report)
    assert score(Expectation(Expected.CONCLUSION, ("v2.14.0",)), answer).verdict is Verdict.CORRECT
    spanning = score(Expectation(Expected.CONCLUSION, ("after v2 deploy",)), answer)
    assert (spanning.verdict, spanning.published_wrong) == (Verdict.WRONG, True)


def test_the_harness_list_instead_of_an_ungrounded_answer_is_scored_as_a_fallback() -> None:
    listed = UngroundedAnswer("No answer; passages:", (), AnswerRefusal.JUDGE_UNSUPPORTED, ())
    verdict = score(Expectation(Expected.ANSWER, ("restart",)), answer_of(listed))
    assert (verdict.verdict, verdict.published_wrong) == (Verdict.FALLBACK, False)
