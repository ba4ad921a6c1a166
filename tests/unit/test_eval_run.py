"""Given/when/then tests of EvalRun: an evaluation's start, its cases, its finish and refusals."""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta
from typing import Any

import pytest

from domain.catalogue import event_type_name
from domain.errors import IllegalTransitionError, InvalidCommandError
from domain.eval_run import MAX_CASES, MAX_COUNT, EvalRun
from domain.evals import CaseResult, EvalReport, Verdict
from tests.eval_reports import AFTER, AT, BEFORE, case
from tests.unit.gwt import replay, then_events, then_refused


def given(report: EvalReport = AFTER, scored: int = 0) -> EvalRun:
    """An evaluation of ``report`` rebuilt from its start and its first ``scored`` cases."""
    evaluation = EvalRun.start(
        report.eval_id,
        report.suite,
        report.model,
        report.settings,
        report.started_at,
        len(report.results),
    )
    for result in report.results[:scored]:
        evaluation.score(result)
    return replay(EvalRun, evaluation.collect_events())


def test_an_evaluation_is_recorded_as_started_scored_and_finished() -> None:
    evaluation = EvalRun.of_report(AFTER)
    events = then_events(evaluation)
    names = [event_type_name(cls) for cls, _ in events]
    assert names == ["EVAL_STARTED", *["EVAL_CASE_SCORED"] * 4, "EVAL_FINISHED"]
    started, first, finished = events[0][1], events[1][1], events[-1][1]
    assert (started["suite"], started["model"], started["cases"]) == (
        "suites/shipped",
        AFTER.model,
        4,
    )
    assert started["settings"] == AFTER.settings and started["started_at"] == AT + timedelta(
        hours=2
    )
    assert first == {
        **{f.name: getattr(AFTER.results[0], f.name) for f in dataclasses.fields(CaseResult)},
        "reasons": ("missing: v2.14.0", "must not say: v2.13.4"),
    }
    assert finished == {"finished_at": AFTER.finished_at, **vars(AFTER.totals)}
    assert (finished["correct"], finished["wrong"], finished["published_wrong"]) == (2, 2, 1)


def test_replayed_it_is_the_report_it_was_recorded_from() -> None:
    evaluation = EvalRun.of_report(BEFORE)
    rebuilt = replay(EvalRun, evaluation.collect_events())
    assert rebuilt.report() == BEFORE and rebuilt.is_finished
    assert rebuilt.totals == BEFORE.totals


def test_an_unfinished_evaluation_has_no_report_yet() -> None:
    evaluation = given(scored=2)
    assert not evaluation.is_finished and len(evaluation.results) == 2
    then_refused(evaluation, IllegalTransitionError, lambda e: e.report())


def test_each_case_is_scored_once_and_no_more_than_announced() -> None:
    twice = given(scored=1)
    error = then_refused(twice, IllegalTransitionError, lambda e: e.score(AFTER.results[0]))
    assert "'checkout-deploy-why' was scored already" in str(error)
    full = given(scored=4)
    error = then_refused(
        full, IllegalTransitionError, lambda e: e.score(case("x", Verdict.CORRECT))
    )
    assert "all 4 case(s) were scored already" in str(error)


def test_it_finishes_once_every_case_is_scored_and_never_again() -> None:
    early = given(scored=3)
    error = then_refused(early, IllegalTransitionError, lambda e: e.finish(AFTER.finished_at))
    assert "3 of 4 case(s) scored" in str(error)
    finished = replay(EvalRun, EvalRun.of_report(AFTER).collect_events())
    late = case("late", Verdict.CORRECT)
    then_refused(finished, IllegalTransitionError, lambda e: e.score(late))
    then_refused(finished, IllegalTransitionError, lambda e: e.finish(AFTER.finished_at))


def test_a_finish_before_the_start_is_refused() -> None:
    evaluation = given(scored=4)
    error = then_refused(
        evaluation, InvalidCommandError, lambda e: e.finish(AFTER.started_at - timedelta(seconds=1))
    )
    assert "finished_at" in str(error) and "before its start" in str(error)


BAD_STARTS: dict[str, tuple[dict[str, Any], str]] = {
    "a blank suite": ({"suite": "  "}, "suite must be non-blank text"),
    "a suite that is no text": ({"suite": 7}, "suite must be non-blank text"),
    "a model name with a newline": ({"model": "gpt\nrm -rf"}, "model must be one printable line"),
    "a model name with an escape": ({"model": "gpt\x1b[2J"}, "model must be one printable line"),
    "a model name far too long": ({"model": "m" * 501}, "at most 500 characters"),
    "a naive start time": ({"started_at": datetime(2026, 12, 1, 9, 30)}, "timezone-aware"),
    "a start time that is text": ({"started_at": "2026-12-01"}, "timezone-aware"),
    "settings that are a list": ({"settings": [("model", "x")]}, "settings must map names"),
    "a setting that is a number": ({"settings": {"timeout": 30}}, "setting 'timeout' must be text"),
    "a blank setting name": ({"settings": {"": "x"}}, "a setting's name must be non-blank"),
    "a negative case count": ({"cases": -1}, "cases must be a count"),
    "a case count that is a bool": ({"cases": True}, "cases must be a count"),
    "more cases than an evaluation holds": ({"cases": MAX_CASES + 1}, "cases must be a count"),
}


@pytest.mark.parametrize("bad", BAD_STARTS)
def test_a_start_with_a_bad_value_is_refused_naming_it(bad: str) -> None:
    changes, said = BAD_STARTS[bad]
    arguments: dict[str, Any] = {
        "eval_id": AFTER.eval_id,
        "suite": AFTER.suite,
        "model": AFTER.model,
        "settings": AFTER.settings,
        "started_at": AFTER.started_at,
        "cases": 4,
        **changes,
    }
    with pytest.raises(InvalidCommandError) as caught:
        EvalRun.start(**arguments)
    assert said in str(caught.value) and repr(AFTER.eval_id) in str(caught.value)
    assert caught.value.aggregate_id == AFTER.eval_id


GOOD = case("good", Verdict.CORRECT)
BAD_RESULTS: dict[str, tuple[dict[str, Any], str]] = {
    "a verdict that is text": ({"verdict": "correct"}, "is no Verdict"),
    "published-and-wrong yet correct": ({"published_wrong": True}, "only a wrong answer"),
    "published_wrong that is a number": ({"published_wrong": 1}, "True or False"),
    "reasons that are one text": ({"reasons": "missing: x"}, "reasons must be a list"),
    "a reason that is a number": ({"reasons": ("ok", 3)}, "a reason must be text"),
    "a blank case id": ({"case_id": ""}, "case_id must be non-blank"),
    "a case id with a control character": ({"case_id": "a\x00b"}, "case_id must be one printable"),
    "a question that is none": ({"question": None}, "question must be text"),
    "a blank state": ({"state": " "}, "state must be non-blank"),
    "a blank release": ({"release": ""}, "release must be non-blank"),
    "negative tokens": ({"tokens": -5}, "tokens must be a count"),
    "tokens beyond an int4": ({"tokens": MAX_COUNT + 1}, "tokens must be a count"),
    "a latency that is a float": ({"latency_ms": 1.5}, "latency_ms must be a count"),
    "model calls that are a bool": ({"model_calls": False}, "model_calls must be a count"),
}


@pytest.mark.parametrize("bad", BAD_RESULTS)
def test_a_case_with_a_bad_value_is_refused_naming_it(bad: str) -> None:
    changes, said = BAD_RESULTS[bad]
    evaluation = given(scored=0)
    result = dataclasses.replace(GOOD, **changes)
    error = then_refused(evaluation, InvalidCommandError, lambda e: e.score(result))
    assert said in str(error)


def test_a_bad_report_records_nothing_at_all() -> None:
    broken = dataclasses.replace(
        AFTER, results=(*AFTER.results[:2], dataclasses.replace(GOOD, tokens=-1))
    )
    with pytest.raises(InvalidCommandError, match="tokens must be a count"):
        EvalRun.of_report(broken)
