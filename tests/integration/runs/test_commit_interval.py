"""Commits at calls that stay in the service (design §17.1): the run's commit interval.

The sample run's ports — the offline model and the built-in tools — are local (``local =
True``): nothing leaves the service when they are called, so the run's events wait in its queue
until a call that leaves, the commit interval, or the end. With an interval longer than any run
the sample run commits its start and its end only, and its log is the very log the plan that
commits before every call (interval 0) writes. A cancel from another writer while events wait is
seen at the next boundary all the same; what waited is then not recorded, so that nothing of the
run follows its termination in the log.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import pytest

from application.audit.records import store_records
from application.audit.verify import verify_records
from application.ports import JSON, ModelProvider, ModelRequest, ModelResponse, Tool, ToolOutput
from application.store import HarnessStore
from bootstrap.composition import Overrides, Services, bootstrap
from domain.run import Run
from domain.states import CancellationReason, FailureCode, RunState
from domain.tool_invocation import ToolInvocation
from infrastructure.ops_data import sample_incidents
from infrastructure.run_ends import PgRunEnds
from infrastructure.settings import Settings
from projections.sse_feed import run_feed
from tests.integration._invariants import check_run, read_events
from tests.integration._recovery_helpers import sweep

QUESTION = sample_incidents()[0].question
OUTCOMES = (ToolInvocation.ToolInvocationReady, ToolInvocation.ToolInvocationFailed)
TOOLS = frozenset({"search_logs", "query_metrics", "list_deployments", "list_alerts"})
"""The built-in tools' names (what a call list holds besides the model's purposes)."""
WAIT_S = 30.0
"""How long a test waits for the run-ends listener (a bound, never reached when it works)."""
LONG = 3600.0
"""An interval no run here comes near: only external calls and the end commit."""


def _log(store: HarnessStore) -> list[Any]:
    notifications = store.recorder.select_notifications(start=1, limit=10_000)
    return [store.mapper.to_domain_event(n) for n in notifications]


def _commits_of_a_sample_run(settings: Settings, interval: float) -> tuple[Any, list[list[Any]]]:
    """One sample run with the product's own ports; its result and each commit's events."""
    tuned = settings.model_copy(update={"run_commit_interval": interval})
    commits: list[list[Any]] = []
    with bootstrap(tuned, create=True, sample=True, overrides=Overrides(heartbeat=False)) as built:
        built.chat.ask("warm", QUESTION)  # the session's first turn, as every bench does
        built.store.listeners.append(lambda events: commits.append(list(events)))
        result = built.chat.ask("plan", QUESTION)
    return result, commits


def _statement(published: Any) -> str:
    """The published conclusion's words (its citations name invocations, new in every run)."""
    return str(published.conclusion.statement)


def _shape(commits: Sequence[Sequence[Any]]) -> list[str]:
    return [type(event).__qualname__ for commit in commits for event in commit]


def test_local_ports_let_the_sample_run_commit_its_start_and_its_end_only(
    settings: Settings,
) -> None:
    result, commits = _commits_of_a_sample_run(settings, LONG)
    strict_result, strict_commits = _commits_of_a_sample_run(settings, 0.0)

    assert result.termination.state is RunState.SUCCESS
    assert len(commits) == 2
    assert [type(e) for e in commits[0]] == [Run.RunStarted]
    assert [type(e) for e in commits[-1]][-2:] == [Run.RunTerminated, Run.RunFinished]
    # interval 0 commits before every model and tool call: the plan of external ports
    assert len(strict_commits) == 15
    # the same facts in the same order, whatever the commits
    assert _shape(commits) == _shape(strict_commits)
    assert result.release_outcome is strict_result.release_outcome
    assert _statement(result.published) == _statement(strict_result.published) != ""


@dataclass
class CancellingTool:
    """A local tool that lets another writer cancel the run while it runs its ``at``-th call."""

    inner: Tool
    store: HarnessStore
    calls: list[str]
    at: int = 2
    run_ids: list[Any] = field(default_factory=list)
    local: bool = True

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def run(self, arguments: JSON) -> ToolOutput:
        self.calls.append(self.inner.name)
        if sum(call == self.inner.name or call in TOOLS for call in self.calls) == self.at:
            self.store.cancel(self.run_ids[0], CancellationReason.USER_REQUESTED)
            if isinstance(self.store.run_ends, PgRunEnds):  # heard a moment after it commits
                assert self.store.run_ends.wait_heard(self.run_ids[0], WAIT_S)
        return self.inner.run(arguments)


@dataclass
class CountingModel:
    inner: ModelProvider
    calls: list[str]
    name: str = "offline"
    blocking: bool = False
    local: bool = True

    def complete(self, request: ModelRequest) -> ModelResponse:
        self.calls.append(request.purpose.value)
        return self.inner.complete(request)


@pytest.fixture
def cancelled(settings: Settings) -> Iterator[tuple[Services, list[str], Any]]:
    """A sample run, interval :data:`LONG`, cancelled by another writer during its 2nd tool call."""
    tuned = settings.model_copy(update={"run_commit_interval": LONG})
    base = bootstrap(tuned, create=True, sample=True, overrides=Overrides(heartbeat=False))
    try:
        calls: list[str] = []
        tools = {
            name: cast("Tool", CancellingTool(tool, base.store, calls))
            for name, tool in base.tools().items()
        }
        provider = CountingModel(base.chat.provider, calls)
        given = Overrides(store=base.store, provider=provider, tools=tools, heartbeat=False)
        with bootstrap(tuned, overrides=given) as built:
            run, _ = built.chat.begin("cancel", QUESTION)
            if isinstance(built.store.run_ends, PgRunEnds):  # PostgreSQL: runs hear of ends
                assert built.store.run_ends.wait_listening(WAIT_S)
            for tool in tools.values():
                cast("CancellingTool", tool).run_ids.append(run.id)
            yield built, calls, built.chat.execute(run)
    finally:
        base.close()


def test_a_cancel_while_events_wait_is_seen_at_the_next_boundary(
    cancelled: tuple[Services, list[str], Any],
) -> None:
    services, calls, result = cancelled
    log = _log(services.store)
    tool_names = set(services.chat.tools)
    assert tool_names == TOOLS

    assert result.termination.state is RunState.CANCELLED
    # the cancel came during the 2nd tool call: no model or tool was called after it
    assert sum(c in tool_names for c in calls) == 2
    assert calls[-1] in tool_names
    # the two tools ran after the last commit (the start): their begins lost the race with the
    # cancel, and nothing of them is recorded after it (no tool starts after a termination)
    assert not [e for e in log if type(e).__qualname__.startswith("ToolInvocation.")]
    run_events = [type(e) for e in log if e.originator_id == result.run_id]
    assert run_events[0] is Run.RunStarted
    assert run_events[-2:] == [Run.RunTerminated, Run.RunFinished]
    # one termination, the cancel; the run checks and the offline verifier find nothing wrong
    terminated = [e for e in log if isinstance(e, Run.RunTerminated)]
    assert [e.state for e in terminated] == [RunState.CANCELLED]
    check_run(result, read_events(services.store))
    report = verify_records(store_records(services.store), None, run_feed)
    assert report.clean, [v.describe() for v in report.violations]


@dataclass
class DyingTool:
    """A local tool whose process dies (``SystemExit`` past every handler) at its 3rd call."""

    inner: Tool
    calls: list[str]
    local: bool = True

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def run(self, arguments: JSON) -> ToolOutput:
        self.calls.append(self.inner.name)
        if len(self.calls) == 3:
            raise SystemExit("the worker died")
        return self.inner.run(arguments)


def test_a_worker_dying_while_events_wait_leaves_a_run_the_recovery_ends(
    settings: Settings,
) -> None:
    tuned = settings.model_copy(update={"run_commit_interval": LONG})
    with bootstrap(tuned, create=True, sample=True, overrides=Overrides(heartbeat=False)) as base:
        calls: list[str] = []
        tools = {n: cast("Tool", DyingTool(t, calls)) for n, t in base.tools().items()}
        given = Overrides(store=base.store, tools=tools, heartbeat=False)
        with bootstrap(tuned, overrides=given) as built:
            run, _ = built.chat.begin("dies", QUESTION)
            with pytest.raises(SystemExit):
                built.chat.execute(run)
        store = base.store
        # only the start was committed: the two tools that ran and the model steps died with it
        assert [type(e) for e in _log(store) if e.originator_id == run.id] == [Run.RunStarted]
        report = sweep(store, base.engine)

        (ended,) = report.ended
        assert (ended.termination.state, ended.termination.reason) == (
            RunState.FAILED,
            FailureCode.WORKER_LOST,
        )
        log = _log(store)
        assert [type(e) for e in log if e.originator_id == run.id] == [
            Run.RunStarted,
            Run.RunTerminated,
            Run.RunFinished,
        ]
        assert not [e for e in log if type(e).__qualname__.startswith("ToolInvocation.")]
        report_ = verify_records(store_records(store), None, run_feed)
        assert report_.clean, [v.describe() for v in report_.violations]


@dataclass
class PatientTool:
    """A local tool run in a worker thread that answers only once a begin is in the log.

    Nothing but the harness's look at the run while it waits for the call (every
    ``CANCEL_POLL`` seconds) can commit that begin: the interval is :data:`LONG`.
    """

    inner: Tool
    store: HarnessStore
    waited: list[str]
    local: bool = True
    blocking: bool = True

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def run(self, arguments: JSON) -> ToolOutput:
        found = threading.Event()
        give_up = time.monotonic() + 60  # a bound on a condition, not a wait for time to pass
        while not found.is_set() and time.monotonic() < give_up:
            if any(isinstance(e, ToolInvocation.ToolInvocationStarted) for e in _log(self.store)):
                found.set()
            else:
                found.wait(0.02)
        self.waited.append("found" if found.is_set() else "never committed")
        return self.inner.run(arguments)


def test_a_long_local_call_has_what_waits_committed_while_it_runs(settings: Settings) -> None:
    tuned = settings.model_copy(update={"run_commit_interval": LONG})
    with bootstrap(tuned, create=True, sample=True, overrides=Overrides(heartbeat=False)) as base:
        waited: list[str] = []
        tools = {
            n: cast("Tool", PatientTool(t, base.store, waited)) for n, t in base.tools().items()
        }
        given = Overrides(store=base.store, tools=tools, heartbeat=False)
        with bootstrap(tuned, overrides=given) as built:
            result = built.chat.ask("patient", QUESTION)

    assert result.termination.state is RunState.SUCCESS
    assert waited and set(waited) == {"found"}
