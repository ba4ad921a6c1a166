"""SPEC §10, row by row: each scripted scenario through the chat use case on a real store."""

from __future__ import annotations

import threading
from dataclasses import dataclass

import pytest

from application.chat import ChatResult
from application.store import HarnessStore
from bootstrap.composition import Services
from domain.catalogue import event_type_name
from domain.release_states import FallbackType, ReleaseOutcome
from domain.release_states import FallbackType as FT
from domain.states import CancellationReason, RunState
from tests.helpers import scripted

SUCCESS_TRACE = [
    "RUN_STARTED",
    "ROUTING_ATTEMPT",
    "ROUTING_DECISION",
    "AGENT_MODEL_STEP",
    "TOOL_INVOCATION_STARTED",
    "TOOL_INVOCATION_READY",
    "TOOL_PROGRESS",
    "EVIDENCE_GUARD_INITIAL",
    "SEMANTIC_GUARD_ATTEMPT",
    "SEMANTIC_GUARD_DECISION",
    "RELEASE_DECISION",
    "RUN_TERMINATED",
    "RUN_FINISHED",
]
FALLBACK_TRACE = [
    "RUN_STARTED",
    "ROUTING_DECISION",
    "EVIDENCE_GUARD_INITIAL",
    "RELEASE_DECISION",
    "RUN_TERMINATED",
    "RUN_FINISHED",
]
PROGRESS_TRACE = [
    "RUN_STARTED",
    "ROUTING_DECISION",
    "TOOL_INVOCATION_READY",
    "TOOL_PROGRESS",
    "EVIDENCE_GUARD_INITIAL",
    "RELEASE_DECISION",
    "RUN_TERMINATED",
    "RUN_FINISHED",
]
BUDGET_TRACE = [
    "RUN_STARTED",
    "TOOL_INVOCATION_READY",
    "TOOL_PROGRESS",
    "TOOL_REQUEST_REJECTED",
    "BUDGET_EXHAUSTED",
    "RUN_TERMINATED",
    "COLLECTION_STOP",
    "EVIDENCE_GUARD_INITIAL",
    "RELEASE_DECISION",
    "RUN_FINISHED",
]
"""Budget exhaustion terminates first; Release still publishes verified progress after it."""
FAILURE_TRACE = ["RUN_STARTED", "RUN_TERMINATED", "RUN_FINISHED"]
GUARD_CHAIN = {"SEMANTIC_GUARD_ATTEMPT", "EVIDENCE_REPAIR", "EVIDENCE_GUARD_RECHECK"}


@dataclass(frozen=True)
class Row:
    scenario: str
    state: RunState
    outcome: ReleaseOutcome
    fallback: FallbackType | None
    content_kind: str | None
    trace: list[str]
    also: tuple[str, ...] = ()


ROWS = [
    Row(
        "conclusion_supported",
        RunState.SUCCESS,
        ReleaseOutcome.SUCCESS,
        None,
        "diagnosis",
        SUCCESS_TRACE,
    ),
    Row(
        "missing_context",
        RunState.SUCCESS,
        ReleaseOutcome.FALLBACK,
        FT.MISSING_REQUIRED_CONTEXT,
        "fallback",
        FALLBACK_TRACE,
    ),
    Row(
        "limited_checks",
        RunState.SUCCESS,
        ReleaseOutcome.FALLBACK,
        FT.INSUFFICIENT_EVIDENCE,
        "fallback",
        PROGRESS_TRACE,
    ),
    Row(
        "saturated",
        RunState.SUCCESS,
        ReleaseOutcome.FALLBACK,
        FT.INSUFFICIENT_EVIDENCE,
        "fallback",
        PROGRESS_TRACE,
        ("COLLECTION_STOP", "STOP_REQUIRED_DELIVERED"),
    ),
    Row(
        "protocol_stop",
        RunState.SUCCESS,
        ReleaseOutcome.FALLBACK,
        FT.INSUFFICIENT_EVIDENCE,
        "fallback",
        PROGRESS_TRACE,
        ("PROGRESS_PROTOCOL_VIOLATION", "COLLECTION_STOP", "STOP_REQUIRED_DELIVERED"),
    ),
    Row(
        "evidence_guard_fails",
        RunState.SUCCESS,
        ReleaseOutcome.FALLBACK,
        FT.EVIDENCE_VALIDATION_FAILED,
        "fallback",
        FALLBACK_TRACE,
        ("EVIDENCE_REPAIR", "EVIDENCE_GUARD_RECHECK"),
    ),
    Row(
        "semantic_unsupported",
        RunState.SUCCESS,
        ReleaseOutcome.FALLBACK,
        FT.SEMANTIC_UNSUPPORTED,
        "fallback",
        SUCCESS_TRACE,
    ),
    Row(
        "semantic_unavailable",
        RunState.SUCCESS,
        ReleaseOutcome.FALLBACK,
        FT.SEMANTIC_UNAVAILABLE,
        "fallback",
        SUCCESS_TRACE,
    ),
    Row(
        "budget_safe_progress",
        RunState.BUDGET_EXHAUSTED,
        ReleaseOutcome.FALLBACK,
        FT.INSUFFICIENT_EVIDENCE,
        "fallback",
        BUDGET_TRACE,
    ),
    Row(
        "timed_out",
        RunState.TIMED_OUT,
        ReleaseOutcome.FAILED,
        None,
        None,
        FAILURE_TRACE,
        ("CANCELLATION_REQUESTED",),
    ),
    Row(
        "budget_no_progress",
        RunState.BUDGET_EXHAUSTED,
        ReleaseOutcome.FAILED,
        None,
        None,
        FAILURE_TRACE,
        ("BUDGET_EXHAUSTED",),
    ),
    Row(
        "internal_failure",
        RunState.FAILED,
        ReleaseOutcome.FAILED,
        None,
        None,
        ["RUN_STARTED", "ROUTING_ATTEMPT", "ROUTING_DECISION", "RUN_TERMINATED", "RUN_FINISHED"],
    ),
    Row(
        "client_disconnected",
        RunState.CANCELLED,
        ReleaseOutcome.CANCELLED,
        None,
        None,
        ["RUN_STARTED", "CANCELLATION_REQUESTED", "RUN_TERMINATED", "RUN_FINISHED"],
    ),
]


def _trace(store: HarnessStore) -> list[str]:
    """Every event of the log (one run per test) as trace types, in log order."""
    notifications = store.recorder.select_notifications(start=1, limit=10_000)
    return [event_type_name(store.mapper.to_domain_event(n).__class__) for n in notifications]


def _is_subsequence(expected: list[str], actual: list[str]) -> bool:
    it = iter(actual)
    return all(any(a == e for a in it) for e in expected)


def _run(services: Services, name: str) -> ChatResult:
    with scripted(services, name) as made:
        service, provider = made.service, made.provider
        if name != "client_disconnected":
            return service.ask("session-1", "why is it broken?")
        run, _ = service.begin("session-1", "why is checkout slow?")
        run_id = run.id
        results: list[ChatResult] = []
        worker = threading.Thread(target=lambda: results.append(service.execute(run)))
        worker.start()
        assert provider.hanging.wait(timeout=60)
        services.store.cancel(run_id, CancellationReason.CLIENT_DISCONNECTED)
        provider.release()  # the late answer arrives after the cancel and is discarded
        worker.join(timeout=60)
        return results[0]


@pytest.mark.parametrize("row", ROWS, ids=[r.scenario for r in ROWS])
def test_each_row_of_the_outcome_table(services: Services, store: HarnessStore, row: Row) -> None:
    result = _run(services, row.scenario)
    run = store.get_run(result.run_id)
    trace = _trace(store)

    assert result.termination.state is row.state
    assert run.state is row.state
    assert result.release_outcome is row.outcome
    assert run.finished_outcome is row.outcome
    assert (run.release[1] if run.release else None) is row.fallback
    kind = result.content["kind"] if result.content else None
    assert kind == row.content_kind
    assert _is_subsequence(row.trace, trace), trace
    if "STOP_REQUIRED_DELIVERED" in row.also:  # the agent still gets one answer after the stop
        after = trace[trace.index("STOP_REQUIRED_DELIVERED") :]
        assert after.index("AGENT_MODEL_STEP") < after.index("EVIDENCE_GUARD_INITIAL"), trace
    for extra in row.also:
        assert extra in trace, (extra, trace)
    assert trace.count("RUN_TERMINATED") == 1 and trace.count("RUN_FINISHED") == 1
    assert trace[-1] == "RUN_FINISHED"
    if row.fallback is not None:
        assert result.content is not None
        assert "conclusion" not in result.content  # never the unverified conclusion
    if row.content_kind != "diagnosis" and row.fallback not in (
        FT.SEMANTIC_UNSUPPORTED,
        FT.SEMANTIC_UNAVAILABLE,
        FT.EVIDENCE_VALIDATION_FAILED,
    ):
        assert not GUARD_CHAIN & set(trace)  # the full chain only runs on a conclusion
