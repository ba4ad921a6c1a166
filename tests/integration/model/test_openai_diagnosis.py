"""A whole diagnosis with ``HARNESS_MODEL=openai`` against the conformance server.

The server answers as the offline model would, over HTTP, with every request checked by the
strict wire rules; the faults the test queues end as documented: retried and recorded, or a
failed run whose cause names the provider, model and server. Never a traceback, never unbounded.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from uuid import UUID

import pytest

from application.explain import explain_run
from application.store import events_of
from bootstrap.composition import Services, bootstrap
from domain.release_states import ReleaseOutcome
from domain.run import Run
from domain.states import FailureCode, ModelAttemptFailure, ModelStepPurpose, RunState
from infrastructure.ops_data import sample_incidents
from infrastructure.settings import Settings
from projections.otel_data import RunStreams
from projections.otel_spans import run_spans
from tests.integration.model._conformance import (
    MODEL,
    Conformance,
    Fault,
    rate_limited,
)

INCIDENT = sample_incidents()[0]


@pytest.fixture
def runtime(sqlite_settings: Settings, server: Conformance) -> Iterator[Services]:
    settings = server.settings_for(sqlite_settings, model_max_retries=2)
    with bootstrap(settings, create=True, sample=True) as services:
        yield services


def _steps(services: Services, run_id: UUID) -> list[Any]:
    return [e for e in events_of(services.store, run_id) if isinstance(e, Run.AgentModelStep)]


def test_a_diagnosis_succeeds_through_the_server_with_a_429_retried_and_recorded(
    runtime: Services, server: Conformance
) -> None:
    server.faults.append(rate_limited(retry_after_ms=30))

    result = runtime.chat.ask("s", INCIDENT.question)

    assert server.refusals == []  # every request, schemas included, kept the strict rules
    assert result.termination.state is RunState.SUCCESS
    assert result.release_outcome is ReleaseOutcome.SUCCESS
    steps = _steps(runtime, result.run_id)
    purposes = {step.purpose for step in steps}
    assert {ModelStepPurpose.ROUTE, ModelStepPurpose.AGENT, ModelStepPurpose.JUDGE} <= purposes
    route = steps[0]
    assert route.purpose is ModelStepPurpose.ROUTE
    assert [(a.failure, a.status, a.wait_ms) for a in route.attempts] == [
        (ModelAttemptFailure.RATE_LIMITED, 429, 30)
    ]
    assert route.latency_ms >= 30 and route.provider == "openai-compatible"
    assert all(not step.attempts for step in steps[1:])


def test_the_retried_attempts_show_in_explain_and_the_spans(
    runtime: Services, server: Conformance
) -> None:
    server.faults.append(Fault("status", 503))

    result = runtime.chat.ask("s", INCIDENT.question)

    explanation = explain_run(runtime.store, result.run_id)
    assert explanation.model_retries == ["ROUTE call: attempt 1 failed SERVER_ERROR (HTTP 503)"]
    spans = run_spans(RunStreams(run=list(events_of(runtime.store, result.run_id))))
    [chat] = [s for s in spans if s.attributes.get("harness.model_step.purpose") == "ROUTE"]
    assert chat.attributes["harness.model_step.attempts"] == 2
    # a remote model: CLIENT spans, the conventions' name for an OpenAI-compatible server
    chats = [s for s in spans if s.attributes.get("gen_ai.operation.name") == "chat"]
    assert {(s.kind, s.attributes["gen_ai.provider.name"]) for s in chats} == {("CLIENT", "openai")}
    root = spans[0]
    assert (root.kind, root.attributes["gen_ai.provider.name"]) == ("INTERNAL", "openai")
    assert root.attributes["gen_ai.request.model"] == MODEL
    [event] = chat.events
    assert event.attributes["harness.attempt.failure"] == "SERVER_ERROR"
    assert event.attributes["http.response.status_code"] == 503


@pytest.mark.parametrize(
    ("faults", "cause"),
    [
        ([Fault("status", 500)] * 3, "HTTP 500"),
        ([Fault("html")], "with a page that is not a chat completion"),
        ([Fault("status", 401)], "HTTP 401"),
        ([Fault("prose")], "the router's answer from openai-compatible model"),
    ],
    ids=["500s-past-the-retries", "html-200", "401", "prose"],
)
def test_a_failed_router_call_ends_routing_failed_naming_provider_and_server(
    runtime: Services, server: Conformance, faults: list[Fault], cause: str
) -> None:
    server.faults.extend(faults)

    result = runtime.chat.ask("s", INCIDENT.question)

    run = runtime.store.get_run(result.run_id)
    assert run.termination is not None
    assert run.termination is not None
    assert run.termination.reason is FailureCode.ROUTING_FAILED
    assert cause in run.failure_cause
    assert f"'{MODEL}'" in run.failure_cause and server.url in run.failure_cause
    assert "\n" not in run.failure_cause and "Traceback" not in run.failure_cause


def test_a_server_that_rejects_strict_schemas_fails_the_run_with_its_message(
    runtime: Services, server: Conformance
) -> None:
    server.reject_strict = True

    result = runtime.chat.ask("s", INCIDENT.question)

    run = runtime.store.get_run(result.run_id)
    assert run.termination is not None
    assert run.termination.reason is FailureCode.ROUTING_FAILED
    assert "HTTP 400" in run.failure_cause
    assert "strict json_schema is not supported" in run.failure_cause
    assert len(server.requests) == 1, "a 400 is not retried"
