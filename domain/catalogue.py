"""The event catalogue: every domain event class, its trace type name and the enums events carry."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from eventsourcing.domain import CanMutateAggregate

from domain.answer_rules import AnswerRefusal
from domain.collection import Collection
from domain.evals import Verdict
from domain.release_states import (
    CitationProblem,
    FallbackType,
    GuardStage,
    ReleaseOutcome,
    SemanticVerdict,
)
from domain.run import Run
from domain.states import (
    BudgetKind,
    CancellationReason,
    ChatApplicationStatus,
    CompletionReason,
    DraftOutcome,
    FailureCode,
    Intent,
    MissingKind,
    ModelAttemptFailure,
    ModelStepOutcome,
    ModelStepPurpose,
    RunState,
    SseSessionState,
    TraceEventStatus,
    TracePhase,
)
from domain.tool_invocation import ToolInvocation
from domain.tool_states import (
    CollectionState,
    DiagnosisStopReason,
    EvidenceStatus,
    GainSource,
    InformationGain,
    InvocationStatus,
    ToolRejectionCode,
)

if TYPE_CHECKING:
    from enum import Enum

AGGREGATES = (Run, ToolInvocation, Collection)

GUARD_EVENTS = (
    Run.EvidenceGuardInitial,
    Run.EvidenceRepair,
    Run.EvidenceGuardRecheck,
    Run.SemanticGuardAttempt,
    Run.SemanticGuardDecision,
    Run.ReleaseDecision,
)
"""A run's guard and release events (design §10), in the order they can happen."""


def _event_classes() -> tuple[type[CanMutateAggregate[Any]], ...]:
    found: list[type[CanMutateAggregate[Any]]] = []
    for aggregate in AGGREGATES:
        for value in vars(aggregate).values():
            is_event = isinstance(value, type) and issubclass(value, CanMutateAggregate)
            if is_event and value.__name__ not in ("Event", "Created"):
                found.append(value)
    return tuple(found)


EVENT_CLASSES = _event_classes()

ALL_ENUMS: tuple[type[Enum], ...] = (
    RunState,
    ChatApplicationStatus,
    Intent,
    InvocationStatus,
    EvidenceStatus,
    CollectionState,
    DiagnosisStopReason,
    SemanticVerdict,
    ReleaseOutcome,
    FallbackType,
    SseSessionState,
    CancellationReason,
    FailureCode,
    CompletionReason,
    TracePhase,
    TraceEventStatus,
    InformationGain,
    GainSource,
    ToolRejectionCode,
    BudgetKind,
    ModelStepPurpose,
    ModelStepOutcome,
    ModelAttemptFailure,
    DraftOutcome,
    GuardStage,
    CitationProblem,
    MissingKind,
    AnswerRefusal,
    Verdict,
)
"""Every enum that may appear in an event; the store registers a transcoding for each."""


def event_type_name(event_class: type[object]) -> str:
    """The trace type of an event class: ``RunStarted`` → ``RUN_STARTED``."""
    return _TYPE_NAMES.get(event_class) or _type_name(event_class)


def _type_name(event_class: type[object]) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", event_class.__name__).upper()


_TYPE_NAMES: dict[type[object], str] = {cls: _type_name(cls) for cls in EVENT_CLASSES}
"""The catalogue's names, worked out once: they are asked for every event read or explained."""
