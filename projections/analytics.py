"""The analytics facts and their daily aggregates: tool calls, model calls, guards, citations.

One row per ended tool invocation, model call, guard step or release decision, and checked
citation (``projections.analytics_rows``), appended and never read back; ``tool_stats`` and
``model_stats`` count them per UTC day with p50/p95 read by rank (``projections.daily_stats``).
Only the events these rows come from reach it (:attr:`Analytics.interests`). An invocation's
start is kept in ``analytics_tool_open`` only when it ends in a later batch (in a rebuild,
nearly never): its ending needs the tool, origin, run and start time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from domain.run import Run
from domain.tool_invocation import ToolInvocation
from projections.analytics_rows import (
    CITATION_COLUMNS,
    GUARD_COLUMNS,
    GUARD_EVENTS,
    MODEL_COLUMNS,
    TOOL_COLUMNS,
    citation_rows,
    guard_row,
    model_row,
    tool_row,
    utc,
)
from projections.base import Positioned, Written, begun_before, uuid_text
from projections.daily_stats import DailyStats, Observation

if TYPE_CHECKING:
    from collections.abc import Sequence

    from application.view_port import RowCache, ViewWriter

STARTED = ToolInvocation.ToolInvocationStarted
READY = ToolInvocation.ToolInvocationReady
FAILED = ToolInvocation.ToolInvocationFailed
CITING = (Run.EvidenceGuardInitial, Run.EvidenceGuardRecheck, Run.SemanticGuardDecision)

TOOL_STATS = DailyStats(
    table="tool_stats",
    index="tool_duration",
    key=("day", "tool", "origin", "outcome", "error_code"),
    measure="duration_ms",
    stem="duration",
    ident="stream_id",
    sums=("result_bytes",),
)
MODEL_STATS = DailyStats(
    table="model_stats",
    index="model_latency",
    key=("day", "provider", "model", "purpose", "outcome", "error_type"),
    measure="latency_ms",
    stem="latency",
    ident="position",
    sums=("tokens_in", "tokens_out"),
)


class Analytics:
    """The analyst's facts and their daily ``tool_stats`` and ``model_stats``."""

    name = "analytics"
    tables = (
        "analytics_tool_call",
        "analytics_tool_open",
        "analytics_model_call",
        "analytics_guard_decision",
        "analytics_citation",
        "tool_stats",
        "tool_duration",
        "model_stats",
        "model_latency",
    )
    interests = (Run.AgentModelStep, *GUARD_EVENTS, STARTED, READY, FAILED)

    def process(self, view: ViewWriter, events: Sequence[Positioned]) -> Written:
        """Append the batch's facts, then count them into the daily aggregates."""
        opened = view.rows("analytics_tool_open", "stream_id")
        opened.preload(begun_before(events, ToolInvocation.Event, STARTED))
        tools: list[list[Any]] = []
        models: list[list[Any]] = []
        guards: list[list[Any]] = []
        citations: list[list[Any]] = []
        ended: list[tuple[str]] = []
        for position, event, stream in events:
            if isinstance(event, Run.AgentModelStep):
                models.append(model_row(position, stream, event))
            elif isinstance(event, ToolInvocation.Event):
                if _invocation(opened, tools, position, event, stream):
                    ended.append((stream,))
            else:
                row = guard_row(position, stream, event)
                guards.append(row)
                if isinstance(event, CITING):
                    citations.extend(citation_rows(position, stream, event, row[-1]))
        written = opened.flush()  # an invocation begun and ended in this batch is never written
        view.delete("analytics_tool_open", ("stream_id",), ended)
        written += TOOL_STATS.add(view, [_tool_observed(row) for row in tools])
        written += MODEL_STATS.add(view, [_model_observed(row) for row in models])
        written += view.append("analytics_tool_call", TOOL_COLUMNS, tools)
        written += view.append("analytics_model_call", MODEL_COLUMNS, models)
        written += view.append("analytics_guard_decision", GUARD_COLUMNS, guards)
        return Written(written + view.append("analytics_citation", CITATION_COLUMNS, citations))


def _invocation(
    opened: RowCache, tools: list[list[Any]], position: int, event: Any, stream: str
) -> bool:
    """Open or end an invocation; whether a stored start is left for the caller to delete."""
    if isinstance(event, STARTED):
        opened.add(
            {
                "stream_id": stream,
                "run_id": uuid_text(event.run_id),
                "tool": event.tool,
                "origin": event.origin,
                "started_at": utc(event.timestamp),
            }
        )
        return False
    started = opened.get(stream)
    if started is None:
        return False  # its start was never seen: nothing to measure it from
    tools.append(tool_row(position, stream, started, event, isinstance(event, READY)))
    return opened.drop(stream)


def _tool_observed(row: list[Any]) -> Observation:
    """A tool call row as a ``tool_stats`` observation."""
    stream, _, tool, origin, _, _, duration, _, outcome, code, _, size, day, _ = row
    return (day, tool, origin, outcome, code), duration, stream, (size,)


def _model_observed(row: list[Any]) -> Observation:
    """A model call row as a ``model_stats`` observation."""
    position, _, _, _, purpose, provider, model, _, _, outcome, error, _, t_in, t_out, ms, *_ = row
    return (row[-1], provider, model, purpose, outcome, error), ms, position, (t_in, t_out)
