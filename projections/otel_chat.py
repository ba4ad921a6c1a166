"""The span of a model call: ``chat {model}``, attribute by attribute as the conventions say.

Everything on it comes from the model step's event (:class:`domain.run_steps.RunSteps.
AgentModelStep`): the provider and model asked, the server called, the response's id and model,
the usage, why the model stopped and, when it failed, the failure's class. Steps recorded before
the server and the response were (event version 6) give a span without them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from domain.states import ModelStepOutcome
from projections.otel_data import (
    IN_PROCESS,
    Attributes,
    SpanData,
    SpanEvent,
    nanos,
    provider_name,
    span_id,
)

if TYPE_CHECKING:
    from uuid import UUID

    from domain.run import Run
    from domain.values import ModelCall

OPENAI_API = "chat_completions"
"""``openai.api.type`` of the ``openai`` provider's calls: the adapter speaks chat completions."""
LEGACY_ERROR = "_OTHER"
"""``error.type`` of a failed step recorded before its class was (the conventions' fallback)."""


def chat_span(root: SpanData, run_id: UUID, step: Run.AgentModelStep) -> SpanData:
    """A model step: it ended when recorded and began ``latency_ms`` before.

    CLIENT for a provider reached over the network, INTERNAL for one in the process.
    """
    end = nanos(step.timestamp)
    span = SpanData(
        name=f"chat {step.model}" if step.model else "chat",
        trace=root.trace,
        span=span_id(run_id, run_id, step.originator_version),
        parent=root.span,
        start=end - step.latency_ms * 1_000_000,
        end=end,
        attributes=_attributes(root, step),
        kind="CLIENT" if step.provider and step.provider not in IN_PROCESS else "INTERNAL",
    )
    if step.outcome is not ModelStepOutcome.OK:
        span.status, span.description = "ERROR", step.detail or step.outcome.value
        span.attributes["error.type"] = step.call.error_type or LEGACY_ERROR
    _attempts(span, step)
    return span


def _attributes(root: SpanData, step: Run.AgentModelStep) -> Attributes:
    """The conventions' attributes of the call (the ``openai`` provider's too), then ours."""
    provider = provider_name(step.provider)
    attributes: Attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": provider,
        "gen_ai.usage.input_tokens": step.tokens_in,
        "gen_ai.usage.output_tokens": step.tokens_out,
    }
    if step.model:
        attributes["gen_ai.request.model"] = step.model
    conversation = root.attributes.get("gen_ai.conversation.id")
    if conversation:
        attributes["gen_ai.conversation.id"] = conversation
    if step.finish_reason:
        attributes["gen_ai.response.finish_reasons"] = (step.finish_reason,)
    attributes |= _wire(step.call)
    if provider == "openai":
        attributes |= _openai(step.call)
    attributes["harness.model_step.purpose"] = step.purpose.value
    attributes["harness.model_step.outcome"] = step.outcome.value
    attributes["harness.model_step.bound_ms"] = step.bound_ms
    return attributes


def _wire(call: ModelCall) -> Attributes:
    """What the step recorded of the wire: the server, the response's id and model."""
    found: Attributes = {}
    if call.output_type:
        found["gen_ai.output.type"] = call.output_type
    if call.server_address:
        found["server.address"] = call.server_address
        found["server.port"] = call.server_port
    if call.response_id:
        found["gen_ai.response.id"] = call.response_id
    if call.response_model:
        found["gen_ai.response.model"] = call.response_model
    return found


def _openai(call: ModelCall) -> Attributes:
    """The OpenAI conventions' own attributes (``openai.*``)."""
    found: Attributes = {"openai.api.type": OPENAI_API}
    if call.system_fingerprint:
        found["openai.response.system_fingerprint"] = call.system_fingerprint
    if call.service_tier:
        found["openai.response.service_tier"] = call.service_tier
    return found


def _attempts(span: SpanData, step: Run.AgentModelStep) -> None:
    """Each retried attempt as a span event, placed at the span's start plus the waits so far.

    The attempts' own durations are not recorded, so that time is the earliest the retry began.
    """
    if not step.attempts:
        return
    span.attributes["harness.model_step.attempts"] = len(step.attempts) + 1
    retry_at = span.start
    for number, attempt in enumerate(step.attempts, start=1):
        retry_at = min(span.end, retry_at + attempt.wait_ms * 1_000_000)
        attributes: Attributes = {
            "harness.attempt.number": number,
            "harness.attempt.failure": attempt.failure.value,
            "harness.attempt.wait_ms": attempt.wait_ms,
        }
        if attempt.status:
            attributes["http.response.status_code"] = attempt.status
        span.events.append(SpanEvent("harness.model_retry", retry_at, attributes))
