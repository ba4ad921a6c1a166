"""SPEC §15 from the log alone: ``explain_run`` for every SPEC §10 row and a few runtime paths."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from uuid import UUID, uuid4

import pytest

from application.explain import QUESTIONS, Answer, RunExplanation, explain_run
from application.published import FALLBACK_MESSAGES, MISSING_QUESTIONS
from application.store import HarnessStore, events_of
from bootstrap.composition import Services
from domain.catalogue import event_type_name
from domain.collection import collection_id
from domain.errors import UnknownAggregateError
from domain.published import FallbackContent, MissingItem
from domain.release_states import FallbackType, ReleaseOutcome
from domain.run import Run
from domain.states import BudgetKind, CancellationReason, Intent, MissingKind, RunState
from tests.helpers import scripted
from tests.integration._projection_helpers import (
    QUERY,
    collection_stop_reason,
    run_scenario,
    value,
)
from tests.integration.runs.test_outcome_table import ROWS, Row

QUESTION_SERVICE = MISSING_QUESTIONS[MissingKind.SERVICE]

STOP_REASONS = {
    "saturated": "INFORMATION_SATURATED",
    "protocol_stop": "PROGRESS_PROTOCOL_VIOLATED",
    "budget_safe_progress": "BUDGET_LIMIT_REACHED",
    "budget_no_progress": "BUDGET_LIMIT_REACHED",
}
EXHAUSTED_BUDGET = {"budget_safe_progress": "TOOL_CALLS", "budget_no_progress": "TOKENS"}

FALLBACK_WORDS = {
    "missing_context": [
        "MISSING_REQUIRED_CONTEXT",
        "Which service is affected?",
        "When did it happen (a date and a time window in UTC)?",
    ],
    "limited_checks": ["INSUFFICIENT_EVIDENCE", "1 verified fact"],
    "saturated": ["INSUFFICIENT_EVIDENCE", "INFORMATION_SATURATED"],
    "protocol_stop": ["INSUFFICIENT_EVIDENCE", "PROGRESS_PROTOCOL_VIOLATED"],
    "evidence_guard_fails": [
        "EVIDENCE_VALIDATION_FAILED",
        "inv-that-does-not-exist",
        "still-not-an-invocation",
    ],
    "semantic_unsupported": ["SEMANTIC_UNSUPPORTED", "does not support"],
    "semantic_unavailable": ["SEMANTIC_UNAVAILABLE", "scripted unavailable error"],
    "budget_safe_progress": ["INSUFFICIENT_EVIDENCE", "TOOL_CALLS budget", "2 used, limit 2"],
}
"""What each fallback's answer must name: its type and the exact cause."""

STOPPED_WORDS = {
    "conclusion_supported": ("stopped by itself after 2 tool call(s)", "with a conclusion"),
    "missing_context": ("stopped by itself without calling any tool",),
    "limited_checks": (
        "stopped by itself after 1 tool call(s)",
        "a draft (64 characters) that was empty",
    ),
    "saturated": ("SATURATED", "3 tool results in a row", "told to draft now"),
    "protocol_stop": ("PROGRESS_PROTOCOL_VIOLATED", "2 agent steps in a row"),
    "evidence_guard_fails": ("stopped by itself after 1 tool call(s)", "with a conclusion"),
    "semantic_unsupported": ("stopped by itself after 2 tool call(s)",),
    "semantic_unavailable": ("stopped by itself after 2 tool call(s)",),
    "budget_safe_progress": ("TOOL_CALLS budget ran out", "BUDGET_LIMIT_REACHED"),
    "timed_out": ("TIMED_OUT", "DEADLINE_EXCEEDED", "still working"),
    "budget_no_progress": ("TOKENS budget ran out (6084 used, limit 5000)",),
    "internal_failure": ("never ran", "routing failed"),
    "client_disconnected": ("CANCELLED", "CLIENT_DISCONNECTED", "still working"),
}
STOPPED_EVIDENCE = {
    "saturated": {"TOOL_PROGRESS", "COLLECTION_STOP", "STOP_REQUIRED_DELIVERED"},
    "protocol_stop": {"PROGRESS_PROTOCOL_VIOLATION", "COLLECTION_STOP", "STOP_REQUIRED_DELIVERED"},
    "budget_safe_progress": {"BUDGET_EXHAUSTED", "TOOL_REQUEST_REJECTED", "COLLECTION_STOP"},
    "budget_no_progress": {"BUDGET_EXHAUSTED", "COLLECTION_STOP"},
    "timed_out": {"RUN_TERMINATED", "CANCELLATION_REQUESTED"},
    "client_disconnected": {"RUN_TERMINATED", "CANCELLATION_REQUESTED"},
    "conclusion_supported": {"AGENT_MODEL_STEP", "EVIDENCE_GUARD_INITIAL"},
}
STATUS = {
    ReleaseOutcome.SUCCESS: "SUCCESS",
    ReleaseOutcome.FALLBACK: "SUCCESS",
    ReleaseOutcome.FAILED: "FAILED",
    ReleaseOutcome.CANCELLED: "CANCELLED",
}


def answers_of(explanation: RunExplanation) -> dict[str, Answer]:
    return {answer.question: answer for answer in explanation.answers}


def types_of(answer: Answer) -> list[str]:
    return [ref.event_type for ref in answer.evidence]


def listed(answer: Answer, key: str) -> list[str]:
    found = answer.fields[key]
    assert isinstance(found, list), (key, found)
    return found


def assert_evidence_is_the_runs(
    store: HarnessStore, run_id: UUID, explanation: RunExplanation
) -> None:
    """Every reference names a stored event of this run's own streams, exactly."""
    own = {run_id, collection_id(run_id)}
    for answer in explanation.answers:
        assert len({(r.stream_id, r.stream_version) for r in answer.evidence}) == len(
            answer.evidence
        )
        for ref in answer.evidence:
            if ref.stream_id not in own:
                assert store.get_invocation(ref.stream_id).run_id == run_id
            stream = events_of(store, ref.stream_id)
            assert 1 <= ref.stream_version <= len(stream)
            event = stream[ref.stream_version - 1]
            assert event.originator_version == ref.stream_version
            assert event_type_name(type(event)) == ref.event_type
            assert event.timestamp == ref.timestamp


@pytest.mark.parametrize("row", ROWS, ids=[r.scenario for r in ROWS])
def test_each_row_of_the_outcome_table_is_explained(
    services: Services, store: HarnessStore, row: Row
) -> None:
    result = run_scenario(services, row.scenario)
    explanation = explain_run(store, result.run_id)
    run = store.get_run(result.run_id)
    (finished,) = [e for e in events_of(store, run.id) if isinstance(e, Run.RunFinished)]

    assert explanation.run_id == result.run_id
    assert (explanation.session_id, explanation.query) == ("session-1", QUERY)
    assert explanation.intent == (None if row.scenario == "internal_failure" else "DIAGNOSIS")
    assert explanation.finished
    assert explanation.release_outcome == row.outcome.value
    assert explanation.fallback_type == value(row.fallback)
    assert explanation.termination_state == row.state.value
    assert explanation.termination_reason == result.termination.reason.value
    assert explanation.stop_reason == STOP_REASONS.get(row.scenario)
    assert explanation.stop_reason == collection_stop_reason(store, run.id)
    assert explanation.duration_ms == finished.duration_ms
    assert {b.kind: (b.used, b.limit) for b in explanation.budget} == {
        k.value: (finished.usage.get(k), finished.limits.get(k)) for k in BudgetKind
    }
    assert [a.question for a in explanation.answers] == list(QUESTIONS)
    assert all(a.asked == QUESTIONS[a.question] and a.answer for a in explanation.answers)
    assert RunExplanation.model_validate_json(explanation.model_dump_json()) == explanation
    assert_evidence_is_the_runs(store, run.id, explanation)

    answers = answers_of(explanation)
    check_fallback(answers["why_fallback"], row)
    check_stopped(answers["why_stopped_calling_tools"], row)
    check_no_evidence(answers["why_no_evidence"], row, run)
    check_timed_out_or_budget(answers["timed_out_or_budget_exhausted"], row)
    check_success_without_conclusion(answers["success_without_conclusion"], row)
    check_no_done(answers["why_no_done"], row)
    check_previous_turn(answers["why_no_previous_turn"], row, run)


def check_fallback(answer: Answer, row: Row) -> None:
    assert answer.applies is (row.outcome is ReleaseOutcome.FALLBACK)
    assert answer.fields["fallback_type"] == value(row.fallback)
    assert answer.fields["release_outcome"] == row.outcome.value
    if not answer.applies:
        assert answer.answer.startswith("No fallback"), answer.answer
        assert "FALLBACK of type" not in answer.answer
        return
    published = f"The release published a FALLBACK of type {value(row.fallback)} because "
    assert answer.answer.startswith(published), answer.answer
    for words in FALLBACK_WORDS[row.scenario]:
        assert words in answer.answer, (words, answer.answer)
    assert {"EVIDENCE_GUARD_INITIAL", "RELEASE_DECISION", "RUN_FINISHED"} <= set(types_of(answer))
    if row.scenario == "evidence_guard_fails":
        assert listed(answer, "invalid_references") == ["inv-that-does-not-exist"]
        assert listed(answer, "recheck_invalid_references") == ["still-not-an-invocation"]
        assert {"EVIDENCE_REPAIR", "EVIDENCE_GUARD_RECHECK"} <= set(types_of(answer))
    if row.scenario.startswith("semantic_"):
        assert "SEMANTIC_GUARD_DECISION" in types_of(answer)
        verdict = "UNSUPPORTED" if row.scenario == "semantic_unsupported" else None
        assert answer.fields["semantic_verdict"] == verdict


def check_stopped(answer: Answer, row: Row) -> None:
    assert answer.applies is (row.scenario != "internal_failure")
    assert answer.fields["stop_reason"] == STOP_REASONS.get(row.scenario)
    for words in STOPPED_WORDS[row.scenario]:
        assert words in answer.answer, (words, answer.answer)
    assert STOPPED_EVIDENCE.get(row.scenario, set()) <= set(types_of(answer)), answer.evidence
    if row.scenario == "saturated":
        assert types_of(answer).count("TOOL_PROGRESS") == 3  # the three NO_GAIN in a row
        assert answer.fields["stop_required_delivered"] is True
    if row.scenario == "budget_safe_progress":
        (rejected,) = listed(answer, "rejected_tool_requests")
        assert "BUDGET" in rejected


def check_no_evidence(answer: Answer, row: Row, run: Run) -> None:
    invocations = listed(answer, "invocations")
    assert len(invocations) == run.usage.tool_calls
    if row.scenario == "saturated":
        assert answer.applies
        assert len(listed(answer, "no_evidence")) == 3 and answer.fields["evidence_found"] == 1
        assert answer.answer.startswith("3 of 4 tool request(s) gave no evidence")
        assert "payments ERROR logs 2026-11-30" in answer.answer  # the empty scope, named
        ready = [r for r in answer.evidence if r.event_type == "TOOL_INVOCATION_READY"]
        assert len({r.stream_id for r in ready}) == 3
    elif row.scenario == "budget_safe_progress":
        assert answer.applies
        (rejected,) = listed(answer, "rejected_tool_requests")
        assert rejected.startswith("search_logs: BUDGET")
        assert "rejected at preflight with BUDGET" in answer.answer
        assert types_of(answer) == ["TOOL_REQUEST_REJECTED"]
    else:
        assert not answer.applies
        assert answer.fields["evidence_found"] == len(invocations)
        assert all(line.endswith("READY + EVIDENCE_FOUND") for line in invocations)
        assert types_of(answer) == ["TOOL_INVOCATION_READY"] * len(invocations)


def check_timed_out_or_budget(answer: Answer, row: Row) -> None:
    applies = row.state in (RunState.TIMED_OUT, RunState.BUDGET_EXHAUSTED)
    assert answer.applies is applies
    assert answer.fields["termination_state"] == row.state.value
    if row.state is RunState.TIMED_OUT:
        assert answer.answer.startswith("TIMED_OUT, not budget exhausted")
        assert answer.fields["termination_reason"] == "DEADLINE_EXCEEDED"
        assert answer.fields["budget_kind"] is None
        assert {"RUN_TERMINATED", "CANCELLATION_REQUESTED"} <= set(types_of(answer))
    elif row.state is RunState.BUDGET_EXHAUSTED:
        kind = EXHAUSTED_BUDGET[row.scenario]
        assert answer.answer.startswith("BUDGET_EXHAUSTED, not timed out")
        assert f"{kind} budget ran out" in answer.answer
        assert answer.fields["termination_reason"] == "BUDGET_EXHAUSTED"
        assert answer.fields["budget_kind"] == kind
        assert answer.fields["stop_reason"] == "BUDGET_LIMIT_REACHED"
        assert {"BUDGET_EXHAUSTED", "RUN_TERMINATED", "COLLECTION_STOP"} <= set(types_of(answer))
    else:
        assert answer.answer.startswith("Neither")
        assert row.state.value in answer.answer
        assert types_of(answer) == ["RUN_TERMINATED"]


def check_success_without_conclusion(answer: Answer, row: Row) -> None:
    assert answer.applies is (row.outcome is ReleaseOutcome.FALLBACK)
    assert answer.fields["status"] == STATUS[row.outcome]
    assert answer.fields["has_conclusion"] is (row.scenario == "conclusion_supported")
    assert answer.fields["content_kind"] == (row.content_kind if row.content_kind else None)
    if answer.applies:
        assert answer.answer.startswith("status=SUCCESS means handled with safe content")
        assert f"FALLBACK of type {value(row.fallback)}" in answer.answer
    else:
        assert answer.answer.startswith("Does not apply")


def check_no_done(answer: Answer, row: Row) -> None:
    cancelled = row.state is RunState.CANCELLED
    assert answer.applies is cancelled
    assert answer.fields["done_sent"] is not cancelled
    assert answer.fields["terminal_sse_event"] == ("failure" if cancelled else "done")
    assert answer.fields["sse_session_state"] == ("DISCONNECTED" if cancelled else "TERMINAL")
    if cancelled:
        assert "CLIENT_DISCONNECTED" in answer.answer and "never a `done`" in answer.answer
        assert {"CANCELLATION_REQUESTED", "RUN_TERMINATED"} <= set(types_of(answer))
    else:
        assert f"`done({row.outcome.value})`" in answer.answer
        assert "RUN_FINISHED" in types_of(answer)


def check_previous_turn(answer: Answer, row: Row, run: Run) -> None:
    gives_context = row.scenario == "conclusion_supported"
    assert answer.applies is not gives_context
    assert answer.fields["previous_turn"] == run.previous_turn
    assert (run.previous_turn is not None) is gives_context
    if gives_context:
        assert run.previous_turn is not None and run.previous_turn in answer.answer
    elif row.fallback is not None:
        assert f"FALLBACK of type {row.fallback.value}" in answer.answer
    elif row.scenario == "internal_failure":
        assert "routing gave no intent" in answer.answer
    else:
        assert f"ReleaseOutcome is {row.outcome.value}" in answer.answer


def test_an_unknown_run_is_refused(services: Services, store: HarnessStore) -> None:
    with pytest.raises(UnknownAggregateError):
        explain_run(store, uuid4())
    result = run_scenario(services, "missing_context")
    with pytest.raises(UnknownAggregateError):
        explain_run(store, collection_id(result.run_id))  # a stream, but not a run


def test_a_running_run_has_no_done_yet(services: Services, store: HarnessStore) -> None:
    with scripted(services, "limited_checks") as made:
        run_id = made.service.begin("session-9", QUERY)[0].id
    explanation = explain_run(store, run_id)
    answers = answers_of(explanation)

    assert not explanation.finished
    assert explanation.termination_state is None and explanation.release_outcome is None
    assert explanation.intent is None and explanation.duration_ms is None
    done = answers["why_no_done"]
    assert done.applies and done.answer.startswith("No `done` yet")
    assert done.fields["sse_session_state"] == "OPEN" and done.fields["done_sent"] is False
    assert types_of(done) == ["RUN_STARTED"]
    assert not answers["timed_out_or_budget_exhausted"].applies
    assert not answers["why_fallback"].applies
    assert not answers["why_stopped_calling_tools"].applies
    assert "has not finished" in answers["why_no_previous_turn"].answer
    assert_evidence_is_the_runs(store, run_id, explanation)


@pytest.mark.parametrize(
    ("scenario", "field", "words", "event_type"),
    [
        ("paths/tool_raises", "failed", "ERROR with code EXECUTION", "TOOL_INVOCATION_FAILED"),
        ("paths/reject_auth", "rejected_tool_requests", "with AUTH", "TOOL_REQUEST_REJECTED"),
        ("paths/blank_records", "no_evidence", "READY + NO_EVIDENCE", "TOOL_INVOCATION_READY"),
    ],
)
def test_a_tool_without_evidence_names_its_cause(
    services: Services, store: HarnessStore, scenario: str, field: str, words: str, event_type: str
) -> None:
    result = run_scenario(services, scenario)
    explanation = explain_run(store, result.run_id)
    answer = answers_of(explanation)["why_no_evidence"]

    assert answer.applies
    assert len(listed(answer, field)) == 1
    assert words in answer.answer, answer.answer
    assert event_type in types_of(answer)
    assert_evidence_is_the_runs(store, result.run_id, explanation)


def test_a_user_cancel_ends_the_stream_without_done(
    services: Services, store: HarnessStore
) -> None:
    result = run_scenario(services, "paths/cancel_during_tool")
    answers = answers_of(explain_run(store, result.run_id))

    done = answers["why_no_done"]
    assert done.applies and "USER_REQUESTED" in done.answer and "never a `done`" in done.answer
    assert done.fields["sse_session_state"] == "TERMINAL"
    assert done.fields["cancellation_reason"] == "USER_REQUESTED"
    stopped = answers["why_stopped_calling_tools"]
    assert "ended CANCELLED" in stopped.answer and "after 1 tool call(s)" in stopped.answer


def test_a_budget_spent_in_release_is_not_why_the_agent_stopped(
    services: Services, store: HarnessStore
) -> None:
    result = run_scenario(services, "paths/budget_spent_in_release")
    explanation = explain_run(store, result.run_id)
    answers = answers_of(explanation)

    assert explanation.termination_state == "BUDGET_EXHAUSTED" and explanation.stop_reason is None
    stopped = answers["why_stopped_calling_tools"]
    assert stopped.fields["stop_reason"] is None
    assert "stopped by itself" in stopped.answer and "only later, in Release" in stopped.answer
    budget = answers["timed_out_or_budget_exhausted"]
    assert budget.applies and budget.fields["budget_kind"] == "MODEL_CALLS"
    assert "stopped evidence collection" not in budget.answer


def test_a_decided_fallback_reaches_the_user_only_once_published(store: HarnessStore) -> None:
    """Asked mid-run, then after a cancel that lands between the release and the finish."""
    run_id, _ = store.start_run("session-1", QUERY, datetime.now(UTC) + timedelta(minutes=1))
    run = store.get_run(run_id)
    run.attempt_routing()
    run.decide_routing(Intent.DIAGNOSIS)
    run.check_evidence(has_conclusion=False, valid=True)
    kind = FallbackType.MISSING_REQUIRED_CONTEXT
    asked = MissingItem(MissingKind.SERVICE)
    content = FallbackContent(
        kind, FALLBACK_MESSAGES[kind], (), (), (), (QUESTION_SERVICE,), (asked,)
    )
    run.decide_release(ReleaseOutcome.FALLBACK, kind, content.to_json())
    store.save_all(run)

    decided = explain_run(store, run_id)
    fallback = answers_of(decided)["why_fallback"]
    assert decided.fallback_type == "MISSING_REQUIRED_CONTEXT" and not decided.finished
    assert fallback.applies and "decided (published when the run finishes)" in fallback.answer
    assert QUESTION_SERVICE in fallback.answer

    store.cancel(run_id, CancellationReason.USER_REQUESTED)
    run = store.get_run(run_id)
    run.finish(datetime.now(UTC))
    store.save_all(run)
    cancelled = explain_run(store, run_id)
    fallback = answers_of(cancelled)["why_fallback"]
    assert cancelled.release_outcome == "CANCELLED" and cancelled.fallback_type is None
    assert not fallback.applies and fallback.answer.startswith("No fallback reached the user")
    assert "MISSING_REQUIRED_CONTEXT" in fallback.answer and "ended CANCELLED" in fallback.answer
    assert answers_of(cancelled)["why_no_done"].applies
    assert_evidence_is_the_runs(store, run_id, cancelled)
