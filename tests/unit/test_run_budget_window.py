"""After the release nothing more is charged; after budget exhaustion one fallback.

Given/when/then over the Run aggregate: a run rebuilt from earlier events, one command, then
the exact new events, or a typed DomainError naming the run with nothing appended."""

from __future__ import annotations

import pytest

from domain.errors import IllegalTransitionError, RunNotActiveError
from domain.release_states import FallbackType, ReleaseOutcome
from domain.run import Run
from domain.states import BudgetKind, ModelStepPurpose, RunState
from tests.unit.gwt import then_events, then_refused
from tests.unit.run_steps import (
    BUDGET_ONLY,
    CONCLUSIONS_WITH_PROGRESS,
    CONTENT,
    EVF,
    FALLBACK,
    IE,
    IE_NEEDS,
    MRC,
    NOTHING_VERIFIED,
    PROGRESS_ONLY,
    RECHECK_FAILED,
    ROUTE_CHAT,
    ROUTE_DIAGNOSIS,
    ROUTE_KNOWLEDGE,
    RUN_ID,
    SEM_UNAVAILABLE,
    SEM_UNSUPPORTED,
    SUCCESS,
    SUPPORTED,
    UNAVAILABLE,
    UNSUPPORTED,
    WITH_PROGRESS,
    WITHOUT_PROGRESS,
    Step,
    attempt,
    checked,
    exhaust,
    finish,
    given,
    model_step,
    released,
)

# -- nothing more is charged once the release is decided -----------------------------------------

RELEASED_RUNS: dict[str, list[Step]] = {
    "answer": [ROUTE_CHAT, released(SUCCESS)],
    "diagnosis-success": [ROUTE_DIAGNOSIS, SUPPORTED, released(SUCCESS)],
    "insufficient-evidence": [ROUTE_DIAGNOSIS, PROGRESS_ONLY, released(FALLBACK, IE)],
    "missing-context": [ROUTE_DIAGNOSIS, NOTHING_VERIFIED, released(FALLBACK, MRC)],
}


@pytest.mark.parametrize("purpose", list(ModelStepPurpose), ids=lambda p: p.value)
@pytest.mark.parametrize("steps", list(RELEASED_RUNS.values()), ids=list(RELEASED_RUNS))
def test_a_model_step_after_the_release_decision_is_refused(
    steps: list[Step], purpose: ModelStepPurpose
) -> None:
    run = given(*steps)
    usage = run.usage

    error = then_refused(
        run, IllegalTransitionError, lambda r: r.record_model_step(purpose, 1, 1, 1)
    )

    assert str(error) == f"run {RUN_ID!r}: the release was already decided"
    assert run.usage == usage
    assert run.is_active


@pytest.mark.parametrize("kind", list(BudgetKind), ids=lambda k: k.value)
@pytest.mark.parametrize("steps", list(RELEASED_RUNS.values()), ids=list(RELEASED_RUNS))
def test_a_charge_after_the_release_decision_is_refused(
    steps: list[Step], kind: BudgetKind
) -> None:
    run = given(*steps)
    usage = run.usage

    error = then_refused(run, IllegalTransitionError, lambda r: r.charge(kind, 1, "late"))

    assert str(error) == f"run {RUN_ID!r}: the release was already decided"
    assert run.usage == usage
    assert run.is_active


def test_a_model_step_is_still_recorded_right_up_to_the_release() -> None:
    run = given(ROUTE_DIAGNOSIS, checked(True, True), attempt)

    run.record_model_step(ModelStepPurpose.JUDGE, 1, 1, 1)

    assert [type(e) for e in run.collect_events()] == [Run.AgentModelStep]
    assert run.release is None


@pytest.mark.parametrize(
    "command",
    [model_step, lambda r: r.charge(BudgetKind.TOOL_CALLS, 1)],
    ids=["model_step", "charge"],
)
def test_a_charge_after_a_budget_window_release_reports_the_termination(command: Step) -> None:
    run = given(ROUTE_DIAGNOSIS, exhaust, PROGRESS_ONLY, released(FALLBACK, IE))

    then_refused(run, RunNotActiveError, command)


# -- the budget window: after BUDGET_EXHAUSTED only an INSUFFICIENT_EVIDENCE fallback --------------


@pytest.mark.parametrize("guards", list(WITH_PROGRESS.values()), ids=list(WITH_PROGRESS))
def test_after_budget_exhaustion_an_insufficient_evidence_fallback_may_be_released(
    guards: Step,
) -> None:
    run = given(ROUTE_DIAGNOSIS, guards, exhaust)

    run.decide_release(FALLBACK, IE, CONTENT)

    assert then_events(run) == [
        (Run.ReleaseDecision, {"outcome": FALLBACK, "fallback_type": IE, "content": CONTENT})
    ]
    assert run.state is RunState.BUDGET_EXHAUSTED
    assert run.release == (FALLBACK, IE)


def test_a_release_is_allowed_when_the_budget_ran_out_before_the_evidence_check() -> None:
    run = given(ROUTE_DIAGNOSIS, exhaust, PROGRESS_ONLY)

    run.decide_release(FALLBACK, IE, CONTENT)

    assert [type(e) for e in run.collect_events()] == [Run.ReleaseDecision]


@pytest.mark.parametrize("guards", list(WITHOUT_PROGRESS.values()), ids=list(WITHOUT_PROGRESS))
def test_after_budget_exhaustion_insufficient_evidence_still_needs_verified_facts(
    guards: Step,
) -> None:
    run = given(ROUTE_DIAGNOSIS, guards, exhaust)

    error = then_refused(
        run, IllegalTransitionError, lambda r: r.decide_release(FALLBACK, IE, CONTENT)
    )

    assert str(error) == f"run {RUN_ID!r}: {IE_NEEDS}"
    assert run.state is RunState.BUDGET_EXHAUSTED


BUDGET_WINDOW_REFUSALS: list[tuple[str, list[Step], ReleaseOutcome, FallbackType | None, str]] = [
    ("success-after-supported", [ROUTE_DIAGNOSIS, SUPPORTED, exhaust], SUCCESS, None, BUDGET_ONLY),
    (
        "success-after-supported-with-progress",
        [ROUTE_DIAGNOSIS, CONCLUSIONS_WITH_PROGRESS["supported"], exhaust],
        SUCCESS,
        None,
        BUDGET_ONLY,
    ),
    (
        "semantic-unsupported",
        [ROUTE_DIAGNOSIS, UNSUPPORTED, exhaust],
        FALLBACK,
        SEM_UNSUPPORTED,
        BUDGET_ONLY,
    ),
    (
        "semantic-unavailable",
        [ROUTE_DIAGNOSIS, UNAVAILABLE, exhaust],
        FALLBACK,
        SEM_UNAVAILABLE,
        BUDGET_ONLY,
    ),
    (
        "evidence-validation-failed",
        [ROUTE_DIAGNOSIS, RECHECK_FAILED, exhaust],
        FALLBACK,
        EVF,
        BUDGET_ONLY,
    ),
    (
        "missing-required-context",
        [ROUTE_DIAGNOSIS, NOTHING_VERIFIED, exhaust],
        FALLBACK,
        MRC,
        BUDGET_ONLY,
    ),
    (
        "missing-required-context-with-progress",
        [ROUTE_DIAGNOSIS, PROGRESS_ONLY, exhaust],
        FALLBACK,
        MRC,
        BUDGET_ONLY,
    ),
    (
        "system-chat-fallback",
        [ROUTE_CHAT, exhaust],
        FALLBACK,
        IE,
        "only a routed SYSTEM_CHAT or KNOWLEDGE_QUERY answer is released without guards",
    ),
    (
        "insufficient-before-evidence-check",
        [ROUTE_DIAGNOSIS, exhaust],
        FALLBACK,
        IE,
        "a diagnosis is released only after the evidence guard has run",
    ),
    (
        "second-decision",
        [ROUTE_DIAGNOSIS, PROGRESS_ONLY, exhaust, released(FALLBACK, IE)],
        FALLBACK,
        IE,
        "the release was already decided",
    ),
]


@pytest.mark.parametrize(
    ("steps", "outcome", "fallback", "why"),
    [row[1:] for row in BUDGET_WINDOW_REFUSALS],
    ids=[row[0] for row in BUDGET_WINDOW_REFUSALS],
)
def test_after_budget_exhaustion_any_other_release_is_refused(
    steps: list[Step], outcome: ReleaseOutcome, fallback: FallbackType | None, why: str
) -> None:
    run = given(*steps)

    error = then_refused(
        run, IllegalTransitionError, lambda r: r.decide_release(outcome, fallback, {})
    )

    assert str(error) == f"run {RUN_ID!r}: {why}"
    assert run.state is RunState.BUDGET_EXHAUSTED


@pytest.mark.parametrize("route", [ROUTE_CHAT, ROUTE_KNOWLEDGE], ids=["system-chat", "knowledge"])
def test_a_routed_answer_after_budget_exhaustion_is_refused_and_the_run_finishes_failed(
    route: Step,
) -> None:
    """Only the budget fallback may publish after exhaustion (SPEC §3, §10)."""
    run = given(route, exhaust)

    error = then_refused(
        run, IllegalTransitionError, lambda r: r.decide_release(SUCCESS, None, CONTENT)
    )

    assert "only an INSUFFICIENT_EVIDENCE fallback" in str(error)
    assert run.finish(run.created_on) is ReleaseOutcome.FAILED


def test_a_budget_exhausted_run_refuses_a_release_after_finish() -> None:
    run = given(ROUTE_DIAGNOSIS, PROGRESS_ONLY, exhaust, finish)

    then_refused(run, RunNotActiveError, lambda r: r.decide_release(FALLBACK, IE, CONTENT))
