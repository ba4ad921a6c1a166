"""The transaction plan of a run (design §17.1): one commit per external call, plus start and end.

The sample run (offline model over the sample data, the first sample incident: 5 tool calls)
is counted through ``store.listeners`` (one call per committed transaction), with a model and
tools wrapped to look at the log at the moment they are called — the wrappers are external
ports: whatever must be durable before an external call is in the log then.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import pytest

from application.ports import JSON, ModelProvider, ModelRequest, ModelResponse, Tool, ToolOutput
from application.store import HarnessStore
from bootstrap.composition import Overrides, Services, bootstrap
from domain.release_states import ReleaseOutcome
from domain.run import Run
from domain.states import CancellationReason, ModelStepPurpose, RunState
from domain.tool_invocation import ToolInvocation
from infrastructure.ops_data import sample_incidents
from infrastructure.settings import Settings
from tests.helpers import scripted

QUESTION = sample_incidents()[0].question
MODEL_CALLS = 8
"""The sample run's model calls: the router, 6 agent steps, the judge."""
TOOL_CALLS = 5
START_AND_END = 2
"""``RUN_STARTED`` is committed before the run executes; the end is one more commit."""


def _log(store: HarnessStore) -> list[Any]:
    notifications = store.recorder.select_notifications(start=1, limit=10_000)
    return [store.mapper.to_domain_event(n) for n in notifications]


@dataclass
class Observed:
    """What the wrapped ports saw in the log when they were called."""

    store: HarnessStore
    problems: list[str] = field(default_factory=list)
    model_calls: int = 0
    tool_calls: int = 0

    def before_model(self, request: ModelRequest) -> None:
        """Every earlier model call's step, and the attempt this call serves, are committed."""
        log = _log(self.store)
        steps = [e for e in log if isinstance(e, Run.AgentModelStep)]
        if len(steps) != self.model_calls:
            self.problems.append(f"model call {self.model_calls}: {len(steps)} steps in the log")
        wanted = {
            ModelStepPurpose.ROUTE: Run.RoutingAttempt,
            ModelStepPurpose.JUDGE: Run.SemanticGuardAttempt,
        }.get(request.purpose)
        if wanted is not None and not any(isinstance(e, wanted) for e in log):
            self.problems.append(f"{request.purpose.value} called before {wanted.__name__}")
        self.model_calls += 1

    def before_tool(self, name: str) -> None:
        """The tool's invocation is STARTED in the log (a crash leaves it for the recovery)."""
        log = _log(self.store)
        started = [e for e in log if isinstance(e, ToolInvocation.ToolInvocationStarted)]
        ended = {
            e.originator_id
            for e in log
            if isinstance(
                e, ToolInvocation.ToolInvocationReady | ToolInvocation.ToolInvocationFailed
            )
        }
        open_ = [e for e in started if e.originator_id not in ended]
        if len(started) != self.tool_calls + 1 or [e.tool for e in open_] != [name]:
            self.problems.append(f"tool call {self.tool_calls} ({name}) ran without its begin")
        self.tool_calls += 1


@dataclass
class WatchedModel:
    inner: ModelProvider
    seen: Observed
    name: str = "offline"
    blocking: bool = False

    def complete(self, request: ModelRequest) -> ModelResponse:
        self.seen.before_model(request)
        return self.inner.complete(request)


class WatchedTool:
    """The tool, looking at the log before it runs (every other attribute is the tool's).

    It is an external port, as the watched model is (neither says ``local``): the run commits
    before each call to it (design §17.1; local ports: ``test_commit_interval.py``).
    """

    local = False

    def __init__(self, inner: Tool, seen: Observed) -> None:
        self._inner = inner
        self._seen = seen

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def run(self, arguments: JSON) -> ToolOutput:
        self._seen.before_tool(self._inner.name)
        return self._inner.run(arguments)


@pytest.fixture
def watched(settings: Settings) -> Iterator[tuple[Services, Observed]]:
    base = bootstrap(settings, create=True, sample=True, overrides=Overrides(heartbeat=False))
    try:
        seen = Observed(base.store)
        tools = {n: cast("Tool", WatchedTool(t, seen)) for n, t in base.tools().items()}
        provider = WatchedModel(base.chat.provider, seen)
        given = Overrides(store=base.store, provider=provider, tools=tools, heartbeat=False)
        with bootstrap(settings, overrides=given) as built:
            yield built, seen
    finally:
        base.close()


def test_the_sample_run_commits_once_per_external_call_plus_its_start_and_end(
    watched: tuple[Services, Observed],
) -> None:
    services, seen = watched
    store = services.store
    commits: list[list[Any]] = []

    def listener(events: Sequence[Any]) -> None:
        commits.append(list(events))

    store.listeners.append(listener)
    try:
        result = services.chat.ask("plan", QUESTION)
    finally:
        store.listeners.remove(listener)

    assert result.termination.state is RunState.SUCCESS
    assert seen.problems == []
    assert (seen.model_calls, seen.tool_calls) == (MODEL_CALLS, TOOL_CALLS)
    # the bound of the plan, and its figure for the sample run (34 before the plan)
    assert len(commits) <= seen.model_calls + seen.tool_calls + START_AND_END
    assert len(commits) == 15
    # fewer commits, same log: every event once, in the order the boundaries made them
    committed = [event for commit in commits for event in commit]
    assert [(e.originator_id, e.originator_version) for e in committed] == [
        (e.originator_id, e.originator_version) for e in _log(store)
    ]
    assert len(committed) == 47
    assert [type(e) for e in commits[0]] == [Run.RunStarted]
    assert [type(e) for e in commits[-1]][-2:] == [Run.RunTerminated, Run.RunFinished]


@dataclass
class CancelAtJudge:
    """The model, with another writer cancelling the run while the judge is asked.

    The judge's verdict, the release decision and the end are one commit (design §17.1); the
    cancel makes it conflict, so the run ends CANCELLED with nothing published.
    """

    inner: ModelProvider
    store: HarnessStore
    run_ids: list[Any] = field(default_factory=list)
    name: str = "scripted"
    blocking: bool = False

    def complete(self, request: ModelRequest) -> ModelResponse:
        if request.purpose is ModelStepPurpose.JUDGE:
            self.store.cancel(self.run_ids[0], CancellationReason.USER_REQUESTED)
        return self.inner.complete(request)


def test_a_cancel_while_the_judge_is_asked_wins_and_publishes_nothing(
    services: Services, store: HarnessStore
) -> None:
    wrapped: list[CancelAtJudge] = []

    def wrap(inner: ModelProvider) -> ModelProvider:
        wrapped.append(CancelAtJudge(inner, store))
        return wrapped[0]

    with scripted(services, "conclusion_supported", wrap=wrap) as made:
        run, _ = made.service.begin("session-1", "why was checkout slow?")
        wrapped[0].run_ids.append(run.id)
        result = made.service.execute(run)  # no exception escapes
    log = _log(store)

    assert result.termination.state is RunState.CANCELLED
    assert result.published is None and result.release_outcome is ReleaseOutcome.CANCELLED
    assert not [e for e in log if isinstance(e, Run.ReleaseDecision)]
    assert not [e for e in log if isinstance(e, Run.SemanticGuardDecision)]  # the late verdict
    # what was durable before the judge was asked stays: the guard's attempt, the evidence check
    assert [e for e in log if isinstance(e, Run.SemanticGuardAttempt)]
    finished = [e for e in log if isinstance(e, Run.RunFinished)]
    assert [e.release_outcome for e in finished] == [ReleaseOutcome.CANCELLED]
    assert isinstance(log[-1], Run.RunFinished)
