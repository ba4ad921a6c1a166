"""``trace_event``: every domain event on its run's timeline, with a TracePhase and a status."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from domain.catalogue import EVENT_CLASSES, event_type_name
from domain.collection import Collection
from domain.run import Run
from domain.states import (
    InformationGain,
    ModelStepOutcome,
    ModelStepPurpose,
    ReleaseOutcome,
    RunState,
    SemanticVerdict,
    TraceEventStatus,
    TracePhase,
)
from domain.tool_invocation import ToolInvocation
from infrastructure.read_tables import trace_event, trace_stream
from projections.base import Positioned, Row, RowCache, insert_many, payload, uuid_text

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sqlalchemy import Connection

OK, INFO = TraceEventStatus.OK, TraceEventStatus.INFO
REJECTED, ERROR = TraceEventStatus.REJECTED, TraceEventStatus.ERROR

PURPOSE_PHASE = {
    ModelStepPurpose.ROUTE: TracePhase.ROUTING,
    ModelStepPurpose.ANSWER: TracePhase.AGENT,
    ModelStepPurpose.AGENT: TracePhase.AGENT,
    ModelStepPurpose.REPAIR: TracePhase.GUARD,
    ModelStepPurpose.JUDGE: TracePhase.GUARD,
}


TYPE_NAMES = {cls: event_type_name(cls) for cls in EVENT_CLASSES}


class Trace:
    """The audit timeline: one row per event, ordered by log position."""

    name = "trace_event"
    tables = (trace_event, trace_stream)

    def process(self, connection: Connection, events: Sequence[Positioned]) -> None:
        """Insert one row per event; invocation and collection events find their run."""
        streams = RowCache(connection, trace_stream, "stream_id")
        streams.preload(
            uuid_text(e.originator_id)
            for _, e in events
            if isinstance(e, (ToolInvocation.Event, Collection.Event))
        )
        rows: list[Row] = []
        for position, event in events:
            run_id = _run_of(streams, event)
            if run_id is None:
                continue  # not a stream of a known run: nothing to place it on
            phase, status = classify(event)
            rows.append(
                {
                    "position": position,
                    "run_id": run_id,
                    "stream_id": uuid_text(event.originator_id),
                    "stream_version": event.originator_version,
                    "event_type": TYPE_NAMES.get(type(event)) or event_type_name(type(event)),
                    "phase": phase.value,
                    "status": status.value,
                    "timestamp": event.timestamp,
                    "attributes": payload(event),
                }
            )
        streams.flush()
        if rows:
            insert_many(connection, trace_event, rows)


def _run_of(streams: RowCache, event: Any) -> str | None:
    if isinstance(event, Run.Event):
        return uuid_text(event.originator_id)
    stream = uuid_text(event.originator_id)
    if isinstance(event, (ToolInvocation.ToolInvocationStarted, Collection.CollectionStarted)):
        streams.add({"stream_id": stream, "run_id": uuid_text(event.run_id)})
    row = streams.get(stream)
    return None if row is None else str(row["run_id"])


def classify(event: Any) -> tuple[TracePhase, TraceEventStatus]:  # noqa: C901, PLR0911
    """The timeline phase and status of one event (SPEC §13)."""
    match event:
        case Run.RoutingAttempt():
            return TracePhase.ROUTING, INFO
        case Run.RoutingDecision():
            return TracePhase.ROUTING, ERROR if event.intent is None else OK
        case Run.AgentModelStep():
            failed = event.outcome is not ModelStepOutcome.OK
            return PURPOSE_PHASE[event.purpose], ERROR if failed else OK
        case Run.BudgetExhausted():
            return TracePhase.RUN, ERROR
        case Run.ToolRequestRejected():
            return TracePhase.TOOL, REJECTED
        case Run.EvidenceGuardInitial() | Run.EvidenceGuardRecheck():
            return TracePhase.GUARD, OK if event.valid else REJECTED
        case Run.EvidenceRepair() | Run.SemanticGuardAttempt():
            return TracePhase.GUARD, INFO
        case Run.SemanticGuardDecision():
            verdict = {SemanticVerdict.SUPPORTED: OK, SemanticVerdict.UNSUPPORTED: REJECTED}
            return TracePhase.GUARD, verdict.get(event.verdict, ERROR) if event.verdict else ERROR
        case Run.ReleaseDecision():
            return TracePhase.RELEASE, OK if event.outcome is ReleaseOutcome.SUCCESS else INFO
        case Run.RunTerminated():
            return TracePhase.RUN, OK if event.state is RunState.SUCCESS else ERROR
        case Run.RunFinished():
            published = event.release_outcome in (ReleaseOutcome.SUCCESS, ReleaseOutcome.FALLBACK)
            return TracePhase.RUN, OK if published else ERROR
        case Run.Event():
            return TracePhase.RUN, INFO  # started, status changes, charges, cancellation
        case ToolInvocation.ToolInvocationReady():
            return TracePhase.TOOL, OK
        case ToolInvocation.ToolInvocationFailed():
            return TracePhase.TOOL, ERROR
        case ToolInvocation.Event():
            return TracePhase.TOOL, INFO
        case Collection.ToolProgress():
            return TracePhase.COLLECTION, OK if event.gain is InformationGain.GAINED else INFO
        case Collection.ProgressProtocolViolation():
            return TracePhase.COLLECTION, REJECTED
        case _:
            return TracePhase.COLLECTION, INFO
