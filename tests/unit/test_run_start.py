"""Starting a run, the reads of its state, routing and the application status.

Given/when/then over the Run aggregate: a run rebuilt from earlier events, one command, then
the exact new events, or a typed DomainError naming the run with nothing appended."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from domain.errors import IllegalTransitionError, InvalidCommandError, RunNotActiveError
from domain.release_states import ReleaseOutcome
from domain.run import Run
from domain.states import (
    BudgetKind,
    CancellationReason,
    ChatApplicationStatus,
    FailureCode,
    Intent,
    RunState,
)
from domain.values import DEFAULT_LIMITS, Budget
from tests.unit.gwt import then_events, then_refused
from tests.unit.run_steps import (
    DEADLINE,
    LIMITS,
    ROUTE_CHAT,
    ROUTE_DIAGNOSIS,
    RUN_ID,
    Step,
    chain,
    complete,
    exhaust,
    finish,
    given,
    released,
)

# -- start ---------------------------------------------------------------------------------------


def test_start_records_run_started_with_identity_deadline_and_limits() -> None:
    run = Run.start(
        "session-1",
        "why is checkout slow?",
        DEADLINE,
        limits=LIMITS,
        run_id=RUN_ID,
        owner="ann",
        worker="host:7:ab",
    )

    assert then_events(run) == [
        (
            Run.RunStarted,
            {
                "session_id": "session-1",
                "query": "why is checkout slow?",
                "deadline": DEADLINE,
                "limits": LIMITS,
                "owner": "ann",
                "worker": "host:7:ab",
            },
        )
    ]
    assert run.id == RUN_ID
    assert run.owner == "ann"
    assert run.worker == "host:7:ab"
    assert run.state is RunState.RUNNING
    assert run.is_active and not run.is_finished
    assert run.usage == Budget()


def test_start_without_limits_uses_the_defaults_and_a_fresh_id() -> None:
    first = Run.start("s", "q", DEADLINE)
    second = Run.start("s", "q", DEADLINE)

    assert first.limits == DEFAULT_LIMITS
    assert first.id != second.id
    assert first.owner == ""


def test_start_accepts_zero_limits() -> None:
    run = Run.start("s", "q", DEADLINE, limits=Budget())

    assert [type(e) for e in run.collect_events()] == [Run.RunStarted]


@pytest.mark.parametrize(
    ("session_id", "query"),
    [("", "q"), ("   ", "q"), ("s", ""), ("s", "\n\t")],
    ids=["empty-session", "blank-session", "empty-query", "blank-query"],
)
def test_start_refuses_a_missing_session_or_query(session_id: str, query: str) -> None:
    with pytest.raises(InvalidCommandError) as caught:
        Run.start(session_id, query, DEADLINE, run_id=RUN_ID)

    assert caught.value.aggregate_id == RUN_ID
    assert repr(RUN_ID) in str(caught.value)


def test_start_refuses_a_naive_deadline() -> None:
    with pytest.raises(InvalidCommandError) as caught:
        Run.start("s", "q", datetime(2030, 1, 1), run_id=RUN_ID)

    assert caught.value.aggregate_id == RUN_ID
    assert repr(RUN_ID) in str(caught.value)


@pytest.mark.parametrize("kind", list(BudgetKind), ids=lambda k: k.value)
def test_start_refuses_a_negative_limit(kind: BudgetKind) -> None:
    limits = Budget().plus(kind, -1)

    with pytest.raises(InvalidCommandError) as caught:
        Run.start("s", "q", DEADLINE, limits=limits, run_id=RUN_ID)

    assert caught.value.aggregate_id == RUN_ID
    assert repr(RUN_ID) in str(caught.value)


# -- queries -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("now", "passed"),
    [
        (DEADLINE - timedelta(microseconds=1), False),
        (DEADLINE, True),
        (DEADLINE + timedelta(seconds=1), True),
    ],
    ids=["before", "at", "after"],
)
def test_deadline_passed_at_or_after_the_deadline(now: datetime, passed: bool) -> None:
    assert given().deadline_passed(now) is passed


def test_check_active_passes_while_running_and_appends_nothing() -> None:
    run = given(ROUTE_DIAGNOSIS)

    run.check_active()

    assert run.collect_events() == []


def test_check_active_raises_once_terminated() -> None:
    run = given(lambda r: r.time_out())

    error = then_refused(run, RunNotActiveError, lambda r: r.check_active())

    assert "TIMED_OUT" in str(error)


# -- routing -------------------------------------------------------------------------------------


def test_attempt_routing_counts_attempts() -> None:
    run = given(lambda r: r.attempt_routing())

    run.attempt_routing()

    assert then_events(run) == [(Run.RoutingAttempt, {"attempt": 2})]
    assert run.routing_attempts == 2


@pytest.mark.parametrize("intent", list(Intent), ids=lambda i: i.value)
def test_decide_routing_records_the_intent(intent: Intent) -> None:
    run = given(lambda r: r.attempt_routing())

    run.decide_routing(intent)

    assert then_events(run) == [(Run.RoutingDecision, {"intent": intent, "error": ""})]
    assert run.intent is intent and run.routing_decided


def test_decide_routing_records_the_router_error() -> None:
    run = given(lambda r: r.attempt_routing())

    run.decide_routing(None, "router unavailable")

    assert then_events(run) == [
        (Run.RoutingDecision, {"intent": None, "error": "router unavailable"})
    ]
    assert run.intent is None and run.routing_decided


def test_decide_routing_is_refused_before_an_attempt() -> None:
    run = given()

    then_refused(run, IllegalTransitionError, lambda r: r.decide_routing(Intent.DIAGNOSIS))


@pytest.mark.parametrize("error", ["", "late error"], ids=["intent", "error"])
def test_a_second_routing_decision_is_refused(error: str) -> None:
    run = given(ROUTE_DIAGNOSIS)

    intent = None if error else Intent.SYSTEM_CHAT
    then_refused(run, IllegalTransitionError, lambda r: r.decide_routing(intent, error))


def test_a_routing_attempt_after_the_decision_is_refused() -> None:
    run = given(ROUTE_DIAGNOSIS)

    then_refused(run, IllegalTransitionError, lambda r: r.attempt_routing())


@pytest.mark.parametrize(
    ("intent", "error"),
    [(Intent.DIAGNOSIS, "router unavailable"), (None, "")],
    ids=["both", "neither"],
)
def test_decide_routing_needs_exactly_one_of_intent_and_error(
    intent: Intent | None, error: str
) -> None:
    run = given(lambda r: r.attempt_routing())

    then_refused(run, InvalidCommandError, lambda r: r.decide_routing(intent, error))


@pytest.mark.parametrize(
    "command",
    [lambda r: r.attempt_routing(), lambda r: r.decide_routing(Intent.DIAGNOSIS)],
    ids=["attempt", "decide"],
)
def test_routing_is_refused_once_terminated(command: Step) -> None:
    run = given(
        lambda r: r.attempt_routing(), lambda r: r.cancel(CancellationReason.USER_REQUESTED)
    )

    then_refused(run, RunNotActiveError, command)


# -- application status --------------------------------------------------------------------------


@pytest.mark.parametrize("status", list(ChatApplicationStatus), ids=lambda s: s.value)
def test_change_status_records_every_phase_while_running(status: ChatApplicationStatus) -> None:
    run = given(ROUTE_DIAGNOSIS)

    run.change_status(status)

    assert then_events(run) == [(Run.ApplicationStatusChanged, {"status": status})]
    assert run.status is status


def test_safety_validating_is_allowed_after_budget_exhaustion() -> None:
    run = given(ROUTE_DIAGNOSIS, exhaust)

    run.change_status(ChatApplicationStatus.SAFETY_VALIDATING)

    assert then_events(run) == [
        (Run.ApplicationStatusChanged, {"status": ChatApplicationStatus.SAFETY_VALIDATING})
    ]


@pytest.mark.parametrize(
    "status",
    [s for s in ChatApplicationStatus if s is not ChatApplicationStatus.SAFETY_VALIDATING],
    ids=lambda s: s.value,
)
def test_other_phases_are_refused_after_budget_exhaustion(status: ChatApplicationStatus) -> None:
    run = given(ROUTE_DIAGNOSIS, exhaust)

    then_refused(run, RunNotActiveError, lambda r: r.change_status(status))


@pytest.mark.parametrize(
    "termination",
    [
        lambda r: r.cancel(CancellationReason.CLIENT_DISCONNECTED),
        lambda r: r.cancel(CancellationReason.USER_REQUESTED),
        lambda r: r.time_out(),
        lambda r: r.fail(FailureCode.MODEL_FAILED),
        chain(released(ReleaseOutcome.SUCCESS), complete),
    ],
    ids=["client-disconnected", "user-requested", "timed-out", "failed", "success"],
)
def test_safety_validating_is_refused_after_other_terminations(termination: Step) -> None:
    run = given(ROUTE_CHAT, termination)

    then_refused(
        run,
        RunNotActiveError,
        lambda r: r.change_status(ChatApplicationStatus.SAFETY_VALIDATING),
    )


def test_safety_validating_is_refused_after_a_budget_exhausted_run_finished() -> None:
    run = given(ROUTE_DIAGNOSIS, exhaust, finish)

    then_refused(
        run,
        RunNotActiveError,
        lambda r: r.change_status(ChatApplicationStatus.SAFETY_VALIDATING),
    )
