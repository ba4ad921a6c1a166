"""Given/when/then: ending a run whose worker was lost (``Run.end_orphaned``)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from uuid import UUID

from domain.release_states import FallbackType, ReleaseOutcome
from domain.run import Run
from domain.states import BudgetKind, CancellationReason, FailureCode, Intent, RunState
from domain.values import Budget, Termination
from tests.unit.gwt import replay, then_events

RUN_ID = UUID("00000000-0000-4000-8000-0000000000aa")
STARTED = datetime(2030, 1, 1, tzinfo=UTC)
DEADLINE = STARTED + timedelta(minutes=2)
LIMITS = Budget(model_calls=3, tool_calls=2, tokens=100, bytes=1_000)
BEFORE_DEADLINE = STARTED + timedelta(seconds=40)
AFTER_DEADLINE = DEADLINE + timedelta(seconds=1)


def given(*steps: Callable[[Run], object]) -> Run:
    run = Run.start("s", "q", DEADLINE, limits=LIMITS, run_id=RUN_ID, worker="host:1:ab")
    for step in steps:
        step(run)
    return replay(Run, run.collect_events())


def finished_payload(run: Run, outcome: ReleaseOutcome, now: datetime) -> dict[str, object]:
    duration = int((now - run.created_on).total_seconds() * 1000)
    return {
        "release_outcome": outcome,
        "usage": run.usage,
        "limits": LIMITS,
        "duration_ms": max(0, duration),
    }


def test_a_running_run_before_its_deadline_ends_failed_worker_lost_and_finished() -> None:
    run = given()

    termination = run.end_orphaned(BEFORE_DEADLINE)

    assert termination == Termination(RunState.FAILED, FailureCode.WORKER_LOST)
    assert then_events(run) == [
        (
            Run.RunTerminated,
            {"state": RunState.FAILED, "reason": FailureCode.WORKER_LOST, "cause": ""},
        ),
        (Run.RunFinished, finished_payload(run, ReleaseOutcome.FAILED, BEFORE_DEADLINE)),
    ]
    assert run.is_finished and run.state is RunState.FAILED


def test_a_run_past_its_deadline_ends_timed_out_then_cancels_and_finishes() -> None:
    run = given()

    termination = run.end_orphaned(AFTER_DEADLINE)

    assert termination == Termination(RunState.TIMED_OUT, CancellationReason.DEADLINE_EXCEEDED)
    deadline = CancellationReason.DEADLINE_EXCEEDED
    assert then_events(run) == [
        (Run.RunTerminated, {"state": RunState.TIMED_OUT, "reason": deadline, "cause": ""}),
        (Run.CancellationRequested, {"reason": deadline}),
        (Run.RunFinished, finished_payload(run, ReleaseOutcome.FAILED, AFTER_DEADLINE)),
    ]


def test_a_run_already_terminated_keeps_its_termination_and_only_gets_finished() -> None:
    run = given(lambda r: r.cancel(CancellationReason.USER_REQUESTED))

    termination = run.end_orphaned(AFTER_DEADLINE)

    assert termination == Termination(RunState.CANCELLED, CancellationReason.USER_REQUESTED)
    assert then_events(run) == [
        (Run.RunFinished, finished_payload(run, ReleaseOutcome.CANCELLED, AFTER_DEADLINE))
    ]


def test_a_budget_fallback_released_before_the_worker_died_is_still_published() -> None:
    def released(run: Run) -> None:
        run.attempt_routing()
        run.decide_routing(Intent.DIAGNOSIS)
        run.exhaust_budget(BudgetKind.TOOL_CALLS)
        run.check_evidence(has_conclusion=False, valid=True, verified_facts=1)
        fallback = FallbackType.INSUFFICIENT_EVIDENCE
        run.decide_release(ReleaseOutcome.FALLBACK, fallback, {"facts": []})

    run = given(released)

    termination = run.end_orphaned(BEFORE_DEADLINE)

    assert termination.state is RunState.BUDGET_EXHAUSTED
    (finished,) = then_events(run)
    assert finished[0] is Run.RunFinished
    assert finished[1]["release_outcome"] is ReleaseOutcome.FALLBACK


def test_a_finished_run_is_left_as_it_is() -> None:
    run = given(lambda r: r.fail(FailureCode.MODEL_FAILED), lambda r: r.finish(BEFORE_DEADLINE))

    termination = run.end_orphaned(AFTER_DEADLINE)

    assert termination == Termination(RunState.FAILED, FailureCode.MODEL_FAILED)
    assert then_events(run) == []


def test_the_worker_is_recorded_on_the_run() -> None:
    assert given().worker == "host:1:ab"
