"""A run's events as OpenTelemetry GenAI spans: pure data, no SDK, no I/O.

The log is the source of truth: :func:`run_spans` maps a run's streams (the run, its tool
invocations, its collection) to one ``invoke_agent`` span for the run, a ``chat {model}`` span
per model step (:mod:`projections.otel_chat`), an ``execute_tool {name}`` span per tool
invocation (``tools/call {name}``, the MCP client span, for an MCP server's tool) and a
``harness.release`` span carrying the guard verdicts as ``gen_ai.evaluation.result`` events,
attribute by attribute as the semantic conventions of
:data:`~projections.otel_data.SEMCONV_VERSION` say. Trace and span ids are
derived from the run id and the events' stream ids and versions (:func:`trace_id`,
:func:`span_id`), so the same events always give the same spans, byte for byte.

Nothing a user typed or a tool returned goes into a span: no query, prompt, draft, tool
argument or tool output; failure causes are the log's, already redacted when recorded
(:mod:`domain.redaction`).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from domain.run import Run
from domain.states import BudgetKind, RunState
from projections.otel_chat import chat_span
from projections.otel_data import (
    AGENT_NAME,
    EPOCH,
    Attributes,
    RunStreams,
    SpanData,
    SpanEvent,
    nanos,
    provider_name,
    span_id,
    trace_id,
)
from projections.otel_steps import release_span, tool_span

if TYPE_CHECKING:
    from collections.abc import Iterable
    from datetime import datetime


def run_spans(streams: RunStreams, capture: bool = False) -> list[SpanData]:
    """Every span of one run, root first, then in the order their streams were read.

    With ``capture`` (opt-in content capture), the question and each tool's arguments and
    result go in too; without it, nothing a user typed or a tool was given or returned.
    """
    first = streams.run[0]
    assert isinstance(first, Run.RunStarted), "a run's stream starts with RUN_STARTED"
    run_id = first.originator_id
    root = _root(streams, first)
    if capture:
        question = [{"role": "user", "parts": [{"type": "text", "content": first.query}]}]
        root.attributes["gen_ai.input.messages"] = json.dumps(question, ensure_ascii=False)
    spans = [root]
    for event in streams.run:
        if isinstance(event, Run.AgentModelStep):
            spans.append(chat_span(root, run_id, event))
    for invocation, events in streams.invocations.items():
        if events:
            spans.append(tool_span(root, run_id, invocation, events, capture))
    release = release_span(root, run_id, streams.run)
    if release is not None:
        spans.append(release)
    return spans


# -- the run --------------------------------------------------------------------------------------


def _root(streams: RunStreams, started: Run.RunStarted) -> SpanData:
    run_id = started.originator_id
    attributes: Attributes = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": AGENT_NAME,
        "gen_ai.agent.id": str(run_id),
        "gen_ai.conversation.id": started.session_id,
        "harness.run.id": str(run_id),
    }
    root = SpanData(
        name=f"invoke_agent {AGENT_NAME}",
        trace=trace_id(run_id),
        span=span_id(run_id, run_id, 1),
        parent=None,
        start=nanos(started.timestamp),
        end=nanos(_last_time(streams)),
        attributes=attributes,
    )
    tokens_in = tokens_out = 0
    for event in streams.run:
        if isinstance(event, Run.AgentModelStep):
            tokens_in, tokens_out = tokens_in + event.tokens_in, tokens_out + event.tokens_out
            if "gen_ai.provider.name" not in attributes:  # the run's model, as first called
                attributes["gen_ai.provider.name"] = provider_name(event.provider)
                if event.model:
                    attributes["gen_ai.request.model"] = event.model
        _on_root(root, event)
    attributes["gen_ai.usage.input_tokens"] = tokens_in
    attributes["gen_ai.usage.output_tokens"] = tokens_out
    attributes["harness.run.finished"] = streams.finished
    return root


def _on_root(root: SpanData, event: object) -> None:
    """What one of the run's own events adds to the root span."""
    at = nanos(getattr(event, "timestamp", EPOCH))
    match event:
        case Run.RoutingDecision(intent=intent) if intent is not None:
            root.attributes["harness.intent"] = intent.value
        case Run.RunTerminated():
            _terminated(root, event)
        case Run.RunFinished():
            root.attributes["harness.release.outcome"] = event.release_outcome.value
            root.attributes["harness.run.duration_ms"] = event.duration_ms
        case Run.ReleaseDecision(fallback_type=fallback) if fallback is not None:
            root.attributes["harness.release.fallback_type"] = fallback.value
        case Run.ToolRequestRejected():
            attributes = {
                "gen_ai.tool.name": event.tool,
                "harness.rejection.code": event.code.value,
            }
            root.events.append(SpanEvent("harness.tool.rejected", at, dict(attributes)))
        case Run.BudgetExhausted():
            budget: Attributes = {"harness.budget.kind": _kind(event.kind)}
            budget |= {"harness.budget.limit": event.limit, "harness.budget.used": event.used}
            root.events.append(SpanEvent("harness.budget.exhausted", at, budget))
        case Run.CancellationRequested():
            reason: Attributes = {"harness.cancellation.reason": event.reason.value}
            root.events.append(SpanEvent("harness.cancellation.requested", at, reason))
        case _:
            pass


def _terminated(root: SpanData, event: Run.RunTerminated) -> None:
    """The termination as the root's attributes and status: OK for SUCCESS, else ERROR."""
    root.attributes["harness.termination.state"] = event.state.value
    root.attributes["harness.termination.reason"] = event.reason.value
    if event.cause:
        root.attributes["harness.termination.cause"] = event.cause
    if event.state is RunState.SUCCESS:
        root.status = "OK"
    else:
        root.status, root.description = "ERROR", f"{event.state.value}: {event.reason.value}"
        root.attributes["error.type"] = event.reason.value


def _kind(kind: BudgetKind) -> str:
    return kind.value


def _last_time(streams: RunStreams) -> datetime:
    """When the run's last recorded event happened, whichever stream it is on."""
    everything: Iterable[object] = [
        *streams.run,
        *streams.collection,
        *(event for events in streams.invocations.values() for event in events),
    ]
    return max(getattr(event, "timestamp", EPOCH) for event in everything)
