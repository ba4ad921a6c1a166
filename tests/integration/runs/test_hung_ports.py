"""Ports that never return: the run still ends, and nothing else waits on them (issue 28).

A tool whose argument check never returns (an MCP schema that fetches a URL that never answers)
is asked within the call's bound like its ``run``: the deadline or a cancel ends the run, the
request is rejected INVALID_RUN and no invocation begins; whatever the check answers later is
never recorded. An abandoned call holds only its own thread: more of them than the old shared
pool had threads leave model calls answered at once, and a tool with ``HARNESS_MAX_STUCK_CALLS``
calls still stuck is refused UNAVAILABLE instead of being asked again. Threads meet on the
scripted tool's ``hanging`` event; each hang is released when its test is over.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from application.chat import ChatResult
from application.store import HarnessStore
from bootstrap.composition import Services
from domain.catalogue import event_type_name
from domain.published import FallbackContent
from domain.release_states import FallbackType, ReleaseOutcome
from domain.run import Run
from domain.states import CancellationReason, RunState
from domain.tool_invocation import ToolInvocation
from domain.tool_states import ToolRejectionCode
from tests.helpers import Scripted, fresh_sqlite, scripted

QUERY = "why is checkout slow?"
LINE = "2026-11-29T10:05:00Z checkout ERROR upstream timeout after 30s"
WAIT_S = 60.0
"""A bound on waiting for a port to start hanging, never reached when it works."""
OLD_POOL_THREADS = 8
"""The threads the runs' port calls shared before (``ThreadPoolExecutor(8)``)."""


def _scenario(**tool: Any) -> dict[str, Any]:
    """Diagnose with one call to search_logs (configured by ``tool``), then ask for a symptom."""
    return {
        "route": "DIAGNOSIS",
        "deadline_s": 600,
        "tools": {"search_logs": {"lines": [LINE], **tool}},
        "steps": [
            {"tool": "search_logs", "arguments": {"service": "checkout"}},
            {"draft": {"conclusion": None, "facts": [], "missing_info": [{"kind": "SYMPTOM"}]}},
        ],
    }


@pytest.fixture
def services() -> Iterator[Services]:
    with fresh_sqlite() as opened:
        yield opened


def _events(store: HarnessStore) -> list[Any]:
    notifications = store.recorder.select_notifications(start=1, limit=100_000)
    return [store.mapper.to_domain_event(n) for n in notifications]


def _of(events: list[Any], cls: type[Any]) -> list[Any]:
    return [e for e in events if isinstance(e, cls)]


def _drained(made: Scripted) -> None:
    """Let every hung call answer, late, and wait until its thread is done with it."""
    made.release()
    made.service.pool.shutdown(wait=True)


def _cancelled_while_hanging(made: Scripted) -> ChatResult:
    """Execute a run in a worker thread; cancel it once the tool hangs; its result."""
    hanging = made.tools["search_logs"].hanging
    hanging.clear()  # set again by this run's call
    run, _ = made.service.begin("session-1", QUERY)
    results: list[ChatResult] = []
    worker = threading.Thread(target=lambda: results.append(made.service.execute(run)))
    worker.start()
    try:
        assert hanging.wait(WAIT_S), "the tool never hung"
        made.service.store.cancel(run.id, CancellationReason.USER_REQUESTED)
    finally:
        worker.join(WAIT_S)  # the tool still hangs: nothing but the cancel ends the run
    assert len(results) == 1  # execute returned (no exception escaped it) before any release
    return results[0]


def test_an_argument_check_that_never_returns_ends_at_the_deadline_unrecorded(
    services: Services,
) -> None:
    with scripted(services, {**_scenario(scope_hang=True), "deadline_s": 0.5}) as made:
        result = made.service.ask("session-1", QUERY)
        assert made.tools["search_logs"].hanging.is_set()  # still checking when the run ended
        before = [event_type_name(type(e)) for e in _events(services.store)]
        _drained(made)
    events = _events(services.store)
    assert [event_type_name(type(e)) for e in events] == before  # the late scope is dropped
    assert (result.termination.state, result.release_outcome) == (
        RunState.TIMED_OUT,
        ReleaseOutcome.FAILED,
    )
    assert before[-1] == "RUN_FINISHED"
    (rejected,) = _of(events, Run.ToolRequestRejected)
    assert (rejected.code, rejected.detail) == (
        ToolRejectionCode.INVALID_RUN,
        "the run ended while search_logs read the arguments",
    )
    assert not _of(events, ToolInvocation.ToolInvocationStarted)


@pytest.mark.parametrize("where", ["argument check", "run"])
def test_a_cancel_ends_a_run_whose_tool_never_returns(services: Services, where: str) -> None:
    tool = {"scope_hang": True} if where == "argument check" else {"hang": True}
    with scripted(services, _scenario(**tool)) as made:
        try:
            result = _cancelled_while_hanging(made)
        finally:
            made.release()
        before = [event_type_name(type(e)) for e in _events(services.store)]
        _drained(made)
    events = _events(services.store)
    assert [event_type_name(type(e)) for e in events] == before  # the late answer is dropped
    assert (result.termination.state, result.termination.reason) == (
        RunState.CANCELLED,
        CancellationReason.USER_REQUESTED,
    )
    assert before[-1] == "RUN_FINISHED"
    if where == "run":
        (failed,) = _of(events, ToolInvocation.ToolInvocationFailed)
        assert failed.error_code == "ABANDONED"
        assert not _of(events, ToolInvocation.ToolInvocationReady)
    else:
        (rejected,) = _of(events, Run.ToolRequestRejected)
        assert rejected.code is ToolRejectionCode.INVALID_RUN
        assert not _of(events, ToolInvocation.ToolInvocationStarted)


def test_calls_that_never_return_leave_the_model_answered_and_are_capped_per_tool() -> None:
    stuck = OLD_POOL_THREADS + 1
    with fresh_sqlite(max_stuck_calls=stuck, stuck_after=0) as services:
        with scripted(services, _scenario(hang=True)) as made:
            hung = [_cancelled_while_hanging(made) for _ in range(stuck)]
            assert [r.termination.state for r in hung] == [RunState.CANCELLED] * stuck
            assert made.service.pool.stuck() == {"tool search_logs": stuck}  # a thread each

            result = made.service.ask("after", QUERY)  # the model is asked at once, as usual
            assert made.service.pool.stuck() == {"tool search_logs": stuck}  # not asked again
            _drained(made)
        refused = [
            e
            for e in _of(_events(services.store), Run.ToolRequestRejected)
            if e.originator_id == result.run_id
        ]
    assert (result.termination.state, result.release_outcome) == (
        RunState.SUCCESS,
        ReleaseOutcome.FALLBACK,
    )
    assert isinstance(result.published, FallbackContent)
    assert result.published.fallback_type is FallbackType.MISSING_REQUIRED_CONTEXT
    assert [e.code for e in refused] == [ToolRejectionCode.UNAVAILABLE]
    assert refused[0].detail.startswith(f"tool search_logs was not asked: {stuck} of its")
    assert "HARNESS_MAX_STUCK_CALLS" in refused[0].detail


def test_a_model_with_its_stuck_calls_at_the_cap_fails_at_once_naming_the_setting() -> None:
    hangs = {"route": "DIAGNOSIS", "steps": [{"hang": True, "text": "never sent"}]}
    with fresh_sqlite(max_stuck_calls=1, stuck_after=0) as services:
        with scripted(services, hangs) as made:
            run, _ = made.service.begin("session-1", QUERY)
            worker = threading.Thread(target=made.service.execute, args=(run,))
            worker.start()
            try:
                assert made.provider.hanging.wait(WAIT_S), "the model never hung"
                made.service.store.cancel(run.id, CancellationReason.USER_REQUESTED)
            finally:
                worker.join(WAIT_S)
            assert len(made.service.pool.stuck()) == 1  # the agent's call, abandoned

            refused = made.service.ask("after", QUERY)  # not queued behind it: refused
            _drained(made)
        steps = [
            e
            for e in _of(_events(services.store), Run.AgentModelStep)
            if e.originator_id == refused.run_id
        ]
    assert refused.termination.state is RunState.FAILED
    assert [s.outcome.value for s in steps] == ["FAILED"]
    assert "was not asked: 1 of its earlier calls never answered" in steps[0].detail
    assert "HARNESS_MAX_STUCK_CALLS" in steps[0].detail


PROGRESS: dict[str, Any] = {
    "gain": "GAINED",
    "facts": [
        {
            "statement": "the checkout upstream timed out",
            "citations": [{"reference": "$1", "excerpt": "upstream timeout after 30s"}],
        }
    ],
}
STALLS: dict[str, list[dict[str, Any]]] = {
    "the next model step": [{"hang": True, "text": "never sent"}],
    "the next tool call": [{"draft": {"conclusion": None, "facts": [], "missing_info": []}}],
}
"""Where the agent stalls after the step that carried its progress report."""


@pytest.mark.parametrize("stall", sorted(STALLS))
def test_a_stalled_step_falls_back_with_the_progress_that_had_arrived(
    services: Services, stall: str
) -> None:
    then = {"tool": "search_logs", "arguments": {"service": "payments"}}
    scenario = {
        **_scenario(results=[{"lines": [LINE]}, {"hang": True, "lines": [LINE]}]),
        "deadline_s": 3,
        "steps": [_scenario()["steps"][0], {"progress": PROGRESS, **then}, *STALLS[stall]],
    }
    with scripted(services, scenario) as made:
        result = made.service.ask("session-1", QUERY)
        hung = made.provider if stall == "the next model step" else made.tools["search_logs"]
        assert hung.hanging.is_set()  # it never answered: the reserve cut it, not an answer
        _drained(made)
    assert (result.termination.state, result.release_outcome) == (
        RunState.SUCCESS,
        ReleaseOutcome.FALLBACK,
    )
    assert isinstance(result.published, FallbackContent)
    assert result.published.fallback_type is FallbackType.INSUFFICIENT_EVIDENCE
    assert "upstream timeout after 30s" in json.dumps(result.content)


def test_a_step_that_stalls_before_any_progress_arrived_still_times_out(
    services: Services,
) -> None:
    stalls: list[dict[str, Any]] = [{"hang": True, "progress": PROGRESS, "text": "never sent"}]
    scenario = {**_scenario(), "deadline_s": 1, "steps": [_scenario()["steps"][0], *stalls]}
    with scripted(services, scenario) as made:
        result = made.service.ask("session-1", QUERY)
        _drained(made)
    assert (result.termination.state, result.release_outcome) == (
        RunState.TIMED_OUT,
        ReleaseOutcome.FAILED,
    )  # its progress never arrived: there is nothing to publish
