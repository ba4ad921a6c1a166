"""Requests built while the run commits: nothing leaves before the log holds what it needs.

The OpenAI-compatible provider is gated (:mod:`application.send_gate`): the run hands it the call
before committing, and the client's request waits at the gate. The conformance server looks at
the log when each request arrives; a cancel that makes the commit fail keeps the next request
from ever arriving.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any
from uuid import UUID

import pytest

from application.ports import ModelRequest, ModelResponse
from application.send_gate import SendGate, SendRefused
from application.store import HarnessStore
from bootstrap.composition import Services, bootstrap
from domain.run import Run
from domain.states import CancellationReason, ModelStepPurpose, RunState
from infrastructure.model_offline import OfflineProvider
from infrastructure.model_openai import OpenAICompatibleProvider
from infrastructure.ops_data import sample_incidents
from infrastructure.settings import Settings
from tests.integration.model._conformance import MODEL, Conformance

QUESTION = sample_incidents()[0].question


def _log(store: HarnessStore) -> list[Any]:
    notifications = store.recorder.select_notifications(start=1, limit=10_000)
    return [store.mapper.to_domain_event(n) for n in notifications]


class LookingBrain:
    """Answers as the offline model, after looking at the log as each request arrives."""

    def __init__(self) -> None:
        self.store: HarnessStore | None = None
        self.asked = 0
        self.problems: list[str] = []
        self.cancel_at: int | None = None
        """At this request (1-based) the run is cancelled from elsewhere before the answer."""
        self.run_id: UUID | None = None
        self._offline = OfflineProvider()

    def __call__(self, request: ModelRequest) -> ModelResponse:
        assert self.store is not None
        self.asked += 1
        log = _log(self.store)
        steps = [e for e in log if isinstance(e, Run.AgentModelStep)]
        if len(steps) != self.asked - 1:
            self.problems.append(f"request {self.asked}: {len(steps)} earlier steps in the log")
        if request.purpose is ModelStepPurpose.JUDGE and not any(
            isinstance(e, Run.SemanticGuardAttempt) for e in log
        ):
            self.problems.append("the judge was asked before its attempt was in the log")
        if self.asked == self.cancel_at:
            self.run_id = next(e.originator_id for e in log if isinstance(e, Run.RunStarted))
            self.store.cancel(self.run_id, CancellationReason.USER_REQUESTED)
        return self._offline.complete(request)


@pytest.fixture
def looking(
    sqlite_settings: Settings, server: Conformance
) -> Iterator[tuple[Services, LookingBrain]]:
    brain = LookingBrain()
    server.brain = brain
    with bootstrap(server.settings_for(sqlite_settings), create=True, sample=True) as services:
        brain.store = services.store
        yield services, brain


def test_each_request_arrives_after_what_it_needs_is_in_the_log(
    looking: tuple[Services, LookingBrain], server: Conformance
) -> None:
    services, brain = looking

    result = services.chat.ask("s", QUESTION)

    assert result.termination.state is RunState.SUCCESS
    assert brain.asked == 8 and brain.problems == [] and server.refusals == []


def test_a_commit_a_cancel_makes_fail_sends_nothing_more(
    looking: tuple[Services, LookingBrain], server: Conformance
) -> None:
    services, brain = looking
    brain.cancel_at = 3  # an agent step: the next call's commit meets the cancel

    result = services.chat.ask("s", QUESTION)

    assert result.termination.state is RunState.CANCELLED
    assert brain.asked == 3 and len(server.requests) == 3  # the fourth never left the service
    steps = [e for e in _log(services.store) if isinstance(e, Run.AgentModelStep)]
    assert len(steps) == 2  # the third step was queued behind the cancel: never recorded


def test_a_refused_gate_sends_nothing_and_is_not_retried(server: Conformance) -> None:
    provider = OpenAICompatibleProvider(
        base_url=server.url, api_key="", model=MODEL, timeout_s=10.0
    )
    gate = SendGate()
    request = ModelRequest(ModelStepPurpose.ROUTE, (), send_gate=gate, timeout_s=10.0)
    raised: list[BaseException] = []

    def call() -> None:
        try:
            provider.complete(request)
        except BaseException as error:  # what the call ended with, for the test to see
            raised.append(error)

    caller = threading.Thread(target=call)
    caller.start()
    gate.refuse()
    caller.join(timeout=10)
    provider.close()

    assert [type(e) for e in raised] == [SendRefused] and server.requests == []
