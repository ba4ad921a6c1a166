"""The spans of a run's tool invocations (MCP calls among them), and of its guards and release."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from domain.catalogue import GUARD_EVENTS
from domain.run import Run
from domain.tool_invocation import ToolInvocation
from domain.tool_states import ToolErrorCode
from projections.otel_data import EPOCH, Attributes, SpanData, SpanEvent, nanos, span_id

if TYPE_CHECKING:
    from collections.abc import Sequence
    from uuid import UUID

    from domain.values import McpSession

MCP_TOOL_CALL = "tools/call"
"""``mcp.method.name`` of a tool call, and the first word of its span's name."""
RUN_KEYS = ("gen_ai.agent.name", "gen_ai.conversation.id")
"""What a tool's span repeats of its run's root span (the conventions ask for both)."""
TOOL_ERROR_CODES = frozenset({*(code.value for code in ToolErrorCode), "NOT_READ_ONLY"})
"""The harness's own codes of a failed invocation: a bounded set, each an ``error.type``."""


def tool_span(
    root: SpanData, run_id: UUID, invocation: UUID, events: Sequence[object], capture: bool = False
) -> SpanData:
    """A tool invocation, from its begin to its READY or FAILED (or its begin, if still open).

    ``execute_tool {name}`` (INTERNAL) for the harness's own tools; an MCP server's tool is the
    MCP client's ``tools/call {name}`` (CLIENT), with the GenAI attributes too (the run's agent
    and conversation as well). Arguments, scope and result only with ``capture``: content.
    """
    begun = events[0]
    assert isinstance(begun, ToolInvocation.ToolInvocationStarted)
    attributes: Attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": begun.tool,
        "gen_ai.tool.type": "extension" if begun.mcp is not None else "function",
    }
    if begun.call_id:
        attributes["gen_ai.tool.call.id"] = begun.call_id
    attributes |= {key: root.attributes[key] for key in RUN_KEYS if key in root.attributes}
    if begun.mcp is not None:
        attributes |= mcp_attributes(begun.mcp)
    attributes["harness.tool.invocation.id"] = str(invocation)
    attributes["harness.tool.origin"] = begun.origin
    if capture:
        attributes["gen_ai.tool.call.arguments"] = json.dumps(begun.arguments, ensure_ascii=False)
        attributes["harness.tool.scope"] = begun.normalized_scope
    span = SpanData(
        name=f"{MCP_TOOL_CALL} {begun.tool}" if begun.mcp else f"execute_tool {begun.tool}",
        trace=root.trace,
        span=span_id(run_id, invocation, 1),
        parent=root.span,
        start=nanos(begun.timestamp),
        end=nanos(begun.timestamp),
        attributes=attributes,
        kind="CLIENT" if begun.mcp is not None else "INTERNAL",
    )
    for event in events[1:]:
        _on_tool(span, event, capture)
    return span


def _on_tool(span: SpanData, event: object, capture: bool) -> None:
    """What an invocation's later event adds to its span: the result, or the failure."""
    span.end = nanos(getattr(event, "timestamp", EPOCH)) or span.end
    attributes = span.attributes
    if isinstance(event, ToolInvocation.ToolInvocationReady):
        attributes["harness.tool.evidence_status"] = event.evidence_status.value
        attributes["harness.tool.byte_size"] = event.byte_size
        if capture:
            attributes["gen_ai.tool.call.result"] = event.content
    elif isinstance(event, ToolInvocation.ToolInvocationFailed):
        attributes["error.type"] = event.error_type or tool_error_type(event.error_code)
        if event.error_type.lstrip("-").isdigit():  # the JSON-RPC error an MCP server answered
            attributes["rpc.response.status_code"] = event.error_type
        attributes["harness.tool.error_code"] = event.error_code
        span.status, span.description = "ERROR", event.error_code
    if getattr(event, "redactions", 0):  # how many secrets the log holds as [redacted]
        attributes["harness.tool.redactions"] = event.redactions  # type: ignore[attr-defined]


def tool_error_type(code: str) -> str:
    """The ``error.type`` of a failed invocation: its harness code in lower case (``timeout``).

    A code of the tool's own (a plugin's) is not of a bounded set: ``_OTHER``, the code itself
    in ``harness.tool.error_code``.
    """
    return code.lower() if code in TOOL_ERROR_CODES else "_OTHER"


def mcp_attributes(session: McpSession) -> Attributes:
    """The MCP conventions' attributes of a ``tools/call`` over ``session``."""
    found: Attributes = {"mcp.method.name": MCP_TOOL_CALL}
    if session.transport == "stdio":
        found["network.transport"] = "pipe"
    else:
        found["network.transport"] = "tcp"
        found["network.protocol.name"] = "http"
        found["server.address"] = session.server_address
        found["server.port"] = session.server_port
    if session.protocol_version:
        found["mcp.protocol.version"] = session.protocol_version
    if session.session_id:
        found["mcp.session.id"] = session.session_id
    found["harness.mcp.server"] = session.server
    return found


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
