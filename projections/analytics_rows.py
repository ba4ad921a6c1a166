"""The analytics fact rows, one function per kind of fact: from events to value lists.

Each ``*_COLUMNS`` tuple is the order of its rows' values (every column of its table). Times
are UTC; ``day`` is the UTC day of the event that made the row; '' stands for "none".
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from domain.catalogue import event_type_name
from domain.run import Run

if TYPE_CHECKING:
    from domain.grounding import RejectedCitation

TOOL_COLUMNS = (
    "stream_id",
    "run_id",
    "tool",
    "origin",
    "started_at",
    "finished_at",
    "duration_ms",
    "state",
    "evidence_status",
    "error_code",
    "error_type",
    "result_bytes",
    "day",
    "position",
)
MODEL_COLUMNS = (
    "position",
    "run_id",
    "step",
    "at",
    "purpose",
    "provider",
    "model",
    "response_model",
    "service_tier",
    "outcome",
    "error_type",
    "finish_reason",
    "tokens_in",
    "tokens_out",
    "latency_ms",
    "retries",
    "day",
)
GUARD_COLUMNS = (
    "position",
    "run_id",
    "at",
    "stage",
    "verdict",
    "fallback_type",
    "reason",
    "rejected_citations",
    "day",
)
CITATION_COLUMNS = (
    "position",
    "seq",
    "run_id",
    "stage",
    "statement",
    "reference",
    "accepted",
    "problem",
    "verdict",
    "day",
)
GUARD_EVENTS = (
    Run.EvidenceGuardInitial,
    Run.EvidenceRepair,
    Run.EvidenceGuardRecheck,
    Run.SemanticGuardDecision,
    Run.ReleaseDecision,
)
"""The events that make a guard decision row (the judge's attempt is only its start)."""
STAGES = {kind: event_type_name(kind) for kind in GUARD_EVENTS}
UNAVAILABLE = "UNAVAILABLE"
_MS = timedelta(milliseconds=1)


def utc(moment: datetime) -> datetime:
    """``moment`` in UTC; a naive one (SQLite reads times back naive) is taken as UTC."""
    if moment.tzinfo is UTC:  # an event's own time: nothing to do
        return moment
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment if moment.utcoffset() == timedelta(0) else moment.astimezone(UTC)


def day_of(moment: datetime) -> str:
    """The UTC day of ``moment`` as ``YYYY-MM-DD``."""
    return utc(moment).date().isoformat()


def tool_row(
    position: int, stream: str, started: dict[str, Any], event: Any, ready: bool
) -> list[Any]:
    """An ended invocation's row, from its start (``started``) and its ending ``event``."""
    began, ended = utc(started["started_at"]), utc(event.timestamp)
    if ready:
        status, code, kind, size = event.evidence_status._value_, "", "", event.byte_size
    else:
        status, code, kind, size = "ERROR", event.error_code, event.error_type, 0
    return [
        stream,
        started["run_id"],
        started["tool"],
        started["origin"],
        began,
        ended,
        (ended - began) // _MS,
        "READY" if ready else "ERROR",
        status,
        code,
        kind,
        size,
        ended.date().isoformat(),
        position,
    ]


def model_row(position: int, run_id: str, event: Run.AgentModelStep) -> list[Any]:
    """One model call's row."""
    call, at = event.call, utc(event.timestamp)
    return [
        position,
        run_id,
        event.originator_version,
        at,
        event.purpose._value_,
        event.provider,
        event.model,
        call.response_model,
        call.service_tier,
        event.outcome._value_,
        call.error_type,
        event.finish_reason,
        event.tokens_in,
        event.tokens_out,
        event.latency_ms,
        len(event.attempts),
        at.date().isoformat(),
    ]


def guard_row(position: int, run_id: str, event: Any) -> list[Any]:
    """One guard step's or release decision's row: its verdict, fallback and reason codes."""
    at = utc(event.timestamp)
    fallback, reason, rejected = "", "", 0
    match event:
        case Run.EvidenceGuardInitial() | Run.EvidenceGuardRecheck():
            verdict = "VALID" if event.valid else "INVALID"
            rejected = len(event.rejected) or len(event.invalid_references)
            reason = _problems(event.rejected)
        case Run.EvidenceRepair():
            verdict = "REPAIRED"
        case Run.SemanticGuardDecision():
            verdict = UNAVAILABLE if event.verdict is None else event.verdict._value_
            reason = event.unavailable
        case _:
            verdict = event.outcome._value_
            fallback = "" if event.fallback_type is None else event.fallback_type._value_
            reason = fallback
    day = at.date().isoformat()
    return [position, run_id, at, STAGES[type(event)], verdict, fallback, reason, rejected, day]


def _problems(rejected: tuple[RejectedCitation, ...]) -> str:
    """The distinct problems of the refused citations, sorted and joined by commas."""
    return ",".join(sorted({c.problem._value_ for c in rejected}))


def citation_rows(position: int, run_id: str, event: Any, day: str) -> list[list[Any]]:
    """The citations a guard event checked: those it refused, or the judged statements' ones."""
    stage = STAGES[type(event)]
    if isinstance(event, Run.SemanticGuardDecision):
        found = []
        for number, judged in enumerate(event.judged, start=1):
            verdict = UNAVAILABLE if judged.verdict is None else judged.verdict._value_
            for citation in judged.citations:
                found.append((f"judged {number}", citation.reference, True, "", verdict))
    else:
        found = [(c.statement, c.reference, False, c.problem._value_, "") for c in event.rejected]
    return [
        [position, seq, run_id, stage, statement, reference, accepted, problem, verdict, day]
        for seq, (statement, reference, accepted, problem, verdict) in enumerate(found)
    ]
