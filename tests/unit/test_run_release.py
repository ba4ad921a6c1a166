"""The release decision: what the guards support, and what verified progress decides.

Given/when/then over the Run aggregate: a run rebuilt from earlier events, one command, then
the exact new events, or a typed DomainError naming the run with nothing appended."""

from __future__ import annotations

import pytest

from domain.errors import IllegalTransitionError, RunNotActiveError
from domain.release_states import FallbackType, GuardStage, ReleaseOutcome
from domain.run import Run
from domain.states import CancellationReason, FailureCode, RunState
from tests.unit.gwt import then_events, then_refused
from tests.unit.run_steps import (
    CONCLUSIONS_WITH_PROGRESS,
    CONTENT,
    EVF,
    FALLBACK,
    IE,
    IE_NEEDS,
    MRC,
    MRC_NEEDS,
    NOTHING_VERIFIED,
    PROGRESS_ONLY,
    RECHECK_FAILED,
    REPAIRED_SUPPORTED,
    ROUTE_CHAT,
    ROUTE_DIAGNOSIS,
    ROUTE_ERROR,
    ROUTE_KNOWLEDGE,
    RUN_ID,
    SEM_UNAVAILABLE,
    SEM_UNSUPPORTED,
    SUCCESS,
    SUPPORTED,
    UNAVAILABLE,
    UNSUPPORTED,
    VALID_REFERENCES_NOTHING_VERIFIED,
    VERIFIED,
    WITHOUT_PROGRESS,
    Step,
    attempt,
    chain,
    checked,
    conclusion_stages,
    given,
    recheck,
    released,
    repair,
)

# -- release decision ----------------------------------------------------------------------------

PENDING = chain(checked(True, True), attempt)


RELEASES: list[tuple[str, list[Step], ReleaseOutcome, FallbackType | None]] = [
    ("conclusion-supported", [ROUTE_DIAGNOSIS, SUPPORTED], SUCCESS, None),
    ("repaired-then-supported", [ROUTE_DIAGNOSIS, REPAIRED_SUPPORTED], SUCCESS, None),
    (
        "conclusion-supported-with-progress",
        [ROUTE_DIAGNOSIS, conclusion_stages(VERIFIED)["supported"]],
        SUCCESS,
        None,
    ),
    ("semantic-unsupported", [ROUTE_DIAGNOSIS, UNSUPPORTED], FALLBACK, SEM_UNSUPPORTED),
    ("semantic-unavailable", [ROUTE_DIAGNOSIS, UNAVAILABLE], FALLBACK, SEM_UNAVAILABLE),
    ("evidence-validation-failed", [ROUTE_DIAGNOSIS, RECHECK_FAILED], FALLBACK, EVF),
    (
        "evidence-validation-failed-with-progress",
        [ROUTE_DIAGNOSIS, conclusion_stages(VERIFIED)["recheck-failed"]],
        FALLBACK,
        EVF,
    ),
    ("missing-required-context", [ROUTE_DIAGNOSIS, NOTHING_VERIFIED], FALLBACK, MRC),
    (
        "missing-required-context-valid-references",
        [ROUTE_DIAGNOSIS, VALID_REFERENCES_NOTHING_VERIFIED],
        FALLBACK,
        MRC,
    ),
    ("insufficient-evidence", [ROUTE_DIAGNOSIS, PROGRESS_ONLY], FALLBACK, IE),
    (
        "insufficient-evidence-one-verified-fact",
        [ROUTE_DIAGNOSIS, checked(False, True, 1)],
        FALLBACK,
        IE,
    ),
    (
        "insufficient-evidence-some-references-invalid",
        [ROUTE_DIAGNOSIS, checked(False, False, VERIFIED)],
        FALLBACK,
        IE,
    ),
    ("system-chat-answer", [ROUTE_CHAT], SUCCESS, None),
    ("knowledge-answer", [ROUTE_KNOWLEDGE], SUCCESS, None),
]


@pytest.mark.parametrize(
    ("steps", "outcome", "fallback"),
    [(steps, outcome, fallback) for _, steps, outcome, fallback in RELEASES],
    ids=[name for name, *_ in RELEASES],
)
def test_decide_release_records_what_is_published(
    steps: list[Step], outcome: ReleaseOutcome, fallback: FallbackType | None
) -> None:
    run = given(*steps)

    run.decide_release(outcome, fallback, CONTENT)

    assert then_events(run) == [
        (Run.ReleaseDecision, {"outcome": outcome, "fallback_type": fallback, "content": CONTENT})
    ]
    assert run.release == (outcome, fallback)
    assert run.guards.stage is GuardStage.DECIDED
    assert run.state is RunState.RUNNING


RELEASE_REFUSALS: list[tuple[str, list[Step], ReleaseOutcome, FallbackType | None]] = [
    ("success-before-guards", [ROUTE_DIAGNOSIS], SUCCESS, None),
    ("insufficient-before-guards", [ROUTE_DIAGNOSIS], FALLBACK, IE),
    ("missing-context-before-guards", [ROUTE_DIAGNOSIS], FALLBACK, MRC),
    ("success-after-evidence-check-only", [ROUTE_DIAGNOSIS, checked(True, True)], SUCCESS, None),
    ("success-while-semantic-pending", [ROUTE_DIAGNOSIS, PENDING], SUCCESS, None),
    ("success-after-unsupported", [ROUTE_DIAGNOSIS, UNSUPPORTED], SUCCESS, None),
    ("success-after-unavailable", [ROUTE_DIAGNOSIS, UNAVAILABLE], SUCCESS, None),
    ("success-without-conclusion", [ROUTE_DIAGNOSIS, PROGRESS_ONLY], SUCCESS, None),
    ("success-after-failed-recheck", [ROUTE_DIAGNOSIS, RECHECK_FAILED], SUCCESS, None),
    ("unsupported-after-supported", [ROUTE_DIAGNOSIS, SUPPORTED], FALLBACK, SEM_UNSUPPORTED),
    ("unsupported-after-unavailable", [ROUTE_DIAGNOSIS, UNAVAILABLE], FALLBACK, SEM_UNSUPPORTED),
    ("unsupported-while-pending", [ROUTE_DIAGNOSIS, PENDING], FALLBACK, SEM_UNSUPPORTED),
    ("unavailable-after-supported", [ROUTE_DIAGNOSIS, SUPPORTED], FALLBACK, SEM_UNAVAILABLE),
    ("unavailable-after-unsupported", [ROUTE_DIAGNOSIS, UNSUPPORTED], FALLBACK, SEM_UNAVAILABLE),
    ("unavailable-while-pending", [ROUTE_DIAGNOSIS, PENDING], FALLBACK, SEM_UNAVAILABLE),
    ("validation-failed-without-repair", [ROUTE_DIAGNOSIS, checked(True, False)], FALLBACK, EVF),
    (
        "validation-failed-before-recheck",
        [ROUTE_DIAGNOSIS, checked(True, False), repair],
        FALLBACK,
        EVF,
    ),
    (
        "validation-failed-after-passing-recheck",
        [ROUTE_DIAGNOSIS, checked(True, False), repair, recheck(True)],
        FALLBACK,
        EVF,
    ),
    ("validation-failed-after-supported", [ROUTE_DIAGNOSIS, SUPPORTED], FALLBACK, EVF),
    ("validation-failed-without-conclusion", [ROUTE_DIAGNOSIS, NOTHING_VERIFIED], FALLBACK, EVF),
    ("missing-context-with-conclusion", [ROUTE_DIAGNOSIS, checked(True, False)], FALLBACK, MRC),
    ("missing-context-after-semantic-guard", [ROUTE_DIAGNOSIS, UNSUPPORTED], FALLBACK, MRC),
    ("missing-context-after-recheck", [ROUTE_DIAGNOSIS, RECHECK_FAILED], FALLBACK, MRC),
    ("outcome-failed", [ROUTE_DIAGNOSIS, PROGRESS_ONLY], ReleaseOutcome.FAILED, None),
    ("outcome-cancelled", [ROUTE_DIAGNOSIS, PROGRESS_ONLY], ReleaseOutcome.CANCELLED, None),
    ("fallback-without-type", [ROUTE_DIAGNOSIS, PROGRESS_ONLY], FALLBACK, None),
    ("success-with-a-type", [ROUTE_DIAGNOSIS, SUPPORTED], SUCCESS, IE),
    ("second-decision", [ROUTE_DIAGNOSIS, PROGRESS_ONLY, released(FALLBACK, IE)], FALLBACK, IE),
    ("second-answer", [ROUTE_CHAT, released(SUCCESS)], SUCCESS, None),
    ("system-chat-fallback", [ROUTE_CHAT], FALLBACK, IE),
    ("knowledge-fallback", [ROUTE_KNOWLEDGE], FALLBACK, MRC),
    ("unrouted-success", [], SUCCESS, None),
    ("routing-error-success", [ROUTE_ERROR], SUCCESS, None),
    ("routing-error-fallback", [ROUTE_ERROR], FALLBACK, IE),
]


@pytest.mark.parametrize(
    ("steps", "outcome", "fallback"),
    [(steps, outcome, fallback) for _, steps, outcome, fallback in RELEASE_REFUSALS],
    ids=[name for name, *_ in RELEASE_REFUSALS],
)
def test_a_release_the_guards_do_not_support_is_refused(
    steps: list[Step], outcome: ReleaseOutcome, fallback: FallbackType | None
) -> None:
    run = given(*steps)
    release_before = run.release

    then_refused(run, IllegalTransitionError, lambda r: r.decide_release(outcome, fallback, {}))
    assert run.release == release_before


# -- verified progress decides between INSUFFICIENT_EVIDENCE and MISSING_REQUIRED_CONTEXT ---------


@pytest.mark.parametrize("guards", list(WITHOUT_PROGRESS.values()), ids=list(WITHOUT_PROGRESS))
def test_insufficient_evidence_without_verified_facts_is_refused(guards: Step) -> None:
    run = given(ROUTE_DIAGNOSIS, guards)

    error = then_refused(
        run, IllegalTransitionError, lambda r: r.decide_release(FALLBACK, IE, CONTENT)
    )

    assert str(error) == f"run {RUN_ID!r}: {IE_NEEDS}"
    assert run.release is None


@pytest.mark.parametrize(
    "guards",
    [PROGRESS_ONLY, checked(False, False, VERIFIED), checked(False, True, 1)],
    ids=["progress", "progress-invalid-references", "one-verified-fact"],
)
def test_missing_required_context_with_verified_facts_is_refused(guards: Step) -> None:
    run = given(ROUTE_DIAGNOSIS, guards)

    error = then_refused(
        run, IllegalTransitionError, lambda r: r.decide_release(FALLBACK, MRC, CONTENT)
    )

    assert str(error) == f"run {RUN_ID!r}: {MRC_NEEDS}"
    assert run.release is None


@pytest.mark.parametrize(
    "guards", list(CONCLUSIONS_WITH_PROGRESS.values()), ids=list(CONCLUSIONS_WITH_PROGRESS)
)
def test_insufficient_evidence_after_a_conclusion_is_refused_while_running(guards: Step) -> None:
    run = given(ROUTE_DIAGNOSIS, guards)

    error = then_refused(
        run, IllegalTransitionError, lambda r: r.decide_release(FALLBACK, IE, CONTENT)
    )

    assert str(error) == f"run {RUN_ID!r}: {IE_NEEDS}"
    assert run.state is RunState.RUNNING


@pytest.mark.parametrize(
    "termination",
    [
        lambda r: r.time_out(),
        lambda r: r.cancel(CancellationReason.DEADLINE_EXCEEDED),
        lambda r: r.cancel(CancellationReason.CLIENT_DISCONNECTED),
        lambda r: r.fail(FailureCode.MODEL_FAILED),
    ],
    ids=["timed-out", "cancel-deadline", "cancelled", "failed"],
)
def test_a_release_after_a_non_budget_termination_is_refused(termination: Step) -> None:
    run = given(ROUTE_DIAGNOSIS, PROGRESS_ONLY, termination)

    then_refused(run, RunNotActiveError, lambda r: r.decide_release(FALLBACK, IE, CONTENT))
