"""The runtime's exception, rejection, oversize, cancel, late-result and conflict paths.

Every test drives a scenario of ``tests/scenarios/paths/`` through :class:`ChatService` on a real
store (an SQLite file and a PostgreSQL schema) and checks the recorded events: SPEC §5, §7, §8,
§10 and §14. Threads meet on events (the scripted provider's and tools' ``hanging``) or on a
clock fake that acts at an exact point between two boundaries; nothing sleeps to synchronise.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast
from uuid import UUID

import psycopg
import pytest
from psycopg import sql

from application.chat import ChatResult
from application.ports import Clock, ModelProvider, ModelRequest, ModelResponse
from application.store import HarnessStore
from bootstrap.composition import Services, bootstrap
from domain.catalogue import event_type_name
from domain.collection import Collection
from domain.release_states import CitationProblem, FallbackType, ReleaseOutcome
from domain.run import Run
from domain.states import (
    BudgetKind,
    CancellationReason,
    FailureCode,
    ModelStepOutcome,
    ModelStepPurpose,
    RunState,
)
from domain.tool_invocation import ToolInvocation
from domain.tool_states import (
    DiagnosisStopReason,
    EvidenceStatus,
    InvocationStatus,
    ToolRejectionCode,
)
from infrastructure.scripted_tools import ScriptedTool
from infrastructure.settings import Settings
from tests.helpers import Scripted, scripted

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios" / "paths"
QUERY = "why is checkout slow?"
GUARD_CHAIN = {"EVIDENCE_REPAIR", "EVIDENCE_GUARD_RECHECK", "SEMANTIC_GUARD_ATTEMPT"}
POOL_FACT = "the payments pool ran hot"


@dataclass
class TriggeredClock:
    """Real time plus a one-shot trigger, checked on every read (a hand-written Clock fake).

    When ``when()`` first holds, ``then()`` runs inside that read and returns how far time leaps
    from then on. The runtime reads the clock inside ``check_active`` right after rereading the
    run, so a trigger lands exactly between that reread and the boundary's next save.
    """

    when: Callable[[], bool]
    then: Callable[[], timedelta]
    leap: timedelta = timedelta(0)
    fired: bool = False

    def now(self) -> datetime:
        if not self.fired and self.when():
            self.fired = True
            self.leap = self.then()
        return datetime.now(UTC) + self.leap


def _harness(
    services: Services, name: str, clock: Clock | None = None, asked: AgentAsked | None = None
) -> AbstractContextManager[Scripted]:
    """The service of the ``paths/`` scenario ``name``; on exit hangs released, the pool drained."""
    wrap = asked.wrap if asked is not None else None
    return scripted(services, f"paths/{name}", clock=clock, wrap=wrap)


def _ask(services: Services, name: str, clock: Clock | None = None) -> ChatResult:
    with _harness(services, name, clock) as harness:
        return harness.service.ask("session-1", QUERY)


def _cancel_while(
    harness: Scripted, hanging: threading.Event, release: Callable[[], None]
) -> ChatResult:
    """Execute in a worker; cancel (USER_REQUESTED) from this thread once ``hanging`` is set."""
    run, _ = harness.service.begin("session-1", QUERY)
    run_id = run.id
    results: list[ChatResult] = []
    worker = threading.Thread(target=lambda: results.append(harness.service.execute(run)))
    worker.start()
    try:
        assert hanging.wait(timeout=60)
        harness.service.store.cancel(run_id, CancellationReason.USER_REQUESTED)
    finally:
        release()  # the late answer arrives after the cancel
        worker.join(timeout=60)
    assert not worker.is_alive()
    assert len(results) == 1  # execute returned: no exception escaped it
    return results[0]


def _events(store: HarnessStore) -> list[Any]:
    """Every event of the log (one run per test), in log order."""
    notifications = store.recorder.select_notifications(start=1, limit=10_000)
    return [store.mapper.to_domain_event(n) for n in notifications]


def _names(events: list[Any]) -> list[str]:
    return [event_type_name(type(e)) for e in events]


def _of(events: list[Any], cls: type[Any]) -> list[Any]:
    return [e for e in events if isinstance(e, cls)]


def _after_termination(events: list[Any]) -> list[str]:
    names = _names(events)
    return names[names.index("RUN_TERMINATED") + 1 :]


def _agent_steps(events: list[Any]) -> list[Any]:
    return [e for e in _of(events, Run.AgentModelStep) if e.purpose is ModelStepPurpose.AGENT]


def _assert_one_ending(events: list[Any]) -> None:
    names = _names(events)
    assert names.count("RUN_TERMINATED") == 1, names
    assert names.count("RUN_FINISHED") == 1, names
    assert names[-1] == "RUN_FINISHED", names


def _assert_failed(store: HarnessStore, result: ChatResult, state: RunState, reason: Any) -> None:
    """A failure path: the termination, no release decision and nothing published."""
    events = _events(store)
    run = store.get_run(result.run_id)
    assert result.termination.state is state and result.termination.reason is reason
    assert run.termination == result.termination
    expected = ReleaseOutcome.CANCELLED if state is RunState.CANCELLED else ReleaseOutcome.FAILED
    assert result.release_outcome is expected and run.finished_outcome is expected
    assert result.content is None
    assert run.release is None
    assert "RELEASE_DECISION" not in _names(events)
    _assert_one_ending(events)


def _assert_fallback(result: ChatResult, store: HarnessStore, kind: FallbackType) -> None:
    run = store.get_run(result.run_id)
    assert result.termination.state is RunState.SUCCESS
    assert result.release_outcome is ReleaseOutcome.FALLBACK
    assert run.release == (ReleaseOutcome.FALLBACK, kind)
    assert result.content is not None and result.content["fallback_type"] == kind.value
    assert "conclusion" not in result.content
    _assert_one_ending(_events(store))


# -- SPEC §7: the exception paths -----------------------------------------------------------------

DRAFT_AND_MODEL_FAILURES = [
    ("empty_draft", FailureCode.INVALID_DRAFT),
    ("invalid_json", FailureCode.INVALID_DRAFT),
    ("schema_invalid", FailureCode.INVALID_DRAFT),
    ("model_failure", FailureCode.MODEL_FAILED),
]


@pytest.mark.parametrize("path", [p for p, _ in DRAFT_AND_MODEL_FAILURES])
def test_an_exception_with_verified_progress_publishes_only_that_progress(
    services: Services, store: HarnessStore, path: str
) -> None:
    result = _ask(services, f"{path}_progress")
    events = _events(store)

    _assert_fallback(result, store, FallbackType.INSUFFICIENT_EVIDENCE)
    (ready,) = _of(events, ToolInvocation.ToolInvocationReady)
    invocation = store.get_invocation(ready.originator_id)
    assert result.content is not None
    assert result.content["verified_facts"] == []  # the model's words: no judge ruled on them
    (observed,) = result.content["observations"]  # the record the verified fact rested on
    assert observed["reference"] == str(invocation.id)
    assert "connection pool 95% used" in observed["record"]
    assert observed["record"] in invocation.content.splitlines()
    assert POOL_FACT not in json.dumps(result.content)
    assert "too small" not in json.dumps(result.content)  # the discarded draft never leaks
    names = _names(events)
    assert names.count("EVIDENCE_GUARD_INITIAL") == 1 and names.count("RELEASE_DECISION") == 1
    assert not GUARD_CHAIN & set(names)


@pytest.mark.parametrize(("path", "code"), DRAFT_AND_MODEL_FAILURES)
def test_an_exception_without_progress_fails_with_its_code(
    services: Services, store: HarnessStore, path: str, code: FailureCode
) -> None:
    result = _ask(services, f"{path}_bare")

    _assert_failed(store, result, RunState.FAILED, code)
    failed = code is FailureCode.MODEL_FAILED
    outcome = ModelStepOutcome.FAILED if failed else ModelStepOutcome.OK
    assert [s.outcome for s in _agent_steps(_events(store))] == [outcome]


@pytest.mark.parametrize(
    ("name", "steps_before_hang"), [("aborted_progress", 2), ("aborted_bare", 0)]
)
def test_a_run_aborted_while_the_model_hangs_is_cancelled_even_with_progress(
    services: Services, store: HarnessStore, name: str, steps_before_hang: int
) -> None:
    """Nothing is published after a cancel (SPEC §5, §14), so progress does not turn it SUCCESS."""
    with _harness(services, name) as harness:
        result = _cancel_while(harness, harness.provider.hanging, harness.provider.release)
    events = _events(store)

    _assert_failed(store, result, RunState.CANCELLED, CancellationReason.USER_REQUESTED)
    assert len(_agent_steps(events)) == steps_before_hang  # the late draft is never recorded
    assert "EVIDENCE_GUARD_INITIAL" not in _names(events)
    assert _after_termination(events) == ["RUN_FINISHED"]


# -- SPEC §8: preflight rejections ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "code", "tool"),
    [
        ("reject_invalid_id", ToolRejectionCode.INVALID_ID, "drop_database"),
        ("reject_not_read_only", ToolRejectionCode.NOT_READ_ONLY, "restart_service"),
        ("reject_auth", ToolRejectionCode.AUTH, "read_secrets"),
        ("reject_malformed_arguments", ToolRejectionCode.INVALID_REQUEST, "search_logs"),
        ("reject_missing_argument", ToolRejectionCode.INVALID_REQUEST, "search_logs"),
    ],
)
def test_a_preflight_rejection_is_audited_and_no_invocation_begins(
    services: Services, store: HarnessStore, name: str, code: ToolRejectionCode, tool: str
) -> None:
    with _harness(services, name) as harness:
        result = harness.service.ask("session-1", QUERY)
        calls = sum(t.calls for t in harness.tools.values())
    events = _events(store)

    rejected = _of(events, Run.ToolRequestRejected)
    assert [(e.originator_id, e.tool, e.code) for e in rejected] == [(result.run_id, tool, code)]
    assert rejected[0].detail
    assert not _of(events, ToolInvocation.ToolInvocationStarted)
    assert calls == 0
    _assert_fallback(result, store, FallbackType.MISSING_REQUIRED_CONTEXT)  # the run went on


def test_a_second_tool_call_in_one_answer_is_audited_and_not_run(
    services: Services, store: HarnessStore
) -> None:
    with _harness(services, "two_calls_in_one_step") as harness:
        result = harness.service.ask("session-1", QUERY)
        calls = {name: t.calls for name, t in harness.tools.items()}
    events = _events(store)

    rejected = _of(events, Run.ToolRequestRejected)
    assert [(e.tool, e.code) for e in rejected] == [
        ("list_alerts", ToolRejectionCode.INVALID_REQUEST)
    ]
    assert calls == {"search_logs": 1, "list_alerts": 0}
    assert [e.tool for e in _of(events, ToolInvocation.ToolInvocationStarted)] == ["search_logs"]
    _assert_fallback(result, store, FallbackType.INSUFFICIENT_EVIDENCE)


def test_a_budget_spent_in_release_is_not_a_stop_reason_of_the_agent(
    services: Services, store: HarnessStore
) -> None:
    with _harness(services, "budget_spent_in_release") as harness:
        result = harness.service.ask("session-1", QUERY)
    names = _names(_events(store))

    assert result.termination.state is RunState.BUDGET_EXHAUSTED
    assert result.release_outcome is ReleaseOutcome.FAILED  # nothing verified to publish
    assert "EVIDENCE_REPAIR" in names and "BUDGET_EXHAUSTED" in names
    assert "COLLECTION_STOP" not in names  # the agent had drafted: it did not stop for budget
    _assert_one_ending(_events(store))


def test_a_repair_that_fixes_the_references_leads_to_a_supported_report(
    services: Services,
    store: HarnessStore,
) -> None:
    with _harness(services, "repair_succeeds") as harness:
        result = harness.service.ask("session-1", QUERY)
    events = _events(store)
    names = _names(events)

    assert result.release_outcome is ReleaseOutcome.SUCCESS
    assert result.content is not None and result.content["kind"] == "diagnosis"
    chain = ["EVIDENCE_GUARD_INITIAL", "EVIDENCE_REPAIR", "EVIDENCE_GUARD_RECHECK"]
    chain += ["SEMANTIC_GUARD_ATTEMPT", "SEMANTIC_GUARD_DECISION", "RELEASE_DECISION"]
    assert [n for n in names if n in chain] == chain
    initial, recheck = _of(events, Run.EvidenceGuardInitial), _of(events, Run.EvidenceGuardRecheck)
    assert (initial[0].valid, initial[0].invalid_references) == (False, ("a-wrong-id",))
    assert (recheck[0].valid, recheck[0].invalid_references) == (True, ())


def test_a_request_over_the_tool_call_budget_is_rejected_and_exhausts_the_run(
    services: Services,
    store: HarnessStore,
) -> None:
    with _harness(services, "reject_budget") as harness:
        result = harness.service.ask("session-1", QUERY)
        calls = harness.tools["search_logs"].calls
    events = _events(store)

    rejected = _of(events, Run.ToolRequestRejected)
    assert [(e.tool, e.code) for e in rejected] == [("search_logs", ToolRejectionCode.BUDGET)]
    started = _of(events, ToolInvocation.ToolInvocationStarted)
    assert [e.arguments for e in started] == [{"service": "checkout"}]  # only the first call
    assert calls == 1
    assert [e.kind for e in _of(events, Run.BudgetExhausted)] == [BudgetKind.TOOL_CALLS]
    assert result.termination.state is RunState.BUDGET_EXHAUSTED
    assert result.release_outcome is ReleaseOutcome.FALLBACK
    assert result.content is not None
    assert result.content["fallback_type"] == FallbackType.INSUFFICIENT_EVIDENCE.value
    _assert_one_ending(events)


@dataclass
class AgentAsked:
    """A trigger that holds at the tool boundary's check of the agent's first (tool) answer.

    The agent's model step is only queued, committed with the tool's begin (design §17.1), so
    the log cannot tell when the answer came: the wrapped model notes it. The clock's first read
    after the answer is the model call's own check of it (a late answer is discarded there);
    the second is the tool boundary's check before the begin, where the test's event lands.
    """

    reads: int = -1

    def wrap(self, inner: ModelProvider) -> ModelProvider:
        return _Noting(inner, self)

    def __call__(self) -> bool:
        if self.reads >= 0:
            self.reads += 1
        return self.reads >= 2


@dataclass
class _Noting:
    inner: ModelProvider
    asked: AgentAsked
    name: str = "noting"
    blocking: bool = False

    def complete(self, request: ModelRequest) -> ModelResponse:
        response = self.inner.complete(request)
        if request.purpose is ModelStepPurpose.AGENT and self.asked.reads < 0:
            self.asked.reads = 0
        return response


def test_a_tool_request_after_the_deadline_is_rejected_invalid_run(
    services: Services, store: HarnessStore
) -> None:
    asked = AgentAsked()
    clock = TriggeredClock(asked, lambda: timedelta(days=1))
    with _harness(services, "reject_invalid_run", clock, asked) as harness:
        result = harness.service.ask("session-1", QUERY)
        calls = harness.tools["search_logs"].calls
    events = _events(store)

    assert clock.fired
    _assert_failed(store, result, RunState.TIMED_OUT, CancellationReason.DEADLINE_EXCEEDED)
    rejected = _of(events, Run.ToolRequestRejected)
    assert [(e.tool, e.code) for e in rejected] == [("search_logs", ToolRejectionCode.INVALID_RUN)]
    assert "TOOL_REQUEST_REJECTED" in _after_termination(events)
    assert not _of(events, ToolInvocation.ToolInvocationStarted)
    assert calls == 0


def test_a_cancel_that_wins_the_canonical_begin_rejects_the_request_invalid_run(
    services: Services,
    store: HarnessStore,
) -> None:
    """The cancel lands after the boundary's check, so the begin's save loses the write race."""
    run_ids: list[UUID] = []

    def cancel() -> timedelta:
        store.cancel(run_ids[0], CancellationReason.USER_REQUESTED)
        return timedelta(0)

    asked = AgentAsked()
    clock = TriggeredClock(asked, cancel)
    with _harness(services, "reject_invalid_run", clock, asked) as harness:
        run, _ = harness.service.begin("session-1", QUERY)
        run_ids.append(run.id)
        result = harness.service.execute(run)  # no exception escapes
        calls = harness.tools["search_logs"].calls
    events = _events(store)

    assert clock.fired
    _assert_failed(store, result, RunState.CANCELLED, CancellationReason.USER_REQUESTED)
    rejected = _of(events, Run.ToolRequestRejected)
    assert [(e.tool, e.code) for e in rejected] == [("search_logs", ToolRejectionCode.INVALID_RUN)]
    assert not _of(events, ToolInvocation.ToolInvocationStarted)  # never begun, never orphaned
    assert calls == 0


class WriteLock(logging.Handler):
    """Holds the event store's write lock from a second connection until a log record names
    the refused write: the runtime logs before it retries, so the lock is gone by then."""

    def __init__(self, settings: Settings, table: str, until: str) -> None:
        super().__init__()
        self.settings = settings
        self.table = table
        self.until = until
        self.unlock: Callable[[], None] | None = None
        self.unlockd = False

    def take(self) -> timedelta:
        target = self.settings.database
        if target.kind == "sqlite":
            lite = sqlite3.connect(target.path, isolation_level=None, check_same_thread=False)
            lite.execute("BEGIN IMMEDIATE")
            self.unlock = lite.close  # closing rolls back and frees the lock
        else:
            pg = psycopg.connect(
                host=target.host,
                port=target.port,
                user=target.user,
                password=target.password,
                dbname=target.dbname,
            )
            pg.execute(
                sql.SQL("LOCK TABLE {} IN EXCLUSIVE MODE").format(
                    sql.Identifier(self.settings.database_schema, self.table)
                )
            )
            self.unlock = pg.close
        return timedelta(0)

    def emit(self, record: logging.LogRecord) -> None:
        if self.until in record.getMessage() and self.unlock and not self.unlockd:
            self.unlockd = True
            self.unlock()


def test_a_store_that_refuses_the_canonical_begin_rejects_the_request_store(
    settings: Settings,
) -> None:
    quick = settings.model_copy(update={"db_lock_timeout": 1})
    services = bootstrap(quick, create=True)
    store = services.store
    table: str = cast("Any", store.recorder).events_table_name
    lock = WriteLock(quick, table, "was not recorded")
    logger = logging.getLogger("application.tool_boundary")
    logger.addHandler(lock)
    try:
        asked = AgentAsked()
        clock = TriggeredClock(asked, lock.take)
        with _harness(services, "reject_store", clock, asked) as harness:
            result = harness.service.ask("session-1", QUERY)
            calls = harness.tools["search_logs"].calls
        logger.removeHandler(lock)
        events = _events(store)

        assert clock.fired and lock.unlockd
        rejected = _of(events, Run.ToolRequestRejected)
        assert [(e.tool, e.code) for e in rejected] == [("search_logs", ToolRejectionCode.STORE)]
        assert "could not be recorded" in rejected[0].detail
        assert not _of(events, ToolInvocation.ToolInvocationStarted)
        assert not [e for e in _of(events, Run.BudgetCharged) if e.kind is BudgetKind.TOOL_CALLS]
        assert calls == 0
        # the refused commit also held the agent's model step (queued since its answer): it is
        # queued again, not lost, so both agent answers are in the log, the first one before
        # the rejection
        steps = _agent_steps(events)
        assert len(steps) == 2
        assert events.index(steps[0]) < events.index(rejected[0]) < events.index(steps[1])
        _assert_fallback(result, store, FallbackType.MISSING_REQUIRED_CONTEXT)  # the run went on
    finally:
        logger.removeHandler(lock)
        if lock.unlock and not lock.unlockd:
            lock.unlock()
        services.close()


# -- oversized output, failing tools --------------------------------------------------------------


def test_one_record_over_max_result_bytes_fails_the_invocation_with_size(
    services: Services,
    store: HarnessStore,
) -> None:
    result = _ask(services, "size_one_record")
    events = _events(store)

    (failed,) = _of(events, ToolInvocation.ToolInvocationFailed)
    assert failed.error_code == "SIZE"
    assert store.get_invocation(failed.originator_id).status is InvocationStatus.ERROR
    assert not _of(events, ToolInvocation.ToolInvocationReady)
    _assert_fallback(result, store, FallbackType.MISSING_REQUIRED_CONTEXT)


def test_many_records_are_truncated_with_a_note_apart_from_them(
    services: Services, store: HarnessStore
) -> None:
    result = _ask(services, "size_truncated")
    events = _events(store)

    (ready,) = _of(events, ToolInvocation.ToolInvocationReady)
    # 20000 // 100 + 1 = 201 records of 100 bytes (99 + newline); 80 fit in 8000 bytes.
    assert ready.content.splitlines() == ["x" * 99] * 80  # the records only
    assert ready.notes == ("[121 more records truncated]",)  # the harness's words, apart
    assert ready.evidence_status is EvidenceStatus.EVIDENCE_FOUND
    assert ready.byte_size == len(ready.content.encode())
    (guard,) = _of(events, Run.EvidenceGuardInitial)  # the progress fact quoting the note
    assert [r.problem for r in guard.rejected] == [CitationProblem.EXCERPT_QUOTES_A_NOTE]
    _assert_fallback(result, store, FallbackType.MISSING_REQUIRED_CONTEXT)  # it asks instead


def test_output_over_the_byte_budget_exhausts_the_run(
    services: Services, store: HarnessStore
) -> None:
    result = _ask(services, "size_byte_budget")
    events = _events(store)

    (failed,) = _of(events, ToolInvocation.ToolInvocationFailed)
    assert failed.error_code == "BUDGET"
    assert not _of(events, ToolInvocation.ToolInvocationReady)
    assert [e.kind for e in _of(events, Run.BudgetExhausted)] == [BudgetKind.BYTES]
    stops = [e.stop_reason for e in _of(events, Collection.CollectionStop)]
    assert stops == [DiagnosisStopReason.BUDGET_LIMIT_REACHED]
    assert store.get_run(result.run_id).usage.bytes == 0  # nothing over the limit was charged
    _assert_failed(store, result, RunState.BUDGET_EXHAUSTED, CancellationReason.BUDGET_EXHAUSTED)


def test_a_tool_that_raises_fails_its_invocation_and_the_run_goes_on(
    services: Services,
    store: HarnessStore,
) -> None:
    result = _ask(services, "tool_raises")
    events = _events(store)

    (failed,) = _of(events, ToolInvocation.ToolInvocationFailed)
    assert failed.error_code == "EXECUTION"
    assert failed.message == "RuntimeError: connection reset by peer"
    (ready,) = _of(events, ToolInvocation.ToolInvocationReady)
    _assert_fallback(result, store, FallbackType.INSUFFICIENT_EVIDENCE)
    assert result.content is not None
    observed = result.content["observations"]
    assert [o["reference"] for o in observed] == [str(ready.originator_id)]
    # the model named payments in its tool calls only: not the question nor a catalogue
    assert result.content["missing_info"] == [
        "What went wrong (errors, slowness, restarts or something else)?"
    ]
    # the failed search is reported as not checked, never as having found nothing
    (not_checked,) = result.content["not_checked"]
    assert not_checked.startswith("search_logs could not be checked for ")
    assert "EXECUTION" in not_checked and "nothing is known" in not_checked
    assert result.content["missing"] == [{"kind": "SYMPTOM"}]


def test_only_blank_records_are_no_evidence(services: Services, store: HarnessStore) -> None:
    result = _ask(services, "blank_records")
    events = _events(store)

    (ready,) = _of(events, ToolInvocation.ToolInvocationReady)
    assert ready.evidence_status is EvidenceStatus.NO_EVIDENCE
    assert ready.content == "checkout ERROR logs 2026-11-29"
    _assert_fallback(result, store, FallbackType.MISSING_REQUIRED_CONTEXT)
    assert result.content is not None
    # the tool and the call's scope, in the harness's words (not the tool's description)
    assert result.content["no_evidence"] == [
        "No matching records from search_logs for service=checkout"
    ]


# -- SPEC §5, §14: cancels, deadlines and late results --------------------------------------------


def test_a_cancel_during_a_slow_tool_discards_its_late_result(
    services: Services, store: HarnessStore
) -> None:
    with _harness(services, "cancel_during_tool") as harness:
        tool = harness.tools["search_logs"]
        result = _cancel_while(harness, tool.hanging, tool.release)
    events = _events(store)

    _assert_failed(store, result, RunState.CANCELLED, CancellationReason.USER_REQUESTED)
    late = _after_termination(events)
    assert "TOOL_PROGRESS" not in late and "BUDGET_CHARGED" not in late
    assert "AGENT_MODEL_STEP" not in late
    assert len(_agent_steps(events)) == 1  # the agent never saw the result
    assert not {"EVIDENCE_GUARD_INITIAL", "SEMANTIC_GUARD_ATTEMPT"} & set(_names(events))
    # The invocation is not left PROJECTING: its outcome is a fact, kept for the audit.
    (started,) = _of(events, ToolInvocation.ToolInvocationStarted)
    assert store.get_invocation(started.originator_id).status is InvocationStatus.READY


def test_a_tool_still_hanging_when_the_run_is_cancelled_is_abandoned(
    services: Services,
    store: HarnessStore,
) -> None:
    with _harness(services, "cancel_during_tool") as harness:
        tool = harness.tools["search_logs"]
        run, _ = harness.service.begin("session-1", QUERY)
        run_id = run.id
        results: list[ChatResult] = []
        worker = threading.Thread(target=lambda: results.append(harness.service.execute(run)))
        worker.start()
        try:
            assert tool.hanging.wait(timeout=60)
            store.cancel(run_id, CancellationReason.USER_REQUESTED)
            worker.join(timeout=60)  # the worker sees the cancel while the tool still hangs
        finally:
            tool.release()
    assert not worker.is_alive() and len(results) == 1
    _assert_failed(store, results[0], RunState.CANCELLED, CancellationReason.USER_REQUESTED)
    (failed,) = _of(_events(store), ToolInvocation.ToolInvocationFailed)
    assert failed.error_code == "ABANDONED"  # not a failure of the tool's own


def test_a_cancel_while_the_tool_runs_keeps_its_failure_record(
    services: Services, store: HarnessStore
) -> None:
    with _harness(services, "cancel_tool_fails_late") as harness:
        tool = harness.tools["search_logs"]
        result = _cancel_while(harness, tool.hanging, tool.release)
    events = _events(store)

    _assert_failed(store, result, RunState.CANCELLED, CancellationReason.USER_REQUESTED)
    (failed,) = _of(events, ToolInvocation.ToolInvocationFailed)
    assert (failed.error_code, failed.message) == ("BACKEND", "backend 503")
    assert len(_agent_steps(events)) == 1


def test_a_cancel_that_wins_the_write_race_at_completion_keeps_the_invocation(
    services: Services,
    store: HarnessStore,
) -> None:
    """The cancel lands between the boundary's last check and the save of the tool's result."""
    run_ids: list[UUID] = []
    tools: list[ScriptedTool] = []

    def cancel() -> timedelta:
        store.cancel(run_ids[0], CancellationReason.USER_REQUESTED)
        return timedelta(0)

    clock = TriggeredClock(lambda: bool(tools) and tools[0].calls >= 1, cancel)
    with _harness(services, "conflict_at_completion", clock) as harness:
        tools.append(harness.tools["search_logs"])
        run, _ = harness.service.begin("session-1", QUERY)
        run_ids.append(run.id)
        result = harness.service.execute(run)  # no exception escapes
    events = _events(store)

    assert clock.fired
    _assert_failed(store, result, RunState.CANCELLED, CancellationReason.USER_REQUESTED)
    (ready,) = _of(events, ToolInvocation.ToolInvocationReady)
    assert ready.evidence_status is EvidenceStatus.NO_EVIDENCE
    assert "TOOL_INVOCATION_READY" in _after_termination(events)  # its facts are never lost
    assert "TOOL_PROGRESS" not in _names(events)  # but no progress is recorded for it
    assert len(_agent_steps(events)) == 1


def test_a_model_answer_after_the_deadline_is_never_recorded(
    services: Services, store: HarnessStore
) -> None:
    with _harness(services, "late_model_answer") as harness:
        result = harness.service.ask("session-1", QUERY)
        hung = harness.provider.hanging.is_set()
        before = _names(_events(store))
    # Leaving the harness released the hang and drained the pool: the late answer came back.
    events = _events(store)

    assert hung
    assert _names(events) == before
    _assert_failed(store, result, RunState.TIMED_OUT, CancellationReason.DEADLINE_EXCEEDED)
    assert not _agent_steps(events)
    assert not _of(events, ToolInvocation.ToolInvocationStarted)


def test_a_tool_answer_after_the_deadline_is_never_recorded(
    services: Services, store: HarnessStore
) -> None:
    with _harness(services, "late_tool_answer") as harness:
        result = harness.service.ask("session-1", QUERY)
        hung = harness.tools["search_logs"].hanging.is_set()
        before = _names(_events(store))
    events = _events(store)

    assert hung
    assert _names(events) == before
    _assert_failed(store, result, RunState.TIMED_OUT, CancellationReason.DEADLINE_EXCEEDED)
    (failed,) = _of(events, ToolInvocation.ToolInvocationFailed)
    assert failed.error_code == "TIMEOUT"
    assert not _of(events, ToolInvocation.ToolInvocationReady)
    assert len(_agent_steps(events)) == 1


def test_a_made_up_tool_name_is_named_on_one_short_line(
    services: Services, store: HarnessStore
) -> None:
    with _harness(services, "reject_hostile_tool_name") as harness:
        harness.service.ask("session-1", QUERY)
    (rejected,) = _of(_events(store), Run.ToolRequestRejected)
    assert rejected.code is ToolRejectionCode.INVALID_ID
    named = rejected.detail.split(";")[0]
    assert "\n" not in rejected.detail and "<b>" in named and len(named) <= 90, named
    assert named.startswith("no tool 'drop_database\\n") and named.endswith("…")
