"""What a run is charged: model steps, budget charges and refused tool requests.

Given/when/then over the Run aggregate: a run rebuilt from earlier events, one command, then
the exact new events, or a typed DomainError naming the run with nothing appended."""

from __future__ import annotations

import hashlib

import pytest

from domain.errors import InvalidCommandError, RunNotActiveError
from domain.run import Run
from domain.states import (
    BudgetKind,
    CancellationReason,
    FailureCode,
    ModelAttemptFailure,
    ModelStepOutcome,
    ModelStepPurpose,
    RunState,
)
from domain.tool_states import ToolRejectionCode
from domain.values import Budget, ModelAttempt, ModelCall, Termination
from tests.unit.gwt import then_events, then_refused
from tests.unit.run_steps import (
    LIMITS,
    ROUTE_DIAGNOSIS,
    Step,
    budget_exhausted,
    exhaust,
    finish,
    given,
    model_step,
)

# -- model steps ---------------------------------------------------------------------------------


def test_a_model_step_charges_one_model_call_and_its_tokens() -> None:
    run = given(ROUTE_DIAGNOSIS)

    run.record_model_step(
        ModelStepPurpose.AGENT,
        30,
        12,
        250,
        ModelStepOutcome.OK,
        "tool call",
        provider="openai-compatible",
        model="gpt-4o-mini",
        finish_reason="tool_calls",
    )

    assert then_events(run) == [
        (
            Run.AgentModelStep,
            {
                "purpose": ModelStepPurpose.AGENT,
                "tokens_in": 30,
                "tokens_out": 12,
                "latency_ms": 250,
                "outcome": ModelStepOutcome.OK,
                "detail": "tool call",
                "bound_ms": 0,
                "provider": "openai-compatible",
                "model": "gpt-4o-mini",
                "finish_reason": "tool_calls",
                "text": "",
                "length": 0,
                "sha256": hashlib.sha256(b"").hexdigest(),
                "attempts": (),
                "call": ModelCall(),
            },
        )
    ]
    # the ROUTE step of the given is not recorded as a model step: only this one is charged
    assert run.usage == Budget(model_calls=1, tokens=42)
    assert run.is_active


def test_a_retried_model_step_records_its_attempts_and_charges_one_call() -> None:
    run = given(ROUTE_DIAGNOSIS)
    tried = (
        ModelAttempt(ModelAttemptFailure.RATE_LIMITED, 429, 200),
        ModelAttempt(ModelAttemptFailure.CONNECTION, 0, 300),
    )

    run.record_model_step(ModelStepPurpose.ROUTE, 3, 4, 900, bound_ms=1000, attempts=tried)

    [(cls, fields)] = then_events(run)
    assert cls is Run.AgentModelStep
    assert fields["attempts"] == tried
    assert run.usage == Budget(model_calls=1, tokens=7)


def test_a_model_step_whose_waits_exceed_its_latency_is_refused() -> None:
    run = given(ROUTE_DIAGNOSIS)
    waited = (ModelAttempt(ModelAttemptFailure.SERVER_ERROR, 503, 800),)

    then_refused(
        run,
        InvalidCommandError,
        lambda r: r.record_model_step(ModelStepPurpose.ROUTE, 1, 1, 500, attempts=waited),
    )


@pytest.mark.parametrize("outcome", list(ModelStepOutcome), ids=lambda o: o.value)
def test_every_model_step_outcome_is_charged(outcome: ModelStepOutcome) -> None:
    run = given(ROUTE_DIAGNOSIS)
    too_large = "x" * 32_001 if outcome is ModelStepOutcome.TOO_LARGE else ""

    run.record_model_step(ModelStepPurpose.ANSWER, 1, 2, 3, outcome, answer=too_large)

    assert [type(e) for e in run.collect_events()] == [Run.AgentModelStep]
    assert run.usage == Budget(model_calls=1, tokens=3)


def test_a_model_step_reaching_the_token_limit_exactly_does_not_exhaust() -> None:
    run = given(ROUTE_DIAGNOSIS)

    run.record_model_step(ModelStepPurpose.AGENT, 60, 40, 1)

    assert [type(e) for e in run.collect_events()] == [Run.AgentModelStep]
    assert run.state is RunState.RUNNING


def test_a_model_step_over_the_token_limit_exhausts_the_budget() -> None:
    run = given(ROUTE_DIAGNOSIS, lambda r: r.record_model_step(ModelStepPurpose.AGENT, 50, 40, 1))

    run.record_model_step(ModelStepPurpose.AGENT, 5, 6, 1)

    events = then_events(run)
    assert [cls for cls, _ in events] == [
        Run.AgentModelStep,
        Run.BudgetExhausted,
        Run.RunTerminated,
        Run.CancellationRequested,
    ]
    assert events[1:] == budget_exhausted(BudgetKind.TOKENS, limit=100, used=101)
    assert run.state is RunState.BUDGET_EXHAUSTED
    assert run.termination == Termination(
        RunState.BUDGET_EXHAUSTED, CancellationReason.BUDGET_EXHAUSTED
    )
    assert run.cancellation is CancellationReason.BUDGET_EXHAUSTED


def test_a_model_step_over_the_model_call_limit_exhausts_the_budget() -> None:
    run = given(ROUTE_DIAGNOSIS, model_step, model_step, model_step)

    run.record_model_step(ModelStepPurpose.REPAIR, 1, 1, 1)

    events = then_events(run)
    assert events[0][0] is Run.AgentModelStep
    assert events[1:] == budget_exhausted(BudgetKind.MODEL_CALLS, limit=3, used=4)
    assert run.usage.model_calls == 4


@pytest.mark.parametrize(
    ("tokens_in", "tokens_out", "latency_ms"),
    [(-1, 0, 0), (0, -1, 0), (0, 0, -1)],
    ids=["tokens-in", "tokens-out", "latency"],
)
def test_a_model_step_with_negative_usage_is_refused(
    tokens_in: int, tokens_out: int, latency_ms: int
) -> None:
    run = given(ROUTE_DIAGNOSIS)

    then_refused(
        run,
        InvalidCommandError,
        lambda r: r.record_model_step(ModelStepPurpose.AGENT, tokens_in, tokens_out, latency_ms),
    )
    assert run.usage == Budget()


@pytest.mark.parametrize(
    "termination",
    [exhaust, lambda r: r.time_out(), lambda r: r.cancel(CancellationReason.USER_REQUESTED)],
    ids=["budget-exhausted", "timed-out", "cancelled"],
)
def test_a_model_step_after_termination_is_refused(termination: Step) -> None:
    run = given(ROUTE_DIAGNOSIS, termination)

    then_refused(
        run, RunNotActiveError, lambda r: r.record_model_step(ModelStepPurpose.AGENT, 1, 1, 1)
    )


# -- budget charges ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "amount"),
    [(BudgetKind.TOOL_CALLS, 1), (BudgetKind.BYTES, 640)],
    ids=["tool-calls", "bytes"],
)
def test_charge_records_the_charge_and_adds_it_to_usage(kind: BudgetKind, amount: int) -> None:
    run = given(ROUTE_DIAGNOSIS)

    run.charge(kind, amount, ref="invocation-1")

    assert then_events(run) == [
        (Run.BudgetCharged, {"kind": kind, "amount": amount, "ref": "invocation-1"})
    ]
    assert run.usage == Budget().plus(kind, amount)
    assert run.is_active


@pytest.mark.parametrize(
    ("kind", "before", "amount", "used"),
    [(BudgetKind.TOOL_CALLS, 2, 1, 3), (BudgetKind.BYTES, 900, 101, 1_001)],
    ids=["tool-calls", "bytes"],
)
def test_a_charge_over_the_limit_exhausts_the_budget(
    kind: BudgetKind, before: int, amount: int, used: int
) -> None:
    run = given(ROUTE_DIAGNOSIS, lambda r: r.charge(kind, before))

    run.charge(kind, amount)

    assert then_events(run) == [
        (Run.BudgetCharged, {"kind": kind, "amount": amount, "ref": ""}),
        *budget_exhausted(kind, limit=LIMITS.get(kind), used=used),
    ]
    assert run.state is RunState.BUDGET_EXHAUSTED


def test_a_charge_up_to_the_limit_does_not_exhaust() -> None:
    run = given(ROUTE_DIAGNOSIS, lambda r: r.charge(BudgetKind.BYTES, 999))

    run.charge(BudgetKind.BYTES, 1)

    assert [type(e) for e in run.collect_events()] == [Run.BudgetCharged]
    assert run.state is RunState.RUNNING


def test_a_negative_charge_is_refused() -> None:
    run = given(ROUTE_DIAGNOSIS)

    then_refused(run, InvalidCommandError, lambda r: r.charge(BudgetKind.TOOL_CALLS, -1))


def test_a_charge_after_termination_is_refused() -> None:
    run = given(ROUTE_DIAGNOSIS, lambda r: r.fail(FailureCode.MODEL_FAILED))

    then_refused(run, RunNotActiveError, lambda r: r.charge(BudgetKind.TOOL_CALLS, 1))


@pytest.mark.parametrize(
    ("kind", "amount", "exceeds"),
    [
        (BudgetKind.TOOL_CALLS, 1, False),
        (BudgetKind.TOOL_CALLS, 2, True),
        (BudgetKind.BYTES, 600, False),
        (BudgetKind.BYTES, 601, True),
        (BudgetKind.MODEL_CALLS, 3, False),
        (BudgetKind.MODEL_CALLS, 4, True),
        (BudgetKind.TOKENS, 0, False),
        (BudgetKind.TOKENS, 101, True),
    ],
)
def test_would_exceed_compares_usage_plus_amount_with_the_limit(
    kind: BudgetKind, amount: int, exceeds: bool
) -> None:
    run = given(
        ROUTE_DIAGNOSIS,
        lambda r: r.charge(BudgetKind.TOOL_CALLS, 1),
        lambda r: r.charge(BudgetKind.BYTES, 400),
    )

    assert run.would_exceed(kind, amount) is exceeds
    assert run.collect_events() == []


# -- tool request rejections ---------------------------------------------------------------------


@pytest.mark.parametrize("code", list(ToolRejectionCode), ids=lambda c: c.value)
def test_reject_tool_request_audits_the_rejection(code: ToolRejectionCode) -> None:
    run = given(ROUTE_DIAGNOSIS)

    run.reject_tool_request("logs.search", code, "rejected at preflight")

    assert then_events(run) == [
        (
            Run.ToolRequestRejected,
            {"tool": "logs.search", "code": code, "detail": "rejected at preflight"},
        )
    ]


@pytest.mark.parametrize(
    "termination",
    [exhaust, lambda r: r.time_out(), lambda r: r.cancel(CancellationReason.CLIENT_DISCONNECTED)],
    ids=["budget-exhausted", "timed-out", "cancelled"],
)
def test_reject_tool_request_is_allowed_after_termination(termination: Step) -> None:
    run = given(ROUTE_DIAGNOSIS, termination)

    run.reject_tool_request("metrics.query", ToolRejectionCode.INVALID_RUN, "run is over")

    assert [type(e) for e in run.collect_events()] == [Run.ToolRequestRejected]


def test_reject_tool_request_is_refused_after_finish() -> None:
    run = given(ROUTE_DIAGNOSIS, lambda r: r.time_out(), finish)

    then_refused(
        run,
        RunNotActiveError,
        lambda r: r.reject_tool_request("logs.search", ToolRejectionCode.INVALID_RUN, ""),
    )
