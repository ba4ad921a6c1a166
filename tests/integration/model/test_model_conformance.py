"""The OpenAI-compatible provider against the conformance server: schemas, retries, faults."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from application import prompts
from application.ports import (
    Message,
    ModelError,
    ModelRefusedError,
    ModelRequest,
    ModelTimeoutError,
    ModelUnavailableError,
)
from domain.states import ModelAttemptFailure, ModelStepPurpose
from domain.values import ModelAttempt
from infrastructure.model_openai import OpenAICompatibleProvider
from infrastructure.model_retries import RetryPolicy
from tests.integration.model._conformance import (
    MODEL,
    Conformance,
    Fault,
    rate_limited,
)

FAST = RetryPolicy(max_retries=2, base_s=0.01, cap_s=0.02, jitter=lambda: 0.0)
"""Backoff short enough for tests (the waits are real, but bounded and tiny)."""


def provider_for(server: Conformance, timeout_s: float = 10.0) -> OpenAICompatibleProvider:
    return OpenAICompatibleProvider(
        base_url=server.url, api_key="", model=MODEL, timeout_s=timeout_s, retries=FAST
    )


def ask(schema: Mapping[str, Any] | None = None, timeout_s: float = 10.0) -> ModelRequest:
    messages = (Message("system", prompts.ROUTER_PROMPT), Message("user", "why is checkout slow?"))
    return ModelRequest(ModelStepPurpose.ROUTE, messages, json_schema=schema, timeout_s=timeout_s)


@pytest.mark.parametrize("name", sorted(prompts.SCHEMAS))
def test_every_schema_the_harness_sends_is_accepted(server: Conformance, name: str) -> None:
    with provider_for(server) as provider:
        provider.complete(ask(prompts.SCHEMAS[name]))

    assert server.refusals == []


def test_a_schema_that_breaks_the_strict_rules_is_refused_naming_model_and_server(
    server: Conformance,
) -> None:
    loose = {"type": "object", "properties": {"reason": {"type": "string"}}}

    with provider_for(server) as provider, pytest.raises(ModelRefusedError) as caught:
        provider.complete(ask(loose))

    message = str(caught.value)
    assert "HTTP 400" in message
    assert "Invalid schema for response_format 'output'" in message
    assert f"openai-compatible model '{MODEL}' at {server.url}" in message
    assert len(server.requests) == 1, "a 400 is not retried"


def test_a_429_is_retried_after_the_servers_retry_after_ms(server: Conformance) -> None:
    server.faults.append(rate_limited(retry_after_ms=20, retry_after="7"))

    with provider_for(server) as provider:
        response = provider.complete(ask(prompts.ROUTE_SCHEMA))

    assert response.attempts == (ModelAttempt(ModelAttemptFailure.RATE_LIMITED, 429, 20),)
    assert len(server.requests) == 2


def test_server_errors_and_a_reset_are_retried_with_backoff(server: Conformance) -> None:
    server.faults.extend([Fault("status", 503), Fault("reset")])

    with provider_for(server) as provider:
        response = provider.complete(ask(prompts.ROUTE_SCHEMA))

    assert [(a.failure, a.status) for a in response.attempts] == [
        (ModelAttemptFailure.SERVER_ERROR, 503),
        (ModelAttemptFailure.CONNECTION, 0),
    ]
    assert [a.wait_ms for a in response.attempts] == [5, 10]  # base doubled, lower jitter edge
    assert len(server.requests) == 3


def test_retries_stop_at_the_configured_count_and_say_so(server: Conformance) -> None:
    server.faults.extend([Fault("status", 500)] * 3)

    with provider_for(server) as provider, pytest.raises(ModelUnavailableError) as caught:
        provider.complete(ask())

    assert "HTTP 500" in str(caught.value)
    assert "gave up after 3 attempts (HARNESS_MODEL_MAX_RETRIES)" in str(caught.value)
    assert len(caught.value.attempts) == 2
    assert len(server.requests) == 3


def test_a_retry_after_past_the_calls_bound_fails_at_once(server: Conformance) -> None:
    server.faults.append(rate_limited(retry_after="30"))

    with provider_for(server, timeout_s=2.0) as provider, pytest.raises(ModelError) as caught:
        provider.complete(ask())

    assert "not retried: the server asked to wait 30.00 s" in str(caught.value)
    assert caught.value.attempts == ()
    assert len(server.requests) == 1


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_client_errors_are_not_retried(server: Conformance, status: int) -> None:
    server.faults.append(Fault("status", status))

    with provider_for(server) as provider, pytest.raises(ModelRefusedError, match=f"HTTP {status}"):
        provider.complete(ask())

    assert len(server.requests) == 1


def test_a_429_for_a_spent_quota_is_not_retried(server: Conformance) -> None:
    server.faults.append(Fault("status", 429, code="insufficient_quota"))

    with provider_for(server) as provider, pytest.raises(ModelUnavailableError, match="HTTP 429"):
        provider.complete(ask())

    assert len(server.requests) == 1


def test_a_slow_answer_ends_at_the_calls_bound(server: Conformance) -> None:
    server.faults.append(Fault("slow"))

    with provider_for(server) as provider, pytest.raises(ModelTimeoutError, match="within 0.5 s"):
        provider.complete(ask(timeout_s=0.5))

    assert server.held.is_set()
    assert len(server.requests) == 1, "no time was left for another attempt"


def test_an_html_page_with_200_names_the_server_and_model(server: Conformance) -> None:
    server.faults.append(Fault("html"))

    with provider_for(server) as provider, pytest.raises(ModelUnavailableError) as caught:
        provider.complete(ask())

    message = str(caught.value)
    assert f"openai-compatible model '{MODEL}' at {server.url}" in message
    assert "not a chat completion" in message
    assert "\n" not in message


def test_an_unknown_model_is_named(server: Conformance) -> None:
    server.model = "another-model"

    with provider_for(server) as provider, pytest.raises(ModelRefusedError) as caught:
        provider.complete(ask())

    assert "HTTP 404" in str(caught.value)
    assert "check HARNESS_OPENAI_MODEL" in str(caught.value)
