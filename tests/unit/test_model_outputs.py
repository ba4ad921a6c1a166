"""Given/when/then: a model answer is recorded whole, or refused whole over the size limit."""

from __future__ import annotations

import hashlib

import pytest

from domain.errors import InvalidCommandError
from domain.run import Run
from domain.states import MAX_MODEL_OUTPUT_CHARS, ModelStepOutcome, ModelStepPurpose
from tests.unit.gwt import then_events, then_refused
from tests.unit.run_steps import ROUTE_DIAGNOSIS, given


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _step(run: Run, purpose: ModelStepPurpose, outcome: ModelStepOutcome, answer: str) -> None:
    run.record_model_step(purpose, 10, 5, 20, outcome, answer=answer)


@pytest.mark.parametrize("purpose", list(Run.KEPT_ANSWERS), ids=lambda p: p.value)
def test_a_router_answer_or_judge_answer_is_kept_whole(purpose: ModelStepPurpose) -> None:
    run = given(ROUTE_DIAGNOSIS)
    answer = "prose MARKER-1 " * 2_000  # 30,000 characters: under the limit

    _step(run, purpose, ModelStepOutcome.OK, answer)

    ((event, payload),) = then_events(run)
    assert event is Run.AgentModelStep
    assert (payload["text"], payload["length"]) == (answer, 30_000)
    assert payload["sha256"] == sha256(answer)


@pytest.mark.parametrize("purpose", [ModelStepPurpose.AGENT, ModelStepPurpose.REPAIR])
def test_an_agent_or_repair_answer_keeps_its_length_and_hash_only(
    purpose: ModelStepPurpose,
) -> None:
    run = given(ROUTE_DIAGNOSIS)

    _step(run, purpose, ModelStepOutcome.OK, '{"draft": {}}')

    ((_, payload),) = then_events(run)
    assert (payload["text"], payload["length"]) == ("", 13)  # the draft's event holds the text
    assert payload["sha256"] == sha256('{"draft": {}}')


def test_an_answer_over_the_limit_is_recorded_too_large_without_its_text() -> None:
    run = given(ROUTE_DIAGNOSIS)
    answer = "x" * (MAX_MODEL_OUTPUT_CHARS + 1)

    _step(run, ModelStepPurpose.JUDGE, ModelStepOutcome.TOO_LARGE, answer)

    ((_, payload),) = then_events(run)
    assert payload["outcome"] is ModelStepOutcome.TOO_LARGE
    assert (payload["text"], payload["length"]) == ("", 32_001)
    assert payload["sha256"] == sha256(answer)
    assert run.usage.model_calls == 1  # the call was made: it is charged


@pytest.mark.parametrize(
    ("outcome", "length"),
    [
        (ModelStepOutcome.OK, MAX_MODEL_OUTPUT_CHARS + 1),  # over the limit, yet read
        (ModelStepOutcome.TOO_LARGE, MAX_MODEL_OUTPUT_CHARS),  # refused, yet within it
    ],
)
def test_an_answer_is_too_large_exactly_when_it_is_over_the_limit(
    outcome: ModelStepOutcome, length: int
) -> None:
    run = given(ROUTE_DIAGNOSIS)

    then_refused(
        run,
        InvalidCommandError,
        lambda r: _step(r, ModelStepPurpose.ROUTE, outcome, "x" * length),
    )


def test_a_failed_call_records_no_answer() -> None:
    run = given(ROUTE_DIAGNOSIS)

    run.record_model_step(ModelStepPurpose.ROUTE, 0, 0, 5, ModelStepOutcome.FAILED, "timeout")

    ((_, payload),) = then_events(run)
    assert (payload["text"], payload["length"], payload["sha256"]) == ("", 0, "")
