"""The spans of a run's model calls and tool invocations, and of its guards and release."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from domain.catalogue import GUARD_EVENTS
from domain.run import Run
from domain.states import ModelStepOutcome
from domain.tool_invocation import ToolInvocation
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
    from collections.abc import Sequence
    from uuid import UUID


def chat_span(root: SpanData, run_id: UUID, step: Run.AgentModelStep) -> SpanData:
    """A model step: it ended when recorded and began ``latency_ms`` before."""
    end = nanos(step.timestamp)
    attributes: Attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": provider_name(step.provider),
        "gen_ai.usage.input_tokens": step.tokens_in,
        "gen_ai.usage.output_tokens": step.tokens_out,
        "harness.model_step.purpose": step.purpose.value,
        "harness.model_step.outcome": step.outcome.value,
        "harness.model_step.bound_ms": step.bound_ms,
    }
    if step.model:
        attributes["gen_ai.request.model"] = step.model
    if step.finish_reason:
        attributes["gen_ai.response.finish_reasons"] = (step.finish_reason,)
    span = SpanData(
        name=f"chat {step.model}" if step.model else "chat",
        trace=root.trace,
        span=span_id(run_id, run_id, step.originator_version),
        parent=root.span,
        start=end - step.latency_ms * 1_000_000,
        end=end,
        attributes=attributes,
        kind="CLIENT" if step.provider and step.provider not in IN_PROCESS else "INTERNAL",
    )
    if step.outcome is not ModelStepOutcome.OK:
        span.status, span.description = "ERROR", step.detail or step.outcome.value
        attributes["error.type"] = step.outcome.value
    _attempts(span, step)
    return span


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


def tool_span(
    root: SpanData, run_id: UUID, invocation: UUID, events: Sequence[object], capture: bool = False
) -> SpanData:
    """A tool invocation, from its begin to its READY or FAILED (or its begin, if still open).

    Its arguments (and scope) and its result only with ``capture``: they are content.
    """
    begun = events[0]
    assert isinstance(begun, ToolInvocation.ToolInvocationStarted)
    attributes: Attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": begun.tool,
        "gen_ai.tool.call.id": str(invocation),
        "gen_ai.tool.type": "function",
    }
    if capture:
        attributes["gen_ai.tool.call.arguments"] = json.dumps(begun.arguments, ensure_ascii=False)
        attributes["harness.tool.scope"] = begun.normalized_scope
    span = SpanData(
        name=f"execute_tool {begun.tool}",
        trace=root.trace,
        span=span_id(run_id, invocation, 1),
        parent=root.span,
        start=nanos(begun.timestamp),
        end=nanos(begun.timestamp),
        attributes=attributes,
    )
    for event in events[1:]:
        span.end = nanos(getattr(event, "timestamp", begun.timestamp))
        if isinstance(event, ToolInvocation.ToolInvocationReady):
            attributes["harness.tool.evidence_status"] = event.evidence_status.value
            attributes["harness.tool.byte_size"] = event.byte_size
            if capture:
                attributes["gen_ai.tool.call.result"] = event.content
        elif isinstance(event, ToolInvocation.ToolInvocationFailed):
            attributes["error.type"] = event.error_code
            span.status, span.description = "ERROR", event.error_code
        if getattr(event, "redactions", 0):  # how many secrets the log holds as [redacted]
            attributes["harness.tool.redactions"] = event.redactions  # type: ignore[attr-defined]
    return span


def release_span(root: SpanData, run_id: UUID, events: Sequence[object]) -> SpanData | None:
    """The guards and the release decision: one span, one event per verdict (None: none yet)."""
    steps = [event for event in events if isinstance(event, GUARD_EVENTS)]
    if not steps:
        return None
    span = SpanData(
        name="harness.release",
        trace=root.trace,
        span=span_id(run_id, run_id, "release"),
        parent=root.span,
        start=nanos(steps[0].timestamp),
        end=nanos(steps[-1].timestamp),
        attributes={"harness.guard.steps": len(steps)},
    )
    for step in steps:
        name, verdict = _verdict(step)
        if name:
            attributes: Attributes = {"gen_ai.evaluation.name": name}
            attributes["gen_ai.evaluation.score.label"] = verdict
            span.events.append(
                SpanEvent("gen_ai.evaluation.result", nanos(step.timestamp), attributes)
            )
        if isinstance(step, Run.ReleaseDecision):
            span.attributes["harness.release.outcome"] = step.outcome.value
            if step.fallback_type is not None:
                span.attributes["harness.release.fallback_type"] = step.fallback_type.value
    return span


def _verdict(step: object) -> tuple[str, str]:
    """The evaluation a guard step reports, and its verdict ('' for a step that decides none)."""
    match step:
        case Run.EvidenceGuardInitial(valid=valid):
            return "harness.evidence_guard", "valid" if valid else "invalid"
        case Run.EvidenceRepair():
            return "harness.evidence_repair", "repaired"
        case Run.EvidenceGuardRecheck(valid=valid):
            return "harness.evidence_guard.recheck", "valid" if valid else "invalid"
        case Run.SemanticGuardDecision(verdict=verdict):
            return "harness.semantic_guard", verdict.value if verdict else "unavailable"
        case Run.ReleaseDecision():
            return "harness.release", step.outcome.value
        case _:
            return "", ""
