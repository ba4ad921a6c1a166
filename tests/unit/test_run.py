"""Given/when/then tests of the Run aggregate: every transition and every refusal.

Given: a run rebuilt by replaying the events of earlier commands. When: one command. Then: the exact
new events (class and payload), or a typed DomainError naming the run with nothing appended.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

import pytest

from domain.errors import (
    DomainError,
    IllegalTransitionError,
    InvalidCommandError,
    RunNotActiveError,
)
from domain.release_states import FallbackType, GuardStage, ReleaseOutcome, SemanticVerdict
from domain.run import Run
from domain.states import (
    BudgetKind,
    CancellationReason,
    ChatApplicationStatus,
    CompletionReason,
    FailureCode,
    Intent,
    ModelAttemptFailure,
    ModelStepOutcome,
    ModelStepPurpose,
    RunState,
)
from domain.tool_states import DiagnosisStopReason, ToolRejectionCode
from domain.values import DEFAULT_LIMITS, Budget, ModelAttempt, Termination
from tests.unit.gwt import Payloads, replay, then_events, then_refused

RUN_ID = UUID("00000000-0000-4000-8000-000000000001")
DEADLINE = datetime(2030, 1, 1, tzinfo=UTC)
LIMITS = Budget(model_calls=3, tool_calls=2, tokens=100, bytes=1_000)
CONTENT: dict[str, Any] = {"summary": "safe content"}

Step = Callable[[Run], object]


# -- given / then helpers ------------------------------------------------------------------------


def given(*steps: Step, limits: Budget = LIMITS) -> Run:
    """A run rebuilt from the events of starting it and then taking ``steps``."""
    run = Run.start("session-1", "why is checkout slow?", DEADLINE, limits=limits, run_id=RUN_ID)
    for step in steps:
        step(run)
    return replay(Run, run.collect_events())


# -- steps used to build the given runs ----------------------------------------------------------


def routed(intent: Intent | None, error: str = "") -> Step:
    def step(run: Run) -> None:
        run.attempt_routing()
        run.decide_routing(intent, error)

    return step


ROUTE_DIAGNOSIS = routed(Intent.DIAGNOSIS)
ROUTE_CHAT = routed(Intent.SYSTEM_CHAT)
ROUTE_KNOWLEDGE = routed(Intent.KNOWLEDGE_QUERY)
ROUTE_ERROR = routed(None, "router unavailable")


def checked(has_conclusion: bool, valid: bool, verified_facts: int = 0) -> Step:
    return lambda run: run.check_evidence(has_conclusion, valid, verified_facts=verified_facts)


def chain(*steps: Step) -> Step:
    def step(run: Run) -> None:
        for each in steps:
            each(run)

    return step


def repair(run: Run) -> None:
    run.repair_evidence("dropped an unknown reference")


def recheck(valid: bool) -> Step:
    return lambda run: run.recheck_evidence(valid)


def attempt(run: Run) -> None:
    run.attempt_semantic_guard()


def verdict(value: SemanticVerdict | None, unavailable: str = "") -> Step:
    return lambda run: run.decide_semantic_guard(value, unavailable)


def released(outcome: ReleaseOutcome, fallback: FallbackType | None = None) -> Step:
    return lambda run: run.decide_release(outcome, fallback, CONTENT)


def exhaust(run: Run) -> None:
    run.exhaust_budget(BudgetKind.TOOL_CALLS)


def model_step(run: Run) -> None:
    run.record_model_step(ModelStepPurpose.AGENT, 1, 1, 1)


def complete(run: Run) -> None:
    run.complete()


def finish(run: Run) -> None:
    run.finish(run.created_on + timedelta(seconds=1))


VERIFIED = 2
"""A positive count of verified ProgressSnapshot facts."""

PROGRESS_ONLY = checked(has_conclusion=False, valid=True, verified_facts=VERIFIED)
"""A draft without conclusion (or a controlled stop) whose progress has verified facts."""
NOTHING_VERIFIED = checked(has_conclusion=False, valid=False)
"""A draft without conclusion (or a controlled stop) with no verified fact."""
VALID_REFERENCES_NOTHING_VERIFIED = checked(has_conclusion=False, valid=True)
"""References all resolve, but no fact's excerpt was verified: still no progress."""
SUPPORTED = chain(checked(True, True), attempt, verdict(SemanticVerdict.SUPPORTED))
REPAIRED_SUPPORTED = chain(
    checked(True, False), repair, recheck(True), attempt, verdict(SemanticVerdict.SUPPORTED)
)
UNSUPPORTED = chain(checked(True, True), attempt, verdict(SemanticVerdict.UNSUPPORTED))
UNAVAILABLE = chain(checked(True, True), attempt, verdict(None, "judge timed out"))
RECHECK_FAILED = chain(checked(True, False), repair, recheck(False))


def terminated_by(*, state: RunState, reason: Any) -> Payloads:
    return [(Run.RunTerminated, {"state": state, "reason": reason, "cause": ""})]


def cancellation(reason: CancellationReason) -> Payloads:
    return [(Run.CancellationRequested, {"reason": reason})]


def budget_exhausted(kind: BudgetKind, limit: int, used: int) -> Payloads:
    stop = DiagnosisStopReason.BUDGET_LIMIT_REACHED
    return [
        (Run.BudgetExhausted, {"kind": kind, "limit": limit, "used": used, "stop_reason": stop}),
        *terminated_by(state=RunState.BUDGET_EXHAUSTED, reason=CancellationReason.BUDGET_EXHAUSTED),
        *cancellation(CancellationReason.BUDGET_EXHAUSTED),
    ]


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


# -- the guard chain -----------------------------------------------------------------------------


@pytest.mark.parametrize("verified_facts", [0, 1, 5])
@pytest.mark.parametrize(
    ("has_conclusion", "valid"),
    [(True, True), (True, False), (False, True), (False, False)],
)
def test_check_evidence_opens_the_guard_chain(
    has_conclusion: bool, valid: bool, verified_facts: int
) -> None:
    run = given(ROUTE_DIAGNOSIS)

    run.check_evidence(has_conclusion, valid, ("inv-9",), verified_facts=verified_facts)

    assert then_events(run) == [
        (
            Run.EvidenceGuardInitial,
            {
                "has_conclusion": has_conclusion,
                "valid": valid,
                "invalid_references": ("inv-9",),
                "verified_facts": verified_facts,
                "rejected": (),
                "min_words": 3,
                "min_chars": 12,
            },
        )
    ]
    assert run.guards.stage is GuardStage.EVIDENCE_CHECKED
    assert (run.guards.has_conclusion, run.guards.evidence_valid) == (has_conclusion, valid)
    assert run.guards.verified_facts == verified_facts


def test_check_evidence_counts_no_verified_facts_by_default() -> None:
    run = given(ROUTE_DIAGNOSIS)

    run.check_evidence(False, True)

    assert then_events(run) == [
        (
            Run.EvidenceGuardInitial,
            {
                "has_conclusion": False,
                "valid": True,
                "invalid_references": (),
                "verified_facts": 0,
                "rejected": (),
                "min_words": 3,
                "min_chars": 12,
            },
        )
    ]
    assert run.guards.verified_facts == 0


@pytest.mark.parametrize("has_conclusion", [True, False], ids=["conclusion", "no-conclusion"])
def test_check_evidence_refuses_a_negative_count_of_verified_facts(has_conclusion: bool) -> None:
    run = given(ROUTE_DIAGNOSIS)

    then_refused(
        run,
        InvalidCommandError,
        lambda r: r.check_evidence(has_conclusion, True, verified_facts=-1),
    )
    assert run.guards.stage is GuardStage.NONE


def test_verified_facts_are_kept_through_the_guard_chain() -> None:
    run = given(ROUTE_DIAGNOSIS, checked(True, False, verified_facts=3), repair)

    run.recheck_evidence(True)

    assert [type(e) for e in run.collect_events()] == [Run.EvidenceGuardRecheck]
    assert run.guards.stage is GuardStage.RECHECKED
    assert run.guards.verified_facts == 3


def test_check_evidence_is_allowed_after_budget_exhaustion() -> None:
    run = given(ROUTE_DIAGNOSIS, exhaust)

    run.check_evidence(False, True, verified_facts=VERIFIED)

    assert [type(e) for e in run.collect_events()] == [Run.EvidenceGuardInitial]
    assert run.guards.verified_facts == VERIFIED


def test_repair_evidence_follows_an_invalid_conclusion() -> None:
    run = given(ROUTE_DIAGNOSIS, checked(True, False))

    run.repair_evidence("dropped inv-9")

    assert then_events(run) == [(Run.EvidenceRepair, {"detail": "dropped inv-9"})]
    assert run.guards.stage is GuardStage.REPAIRED


@pytest.mark.parametrize("valid", [True, False])
def test_recheck_evidence_follows_the_repair(valid: bool) -> None:
    run = given(ROUTE_DIAGNOSIS, checked(True, False), repair)

    run.recheck_evidence(valid, () if valid else ("inv-9",))

    assert then_events(run) == [
        (
            Run.EvidenceGuardRecheck,
            {"valid": valid, "invalid_references": () if valid else ("inv-9",), "rejected": ()},
        )
    ]
    assert run.guards.stage is GuardStage.RECHECKED
    assert run.guards.evidence_valid is valid


def test_recheck_evidence_is_allowed_after_budget_exhaustion() -> None:
    run = given(ROUTE_DIAGNOSIS, checked(True, False), repair, exhaust)

    run.recheck_evidence(True)

    assert [type(e) for e in run.collect_events()] == [Run.EvidenceGuardRecheck]


@pytest.mark.parametrize(
    "evidence",
    [checked(True, True), chain(checked(True, False), repair, recheck(True))],
    ids=["initially-valid", "valid-after-repair"],
)
def test_the_semantic_guard_runs_on_a_conclusion_with_valid_evidence(evidence: Step) -> None:
    run = given(ROUTE_DIAGNOSIS, evidence)

    run.attempt_semantic_guard()

    assert then_events(run) == [(Run.SemanticGuardAttempt, {})]
    assert run.guards.stage is GuardStage.SEMANTIC_ATTEMPTED


@pytest.mark.parametrize(
    ("verdict_value", "unavailable"),
    [(SemanticVerdict.SUPPORTED, ""), (SemanticVerdict.UNSUPPORTED, ""), (None, "judge down")],
    ids=["supported", "unsupported", "unavailable"],
)
def test_decide_semantic_guard_records_the_verdict(
    verdict_value: SemanticVerdict | None, unavailable: str
) -> None:
    run = given(ROUTE_DIAGNOSIS, checked(True, True), attempt)

    run.decide_semantic_guard(verdict_value, unavailable)

    assert then_events(run) == [
        (
            Run.SemanticGuardDecision,
            {"verdict": verdict_value, "unavailable": unavailable, "judged": ()},
        )
    ]
    assert run.guards.stage is GuardStage.SEMANTIC_DECIDED
    assert run.guards.verdict is verdict_value
    assert run.guards.semantic_unavailable is (verdict_value is None)


def test_decide_semantic_guard_is_allowed_after_budget_exhaustion() -> None:
    run = given(ROUTE_DIAGNOSIS, checked(True, True), attempt, exhaust)

    run.decide_semantic_guard(SemanticVerdict.SUPPORTED)

    assert [type(e) for e in run.collect_events()] == [Run.SemanticGuardDecision]


CHECK = checked(False, True)
GUARD_REFUSALS: list[tuple[str, list[Step], Step, type[DomainError]]] = [
    ("check-without-routing", [], CHECK, IllegalTransitionError),
    ("check-after-routing-error", [ROUTE_ERROR], CHECK, IllegalTransitionError),
    ("check-for-system-chat", [ROUTE_CHAT], CHECK, IllegalTransitionError),
    ("check-for-knowledge-query", [ROUTE_KNOWLEDGE], CHECK, IllegalTransitionError),
    ("check-twice", [ROUTE_DIAGNOSIS, CHECK], CHECK, IllegalTransitionError),
    (
        "check-after-release",
        [
            ROUTE_DIAGNOSIS,
            PROGRESS_ONLY,
            released(ReleaseOutcome.FALLBACK, FallbackType.INSUFFICIENT_EVIDENCE),
        ],
        CHECK,
        IllegalTransitionError,
    ),
    ("check-after-timeout", [ROUTE_DIAGNOSIS, lambda r: r.time_out()], CHECK, RunNotActiveError),
    ("repair-before-check", [ROUTE_DIAGNOSIS], repair, IllegalTransitionError),
    ("repair-for-system-chat", [ROUTE_CHAT], repair, IllegalTransitionError),
    (
        "repair-valid-evidence",
        [ROUTE_DIAGNOSIS, checked(True, True)],
        repair,
        IllegalTransitionError,
    ),
    (
        "repair-without-conclusion",
        [ROUTE_DIAGNOSIS, checked(False, False)],
        repair,
        IllegalTransitionError,
    ),
    (
        "second-repair",
        [ROUTE_DIAGNOSIS, checked(True, False), repair],
        repair,
        IllegalTransitionError,
    ),
    (
        "repair-after-budget-exhaustion",
        [ROUTE_DIAGNOSIS, checked(True, False), exhaust],
        repair,
        RunNotActiveError,
    ),
    (
        "recheck-before-repair",
        [ROUTE_DIAGNOSIS, checked(True, False)],
        recheck(True),
        IllegalTransitionError,
    ),
    (
        "recheck-twice",
        [ROUTE_DIAGNOSIS, checked(True, False), repair, recheck(False)],
        recheck(True),
        IllegalTransitionError,
    ),
    (
        "recheck-after-cancel",
        [
            ROUTE_DIAGNOSIS,
            checked(True, False),
            repair,
            lambda r: r.cancel(CancellationReason.USER_REQUESTED),
        ],
        recheck(True),
        RunNotActiveError,
    ),
    ("semantic-before-check", [ROUTE_DIAGNOSIS], attempt, IllegalTransitionError),
    ("semantic-for-knowledge-query", [ROUTE_KNOWLEDGE], attempt, IllegalTransitionError),
    (
        "semantic-without-conclusion",
        [ROUTE_DIAGNOSIS, checked(False, True)],
        attempt,
        IllegalTransitionError,
    ),
    (
        "semantic-with-invalid-evidence",
        [ROUTE_DIAGNOSIS, checked(True, False)],
        attempt,
        IllegalTransitionError,
    ),
    (
        "semantic-between-repair-and-recheck",
        [ROUTE_DIAGNOSIS, checked(True, False), repair],
        attempt,
        IllegalTransitionError,
    ),
    (
        "semantic-after-failed-recheck",
        [ROUTE_DIAGNOSIS, RECHECK_FAILED],
        attempt,
        IllegalTransitionError,
    ),
    (
        "semantic-twice",
        [ROUTE_DIAGNOSIS, checked(True, True), attempt],
        attempt,
        IllegalTransitionError,
    ),
    (
        "semantic-after-budget-exhaustion",
        [ROUTE_DIAGNOSIS, checked(True, True), exhaust],
        attempt,
        RunNotActiveError,
    ),
    (
        "verdict-before-attempt",
        [ROUTE_DIAGNOSIS, checked(True, True)],
        verdict(SemanticVerdict.SUPPORTED),
        IllegalTransitionError,
    ),
    (
        "verdict-twice",
        [ROUTE_DIAGNOSIS, SUPPORTED],
        verdict(SemanticVerdict.UNSUPPORTED),
        IllegalTransitionError,
    ),
    (
        "verdict-and-unavailable",
        [ROUTE_DIAGNOSIS, checked(True, True), attempt],
        verdict(SemanticVerdict.SUPPORTED, "judge down"),
        InvalidCommandError,
    ),
    (
        "neither-verdict-nor-unavailable",
        [ROUTE_DIAGNOSIS, checked(True, True), attempt],
        verdict(None, ""),
        InvalidCommandError,
    ),
    (
        "verdict-after-failure",
        [ROUTE_DIAGNOSIS, checked(True, True), attempt, lambda r: r.fail(FailureCode.MODEL_FAILED)],
        verdict(SemanticVerdict.SUPPORTED),
        RunNotActiveError,
    ),
]


@pytest.mark.parametrize(
    ("steps", "command", "error"),
    [(steps, command, error) for _, steps, command, error in GUARD_REFUSALS],
    ids=[name for name, *_ in GUARD_REFUSALS],
)
def test_a_guard_step_out_of_order_is_refused(
    steps: list[Step], command: Step, error: type[DomainError]
) -> None:
    run = given(*steps)

    then_refused(run, error, command)


# -- release decision ----------------------------------------------------------------------------

SUCCESS = ReleaseOutcome.SUCCESS
FALLBACK = ReleaseOutcome.FALLBACK
MRC = FallbackType.MISSING_REQUIRED_CONTEXT
IE = FallbackType.INSUFFICIENT_EVIDENCE
EVF = FallbackType.EVIDENCE_VALIDATION_FAILED
SEM_UNSUPPORTED = FallbackType.SEMANTIC_UNSUPPORTED
SEM_UNAVAILABLE = FallbackType.SEMANTIC_UNAVAILABLE
PENDING = chain(checked(True, True), attempt)

IE_NEEDS = (
    "INSUFFICIENT_EVIDENCE requires verified progress, "
    "without a conclusion or after budget exhaustion"
)
MRC_NEEDS = (
    "MISSING_REQUIRED_CONTEXT requires a draft without conclusion and without verified progress"
)
BUDGET_ONLY = "after budget exhaustion only an INSUFFICIENT_EVIDENCE fallback may be released"


def conclusion_stages(verified_facts: int) -> dict[str, Step]:
    """Every guard stage a conclusion can reach, over ``verified_facts`` verified progress facts."""
    valid = checked(True, True, verified_facts)
    invalid = checked(True, False, verified_facts)
    return {
        "valid-conclusion": valid,
        "invalid-conclusion": invalid,
        "repaired": chain(invalid, repair),
        "recheck-failed": chain(invalid, repair, recheck(False)),
        "recheck-passed": chain(invalid, repair, recheck(True)),
        "semantic-pending": chain(valid, attempt),
        "supported": chain(valid, attempt, verdict(SemanticVerdict.SUPPORTED)),
        "unsupported": chain(valid, attempt, verdict(SemanticVerdict.UNSUPPORTED)),
        "unavailable": chain(valid, attempt, verdict(None, "judge timed out")),
    }


WITH_PROGRESS: dict[str, Step] = {
    "progress": PROGRESS_ONLY,
    "progress-invalid-references": checked(False, False, VERIFIED),
    **{f"{name}-with-progress": step for name, step in conclusion_stages(VERIFIED).items()},
}
"""Every stage after the evidence check, with verified progress facts."""

WITHOUT_PROGRESS: dict[str, Step] = {
    "nothing-verified": NOTHING_VERIFIED,
    "valid-references-nothing-verified": VALID_REFERENCES_NOTHING_VERIFIED,
    **conclusion_stages(0),
}
"""Every stage after the evidence check, without any verified progress fact."""

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


CONCLUSIONS_WITH_PROGRESS = conclusion_stages(VERIFIED)


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


# -- the SPEC §10 outcome table, end to end ------------------------------------------------------

SPEC_SCENARIOS = (
    "conclusion, guards pass",
    "missing required context, zero tools, legal end",
    "limited checks, insufficient evidence",
    "saturated, safe progress",
    "protocol stop, safe progress",
    "EvidenceGuard finally fails",
    "SemanticGuard unsupported",
    "SemanticGuard unavailable",
    "budget exhausted, safe progress",
    "timed out, no safe content",
    "budget exhausted, no safe progress",
    "unrecoverable internal failure",
    "client disconnected",
)
"""The thirteen rows of the SPEC §10 outcome table, in order."""


def tool_call(run: Run) -> None:
    run.charge(BudgetKind.TOOL_CALLS, 1, "inv-1")
    run.charge(BudgetKind.BYTES, 100, "inv-1")


def over_tool_budget(run: Run) -> None:
    run.charge(BudgetKind.TOOL_CALLS, LIMITS.tool_calls + 1)


SPEC_TABLE: list[tuple[str, list[Step], RunState, ReleaseOutcome, FallbackType | None]] = [
    (
        "conclusion, guards pass",
        [ROUTE_DIAGNOSIS, model_step, tool_call, SUPPORTED, released(SUCCESS), complete],
        RunState.SUCCESS,
        SUCCESS,
        None,
    ),
    (
        "missing required context, zero tools, legal end",
        [ROUTE_DIAGNOSIS, model_step, NOTHING_VERIFIED, released(FALLBACK, MRC), complete],
        RunState.SUCCESS,
        FALLBACK,
        MRC,
    ),
    (
        "limited checks, insufficient evidence",
        [ROUTE_DIAGNOSIS, model_step, tool_call, PROGRESS_ONLY, released(FALLBACK, IE), complete],
        RunState.SUCCESS,
        FALLBACK,
        IE,
    ),
    (
        "saturated, safe progress",
        [ROUTE_DIAGNOSIS, tool_call, tool_call, PROGRESS_ONLY, released(FALLBACK, IE), complete],
        RunState.SUCCESS,
        FALLBACK,
        IE,
    ),
    (
        "protocol stop, safe progress",
        [
            ROUTE_DIAGNOSIS,
            model_step,
            tool_call,
            checked(False, False, 1),
            released(FALLBACK, IE),
            complete,
        ],
        RunState.SUCCESS,
        FALLBACK,
        IE,
    ),
    (
        "EvidenceGuard finally fails",
        [ROUTE_DIAGNOSIS, RECHECK_FAILED, released(FALLBACK, EVF), complete],
        RunState.SUCCESS,
        FALLBACK,
        EVF,
    ),
    (
        "SemanticGuard unsupported",
        [ROUTE_DIAGNOSIS, UNSUPPORTED, released(FALLBACK, SEM_UNSUPPORTED), complete],
        RunState.SUCCESS,
        FALLBACK,
        SEM_UNSUPPORTED,
    ),
    (
        "SemanticGuard unavailable",
        [ROUTE_DIAGNOSIS, UNAVAILABLE, released(FALLBACK, SEM_UNAVAILABLE), complete],
        RunState.SUCCESS,
        FALLBACK,
        SEM_UNAVAILABLE,
    ),
    (
        "budget exhausted, safe progress",
        [ROUTE_DIAGNOSIS, over_tool_budget, PROGRESS_ONLY, released(FALLBACK, IE), complete],
        RunState.BUDGET_EXHAUSTED,
        FALLBACK,
        IE,
    ),
    (
        "timed out, no safe content",
        [ROUTE_DIAGNOSIS, lambda r: r.time_out()],
        RunState.TIMED_OUT,
        ReleaseOutcome.FAILED,
        None,
    ),
    (
        "budget exhausted, no safe progress",
        [
            ROUTE_DIAGNOSIS,
            over_tool_budget,
            NOTHING_VERIFIED,
            lambda r: r.fail(FailureCode.NO_SAFE_CONTENT),
        ],
        RunState.BUDGET_EXHAUSTED,
        ReleaseOutcome.FAILED,
        None,
    ),
    (
        "unrecoverable internal failure",
        [ROUTE_DIAGNOSIS, lambda r: r.fail(FailureCode.MODEL_FAILED)],
        RunState.FAILED,
        ReleaseOutcome.FAILED,
        None,
    ),
    (
        "client disconnected",
        [ROUTE_DIAGNOSIS, lambda r: r.cancel(CancellationReason.CLIENT_DISCONNECTED)],
        RunState.CANCELLED,
        ReleaseOutcome.CANCELLED,
        None,
    ),
    # -- variants of the rows above
    (
        "controlled stop, no verified facts",
        [ROUTE_DIAGNOSIS, NOTHING_VERIFIED, lambda r: r.fail(FailureCode.NO_SAFE_CONTENT)],
        RunState.FAILED,
        ReleaseOutcome.FAILED,
        None,
    ),
    (
        "budget exhausted mid guard chain, safe progress",
        [
            ROUTE_DIAGNOSIS,
            checked(True, False, VERIFIED),
            repair,
            lambda r: r.record_model_step(ModelStepPurpose.REPAIR, 60, 50, 1),
            released(FALLBACK, IE),
            complete,
        ],
        RunState.BUDGET_EXHAUSTED,
        FALLBACK,
        IE,
    ),
    (
        "timed out by cancel(DEADLINE_EXCEEDED), no safe content",
        [ROUTE_DIAGNOSIS, PROGRESS_ONLY, lambda r: r.cancel(CancellationReason.DEADLINE_EXCEEDED)],
        RunState.TIMED_OUT,
        ReleaseOutcome.FAILED,
        None,
    ),
    (
        "user requested",
        [ROUTE_DIAGNOSIS, lambda r: r.cancel(CancellationReason.USER_REQUESTED)],
        RunState.CANCELLED,
        ReleaseOutcome.CANCELLED,
        None,
    ),
]


def test_the_outcome_table_covers_every_row_of_spec_section_10() -> None:
    assert len(SPEC_SCENARIOS) == 13
    assert [row[0] for row in SPEC_TABLE[: len(SPEC_SCENARIOS)]] == list(SPEC_SCENARIOS)


@pytest.mark.parametrize(
    ("steps", "state", "outcome", "fallback"),
    [row[1:] for row in SPEC_TABLE],
    ids=[row[0] for row in SPEC_TABLE],
)
def test_every_row_of_the_outcome_table(
    steps: list[Step],
    state: RunState,
    outcome: ReleaseOutcome,
    fallback: FallbackType | None,
) -> None:
    run = given(*steps)

    finished = run.finish(run.created_on)

    assert [type(e) for e in run.collect_events()] == [Run.RunFinished]
    assert finished is outcome
    assert run.finished_outcome is outcome
    assert run.state is state
    assert outcome is not FALLBACK or state is not RunState.FAILED
    published = outcome in (ReleaseOutcome.SUCCESS, ReleaseOutcome.FALLBACK)
    assert run.release == ((outcome, fallback) if published else None)


def test_the_zero_tool_row_called_no_tool() -> None:
    run = given(*SPEC_TABLE[1][1])

    assert run.usage.tool_calls == 0
    assert run.guards.verified_facts == 0


@pytest.mark.parametrize(
    "row",
    [row for row in SPEC_TABLE if row[3] is FALLBACK and row[4] is IE],
    ids=lambda row: row[0],
)
def test_every_insufficient_evidence_row_rests_on_verified_facts(
    row: tuple[str, list[Step], RunState, ReleaseOutcome, FallbackType | None],
) -> None:
    run = given(*row[1])

    assert run.guards.verified_facts > 0


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
