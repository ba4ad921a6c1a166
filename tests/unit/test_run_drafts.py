"""Given/when/then: a proposed draft is recorded whole or refused whole, with how it parsed."""

from __future__ import annotations

import hashlib

import pytest

from domain.errors import IllegalTransitionError, InvalidCommandError, RunNotActiveError
from domain.release_states import FallbackType, ReleaseOutcome
from domain.run import Run
from domain.states import (
    MAX_MODEL_OUTPUT_CHARS,
    CancellationReason,
    DraftOutcome,
    ModelStepPurpose,
)
from tests.unit.gwt import then_events, then_refused
from tests.unit.run_steps import PROGRESS_ONLY, ROUTE_DIAGNOSIS, Step, exhaust, given, released

DRAFT = '{"draft": {"conclusion": null, "facts": [], "missing_info": [{"kind": "SERVICE"}]}}'


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@pytest.mark.parametrize("purpose", [ModelStepPurpose.AGENT, ModelStepPurpose.REPAIR])
def test_a_valid_draft_is_recorded_whole_with_its_length_and_hash(
    purpose: ModelStepPurpose,
) -> None:
    run = given(ROUTE_DIAGNOSIS)

    run.propose_draft(purpose, DRAFT, DraftOutcome.VALID)

    assert then_events(run) == [
        (
            Run.DraftProposed,
            {
                "purpose": purpose,
                "text": DRAFT,
                "length": len(DRAFT),
                "sha256": sha256(DRAFT),
                "outcome": DraftOutcome.VALID,
                "detail": "",
            },
        )
    ]
    assert run.is_active and run.usage.model_calls == 0  # the model step charged the call


@pytest.mark.parametrize(
    "outcome",
    [DraftOutcome.EMPTY_DRAFT, DraftOutcome.INVALID_JSON, DraftOutcome.SCHEMA_INVALID],
    ids=lambda o: o.value,
)
def test_a_failed_draft_is_recorded_with_its_failure(outcome: DraftOutcome) -> None:
    run = given(ROUTE_DIAGNOSIS)

    run.propose_draft(ModelStepPurpose.AGENT, "{", outcome, "Expecting value at column 2")

    ((event, payload),) = then_events(run)
    assert event is Run.DraftProposed
    assert (payload["outcome"], payload["detail"]) == (outcome, "Expecting value at column 2")


def test_a_long_draft_is_kept_whole_with_its_length_and_hash_and_its_detail_bounded() -> None:
    run = given(ROUTE_DIAGNOSIS)
    text = "é" * 20_000  # two UTF-8 bytes each: the length counts characters

    run.propose_draft(ModelStepPurpose.AGENT, text, DraftOutcome.SCHEMA_INVALID, "x" * 1_000)

    ((_, payload),) = then_events(run)
    assert payload["text"] == text
    assert payload["length"] == 20_000
    assert payload["sha256"] == sha256(text)
    assert payload["detail"] == "x" * Run.MAX_DRAFT_DETAIL == "x" * 300


def test_a_draft_at_the_limit_is_kept_whole() -> None:
    run = given(ROUTE_DIAGNOSIS)
    text = "x" * MAX_MODEL_OUTPUT_CHARS

    run.propose_draft(ModelStepPurpose.AGENT, text, DraftOutcome.INVALID_JSON, "not JSON")

    ((_, payload),) = then_events(run)
    assert payload["text"] == text and payload["length"] == MAX_MODEL_OUTPUT_CHARS == 32_000


@pytest.mark.parametrize("outcome", list(DraftOutcome), ids=lambda o: o.value)
def test_a_draft_over_the_limit_is_never_recorded_as_text(outcome: DraftOutcome) -> None:
    run = given(ROUTE_DIAGNOSIS)
    text = "x" * (MAX_MODEL_OUTPUT_CHARS + 1)
    detail = "" if outcome is DraftOutcome.VALID else "why"

    then_refused(
        run,
        InvalidCommandError,
        lambda r: r.propose_draft(ModelStepPurpose.AGENT, text, outcome, detail),
    )


def test_a_draft_refused_too_large_records_its_length_and_hash_but_no_text() -> None:
    run = given(ROUTE_DIAGNOSIS)
    text = "y" * 40_000

    run.refuse_draft(ModelStepPurpose.REPAIR, len(text), sha256(text))

    ((event, payload),) = then_events(run)
    assert event is Run.DraftProposed
    assert (payload["outcome"], payload["text"]) == (DraftOutcome.TOO_LARGE, "")
    assert (payload["length"], payload["sha256"]) == (40_000, sha256(text))
    assert payload["detail"] == "40000 characters, over the 32000 a model answer may have"


@pytest.mark.parametrize(
    ("purpose", "length", "digest"),
    [
        (ModelStepPurpose.AGENT, MAX_MODEL_OUTPUT_CHARS, "a" * 64),  # not over the limit
        (ModelStepPurpose.AGENT, 40_000, "not a hash"),
        (ModelStepPurpose.JUDGE, 40_000, "a" * 64),  # the judge proposes no draft
    ],
)
def test_a_refusal_too_large_is_refused_unless_over_the_limit_with_a_hash(
    purpose: ModelStepPurpose, length: int, digest: str
) -> None:
    run = given(ROUTE_DIAGNOSIS)

    then_refused(run, InvalidCommandError, lambda r: r.refuse_draft(purpose, length, digest))


def test_an_empty_draft_is_recorded_as_proposed() -> None:
    run = given(ROUTE_DIAGNOSIS)

    run.propose_draft(ModelStepPurpose.AGENT, "", DraftOutcome.EMPTY_DRAFT, "nothing drafted")

    ((_, payload),) = then_events(run)
    assert (payload["text"], payload["length"], payload["sha256"]) == ("", 0, sha256(""))


@pytest.mark.parametrize(
    "purpose",
    [ModelStepPurpose.ROUTE, ModelStepPurpose.ANSWER, ModelStepPurpose.JUDGE],
    ids=lambda p: p.value,
)
def test_only_the_agent_and_the_repair_propose_a_draft(purpose: ModelStepPurpose) -> None:
    run = given(ROUTE_DIAGNOSIS)

    error = then_refused(
        run, InvalidCommandError, lambda r: r.propose_draft(purpose, DRAFT, DraftOutcome.VALID)
    )
    assert f"not {purpose.value}" in str(error)


@pytest.mark.parametrize(
    ("outcome", "detail"),
    [(DraftOutcome.VALID, "but it said why"), (DraftOutcome.INVALID_JSON, "")],
    ids=["valid-with-detail", "failed-without-detail"],
)
def test_a_failure_needs_its_detail_and_a_valid_draft_has_none(
    outcome: DraftOutcome, detail: str
) -> None:
    run = given(ROUTE_DIAGNOSIS)

    then_refused(
        run,
        InvalidCommandError,
        lambda r: r.propose_draft(ModelStepPurpose.AGENT, DRAFT, outcome, detail),
    )


@pytest.mark.parametrize(
    "termination",
    [exhaust, lambda r: r.time_out(), lambda r: r.cancel(CancellationReason.USER_REQUESTED)],
    ids=["budget-exhausted", "timed-out", "cancelled"],
)
def test_a_draft_after_termination_is_refused(termination: Step) -> None:
    run = given(ROUTE_DIAGNOSIS, termination)

    then_refused(
        run,
        RunNotActiveError,
        lambda r: r.propose_draft(ModelStepPurpose.AGENT, DRAFT, DraftOutcome.VALID),
    )


def test_a_draft_after_the_release_decision_is_refused() -> None:
    run = given(
        ROUTE_DIAGNOSIS,
        PROGRESS_ONLY,
        released(ReleaseOutcome.FALLBACK, FallbackType.INSUFFICIENT_EVIDENCE),
    )

    then_refused(
        run,
        IllegalTransitionError,
        lambda r: r.propose_draft(ModelStepPurpose.REPAIR, DRAFT, DraftOutcome.VALID),
    )
