"""Ending a run: cancel, time out, exhaust the budget, fail, complete; the first wins.

Given/when/then over the Run aggregate: a run rebuilt from earlier events, one command, then
the exact new events, or a typed DomainError naming the run with nothing appended."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from domain.errors import IllegalTransitionError, InvalidCommandError
from domain.run import Run
from domain.states import BudgetKind, CancellationReason, CompletionReason, FailureCode, RunState
from domain.values import Termination
from tests.unit.gwt import then_events, then_refused
from tests.unit.run_steps import (
    FALLBACK,
    IE,
    LIMITS,
    PROGRESS_ONLY,
    ROUTE_CHAT,
    ROUTE_DIAGNOSIS,
    SUCCESS,
    SUPPORTED,
    Step,
    budget_exhausted,
    cancellation,
    complete,
    exhaust,
    finish,
    given,
    model_step,
    released,
    terminated_by,
)

# -- terminal commands ---------------------------------------------------------------------------

CANCELLING_REASONS = [
    (CancellationReason.CLIENT_DISCONNECTED, RunState.CANCELLED),
    (CancellationReason.USER_REQUESTED, RunState.CANCELLED),
    (CancellationReason.INTERNAL_FAILURE, RunState.FAILED),
]
"""Reasons ``cancel`` records first and then terminates by (SPEC §5)."""

DEADLINE_AND_BUDGET = {CancellationReason.DEADLINE_EXCEEDED, CancellationReason.BUDGET_EXHAUSTED}
"""Reasons whose path terminates first and then cancels: ``time_out`` and ``exhaust_budget``."""


def test_the_reason_tables_cover_every_cancellation_reason() -> None:
    cancelling = {reason for reason, _ in CANCELLING_REASONS}

    assert cancelling | DEADLINE_AND_BUDGET == set(CancellationReason)
    assert not cancelling & DEADLINE_AND_BUDGET


@pytest.mark.parametrize(("reason", "state"), CANCELLING_REASONS, ids=lambda v: v.value)
def test_cancel_requests_cancellation_then_terminates_by_the_reason(
    reason: CancellationReason, state: RunState
) -> None:
    run = given(ROUTE_DIAGNOSIS)

    termination = run.cancel(reason)

    assert then_events(run) == [
        *cancellation(reason),
        *terminated_by(state=state, reason=reason),
    ]
    assert termination == Termination(state, reason)
    assert run.termination == termination
    assert run.state is state
    assert run.cancellation is reason
    assert not run.is_active and not run.is_finished


def test_cancel_for_the_deadline_takes_the_time_out_path() -> None:
    run = given(ROUTE_DIAGNOSIS)

    termination = run.cancel(CancellationReason.DEADLINE_EXCEEDED)

    assert then_events(run) == [
        *terminated_by(state=RunState.TIMED_OUT, reason=CancellationReason.DEADLINE_EXCEEDED),
        *cancellation(CancellationReason.DEADLINE_EXCEEDED),
    ]
    assert termination == Termination(RunState.TIMED_OUT, CancellationReason.DEADLINE_EXCEEDED)
    assert run.state is RunState.TIMED_OUT
    assert run.cancellation is CancellationReason.DEADLINE_EXCEEDED
    assert not run.is_active and not run.is_finished


@pytest.mark.parametrize(
    "steps",
    [[], [ROUTE_DIAGNOSIS], [ROUTE_DIAGNOSIS, PROGRESS_ONLY], [ROUTE_CHAT, released(SUCCESS)]],
    ids=["started", "routed", "evidence-checked", "released"],
)
def test_cancel_for_the_deadline_records_exactly_what_time_out_records(
    steps: list[Step],
) -> None:
    cancelled, timed_out = given(*steps), given(*steps)

    by_cancel = cancelled.cancel(CancellationReason.DEADLINE_EXCEEDED)
    by_time_out = timed_out.time_out()

    assert by_cancel == by_time_out
    assert then_events(cancelled) == then_events(timed_out)
    assert cancelled.version == timed_out.version
    assert (cancelled.termination, cancelled.cancellation) == (
        timed_out.termination,
        timed_out.cancellation,
    )


@pytest.mark.parametrize(
    "steps",
    [
        [],
        [ROUTE_DIAGNOSIS],
        [ROUTE_DIAGNOSIS, model_step, PROGRESS_ONLY],
        [ROUTE_CHAT, released(SUCCESS)],
    ],
    ids=["started", "routed", "evidence-checked", "released"],
)
def test_cancel_for_budget_exhaustion_is_refused_and_appends_nothing(steps: list[Step]) -> None:
    run = given(*steps)
    usage = run.usage

    error = then_refused(
        run, InvalidCommandError, lambda r: r.cancel(CancellationReason.BUDGET_EXHAUSTED)
    )

    assert "use exhaust_budget(kind)" in str(error)
    assert run.is_active
    assert run.termination is None
    assert run.cancellation is None
    assert run.usage == usage


def test_time_out_terminates_then_cancels() -> None:
    run = given(ROUTE_DIAGNOSIS)

    termination = run.time_out()

    assert then_events(run) == [
        *terminated_by(state=RunState.TIMED_OUT, reason=CancellationReason.DEADLINE_EXCEEDED),
        *cancellation(CancellationReason.DEADLINE_EXCEEDED),
    ]
    assert termination == Termination(RunState.TIMED_OUT, CancellationReason.DEADLINE_EXCEEDED)
    assert run.cancellation is CancellationReason.DEADLINE_EXCEEDED


@pytest.mark.parametrize("kind", list(BudgetKind), ids=lambda k: k.value)
def test_exhaust_budget_names_the_budget_terminates_then_cancels(kind: BudgetKind) -> None:
    run = given(ROUTE_DIAGNOSIS, lambda r: r.charge(BudgetKind.BYTES, 10), model_step)

    termination = run.exhaust_budget(kind)

    assert then_events(run) == budget_exhausted(
        kind, limit=LIMITS.get(kind), used=run.usage.get(kind)
    )
    assert termination == Termination(
        RunState.BUDGET_EXHAUSTED, CancellationReason.BUDGET_EXHAUSTED
    )


@pytest.mark.parametrize("code", list(FailureCode), ids=lambda c: c.value)
def test_fail_terminates_failed_with_the_code(code: FailureCode) -> None:
    run = given(ROUTE_DIAGNOSIS)

    termination = run.fail(code)

    assert then_events(run) == terminated_by(state=RunState.FAILED, reason=code)
    assert termination == Termination(RunState.FAILED, code)
    assert run.cancellation is None


def test_complete_terminates_success_after_the_release_decision() -> None:
    run = given(ROUTE_DIAGNOSIS, SUPPORTED, released(SUCCESS))

    termination = run.complete()

    assert then_events(run) == terminated_by(
        state=RunState.SUCCESS, reason=CompletionReason.COMPLETED
    )
    assert termination == Termination(RunState.SUCCESS, CompletionReason.COMPLETED)


@pytest.mark.parametrize(
    "steps",
    [[], [ROUTE_CHAT], [ROUTE_DIAGNOSIS, SUPPORTED]],
    ids=["started", "routed", "guards-passed"],
)
def test_complete_is_refused_before_a_release_decision(steps: list[Step]) -> None:
    run = given(*steps)

    then_refused(run, IllegalTransitionError, lambda r: r.complete())
    assert run.is_active


TERMINAL_COMMANDS: dict[str, Callable[[Run], Termination]] = {
    "cancel-user": lambda r: r.cancel(CancellationReason.USER_REQUESTED),
    "cancel-client": lambda r: r.cancel(CancellationReason.CLIENT_DISCONNECTED),
    "cancel-internal": lambda r: r.cancel(CancellationReason.INTERNAL_FAILURE),
    "cancel-deadline": lambda r: r.cancel(CancellationReason.DEADLINE_EXCEEDED),
    "complete": lambda r: r.complete(),
    "fail": lambda r: r.fail(FailureCode.MODEL_FAILED),
    "time_out": lambda r: r.time_out(),
    "exhaust_budget": lambda r: r.exhaust_budget(BudgetKind.TOOL_CALLS),
}


@pytest.mark.parametrize("second", list(TERMINAL_COMMANDS))
@pytest.mark.parametrize("first", list(TERMINAL_COMMANDS))
def test_the_first_termination_wins(first: str, second: str) -> None:
    run = given(ROUTE_CHAT, released(SUCCESS), TERMINAL_COMMANDS[first])
    existing, reason, version = run.termination, run.cancellation, run.version
    assert existing is not None

    result = TERMINAL_COMMANDS[second](run)

    assert result == existing
    assert run.collect_events() == []
    assert run.version == version
    assert run.termination == existing
    assert run.cancellation is reason


@pytest.mark.parametrize("command", list(TERMINAL_COMMANDS))
def test_a_terminal_command_after_finish_reports_the_termination_and_appends_nothing(
    command: str,
) -> None:
    run = given(ROUTE_CHAT, released(SUCCESS), complete, finish)
    version = run.version

    result = TERMINAL_COMMANDS[command](run)

    assert result == Termination(RunState.SUCCESS, CompletionReason.COMPLETED)
    assert run.collect_events() == []
    assert run.version == version


@pytest.mark.parametrize("reason", list(CancellationReason), ids=lambda r: r.value)
@pytest.mark.parametrize("first", list(TERMINAL_COMMANDS))
def test_cancel_for_any_reason_after_termination_is_a_no_op(
    first: str, reason: CancellationReason
) -> None:
    run = given(ROUTE_CHAT, released(SUCCESS), TERMINAL_COMMANDS[first])
    existing, cancelled_by, version = run.termination, run.cancellation, run.version
    assert existing is not None

    result = run.cancel(reason)

    assert result == existing
    assert run.collect_events() == []
    assert run.version == version
    assert run.cancellation is cancelled_by


@pytest.mark.parametrize("reason", list(CancellationReason), ids=lambda r: r.value)
def test_cancel_for_any_reason_after_finish_is_a_no_op(reason: CancellationReason) -> None:
    run = given(ROUTE_DIAGNOSIS, exhaust, PROGRESS_ONLY, released(FALLBACK, IE), finish)
    version = run.version

    result = run.cancel(reason)

    assert result == Termination(RunState.BUDGET_EXHAUSTED, CancellationReason.BUDGET_EXHAUSTED)
    assert run.collect_events() == []
    assert run.version == version
