"""Finishing a run: the outcome it derives, nothing after RUN_FINISHED, and replay.

Given/when/then over the Run aggregate: a run rebuilt from earlier events, one command, then
the exact new events, or a typed DomainError naming the run with nothing appended."""

from __future__ import annotations

from datetime import timedelta

import pytest

from domain.errors import IllegalTransitionError, RunNotActiveError
from domain.release_states import ReleaseOutcome, SemanticVerdict
from domain.run import Run
from domain.states import (
    BudgetKind,
    CancellationReason,
    ChatApplicationStatus,
    FailureCode,
    Intent,
    ModelStepPurpose,
    RunState,
)
from domain.tool_states import ToolRejectionCode
from domain.values import Budget
from tests.unit.gwt import replay, then_events, then_refused
from tests.unit.run_steps import (
    CONTENT,
    DEADLINE,
    EVF,
    FALLBACK,
    IE,
    LIMITS,
    MRC,
    NOTHING_VERIFIED,
    PROGRESS_ONLY,
    RECHECK_FAILED,
    ROUTE_CHAT,
    ROUTE_DIAGNOSIS,
    RUN_ID,
    SEM_UNSUPPORTED,
    SUCCESS,
    SUPPORTED,
    UNSUPPORTED,
    Step,
    attempt,
    checked,
    complete,
    exhaust,
    finish,
    given,
    model_step,
    recheck,
    released,
    repair,
    verdict,
)

# -- finish --------------------------------------------------------------------------------------


def test_finish_records_outcome_usage_against_limits_and_duration() -> None:
    run = given(
        ROUTE_CHAT,
        lambda r: r.record_model_step(ModelStepPurpose.ANSWER, 10, 5, 40),
        lambda r: r.charge(BudgetKind.TOOL_CALLS, 1),
        lambda r: r.charge(BudgetKind.BYTES, 100),
        released(SUCCESS),
        complete,
    )

    outcome = run.finish(run.created_on + timedelta(milliseconds=2_500))

    assert outcome is ReleaseOutcome.SUCCESS
    assert then_events(run) == [
        (
            Run.RunFinished,
            {
                "release_outcome": ReleaseOutcome.SUCCESS,
                "usage": Budget(model_calls=1, tool_calls=1, tokens=15, bytes=100),
                "limits": LIMITS,
                "duration_ms": 2_500,
            },
        )
    ]
    assert run.is_finished
    assert run.finished_outcome is ReleaseOutcome.SUCCESS


def test_finish_never_records_a_negative_duration() -> None:
    run = given(ROUTE_DIAGNOSIS, lambda r: r.time_out())

    run.finish(run.created_on - timedelta(seconds=5))

    (event,) = run.collect_events()
    assert isinstance(event, Run.RunFinished)
    assert event.duration_ms == 0


FINISH_OUTCOMES: list[tuple[str, list[Step], ReleaseOutcome]] = [
    ("success", [ROUTE_DIAGNOSIS, SUPPORTED, released(SUCCESS), complete], SUCCESS),
    ("fallback", [ROUTE_DIAGNOSIS, PROGRESS_ONLY, released(FALLBACK, IE), complete], FALLBACK),
    (
        "budget-exhausted-with-fallback",
        [ROUTE_DIAGNOSIS, exhaust, PROGRESS_ONLY, released(FALLBACK, IE), complete],
        FALLBACK,
    ),
    ("budget-exhausted-without-release", [ROUTE_DIAGNOSIS, exhaust], ReleaseOutcome.FAILED),
    (
        "budget-exhausted-after-insufficient-evidence-release",
        [ROUTE_DIAGNOSIS, PROGRESS_ONLY, released(FALLBACK, IE), exhaust],
        FALLBACK,
    ),
    (
        "budget-exhausted-after-missing-context-release",
        [ROUTE_DIAGNOSIS, NOTHING_VERIFIED, released(FALLBACK, MRC), exhaust],
        ReleaseOutcome.FAILED,
    ),
    (
        "budget-exhausted-after-semantic-fallback",
        [ROUTE_DIAGNOSIS, UNSUPPORTED, released(FALLBACK, SEM_UNSUPPORTED), exhaust],
        ReleaseOutcome.FAILED,
    ),
    (
        "budget-exhausted-after-validation-fallback",
        [ROUTE_DIAGNOSIS, RECHECK_FAILED, released(FALLBACK, EVF), exhaust],
        ReleaseOutcome.FAILED,
    ),
    (
        "budget-exhausted-after-diagnosis-success",
        [ROUTE_DIAGNOSIS, SUPPORTED, released(SUCCESS), exhaust],
        ReleaseOutcome.FAILED,
    ),
    (
        "budget-exhausted-after-answer",
        [ROUTE_CHAT, released(SUCCESS), exhaust],
        ReleaseOutcome.FAILED,
    ),
    (
        "budget-exhausted-answer-never-released",
        [ROUTE_CHAT, exhaust],
        ReleaseOutcome.FAILED,
    ),
    ("timed-out", [ROUTE_DIAGNOSIS, lambda r: r.time_out()], ReleaseOutcome.FAILED),
    (
        "cancelled-for-the-deadline",
        [ROUTE_DIAGNOSIS, lambda r: r.cancel(CancellationReason.DEADLINE_EXCEEDED)],
        ReleaseOutcome.FAILED,
    ),
    (
        "timed-out-after-release",
        [ROUTE_CHAT, released(SUCCESS), lambda r: r.time_out()],
        ReleaseOutcome.FAILED,
    ),
    (
        "client-disconnected",
        [ROUTE_DIAGNOSIS, lambda r: r.cancel(CancellationReason.CLIENT_DISCONNECTED)],
        ReleaseOutcome.CANCELLED,
    ),
    (
        "user-requested-after-release",
        [ROUTE_CHAT, released(SUCCESS), lambda r: r.cancel(CancellationReason.USER_REQUESTED)],
        ReleaseOutcome.CANCELLED,
    ),
    (
        "failed",
        [ROUTE_DIAGNOSIS, lambda r: r.fail(FailureCode.INVALID_DRAFT)],
        ReleaseOutcome.FAILED,
    ),
    (
        "failed-after-fallback-release",
        [
            ROUTE_DIAGNOSIS,
            PROGRESS_ONLY,
            released(FALLBACK, IE),
            lambda r: r.fail(FailureCode.INTERNAL_ERROR),
        ],
        ReleaseOutcome.FAILED,
    ),
    (
        "internal-failure",
        [ROUTE_DIAGNOSIS, lambda r: r.cancel(CancellationReason.INTERNAL_FAILURE)],
        ReleaseOutcome.FAILED,
    ),
]


@pytest.mark.parametrize(
    ("steps", "expected"),
    [(steps, expected) for _, steps, expected in FINISH_OUTCOMES],
    ids=[name for name, *_ in FINISH_OUTCOMES],
)
def test_finish_derives_the_release_outcome(steps: list[Step], expected: ReleaseOutcome) -> None:
    run = given(*steps)

    outcome = run.finish(run.created_on)

    assert outcome is expected
    assert then_events(run) == [
        (
            Run.RunFinished,
            {
                "release_outcome": expected,
                "usage": run.usage,
                "limits": LIMITS,
                "duration_ms": 0,
            },
        )
    ]


@pytest.mark.parametrize(
    "steps",
    [[], [ROUTE_CHAT, released(SUCCESS)]],
    ids=["started", "released"],
)
def test_finish_is_refused_before_the_termination(steps: list[Step]) -> None:
    run = given(*steps)

    then_refused(run, IllegalTransitionError, lambda r: r.finish(r.created_on))


def test_finish_is_refused_when_already_finished() -> None:
    run = given(ROUTE_DIAGNOSIS, lambda r: r.time_out(), finish)

    then_refused(run, RunNotActiveError, lambda r: r.finish(r.created_on))
    assert run.finished_outcome is ReleaseOutcome.FAILED


# -- nothing after RUN_FINISHED ------------------------------------------------------------------

AFTER_FINISH: list[tuple[str, Step]] = [
    ("attempt_routing", lambda r: r.attempt_routing()),
    ("decide_routing", lambda r: r.decide_routing(Intent.DIAGNOSIS)),
    ("status-safety", lambda r: r.change_status(ChatApplicationStatus.SAFETY_VALIDATING)),
    ("status-routing", lambda r: r.change_status(ChatApplicationStatus.ROUTING)),
    ("model_step", model_step),
    ("charge", lambda r: r.charge(BudgetKind.BYTES, 1)),
    ("reject_tool", lambda r: r.reject_tool_request("t", ToolRejectionCode.INVALID_RUN, "")),
    ("check_evidence", checked(False, True)),
    ("repair_evidence", repair),
    ("recheck_evidence", recheck(True)),
    ("attempt_semantic_guard", attempt),
    ("decide_semantic_guard", verdict(SemanticVerdict.SUPPORTED)),
    ("decide_release", released(FALLBACK, IE)),
    ("finish", finish),
]

FINISHED_RUNS: dict[str, list[Step]] = {
    "success": [ROUTE_DIAGNOSIS, SUPPORTED, released(SUCCESS), complete, finish],
    "budget-fallback": [
        ROUTE_DIAGNOSIS,
        exhaust,
        PROGRESS_ONLY,
        released(FALLBACK, IE),
        complete,
        finish,
    ],
    "budget-no-release": [ROUTE_DIAGNOSIS, exhaust, finish],
    "cancelled": [ROUTE_DIAGNOSIS, lambda r: r.cancel(CancellationReason.USER_REQUESTED), finish],
}


@pytest.mark.parametrize("finished", list(FINISHED_RUNS))
@pytest.mark.parametrize(
    "command", [command for _, command in AFTER_FINISH], ids=[n for n, _ in AFTER_FINISH]
)
def test_every_command_after_finish_is_refused(finished: str, command: Step) -> None:
    run = given(*FINISHED_RUNS[finished])

    then_refused(run, RunNotActiveError, command)
    assert run.is_finished


# -- replay --------------------------------------------------------------------------------------


def test_replaying_the_events_reproduces_the_run() -> None:
    run = Run.start("session-1", "why?", DEADLINE, limits=LIMITS, run_id=RUN_ID)
    run.attempt_routing()
    run.decide_routing(Intent.DIAGNOSIS)
    run.change_status(ChatApplicationStatus.DIAGNOSIS_RUNNING)
    run.record_model_step(ModelStepPurpose.AGENT, 20, 10, 5)
    run.charge(BudgetKind.TOOL_CALLS, 1, "inv-1")
    run.charge(BudgetKind.BYTES, 300, "inv-1")
    run.reject_tool_request("shell.exec", ToolRejectionCode.NOT_READ_ONLY, "writes")
    run.check_evidence(True, False, ("inv-9",), verified_facts=1)
    run.repair_evidence()
    run.recheck_evidence(True)
    run.change_status(ChatApplicationStatus.SAFETY_VALIDATING)
    run.attempt_semantic_guard()
    run.record_model_step(ModelStepPurpose.JUDGE, 40, 40, 5)
    run.decide_semantic_guard(SemanticVerdict.SUPPORTED)
    run.decide_release(FALLBACK, IE, CONTENT)
    run.complete()
    run.finish(run.created_on + timedelta(seconds=3))
    events = run.collect_events()

    replayed = replay(Run, events)

    assert replayed == run
    assert replayed.version == len(events)
    assert replayed.state is RunState.BUDGET_EXHAUSTED
    assert replayed.usage == Budget(model_calls=2, tool_calls=1, tokens=110, bytes=300)
    assert replayed.release == (FALLBACK, IE)
    assert replayed.guards.verified_facts == 1
    assert replayed.finished_outcome is FALLBACK
