"""The shipped eval suite stays a suite: well-formed, complete, and tied to the data it asks about.

Every ``must`` and ``must_not`` of a diagnosis case must be a verbatim substring of the sample
data as the built-in tools print it (over a real SQLite file loaded from the sample), and every
one of a knowledge case a substring of the runbooks: a changed record or runbook breaks this test
instead of silently turning a right answer into a "wrong" one.
"""

from __future__ import annotations

import fnmatch
import tomllib
from collections import Counter
from pathlib import Path

import pytest

from infrastructure.knowledge import load_runbooks
from infrastructure.ops_data import sample_incidents
from tests.eval_case_shape import EvalCase, load_case_file, load_suite
from tests.sample_corpus import sample_file_text, sample_tool_lines

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "infrastructure" / "evals" / "suite"
CATEGORIES = (
    "planted",
    "distractor",
    "empty-window",
    "unknown-service",
    "relative-time",
    "session",
    "knowledge",
    "fallback",
)


@pytest.fixture(scope="module")
def suite() -> list[EvalCase]:
    return load_suite(SUITE)


@pytest.fixture(scope="module")
def sample_text(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Every sample record as the built-in tools print it, plus the sample file itself."""
    lines = sample_tool_lines(tmp_path_factory.mktemp("ops") / "ops.db")
    return "\n".join([*lines, sample_file_text()])


@pytest.fixture(scope="module")
def runbook_text() -> str:
    return "\n".join(f"{p.id}\n{p.title}\n{p.text}" for p in load_runbooks())


def test_every_file_parses_and_holds_cases() -> None:
    files = sorted(SUITE.rglob("*.yaml"))
    assert len(files) >= 5
    for path in files:
        assert load_case_file(path), f"{path.name} holds no case"


def test_at_least_thirty_cases_with_unique_ids(suite: list[EvalCase]) -> None:
    assert len(suite) >= 30
    repeated = [case_id for case_id, n in Counter(c.id for c in suite).items() if n > 1]
    assert repeated == []


def test_every_category_is_present_and_every_case_says_why(suite: list[EvalCase]) -> None:
    tags = Counter(tag for case in suite for tag in case.tags)
    assert {category: tags[category] >= 2 for category in CATEGORIES} == dict.fromkeys(
        CATEGORIES, True
    )
    assert [case.id for case in suite if not (case.notes or "").strip()] == []
    assert [case.id for case in suite if not set(case.tags) & set(CATEGORIES)] == []


def test_tags_agree_with_expectations(suite: list[EvalCase]) -> None:
    for case in suite:
        knowledge = "knowledge" in case.tags
        assert knowledge == (case.expect.outcome == "answer"), case.id
        assert ("fallback" in case.tags) == (case.expect.outcome == "fallback"), case.id
        assert ("session" in case.tags) == (case.session is not None), case.id
        assert case.fixture is None, f"{case.id}: the shipped suite runs on the sample tools"


def test_sessions_have_follow_ups(suite: list[EvalCase]) -> None:
    sessions = Counter(case.session for case in suite if case.session is not None)
    assert len(sessions) >= 2
    assert all(count >= 2 for count in sessions.values()), sessions


def test_diagnosis_facts_occur_verbatim_in_the_sample(
    suite: list[EvalCase], sample_text: str
) -> None:
    absent = [
        f"{case.id}: {text!r}"
        for case in suite
        if case.expect.outcome != "answer"
        for text in (*case.expect.must, *case.expect.must_not)
        if text not in sample_text
    ]
    assert absent == []


def test_knowledge_facts_occur_verbatim_in_the_runbooks(
    suite: list[EvalCase], runbook_text: str
) -> None:
    knowledge = [case for case in suite if case.expect.outcome == "answer"]
    assert len(knowledge) >= 4
    absent = [
        f"{case.id}: {text!r}"
        for case in knowledge
        for text in (*case.expect.must, *case.expect.must_not)
        if text not in runbook_text
    ]
    assert absent == []


def test_no_case_is_impossible_to_pass(suite: list[EvalCase]) -> None:
    """A ``must_not`` inside a ``must`` would make every answer holding the must wrong."""
    clashes = [
        f"{case.id}: {bad!r} in {good!r}"
        for case in suite
        for good in case.expect.must
        for bad in case.expect.must_not
        if bad.casefold() in good.casefold()
    ]
    assert clashes == []


def test_each_planted_incident_is_asked_several_ways(suite: list[EvalCase]) -> None:
    for incident in sample_incidents():
        questions = {
            case.question
            for case in suite
            if "planted" in case.tags and set(case.expect.must) & set(incident.evidence)
        }
        assert len(questions) >= 3, f"{incident.id} is asked {len(questions)} ways"


def test_the_drift_check_catches_a_fact_not_in_the_sample(sample_text: str) -> None:
    # The tempting wrong version is in the data; a made-up one is not, nor a respelled fact.
    assert "v2.13.4" in sample_text and "upstream timeout after 30s" in sample_text
    assert "v2.14.1" not in sample_text
    assert "Upstream Timeout After 30s" not in sample_text


def test_the_suite_ships_in_the_package() -> None:
    """The wheel carries the suite: pyproject's package data matches every case file."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = config["tool"]["setuptools"]["package-data"]["infrastructure"]
    for path in SUITE.rglob("*.yaml"):
        relative = path.relative_to(ROOT / "infrastructure").as_posix()
        assert any(fnmatch.fnmatch(relative, p) for p in patterns), relative
