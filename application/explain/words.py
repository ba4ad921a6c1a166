"""The words tables (public status, termination reasons) and small helpers the answers share."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from application.explain.model import QUESTIONS, Answer, EventRef, FieldValue
from domain.catalogue import event_type_name
from domain.published_reader import parse_published
from domain.recorded import fallback_of
from domain.release_states import FallbackType, ReleaseOutcome
from domain.states import CancellationReason, CompletionReason, FailureCode, TerminationReason

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from enum import Enum
    from uuid import UUID

    from domain.recorded import Recorded
    from domain.run import Run
    from domain.tool_invocation import ToolInvocation


_REASON_WORDS: dict[TerminationReason, str] = {
    CompletionReason.COMPLETED: "the release was decided and the run completed",
    CancellationReason.CLIENT_DISCONNECTED: "the client disconnected",
    CancellationReason.USER_REQUESTED: "a user asked to cancel it",
    CancellationReason.DEADLINE_EXCEEDED: "its deadline passed",
    CancellationReason.BUDGET_EXHAUSTED: "a hard budget was exceeded",
    CancellationReason.INTERNAL_FAILURE: "an internal failure cancelled it",
    FailureCode.ROUTING_FAILED: "the router gave no usable intent",
    FailureCode.MODEL_FAILED: "a model call failed and there was no verified progress to publish",
    FailureCode.INVALID_DRAFT: "the agent's draft was invalid and there was no verified progress",
    FailureCode.NO_SAFE_CONTENT: "Release found nothing safe to publish",
    FailureCode.INTERNAL_ERROR: "an unexpected internal error",
    FailureCode.WORKER_LOST: "the worker executing it was lost",
}
"""Every termination reason in plain words (SPEC §4, §5)."""


def _answer(
    key: str, applies: bool, text: str, fields: dict[str, FieldValue], events: Iterable[Any]
) -> Answer:
    refs: dict[tuple[UUID, int], EventRef] = {}
    for event in events:
        if event is not None:
            ref = EventRef(
                stream_id=event.originator_id,
                stream_version=event.originator_version,
                event_type=event_type_name(type(event)),
                timestamp=event.timestamp,
            )
            refs.setdefault((ref.stream_id, ref.stream_version), ref)
    return Answer(
        question=key,
        asked=QUESTIONS[key],
        applies=applies,
        answer=text,
        fields=fields,
        evidence=list(refs.values()),
    )


def _v(member: Enum | None) -> str | None:
    return None if member is None else str(member.value)


def _fallback_type(run: Run) -> FallbackType | None:
    """The decided fallback type while the run is open; once finished, only a published one."""
    published = run.finished_outcome in (None, ReleaseOutcome.FALLBACK)
    return run.release[1] if run.release and published else None


def _ended(run: Run) -> str:
    assert run.termination is not None
    cause = f"; cause recorded: {run.failure_cause}" if run.failure_cause else ""
    return f"ended {run.termination.state.value} ({_reason(run.termination.reason)}{cause})"


def _reason(reason: TerminationReason) -> str:
    return f"{reason.value}: {_REASON_WORDS[reason]}"


def _spent(exhausted: Run.BudgetExhausted) -> str:
    return (
        f"the run's {exhausted.kind.value} budget ran out ({exhausted.used} used, limit "
        f"{exhausted.limit})"
    )


def _trailing(events: list[Any], matches: Callable[[Any], bool]) -> list[Any]:
    """The matching events at the end of ``events``, after the last one that does not match."""
    found: list[Any] = []
    for event in events:
        found = [*found, event] if matches(event) else []
    return found


def _published(run: Run) -> Recorded | None:
    """What the run's release decided to publish, read back; None before any decision."""
    return None if run.published is None else parse_published(run.published)


def _missing_info(run: Run) -> list[str]:
    """The missing information the run's release published: a fallback's questions."""
    fallback = fallback_of(_published(run))
    return [] if fallback is None else list(fallback.missing_info)


def _rejection(event: Run.ToolRequestRejected) -> str:
    return f"{event.tool}: {event.code.value} ({event.detail})"


def _line(invocation: ToolInvocation) -> str:
    evidence = _v(invocation.evidence_status) or "no evidence status yet"
    code = f", error code {invocation.error_code}" if invocation.error_code else ""
    return (
        f"{invocation.tool} {invocation.normalized_scope} [{invocation.id}]: "
        f"{invocation.status.value} + {evidence}{code}"
    )
